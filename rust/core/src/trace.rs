//! Bindings of `perflab.trace`: the hot path of every traced call.
//!
//! * `Traced` ([`crate::trace_call`]) wraps a function: a vectorcall reads
//!   the clock, calls it, reads the clock and records, all without a Python
//!   frame of its own.
//! * [`Span`] is the `with perflab.span(name):` context manager, stateless
//!   (one object per name, cached by [`span`]), so it can be reused,
//!   nested and shared between threads.
//! * The span being run is kept in a `contextvars.ContextVar` as a
//!   [`Frame`], so nesting follows the call stack in threads and in
//!   asyncio tasks alike (each task has its own context): a child adds its
//!   duration to its parent's `child_ns`, and the parent records
//!   `duration − child_ns` as its self time.
//! * A sync `Traced` call does not touch the ContextVar (setting and
//!   resetting one costs ~170 ns): it pushes an entry (plain data, see
//!   [`crate::trace_stack`]) on a per-thread stack, with the ContextVar's
//!   value at the time as its *base*. Sync
//!   calls nest strictly on a thread's C stack (no task can switch in the
//!   middle of one), so the stack stays LIFO; the innermost span is its top
//!   when the current context's span is still that top's base, else the
//!   context's span ([`innermost`]). So does a block entered by a `with`
//!   statement that nothing can suspend before it ends (in a plain
//!   function, or in a coroutine or generator when the block holds no
//!   `await` or `yield`: [`crate::trace_site`]); its entry also holds the
//!   caller's frame, which `__exit__` matches. A block that spans an
//!   `await` or a `yield`, one entered by other code than a `with`
//!   statement, a decorated coroutine or a request is set in the
//!   ContextVar, its parent being the innermost span, sync or not.
//!   (Greenlets that switch stacks inside a sync span can mis-attribute
//!   self time; durations stay right.)
//! * A [`Request`] (the Server-Timing middleware's) is a root frame with a
//!   [`Collector`]: every span under it also adds its duration, by name,
//!   to that request's sums.
//!
//! Recording itself is the engine's ([`perflab_engine::trace`]): lock-free
//! per-thread HdrHistograms merged on read. Nothing here raises into the
//! traced code: a failure of the recorder skips the recording.

use std::cell::{RefCell, UnsafeCell};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};

