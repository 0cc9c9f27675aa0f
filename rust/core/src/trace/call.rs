//! `@perflab.trace` on a sync function: [`Traced`], a wrapper type called
//! by **vectorcall** (PEP 590), so a call builds no argument tuple nor
//! keyword dict: the caller's argument array is passed on to the function
//! as it is (`PyObject_Vectorcall`). PyO3 0.29 gives a `#[pyclass]` no
//! vectorcall (a call would go through `tp_call` with a tuple and a dict,
//! ~40 ns more), so the type is built here from the C API
//! (`PyType_FromSpec`), like `functools.partial` or Cython's functions:
//!
//! * `__vectorcalloffset__` and `Py_TPFLAGS_HAVE_VECTORCALL`: calls land in
//!   [`call`]; `tp_call` is `PyVectorcall_Call` (for callers with a tuple).
//! * `Py_TPFLAGS_METHOD_DESCRIPTOR` and a `__get__` that binds like a
//!   function's (`PyMethod_New`): `obj.method(x)` calls the wrapper with
//!   `obj` prepended, with no bound method made; `Class.method` is the
//!   wrapper itself; under `@classmethod` it binds the class and under
//!   `@staticmethod` nothing, as a function does.
//! * A `__dict__` (the decorator copies `__name__`, `__qualname__`,
//!   `__doc__`, `__module__` and the function's attributes into it), weak
//!   references, `__wrapped__` and `span_name`; GC support (a function may
//!   refer back to its wrapper through its globals).
//!
//! The flag bits and the three offsets are stable C ABI since CPython 3.8
//! (3.12 put them in the limited API), so the abi3 build keeps them on
//! every version it loads on. While recording is off a call costs one flag
//! check more than the function; while on it is a sync span
//! ([`sync_span`]).

use std::ffi::{c_int, c_uint, c_void};
use std::mem::offset_of;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::Ordering::Relaxed;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyType};

use super::frame::ENABLED;
use super::stack::sync_span;

// CPython's type flags (object.h), stable since 3.8/3.10; abi3 headers for
// 3.11 lack the first two.
const HAVE_VECTORCALL: c_uint = 1 << 11;
const METHOD_DESCRIPTOR: c_uint = 1 << 17;
const DISALLOW_INSTANTIATION: c_uint = 1 << 7;
const IMMUTABLETYPE: c_uint = 1 << 8;

// Exported by CPython ≥ 3.8 (limited API from 3.12 on), declared here
// because the abi3-py311 bindings leave them out.
extern "C" {
    fn PyObject_Vectorcall(
        callable: *mut ffi::PyObject,
        args: *const *mut ffi::PyObject,
        nargsf: usize,
        kwnames: *mut ffi::PyObject,
    ) -> *mut ffi::PyObject;
    fn PyVectorcall_Call(
        callable: *mut ffi::PyObject,
        tuple: *mut ffi::PyObject,
        dict: *mut ffi::PyObject,
    ) -> *mut ffi::PyObject;
    fn PyMethod_New(func: *mut ffi::PyObject, obj: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

/// The instance layout of `perflab._core.Traced`.
#[repr(C)]
struct Traced {
    ob_base: ffi::PyObject,
    /// Always [`call`]: what `__vectorcalloffset__` points at.
    vectorcall: Option<ffi::vectorcallfunc>,
    /// The wrapped function (NULL only after the GC cleared a cycle).
    func: *mut ffi::PyObject,
    /// The span name (a str).
    name: *mut ffi::PyObject,
    dict: *mut ffi::PyObject,
    weaklist: *mut ffi::PyObject,
    id: u32,
}

static TRACED_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A call of the wrapper: the function's result (NULL with its exception),
/// recorded as a sync span of the wrapper's name while recording is on.
unsafe extern "C" fn call(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this only with an instance of the type, which
    // the caller keeps alive for the call.
    let this = unsafe { &*callable.cast::<Traced>() };
    let func = this.func;
    if func.is_null() {
        // SAFETY: the GIL is held; a static message.
        unsafe {
            ffi::PyErr_SetString(
                ffi::PyExc_RuntimeError,
                c"perflab.trace: this wrapper was cleared by the garbage collector".as_ptr(),
            )
        };
        return null_mut();
    }
    // The caller's array (and its PY_VECTORCALL_ARGUMENTS_OFFSET permission)
    // is passed on as it is.
    // SAFETY: a live callable and the caller's valid vectorcall arguments.
    let forward = || unsafe { PyObject_Vectorcall(func, args, nargsf, kwnames) };
    // Python 3.11+ runs a Python-to-Python call in the same C frame, so a
    // plain recursion uses no C stack; a call through this wrapper takes a
    // C frame of the interpreter per level (~1–2 KiB), which overflowed the
    // thread's C stack (SIGSEGV) 20,000 levels deep under a raised recursion
    // limit. Near the end of the stack, the call goes on in a new segment
    // (`stacker`, as rustc does), so the traced program survives every depth
    // the untraced one does (Python's recursion limit still applies).
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
        if !ENABLED.load(Relaxed) {
            return forward();
        }
        record(this.id, forward)
    })
}

