//! The Server-Timing middleware's side of `perflab.trace`: a served
//! request as a root span ([`Request`]) whose [`Collector`] sums, by name,
//! the durations of every span run under it (see `super`); the sums themselves are
//! `super::frame::Collector`, which every frame in the request adds to.

use std::sync::atomic::{AtomicBool, Ordering::*};

use perflab_engine::trace::{self, now_ns};
use pyo3::prelude::*;

use super::frame::{exit, set_current, Collector, Frame, ENABLED};
use super::stack::innermost;

/// One served request: a root span (the app's) and, when asked, the
/// sums behind its Server-Timing header.
#[pyclass(module = "perflab._core", frozen)]
pub struct Request {
    frame: Option<Py<Frame>>,
    collector: Option<Py<Collector>>,
    start_ns: u64,
    ended: AtomicBool,
}

#[pymethods]
impl Request {
    /// Begin a request in the current context: a span of `id` (recorded
    /// when tracing is on) and, with `collect`, the per-request sums.
    #[new]
    fn new(py: Python<'_>, id: u32, collect: bool) -> PyResult<Self> {
        let collector = if collect {
            Some(Py::new(py, Collector::new())?)
        } else {
            None
        };
        let frame = if ENABLED.load(Relaxed) || collect {
            let (ctx, parent) = innermost(py);
            let frame = Frame::new(
                py,
                id,
                now_ns(),
                parent.map(Bound::unbind),
                collector.as_ref().map(|c| c.clone_ref(py)),
                ctx,
            )?;
            set_current(py, &frame)?;
            Some(frame.unbind())
        } else {
            None
        };
        Ok(Self {
            frame,
            collector,
            start_ns: now_ns(),
            ended: AtomicBool::new(false),
        })
    }

    /// The sums so far: `[(name, total_ns, count)]` in first-seen order,
    /// then the request's own elapsed time as `(None, elapsed_ns, 1)`.
    fn timing(&self) -> Vec<(Option<String>, u64, u32)> {
        let names = trace::registry().names();
        let mut out: Vec<(Option<String>, u64, u32)> = self
            .collector
            .as_ref()
            .map(|c| c.get().sums())
            .unwrap_or_default()
            .into_iter()
            .map(|(id, ns, n)| (names.get(id as usize).cloned(), ns, n))
            .collect();
        out.push((None, now_ns().saturating_sub(self.start_ns), 1));
        out
    }

    /// End the request: its span is no longer the context's current one,
    /// and is recorded when tracing is on. A second call does nothing.
    fn end(&self, py: Python<'_>) {
        if self.ended.swap(true, Relaxed) {
            return;
        }
        if let Some(frame) = &self.frame {
            let frame = frame.bind(py);
            if ENABLED.load(Relaxed) {
                exit(frame, now_ns());
            } else {
                frame.get().closed.store(true, Relaxed);
            }
        }
    }
}
