//! `perflab.span(name)` and `Span.__enter__` / `Span.__exit__`
//! ([`Span`], the `with perflab.span(name):` block) as plain
//! C functions (`METH_O`, `METH_NOARGS`, `METH_FASTCALL`), added to the
//! module by [`add_span_function`] and installed on the type by [`install`]
//! in place of PyO3's: a PyO3 method's trampoline locks PyO3's pool of deferred
//! reference counts on every call (a mutex: two atomic operations), and
//! extracts arguments that `__exit__` ignores, which together cost about
//! as much as the rest of a stack block. Like the vectorcall of
//! [`super::call`], the code under these methods drops no `Py` (only
//! `Bound`s), so nothing is queued in that pool.
//!
//! The method descriptors check that `self` is a `Span` before calling
//! (`Span` has no subclasses), and a panic never unwinds into CPython: the
//! span is then not recorded and the block runs on.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyModule, PyType};

use super::span::{close_block, open_block, span, Span};

/// `__enter__()`: open a span of the block's name; returns the span itself.
unsafe extern "C" fn enter(slf: *mut ffi::PyObject, _: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython holds the GIL for every call; the descriptor passed a
    // live Span as `self`.
    let py = unsafe { Python::assume_attached() };
    let span = unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<Span>() };
    let _ = catch_unwind(AssertUnwindSafe(|| open_block(py, span.get())));
    // SAFETY: a live object; the new reference is the call's result.
    unsafe { ffi::Py_INCREF(slf) };
    slf
}

/// `__exit__(type, value, traceback)`: close the block's span; returns
/// False (an exception raised in the block propagates).
unsafe extern "C" fn exit(
    slf: *mut ffi::PyObject,
    _args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: as in `enter`.
    let py = unsafe { Python::assume_attached() };
    if nargs != 3 {
        let msg = c"perflab.span.__exit__ takes 3 arguments (type, value, traceback)";
        // SAFETY: the GIL is held; a static message.
        unsafe { ffi::PyErr_SetString(ffi::PyExc_TypeError, msg.as_ptr()) };
        return null_mut();
    }
    let span = unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<Span>() };
    let _ = catch_unwind(AssertUnwindSafe(|| close_block(py, span.get())));
    // SAFETY: Py_False is a live (immortal or held) object.
    unsafe {
        let f = ffi::Py_False();
        ffi::Py_INCREF(f);
        f
    }
}

/// Put the two methods on the `Span` type (called once, at module init).
pub(crate) fn install(tp: &Bound<'_, PyType>) -> PyResult<()> {
    // CPython keeps pointers into this table: it lives forever (one per process).
    let methods: &'static mut [ffi::PyMethodDef; 2] = Box::leak(Box::new([
        ffi::PyMethodDef {
            ml_name: c"__enter__".as_ptr(),
            ml_meth: ffi::PyMethodDefPointer { PyCFunction: enter },
            ml_flags: ffi::METH_NOARGS,
            ml_doc: c"Open the span; returns it.".as_ptr(),
        },
        ffi::PyMethodDef {
            ml_name: c"__exit__".as_ptr(),
            ml_meth: ffi::PyMethodDefPointer {
                PyCFunctionFast: exit,
            },
            ml_flags: ffi::METH_FASTCALL,
            ml_doc: c"Close the span and record it; returns False.".as_ptr(),
        },
    ]));
    for def in methods.iter_mut() {
        // SAFETY: a ready type object and a method table that outlives it.
        let descr = unsafe { ffi::PyDescr_NewMethod(tp.as_type_ptr(), def) };
        // SAFETY: a new reference or NULL with an exception set.
        let descr = unsafe { Bound::from_owned_ptr_or_err(tp.py(), descr) }?;
        // SAFETY: a static NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr(def.ml_name) };
        tp.setattr(name.to_str().unwrap_or_default(), descr)?;
    }
    Ok(())
}

/// `span(name)`: [`span`]'s result, or NULL with its error.
unsafe extern "C" fn span_function(
    _module: *mut ffi::PyObject,
    name: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython holds the GIL for every call; `name` is a live argument.
    let py = unsafe { Python::assume_attached() };
    let name = unsafe { Borrowed::from_ptr(py, name) };
    let made = catch_unwind(AssertUnwindSafe(|| span(py, &name)));
    match made {
        Ok(Ok(obj)) => obj.into_ptr(),
        Ok(Err(e)) => {
            e.restore(py);
            null_mut()
        }
        Err(_) => {
            let msg = c"perflab.span: internal error";
            // SAFETY: the GIL is held; a static message.
            unsafe { ffi::PyErr_SetString(ffi::PyExc_SystemError, msg.as_ptr()) };
            null_mut()
        }
    }
}

/// Add `span` to the module: a C function (see the module doc).
pub(crate) fn add_span_function(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // CPython keeps a pointer to this definition: it lives forever.
    let def: &'static mut ffi::PyMethodDef = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"span".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunction: span_function,
        },
        ml_flags: ffi::METH_O,
        ml_doc: c"span(name)\n--\n\nThe context manager of `with perflab.span(name):`: one \
reusable, stateless object per name (cached), recording each block's duration and self \
time (ns); while recording is off, one shared no-op. A name that is not a str is used \
as str(name) after a RuntimeWarning."
            .as_ptr(),
    }));
    let module_name = m.name()?;
    // SAFETY: a static definition, the module and its name (live).
    let f = unsafe { ffi::PyCFunction_NewEx(def, m.as_ptr(), module_name.as_ptr()) };
    // SAFETY: a new reference or NULL with an exception set.
    let f = unsafe { Bound::from_owned_ptr_or_err(m.py(), f) }?;
    m.add("span", f)
}
