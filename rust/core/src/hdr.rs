//! HdrHistograms read back from results files, decoded by the engine's one
//! bounded decoder ([`perflab_engine::hdr::decode`]), and merged exactly
//! ([`perflab_engine::hdr::merge`]: the histograms of distributed agents).

use perflab_engine::hdr;
use pyo3::prelude::*;

use crate::convert::{bad, to_py};

/// Decode a base64 HdrHistogram (V2 or V2-deflate encoding, e.g.
/// `histograms.latency.encoded_b64` of `http_run`).
///
/// Args:
///     encoded_b64: the encoded histogram.
///     quantiles: optional list of quantiles in [0, 1].
///
/// Returns:
///     dict {count, min_us, p50_us, p90_us, p99_us, p999_us, max_us,
///     mean_us, values: [v], counts: [n], quantiles: {q: value}} (values in
///     the histogram's unit, microseconds for perflab's; `values` is the
///     highest equivalent value of each non-empty bucket, ascending, and
///     `counts` its count; every quantile of an empty histogram is 0).
///
/// Raises:
///     ValueError: not base64, not an HdrHistogram, beyond the decoder's
///         bounds (sizes, range, digits), or a quantile outside [0, 1].
#[pyfunction]
#[pyo3(signature = (encoded_b64, quantiles=None))]
fn hdr_decode<'py>(
    py: Python<'py>,
    encoded_b64: &str,
    quantiles: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyAny>> {
    let h = hdr::decode(encoded_b64).map_err(bad)?;
    let detail = hdr::detail(&h, &quantiles.unwrap_or_default()).map_err(bad)?;
    to_py(py, &detail)
}

/// Merge base64 HdrHistograms exactly (e.g. the same histogram of one
/// step from several load agents): each bucket's count is the sum of the
/// inputs', so the merged percentiles equal those of one histogram fed
/// every value.
///
/// Args:
///     encoded_b64: the encoded histograms (V2 or V2-deflate, base64), all
///         with the same lowest discernible value and significant digits
///         (every perflab histogram has); an empty list merges to an empty
///         histogram.
///
/// Returns:
///     dict {encoded_b64 (V2-deflate, base64), count, min_us, p50_us,
///     p90_us, p99_us, p999_us, max_us, mean_us} of the merged histogram
///     (zeros when it is empty).
///
/// Raises:
///     ValueError: an input the bounded decoder refuses (see hdr_decode),
///         or inputs whose bucket layouts differ (no exact merge exists).
#[pyfunction]
fn hdr_merge<'py>(py: Python<'py>, encoded_b64: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
    let hists = encoded_b64
        .iter()
        .enumerate()
        .map(|(i, e)| hdr::decode(e).map_err(|m| bad(format!("histogram {i}: {m}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let merged = hdr::merge(&hists).map_err(bad)?;
    to_py(
        py,
        &hdr::Report {
            summary: hdr::summarize(&merged),
            encoded_b64: hdr::encode(&merged),
        },
    )
}

/// Add this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(hdr_decode, m)?)?;
    m.add_function(wrap_pyfunction!(hdr_merge, m)?)
}
