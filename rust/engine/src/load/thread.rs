//! One engine thread's state for one step, shared by the closed loop and
//! the drain ([`super::runner`]) and by the open-loop dispatcher
//! ([`super::dispatch`]): what the threads of a run share ([`Shared`]), a
//! thread's plan and result, the per-thread context [`Ctx`] with its
//! accounting, and the connection tasks (open loop: a [`Slot`] each;
//! closed loop: send the next request when the last one ends).
//!
//! Accounting (see [`super::recorder::Counters`]): a response counts toward
//! the achieved rate only when it completed inside the recorded window,
//! which ends at the step's end or at the first moment an engine thread saw
//! the stop flag.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::config::{LoadModel, Protocol};
use super::conn::{Conn, Connector, Exchange, Outcome};
use super::h2::{H2Conn, H2Lane, H2Request};
use super::h3::{H3Conn, H3Lane};
use super::lane::Lane;
use super::phases::record_phases;
use super::pool::IdleList;
use super::progress::Progress;
use super::recorder::{ErrorKind, OkStatus, Recorder};
use super::server_timing::Parsed;
use super::timeline::Timeline;
use crate::hdr::{new_histogram, record, Histogram};
use crate::sys::thread_cpu_time;

/// Everything the engine threads of a run share.
pub(crate) struct Shared {
    pub connector: Connector,
    /// Serialized requests and whether each is a HEAD.
    pub requests: Vec<(Vec<u8>, bool)>,
    pub ok: OkStatus,
    pub read_timeout: Duration,
    pub model: LoadModel,
    pub seed: u64,
    /// This engine's lanes of a schedule shared by load agents (see
    /// [`super::Config::lanes`]).
    pub lanes: Option<super::schedule::Lanes>,
    pub stop: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
    /// When an engine thread first saw the stop flag: the recorded window
    /// of the running step ends there (no step starts after a stop).
    pub stopped_at: OnceLock<Instant>,
    /// The run's load shape ([`super::Config::shape`]).
    pub shape: Option<super::shape::Shape>,
    /// The timeline interval ([`super::Config::timeline_interval`]).
    pub timeline_interval: Option<Duration>,
    /// The HTTP version spoken, and HTTP/2's streams per connection.
    pub protocol: Protocol,
    pub streams: usize,
    /// HTTP/2: the requests' HTTP/2 form (same order as `requests`).
    pub h2_requests: Vec<H2Request>,
    /// Open loop: how long a connection may stay idle while the pool is
    /// above its initial size ([`super::pool`]).
    pub pool_idle: Duration,
}

/// One thread's share of one step.
#[derive(Clone, Debug)]
pub(crate) struct ThreadPlan {
    pub thread: usize,
    pub threads: usize,
    /// Total offered rate of the step (open loop), req/s.
    pub rate: Option<f64>,
    /// Open loop: this thread's pool cap. Closed loop: its connections.
    pub connections: usize,
    /// Open loop: connections opened before `t0`.
    pub prewarm: usize,
    pub t0: Instant,
    pub warmup_end: Instant,
    pub end: Instant,
}

/// What a thread hands back at the end of a step.
pub(crate) struct ThreadResult {
    pub recorder: Recorder,
    /// CPU time of this thread over the recorded part of the step, s.
    pub cpu_s: f64,
    /// When this thread's last recorded request was answered, failed or
    /// was cut off (None when it had none).
    pub last_completion: Option<Instant>,
    /// This thread's timeline of the step (None when off).
    pub timeline: Option<Timeline>,
}

/// How often waiting loops look at the stop flag and publish progress.
pub(crate) const TICK: Duration = Duration::from_millis(100);
/// Closed-loop pause after a failed connect, so a dead target is not
/// hammered in a tight loop.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// A request handed to a connection: its intended send time and whether it
/// is recorded (intended after the warmup).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Issued {
    pub intended: Instant,
    pub recorded: bool,
}

/// An open-loop connection's mailbox: the dispatcher gives it one request
/// at a time; closing it ends the connection's task once it is idle.
pub(crate) struct Slot {
    work: Cell<Option<Issued>>,
    closed: Cell<bool>,
    notify: Notify,
}

impl Slot {
    /// A slot holding its first request, or none (a pre-opened connection).
    pub fn new(first: Option<Issued>) -> Self {
        Self {
            work: Cell::new(first),
            closed: Cell::new(false),
            notify: Notify::new(),
        }
    }

