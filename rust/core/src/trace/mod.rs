//! Bindings of `perflab.trace`: the hot path of every traced call.
//!
//! * `Traced` ([`call`]) wraps a function: a vectorcall reads
//!   the clock, calls it, reads the clock and records, all without a Python
//!   frame of its own.
//! * [`Span`] is the `with perflab.span(name):` context manager, stateless
//!   (one object per name, cached by [`span::span`]), so it can be reused,
//!   nested and shared between threads.
//! * The span being run is kept in a `contextvars.ContextVar` as a
//!   [`Frame`](frame::Frame), so nesting follows the call stack in threads and in
//!   asyncio tasks alike (each task has its own context): a child adds its
//!   duration to its parent's `child_ns`, and the parent records
//!   `duration − child_ns` as its self time.
//! * A sync `Traced` call does not touch the ContextVar (setting and
//!   resetting one costs ~170 ns): it pushes an entry (plain data, see
//!   [`stack`]) on a per-thread stack, with the ContextVar's
//!   value at the time as its *base*. Sync
//!   calls nest strictly on a thread's C stack (no task can switch in the
//!   middle of one), so the stack stays LIFO; the innermost span is its top
//!   when the current context's span is still that top's base, else the
//!   context's span ([`stack::innermost`]). So does a block entered by a `with`
//!   statement that nothing can suspend before it ends (in a plain
//!   function, or in a coroutine or generator when the block holds no
//!   `await` or `yield`: [`site`]); its entry also holds the
//!   caller's frame, which `__exit__` matches. A block that spans an
//!   `await` or a `yield`, one entered by other code than a `with`
//!   statement, a decorated coroutine or a request is set in the
//!   ContextVar, its parent being the innermost span, sync or not.
//!   (Greenlets that switch stacks inside a sync span can mis-attribute
//!   self time; durations stay right.)
//! * A [`Request`] (the Server-Timing middleware's) is a root frame with a
//!   [`Collector`](frame::Collector): every span under it also adds its duration, by name,
//!   to that request's sums.
//!
//! Recording itself is the engine's ([`perflab_engine::trace`]): lock-free
//! per-thread HdrHistograms merged on read. Nothing here raises into the
//! traced code: a failure of the recorder skips the recording.
//!
//! Modules, each using only those listed before it: [`frame`] (the frame
//! and the ContextVar), [`site`] (may a block use the stack?), [`stack`]
//! (the per-thread stack of sync spans), [`span`] (the block's context
//! manager), [`request`] (the Server-Timing request), [`block`] and
//! [`call`] (the C entry points of blocks and decorated calls); this file
//! holds the module's plain functions and registers them all.

mod block;
mod call;
mod frame;
mod request;
mod resume;
mod site;
mod span;
mod stack;

use std::sync::atomic::Ordering::*;

use perflab_engine::trace::{self, SpanReport};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::to_py;
use frame::ENABLED;
use request::Request;
use resume::Resume;
use span::{register, OffSpan, Span};
use stack::innermost;

/// Register a span name: `(id, overflowed)`; id 0 is the overflow name.
///
/// Raises:
///     TypeError: the name is not a str.
#[pyfunction]
fn trace_register(py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<(u32, bool)> {
    let text = name.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "a span name must be a str, not {}",
            name.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })?;
    let id = register(py, &text.to_string_lossy());
    Ok((id, id == 0))
}

/// Record one finished span from elsewhere (the OpenTelemetry bridge):
/// its duration and self time, ns; also added to the Server-Timing sums
/// of the request running in the current context, if any.
#[pyfunction]
fn trace_record(py: Python<'_>, id: u32, duration_ns: u64, self_ns: u64) {
    if !ENABLED.load(Relaxed) {
        return;
    }
    trace::record(id, duration_ns, self_ns.min(duration_ns));
    if let Some(frame) = innermost(py).1 {
        if let Some(c) = frame.get().collector() {
            c.get().add(id, duration_ns);
        }
    }
}

/// How many sync spans (calls and blocks) are open on this thread's stack,
/// the rest being in the ContextVar: what tests check the fast path with.
#[pyfunction]
fn trace_sync_depth() -> usize {
    stack::depth()
}

/// Turn recording on or off; returns the previous state.
#[pyfunction]
fn trace_enable(on: bool) -> bool {
    ENABLED.swap(on, Relaxed)
}

/// Whether recording is on.
#[pyfunction]
fn trace_enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Every span name with at least one span since the last reset: a list of
/// dicts {name, count, total_ns, self_total_ns, duration, self_time}, the
/// histograms as {count, min_ns, mean_ns, p50_ns, p90_ns, p99_ns, p999_ns,
/// max_ns, encoded_b64} (HdrHistogram V2-deflate, ns, 2 significant
/// digits). Merging runs with the GIL released.
#[pyfunction]
fn trace_snapshot(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let reports: Vec<SpanReport> =
        py.detach(|| trace::snapshot().iter().map(SpanReport::from).collect());
    to_py(py, &reports)
}

/// Start the next snapshots from zero (names stay registered).
#[pyfunction]
fn trace_reset(py: Python<'_>) {
    py.detach(trace::reset);
    stack::DROPPED.store(0, Relaxed);
}

/// `(max_depth, dropped)`: the most sync spans open at once on a thread,
/// and how many spans opened deeper were run unrecorded because of it
/// (since start or the last reset).
#[pyfunction]
fn trace_dropped() -> (usize, u64) {
    (stack::MAX_SYNC_DEPTH, stack::DROPPED.load(Relaxed))
}

/// Bytes of C stack left below the calling thread's current position (None
/// where the platform does not say): `perflab.trace`'s coroutine wrapper
/// checks it before adding a level to an await chain, which CPython 3.11
/// resumes recursively on the C stack (a deep enough chain overflows it).
#[pyfunction]
fn trace_stack_left() -> Option<usize> {
    stacker::remaining_stack()
}

/// `(max_names, refused)`: the cap on distinct names and how many new
/// names were refused because of it.
#[pyfunction]
fn trace_limits() -> (usize, u64) {
    let r = trace::registry();
    (r.max_names, r.refused())
}

/// Add this module's functions and classes.
pub fn register_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    call::register_module(m)?;
    m.add_class::<Span>()?;
    block::install(&m.py().get_type::<Span>())?;
    m.add_class::<OffSpan>()?;
    m.add_class::<Request>()?;
    m.add_class::<Resume>()?;
    block::add_span_function(m)?;
    m.add_function(wrap_pyfunction!(trace_register, m)?)?;
    m.add_function(wrap_pyfunction!(trace_record, m)?)?;
    m.add_function(wrap_pyfunction!(trace_enable, m)?)?;
    m.add_function(wrap_pyfunction!(trace_sync_depth, m)?)?;
    m.add_function(wrap_pyfunction!(trace_dropped, m)?)?;
    m.add_function(wrap_pyfunction!(trace_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(trace_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(trace_reset, m)?)?;
    m.add_function(wrap_pyfunction!(trace_limits, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stack_left, m)?)?;
    // Timing figures of a debug build mean nothing: benchmarks/trace.py checks this.
    m.add("trace_debug_build", cfg!(debug_assertions))
}
