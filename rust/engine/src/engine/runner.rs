//! One engine thread running its share of one step on a current-thread
//! tokio runtime.
//!
//! Open loop: a dispatcher walks the thread's [`Schedule`] and, at each
//! intended time, hands the request to an idle connection, opens a new one
//! while the pool is below its cap, or else *waits* for one to free up: the
//! request is never skipped and its latency keeps growing from the intended
//! time (coordinated-omission correction, as in wrk2). The backlog is just
//! the schedule cursor, so memory stays constant.
//!
//! Closed loop: each connection sends its next request when the previous
//! response ends; latency is then the service time (plus any connect).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::sync::Notify;

use super::config::LoadModel;
use super::conn::{Conn, Connector, Exchange, Outcome};
use super::progress::Progress;
use super::recorder::{new_histogram, record, ErrorKind, OkStatus, Recorder};
use super::schedule::{Arrival, Schedule};
use super::sys::{thread_cpu_time, PreciseTimer};

/// Everything the engine threads of a run share (read-only).
pub(crate) struct Shared {
    pub connector: Connector,
    /// Serialized requests and whether each is a HEAD.
    pub requests: Vec<(Vec<u8>, bool)>,
    pub ok: OkStatus,
    pub read_timeout: Duration,
    pub model: LoadModel,
    pub seed: u64,
    pub stop: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
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
    /// When this thread saw the stop flag, if it did.
    pub stopped_at: Option<Instant>,
}

const TICK: Duration = Duration::from_millis(100);
/// Shortest dispatcher sleep in open loop (see `open_loop`).
///
/// Measured at 20k req/s against nginx on a 2-vCPU VM (release build, CPU
/// of the engine thread per request): 250 µs → ~11 µs, 500 µs → ~9.5 µs,
/// 1 ms → ~7.6 µs, 2 ms → ~7.4 µs. Each wake-up of a sleeping thread costs a
/// context switch (and on a VM an exit), so fewer, fuller wake-ups are
/// cheaper; but the batch adds up to its length to the send lag, whose p99
/// should stay under 1 ms. 500 µs keeps half of that budget for the rest.
const BATCH: Duration = Duration::from_micros(500);
/// Once the pool has its initial size, open at most one more connection
/// per this interval while all are busy.
const GROW_EVERY: Duration = Duration::from_millis(1);
/// Closed-loop pause after a failed connect, so a dead target is not
/// hammered in a tight loop.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// Run one thread's share of a step to completion (or stop).
///
/// # Errors
/// A message when the runtime or timer cannot be created.
pub(crate) fn run_thread(shared: Arc<Shared>, plan: ThreadPlan) -> Result<ThreadResult, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start an engine event loop: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, drive(shared, plan))
}

struct Slot {
    work: Cell<Option<Instant>>,
    closed: Cell<bool>,
    notify: Notify,
}

impl Slot {
    fn give(&self, intended: Instant) {
        self.work.set(Some(intended));
        self.notify.notify_one();
    }

    fn close(&self) {
        self.closed.set(true);
        self.notify.notify_one();
    }