/// C stack kept free below a traced call before it continues in a new
/// segment: room for the function's own C calls (the interpreter, a C
/// extension) up to its next traced call.
const STACK_RED_ZONE: usize = 256 * 1024;
/// Size of each new C stack segment (freed when the call returns).
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Call `forward` as a sync span of `id`.
fn record(id: u32, forward: impl Fn() -> *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython holds the GIL for every call.
    let py = unsafe { Python::assume_attached() };
    // A panic must not unwind into CPython, nor change what the call returns:
    // the recording is skipped, the function's result (or exception) is
    // returned as it is, and a function not yet called is called unrecorded.
    let mut called = None;
    let _ = catch_unwind(AssertUnwindSafe(|| {
        sync_span(py, id, || called = Some(forward()))
    }));
    called.unwrap_or_else(forward)
}

/// `__get__`: the wrapper itself from the class, a bound method from an
/// instance (what a function's `__get__` does).
unsafe extern "C" fn descr_get(
    slf: *mut ffi::PyObject,
    instance: *mut ffi::PyObject,
    _owner: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: live objects from CPython; Py_None is immortal or held.
    unsafe {
        if instance.is_null() || instance == ffi::Py_None() {
            ffi::Py_INCREF(slf);
            return slf;
        }
        PyMethod_New(slf, instance)
    }
}

unsafe extern "C" fn traverse(
    slf: *mut ffi::PyObject,
    visit: ffi::visitproc,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: an instance of the type; its fields are NULL or live objects.
    unsafe {
        let this = &*slf.cast::<Traced>();
        for field in [this.func, this.name, this.dict] {
            if !field.is_null() {
                let r = visit(field, arg);
                if r != 0 {
                    return r;
                }
            }
        }
        // Instances of heap types hold their type (CPython ≥ 3.9).
        visit(ffi::Py_TYPE(slf).cast(), arg)
    }
}

unsafe extern "C" fn clear(slf: *mut ffi::PyObject) -> c_int {
    // SAFETY: an instance of the type; each field is set to NULL before its
    // reference is dropped, so code run by that drop never sees it.
    unsafe {
        let this = &mut *slf.cast::<Traced>();
        for field in [&mut this.func, &mut this.name, &mut this.dict] {
            let old = std::mem::replace(field, null_mut());
            ffi::Py_XDECREF(old);
        }
    }
    0
}

unsafe extern "C" fn dealloc(slf: *mut ffi::PyObject) {
    // SAFETY: the last reference to an instance of this heap type.
    unsafe {
        let tp = ffi::Py_TYPE(slf);
        ffi::PyObject_GC_UnTrack(slf.cast());
        if !(*slf.cast::<Traced>()).weaklist.is_null() {
            ffi::PyObject_ClearWeakRefs(slf);
        }
        clear(slf);
        let free = ffi::PyType_GetSlot(tp, ffi::Py_tp_free);
        let free: ffi::freefunc = std::mem::transmute(free);
        free(slf.cast());
        ffi::Py_DECREF(tp.cast());
    }
}