    /// Hand the (idle) connection its next request.
    pub fn give(&self, req: Issued) {
        self.work.set(Some(req));
        self.notify.notify_one();
    }

    /// No more work: the connection's task ends once it is idle.
    fn close(&self) {
        self.closed.set(true);
        self.notify.notify_one();
    }

    /// The next request, or None once the slot is closed and has no work.
    pub async fn take(&self) -> Option<Issued> {
        loop {
            if let Some(req) = self.work.take() {
                return Some(req);
            }
            if self.closed.get() {
                return None;
            }
            self.notify.notified().await;
        }
    }
}

struct State {
    rec: Recorder,
    delta_ok: u64,
    delta_failed: u64,
    delta_latency: Histogram<u64>,
    /// Open loop: connections waiting for work, and every slot of the step
    /// not closed yet.
    idle: IdleList<Rc<Slot>>,
    slots: Vec<Rc<Slot>>,
    /// Connection tasks running.
    live: usize,
    /// Connections with an open stream.
    open_streams: u64,
    /// Requests (recorded or not) handed to a connection and not yet done.
    busy: u64,
    /// Of those, the recorded ones.
    in_flight: u64,
    next_request: usize,
    cpu_start: Option<Duration>,
    last_completion: Option<Instant>,
    timeline: Option<Timeline>,
    /// HTTP/2: the connection new lanes join until it has `streams` lanes.
    h2_conn: Option<Rc<H2Conn>>,
    /// HTTP/3: the same for QUIC connections.
    h3_conn: Option<Rc<H3Conn>>,
    /// Lanes that have joined `h2_conn` (or `h3_conn`).
    h2_joined: usize,
}

/// One engine thread's context for one step.
pub(crate) struct Ctx {
    pub shared: Arc<Shared>,
    pub plan: ThreadPlan,
    st: RefCell<State>,
    /// Woken when an open-loop connection becomes idle.
    pub idle_notify: Notify,
    done_notify: Notify,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

impl Ctx {
    pub(super) fn new(shared: Arc<Shared>, plan: ThreadPlan) -> Self {
        Ctx {
            st: RefCell::new(State {
                rec: Recorder::default(),
                delta_ok: 0,
                delta_failed: 0,
                delta_latency: new_histogram(),
                idle: IdleList::default(),
                slots: Vec::new(),
                live: 0,
                open_streams: 0,
                busy: 0,
                in_flight: 0,
                next_request: plan.thread % shared.requests.len(),
                cpu_start: None,
                last_completion: None,
                timeline: shared.timeline_interval.map(|d| Timeline::new(plan.t0, d)),
                h2_conn: None,
                h3_conn: None,
                h2_joined: 0,
            }),
            shared,
            plan,
            idle_notify: Notify::new(),
            done_notify: Notify::new(),
        }
    }

    /// True once the stop flag is set; the first thread to see it fixes
    /// the end of the recorded window.
    pub fn stopped(&self) -> bool {
        let s = self.shared.stop.load(Ordering::Relaxed);
        if s {
            self.shared.stopped_at.get_or_init(Instant::now);
        }
        s
    }

    /// The end of the recorded window as known now: the step's end, or the
    /// stop if one was seen before it. A response recorded before the stop
    /// is seen ended before it, so classifying it against this is exact.
    pub fn window_end(&self) -> Instant {
        self.shared
            .stopped_at
            .get()
            .map_or(self.plan.end, |&s| s.min(self.plan.end))
    }

    /// The next request round-robin: its HTTP/1.1 bytes and HEAD flag,
    /// and its HTTP/2 form when the run speaks HTTP/2.
    fn next_request(&self) -> ((&[u8], bool), Option<&H2Request>) {
        let mut st = self.st.borrow_mut();
        let i = st.next_request;
        st.next_request = (i + 1) % self.shared.requests.len();
        let (bytes, head) = &self.shared.requests[i];
        ((bytes, *head), self.shared.h2_requests.get(i))
    }

