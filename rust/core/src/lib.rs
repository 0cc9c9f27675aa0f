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

// ---- clocks / doctor ----
/// Bindings of the clock integrity checks (`perflab run`'s per-sample
/// bracket) and of `perflab doctor`'s probes. Snapshots cross as tuples
/// `(monotonic_ns, realtime_ns, monotonic_raw_ns, boottime_ns, tsc_ticks|None)`.
mod clock_bindings {
    use perflab_engine::clock::{self, Bracket, Snapshot, Tolerance};
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    type SnapTuple = (u64, u64, u64, u64, Option<u64>);

    fn snap(s: &Snapshot) -> SnapTuple {
        (s.monotonic, s.realtime, s.monotonic_raw, s.boottime, s.tsc)
    }

    fn unsnap(t: SnapTuple) -> Snapshot {
        let (monotonic, realtime, monotonic_raw, boottime, tsc) = t;
        Snapshot {
            monotonic,
            realtime,
            monotonic_raw,
            boottime,
            tsc,
        }
    }

    /// One native read of `clock` (ns; ticks for "tsc"), or None when
    /// unavailable. Raises ValueError for an unknown name.
    #[pyfunction]
    fn clock_read(clock: &str) -> PyResult<Option<u64>> {
        Ok(super::parse_clock(clock)?.read())
    }

    /// Every clock read back to back: a snapshot tuple (see the section doc).
    #[pyfunction]
    fn clock_snapshot() -> SnapTuple {
        snap(&Snapshot::take())
    }

    /// (smallest non-zero step, backward steps) of `clock`, reading until
    /// `min_steps` steps or `max_ns` passed; None when unavailable or no
    /// step was seen. Units: ns (ticks for "tsc"). Raises ValueError.
    #[pyfunction]
    #[pyo3(signature = (clock, min_steps=1000, max_ns=100_000_000))]
    fn clock_resolution_within(
        py: Python<'_>,
        clock: &str,
        min_steps: u64,
        max_ns: u64,
    ) -> PyResult<Option<(u64, u64)>> {
        let c = super::parse_clock(clock)?;
        Ok(py.detach(|| clock::resolution_within(c, min_steps, max_ns)))
    }

    /// The kernel's CLOCK_MONOTONIC_RAW by direct system call, ns: out of an
    /// LD_PRELOAD interposer's reach (libfaketime can't fake it).
    #[pyfunction]
    fn true_ns() -> u64 {
        clock::true_ns()
    }

    /// A tightly bracketed (tsc_ticks, true_ns) pair, or None without rdtsc.
    #[pyfunction]
    #[pyo3(signature = (tries=5))]
    fn tsc_reference(tries: u32) -> Option<(u64, u64)> {
        clock::tsc_reference(tries)
    }

    /// TSC ticks per ns between two `tsc_reference` pairs, or None.
    #[pyfunction]
    fn tsc_rate(start: (u64, u64), end: (u64, u64)) -> Option<f64> {
        clock::tsc_rate(start, end)
    }

    /// TSC ticks per ns measured over `span_ns` of true time (spins that
    /// long, GIL released), or None without rdtsc.
    #[pyfunction]
    #[pyo3(signature = (span_ns=20_000_000))]
    fn tsc_calibrate(py: Python<'_>, span_ns: u64) -> Option<f64> {
        py.detach(|| clock::calibrate_tsc(span_ns))
    }

    /// The per-sample integrity bracket: `start()` before a sample, `stop()`
    /// after it returns `(skew_ns, clock, flagged)` — the largest
    /// disagreement Δclock − ΔMONOTONIC and whether it exceeds
    /// `abs_ns + rel × ΔMONOTONIC`.
    #[pyclass(module = "perflab._core")]
    struct ClockBracket {
        inner: Bracket,
    }

    #[pymethods]
    impl ClockBracket {
        #[new]
        #[pyo3(signature = (ticks_per_ns, rel, abs_ns))]
        fn new(ticks_per_ns: Option<f64>, rel: f64, abs_ns: u64) -> Self {
            ClockBracket {
                inner: Bracket::new(ticks_per_ns, Tolerance { rel, abs_ns }),
            }
        }

        /// Mark the start of a sample.
        fn start(&mut self) {
            self.inner.start();
        }

        /// End the sample: (skew_ns, clock name, flagged).
        fn stop(&self) -> (i64, &'static str, bool) {
            let (d, flagged) = self.inner.stop();
            (d.skew_ns, d.clock.name(), flagged)
        }
    }

    /// Compare two snapshot tuples as the bracket does: (skew_ns, clock,
    /// flagged) for the worst of REALTIME, MONOTONIC_RAW and TSC (converted
    /// with `ticks_per_ns`; skipped when None) against MONOTONIC.
    #[pyfunction]
    fn clock_compare(
        a: SnapTuple,
        b: SnapTuple,
        ticks_per_ns: Option<f64>,
        rel: f64,
        abs_ns: u64,
    ) -> (i64, &'static str, bool) {
        let d = clock::disagreement(&unsnap(a), &unsnap(b), ticks_per_ns);
        (
            d.skew_ns,
            d.clock.name(),
            d.exceeds(&Tolerance { rel, abs_ns }),
        )
    }