use perflab_engine::trace::{self, now_ns, SpanReport, OVERFLOW_NAME};
use pyo3::exceptions::{PyRuntimeWarning, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

use crate::convert::to_py;
use crate::trace_request::{Collector, Request};
use crate::trace_site::stack_block_caller;
use crate::trace_stack::{innermost, pop_block, push_sync};

/// Recording on or off (`PERFLAB_TRACE=0` turns it off at import).
pub(crate) static ENABLED: AtomicBool = AtomicBool::new(true);
/// The warning about the cap on names was given.
static WARNED_CAP: AtomicBool = AtomicBool::new(false);
/// Most distinct names one request's Server-Timing sums keep.
pub(crate) const MAX_REQUEST_NAMES: usize = 64;

static FRAME_VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

// The contextvars C API (CPython ≥ 3.7). It is outside the limited API that
// abi3 builds see, though every CPython exports it, so it is declared here.
#[allow(non_snake_case)]
pub(crate) mod cv {
    use pyo3::ffi::PyObject;
    use std::ffi::{c_char, c_int};
    extern "C" {
        pub fn PyContextVar_New(name: *const c_char, def: *mut PyObject) -> *mut PyObject;
        pub fn PyContextVar_Get(
            var: *mut PyObject,
            default_value: *mut PyObject,
            value: *mut *mut PyObject,
        ) -> c_int;
        pub fn PyContextVar_Set(var: *mut PyObject, value: *mut PyObject) -> *mut PyObject;
    }
}
static SPANS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

pub(crate) fn frame_var(py: Python<'_>) -> *mut ffi::PyObject {
    FRAME_VAR
        .get_or_init(py, || {
            // SAFETY: a C string literal and no default: PyContextVar_New
            // returns a new reference (or NULL on memory exhaustion, which
            // from_owned_ptr would not accept: panic is the only way out).
            unsafe {
                Bound::from_owned_ptr(
                    py,
                    cv::PyContextVar_New(c"perflab.trace.frame".as_ptr(), null_mut()),
                )
                .unbind()
            }
        })
        .as_ptr()
}

/// The innermost span running in the current context, if any: the
/// ContextVar's frame, or the nearest of its `ctx_parent`s that is still
/// open (an ended span stays in the ContextVar: see [`Frame`]).
pub(crate) fn current(py: Python<'_>) -> Option<Bound<'_, Frame>> {
    let mut value = null_mut();
    // SAFETY: the var is a ContextVar; `value` receives a new reference.
    if unsafe { cv::PyContextVar_Get(frame_var(py), null_mut(), &mut value) } < 0 {
        let _ = PyErr::take(py);
        return None;
    }
    // SAFETY: a new reference or NULL; only Frames are ever set.
    let mut frame: Bound<'_, Frame> =
        unsafe { Bound::from_owned_ptr_or_opt(py, value).map(|v| v.cast_into_unchecked()) }?;
    while frame.get().closed.load(Relaxed) {
        frame = frame.get().ctx_parent()?.bind(py).clone();
    }
    Some(frame)
}

/// Make `frame` the current context's span (its `ctx_parent` must be the
/// span current until now).
///
/// Errors: the context could not be changed (memory exhausted).
pub(crate) fn set_current(py: Python<'_>, frame: &Bound<'_, Frame>) -> PyResult<()> {
    // SAFETY: a ContextVar and a live object; returns a new reference (the
    // token, which a span never needs: see `Frame`) or NULL.
    let token = unsafe { cv::PyContextVar_Set(frame_var(py), frame.as_ptr()) };
    if token.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: our new reference.
    unsafe { ffi::Py_DECREF(token) };
    Ok(())
}

/// One running span: what its children and its own end need.
///
/// A span in the ContextVar (a block that spans an `await`, a request) is
/// set when it opens, and not reset when it ends (a reset would be a second
/// update of the context's mapping): it is marked `closed`, and [`current`] looks past it
/// to the span that was current when it opened (`ctx_parent`). So a span
/// ended in another context than it was opened in (a generator, a
/// callback), or out of order (two async generators), never disturbs the
/// context it was opened in. An ended span stays referenced by its context
/// until the next one is set there or the context is freed: one chain of
/// frames per context at most.
///
/// Frames are reused ([`Frame::new`]): each thread keeps the first
/// [`FRAMES_KEPT`] frames it makes, and remakes one in place once nothing
/// but that list refers to it (its reference count is 1), which saves an
/// allocation, and a deallocation through PyO3's (which locks PyO3's pool
/// of deferred reference counts), per span. A kept frame holds on to its
/// last links (frames and a request's sums: Rust data) until remade.
#[pyclass(module = "perflab._core", frozen)]
pub struct Frame {
    id: AtomicU32,
    pub(crate) start_ns: AtomicU64,
    pub(crate) child_ns: AtomicU64,
    /// Written only by [`Frame::new`] remaking a frame that nothing else
    /// refers to (see there); read through [`Frame::links`].
    links: UnsafeCell<Links>,
    /// Ended ([`current`] looks past it).
    pub(crate) closed: AtomicBool,
}

// SAFETY: every field but `links` is atomic; `links` is written only while
// the GIL is held and the frame is referred to by nothing but this thread's
// list of kept frames (reference count 1): then no other thread, object or
// borrow can be reading it (see `Frame::new`).
unsafe impl Sync for Frame {}

/// A frame's references to other objects.
struct Links {
    /// Where its duration goes when it ends (its parent's child time).
    parent: Option<Py<Frame>>,
    collector: Option<Py<Collector>>,
    /// The context's span when this one was set in the ContextVar.
    ctx_parent: Option<Py<Frame>>,
}

impl Links {
    /// Drop the references now, as `Bound`s (see `trace_block`).
    fn release(self, py: Python<'_>) {
        drop(self.parent.map(|p| p.into_bound(py)));
        drop(self.collector.map(|c| c.into_bound(py)));
        drop(self.ctx_parent.map(|p| p.into_bound(py)));
    }
}

/// Frames kept per thread for reuse (see [`Frame`]).
const FRAMES_KEPT: usize = 8;

thread_local! {
    /// The frames this thread keeps for reuse.
    static KEPT: RefCell<Vec<Py<Frame>>> = const { RefCell::new(Vec::new()) };
}

impl Frame {
    /// A new open frame of `id` started at `start_ns`, under `parent`, in
    /// `collector`'s request, set over `ctx_parent` (None when it is never
    /// set in the ContextVar): a kept frame remade, else a new one.
    ///
    /// Errors: memory exhausted.
    pub(crate) fn new<'py>(
        py: Python<'py>,
        id: u32,
        start_ns: u64,
        parent: Option<Py<Frame>>,
        collector: Option<Py<Collector>>,
        ctx_parent: Option<Bound<'py, Frame>>,
    ) -> PyResult<Bound<'py, Frame>> {
        let links = Links {
            parent,
            collector,
            ctx_parent: ctx_parent.map(Bound::unbind),
        };
        let free = KEPT.with(|k| {
            let k = k.borrow();
            // SAFETY: live objects; the GIL is held.
            let free = k
                .iter()
                .find(|f| unsafe { ffi::Py_REFCNT(f.as_ptr()) } == 1);
            free.map(|f| f.bind(py).clone())
        });
        if let Some(frame) = free {
            let f = frame.get();
            // SAFETY: its reference count was 1 (the list's) and the GIL has
            // been held since: only the list and `frame` refer to it, so
            // nothing else can be reading its links.
            let old = std::mem::replace(unsafe { &mut *f.links.get() }, links);
            f.id.store(id, Relaxed);
            f.start_ns.store(start_ns, Relaxed);
            f.child_ns.store(0, Relaxed);
            f.closed.store(false, Relaxed);
            old.release(py); // may free other frames: after the borrow
            return Ok(frame);
        }
        let frame = Bound::new(
            py,
            Frame {
                id: AtomicU32::new(id),
                start_ns: AtomicU64::new(start_ns),
                child_ns: AtomicU64::new(0),
                links: UnsafeCell::new(links),
                closed: AtomicBool::new(false),
            },
        )?;
        KEPT.with(|k| {
            let mut k = k.borrow_mut();
            if k.len() < FRAMES_KEPT {
                k.push(frame.clone().unbind());
            }
        });
        Ok(frame)
    }

    fn links(&self) -> &Links {
        // SAFETY: see `unsafe impl Sync for Frame`: whoever reads a frame
        // refers to it, so it is not being remade.
        unsafe { &*self.links.get() }
    }

    /// The span's name id.
    pub(crate) fn id(&self) -> u32 {
        self.id.load(Relaxed)
    }

    /// Where its duration goes when it ends (its parent's child time).
    pub(crate) fn parent(&self) -> Option<&Py<Frame>> {
        self.links().parent.as_ref()
    }

    /// The sums of the request it runs in, if any.
    pub(crate) fn collector(&self) -> Option<&Py<Collector>> {
        self.links().collector.as_ref()
    }

    /// The context's span when this one was set in the ContextVar.
    pub(crate) fn ctx_parent(&self) -> Option<&Py<Frame>> {
        self.links().ctx_parent.as_ref()
    }
}

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
        drop(e.into_value(py).into_bound(py)); // as a Bound: see trace_block
        return None;
    }
    frame.get().start_ns.store(now_ns(), Relaxed);
    Some(frame)
}

