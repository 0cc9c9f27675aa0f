//! `with perflab.span(name):`: [`Span`] (one stateless object per name,
//! cached by [`span`]), [`OffSpan`] while recording is off, and the opening
//! and closing of a block ([`open_block`], [`close_block`]): on this
//! thread's stack of sync spans when nothing can suspend the block
//! (`super::site`), else in the ContextVar (`super::frame`).

use std::sync::atomic::{AtomicBool, Ordering::*};

use perflab_engine::trace::{self, now_ns, OVERFLOW_NAME};
use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

use super::frame::{current, exit, set_current, Frame, ENABLED};
use super::site::stack_block_caller;
use super::stack::{innermost, pop_block, push_sync};

/// The warning about the cap on names was given.
static WARNED_CAP: AtomicBool = AtomicBool::new(false);
static SPANS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// Open a span of `id` in the current context: its frame is set as the
/// current one, under the innermost span (in its request, if any). None
/// when the context could not be changed (the span is then not recorded).
fn enter<'py>(py: Python<'py>, id: u32) -> Option<Bound<'py, Frame>> {
    let (ctx, parent) = innermost(py);
    let collector = parent
        .as_ref()
        .and_then(|p| p.get().collector().map(|c| c.clone_ref(py)));
    let frame = Frame::new(py, id, 0, parent.map(Bound::unbind), collector, ctx).ok()?;
    if let Err(e) = set_current(py, &frame) {
        drop(e.into_value(py).into_bound(py)); // as a Bound: see `super::block`
        return None;
    }
    frame.get().start_ns.store(now_ns(), Relaxed);
    Some(frame)
}

/// `with perflab.span("name"):` — one reusable object per name. Its
/// `__enter__` and `__exit__` are C methods ([`super::block`]) that
/// call [`open_block`] and [`close_block`].
#[pyclass(module = "perflab._core", frozen)]
pub struct Span {
    id: u32,
    name: Py<PyString>,
}

/// Open a block of `span` (its `__enter__`), while recording is on: on this
/// thread's stack when nothing can suspend it ([`stack_block_caller`]),
/// else in the ContextVar.
pub(crate) fn open_block(py: Python<'_>, span: &Span) {
    if ENABLED.load(Relaxed) {
        match stack_block_caller(py) {
            Some(caller) => drop(push_sync(py, span.id, Some(caller))),
            None => drop(enter(py, span.id)),
        }
    }
}

/// Close the block of `span` (its `__exit__`) that the calling frame opened
/// on this thread's stack, or else the context's innermost open span of
/// this name: normally the current one; one further out when blocks of two
/// generators end out of order. Nothing when neither: opened while
/// recording was off, or in another context (a generator resumed in
/// another task), which is then not recorded.
pub(crate) fn close_block(py: Python<'_>, span: &Span) {
    let end = now_ns();
    if pop_block(py, span.id, end) {
        return;
    }
    let mut frame = current(py);
    while let Some(f) = frame {
        if f.get().id() == span.id && !f.get().closed.load(Relaxed) {
            exit(&f, end);
            return;
        }
        frame = f.get().ctx_parent().map(|p| p.bind(py).clone());
    }
}

#[pymethods]
impl Span {
    /// A span of a name registered elsewhere (`trace_register`): what the
    /// coroutine decorator uses, whatever the state of recording.
    #[new]
    fn new(id: u32, name: Py<PyString>) -> Self {
        Self { id, name }
    }

    /// The span name.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyString> {
        self.name.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<perflab.span {}>", self.name.bind(py).repr()?))
    }
}

/// What [`span`] returns while recording is off: one shared context manager
/// that does nothing (a block entered with it records nothing, even when
/// recording is turned on inside it).
#[pyclass(module = "perflab._core", frozen)]
pub struct OffSpan;

#[pymethods]
impl OffSpan {
    fn __enter__(slf: &Bound<'_, Self>) -> Py<OffSpan> {
        slf.clone().unbind()
    }

    fn __exit__(
        &self,
        _type: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        false
    }

    fn __repr__(&self) -> &'static str {
        "<perflab.span (recording off)>"
    }
}

static OFF_SPAN: PyOnceLock<Py<OffSpan>> = PyOnceLock::new();

/// Register a name; warn once when the cap on names is reached.
pub(crate) fn register(py: Python<'_>, name: &str) -> u32 {
    let r = trace::register(name);
    if r.overflowed && !WARNED_CAP.swap(true, Relaxed) {
        let cap = trace::registry().max_names;
        let msg = format!(
            "perflab.trace: more than {cap} distinct span names; {name:?} and every later \
             new name are counted under {OVERFLOW_NAME:?} (set PERFLAB_TRACE_MAX_NAMES to \
             keep more, or use fewer names: a name per query text or URL grows without bound)"
        );
        let category = py.get_type::<PyRuntimeWarning>();
        let _ = PyErr::warn(
            py,
            &category,
            &std::ffi::CString::new(msg).unwrap_or_default(),
            2,
        );
    }
    r.id
}

/// span(name) -> Span: the context manager of `with perflab.span(name):`.
///
/// One reusable, stateless object per name (cached). Leaving the block records
/// its duration and self time (ns: the duration less its direct child spans'),
/// also when the block raises. While recording is off, one shared no-op
/// ([`OffSpan`]). A name that is not a str is used as `str(name)` after a
/// RuntimeWarning: never an exception in the traced code. Called by the C
/// function `_core.span` ([`super::block`]).
pub(crate) fn span(py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if let Ok(text) = name.cast::<PyString>() {
        if !ENABLED.load(Relaxed) {
            let off = OFF_SPAN.get_or_try_init(py, || Py::new(py, OffSpan))?;
            return Ok(off.clone_ref(py).into_any());
        }
        let cache = SPANS.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
        if let Some(hit) = cache.get_item(text)? {
            return Ok(hit.unbind());
        }
        let id = register(py, &text.to_string_lossy());
        let made = Py::new(
            py,
            Span {
                id,
                name: text.clone().unbind(),
            },
        )?;
        if id != 0 {
            cache.set_item(text, &made)?; // overflowing names are not kept
        }
        return Ok(made.into_any());
    }
    let shown = name.str()?;
    let category = py.get_type::<PyRuntimeWarning>();
    let msg = format!(
        "perflab.span: a span name must be a str, not {}; using {:?}",
        name.get_type().name()?,
        shown.to_string_lossy()
    );
    let _ = PyErr::warn(
        py,
        &category,
        &std::ffi::CString::new(msg).unwrap_or_default(),
        2,
    );
    span(py, shown.as_any())
}