    /// "release" or "debug": how this native core was compiled (timings of
    /// the clock probes depend on it; benchmarks record it).
    #[pyfunction]
    fn build_profile() -> &'static str {
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    }

    /// The hypervisor's CPUID vendor signature ("KVMKVMKVM", …), or None on
    /// bare metal and off x86_64.
    #[pyfunction]
    fn hypervisor_signature() -> Option<String> {
        clock::hypervisor_signature()
    }

    /// Tight-loop probe of the clocks for `duration_ns` of true time (GIL
    /// released). Returns a dict: iterations, windows (snapshots every
    /// `window_ns`), events (snapshot pairs that diverged by more than
    /// `event_floor_ns`), events_dropped, backward {clock: count},
    /// longest_gap (the pair of reads farthest apart), torn_reads (snapshots
    /// discarded because a preemption split them).
    #[pyfunction]
    #[pyo3(signature = (duration_ns, window_ns, event_floor_ns, ticks_per_ns))]
    fn clock_probe<'py>(
        py: Python<'py>,
        duration_ns: u64,
        window_ns: u64,
        event_floor_ns: u64,
        ticks_per_ns: Option<f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let data = py.detach(|| clock::probe(duration_ns, window_ns, event_floor_ns, ticks_per_ns));
        let out = PyDict::new(py);
        out.set_item("iterations", data.iterations)?;
        out.set_item("windows", data.windows.iter().map(snap).collect::<Vec<_>>())?;
        let events: Vec<_> = data
            .events
            .iter()
            .map(|(a, b)| (snap(a), snap(b)))
            .collect();
        out.set_item("events", events)?;
        out.set_item("events_dropped", data.events_dropped)?;
        out.set_item("torn_reads", data.torn)?;
        let names = ["monotonic", "realtime", "monotonic_raw", "boottime"];
        let backward = PyDict::new(py);
        for (name, count) in names.iter().zip(data.backward) {
            backward.set_item(name, count)?;
        }
        out.set_item("backward", backward)?;
        out.set_item(
            "longest_gap",
            (snap(&data.longest_gap.0), snap(&data.longest_gap.1)),
        )?;
        Ok(out)
    }

    /// Actual durations (ns) of up to `count` sleeps of `request_ns`
    /// (clock_nanosleep on MONOTONIC), within `budget_ns`; GIL released.
    #[pyfunction]
    fn sleep_durations(py: Python<'_>, request_ns: u64, count: usize, budget_ns: u64) -> Vec<u64> {
        py.detach(|| clock::sleep_durations(request_ns, count, budget_ns))
    }

    /// This thread's timer slack, ns (prctl PR_GET_TIMERSLACK), or None.
    #[pyfunction]
    fn timer_slack_ns() -> Option<u64> {
        clock::timer_slack_ns()
    }

    /// The kernel's NTP state from adjtimex (read only) as a dict: state,
    /// status, synchronised, freq_ppm, offset_ns, maxerror_us, esterror_us;
    /// None when adjtimex is refused.
    #[pyfunction]
    fn ntp_state(py: Python<'_>) -> PyResult<Option<Bound<'_, PyDict>>> {
        let Some(s) = clock::ntp_state() else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        out.set_item("state", s.state)?;
        out.set_item("status", s.status)?;
        out.set_item("synchronised", s.synchronised())?;
        out.set_item("freq_ppm", s.freq_ppm)?;
        out.set_item("offset_ns", s.offset_ns)?;
        out.set_item("maxerror_us", s.maxerror_us)?;
        out.set_item("esterror_us", s.esterror_us)?;
        Ok(Some(out))
    }

    /// Add this section's functions and classes to the module.
    pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_function(wrap_pyfunction!(clock_read, m)?)?;
        m.add_function(wrap_pyfunction!(clock_snapshot, m)?)?;
        m.add_function(wrap_pyfunction!(clock_resolution_within, m)?)?;
        m.add_function(wrap_pyfunction!(true_ns, m)?)?;
        m.add_function(wrap_pyfunction!(tsc_reference, m)?)?;
        m.add_function(wrap_pyfunction!(tsc_rate, m)?)?;
        m.add_function(wrap_pyfunction!(tsc_calibrate, m)?)?;
        m.add_function(wrap_pyfunction!(clock_probe, m)?)?;
        m.add_function(wrap_pyfunction!(sleep_durations, m)?)?;
        m.add_function(wrap_pyfunction!(timer_slack_ns, m)?)?;
        m.add_function(wrap_pyfunction!(clock_compare, m)?)?;
        m.add_function(wrap_pyfunction!(hypervisor_signature, m)?)?;
        m.add_function(wrap_pyfunction!(build_profile, m)?)?;
        m.add_function(wrap_pyfunction!(ntp_state, m)?)?;
        m.add_class::<ClockBracket>()?;
        Ok(())
    }
}
// ---- end clocks / doctor ----

