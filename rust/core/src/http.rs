//! Bindings of the HTTP load engine (`perflab http`): plain Python types in
//! and out; the GIL is released while load runs; Ctrl-C (KeyboardInterrupt)
//! stops the current step and still returns its accounting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use perflab_engine::load::{self, Config, Progress, RunSpec};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;

use crate::convert::{bad, from_py, to_py};

/// How often a running load is polled for Ctrl-C and progress.
pub const POLL: Duration = Duration::from_millis(100);

/// The checked engine config of an `http_run` config dict.
fn config(config: &Bound<'_, PyAny>) -> PyResult<Config> {
    let spec: RunSpec = from_py(config, "http_run config")?;
    Config::try_from(spec).map_err(bad)
}

/// Run HTTP load and return its measurements; blocks, with the GIL
/// released, until every step ends.
///
/// Open-loop latency is measured from each request's intended send
/// time (coordinated-omission corrected: Gil Tene; wrk2).
///
/// Args:
///     config: dict with the keys of the engine's `RunSpec` (a key whose
///         value is None counts as absent):
///         url (str, required): http:// or https:// target.
///         mode (str): "open" (default) or "closed".
///         arrival (str): "constant" (default) or "poisson" (open loop).
///         rate (float) / rates (list[float]): offered req/s, one step
///             per rate (open loop; required there).
///         connections (int): open loop: connection pool cap (default
///             automatic, up to 1024); closed loop: connections.
///         connections_list (list[int]): closed loop, one step each.
///         duration_s (float): length of each step incl. warmup (10).
///         warmup_s (float): unrecorded start of each step (0).
///         threads (int): engine threads (default cores - 1, min 1; at
///             most the cores).
///         connect_timeout_s (float, 2), read_timeout_s (float, 10; from
///             request write to the last response byte).
///         ok (str | list[(int, int)]): success statuses ("200-299").
///         insecure (bool): skip TLS certificate checks (False).
///         seed (int): Poisson seed.
///         method (str), headers (dict | list of pairs), body (str |
///             bytes): the single request (path from the URL), or
///         requests (list[dict]): {method, path, headers, body} each,
///             sent round-robin.
///         start_unix_ns (int): the first step's load starts at this
///             realtime-clock instant, ns since the epoch (a load agent's
///             shared start; waited for, a stop ends the wait).
///         slots (list[int]), slot_period (int): constant arrivals, a
///             load agent's part of a schedule shared by several: the
///             shared schedule is evenly spaced (request n due at n / R)
///             and this engine sends the requests n whose n mod
///             slot_period is in slots (strictly increasing, below
///             slot_period), offering rate = R * len(slots) / slot_period.
///         protocol (str): "http1" (default) or "http2" (ALPN h2 over
///             TLS, prior knowledge h2c on plain TCP).
///         streams (int): HTTP/2 concurrent streams per connection (1):
///             closed loop runs connections * streams request loops.
///     progress: optional callable, called about every 100 ms with a
///         dict {step, steps, offered_rate, wall_s (since the step
///         began), in_warmup, completed, ok_responses, failures,
///         achieved_rate (req/s), p99_us}. If it raises, the run stops
///         and the error is raised.
///     stop: optional object with an `is_set()` method (a
///         threading.Event), looked at about every 100 ms: once set, the
///         current step stops and its accounting is returned
///         (interrupted=True), as on Ctrl-C. For a run on a thread that
///         gets no signals (a load agent).
///     progress_latency: add `latency_b64` to each progress dict: the
///         step's successful latencies so far (HdrHistogram, as in
///         results), for an exact merge across agents.
///
/// Returns:
///     dict {url, address, interrupted (bool), histogram_unit ("us"),
///     steps: list of dicts {index, mode, arrival, offered_rate (req/s
///     or None), connections, threads, duration_s, warmup_s,
///     elapsed_s (the recorded window: achieved = ok_responses /
///     elapsed_s), wall_s (the whole step, drain included), drain_s
///     (from the window's end to the last recorded request's end),
///     interrupted, start_lead_s (how long before its load started the
///     step was asked to run, s; negative when after a shared start
///     instant), requests_sent (recorded requests handed to a
///     connection), ok_responses (OK responses completed inside the
///     window), ok_from_warmup (of those, answers to warmup requests),
///     drained (OK answers to recorded requests after the window),
///     failures, unsent (due in the window but never sent),
///     unfinished (cut off by a stop or --timeout after the step's
///     end), status_counts {code: n}, errors {connect_refused,
///     connect_timeout, read_timeout, reset, closed_mid_response,
///     protocol, tls, other: n}, bytes_in, bytes_out,
///     connections_opened, connections_closed, connections_errored
///     (these three over the whole step, warmup included),
///     connections_peak (most open at once), connect_failures
///     (failed connect attempts, whole step), pool_waits (recorded
///     requests that waited because every connection was busy),
///     pool_idle_closed (open loop: request slots closed after idling
///     past the pool's bound, see docs/http.md),
///     protocol ("http/1.1" or "h2"), streams, thread_cpu_s (list,
///     CPU s per engine thread over the recorded
///     window), histograms {latency, service_time, send_lag,
///     dispatch_lag (open loop: how late the dispatcher found each
///     request due, without waits for a free connection),
///     failed_latency, connect (TCP connect of connections recorded
///     requests opened), tls_handshake, ttfb (write start to the first
///     response byte), body_time (first to last byte): {encoded_b64 (HdrHistogram V2 deflate, base64),
///     count, min_us, p50_us, p90_us, p99_us, p999_us, max_us,
///     mean_us}}}}. requests_sent = ok_responses - ok_from_warmup +
///     drained + failures + unfinished; connections_opened =
///     connections_closed.
///
/// Raises:
///     ValueError: bad config (unknown key, malformed URL, unsupported
///         scheme, non-positive rate or duration, a rate above
///         1,000,000 req/s per engine thread, more threads than cores,
///         warmup >= duration,
///         more connections than `ulimit -n` allows, unresolvable
///         host). An unreachable server is not an error: its failures
///         are counted.
///     RuntimeError: an engine thread failed to start.
///     KeyboardInterrupt is *not* raised: Ctrl-C stops the current step
///     and the result comes back with interrupted=True.
#[pyfunction]
#[pyo3(signature = (config, progress=None, stop=None, progress_latency=false))]
fn http_run<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyAny>,
    progress: Option<Bound<'py, PyAny>>,
    stop: Option<Bound<'py, PyAny>>,
    progress_latency: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let stop_event = stop;
    let cfg = self::config(config)?;
    let stop = Arc::new(AtomicBool::new(false));
    let prog = Arc::new(Progress::default());
    let (tx, mut rx) = mpsc::channel();
    let (stop2, prog2) = (stop.clone(), prog.clone());
    std::thread::Builder::new()
        .name("perflab-http-run".into())
        .spawn(move || {
            let _ = tx.send(load::run(&cfg, stop2, prog2));
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the load engine: {e}")))?;
    let mut callback_error = None;
    let result = loop {
        let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
        rx = back;
        match got {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err("the load engine thread died"))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Err(e) = py.check_signals() {
            stop.store(true, Ordering::Relaxed);
            if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
                callback_error.get_or_insert(e);
            }
        }
        if let Some(event) = &stop_event {
            match event.call_method0("is_set").and_then(|v| v.is_truthy()) {
                Ok(false) => {}
                Ok(true) => stop.store(true, Ordering::Relaxed),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    callback_error.get_or_insert(e);
                }
            }
        }
        if let (Some(cb), None) = (&progress, &callback_error) {
            let snapshot = to_py(py, &prog.snapshot()).and_then(|s| {
                if progress_latency {
                    s.set_item("latency_b64", prog.latency_encoded())?;
                }
                Ok(s)
            });
            if let Err(e) = snapshot.and_then(|s| cb.call1((s,))) {
                stop.store(true, Ordering::Relaxed);
                callback_error = Some(e);
            }
        }
    };
    if let Some(e) = callback_error {
        return Err(e);
    }
    let result = result.map_err(|e| bad(e.0))?;
    to_py(py, &result)
}

/// Check an `http_run` config without sending anything: the checks
/// `http_run` makes before it starts (keys, URL, a rate above what the
/// engine threads can schedule, more threads than cores, warmup and
/// duration, more connections than `ulimit -n` allows, ...). The host is
/// not resolved.
///
/// Raises:
///     ValueError: what is wrong, in one line.
#[pyfunction]
fn http_check(config: &Bound<'_, PyAny>) -> PyResult<()> {
    self::config(config).map(|_| ())
}

/// Add this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(http_run, m)?)?;
    m.add_function(wrap_pyfunction!(http_check, m)?)
}
