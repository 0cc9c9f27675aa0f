//! End-to-end: HTTP/2 (h2c, prior knowledge) against `perflab serve` on
//! 127.0.0.1, and the phase timings of both protocols. Each test is bounded
//! to about a second; they assert accounting identities, never speeds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::e2e_tests::{assert_balanced, delayed, open, run_one, serve};
use super::*;
use crate::server::{Fault, ServerConfig};

fn h2(c: &mut Config, streams: usize) {
    c.protocol = Protocol::Http2;
    c.streams = streams;
}

#[test]
fn closed_loop_multiplexes_streams_on_few_connections() {
    let h = delayed(Duration::from_millis(2));
    let mut c = open(&h, 1.0, 600);
    c.model = LoadModel::Closed;
    c.steps[0] = StepSpec {
        rate: None,
        connections: Some(2),
    };
    h2(&mut c, 4);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert_eq!((s.protocol, s.streams, s.connections), ("h2", 4, 2));
    // Eight request loops on two connections: the server saw two.
    assert_eq!(k.connections_opened, 2, "{k:?}");
    assert_eq!(h.stats().connections.load(Ordering::Relaxed), 2);
    assert_eq!(k.connections_peak, 2);
    assert!(k.ok_responses > 0 && k.failures == 0, "{k:?}");
    assert_eq!(
        k.status_counts[200],
        k.ok_responses + k.drained - k.ok_from_warmup
    );
    let hs = &s.recorder.histograms;
    // Every response began and ended; the connects were recorded ones.
    assert_eq!(hs.ttfb.len(), hs.latency.len());
    assert_eq!(hs.body_time.len(), hs.latency.len());
    assert_eq!(hs.connect.len(), 2);
    assert_eq!(hs.tls_handshake.len(), 0);
    // The server's 2 ms delay lies between the send and the first byte.
    assert!(hs.ttfb.min() >= 1900, "{}", hs.ttfb.min());
}

#[test]
fn open_loop_accounts_every_intended_request() {
    let h = delayed(Duration::from_millis(1));
    let mut c = open(&h, 500.0, 800);
    h2(&mut c, 8);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    // 0.8 s at 500/s, evenly spaced: 400 intended times in the window.
    assert_eq!(k.requests_sent + k.unsent, 400, "{k:?}");
    assert_eq!(s.recorder.histograms.send_lag.len(), k.requests_sent);
    assert!(k.connections_opened >= 1 && k.connections_peak >= 1);
    // Streams share connections: never more connections than lanes / 8.
    assert!(k.connections_peak * 8 >= k.connections_opened.min(k.connections_peak));
    assert_eq!(
        h.stats().requests.load(Ordering::Relaxed),
        k.requests_sent,
        "{k:?}"
    );
}

#[test]
fn errors_and_faults_fail_the_stream_not_the_connection() {
    let h = serve(ServerConfig {
        error_rate: 1.0,
        ..Default::default()
    });
    let mut c = open(&h, 200.0, 400);
    h2(&mut c, 4);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert_eq!(k.status_counts[500], k.failures);
    assert_eq!(k.connections_errored, 0, "{k:?}");

    let h = serve(ServerConfig {
        fault: Fault::CloseMidResponse,
        ..Default::default()
    });
    let mut c = open(&h, 200.0, 400);
    h2(&mut c, 4);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert!(k.failures > 0);
    assert_eq!(k.error(ErrorKind::Reset), k.failures, "{k:?}");
    // A reset stream leaves its connection open for the next request.
    assert_eq!(k.connections_errored, 0, "{k:?}");
    assert!(k.connections_opened <= k.connections_peak, "{k:?}");

    let h = serve(ServerConfig {
        fault: Fault::EndlessBody,
        ..Default::default()
    });
    let mut c = open(&h, 20.0, 300);
    c.read_timeout = Duration::from_millis(300);
    h2(&mut c, 2);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert_eq!(k.error(ErrorKind::ReadTimeout), k.failures, "{k:?}");
    assert!(k.failures > 0);
}

#[test]
fn http1_phases_count_connections_and_responses() {
    let h = delayed(Duration::from_millis(1));
    let mut c = open(&h, 1.0, 500);
    c.model = LoadModel::Closed;
    c.steps[0] = StepSpec {
        rate: None,
        connections: Some(3),
    };
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let hs = &s.recorder.histograms;
    assert_eq!((s.protocol, s.streams), ("http/1.1", 1));
    assert_eq!(hs.connect.len(), s.recorder.counters.connections_opened);
    assert_eq!(hs.tls_handshake.len(), 0);
    assert_eq!(hs.ttfb.len(), hs.latency.len() + hs.failed_latency.len());
    assert!(hs.ttfb.min() >= 900, "{}", hs.ttfb.min());
}