/// Close `frame` (a span in the ContextVar) at `end_ns`: mark it ended (the
/// context's current span is its `ctx_parent` again) and record its
/// duration and self time. Returns the duration, ns.
pub(crate) fn exit(frame: &Bound<'_, Frame>, end_ns: u64) -> u64 {
    let f = frame.get();
    f.closed.store(true, Relaxed);
    finish(f, end_ns)
}

/// Record `f`, ended at `end_ns`: its duration and self time, its share of
/// its parent's child time and of the request's sums. Returns the duration.
fn finish(f: &Frame, end_ns: u64) -> u64 {
    let duration = end_ns.saturating_sub(f.start_ns.load(Relaxed));
    let self_ns = duration.saturating_sub(f.child_ns.load(Relaxed));
    if let Some(parent) = f.parent() {
        parent.get().child_ns.fetch_add(duration, Relaxed);
    }
    trace::record(f.id(), duration, self_ns);
    if let Some(c) = f.collector() {
        c.get().add(f.id(), duration);
    }
    duration
}

/// `with perflab.span("name"):` — one reusable object per name. Its
/// `__enter__` and `__exit__` are C methods ([`crate::trace_block`]) that
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
            Some(caller) => {
                push_sync(py, span.id, Some(caller));
            }
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
fn register(py: Python<'_>, name: &str) -> u32 {
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

/// Register a span name: `(id, overflowed)`; id 0 is the overflow name.
///
/// Raises:
///     TypeError: the name is not a str.
#[pyfunction]
fn trace_register(py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<(u32, bool)> {
    let text = name.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "a span name must be a str, not {}",
            name.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })?;
    let id = register(py, &text.to_string_lossy());
    Ok((id, id == 0))
}