unsafe extern "C" fn get_wrapped(slf: *mut ffi::PyObject, _: *mut c_void) -> *mut ffi::PyObject {
    // SAFETY: an instance of the type.
    unsafe { new_ref((*slf.cast::<Traced>()).func) }
}

unsafe extern "C" fn get_span_name(slf: *mut ffi::PyObject, _: *mut c_void) -> *mut ffi::PyObject {
    // SAFETY: an instance of the type.
    unsafe { new_ref((*slf.cast::<Traced>()).name) }
}

/// A new reference to `obj`, or None for a cleared field.
unsafe fn new_ref(obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: `obj` is NULL or live; the GIL is held.
    unsafe {
        let obj = if obj.is_null() { ffi::Py_None() } else { obj };
        ffi::Py_INCREF(obj);
        obj
    }
}

/// `__reduce__`: pickled by reference, as a function is: the wrapper's
/// `__qualname__`, which pickle looks up in its `__module__` (and checks it
/// finds this very object), so a traced function can be sent to another
/// process (multiprocessing, `ProcessPoolExecutor`) and `copy` returns it.
unsafe extern "C" fn reduce(slf: *mut ffi::PyObject, _: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: the GIL is held; an instance of the type.
    let py = unsafe { Python::assume_attached() };
    let this = unsafe { Bound::from_borrowed_ptr(py, slf) };
    match this.getattr("__qualname__") {
        Ok(name) if name.is_instance_of::<PyString>() => name.into_ptr(),
        _ => {
            let shown = this
                .repr()
                .map_or_else(|_| "?".to_string(), |r| r.to_string());
            PyTypeError::new_err(format!(
                "cannot pickle {shown}: a traced function is pickled by reference, \
                 and it has no __qualname__ (str)"
            ))
            .restore(py);
            null_mut()
        }
    }
}

unsafe extern "C" fn repr(slf: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: the GIL is held; an instance of the type.
    let py = unsafe { Python::assume_attached() };
    let this = unsafe { &*slf.cast::<Traced>() };
    let shown = |o: *mut ffi::PyObject| -> PyResult<String> {
        // SAFETY: NULL or a live object.
        match unsafe { Bound::from_borrowed_ptr_or_opt(py, o) } {
            Some(o) => Ok(o.repr()?.to_string()),
            None => Ok("None".into()),
        }
    };
    match (shown(this.name), shown(this.func)) {
        (Ok(n), Ok(f)) => PyString::new(py, &format!("<perflab.trace {n} of {f}>")).into_ptr(),
        (Err(e), _) | (_, Err(e)) => {
            e.restore(py);
            null_mut()
        }
    }
}

