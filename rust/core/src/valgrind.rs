//! Valgrind client requests for the instruction-count mode (`perflab run
//! --count instructions`): the worker brackets exactly the measured calls with
//! them, so start-up, imports and setup are never counted.
//!
//! The requests are Valgrind's own `valgrind.h`/`callgrind.h` macros,
//! vendored in `csrc/` (Valgrind 3.19.0, BSD-style licence) and wrapped in
//! plain C functions by `csrc/shim.c`, which `build.rs` compiles: building
//! perflab never needs Valgrind installed. Each is a short
//! sequence of no-op instructions that Valgrind's JIT recognises: on the real
//! CPU (not under Valgrind) every function here does nothing and
//! [`valgrind_running`] returns 0. Valgrind manual, "The Client Request
//! mechanism"; Callgrind manual, "Callgrind specific client requests".

use pyo3::prelude::*;

use std::ffi::CString;
use std::os::raw::{c_char, c_uint};

use crate::convert::bad;

// csrc/shim.c: each wraps one client-request macro; none has preconditions.
extern "C" {
    fn perflab_valgrind_running() -> c_uint;
    fn perflab_callgrind_start_instrumentation();
    fn perflab_callgrind_stop_instrumentation();
    fn perflab_callgrind_zero_stats();
    fn perflab_callgrind_toggle_collect();
    fn perflab_callgrind_dump_stats(reason: *const c_char);
}

/// RUNNING_ON_VALGRIND: 0 on the real CPU, 1 under Valgrind, n > 1 under n
/// nested Valgrinds.
#[pyfunction]
fn valgrind_running() -> usize {
    // SAFETY: a client request with no arguments and no memory access.
    unsafe { perflab_valgrind_running() as usize }
}

/// CALLGRIND_START_INSTRUMENTATION: from here on Callgrind instruments the
/// code it runs (it flushes its translations, so this costs milliseconds
/// under Valgrind). A no-op outside Valgrind.
#[pyfunction]
fn callgrind_start_instrumentation() {
    // SAFETY: a client request with no arguments and no memory access.
    unsafe { perflab_callgrind_start_instrumentation() }
}

/// CALLGRIND_STOP_INSTRUMENTATION: Callgrind stops instrumenting (and so
/// counting). A no-op outside Valgrind.
#[pyfunction]
fn callgrind_stop_instrumentation() {
    // SAFETY: a client request with no arguments and no memory access.
    unsafe { perflab_callgrind_stop_instrumentation() }
}

/// CALLGRIND_ZERO_STATS: every cost counter back to zero. A no-op outside
/// Valgrind.
#[pyfunction]
fn callgrind_zero_stats() {
    // SAFETY: a client request with no arguments and no memory access.
    unsafe { perflab_callgrind_zero_stats() }
}

/// CALLGRIND_TOGGLE_COLLECT: collection of events on or off (instrumentation
/// stays). A no-op outside Valgrind.
#[pyfunction]
fn callgrind_toggle_collect() {
    // SAFETY: a client request with no arguments and no memory access.
    unsafe { perflab_callgrind_toggle_collect() }
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
        Some(text) => {
            let reason =
                CString::new(text).map_err(|_| bad("a dump reason holds NUL".to_string()))?;
            // SAFETY: `reason` is a NUL-terminated string that outlives the call;
            // Valgrind only reads it.
            unsafe { perflab_callgrind_dump_stats(reason.as_ptr()) };
            Ok(())
        }
        None => {
            // SAFETY: NULL asks for a dump without a reason (shim.c).
            unsafe { perflab_callgrind_dump_stats(std::ptr::null()) };
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
