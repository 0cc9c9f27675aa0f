//! A multiplexed connection shared by request slots: HTTP/2 ([`super::h2`])
//! and HTTP/3 ([`super::h3`]) both carry `streams` concurrent requests on
//! one connection, each a *lane* ([`MuxLane`]) that behaves for the engine
//! like one HTTP/1.1 connection: it takes one request at a time, so the
//! open-loop dispatcher and the closed loop drive lanes exactly as they
//! drive HTTP/1.1 connections. A protocol supplies a [`Session`]: how to
//! open its connection and how to make one request on it.
//!
//! Accounting: the lane that opens a connection reports it opened; the one
//! that drops it after a connection-level error (an I/O error, a GOAWAY)
//! reports it closed, and otherwise the last lane of the connection to end
//! closes it, so `connections_opened = connections_closed` holds as for
//! HTTP/1.1. A stream reset fails that request only. A request refused
//! unprocessed (GOAWAY past its stream, REFUSED_STREAM, H3_REQUEST_REJECTED;
//! RFC 9113 §8.7, RFC 9114 §4.1.1) is retried once on a fresh connection,
//! as browsers do, so a server's per-connection request limit does not show
//! up as errors.

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::conn::{within, Connector, Exchange, Handshake, Outcome};
use super::recorder::ErrorKind;
use super::server_timing::Parsed;

/// Why a request failed, and whether its connection is gone with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub kind: ErrorKind,
    /// The connection is unusable (I/O error, GOAWAY, protocol error).
    pub connection: bool,
    /// The server did not process the request: it may be sent again.
    pub refused: bool,
}

/// One open connection of a multiplexing protocol, as its lanes share it.
/// Its futures run on the engine thread's `LocalSet`, so they need not be
/// `Send`.
#[allow(async_fn_in_trait)]
pub trait Session: Clone {
    /// A request in the form this protocol sends.
    type Request;

    /// Open a connection (within the connector's timeout), with the time
    /// of each phase.
    ///
    /// # Errors
    /// The failure's kind.
    async fn open(connector: &Connector) -> Result<(Self, Handshake), ErrorKind>;

    /// True when the connection may open one more stream now (its lanes
    /// use fewer than the server's limit). A lane finding none moves to
    /// another connection rather than queue behind a response.
    fn has_free_stream(&self) -> bool {
        true
    }

    /// Send `req` on a new stream and read the whole response: fill in
    /// `ex`'s bytes and first byte and `timing` from `Server-Timing`. Each
    /// lane calls it on its own handle of the connection (a clone made once
    /// per connection, not per request).
    ///
    /// # Errors
    /// The [`Failure`].
    async fn round_trip(
        &mut self,
        req: &Self::Request,
        ex: &mut Exchange,
        timing: &mut Parsed,
    ) -> Result<u16, Failure>;
}

/// One connection, shared by its lanes on one engine thread.
pub struct MuxConn<S> {
    session: RefCell<Option<S>>,
    /// Held by the lane opening the connection; the others wait for it.
    opening: tokio::sync::Mutex<()>,
    /// Lanes using this connection and not yet closed.
    lanes: Cell<usize>,
    /// Bumped at each (re)open: an error seen on an older connection does
    /// not close its replacement.
    generation: Cell<u64>,
    /// Where its lanes go when it has no free stream (the server allows
    /// fewer concurrent streams than lanes joined it): the next connection
    /// of a chain, made on first need and opened by the first lane there.
    spill: RefCell<Option<Rc<MuxConn<S>>>>,
}

impl<S: Session> MuxConn<S> {
    /// A connection not yet opened (the first exchange opens it).
    pub fn new() -> Rc<Self> {
        Rc::new(Self {
            session: RefCell::new(None),
            opening: tokio::sync::Mutex::new(()),
            lanes: Cell::new(0),
            generation: Cell::new(0),
            spill: RefCell::new(None),
        })
    }

    /// Lanes joined so far and still running.
    pub fn lanes(&self) -> usize {
        self.lanes.get()
    }

    /// True while the connection is open and has a free stream (a new
    /// lane can send on it at once).
    pub fn has_free_stream(&self) -> bool {
        self.session
            .borrow()
            .as_ref()
            .is_some_and(Session::has_free_stream)
    }

    /// Drop the connection if it is still generation `generation`; true
    /// when this closed it.
    fn drop_if(&self, generation: u64) -> bool {
        generation == self.generation.get() && self.session.borrow_mut().take().is_some()
    }
}