#[test]
fn http2_to_an_http2_less_server_is_a_counted_protocol_error() {
    // A plain TCP listener that answers HTTP/1.1 to anything.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for s in l.incoming().take(50) {
            let Ok(mut s) = s else { continue };
            let mut b = [0u8; 256];
            let _ = s.read(&mut b);
            let _ = s.write_all(b"HTTP/1.1 505 No\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let mut c = Config::open(&format!("http://{addr}/"), 10.0).unwrap();
    c.duration = Duration::from_millis(300);
    c.threads = 1;
    c.read_timeout = Duration::from_secs(1);
    h2(&mut c, 1);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert!(k.failures > 0 && k.ok_responses == 0, "{k:?}");
}

/// An h2c server on 127.0.0.1 that allows `streams` streams per connection
/// (SETTINGS_MAX_CONCURRENT_STREAMS) and holds every response until it has
/// received `gate` requests in all, then answers each at once. Returns its
/// address and the count of connections it accepted.
fn gate_server(streams: u32, gate: u64) -> (std::net::SocketAddr, Arc<AtomicU64>) {
    let (seen, _) = tokio::sync::watch::channel(0u64);
    let seen = Arc::new(seen);
    test_server(move |tcp| {
        let seen = seen.clone();
        async move {
            let Ok(mut conn) = ::h2::server::Builder::new()
                .max_concurrent_streams(streams)
                .handshake::<_, bytes::Bytes>(tcp)
                .await
            else {
                return;
            };
            while let Some(Ok((_, mut respond))) = conn.accept().await {
                seen.send_modify(|n| *n += 1);
                let mut open = seen.subscribe();
                tokio::spawn(async move {
                    let _ = open.wait_for(|&n| n >= gate).await;
                    let _ = respond.send_response(http::Response::new(()), true);
                });
            }
        }
    })
}

/// An h2c test server on 127.0.0.1 (a thread and runtime of its own): each
/// connection it accepts is counted and served by `serve` in a task.
/// Returns its address and the count of connections accepted.
fn test_server<F, Fut>(serve: F) -> (std::net::SocketAddr, Arc<AtomicU64>)
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Arc::new(AtomicU64::new(0));
    let counted = conns.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((tcp, _)) = l.accept().await {
                counted.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(serve(tcp));
            }
        });
    });
    (addr, conns)
}

/// Open loop over h2c to `addr` at `rate` for `ms`, one engine thread, a
/// pool of one connection × `streams` slots, a `timeout_ms` read timeout.
fn one_connection(
    addr: std::net::SocketAddr,
    rate: f64,
    ms: u64,
    streams: usize,
    timeout_ms: u64,
) -> Config {
    let mut c = Config::open(&format!("http://{addr}/"), rate).unwrap();
    c.duration = Duration::from_millis(ms);
    c.threads = 1;
    c.read_timeout = Duration::from_millis(timeout_ms);
    c.steps[0].connections = Some(1);
    h2(&mut c, streams);
    c
}

#[test]
fn a_request_finding_no_free_stream_goes_to_another_connection() {
    // Three lanes on one connection the server lets carry one stream at a
    // time, and a server that answers nothing until three requests reached
    // it: only requests moved to other connections can open the gate. Had
    // a request queued behind another's response on its lane's connection,
    // the first three would all time out.
    let (addr, accepted) = gate_server(1, 3);
    let c = one_connection(addr, 100.0, 300, 3, 3_000);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert!(k.requests_sent >= 3, "{k:?}");
    assert_eq!(k.failures + k.unfinished, 0, "{k:?}");
    // One connection per lane: each carries one stream at a time.
    assert_eq!(k.connections_opened, 3, "{k:?}");
    assert_eq!(k.connections_peak, 3, "{k:?}");
    assert_eq!(accepted.load(Ordering::Relaxed), 3);
    // Sent when due, not when a response freed a stream: the send lag of
    // every request stays far below the 3 s a held-up one would show.
    assert!(s.recorder.histograms.send_lag.max() < 1_000_000);
}

#[test]
fn new_streams_on_an_open_connection_are_added_without_waiting() {
    // A server that never answers: every request holds its stream, so the
    // pool must grow by one slot per request, 2,000 a second. Streams on
    // the open connection open no connection and are added at once; paced
    // at one new slot per millisecond (as connects are), about half of the
    // 400 requests due in 200 ms would wait until the step's end, unsent.
    let (addr, _) = gate_server(1024, u64::MAX);
    let c = one_connection(addr, 2000.0, 200, 512, 300);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert_eq!(k.requests_sent + k.unsent, 400, "{k:?}");
    assert!(k.unsent < 100, "{k:?}");
    // Unanswered: timed out, or cut off at the drain's end.
    assert_eq!(k.failures + k.unfinished, k.requests_sent, "{k:?}");
    assert_eq!(k.connections_opened, 1, "{k:?}");
}

/// An h2c server (the `h2` crate) that answers 200 at once and, after
/// `limit` requests on a connection, shuts it down gracefully (GOAWAY, the
/// streams past its last stream id refused), as nginx does after
/// `keepalive_requests`. Returns its address and the connections accepted.
fn goaway_server(limit: u64) -> (std::net::SocketAddr, Arc<AtomicU64>) {
    test_server(move |tcp| async move {
        let Ok(mut conn) = ::h2::server::handshake(tcp).await else {
            return;
        };
        let mut served = 0;
        while let Some(Ok((_, mut respond))) = conn.accept().await {
            let _ = respond.send_response(http::Response::new(()), true);
            served += 1;
            if served == limit {
                conn.graceful_shutdown();
            }
        }
    })
}

#[test]
fn a_goaway_retries_the_refused_requests_on_a_fresh_connection() {
    // 4 streams in flight on one connection the server ends every 25
    // requests: requests past its GOAWAY's last stream are sent again on
    // a new connection, none fails, and every connection opened is closed.
    let (addr, accepted) = goaway_server(25);
    let mut c = one_connection(addr, 1.0, 300, 4, 3_000);
    c.model = LoadModel::Closed;
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert_eq!(k.failures, 0, "{k:?}");
    assert!(k.ok_responses > 25, "{k:?}");
    // A connection carries its 25 requests and those the server accepted
    // before its final GOAWAY (h2 sends it a PING round trip after the
    // first): far fewer than a connection kept open would.
    let done = k.ok_responses + k.drained + k.ok_from_warmup;
    assert!(k.connections_opened * 40 >= done, "{k:?}");
    assert!(accepted.load(Ordering::Relaxed) >= 2);
}
