//! [`Resume`]: what a traced coroutine awaits instead of the coroutine it
//! wraps, so that a deep await chain never overflows the C stack.
//!
//! CPython 3.11 resumes an await chain recursively on the C stack: each
//! `await` of a coroutine is a C call into the interpreter, and a traced
//! coroutine adds a level of its own (the wrapper that times it). A traced
//! async recursion 20,000 deep overflowed an 8 MiB stack (SIGSEGV) where
//! the untraced one ran. `Resume` is the wrapped coroutine's iterator for
//! `await` (`__await__` returns itself; `send`, `throw`, `close` and
//! `__next__` are passed on to the coroutine, its `StopIteration` with the
//! return value included), and passes each one on inside
//! `stacker::maybe_grow`: near the end of the stack (256 KiB left) the rest
//! of the chain goes on in a new 4 MiB segment, freed when it returns, as
//! decorated sync calls do ([`super::call`]). So a traced program survives
//! every depth its untraced self does (3.12+ resumes coroutines without C
//! recursion, and the segments are never needed there).

use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// C stack kept free below a resumed coroutine before it goes on in a new
/// segment, bytes (as for decorated sync calls).
const STACK_RED_ZONE: usize = 256 * 1024;
/// Size of each new C stack segment, bytes.
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// `await Resume(coro)` is `await coro`, with each resumption of `coro` on
/// a C stack that has room (see the module's documentation).
#[pyclass(module = "perflab._core", frozen)]
pub struct Resume {
    coro: Py<PyAny>,
}

#[pymethods]
impl Resume {
    #[new]
    fn new(coro: Py<PyAny>) -> Self {
        Self { coro }
    }

    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.send(py, py.None())
    }

    /// `coro.send(value)`: its next yielded value; its return value as the
    /// `StopIteration` it raises.
    fn send(&self, py: Python<'_>, value: Py<PyAny>) -> PyResult<Py<PyAny>> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.coro.call_method1(py, "send", (value,))
        })
    }

    /// `coro.throw(...)` with the arguments given.
    #[pyo3(signature = (*args))]
    fn throw(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.coro.call_method1(py, "throw", args)
        })
    }

    /// `coro.close()`.
    fn close(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.coro.call_method0(py, "close")
    }
}