/// One request slot on a multiplexed connection.
pub struct MuxLane<S> {
    conn: Rc<MuxConn<S>>,
    timing: Parsed,
    joined: bool,
    /// This lane's handle of its connection and the connection's generation
    /// when it was cloned: a clone per request would cost the protocol's
    /// shared-state bookkeeping (h2: a lock and two atomic counts) twice.
    session: Option<(u64, S)>,
    /// The read timeout's timer, kept from one exchange to the next
    /// ([`within`]: no timer-wheel entry per request).
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S: Session> MuxLane<S> {
    /// A new lane on `conn`.
    pub fn join(conn: &Rc<MuxConn<S>>) -> Self {
        conn.lanes.set(conn.lanes.get() + 1);
        Self {
            conn: conn.clone(),
            timing: Parsed::default(),
            joined: true,
            session: None,
            timer: None,
        }
    }

    /// The `Server-Timing` metrics of the last response.
    pub fn server_timing(&self) -> &Parsed {
        &self.timing
    }

    /// Open the connection unless it is open (or being opened by another
    /// lane, which is waited for). Returns the phases when this lane opened
    /// it.
    ///
    /// # Errors
    /// The failure's kind ([`Session::open`]).
    pub async fn open(&mut self, connector: &Connector) -> Result<Option<Handshake>, ErrorKind> {
        if self.conn.session.borrow().is_some() {
            return Ok(None);
        }
        let _guard = self.conn.opening.lock().await;
        if self.conn.session.borrow().is_some() {
            return Ok(None);
        }
        let (session, phases) = S::open(connector).await?;
        *self.conn.session.borrow_mut() = Some(session);
        self.conn.generation.set(self.conn.generation.get() + 1);
        Ok(Some(phases))
    }

    /// Leave this lane's connection, which has no free stream, for the
    /// next one of its chain. Returns true when leaving closed it (this was
    /// its last lane).
    fn spill(&mut self) -> bool {
        let next = self
            .conn
            .spill
            .borrow_mut()
            .get_or_insert_with(MuxConn::new)
            .clone();
        let closed = self.close();
        *self = Self::join(&next);
        closed
    }

    /// Send `req` on this lane (opening the connection first when needed)
    /// and read the whole response, within `read_timeout` from the send to
    /// the last byte. When the connection has no free stream the lane moves
    /// along its chain to one that has (or opens the next), so the request
    /// is sent at once rather than queued behind another's response. A
    /// request refused unprocessed is sent once more on a fresh connection.
    /// Never panics; failures come back in the outcome.
    pub async fn exchange(
        &mut self,
        connector: &Connector,
        req: &S::Request,
        read_timeout: Duration,
    ) -> Exchange {
        let mut ex = Exchange::new();
        let mut attempt = 0;
        loop {
            match self.open(connector).await {
                Ok(phases) => {
                    ex.opened |= phases.is_some();
                    ex.handshake = ex.handshake.or(phases);
                }
                Err(kind) => {
                    ex.outcome = Outcome::Error(kind);
                    ex.connect_failed = true;
                    ex.end = Instant::now();
                    return ex;
                }
            }
            let generation = self.conn.generation.get();
            let session = match (&mut self.session, &*self.conn.session.borrow()) {
                (Some((g, s)), Some(_)) if *g == generation => s,
                (_, None) => {
                    self.session = None;
                    ex.outcome = Outcome::Error(ErrorKind::Reset);
                    break;
                }
                (mine, Some(s)) => &mut mine.insert((generation, s.clone())).1,
            };
            // A connection this exchange opened is used whatever its limit,
            // so one exchange opens at most one connection.
            if !ex.opened && !session.has_free_stream() {
                ex.closed |= self.spill();
                continue;
            }
            // The exchange's start (one clock read) is the deadline's base
            // unless a connect or a refused attempt came first.
            if ex.opened || attempt > 0 {
                ex.write_start = Instant::now();
            }
            self.timing.clear();
            let deadline = tokio::time::Instant::from_std(ex.write_start + read_timeout);
            let mut timer = self
                .timer
                .take()
                .unwrap_or_else(|| Box::pin(tokio::time::sleep_until(deadline)));
            let trip = session.round_trip(req, &mut ex, &mut self.timing);
            let result = within(&mut timer, deadline, trip).await;
            self.timer = Some(timer);
            ex.end = Instant::now();
            match result {
                Some(Ok(status)) => ex.outcome = Outcome::Response(status),
                None => ex.outcome = Outcome::Error(ErrorKind::ReadTimeout),
                Some(Err(f)) => {
                    if f.connection {
                        // other lanes let go of their handles at their next
                        // exchange, which finds the connection gone
                        self.session = None;
                        ex.closed |= self.conn.drop_if(generation);
                    }
                    ex.outcome = Outcome::Error(f.kind);
                    // One retry, on a connection this exchange did not
                    // open (so its open and close stay counted once each).
                    if f.refused && attempt == 0 && !ex.opened {
                        attempt += 1;
                        continue;
                    }
                }
            }
            break;
        }
        ex
    }

    /// Leave the connection; the last lane to leave closes it. Returns true
    /// when this closed an open connection.
    pub fn close(&mut self) -> bool {
        if !std::mem::take(&mut self.joined) {
            return false;
        }
        let left = self.conn.lanes.get().saturating_sub(1);
        self.conn.lanes.set(left);
        self.session = None;
        left == 0 && self.conn.session.borrow_mut().take().is_some()
    }
}
