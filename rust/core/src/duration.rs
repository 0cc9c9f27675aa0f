//! The one duration grammar ([`perflab_engine::duration`]) for Python:
//! every duration option of every command is read here.

use perflab_engine::duration;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::bad;

/// Parse a duration into seconds: a bare number is seconds; units ns, us
/// (µs), ms, s, m (min), h, case-insensitive; compounds from the largest
/// unit down ("1m30s", "1h 5m"). The sign is kept, so that each option
/// rejects a negative value by its meaning.
///
/// Args:
///     text: the user's text, e.g. "1.5", "250us", "1m30s".
///     option: the option's name, to start the error message ("--budget").
///
/// Returns:
///     Seconds (float), at most a year either way.
///
/// Raises:
///     ValueError: "{option} {text!r} is not a duration; write e.g. 500ms,
///         5s or 2m", or "... is longer than any run can last (a year at
///         most); ...".
#[pyfunction]
#[pyo3(signature = (text, option="duration"))]
fn parse_duration_s(text: &Bound<'_, PyString>, option: &str) -> PyResult<f64> {
    // Lossy: an argument that is not UTF-8 (surrogate-escaped) is simply not a duration.
    duration::parse_seconds(&text.to_string_lossy()).map_err(|e| {
        let quoted = text.repr().map_or_else(|_| "?".into(), |r| r.to_string());
        bad(format!("{option} {quoted} {}", e.reason()))
    })
}

/// Add this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_duration_s, m)?)
}