// ---- http engine and serve ----
/// Bindings of the HTTP load engine (`perflab http`) and the target server
/// (`perflab serve`). Plain Python types in and out; the GIL is released
/// while load runs; Ctrl-C (KeyboardInterrupt) stops the current step and
/// still returns its accounting.
mod http_bindings {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc, Mutex};
    use std::time::Duration;

    use perflab_engine::engine::recorder::{new_histogram, Histogram};
    use perflab_engine::engine::{
        self, encode, summarize, Arrival, Config, ErrorKind, LoadModel, OkStatus, Progress,
        RequestSpec, RunResult, Snapshot, StepResult, StepSpec, Target,
    };
    use perflab_engine::server::{self, Delay, Fault, ServerConfig, ServerHandle, Stall};
    use pyo3::conversion::FromPyObjectOwned;
    use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyDict, PyList, PyString};

    const POLL: Duration = Duration::from_millis(100);

    fn bad(msg: impl Into<String>) -> PyErr {
        PyValueError::new_err(msg.into())
    }

    /// `d[key]` converted, or None when absent or None.
    fn get<'py, T: FromPyObjectOwned<'py>>(
        d: &Bound<'py, PyDict>,
        key: &str,
    ) -> PyResult<Option<T>> {
        match d.get_item(key)? {
            Some(v) if !v.is_none() => v
                .extract::<T>()
                .map(Some)
                .map_err(|e| bad(format!("config key {key:?}: {}", Into::<PyErr>::into(e)))),
            _ => Ok(None),
        }
    }

    fn check_keys(d: &Bound<'_, PyDict>, known: &[&str], what: &str) -> PyResult<()> {
        for k in d.keys() {
            let k: String = k.extract()?;
            if !known.contains(&k.as_str()) {
                return Err(bad(format!(
                    "unknown {what} key {k:?}; known: {}",
                    known.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn seconds(d: &Bound<'_, PyDict>, key: &str, default: Duration) -> PyResult<Duration> {
        match get::<f64>(d, key)? {
            None => Ok(default),
            Some(s) if s.is_finite() && s >= 0.0 => Ok(Duration::from_secs_f64(s)),
            Some(s) => Err(bad(format!(
                "{key} must be a non-negative number of seconds, got {s}"
            ))),
        }
    }

    fn body(d: &Bound<'_, PyDict>) -> PyResult<Vec<u8>> {
        match d.get_item("body")? {
            None => Ok(Vec::new()),
            Some(v) if v.is_none() => Ok(Vec::new()),
            Some(v) => {
                if let Ok(b) = v.cast::<PyBytes>() {
                    Ok(b.as_bytes().to_vec())
                } else if let Ok(s) = v.cast::<PyString>() {
                    Ok(s.to_str()?.as_bytes().to_vec())
                } else {
                    Err(bad("request body must be str or bytes"))
                }
            }
        }
    }

    fn headers(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, String)>> {
        match d.get_item("headers")? {
            None => Ok(Vec::new()),
            Some(v) if v.is_none() => Ok(Vec::new()),
            Some(v) => {
                if let Ok(h) = v.cast::<PyDict>() {
                    h.iter()
                        .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
                        .collect()
                } else {
                    v.extract::<Vec<(String, String)>>()
                        .map_err(|_| bad("headers must be a dict or a list of (name, value) pairs"))
                }
            }
        }
    }

    fn request(d: &Bound<'_, PyDict>, default_path: &str) -> PyResult<RequestSpec> {
        check_keys(d, &["method", "path", "headers", "body"], "request")?;
        Ok(RequestSpec {
            method: get::<String>(d, "method")?.unwrap_or_else(|| "GET".into()),
            path: get::<String>(d, "path")?.unwrap_or_else(|| default_path.into()),
            headers: headers(d)?,
            body: body(d)?,
        })
    }

    const RUN_KEYS: &[&str] = &[
        "url",
        "mode",
        "arrival",
        "rate",
        "rates",
        "connections",
        "connections_list",
        "duration_s",
        "warmup_s",
        "threads",
        "connect_timeout_s",
        "read_timeout_s",
        "ok",
        "insecure",
        "seed",
        "method",
        "headers",
        "body",
        "requests",
    ];

    fn ok_status(d: &Bound<'_, PyDict>) -> PyResult<OkStatus> {
        match d.get_item("ok")? {
            None => Ok(OkStatus::default()),
            Some(v) if v.is_none() => Ok(OkStatus::default()),
            Some(v) => {
                if let Ok(s) = v.extract::<String>() {
                    OkStatus::parse(&s).map_err(bad)
                } else {
                    let ranges: Vec<(u16, u16)> = v
                        .extract()
                        .map_err(|_| bad("ok must be \"200-299,304\" or a list of (low, high)"))?;
                    Ok(OkStatus(ranges))
                }
            }
        }
    }

    fn steps(d: &Bound<'_, PyDict>, model: LoadModel) -> PyResult<Vec<StepSpec>> {
        let connections = get::<usize>(d, "connections")?;
        Ok(match model {
            LoadModel::Open(_) => {
                let rates = match (get::<Vec<f64>>(d, "rates")?, get::<f64>(d, "rate")?) {
                    (Some(r), _) => r,
                    (None, Some(r)) => vec![r],
                    (None, None) => {
                        return Err(bad("open loop needs \"rate\" or \"rates\" (requests/s)"))
                    }
                };
                rates
                    .into_iter()
                    .map(|r| StepSpec {
                        rate: Some(r),
                        connections,
                    })
                    .collect()
            }
            LoadModel::Closed => {
                let list = match (get::<Vec<usize>>(d, "connections_list")?, connections) {
                    (Some(l), _) => l,
                    (None, Some(n)) => vec![n],
                    (None, None) => {
                        return Err(bad(
                            "closed loop needs \"connections\" or \"connections_list\"",
                        ))
                    }
                };
                list.into_iter()
                    .map(|n| StepSpec {
                        rate: None,
                        connections: Some(n),
                    })
                    .collect()
            }
        })
    }

    fn parse_run_config(d: &Bound<'_, PyDict>) -> PyResult<Config> {
        check_keys(d, RUN_KEYS, "http_run config")?;
        let url: String = get(d, "url")?.ok_or_else(|| bad("config needs \"url\""))?;
        let target = Target::parse(&url).map_err(bad)?;
        let arrival =
            Arrival::parse(&get::<String>(d, "arrival")?.unwrap_or_else(|| "constant".into()))
                .map_err(bad)?;
        let model = match get::<String>(d, "mode")?.as_deref().unwrap_or("open") {
            "open" => LoadModel::Open(arrival),
            "closed" => LoadModel::Closed,
            m => {
                return Err(bad(format!(
                    "unknown mode {m:?}; use \"open\" or \"closed\""
                )))
            }
        };
        let requests = match d.get_item("requests")? {
            Some(list) if !list.is_none() => {
                let list = list
                    .cast::<PyList>()
                    .map_err(|_| bad("requests must be a list of dicts"))?;
                list.iter()
                    .map(|r| {
                        request(
                            r.cast::<PyDict>()
                                .map_err(|_| bad("each request must be a dict"))?,
                            &target.path,
                        )
                    })
                    .collect::<PyResult<Vec<_>>>()?
            }
            _ => vec![RequestSpec {
                method: get::<String>(d, "method")?.unwrap_or_else(|| "GET".into()),
                path: target.path.clone(),
                headers: headers(d)?,
                body: body(d)?,
            }],
        };
        let mut c = Config::open(&url, 1.0).map_err(bad)?;
        c.target = target;
        c.requests = requests;
        c.model = model;
        c.steps = steps(d, model)?;
        c.duration = seconds(d, "duration_s", Duration::from_secs(10))?;
        c.warmup = seconds(d, "warmup_s", Duration::ZERO)?;
        c.threads = get::<usize>(d, "threads")?.unwrap_or_else(engine::default_threads);
        c.connect_timeout = seconds(d, "connect_timeout_s", c.connect_timeout)?;
        c.read_timeout = seconds(d, "read_timeout_s", c.read_timeout)?;
        c.ok = ok_status(d)?;
        c.insecure = get::<bool>(d, "insecure")?.unwrap_or(false);
        c.seed = get::<u64>(d, "seed")?.unwrap_or(c.seed);
        c.validate().map_err(bad)?;
        Ok(c)
    }

    fn histogram_dict<'py>(py: Python<'py>, h: &Histogram<u64>) -> PyResult<Bound<'py, PyDict>> {
        let s = summarize(h);
        let d = PyDict::new(py);
        d.set_item("count", s.count)?;
        d.set_item("min_us", s.min_us)?;
        d.set_item("p50_us", s.p50_us)?;
        d.set_item("p90_us", s.p90_us)?;
        d.set_item("p99_us", s.p99_us)?;
        d.set_item("p999_us", s.p999_us)?;
        d.set_item("max_us", s.max_us)?;
        d.set_item("mean_us", s.mean_us)?;
        Ok(d)
    }

    fn step_dict<'py>(py: Python<'py>, s: &StepResult) -> PyResult<Bound<'py, PyDict>> {
        let c = &s.recorder.counters;
        let d = PyDict::new(py);
        d.set_item("index", s.index)?;
        d.set_item("mode", s.mode)?;
        d.set_item("arrival", s.arrival)?;
        d.set_item("offered_rate", s.offered_rate)?;
        d.set_item("connections", s.connections)?;
        d.set_item("threads", s.threads)?;
        d.set_item("duration_s", s.duration_s)?;
        d.set_item("warmup_s", s.warmup_s)?;
        d.set_item("elapsed_s", s.elapsed_s)?;
        d.set_item("wall_s", s.wall_s)?;
        d.set_item("drain_s", s.drain_s)?;
        d.set_item("interrupted", s.interrupted)?;
        d.set_item("requests_sent", c.requests_sent)?;
        d.set_item("ok_responses", c.ok_responses)?;
        d.set_item("ok_from_warmup", c.ok_from_warmup)?;
        d.set_item("drained", c.drained)?;
        d.set_item("failures", c.failures)?;
        d.set_item("unsent", c.unsent)?;
        d.set_item("unfinished", c.unfinished)?;
        let status = PyDict::new(py);
        for (code, n) in c.status_counts() {
            status.set_item(code, n)?;
        }
        d.set_item("status_counts", status)?;
        let errors = PyDict::new(py);
        for kind in ErrorKind::ALL {
            errors.set_item(kind.name(), c.error(kind))?;
        }
        d.set_item("errors", errors)?;
        d.set_item("bytes_in", c.bytes_in)?;
        d.set_item("bytes_out", c.bytes_out)?;
        d.set_item("connections_opened", c.connections_opened)?;
        d.set_item("connections_closed", c.connections_closed)?;
        d.set_item("connections_errored", c.connections_errored)?;
        d.set_item("connections_peak", c.connections_peak)?;
        d.set_item("connect_failures", c.connect_failures)?;
        d.set_item("pool_waits", c.pool_waits)?;
        d.set_item("thread_cpu_s", s.thread_cpu_s.clone())?;
        let hists = PyDict::new(py);
        let r = &s.recorder;
        for (name, h) in [
            ("latency", &r.latency),
            ("service_time", &r.service_time),
            ("send_lag", &r.send_lag),
            ("dispatch_lag", &r.dispatch_lag),
            ("failed_latency", &r.failed_latency),
        ] {
            let hd = histogram_dict(py, h)?;
            hd.set_item("encoded_b64", encode(h))?;
            hists.set_item(name, hd)?;
        }
        d.set_item("histograms", hists)?;
        Ok(d)
    }

    fn run_dict<'py>(py: Python<'py>, r: &RunResult, url: &str) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let steps = PyList::empty(py);
        for s in &r.steps {
            steps.append(step_dict(py, s)?)?;
        }
        d.set_item("steps", steps)?;
        d.set_item("interrupted", r.interrupted)?;
        d.set_item("address", r.address.to_string())?;
        d.set_item("url", url)?;
        d.set_item("histogram_unit", "us")?;
        Ok(d)
    }

    fn snapshot_dict<'py>(py: Python<'py>, s: &Snapshot) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("step", s.step)?;
        d.set_item("steps", s.steps)?;
        d.set_item("offered_rate", s.offered_rate)?;
        d.set_item("wall_s", s.wall_s)?;
        d.set_item("in_warmup", s.in_warmup)?;
        d.set_item("completed", s.completed)?;
        d.set_item("ok_responses", s.ok_responses)?;
        d.set_item("failures", s.failures)?;
        d.set_item("achieved_rate", s.achieved_rate)?;
        d.set_item("p99_us", s.p99_us)?;
        Ok(d)
    }

    /// Run HTTP load and return its measurements; blocks, with the GIL
    /// released, until every step ends.
    ///
    /// Open-loop latency is measured from each request's intended send
    /// time (coordinated-omission corrected: Gil Tene; wrk2).
    ///
    /// Args:
    ///     config: dict with keys
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
    ///     progress: optional callable, called about every 100 ms with a
    ///         dict {step, steps, offered_rate, wall_s (since the step
    ///         began), in_warmup, completed, ok_responses, failures,
    ///         achieved_rate (req/s), p99_us}. If it raises, the run stops
    ///         and the error is raised.
    ///
    /// Returns:
    ///     dict {url, address, interrupted (bool), histogram_unit ("us"),
    ///     steps: list of dicts {index, mode, arrival, offered_rate (req/s
    ///     or None), connections, threads, duration_s, warmup_s,
    ///     elapsed_s (the recorded window: achieved = ok_responses /
    ///     elapsed_s), wall_s (the whole step, drain included), drain_s
    ///     (from the window's end to the last recorded request's end),
    ///     interrupted, requests_sent (recorded requests handed to a
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
    ///     thread_cpu_s (list, CPU s per engine thread over the recorded
    ///     window), histograms {latency, service_time, send_lag,
    ///     dispatch_lag (open loop: how late the dispatcher found each
    ///     request due, without waits for a free connection),
    ///     failed_latency: {encoded_b64 (HdrHistogram V2 deflate, base64),
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
    #[pyo3(signature = (config, progress=None))]
    pub fn http_run<'py>(
        py: Python<'py>,
        config: &Bound<'py, PyDict>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let cfg = parse_run_config(config)?;
        let url = cfg.target.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let prog = Arc::new(Progress::default());
        let (tx, mut rx) = mpsc::channel();
        let (stop2, prog2) = (stop.clone(), prog.clone());
        std::thread::Builder::new()
            .name("perflab-http-run".into())
            .spawn(move || {
                let _ = tx.send(engine::run(&cfg, stop2, prog2));
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
            if let (Some(cb), None) = (&progress, &callback_error) {
                if let Err(e) = snapshot_dict(py, &prog.snapshot()).and_then(|s| cb.call1((s,))) {
                    stop.store(true, Ordering::Relaxed);
                    callback_error = Some(e);
                }
            }
        };
        if let Some(e) = callback_error {
            return Err(e);
        }
        let result = result.map_err(|e| bad(e.0))?;
        run_dict(py, &result, &url)
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
    pub fn http_check(config: &Bound<'_, PyDict>) -> PyResult<()> {
        parse_run_config(config).map(|_| ())
    }

    /// Summarize a base64 HdrHistogram (V2 or V2-deflate encoding, e.g.
    /// `histograms.latency.encoded_b64` of `http_run`).
    ///
    /// Args:
    ///     encoded_b64: the encoded histogram.
    ///     quantiles: optional list of quantiles in [0, 1].
    ///
    /// Returns:
    ///     dict {count, min_us, p50_us, p90_us, p99_us, p999_us, max_us,
    ///     mean_us, quantiles: {q: value}, values: [v], counts: [n]}
    ///     (values in the histogram's unit, microseconds for perflab's;
    ///     `values` is the highest equivalent value of each non-empty
    ///     bucket, ascending, and `counts` its count).
    ///
    /// Raises:
    ///     ValueError: not base64, not an HdrHistogram, beyond the bounds
    ///         of `crate::hdr_input` (sizes, range, digits), or a quantile
    ///         outside [0, 1].
    #[pyfunction]
    #[pyo3(signature = (encoded_b64, quantiles=None))]
    pub fn hdr_decode<'py>(
        py: Python<'py>,
        encoded_b64: &str,
        quantiles: Option<Vec<f64>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let h = crate::hdr_input::decode(encoded_b64).map_err(bad)?;
        let d = histogram_dict(py, &h)?;
        let (values, counts): (Vec<u64>, Vec<u64>) = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .unzip();
        d.set_item("values", values)?;
        d.set_item("counts", counts)?;
        let qs = PyDict::new(py);
        for q in quantiles.unwrap_or_default() {
            if !(0.0..=1.0).contains(&q) {
                return Err(bad(format!("quantile {q} is outside [0, 1]")));
            }
            qs.set_item(
                q,
                if h.is_empty() {
                    0
                } else {
                    h.value_at_quantile(q)
                },
            )?;
        }
        d.set_item("quantiles", qs)?;
        Ok(d)
    }

    /// Merge base64 HdrHistograms (e.g. the same step of repeated runs)
    /// into one, returned base64 V2-deflate encoded.
    ///
    /// Raises:
    ///     ValueError: an input is not a valid encoded histogram.
    #[pyfunction]
    pub fn hdr_merge(encoded: Vec<String>) -> PyResult<String> {
        let mut total = new_histogram();
        for e in &encoded {
            let h = crate::hdr_input::decode(e).map_err(bad)?;
            total
                .add(&h)
                .map_err(|e| bad(format!("cannot merge histograms: {e:?}")))?;
        }
        Ok(encode(&total))
    }

    /// Parse a duration with a unit ("250us", "1.5ms", "2s", "1m") into
    /// seconds.
    ///
    /// Raises:
    ///     ValueError: missing or unknown unit, or not a number.
    #[pyfunction]
    pub fn parse_duration_s(text: &str) -> PyResult<f64> {
        server::parse_duration(text)
            .map(|d| d.as_secs_f64())
            .map_err(bad)
    }

    /// A running `perflab serve` target (see `serve`).
    #[pyclass(module = "perflab._core")]
    pub struct Server {
        address: std::net::SocketAddr,
        stop: Arc<AtomicBool>,
        handle: Mutex<Option<ServerHandle>>,
    }

    #[pymethods]
    impl Server {
        /// Bound address as "host:port" ("[::1]:port" for IPv6).
        #[getter]
        fn address(&self) -> String {
            self.address.to_string()
        }

        /// Bound IP address.
        #[getter]
        fn host(&self) -> String {
            self.address.ip().to_string()
        }

        /// Bound port (the real one when 0 was asked for).
        #[getter]
        fn port(&self) -> u16 {
            self.address.port()
        }

        /// True until the server has stopped.
        #[getter]
        fn running(&self) -> bool {
            self.lock().as_ref().is_some_and(|h| !h.is_finished())
        }

        /// Counters so far: {connections, requests, errors_injected}.
        fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            if let Some(h) = self.lock().as_ref() {
                let s = h.stats();
                d.set_item("connections", s.connections.load(Ordering::Relaxed))?;
                d.set_item("requests", s.requests.load(Ordering::Relaxed))?;
                d.set_item("errors_injected", s.errors_injected.load(Ordering::Relaxed))?;
            }
            Ok(d)
        }

        /// Ask the server to stop; returns at once.
        fn stop(&self) {
            self.stop.store(true, Ordering::Relaxed);
        }

        /// Block until the server stops (after `stop()` from another
        /// thread, or Ctrl-C), with the GIL released.
        ///
        /// Raises:
        ///     KeyboardInterrupt: on Ctrl-C, after stopping the server.
        fn join(&self, py: Python<'_>) -> PyResult<()> {
            loop {
                let running = self.running();
                if !running {
                    break;
                }
                py.detach(|| std::thread::sleep(POLL));
                if let Err(e) = py.check_signals() {
                    self.stop.store(true, Ordering::Relaxed);
                    self.finish(py);
                    return Err(e);
                }
            }
            self.finish(py);
            Ok(())
        }

        fn __enter__(slf: Py<Self>) -> Py<Self> {
            slf
        }

        fn __exit__(&self, py: Python<'_>, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) -> bool {
            self.stop.store(true, Ordering::Relaxed);
            self.finish(py);
            false
        }

        fn __repr__(&self) -> String {
            format!(
                "<perflab serve on {} ({})>",
                self.address,
                if self.running() { "running" } else { "stopped" }
            )
        }
    }

    impl Server {
        fn lock(&self) -> std::sync::MutexGuard<'_, Option<ServerHandle>> {
            self.handle.lock().unwrap_or_else(|p| p.into_inner())
        }

        fn finish(&self, py: Python<'_>) {
            if let Some(mut h) = self.lock().take() {
                h.stop();
                py.detach(move || h.join());
            }
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    const SERVE_KEYS: &[&str] = &[
        "host",
        "port",
        "delay",
        "stall",
        "error_rate",
        "body_size",
        "fault",
        "serialize",
        "threads",
        "seed",
    ];

    /// Start a `perflab serve` target on a background thread and return at
    /// once.
    ///
    /// Args:
    ///     config: dict with keys (all optional)
    ///         host (str): bind address ("127.0.0.1").
    ///         port (int): 0 (default) picks a free port; see .port.
    ///         delay (str): per-request delay: "1ms", "uniform:1ms:5ms",
    ///             "exp:2ms" (mean).
    ///         stall (str): "1s/10s" freezes all responses for 1 s at the
    ///             end of every 10 s period since start.
    ///         error_rate (float): fraction answered 500 (0).
    ///         body_size (int): response body bytes (0).
    ///         fault (str): "none", "close_mid_response" (half a body, then
    ///             close) or "endless_body" (a chunk every 100 ms, forever).
    ///         serialize (str): a global lock held this long per request,
    ///             e.g. "0.2ms": throughput saturates at 1/that.
    ///         threads (int): server worker threads (1).
    ///         seed (int): seed of the error draws and delay distribution.
    ///
    /// Returns:
    ///     Server with .address ("host:port"), .host, .port, .running,
    ///     .stats(), .stop(), .join(); usable as a context manager.
    ///
    /// Raises:
    ///     ValueError: bad value (unknown key, bad duration, error_rate
    ///         outside [0, 1]), or the address cannot be bound.
    #[pyfunction]
    #[pyo3(signature = (config=None))]
    pub fn serve(config: Option<&Bound<'_, PyDict>>) -> PyResult<Server> {
        let mut c = ServerConfig::default();
        if let Some(d) = config {
            check_keys(d, SERVE_KEYS, "serve config")?;
            c.host = get::<String>(d, "host")?.unwrap_or(c.host);
            c.port = get::<u16>(d, "port")?.unwrap_or(0);
            c.delay = get::<String>(d, "delay")?
                .map(|s| Delay::parse(&s))
                .transpose()
                .map_err(bad)?;
            c.stall = get::<String>(d, "stall")?
                .map(|s| Stall::parse(&s))
                .transpose()
                .map_err(bad)?;
            c.error_rate = get::<f64>(d, "error_rate")?.unwrap_or(0.0);
            c.body_size = get::<usize>(d, "body_size")?.unwrap_or(0);
            c.fault = Fault::parse(&get::<String>(d, "fault")?.unwrap_or_default()).map_err(bad)?;
            c.serialize = get::<String>(d, "serialize")?
                .map(|s| server::parse_duration(&s))
                .transpose()
                .map_err(bad)?;
            c.threads = get::<usize>(d, "threads")?.unwrap_or(1);
            c.seed = get::<u64>(d, "seed")?.unwrap_or(c.seed);
        }
        let handle = server::start(c).map_err(bad)?;
        Ok(Server {
            address: handle.address(),
            stop: handle.stop_flag(),
            handle: Mutex::new(Some(handle)),
        })
    }

    /// Add this section's functions and classes to the module.
    pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_function(wrap_pyfunction!(http_run, m)?)?;
        m.add_function(wrap_pyfunction!(http_check, m)?)?;
        m.add_function(wrap_pyfunction!(hdr_decode, m)?)?;
        m.add_function(wrap_pyfunction!(hdr_merge, m)?)?;
        m.add_function(wrap_pyfunction!(parse_duration_s, m)?)?;
        m.add_function(wrap_pyfunction!(serve, m)?)?;
        m.add_class::<Server>()?;
        Ok(())
    }
}
// ---- end http engine and serve ----

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(clock_names, m)?)?;
    m.add_function(wrap_pyfunction!(clock_read_cost_ns, m)?)?;
    m.add_function(wrap_pyfunction!(clock_resolution, m)?)?;
    clock_bindings::register(m)?; // clocks / doctor
    http_bindings::register(m)?; // http engine and serve
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// Bounded decoding of untrusted base64 HdrHistograms (results files are
/// input from anyone): every size is checked before it is allocated.
mod hdr_input {
    use std::io::Read;

