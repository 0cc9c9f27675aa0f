//! The client side of one HTTP/2 connection as a state machine, without
//! I/O (RFC 9113): bytes read go in ([`State::receive`]), frames to write
//! come out in [`State::out`], and requests start, complete and are
//! cancelled by stream slot. [`super::client`] runs it over a socket.
//!
//! Flow control both ways (§5.2, §6.9): a request body is sent only within
//! the peer's connection and stream windows (the rest waits for its
//! WINDOW_UPDATEs); the client advertises large receive windows and
//! replenishes each once half of it is used. SETTINGS_MAX_CONCURRENT_STREAMS
//! and SETTINGS_MAX_FRAME_SIZE are honoured. Connection errors close with a
//! GOAWAY and fail every open stream; stream errors send RST_STREAM and fail
//! that request only; a GOAWAY fails the streams past its last stream id as
//! refused (the engine retries them on a fresh connection).

use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::Bytes;

use super::super::conn::Exchange;
use super::super::mux::Failure;
use super::super::recorder::ErrorKind;
use super::super::server_timing::Parsed;
use super::frame;
use super::hpack::Decoder;

/// The stream flow-control window the client advertises, bytes: large, so
/// a response body is never held up by the client's window (h2load's
/// defaults are larger still).
pub const STREAM_WINDOW: u32 = 4 << 20;
/// The connection flow-control window the client advertises, bytes.
pub const CONNECTION_WINDOW: u32 = 16 << 20;

/// The largest header block accepted (HEADERS and its CONTINUATIONs), bytes.
pub(super) const MAX_HEADER_BLOCK: usize = 256 << 10;

/// The largest stream identifier (2^31 - 1).
pub(super) const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// One request's stream.
#[derive(Default)]
pub(super) struct Slot {
    /// The stream identifier; 0 while the slot is free.
    pub(super) id: u32,
    /// The final response status once its headers are read; 0 before.
    pub(super) status: u16,
    pub(super) first_byte: Option<Instant>,
    pub(super) bytes_in: u64,
    pub(super) timing: Parsed,
    /// Set once the stream is over, taken by the request.
    pub(super) result: Option<Result<u16, Failure>>,
    pub(super) waker: Option<Waker>,
    pub(super) send_window: i64,
    pub(super) recv_window: i64,
    pub(super) recv_unacked: u32,
    /// The request body and how much of it is sent.
    pub(super) body: Bytes,
    pub(super) body_sent: usize,
}

/// The state of one HTTP/2 client connection.
pub struct State {
    /// Frames to write, in order.
    pub out: Vec<u8>,
    /// The socket task's waker (set by it at each poll).
    pub driver: Option<Waker>,
    /// All handles are gone: the connection is to be closed.
    pub closed: bool,
    /// The connection failed (the error each stream got).
    pub dead: Option<ErrorKind>,
    pub(super) slots: Vec<Slot>,
    /// Slots in use (streams started and not yet taken or cancelled).
    pub(super) active: usize,
    pub(super) next_id: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (unbounded until set).
    pub(super) max_streams: usize,
    /// The server's SETTINGS_MAX_FRAME_SIZE.
    pub(super) max_frame: usize,
    /// The server's SETTINGS_INITIAL_WINDOW_SIZE.
    pub(super) initial_window: i64,
    /// What the client may still send on the connection, bytes.
    pub(super) send_window: i64,
    /// What the server may still send on the connection, bytes.
    pub(super) recv_window: i64,
    pub(super) recv_unacked: u32,
    /// The server's first SETTINGS arrived (its preface, §3.4).
    pub(super) settled: bool,
    /// The last stream id of a GOAWAY received.
    pub(super) goaway: Option<u32>,
    pub(super) decoder: Decoder,
    /// A header block being continued: its bytes, stream and END_STREAM.
    pub(super) block: Vec<u8>,
    pub(super) continuing: Option<(u32, bool)>,
    /// Requests waiting for a free stream, and the handshake.
    pub(super) waiters: Vec<Waker>,
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

fn connection_failure(kind: ErrorKind) -> Failure {
    Failure {
        kind,
        connection: true,
        refused: false,
    }
}

/// A request the server will not process on this connection (GOAWAY past
/// it, or no stream id left): to be sent again on a fresh one.
pub(super) const REFUSED: Failure = Failure {
    kind: ErrorKind::Reset,
    connection: true,
    refused: true,
};

impl State {
    /// A connection about to start: the client preface (the magic, SETTINGS
    /// with push disabled and the stream window, the connection window's
    /// WINDOW_UPDATE) is already in [`State::out`].
    pub fn new() -> Self {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            ],
        );
        frame::window_update(&mut out, 0, CONNECTION_WINDOW - frame::DEFAULT_WINDOW);
        Self {
            out,
            driver: None,
            closed: false,
            dead: None,
            slots: Vec::new(),
            active: 0,
            next_id: 1,
            max_streams: usize::MAX,
            max_frame: frame::DEFAULT_MAX_FRAME,
            initial_window: i64::from(frame::DEFAULT_WINDOW),
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_window: i64::from(CONNECTION_WINDOW),
            recv_unacked: 0,
            settled: false,
            goaway: None,
            decoder: Decoder::default(),
            block: Vec::new(),
            continuing: None,
            waiters: Vec::new(),
        }
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub fn max_streams(&self) -> usize {
        self.max_streams
    }