    /// A new request slot: an HTTP/1.1 connection, or a stream of the
    /// HTTP/2 (or HTTP/3) connection being filled (a new one every
    /// `streams` lanes).
    fn new_lane(&self) -> Lane {
        let st = &mut *self.st.borrow_mut();
        let full = st.h2_joined >= self.shared.streams;
        st.h2_joined = if full { 1 } else { st.h2_joined + 1 };
        match self.shared.protocol {
            Protocol::Http1 => Lane::H1(Conn::new()),
            Protocol::Http2 => {
                let conn = match &st.h2_conn {
                    Some(c) if !full => c.clone(),
                    _ => st.h2_conn.insert(H2Conn::new()).clone(),
                };
                Lane::H2(H2Lane::join(&conn))
            }
            Protocol::Http3 => {
                let conn = match &st.h3_conn {
                    Some(c) if !full => c.clone(),
                    _ => st.h3_conn.insert(H3Conn::new()).clone(),
                };
                Lane::H3(H3Lane::join(&conn))
            }
        }
    }

    /// HTTP/2 and HTTP/3: a new lane would join a connection that is open
    /// and has a free stream for it, so adding it opens no connection.
    pub fn next_lane_is_free(&self) -> bool {
        let st = self.st.borrow();
        let free = match self.shared.protocol {
            Protocol::Http1 => false,
            Protocol::Http2 => st.h2_conn.as_ref().is_some_and(|c| c.has_free_stream()),
            Protocol::Http3 => st.h3_conn.as_ref().is_some_and(|c| c.has_free_stream()),
        };
        free && st.h2_joined < self.shared.streams
    }

    /// Count a request intended at `t` as handed to a connection.
    pub fn issue(&self, t: Instant) -> Issued {
        let recorded = t >= self.plan.warmup_end;
        let mut st = self.st.borrow_mut();
        st.busy += 1;
        if let Some(tl) = &mut st.timeline {
            tl.issue(t);
        }
        if recorded {
            st.rec.counters.requests_sent += 1;
            st.in_flight += 1;
        }
        Issued {
            intended: t,
            recorded,
        }
    }

    fn record(&self, req: Issued, ex: &Exchange, timing: &Parsed, open_loop: bool) {
        let window_end = self.window_end();
        let ok = matches!(ex.outcome, Outcome::Response(s) if self.shared.ok.contains(s));
        let in_window = ex.end >= self.plan.warmup_end && ex.end < window_end;
        let mut guard = self.st.borrow_mut();
        let st = &mut *guard;
        if let Some(tl) = &mut st.timeline {
            let lag = open_loop.then(|| us(ex.write_start.saturating_duration_since(req.intended)));
            tl.done(
                req.intended,
                ex.end,
                ok,
                us(ex.end.saturating_duration_since(req.intended)),
                lag,
            );
        }
        count_connection_events(st, ex);
        if req.recorded {
            record_phases(&mut st.rec.histograms, ex);
        }
        st.busy -= 1;
        if st.busy == 0 {
            self.done_notify.notify_one();
        }
        if !req.recorded {
            if ok && in_window {
                st.rec.warmup_response_in_window();
                st.delta_ok += 1;
            }
            return;
        }
        st.in_flight -= 1;
        st.last_completion = st.last_completion.max(Some(ex.end));
        let c = &mut st.rec.counters;
        c.bytes_out += ex.bytes_out;
        c.bytes_in += ex.bytes_in;
        let latency = us(ex.end.saturating_duration_since(req.intended));
        match ex.outcome {
            Outcome::Response(status) => {
                let service = us(ex.end - ex.write_start);
                st.rec.response(status, ok, !in_window, latency, service);
                if ok {
                    st.rec.server_timing.record(timing, service);
                    st.delta_ok += u64::from(in_window);
                    record(&mut st.delta_latency, latency);
                } else {
                    st.delta_failed += 1;
                }
            }
            Outcome::Error(kind) => {
                st.rec.error(kind, latency);
                st.delta_failed += 1;
            }
        }
        if open_loop {
            let lag = ex.write_start.saturating_duration_since(req.intended);
            record(&mut st.rec.histograms.send_lag, us(lag));
        }
    }

    /// Hand the progress counted since the last call to the run's [`Progress`].
    pub(super) fn publish(&self) {
        let mut st = self.st.borrow_mut();
        if st.delta_ok + st.delta_failed > 0 {
            self.shared
                .progress
                .publish(st.delta_ok, st.delta_failed, &st.delta_latency);
            st.delta_ok = 0;
            st.delta_failed = 0;
            st.delta_latency.reset();
        }
    }

