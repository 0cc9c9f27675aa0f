//! Bindings of the per-sample counters ([`perflab_engine::counters`]): a
//! `PerfCounters` object per sampling thread, read around each sample.

use perflab_engine::counters::{read_cost_ns, Counters, OpenOptions};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The counters of the thread that creates it (perf software events, the
/// thread's context switches, hardware events where the kernel has a PMU).
///
/// `events` names the values `stop()` returns, in order (task_clock_ns,
/// page_faults, cpu_migrations, context_switches, voluntary_switches, involuntary_switches,
/// instructions, cycles, branch_misses, cache_misses: those present).
/// `software_note` / `hardware_note` say why events are absent (None when
/// all of that kind are there). Creating it never fails. Not shareable
/// between threads: each thread opens its own.
#[pyclass(module = "perflab._core", unsendable)]
struct PerfCounters {
    inner: Counters,
}

#[pymethods]
impl PerfCounters {
    /// Open the counters. `include_kernel=False` asks for user-side
    /// software events only (no cpu_migrations); `hardware=False` skips
    /// the PMU group.
    #[new]
    #[pyo3(signature = (include_kernel=true, hardware=true))]
    fn new(include_kernel: bool, hardware: bool) -> Self {
        let inner = if include_kernel && hardware {
            Counters::open()
        } else {
            Counters::open_with(OpenOptions {
                include_kernel,
                hardware,
            })
        };
        PerfCounters { inner }
    }

    /// The column names of the values `stop()` returns.
    #[getter]
    fn events(&self) -> Vec<&'static str> {
        self.inner.events().iter().map(|e| e.name()).collect()
    }

    /// Why software perf events are absent or reduced, or None.
    #[getter]
    fn software_note(&self) -> Option<String> {
        self.inner.software_note().map(str::to_owned)
    }

    /// Why hardware events are absent, or None when they are present.
    #[getter]
    fn hardware_note(&self) -> Option<String> {
        self.inner.hardware_note().map(str::to_owned)
    }

    /// Read the counters at the start of a sample. Raises OSError.
    fn start(&mut self) -> PyResult<()> {
        Ok(self.inner.start()?)
    }

    /// What each counter counted since `start()`: a tuple of ints (None for
    /// a hardware count the multiplexed PMU never took). Raises OSError.
    fn stop<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let deltas = self.inner.stop()?;
        PyTuple::new(py, deltas.iter().copied())
    }

    /// Mean native cost of one `start()` + `stop()` pair, ns, over `pairs`
    /// pairs (without Python's call cost). Raises OSError.
    #[pyo3(signature = (pairs=10_000))]
    fn read_cost_ns(&mut self, pairs: u32) -> PyResult<f64> {
        Ok(read_cost_ns(&mut self.inner, pairs)?)
    }
}

/// Add this module's class.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PerfCounters>()
}
