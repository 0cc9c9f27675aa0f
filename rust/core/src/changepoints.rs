//! PELT ([`perflab_engine::changepoints`]) for `perflab.history.changepoints`.

use perflab_engine::changepoints;
use pyo3::prelude::*;

/// Optimal segmentation of a series into constant-mean segments (PELT with
/// the least-squares cost; Killick, Fearnhead & Eckley 2012).
///
/// Args:
///     values: the series (floats, finite), oldest first.
///     penalty: the cost of one more segment, in the units of values².
///     min_size: fewest points per segment.
///
/// Returns:
///     The segments' end positions (exclusive), the last one len(values).
#[pyfunction]
#[pyo3(signature = (values, penalty, min_size=3))]
fn pelt(py: Python<'_>, values: Vec<f64>, penalty: f64, min_size: usize) -> Vec<usize> {
    py.detach(|| changepoints::pelt(&values, penalty, min_size))
}

/// Add this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pelt, m)?)
}