    /// Record how late the dispatcher found a recorded request due, µs.
    pub fn dispatch_lag(&self, lag: Duration) {
        record(
            &mut self.st.borrow_mut().rec.histograms.dispatch_lag,
            us(lag),
        );
    }

    /// Count a recorded request that waited for a free connection.
    pub fn pool_wait(&self) {
        self.st.borrow_mut().rec.counters.pool_waits += 1;
    }

    /// Count `n` recorded requests that fell due but were never sent.
    pub fn unsent(&self, n: u64) {
        self.st.borrow_mut().rec.counters.unsent += n;
    }

    /// Connection tasks running.
    pub fn live(&self) -> usize {
        self.st.borrow().live
    }

    /// An idle open-loop connection, if any.
    pub fn pop_idle(&self) -> Option<Rc<Slot>> {
        self.st.borrow_mut().idle.pop()
    }

    /// Mark an open-loop connection idle since `since` (its last
    /// exchange's end: no clock read per request) and wake the dispatcher.
    fn make_idle(&self, slot: &Rc<Slot>, since: Instant) {
        self.st.borrow_mut().idle.push(slot.clone(), since);
        self.idle_notify.notify_one();
    }

    /// Close the open-loop connections idle for [`Shared::pool_idle`] at
    /// `now`, longest idle first, while the pool holds more than its
    /// initial size (`plan.prewarm`): the rule of [`super::pool`]. Returns
    /// how many it closed; their tasks end at their next turn.
    pub fn close_idle(&self, now: Instant) -> usize {
        let mut guard = self.st.borrow_mut();
        let st = &mut *guard;
        let surplus = st.slots.len().saturating_sub(self.plan.prewarm.max(1));
        let expired = st.idle.expired(now, self.shared.pool_idle, surplus);
        if expired.is_empty() {
            return 0;
        }
        for slot in &expired {
            slot.close();
        }
        st.slots.retain(|s| !s.closed.get());
        st.rec.counters.pool_idle_closed += expired.len() as u64;
        expired.len()
    }

    /// A new connection task: count it live (and its slot, in open loop).
    pub(super) fn add_live(&self, slot: Option<&Rc<Slot>>) {
        let mut st = self.st.borrow_mut();
        st.live += 1;
        // HTTP/2 lanes fill their connections in turn: `streams` per one.
        let conns = st.live.div_ceil(self.shared.streams.max(1)) as u64;
        st.rec.counters.connections_peak = st.rec.counters.connections_peak.max(conns);
        if let Some(slot) = slot {
            st.slots.push(slot.clone());
        }
    }

    /// A connection opened before the step's start (or failed to).
    /// `opened`: Ok(true) when this opened a connection, Ok(false) when
    /// another HTTP/2 lane had opened it.
    fn prewarmed(&self, opened: Result<bool, ErrorKind>) {
        let mut st = self.st.borrow_mut();
        let (opened, failed) = (opened == Ok(true), opened.is_err());
        let c = &mut st.rec.counters;
        c.connections_opened += u64::from(opened);
        c.connect_failures += u64::from(failed);
        c.connections_errored += u64::from(failed);
        st.open_streams += u64::from(opened);
    }

    fn conn_closed(&self, was_open: bool) {
        let mut st = self.st.borrow_mut();
        st.rec.counters.connections_closed += u64::from(was_open);
        st.open_streams -= u64::from(was_open);
        st.live -= 1;
    }

    /// End the step at `now`: what is still in flight is `unfinished`, and
    /// the connections still open are closed (the tasks holding them are
    /// dropped with the thread's event loop, idle or connecting ones too)
    /// and counted closed. Nothing runs on this thread afterwards.
    pub(super) fn cut_off(&self, now: Instant) {
        let mut st = self.st.borrow_mut();
        if st.in_flight > 0 {
            st.last_completion = st.last_completion.max(Some(now));
        }
        st.rec.counters.unfinished += std::mem::take(&mut st.in_flight);
        st.rec.counters.connections_closed += std::mem::take(&mut st.open_streams);
    }

    /// Start the thread's CPU clock (at the end of warmup).
    pub(super) fn start_cpu_clock(&self) {
        self.st.borrow_mut().cpu_start = Some(thread_cpu_time());
    }

