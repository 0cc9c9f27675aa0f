//! The HTTP/2 client's protocol state without a socket: frames from a
//! scripted server go in, the client's frames and the requests' outcomes
//! come out (tests only).

use std::task::{Context, Poll, Waker};

use bytes::Bytes;

use super::super::conn::Exchange;
use super::super::mux::Failure;
use super::super::recorder::ErrorKind;
use super::super::server_timing::Parsed;
use super::frame::{self, Head};
use super::hpack;
use super::state::{State, STREAM_WINDOW};

/// The frames in `out` after the preface magic: (head, payload).
fn frames(out: &[u8]) -> Vec<(Head, Vec<u8>)> {
    let mut at = if out.starts_with(frame::PREFACE) {
        frame::PREFACE.len()
    } else {
        0
    };
    let mut v = Vec::new();
    while at < out.len() {
        let h = Head::parse(&out[at..]);
        v.push((h, out[at + 9..at + 9 + h.len].to_vec()));
        at += 9 + h.len;
    }
    v
}

fn kinds(st: &mut State) -> Vec<(u8, u8, u32)> {
    let v = frames(&st.out)
        .iter()
        .map(|(h, _)| (h.kind, h.flags, h.stream))
        .collect();
    st.out.clear();
    v
}

fn feed(st: &mut State, bytes: &[u8]) {
    let used = st.receive(bytes, &mut None);
    assert!(
        used == bytes.len() || st.dead.is_some(),
        "{used} of {}",
        bytes.len()
    );
}

/// A client that has read the server's SETTINGS (with `params`).
fn settled(params: &[(u16, u32)]) -> State {
    let mut st = State::new();
    let f = frames(&st.out);
    assert_eq!(f[0].0.kind, frame::SETTINGS);
    assert_eq!(
        (f[1].0.kind, frame::u31(&f[1].1)),
        (frame::WINDOW_UPDATE, (16 << 20) - 65_535)
    );
    st.out.clear();
    let mut b = Vec::new();
    frame::settings(&mut b, params);
    feed(&mut st, &b);
    assert_eq!(kinds(&mut st), [(frame::SETTINGS, frame::ACK, 0)]);
    st
}

fn poll(st: &mut State, slot: usize) -> Poll<(Result<u16, Failure>, Exchange, Parsed)> {
    let mut ex = Exchange::new();
    let mut timing = Parsed::default();
    let mut cx = Context::from_waker(Waker::noop());
    st.poll_response(slot, &mut cx, &mut ex, &mut timing)
        .map(|r| (r, ex, timing))
}

fn response(stream: u32, block: &[u8], end: bool) -> Vec<u8> {
    let mut b = Vec::new();
    let flags = frame::END_HEADERS | if end { frame::END_STREAM } else { 0 };
    frame::head(&mut b, block.len(), frame::HEADERS, flags, stream);
    b.extend_from_slice(block);
    b
}

const OK: [u8; 1] = [0x88]; // :status 200

#[test]
fn a_request_and_its_response() {
    let mut st = settled(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 2)]);
    assert_eq!(st.max_streams(), 2);
    let block = hpack::encode_request("GET", "http", "h", "/", &[]);
    let (slot, id) = st.start(&block, &Bytes::new()).unwrap();
    assert_eq!(id, 1);
    let f = frames(&st.out);
    assert_eq!(
        (f[0].0.kind, f[0].0.flags),
        (frame::HEADERS, frame::END_HEADERS | frame::END_STREAM)
    );
    assert_eq!(f[0].1, block);
    st.out.clear();
    assert!(poll(&mut st, slot).is_pending());
    // Headers with a Server-Timing, then 5 bytes of body, padded.
    let mut block = OK.to_vec();
    block.push(0);
    hpack::write_string(&mut block, b"server-timing");
    hpack::write_string(&mut block, b"app;dur=2.5");
    let mut b = response(1, &block, false);
    frame::head(&mut b, 8, frame::DATA, frame::PADDED | frame::END_STREAM, 1);
    b.extend_from_slice(&[2, b'h', b'e', b'l', b'l', b'o', 0, 0]);
    feed(&mut st, &b);
    let Poll::Ready((r, ex, timing)) = poll(&mut st, slot) else {
        panic!("pending")
    };
    assert_eq!(r, Ok(200));
    assert_eq!(ex.bytes_in, 5);
    assert!(ex.first_byte.is_some());
    assert_eq!(timing.metrics, vec![("app".to_string(), 2.5)]);
    // The slot is free again, the next stream is 3.
    assert_eq!(st.start(&OK, &Bytes::new()).unwrap(), (slot, 3));
}