/// span(name) -> Span: the context manager of `with perflab.span(name):`.
///
/// One reusable, stateless object per name (cached). Leaving the block records
/// its duration and self time (ns: the duration less its direct child spans'),
/// also when the block raises. While recording is off, one shared no-op
/// ([`OffSpan`]). A name that is not a str is used as `str(name)` after a
/// RuntimeWarning: never an exception in the traced code. Called by the C
/// function `_core.span` ([`crate::trace_block`]).
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

/// Record one finished span from elsewhere (the OpenTelemetry bridge):
/// its duration and self time, ns; also added to the Server-Timing sums
/// of the request running in the current context, if any.
#[pyfunction]
fn trace_record(py: Python<'_>, id: u32, duration_ns: u64, self_ns: u64) {
    if !ENABLED.load(Relaxed) {
        return;
    }
    trace::record(id, duration_ns, self_ns.min(duration_ns));
    if let Some(frame) = innermost(py).1 {
        if let Some(c) = frame.get().collector() {
            c.get().add(id, duration_ns);
        }
    }
}

/// How many sync spans (calls and blocks) are open on this thread's stack,
/// the rest being in the ContextVar: what tests check the fast path with.
#[pyfunction]
fn trace_sync_depth() -> usize {
    crate::trace_stack::depth()
}

/// Turn recording on or off; returns the previous state.
#[pyfunction]
fn trace_enable(on: bool) -> bool {
    ENABLED.swap(on, Relaxed)
}

/// Whether recording is on.
#[pyfunction]
fn trace_enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Every span name with at least one span since the last reset: a list of
/// dicts {name, count, total_ns, self_total_ns, duration, self_time}, the
/// histograms as {count, min_ns, mean_ns, p50_ns, p90_ns, p99_ns, p999_ns,
/// max_ns, encoded_b64} (HdrHistogram V2-deflate, ns, 2 significant
/// digits). Merging runs with the GIL released.
#[pyfunction]
fn trace_snapshot(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let reports: Vec<SpanReport> =
        py.detach(|| trace::snapshot().iter().map(SpanReport::from).collect());
    to_py(py, &reports)
}

/// Start the next snapshots from zero (names stay registered).
#[pyfunction]
fn trace_reset(py: Python<'_>) {
    py.detach(trace::reset);
}

/// `(max_names, refused)`: the cap on distinct names and how many new
/// names were refused because of it.
#[pyfunction]
fn trace_limits() -> (usize, u64) {
    let r = trace::registry();
    (r.max_names, r.refused())
}

/// Add this module's functions and classes.
pub fn register_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::trace_call::register_module(m)?;
    m.add_class::<Span>()?;
    crate::trace_block::install(&m.py().get_type::<Span>())?;
    m.add_class::<OffSpan>()?;
    m.add_class::<Request>()?;
    crate::trace_block::add_span_function(m)?;
    m.add_function(wrap_pyfunction!(trace_register, m)?)?;
    m.add_function(wrap_pyfunction!(trace_record, m)?)?;
    m.add_function(wrap_pyfunction!(trace_enable, m)?)?;
    m.add_function(wrap_pyfunction!(trace_sync_depth, m)?)?;
    m.add_function(wrap_pyfunction!(trace_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(trace_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(trace_reset, m)?)?;
    m.add_function(wrap_pyfunction!(trace_limits, m)?)?;
    // Timing figures of a debug build mean nothing: benchmarks/trace.py checks this.
    m.add("trace_debug_build", cfg!(debug_assertions))
}