    use base64::Engine;
    use perflab_engine::engine::recorder::Histogram;

    /// Longest base64 text accepted (perflab's histograms are a few KiB).
    pub const MAX_ENCODED: usize = 4 << 20;
    /// Largest V2 payload accepted after inflating, bytes.
    pub const MAX_PAYLOAD: usize = 16 << 20;
    /// Largest counts array a histogram may need (its memory is 8 bytes each).
    pub const MAX_COUNTS: u64 = 1 << 21;
    /// Highest trackable value accepted: 2^53 (µs: 285 years), exact in f64.
    pub const MAX_HIGHEST: u64 = 1 << 53;
    /// Cookies without their word-size bits (0xF0), which V2 ignores: other
    /// implementations write 0x…03/0x…04 | size << 4, this crate reads 0x…13 only.
    const V2: u32 = 0x1c84_9303;
    const V2_DEFLATE: u32 = 0x1c84_9304;
    const WORD_SIZE_BITS: u32 = 0xf0;
    const HEADER: usize = 40;

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
    }

    fn be64(b: &[u8], at: usize) -> u64 {
        u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
    }

    /// Length of the counts array HdrHistogram allocates for these bounds
    /// (its `new_with_bounds` geometry), or None when it overflows.
    pub fn counts_len(low: u64, high: u64, digits: u32) -> Option<u64> {
        let largest = 2 * 10u64.pow(digits);
        let magnitude = 64 - (largest - 1).leading_zeros();
        let half = 1u64 << (magnitude - 1);
        let unit = 63 - low.leading_zeros();
        let mut untrackable = (1u128 << magnitude) << unit;
        let mut buckets = 1u64;
        while untrackable <= u128::from(high) {
            untrackable <<= 1;
            buckets += 1;
        }
        (buckets + 1).checked_mul(half)
    }

    /// Decode base64 V2 or V2-deflate bytes into a histogram, within bounds.
    ///
    /// # Errors
    /// A message naming the bound or the defect: not base64, a foreign
    /// cookie, a payload or counts array too large, a range beyond 2^53,
    /// more than 5 significant digits, or a corrupt counts payload.
    pub fn decode(b64: &str) -> Result<Histogram<u64>, String> {
        let text = b64.trim();
        if text.len() > MAX_ENCODED {
            return Err(format!(
                "histogram is {} bytes of base64, more than the {MAX_ENCODED} accepted",
                text.len()
            ));
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("histogram is not valid base64: {e}"))?;
        if raw.len() < 8 {
            return Err("not an HdrHistogram V2 encoding (too short)".into());
        }
        let mut plain = match be32(&raw, 0) & !WORD_SIZE_BITS {
            V2 => raw,
            V2_DEFLATE => {
                let length = be32(&raw, 4) as usize;
                let body = raw.get(8..8 + length).ok_or("compressed length beyond the data")?;
                let mut out = Vec::new();
                flate2::read::ZlibDecoder::new(body)
                    .take(MAX_PAYLOAD as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("not an HdrHistogram V2 encoding (deflate: {e})"))?;
                if out.len() > MAX_PAYLOAD {
                    return Err(format!("histogram inflates beyond {MAX_PAYLOAD} bytes"));
                }
                out
            }
            other => return Err(format!("not an HdrHistogram V2 encoding (cookie {other:#x})")),
        };
        check_plain(&plain)?;
        plain[0..4].copy_from_slice(&(V2 | 0x10).to_be_bytes());
        hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut std::io::Cursor::new(&plain))
            .map_err(|e| format!("not an HdrHistogram V2 encoding: {e}"))
    }

    /// Check the header and the counts payload of an uncompressed V2 encoding.
    fn check_plain(plain: &[u8]) -> Result<(), String> {
        if plain.len() < HEADER || be32(plain, 0) & !WORD_SIZE_BITS != V2 {
            return Err("not an HdrHistogram V2 encoding (bad inner cookie or header)".into());
        }
        let payload = be32(plain, 4) as usize;
        let digits = be32(plain, 12);
        let (low, high) = (be64(plain, 16), be64(plain, 24));
        if payload > plain.len() - HEADER {
            return Err("histogram payload is longer than its data (truncated?)".into());
        }
        if digits > 5 || low < 1 || high < low.saturating_mul(2) {
            return Err(format!(
                "histogram bounds are invalid (lowest {low}, highest {high}, {digits} digits)"
            ));
        }
        if high > MAX_HIGHEST {
            return Err(format!("histogram range up to {high} is beyond the 2^53 accepted"));
        }
        if counts_len(low, high, digits).is_none_or(|n| n > MAX_COUNTS) {
            return Err(format!(
                "histogram needs more than {MAX_COUNTS} buckets (range {low}..{high}, {digits} digits)"
            ));
        }
        // ZigZag u64::MAX decodes to i64::MIN, which the decoder cannot negate.
        let mut run = 0;
        for &byte in &plain[HEADER..HEADER + payload] {
            run = if byte == 0xff { run + 1 } else { 0 };
            if run >= 9 {
                return Err("histogram counts payload holds an impossible run length".into());
            }
        }
        Ok(())
    }
}