#[test]
fn the_stream_limit_holds_requests() {
    let mut st = settled(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 1)]);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(st.poll_ready(&mut cx).is_ready());
    let (slot, _) = st.start(&OK, &Bytes::new()).unwrap();
    assert!(st.poll_ready(&mut cx).is_pending());
    feed(&mut st, &response(1, &OK, true));
    assert!(poll(&mut st, slot).is_ready());
    assert!(st.poll_ready(&mut cx).is_ready());
}

#[test]
fn informational_heads_continuations_and_trailers() {
    let mut st = settled(&[]);
    let (slot, _) = st.start(&OK, &Bytes::new()).unwrap();
    // 103 Early Hints, then 204 split over HEADERS + CONTINUATION.
    let mut b = Vec::new();
    let mut hints = vec![0x08];
    hpack::write_string(&mut hints, b"103");
    b.extend(response(1, &hints, false));
    let mut block = vec![0x08];
    hpack::write_string(&mut block, b"204");
    frame::head(&mut b, 1, frame::HEADERS, 0, 1);
    b.push(block[0]);
    frame::head(
        &mut b,
        block.len() - 1,
        frame::CONTINUATION,
        frame::END_HEADERS,
        1,
    );
    b.extend_from_slice(&block[1..]);
    feed(&mut st, &b);
    assert!(poll(&mut st, slot).is_pending());
    // Trailers end it.
    let mut trailer = vec![0];
    hpack::write_string(&mut trailer, b"grpc-status");
    hpack::write_string(&mut trailer, b"0");
    feed(&mut st, &response(1, &trailer, true));
    assert!(matches!(poll(&mut st, slot), Poll::Ready((Ok(204), _, _))));
}

#[test]
fn resets_fail_one_request_and_goaway_refuses_the_rest() {
    let mut st = settled(&[]);
    let (a, _) = st.start(&OK, &Bytes::new()).unwrap();
    let (b, _) = st.start(&OK, &Bytes::new()).unwrap();
    let (c, _) = st.start(&OK, &Bytes::new()).unwrap();
    let mut f = Vec::new();
    frame::rst_stream(&mut f, 1, frame::REFUSED_STREAM);
    frame::rst_stream(&mut f, 3, 2);
    frame::goaway(&mut f, 3, frame::NO_ERROR);
    feed(&mut st, &f);
    let reset = |refused| Failure {
        kind: ErrorKind::Reset,
        connection: false,
        refused,
    };
    assert_eq!(poll(&mut st, a).map(|r| r.0), Poll::Ready(Err(reset(true))));
    assert_eq!(
        poll(&mut st, b).map(|r| r.0),
        Poll::Ready(Err(reset(false)))
    );
    let refused = Failure {
        kind: ErrorKind::Reset,
        connection: true,
        refused: true,
    };
    assert_eq!(poll(&mut st, c).map(|r| r.0), Poll::Ready(Err(refused)));
    assert_eq!(st.start(&OK, &Bytes::new()), Err(refused));
    assert!(st.dead.is_none());
}

#[test]
fn a_body_waits_for_the_peer_window() {
    let mut st = settled(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 20_000)]);
    let body = Bytes::from(vec![7u8; 70_000]);
    let (slot, id) = st.start(&OK, &body).unwrap();
    let sent = |st: &mut State| -> (usize, bool) {
        let f = frames(&st.out);
        st.out.clear();
        let data: Vec<_> = f.iter().filter(|(h, _)| h.kind == frame::DATA).collect();
        assert!(data.iter().all(|(h, _)| h.len <= frame::DEFAULT_MAX_FRAME));
        let end = data
            .last()
            .is_some_and(|(h, _)| h.flags & frame::END_STREAM != 0);
        (data.iter().map(|(h, _)| h.len).sum(), end)
    };
    assert_eq!(sent(&mut st), (20_000, false));
    // The stream's window opens; the connection's (65,535) then limits.
    let mut f = Vec::new();
    frame::window_update(&mut f, id, 100_000);
    feed(&mut st, &f);
    assert_eq!(sent(&mut st), (65_535 - 20_000, false));
    let mut f = Vec::new();
    frame::window_update(&mut f, 0, 100_000);
    feed(&mut st, &f);
    assert_eq!(sent(&mut st), (70_000 - 65_535, true));
    feed(&mut st, &response(id, &OK, true));
    assert!(matches!(poll(&mut st, slot), Poll::Ready((Ok(200), _, _))));
    assert!(st.out.is_empty());
    // A response complete before its request body: the rest is cancelled.
    let (slot, id) = st.start(&OK, &body).unwrap();
    st.out.clear();
    feed(&mut st, &response(id, &OK, true));
    assert_eq!(kinds(&mut st), [(frame::RST_STREAM, 0, id)]);
    assert!(matches!(poll(&mut st, slot), Poll::Ready((Ok(200), _, _))));
    let mut f = Vec::new();
    frame::window_update(&mut f, 0, 100_000);
    feed(&mut st, &f);
    assert!(st.out.is_empty(), "no DATA after the response");
}