    /// Wake the socket task (output was queued).
    pub fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    pub(super) fn wake_waiters(&mut self) {
        for w in self.waiters.drain(..) {
            w.wake();
        }
    }

    /// Ready once the server's SETTINGS are applied (the handshake's end).
    ///
    /// # Errors
    /// The connection's failure.
    pub fn poll_settled(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorKind>> {
        if let Some(kind) = self.dead {
            return Poll::Ready(Err(kind));
        }
        if self.settled {
            return Poll::Ready(Ok(()));
        }
        self.waiters.push(cx.waker().clone());
        Poll::Pending
    }

    /// Ready when a stream may start (fewer in use than the server allows).
    ///
    /// # Errors
    /// The connection failed, or a GOAWAY refuses new streams.
    pub fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        if let Some(kind) = self.dead {
            return Poll::Ready(Err(connection_failure(kind)));
        }
        if self.goaway.is_some() || self.next_id > MAX_STREAM_ID {
            return Poll::Ready(Err(REFUSED));
        }
        if self.active < self.max_streams {
            return Poll::Ready(Ok(()));
        }
        self.waiters.push(cx.waker().clone());
        Poll::Pending
    }

    /// Start a request: its HEADERS (`block`, END_STREAM when `body` is
    /// empty) and as much of `body` as the windows allow go to
    /// [`State::out`]. Returns the (slot, stream id).
    ///
    /// # Errors
    /// As [`State::poll_ready`] (it does not check the stream limit).
    pub fn start(&mut self, block: &[u8], body: &Bytes) -> Result<(usize, u32), Failure> {
        if let Some(kind) = self.dead {
            return Err(connection_failure(kind));
        }
        if self.goaway.is_some() || self.next_id > MAX_STREAM_ID {
            return Err(REFUSED);
        }
        let id = self.next_id;
        self.next_id += 2;
        let i = match self.slots.iter().position(|s| s.id == 0) {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                self.slots.len() - 1
            }
        };
        let s = &mut self.slots[i];
        s.id = id;
        s.status = 0;
        s.first_byte = None;
        s.bytes_in = 0;
        s.timing.clear();
        s.result = None;
        s.send_window = self.initial_window;
        s.recv_window = i64::from(STREAM_WINDOW);
        s.recv_unacked = 0;
        s.body_sent = 0;
        frame::headers(&mut self.out, id, block, body.is_empty(), self.max_frame);
        self.active += 1;
        if !body.is_empty() {
            self.slots[i].body = body.clone();
            self.send_body(i);
        }
        Ok((i, id))
    }

    /// The request's outcome once its stream is over: fills `ex`'s first
    /// byte and bytes in and swaps the response's `Server-Timing` into
    /// `timing`, and frees the slot.
    pub fn poll_response(
        &mut self,
        slot: usize,
        cx: &mut Context<'_>,
        ex: &mut Exchange,
        timing: &mut Parsed,
    ) -> Poll<Result<u16, Failure>> {
        let s = &mut self.slots[slot];
        let Some(result) = s.result.take() else {
            if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                s.waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        };
        ex.first_byte = s.first_byte;
        ex.bytes_in = s.bytes_in;
        std::mem::swap(timing, &mut s.timing);
        self.free(slot);
        Poll::Ready(result)
    }

    /// Give up a request (its read timeout): RST_STREAM(CANCEL) unless the
    /// stream is over, and free the slot. True when a frame was queued.
    pub fn cancel(&mut self, slot: usize, id: u32) -> bool {
        let s = &self.slots[slot];
        if s.id != id {
            return false;
        }
        let reset = s.result.is_none() && self.dead.is_none();
        if reset {
            frame::rst_stream(&mut self.out, id, frame::CANCEL);
        }
        self.free(slot);
        reset
    }

    fn free(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        s.id = 0;
        s.waker = None;
        s.body = Bytes::new();
        self.active -= 1;
        if !self.waiters.is_empty() {
            self.wake_waiters();
        }
    }

    /// All handles are gone: say GOAWAY (unless failed already).
    pub fn close(&mut self) {
        self.closed = true;
        if self.dead.is_none() {
            frame::goaway(&mut self.out, 0, frame::NO_ERROR);
        }
    }

    /// Fail the connection with `kind` (a GOAWAY with `code` queued when
    /// given): every open stream fails, no new one starts.
    pub fn fail(&mut self, kind: ErrorKind, code: Option<u32>) {
        if self.dead.is_some() {
            return;
        }
        if let Some(code) = code {
            frame::goaway(&mut self.out, 0, code);
        }
        self.dead = Some(kind);
        for i in 0..self.slots.len() {
            if self.slots[i].id != 0 && self.slots[i].result.is_none() {
                self.finish(i, Err(connection_failure(kind)));
            }
        }
        self.wake_waiters();
    }

    /// An I/O error on the socket (`None`: end of stream).
    pub fn io_failed(&mut self, e: Option<&std::io::Error>) {
        let kind = match e.map(ErrorKind::from_io) {
            None | Some(ErrorKind::Other | ErrorKind::ReadTimeout) => ErrorKind::Reset,
            Some(k) => k,
        };
        self.fail(kind, None);
    }

    pub(super) fn finish(&mut self, i: usize, result: Result<u16, Failure>) {
        let s = &mut self.slots[i];
        if result.is_ok() && s.body_sent < s.body.len() {
            // The response is complete before the request body: the rest
            // is not needed (RFC 9113 §8.1).
            frame::rst_stream(&mut self.out, s.id, frame::CANCEL);
        }
        s.result = Some(result);
        s.body = Bytes::new();
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// A stream error: RST_STREAM with `code`, and the request fails.
    pub(super) fn reset(&mut self, i: usize, code: u32) {
        frame::rst_stream(&mut self.out, self.slots[i].id, code);
        self.finish(
            i,
            Err(Failure {
                kind: ErrorKind::Protocol,
                connection: false,
                refused: false,
            }),
        );
    }

    /// Send what the windows allow of slot `i`'s body.
    pub(super) fn send_body(&mut self, i: usize) {
        let s = &mut self.slots[i];
        while s.body_sent < s.body.len() {
            let left = (s.body.len() - s.body_sent) as i64;
            let n = left
                .min(self.send_window)
                .min(s.send_window)
                .min(self.max_frame as i64);
            if n <= 0 {
                break;
            }
            let end = s.body_sent + n as usize;
            frame::data(
                &mut self.out,
                s.id,
                &s.body[s.body_sent..end],
                end == s.body.len(),
            );
            s.body_sent = end;
            s.send_window -= n;
            self.send_window -= n;
        }
    }

    pub(super) fn send_bodies(&mut self) {
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if s.id != 0 && s.result.is_none() && s.body_sent < s.body.len() {
                self.send_body(i);
            }
        }
    }
}
