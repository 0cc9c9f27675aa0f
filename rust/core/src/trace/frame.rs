//! A span's frame: [`Frame`], one running span as the ContextVar and a
//! sync entry's children see it (start, child time, links to its parent,
//! its request's [`Collector`] and the context's previous span), the
//! ContextVar that holds the current one ([`current`], [`set_current`]),
//! and the end of a ContextVar span ([`exit`]). The bottom of `trace/`: it
//! uses no other module of the folder (see `super` for the whole design).

use std::cell::{RefCell, UnsafeCell};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::Mutex;

use perflab_engine::trace;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Recording on or off (`PERFLAB_TRACE=0` turns it off at import).
pub(crate) static ENABLED: AtomicBool = AtomicBool::new(true);
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
    /// Drop the references now, as `Bound`s (see `super::block`).
    fn release(mut self, py: Python<'_>) {
        self.take(py);
    }

    /// Drop the references, the frames' through [`free_frames`].
    fn take(&mut self, py: Python<'_>) {
        drop(self.collector.take().map(|c| c.into_bound(py)));
        free_frames(py, [self.parent.take(), self.ctx_parent.take()]);
    }
}

impl Drop for Links {
    /// A frame being freed (by its `tp_dealloc`, the GIL held) drops the
    /// references it still has; nothing else drops a `Links` (see
    /// [`Links::release`]).
    fn drop(&mut self) {
        // SAFETY: a frame's links are dropped only when the frame is freed
        // (CPython's dealloc, with the GIL) or by `release` (GIL held).
        let py = unsafe { Python::assume_attached() };
        self.take(py);
    }
}

thread_local! {
    /// `(freeing, pending)`: frames whose last reference a freed frame held,
    /// freed one at a time by the outermost [`free_frames`].
    static FREEING: RefCell<(bool, Vec<Py<Frame>>)> = const { RefCell::new((false, Vec::new())) };
}

/// Drop references to `frames`, iteratively: freeing a frame frees the
/// parent and context parent it held the last reference to, and so on down
/// a chain as deep as the spans were nested (100,000 ContextVar spans
/// opened by hand, say). Dropped recursively, each level took a C frame of
/// CPython's dealloc and PyO3's and overflowed the C stack (SIGSEGV); here
/// a frame freed while another is being freed is queued, and the
/// outermost call frees the queue in a loop (as CPython's trashcan does).
fn free_frames<const N: usize>(py: Python<'_>, frames: [Option<Py<Frame>>; N]) {
    let queued = FREEING.try_with(|f| {
        let mut f = f.borrow_mut();
        f.1.extend(frames.iter().flatten().map(|p| p.clone_ref(py)));
        std::mem::replace(&mut f.0, true)
    });
    // Our own references go now: the queue holds those that matter.
    for p in frames.into_iter().flatten() {
        drop(p.into_bound(py));
    }
    match queued {
        Ok(false) => {}
        // An outer call frees the queue; or the thread is ending.
        _ => return,
    }
    while let Some(p) = FREEING.with(|f| f.borrow_mut().1.pop()) {
        drop(p.into_bound(py)); // may queue more: never recurses further
    }
    FREEING.with(|f| f.borrow_mut().0 = false);
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

/// Per-request sums of span durations by name (for Server-Timing): what a
/// [`Frame`] in a request adds its duration to (see `super::request`).
#[pyclass(module = "perflab._core", frozen)]
pub struct Collector {
    /// `(name id, total_ns, count)` in first-seen order.
    sums: Mutex<Vec<(u32, u64, u32)>>,
}

impl Collector {
    /// Empty sums.
    pub(crate) fn new() -> Self {
        Self {
            sums: Mutex::new(Vec::new()),
        }
    }

    /// Add one span's duration under its name id; past
    /// [`MAX_REQUEST_NAMES`] names, under the overflow name (id 0).
    pub(crate) fn add(&self, id: u32, duration_ns: u64) {
        let Ok(mut sums) = self.sums.lock() else {
            return;
        };
        if let Some(e) = sums.iter_mut().find(|e| e.0 == id) {
            e.1 += duration_ns;
            e.2 += 1;
        } else if sums.len() < MAX_REQUEST_NAMES {
            sums.push((id, duration_ns, 1));
        } else if let Some(e) = sums.iter_mut().find(|e| e.0 == 0) {
            e.1 += duration_ns;
            e.2 += 1;
        } else if let Some(last) = sums.last_mut() {
            *last = (0, last.1 + duration_ns, last.2 + 1);
        }
    }

    /// The sums so far: `(name id, total_ns, count)` in first-seen order
    /// (empty if a panic poisoned them).
    pub(crate) fn sums(&self) -> Vec<(u32, u64, u32)> {
        self.sums.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