#[test]
fn receive_windows_are_replenished_and_pings_answered() {
    let mut st = settled(&[]);
    let (slot, id) = st.start(&OK, &Bytes::new()).unwrap();
    st.out.clear();
    feed(&mut st, &response(id, &OK, false));
    let chunk = vec![0u8; frame::DEFAULT_MAX_FRAME];
    let mut f = Vec::new();
    for _ in 0..(STREAM_WINDOW as usize / 2).div_ceil(chunk.len()) {
        frame::data(&mut f, id, &chunk, false);
    }
    frame::head(&mut f, 8, frame::PING, 0, 0);
    f.extend_from_slice(b"12345678");
    feed(&mut st, &f);
    let out = frames(&st.out);
    st.out.clear();
    assert!(out.iter().any(|(h, p)| h.kind == frame::WINDOW_UPDATE
        && h.stream == id
        && frame::u31(p) >= STREAM_WINDOW / 2));
    assert!(out
        .iter()
        .any(|(h, p)| h.kind == frame::PING && h.flags == frame::ACK && p == b"12345678"));
    // Cancelled: RST_STREAM(CANCEL); later frames of it are ignored.
    assert!(st.cancel(slot, id));
    assert_eq!(kinds(&mut st), [(frame::RST_STREAM, 0, id)]);
    let mut f = Vec::new();
    frame::data(&mut f, id, b"late", true);
    feed(&mut st, &f);
    assert!(st.dead.is_none());
}

/// Feed `bytes` after the server's SETTINGS and one open stream; the
/// connection must fail with a GOAWAY carrying `code`.
fn fails_with(bytes: &[u8], code: u32) {
    let mut st = settled(&[]);
    let (slot, _) = st.start(&OK, &Bytes::new()).unwrap();
    st.out.clear();
    feed(&mut st, bytes);
    assert_eq!(st.dead, Some(ErrorKind::Protocol), "{bytes:?}");
    let f = frames(&st.out);
    assert_eq!(
        f.last().map(|(h, p)| (h.kind, frame::u31(&p[4..]))),
        Some((frame::GOAWAY, code))
    );
    let failed = poll(&mut st, slot).map(|r| r.0);
    assert!(matches!(
        failed,
        Poll::Ready(Err(Failure {
            connection: true,
            ..
        }))
    ));
}

#[test]
fn protocol_errors_fail_the_connection_not_the_process() {
    let mut f = Vec::new();
    frame::head(&mut f, 20_000, frame::DATA, 0, 1);
    fails_with(&f, frame::FRAME_SIZE_ERROR);
    fails_with(&response(1, &[0x80], true), frame::COMPRESSION_ERROR);
    fails_with(&response(5, &OK, true), frame::PROTOCOL_ERROR); // idle stream
    fails_with(&response(2, &OK, true), frame::PROTOCOL_ERROR); // push stream
    let mut f = Vec::new();
    frame::head(&mut f, 0, frame::HEADERS, 0, 1);
    frame::data(&mut f, 1, b"x", false); // not a CONTINUATION
    fails_with(&f, frame::PROTOCOL_ERROR);
    let mut f = Vec::new();
    frame::window_update(&mut f, 0, frame::MAX_WINDOW as u32);
    fails_with(&f, frame::FLOW_CONTROL_ERROR);
    let mut f = Vec::new();
    frame::head(&mut f, 4, frame::PUSH_PROMISE, frame::END_HEADERS, 1);
    f.extend_from_slice(&[0, 0, 0, 2]);
    fails_with(&f, frame::PROTOCOL_ERROR);
    let mut f = Vec::new();
    frame::settings(&mut f, &[(frame::SETTINGS_MAX_FRAME_SIZE, 100)]);
    fails_with(&f, frame::PROTOCOL_ERROR);
    // Before the server's SETTINGS, anything else is an error.
    let mut st = State::new();
    feed(&mut st, &response(1, &OK, true));
    assert_eq!(st.dead, Some(ErrorKind::Protocol));
}

#[test]
fn garbage_never_panics() {
    // Deterministic pseudo-random frames after a valid start.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        let mut st = settled(&[]);
        let _ = st.start(&OK, &Bytes::from_static(b"body"));
        let mut b = Vec::new();
        for _ in 0..(x % 5) {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let len = (x >> 40) as usize % 24;
            frame::head(
                &mut b,
                len,
                (x >> 8) as u8 % 11,
                (x >> 16) as u8,
                (x >> 24) as u32 % 4,
            );
            for i in 0..len {
                b.push((x >> (i % 7 * 8)) as u8);
            }
        }
        let _ = st.receive(&b, &mut None);
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    }
}
