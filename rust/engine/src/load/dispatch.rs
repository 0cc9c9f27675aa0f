//! The open-loop dispatcher of one engine thread.
//!
//! It walks the thread's [`Schedule`] and, at each intended time, hands the
//! request to an idle connection, opens a new one while the pool is below
//! its cap, or else *waits* for one to free up: the request is never
//! skipped and its latency keeps growing from the intended time
//! (coordinated-omission correction, as in wrk2). The backlog is just the
//! schedule cursor, so memory stays constant.
//!
//! Dispatching ends at the step's end (when every connection is busy), at
//! a stop, or when the dispatcher is still behind [`GRACE`] after the end;
//! whatever fell due in the recorded window and was not handed out is
//! counted `unsent`, in O(1).
//!
//! The pool follows the load down too: connections idle past a bound while
//! the pool is above its initial size are closed ([`super::pool`]).

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::pool::reap_every;
use super::schedule::{Arrival, Schedule};
use super::thread::{spawn_open_conn, Ctx, TICK};
use crate::sys::PreciseTimer;

/// Shortest dispatcher sleep in open loop.
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
/// How late after the step's end the dispatcher may still hand a free
/// connection a request that fell due before it (a thread preempted at the
/// very end should not turn its last requests into `unsent`); past it, the
/// rest is unsent, so a generator that fell behind cannot stretch the step.
/// Waiting for a busy connection ends at the step's end itself.
pub const GRACE: Duration = TICK;

/// The state of one thread's dispatcher during one step.
struct Dispatcher {
    ctx: Rc<Ctx>,
    sched: Schedule,
    timer: PreciseTimer,
    /// The step's length, ns: intended times at or past it are not sent.
    horizon_ns: u64,
    /// Dispatching to free connections ends here: [`GRACE`] after the
    /// step's end.
    give_up: Instant,
    last_grow: Instant,
    /// When the dispatcher last stopped waiting for a free connection: the
    /// requests that fell due meanwhile were held up by the server, not by
    /// the generator.
    wait_end: Instant,
    /// Wake-ups are planned at least BATCH apart, counted from the previous
    /// planned wake-up (not from when the thread got to run): at rates below
    /// 1/BATCH each request is then sent at its time, with no drift.
    next_wake: Instant,
}

/// Run the open loop of one thread until its schedule ends (or a stop).
///
/// # Errors
/// A message when the timerfd cannot be created or fails.
pub(crate) async fn open_loop(ctx: &Rc<Ctx>, arrival: Arrival) -> Result<(), String> {
    let plan = &ctx.plan;
    let rate = plan.rate.unwrap_or(1.0);
    let mut sched = match ctx.shared.shape {
        Some(shape) => Schedule::shaped(arrival, shape, plan.thread, plan.threads, ctx.shared.seed),
        None => Schedule::new(arrival, rate, plan.thread, plan.threads, ctx.shared.seed),
    };
    if let Some(lanes) = &ctx.shared.lanes {
        sched = sched.on_lanes(lanes, rate, plan.thread, plan.threads);
    }
    let mut d = Dispatcher {
        ctx: ctx.clone(),
        sched,
        timer: PreciseTimer::new().map_err(|e| format!("cannot create a timerfd: {e}"))?,
        horizon_ns: (plan.end - plan.t0).as_nanos() as u64,
        give_up: plan.end + GRACE,
        last_grow: plan.t0,
        wait_end: plan.t0,
        next_wake: plan.t0,
    };
    for _ in 0..plan.prewarm.min(plan.connections) {
        spawn_open_conn(ctx, None);
    }
    tokio::task::spawn_local(close_idle_conns(ctx.clone()));
    loop {
        let off = d.sched.next_offset_ns();
        if off >= d.horizon_ns {
            return Ok(());
        }
        let t = plan.t0 + Duration::from_nanos(off);
        let Some(due) = d.wait_until_due(t).await? else {
            d.count_unsent(t);
            return Ok(());
        };
        if t >= plan.warmup_end {
            ctx.dispatch_lag(due.saturating_duration_since(t.max(d.wait_end)));
        }
        if !d.hand_off(t).await {
            d.count_unsent(t);
            return Ok(());
        }
    }
}