    async fn take(&self) -> Option<Instant> {
        loop {
            if let Some(t) = self.work.take() {
                return Some(t);
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
    idle: Vec<Rc<Slot>>,
    live: usize,
    in_flight: u64,
    next_request: usize,
    closing: bool,
    cpu_start: Option<Duration>,
    stopped_at: Option<Instant>,
}

struct Ctx {
    shared: Arc<Shared>,
    plan: ThreadPlan,
    st: RefCell<State>,
    idle_notify: Notify,
    done_notify: Notify,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

impl Ctx {
    fn stopped(&self) -> bool {
        let s = self.shared.stop.load(Ordering::Relaxed);
        if s {
            let mut st = self.st.borrow_mut();
            st.stopped_at.get_or_insert_with(Instant::now);
        }
        s
    }

    fn next_request(&self) -> (&[u8], bool) {
        let mut st = self.st.borrow_mut();
        let i = st.next_request;
        st.next_request = (i + 1) % self.shared.requests.len();
        let (bytes, head) = &self.shared.requests[i];
        (bytes, *head)
    }

    /// Count a request issued at intended time `t`; returns whether it is
    /// recorded (after warmup).
    fn issue(&self, t: Instant) -> bool {
        let recorded = t >= self.plan.warmup_end;
        if recorded {
            let mut st = self.st.borrow_mut();
            st.rec.counters.requests_sent += 1;
            st.in_flight += 1;
        }
        recorded
    }

    fn record(&self, intended: Instant, recorded: bool, ex: &Exchange, open_loop: bool) {
        let mut guard = self.st.borrow_mut();
        let st = &mut *guard;
        let c = &mut st.rec.counters;
        // Connection events count over the whole step, warmup included.
        c.connections_opened += ex.opened as u64;
        c.connections_closed += ex.closed as u64;
        c.connect_failures += ex.connect_failed as u64;
        if matches!(ex.outcome, Outcome::Error(_)) {
            c.connections_errored += 1;
        }
        if !recorded {
            return;
        }
        st.in_flight -= 1;
        let c = &mut st.rec.counters;
        c.bytes_out += ex.bytes_out;
        c.bytes_in += ex.bytes_in;
        let latency = us(ex.end.saturating_duration_since(intended));
        match ex.outcome {
            Outcome::Response(status) => {
                let ok = self.shared.ok.contains(status);
                st.rec
                    .response(status, ok, latency, us(ex.end - ex.write_start));
                if ok {
                    st.delta_ok += 1;
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
            record(
                &mut st.rec.send_lag,
                us(ex.write_start.saturating_duration_since(intended)),
            );
        }
    }

    fn publish(&self) {
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

    fn add_live(&self) {
        let mut st = self.st.borrow_mut();
        st.live += 1;
        st.rec.counters.connections_peak = st.rec.counters.connections_peak.max(st.live as u64);
    }

    fn conn_closed(&self, was_open: bool) {
        let mut st = self.st.borrow_mut();
        st.rec.counters.connections_closed += was_open as u64;
        st.live -= 1;
        if st.live == 0 {
            self.done_notify.notify_one();
        }
    }
}

async fn drive(shared: Arc<Shared>, plan: ThreadPlan) -> Result<ThreadResult, String> {
    let ctx = Rc::new(Ctx {
        st: RefCell::new(State {
            rec: Recorder::default(),
            delta_ok: 0,
            delta_failed: 0,
            delta_latency: new_histogram(),
            idle: Vec::new(),
            live: 0,
            in_flight: 0,
            next_request: plan.thread % shared.requests.len(),
            closing: false,
            cpu_start: None,
            stopped_at: None,
        }),
        shared,
        plan,
        idle_notify: Notify::new(),
        done_notify: Notify::new(),
    });
    spawn_helpers(&ctx);
    match ctx.shared.model {
        LoadModel::Open(arrival) => open_loop(&ctx, arrival).await?,
        LoadModel::Closed => {
            for _ in 0..ctx.plan.connections {
                ctx.add_live();
                tokio::task::spawn_local(closed_conn(ctx.clone()));
            }
        }
    }
    drain(&ctx).await;
    ctx.publish();
    let cpu_end = thread_cpu_time();
    let mut st = ctx.st.borrow_mut();
    let cpu_s = st
        .cpu_start
        .map_or(0.0, |s| cpu_end.saturating_sub(s).as_secs_f64());
    Ok(ThreadResult {
        recorder: std::mem::take(&mut st.rec),
        cpu_s,
        stopped_at: st.stopped_at,
    })
}

/// The progress publisher and the CPU-time sampler at the end of warmup.
fn spawn_helpers(ctx: &Rc<Ctx>) {
    let c = ctx.clone();
    tokio::task::spawn_local(async move {
        let mut tick = tokio::time::interval(TICK);
        loop {
            tick.tick().await;
            c.publish();
        }
    });
    let c = ctx.clone();
    tokio::task::spawn_local(async move {
        tokio::time::sleep_until(c.plan.warmup_end.into()).await;
        c.st.borrow_mut().cpu_start = Some(thread_cpu_time());
    });
}

async fn open_loop(ctx: &Rc<Ctx>, arrival: Arrival) -> Result<(), String> {
    let plan = &ctx.plan;
    let rate = plan.rate.unwrap_or(1.0);
    let mut sched = Schedule::new(arrival, rate, plan.thread, plan.threads, ctx.shared.seed);
    let mut timer = PreciseTimer::new().map_err(|e| format!("cannot create a timerfd: {e}"))?;
    for _ in 0..plan.prewarm.min(plan.connections) {
        spawn_open_conn(ctx, None);
    }
    let horizon = (plan.end - plan.t0).as_nanos() as u64;
    let mut last_grow = plan.t0;
    // When the dispatcher last stopped waiting for a free connection: the
    // requests that fell due meanwhile were held up by the server, not by
    // the generator.
    let mut wait_end = plan.t0;
    // Wake-ups are planned at least BATCH apart, counted from the previous
    // planned wake-up (not from when the thread got to run): at rates below
    // 1/BATCH each request is then sent at its time, with no drift.
    let mut next_wake = plan.t0;
    'requests: loop {
        let off = sched.next_offset_ns();
        if off >= horizon {
            break;
        }
        let t = plan.t0 + Duration::from_nanos(off);
        let due = loop {
            let now = Instant::now();
            if ctx.stopped() {
                count_unsent(ctx, t, &mut sched, now.min(plan.end));
                break 'requests;
            }
            if t <= now {
                break now;
            }
            // At high rates one wake-up sends every request due in the last
            // BATCH (fewer wake-ups and syscalls per request); the cost is
            // at most BATCH of send lag, which is measured and included in
            // latency.
            let wake = t.max(next_wake).min(now + TICK);
            next_wake = wake + BATCH;
            timer
                .sleep_until(wake)
                .await
                .map_err(|e| format!("timerfd failed: {e}"))?;
        };
        if t >= plan.warmup_end {
            let lag = due.saturating_duration_since(t.max(wait_end));
            record(&mut ctx.st.borrow_mut().rec.dispatch_lag, us(lag));
        }
        let mut waited = false;
        loop {
            let slot = ctx.st.borrow_mut().idle.pop();
            if let Some(slot) = slot {
                slot.give(t);
                break;
            }
            // Grow the pool at once up to its initial size, then by at
            // most one connection per GROW_EVERY: a burst of due requests
            // (after a stall or a scheduling hiccup of this thread) should
            // not open a connection per request.
            let now = Instant::now();
            let live = ctx.st.borrow().live;
            let may_grow = live < plan.prewarm.max(1) || now >= last_grow + GROW_EVERY;
            if live < plan.connections && may_grow {
                spawn_open_conn(ctx, Some(t));
                last_grow = now;
                break;
            }
            // Every connection is busy: this request waits, its latency
            // growing from its intended time; it is never skipped.
            if ctx.stopped() || now >= plan.end {
                count_unsent(ctx, t, &mut sched, now.min(plan.end));
                break 'requests;
            }
            if !waited && t >= plan.warmup_end {
                waited = true;
                ctx.st.borrow_mut().rec.counters.pool_waits += 1;
            }
            let wait = if live < plan.connections {
                GROW_EVERY
            } else {
                TICK
            };
            let _ =
                tokio::time::timeout(wait.min(plan.end - now), ctx.idle_notify.notified()).await;
            wait_end = Instant::now();
        }
    }
    Ok(())
}

/// Count the requests due before `limit` (from `first` on) that were never
/// sent, as `unsent`.
fn count_unsent(ctx: &Ctx, first: Instant, sched: &mut Schedule, limit: Instant) {
    let mut n = 0;
    let mut t = first;
    while t < limit {
        n += (t >= ctx.plan.warmup_end) as u64;
        t = ctx.plan.t0 + Duration::from_nanos(sched.next_offset_ns());
    }
    ctx.st.borrow_mut().rec.counters.unsent += n;
}

fn spawn_open_conn(ctx: &Rc<Ctx>, first: Option<Instant>) {
    let slot = Rc::new(Slot {
        work: Cell::new(first),
        closed: Cell::new(false),
        notify: Notify::new(),
    });
    ctx.add_live();
    tokio::task::spawn_local(open_conn(ctx.clone(), slot, first.is_none()));
}

async fn open_conn(ctx: Rc<Ctx>, slot: Rc<Slot>, prewarm: bool) {
    let mut conn = Conn::new();
    if prewarm {
        // Opened before the step starts; a failure here is retried (and
        // counted) by the first real request.
        let opened = conn.open(&ctx.shared.connector).await.is_ok();
        let mut st = ctx.st.borrow_mut();
        st.rec.counters.connections_opened += opened as u64;
        st.rec.counters.connect_failures += !opened as u64;
        st.rec.counters.connections_errored += !opened as u64;
        st.idle.push(slot.clone());
        drop(st);
        ctx.idle_notify.notify_one();
    }
    while let Some(t) = slot.take().await {
        let (req, head) = ctx.next_request();
        let recorded = ctx.issue(t);
        let ex = conn
            .exchange(&ctx.shared.connector, req, head, ctx.shared.read_timeout)
            .await;
        ctx.record(t, recorded, &ex, true);
        if ctx.st.borrow().closing {
            break;
        }
        ctx.st.borrow_mut().idle.push(slot.clone());
        ctx.idle_notify.notify_one();
    }
    ctx.conn_closed(conn.close());
}

async fn closed_conn(ctx: Rc<Ctx>) {
    let mut conn = Conn::new();
    tokio::time::sleep_until(ctx.plan.t0.into()).await;
    loop {
        let t = Instant::now();
        if t >= ctx.plan.end || ctx.stopped() {
            break;
        }
        let (req, head) = ctx.next_request();
        let recorded = ctx.issue(t);
        let ex = conn
            .exchange(&ctx.shared.connector, req, head, ctx.shared.read_timeout)
            .await;
        ctx.record(t, recorded, &ex, false);
        let connect_failed = matches!(
            ex.outcome,
            Outcome::Error(
                ErrorKind::ConnectRefused
                    | ErrorKind::ConnectTimeout
                    | ErrorKind::Tls
                    | ErrorKind::Other
            )
        ) && ex.bytes_out == 0;
        if connect_failed {
            tokio::time::sleep(CONNECT_BACKOFF).await;
        }
    }
    ctx.conn_closed(conn.close());
}

/// Let in-flight requests finish (each is bounded by its timeouts); on
/// stop, cut them off at once and count them as `unfinished`.
async fn drain(ctx: &Rc<Ctx>) {
    {
        let mut st = ctx.st.borrow_mut();
        st.closing = true;
        for slot in st.idle.drain(..) {
            slot.close();
        }
    }
    let limit =
        ctx.shared.connector.connect_timeout + ctx.shared.read_timeout + Duration::from_secs(1);
    let deadline = Instant::now().max(ctx.plan.end) + limit;
    loop {
        if ctx.st.borrow().live == 0 {
            return;
        }
        let now = Instant::now();
        if ctx.stopped() || now >= deadline {
            let mut st = ctx.st.borrow_mut();
            st.rec.counters.unfinished += st.in_flight;
            return;
        }
        let _ = tokio::time::timeout(TICK.min(deadline - now), ctx.done_notify.notified()).await;
    }
}
