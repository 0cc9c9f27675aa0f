//! Bindings only: exposes perflab-engine to Python as `perflab._core`.
//! Every function converts arguments, releases the GIL where work is long,
//! and maps engine errors to Python exceptions; logic lives in the engine
//! crate. Dicts cross the seam through one converter ([`convert`]: serde and
//! pythonize), so their keys are the engine's field names.

mod changepoints;
mod clock;
mod convert;
mod duration;
mod hdr;
mod http;
mod serve;
mod trace;
mod trace_block;
mod trace_call;
mod trace_request;
mod trace_site;
mod trace_stack;

use pyo3::prelude::*;

/// The module table: each binding module adds its functions and classes.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    changepoints::register(m)?; // PELT over a benchmark's history
    clock::register(m)?; // clock probes, the per-sample bracket, doctor
    duration::register(m)?; // the one duration grammar
    hdr::register(m)?; // HdrHistograms read back from results files
    http::register(m)?; // the load engine (perflab http)
    serve::register(m)?; // the target (perflab serve)
    trace::register_module(m)?; // perflab.trace: spans and their recorder
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