/// The type object, made once (see the module doc).
fn traced_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    TRACED_TYPE
        .get_or_try_init(py, || {
            let member = |name: &'static std::ffi::CStr, offset: usize| ffi::PyMemberDef {
                name: name.as_ptr(),
                type_code: ffi::Py_T_PYSSIZET,
                offset: offset as ffi::Py_ssize_t,
                flags: ffi::Py_READONLY,
                doc: null_mut(),
            };
            // CPython keeps pointers into these tables: they live forever
            // (one per process, like the type).
            let members = Box::leak(Box::new([
                member(c"__vectorcalloffset__", offset_of!(Traced, vectorcall)),
                member(c"__dictoffset__", offset_of!(Traced, dict)),
                member(c"__weaklistoffset__", offset_of!(Traced, weaklist)),
                ffi::PyMemberDef::default(),
            ]));
            let getset =
                |name: &'static std::ffi::CStr, get: ffi::getter, doc: &'static std::ffi::CStr| {
                    ffi::PyGetSetDef {
                        name: name.as_ptr(),
                        get: Some(get),
                        set: None,
                        doc: doc.as_ptr(),
                        closure: null_mut(),
                    }
                };
            let getsets = Box::leak(Box::new([
                getset(c"__wrapped__", get_wrapped, c"The wrapped function."),
                getset(c"span_name", get_span_name, c"The span name."),
                ffi::PyGetSetDef {
                    name: c"__dict__".as_ptr(),
                    get: Some(ffi::PyObject_GenericGetDict),
                    set: Some(ffi::PyObject_GenericSetDict),
                    doc: null_mut(),
                    closure: null_mut(),
                },
                ffi::PyGetSetDef::default(),
            ]));
            let methods = Box::leak(Box::new([
                ffi::PyMethodDef {
                    ml_name: c"__reduce__".as_ptr(),
                    ml_meth: ffi::PyMethodDefPointer {
                        PyCFunction: reduce,
                    },
                    ml_flags: ffi::METH_NOARGS,
                    ml_doc: c"Pickled by reference (its __qualname__), as a function is.".as_ptr(),
                },
                ffi::PyMethodDef::zeroed(),
            ]));
            let slot = |slot: c_int, pfunc: *mut c_void| ffi::PyType_Slot { slot, pfunc };
            let vectorcall_call: unsafe extern "C" fn(_, _, _) -> _ = PyVectorcall_Call;
            let mut slots = [
                slot(ffi::Py_tp_call, vectorcall_call as *mut c_void),
                slot(ffi::Py_tp_descr_get, descr_get as *mut c_void),
                slot(ffi::Py_tp_traverse, traverse as *mut c_void),
                slot(ffi::Py_tp_clear, clear as *mut c_void),
                slot(ffi::Py_tp_dealloc, dealloc as *mut c_void),
                slot(ffi::Py_tp_repr, repr as *mut c_void),
                slot(ffi::Py_tp_members, members.as_mut_ptr().cast()),
                slot(ffi::Py_tp_getset, getsets.as_mut_ptr().cast()),
                slot(ffi::Py_tp_methods, methods.as_mut_ptr().cast()),
                slot(
                    ffi::Py_tp_doc,
                    c"A function traced by perflab.trace: each call is a span.".as_ptr()
                        as *mut c_void,
                ),
                slot(0, null_mut()),
            ];
            let mut spec = ffi::PyType_Spec {
                name: c"perflab._core.Traced".as_ptr(),
                basicsize: std::mem::size_of::<Traced>() as c_int,
                itemsize: 0,
                flags: ffi::Py_TPFLAGS_DEFAULT as c_uint
                    | ffi::Py_TPFLAGS_HAVE_GC as c_uint
                    | HAVE_VECTORCALL
                    | METHOD_DESCRIPTOR
                    | DISALLOW_INSTANTIATION
                    | IMMUTABLETYPE,
                slots: slots.as_mut_ptr(),
            };
            // SAFETY: a complete spec whose tables outlive the type.
            let tp = unsafe { ffi::PyType_FromSpec(&mut spec) };
            // SAFETY: a new reference or NULL with an exception set.
            let tp = unsafe { Bound::from_owned_ptr_or_err(py, tp) }?;
            Ok::<_, PyErr>(tp.cast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// traced(func, id, name) -> Traced: `func` wrapped so that each call is a
/// span of name id `id` (from `trace_register`) named `name`.
#[pyfunction]
fn traced(
    py: Python<'_>,
    func: Bound<'_, PyAny>,
    id: u32,
    name: Bound<'_, PyString>,
) -> PyResult<Py<PyAny>> {
    let tp = traced_type(py)?;
    // SAFETY: a ready heap type of ours; GenericAlloc zeroes the object,
    // takes a reference to the type and starts GC tracking (every field
    // NULL, which traverse skips).
    unsafe {
        let obj = ffi::PyType_GenericAlloc(tp.as_ptr().cast(), 0);
        let obj = Bound::from_owned_ptr_or_err(py, obj)?;
        let this = &mut *obj.as_ptr().cast::<Traced>();
        this.vectorcall = Some(call);
        this.func = func.into_ptr();
        this.name = name.into_ptr();
        this.id = id;
        Ok(obj.unbind())
    }
}

/// Add the type (`Traced`, for isinstance) and its constructor (`traced`).
pub fn register_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Traced", traced_type(m.py())?)?;
    m.add_function(wrap_pyfunction!(traced, m)?)
}
