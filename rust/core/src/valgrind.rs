//! Valgrind client requests for the instruction-count mode (`perflab run
//! --count instructions`): the worker brackets exactly the measured calls with
//! them, so start-up, imports and setup are never counted.
//!
//! The requests come from the `crabgrind` crate (its C shim compiles
//! Valgrind's own `valgrind.h`/`callgrind.h` macros). Each is a short
//! sequence of no-op instructions that Valgrind's JIT recognises: on the real
//! CPU (not under Valgrind) every function here does nothing and
//! [`valgrind_running`] returns 0. Valgrind manual, "The Client Request
//! mechanism"; Callgrind manual, "Callgrind specific client requests".

use pyo3::prelude::*;

use crate::convert::bad;

/// RUNNING_ON_VALGRIND: 0 on the real CPU, 1 under Valgrind, n > 1 under n
/// nested Valgrinds.
#[pyfunction]
fn valgrind_running() -> usize {
    match crabgrind::run_mode() {
        crabgrind::RunMode::Native => 0,
        crabgrind::RunMode::Valgrind => 1,
        crabgrind::RunMode::ValgrindInValgrind(n) => n,
    }
}

/// CALLGRIND_START_INSTRUMENTATION: from here on Callgrind instruments the
/// code it runs (it flushes its translations, so this costs milliseconds
/// under Valgrind). A no-op outside Valgrind.
#[pyfunction]
fn callgrind_start_instrumentation() {
    crabgrind::callgrind::start_instrumentation();
}

/// CALLGRIND_STOP_INSTRUMENTATION: Callgrind stops instrumenting (and so
/// counting). A no-op outside Valgrind.
#[pyfunction]
fn callgrind_stop_instrumentation() {
    crabgrind::callgrind::stop_instrumentation();
}

/// CALLGRIND_ZERO_STATS: every cost counter back to zero. A no-op outside
/// Valgrind.
#[pyfunction]
fn callgrind_zero_stats() {
    crabgrind::callgrind::zero_stats();
}

/// CALLGRIND_TOGGLE_COLLECT: collection of events on or off (instrumentation
/// stays). A no-op outside Valgrind.
#[pyfunction]
fn callgrind_toggle_collect() {
    crabgrind::callgrind::toggle_collect();
}

/// CALLGRIND_DUMP_STATS(_AT): write the counters since the last zero or dump
/// to a new part file (its `desc: Trigger: Client Request: {reason}` line
/// names it) and zero them. A no-op outside Valgrind.
///
/// Args:
///     reason: up to 200 characters without NUL (None: no reason).
///
/// Raises:
///     ValueError: the reason is too long or holds a NUL character.
#[pyfunction]
#[pyo3(signature = (reason=None))]
fn callgrind_dump_stats(reason: Option<&str>) -> PyResult<()> {
    match reason {
        Some(text) if text.len() > 200 || text.contains('\0') => Err(bad(
            "a dump reason is at most 200 characters, without NUL".to_string(),
        )),
        other => {
            crabgrind::callgrind::dump_stats(other);
            Ok(())
        }
    }
}

/// Add this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(valgrind_running, m)?)?;
    m.add_function(wrap_pyfunction!(callgrind_start_instrumentation, m)?)?;
    m.add_function(wrap_pyfunction!(callgrind_stop_instrumentation, m)?)?;
    m.add_function(wrap_pyfunction!(callgrind_zero_stats, m)?)?;
    m.add_function(wrap_pyfunction!(callgrind_toggle_collect, m)?)?;
    m.add_function(wrap_pyfunction!(callgrind_dump_stats, m)?)
}