    /// Close every open-loop slot: idle connections end, busy ones end once
    /// their request is done.
    pub(super) fn close_slots(&self) {
        let mut st = self.st.borrow_mut();
        st.idle.clear();
        for slot in &st.slots {
            slot.close();
        }
    }

    /// Requests (recorded or not) handed to a connection and not yet done.
    pub(super) fn busy(&self) -> u64 {
        self.st.borrow().busy
    }

    /// Wait until the last busy request is done, or `timeout` at most.
    pub(super) async fn wait_done(&self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.done_notify.notified()).await;
    }

    /// What the thread recorded over the step, and its CPU time after warmup.
    pub(super) fn finish(&self) -> ThreadResult {
        let cpu_end = thread_cpu_time();
        let mut st = self.st.borrow_mut();
        ThreadResult {
            cpu_s: st
                .cpu_start
                .map_or(0.0, |s| cpu_end.saturating_sub(s).as_secs_f64()),
            recorder: std::mem::take(&mut st.rec),
            last_completion: st.last_completion,
            timeline: st.timeline.take(),
        }
    }
}

/// Connection events count over the whole step, warmup included.
fn count_connection_events(st: &mut State, ex: &Exchange) {
    let c = &mut st.rec.counters;
    c.connections_opened += u64::from(ex.opened);
    c.connections_closed += u64::from(ex.closed);
    c.connect_failures += u64::from(ex.connect_failed);
    // An HTTP/2 stream's error leaves its connection open: a connection
    // errored when the error closed it (or its connect failed).
    let errored = matches!(ex.outcome, Outcome::Error(_)) && (ex.closed || ex.connect_failed);
    c.connections_errored += u64::from(errored);
    st.open_streams += u64::from(ex.opened);
    st.open_streams -= u64::from(ex.closed);
    // HTTP/2 lanes past a server's stream limit move to more connections.
    c.connections_peak = c.connections_peak.max(st.open_streams);
}

/// Start an open-loop connection task: pre-opened (no first request) or
/// with its first request.
pub(crate) fn spawn_open_conn(ctx: &Rc<Ctx>, first: Option<Issued>) {
    let slot = Rc::new(Slot::new(first));
    ctx.add_live(Some(&slot));
    tokio::task::spawn_local(open_conn(ctx.clone(), slot, first.is_none()));
}

async fn open_conn(ctx: Rc<Ctx>, slot: Rc<Slot>, prewarm: bool) {
    let mut conn = ctx.new_lane();
    if prewarm {
        // Opened before the step starts; a failure here is retried (and
        // counted) by the first real request.
        let opened = conn.open(&ctx.shared.connector).await;
        ctx.prewarmed(opened);
        ctx.make_idle(&slot, Instant::now());
    }
    while let Some(req) = slot.take().await {
        let (h1, h2) = ctx.next_request();
        let ex = conn
            .exchange(&ctx.shared.connector, h1, h2, ctx.shared.read_timeout)
            .await;
        ctx.record(req, &ex, conn.server_timing(), true);
        ctx.make_idle(&slot, ex.end);
    }
    ctx.conn_closed(conn.close());
}

/// A closed-loop connection task: send the next request when the last
/// one ends, until the step's end or a stop.
pub(super) async fn closed_conn(ctx: Rc<Ctx>) {
    let mut conn = ctx.new_lane();
    tokio::time::sleep_until(ctx.plan.t0.into()).await;
    // The next request is intended when the last one ended (no think time).
    let mut last_end = None;
    loop {
        let t = last_end.take().unwrap_or_else(Instant::now);
        if t >= ctx.plan.end || ctx.stopped() {
            break;
        }
        let req = ctx.issue(t);
        let (h1, h2) = ctx.next_request();
        let ex = conn
            .exchange(&ctx.shared.connector, h1, h2, ctx.shared.read_timeout)
            .await;
        ctx.record(req, &ex, conn.server_timing(), false);
        let connect_failed = matches!(
            ex.outcome,
            Outcome::Error(
                ErrorKind::ConnectRefused
                    | ErrorKind::ConnectTimeout
                    | ErrorKind::Tls
                    | ErrorKind::Other
            )
        ) && ex.bytes_out == 0;
        last_end = (!connect_failed).then_some(ex.end);
        if connect_failed {
            tokio::time::sleep(CONNECT_BACKOFF).await;
        }
    }
    ctx.conn_closed(conn.close());
}
