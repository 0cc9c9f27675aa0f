//! Bindings only: exposes perflab-engine to Python as `perflab._core`.
//! Every function here converts arguments, releases the GIL where work is
//! long, and maps engine errors to Python exceptions; logic lives in the
//! engine crate.

use perflab_engine::clock::{self, Clock};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn parse_clock(name: &str) -> PyResult<Clock> {
    Clock::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Clock::ALL.iter().map(|c| c.name()).collect();
        PyValueError::new_err(format!("unknown clock {name:?}; known: {}", known.join(", ")))
    })
}

/// Names of the clocks the native probe knows, in report order.
#[pyfunction]
fn clock_names() -> Vec<&'static str> {
    Clock::ALL.iter().map(|c| c.name()).collect()
}

/// Mean native read cost of `clock` in ns over `reads` tight-loop reads, or
/// None when the clock is unavailable. Raises ValueError for an unknown name.
#[pyfunction]
#[pyo3(signature = (clock, reads=200_000))]
fn clock_read_cost_ns(py: Python<'_>, clock: &str, reads: u64) -> PyResult<Option<f64>> {
    let c = parse_clock(clock)?;
    Ok(py.detach(|| clock::read_cost_ns(c, reads)))
}

/// (smallest non-zero step, backward steps) of `clock` over `reads` reads, or
/// None when unavailable. Units: ns (ticks for "tsc"). Raises ValueError for
/// an unknown name.
#[pyfunction]
#[pyo3(signature = (clock, reads=200_000))]
fn clock_resolution(py: Python<'_>, clock: &str, reads: u64) -> PyResult<Option<(u64, u64)>> {
    let c = parse_clock(clock)?;
    Ok(py.detach(|| clock::observed_resolution(c, reads)))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(clock_names, m)?)?;
    m.add_function(wrap_pyfunction!(clock_read_cost_ns, m)?)?;
    m.add_function(wrap_pyfunction!(clock_resolution, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
