//! Bindings of the clock probes (`perflab doctor`) and of the per-sample
//! integrity bracket (`perflab run`). Snapshots cross as tuples
//! `(monotonic_ns, realtime_ns, monotonic_raw_ns, boottime_ns, tsc_ticks|None)`
//! ([`SnapshotTuple`]).

use perflab_engine::clock::{self, Bracket, Clock, Snapshot, SnapshotTuple, Tolerance};
use pyo3::prelude::*;

use crate::convert::{bad, to_py};

fn parse_clock(name: &str) -> PyResult<Clock> {
    Clock::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Clock::ALL.iter().map(|c| c.name()).collect();
        bad(format!(
            "unknown clock {name:?}; known: {}",
            known.join(", ")
        ))
    })
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

/// One native read of `clock` (ns; ticks for "tsc"), or None when
/// unavailable. Raises ValueError for an unknown name.
#[pyfunction]
fn clock_read(clock: &str) -> PyResult<Option<u64>> {
    Ok(parse_clock(clock)?.read())
}

/// Every clock read back to back: a snapshot tuple (see the module doc).
#[pyfunction]
fn clock_snapshot() -> SnapshotTuple {
    Snapshot::take().into()
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
    let c = parse_clock(clock)?;
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
    a: SnapshotTuple,
    b: SnapshotTuple,
    ticks_per_ns: Option<f64>,
    rel: f64,
    abs_ns: u64,
) -> (i64, &'static str, bool) {
    let d = clock::disagreement(&a.into(), &b.into(), ticks_per_ns);
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
fn clock_probe(
    py: Python<'_>,
    duration_ns: u64,
    window_ns: u64,
    event_floor_ns: u64,
    ticks_per_ns: Option<f64>,
) -> PyResult<Bound<'_, PyAny>> {
    let data = py.detach(|| clock::probe(duration_ns, window_ns, event_floor_ns, ticks_per_ns));
    to_py(py, &data)
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
fn ntp_state(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    clock::ntp_state().map(|s| to_py(py, &s)).transpose()
}

/// Add this module's functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(clock_read_cost_ns, m)?)?;
    m.add_function(wrap_pyfunction!(clock_resolution, m)?)?;
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
