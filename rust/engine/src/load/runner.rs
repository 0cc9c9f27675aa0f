//! One engine thread running its share of one step on a current-thread
//! tokio runtime: the step's flow (start the open-loop dispatcher or the
//! closed-loop connections, publish progress, drain at the end). The
//! per-thread state, its accounting and the connection tasks are in
//! [`super::thread`]; the open-loop dispatcher is in [`super::dispatch`].
//!
//! Closed loop: each connection sends its next request when the previous
//! response ends; latency is then the service time (plus any connect).
//!
//! Accounting (see [`super::recorder::Counters`]): a response counts toward
//! the achieved rate only when it completed inside the recorded window,
//! which ends at the step's end or at the first moment an engine thread saw
//! the stop flag. Recorded requests answered later are `drained`; those
//! still unanswered `--timeout` after the step's end (or at a stop) are cut
//! off as `unfinished`, and their connections are closed and counted, so a
//! step always ends within its duration plus `--timeout`.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use super::config::LoadModel;
use super::dispatch;
use super::thread::{closed_conn, Ctx, Shared, ThreadPlan, ThreadResult, TICK};

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

async fn drive(shared: Arc<Shared>, plan: ThreadPlan) -> Result<ThreadResult, String> {
    let ctx = Rc::new(Ctx::new(shared, plan));
    spawn_helpers(&ctx);
    match ctx.shared.model {
        LoadModel::Open(arrival) => dispatch::open_loop(&ctx, arrival).await?,
        LoadModel::Closed => {
            for _ in 0..ctx.plan.connections {
                ctx.add_live(None);
                tokio::task::spawn_local(closed_conn(ctx.clone()));
            }
        }
    }
    drain(&ctx).await;
    ctx.publish();
    Ok(ctx.finish())
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
        c.start_cpu_clock();
    });
}

/// Wait for the step's end (closed-loop connections stop sending there),
/// then let the requests in flight finish until `--timeout` after it; at
/// that deadline, or on a stop, cut them off (see [`Ctx::cut_off`]).
/// Connections without a request (idle, or still connecting) never hold
/// the step up.
async fn drain(ctx: &Rc<Ctx>) {
    ctx.close_slots();
    let end = ctx.plan.end;
    let deadline = end + ctx.shared.read_timeout;
    loop {
        let now = Instant::now();
        let done = now >= end && ctx.busy() == 0;
        if done || ctx.stopped() || now >= deadline {
            ctx.cut_off(now);
            return;
        }
        let next = if now < end { end } else { deadline };
        ctx.wait_done(TICK.min(next - now)).await;
    }
}
