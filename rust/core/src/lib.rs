//! The `perflab._core` extension module: PyO3 bindings of perflab-engine
//! plus the one runtime that has to live on the Python side of the seam.
//!
//! * Bindings: `changepoints`, `clock`, `duration`, `hdr`, `http`,
//!   `serve` and `valgrind` (Valgrind client requests) convert arguments,
//!   release the GIL where work is long, and map engine errors to Python
//!   exceptions; their logic lives in the engine crate. Dicts cross the seam through one converter (`convert`:
//!   serde and pythonize), so their keys are the engine's field names.
//! * `trace`: the hot path of `perflab.trace` (spans, decorated calls, the
//!   per-thread stack and the ContextVar frames). It handles Python objects
//!   on every call, so it is written against the C API here; recording
//!   itself (per-thread HdrHistograms) is the engine's `trace` module.
//! * `alloc_count`: a counting hook in front of Python's allocators (PEP 445),
//!   for the allocations a call makes in all; written against the C API here
//!   for the same reason.
//!
//! This file holds only the module table.

mod alloc_count;
mod changepoints;
mod clock;
mod convert;
mod counters;
mod duration;
mod hdr;
mod http;
mod serve;
mod trace;
mod valgrind;

use pyo3::prelude::*;

/// The module table: each binding module adds its functions and classes.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    alloc_count::register(m)?; // counting Python's allocations (run's allocated/op)
    changepoints::register(m)?; // PELT over a benchmark's history
    clock::register(m)?; // clock probes, the per-sample bracket, doctor
    counters::register(m)?; // per-sample perf and scheduler counters
    duration::register(m)?; // the one duration grammar
    hdr::register(m)?; // HdrHistograms read back from results files
    http::register(m)?; // the load engine (perflab http)
    serve::register(m)?; // the target (perflab serve)
    trace::register_module(m)?; // perflab.trace: spans and their recorder
    valgrind::register(m)?; // client requests of the instruction-count mode
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