/// Close the connections idle past the pool's bound, looking every
/// [`reap_every`] until the step's end (the drain closes the rest). After
/// closing some, hand the freed memory back to the system.
async fn close_idle_conns(ctx: Rc<Ctx>) {
    let mut tick = tokio::time::interval(reap_every(ctx.shared.pool_idle));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut trim = false;
    loop {
        let now = tick.tick().await.into_std();
        if now >= ctx.plan.end || ctx.stopped() {
            return;
        }
        // Trim one tick after closing, once the closed connections' tasks
        // have ended and dropped their buffers.
        if std::mem::take(&mut trim) {
            crate::sys::release_free_memory();
        }
        trim = ctx.close_idle(now) > 0;
    }
}

impl Dispatcher {
    /// Sleep until `t` is due. Returns the time it was found due, or None
    /// when the dispatcher must stop (a stop, or past [`GRACE`]).
    async fn wait_until_due(&mut self, t: Instant) -> Result<Option<Instant>, String> {
        loop {
            let now = Instant::now();
            if self.ctx.stopped() || now >= self.give_up {
                return Ok(None);
            }
            if t <= now {
                return Ok(Some(now));
            }
            // At high rates one wake-up sends every request due in the last
            // BATCH (fewer wake-ups and syscalls per request); the cost is
            // at most BATCH of send lag, which is measured and included in
            // latency. No sleep is longer than TICK, so a stop is seen.
            let wake = t.max(self.next_wake).min(now + TICK);
            self.next_wake = wake + BATCH;
            self.timer
                .sleep_until(wake)
                .await
                .map_err(|e| format!("timerfd failed: {e}"))?;
        }
    }

    /// Hand the request intended at `t` to a connection: an idle one, a new
    /// one while the pool may grow, or else the first to free up. Returns
    /// false when the dispatcher must stop first (the request is unsent).
    async fn hand_off(&mut self, t: Instant) -> bool {
        let ctx = &self.ctx;
        let plan = &ctx.plan;
        let mut waited = false;
        loop {
            if let Some(slot) = ctx.pop_idle() {
                slot.give(ctx.issue(t));
                return true;
            }
            // Grow the pool at once up to its initial size, then by at
            // most one connection per GROW_EVERY: a burst of due requests
            // (after a stall or a scheduling hiccup of this thread) should
            // not open a connection per request. A new HTTP/2 (or HTTP/3)
            // stream on an open connection opens none: it is added at once.
            let now = Instant::now();
            let live = ctx.live();
            let may_grow = live < plan.prewarm.max(1)
                || now >= self.last_grow + GROW_EVERY
                || ctx.next_lane_is_free();
            if live < plan.connections && may_grow {
                spawn_open_conn(ctx, Some(ctx.issue(t)));
                self.last_grow = now;
                return true;
            }
            // Every connection is busy: this request waits, its latency
            // growing from its intended time; it is never skipped. A wait
            // that reaches the step's end leaves the rest unsent.
            if ctx.stopped() || now >= plan.end {
                return false;
            }
            if !waited && t >= plan.warmup_end {
                waited = true;
                ctx.pool_wait();
            }
            let wait = if live < plan.connections {
                GROW_EVERY
            } else {
                TICK
            };
            let wait = wait.min(plan.end - now);
            let _ = tokio::time::timeout(wait, ctx.idle_notify.notified()).await;
            self.wait_end = Instant::now();
        }
    }

    /// Count as unsent `first` (the request the dispatcher stopped at) and
    /// every later intended time, among those inside the recorded window.
    fn count_unsent(&mut self, first: Instant) {
        let plan = &self.ctx.plan;
        let window_end = self.ctx.window_end();
        let ns = |t: Instant| t.saturating_duration_since(plan.t0).as_nanos() as u64;
        let (from, limit) = (ns(plan.warmup_end), ns(window_end));
        let first_ns = ns(first);
        let n =
            u64::from(first_ns >= from && first_ns < limit) + self.sched.skip_until(from, limit);
        self.ctx.unsent(n);
    }
}
