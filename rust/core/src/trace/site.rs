//! Where a `with perflab.span(name):` block is entered from, and whether
//! its frame may go on the per-thread stack of sync spans instead of the
//! ContextVar (see `super`: setting and resetting a ContextVar costs
//! more than the rest of a span).
//!
//! A block may use the thread's stack only when nothing can suspend it
//! before it ends, so that the stack stays LIFO: its `__enter__` was called
//! by a `with` statement (the caller frame's current instruction is
//! `BEFORE_WITH`), and either the code object cannot be suspended at all
//! (`co_flags` without `CO_GENERATOR | CO_COROUTINE |
//! CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR`) or, in a coroutine or
//! generator, the block itself holds nothing that suspends the frame: no
//! `await`, `yield`, `async for` or `async with` on any path from the
//! statement to the block's end, normal or exceptional
//! (`perflab.trace.sites` reads it from the bytecode and the exception
//! table; any doubt is a no). A frame runs only on one thread and only one
//! task at a time runs on a thread, so no other task can run between such
//! a block's `__enter__` and `__exit__` but nested under it, and the same
//! frame calls `__exit__` before anything not nested in the block runs on
//! this thread. Everything else keeps the ContextVar: a block that spans an
//! `await` or a `yield` (`@contextmanager` included), and `__enter__`
//! called by other code — a wrapper class's `__enter__`,
//! `ExitStack.enter_context` — which may well be suspended by an `await` of
//! its own caller.
//!
//! The answer depends only on (code object, instruction offset), so it is
//! cached per thread in a direct-mapped table of [`SITES`] entries, each
//! holding a reference to its code object (so that its address is not
//! reused by another while cached); `perflab.trace.sites` keeps its answers
//! per code object too. The opcode number comes from the running
//! interpreter's `opcode.opmap`; where `BEFORE_WITH` does not exist
//! (CPython 3.14 compiles `with` differently) every block takes the
//! ContextVar path: slower, never wrong.

use std::cell::RefCell;
use std::ffi::c_int;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;

// Exported by CPython ≥ 3.11, outside the limited API that abi3 builds see.
extern "C" {
    fn PyFrame_GetLasti(frame: *mut ffi::PyFrameObject) -> c_int;
}

/// `co_flags` bits of code whose frames can be suspended (CPython's
/// `CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR`,
/// stable since 3.5).
const SUSPENDABLE: i64 = 0x20 | 0x80 | 0x100 | 0x200;
/// Entries of the per-thread cache of call sites (a power of two).
const SITES: usize = 256;

/// `BEFORE_WITH`'s opcode on this interpreter, or None.
static WITH_OPCODE: PyOnceLock<Option<u8>> = PyOnceLock::new();
/// `perflab.trace.sites.with_body_cannot_suspend`.
static WITH_BODY_CHECK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// One cached call site: a code object, an instruction offset, the answer.
struct Site {
    code: Py<PyAny>,
    lasti: c_int,
    on_stack: bool,
}

thread_local! {
    /// This thread's cache of call sites (empty until its first block).
    static CACHE: RefCell<Vec<Option<Site>>> = const { RefCell::new(Vec::new()) };
}

/// The caller's frame (a new reference) when the block being entered may
/// keep its frame on the thread's stack (see the module doc), else None.
/// Never raises: an error of any step means "use the ContextVar".
pub(crate) fn stack_block_caller(py: Python<'_>) -> Option<Py<PyAny>> {
    // SAFETY: the GIL is held; a borrowed reference or NULL (errors cleared).
    // The caller of a method of ours is the innermost Python frame: PyO3
    // methods push no frame of their own.
    let frame = unsafe { ffi::PyEval_GetFrame() };
    if frame.is_null() {
        return None;
    }
    // SAFETY: a live frame; PyFrame_GetCode returns a new, non-NULL reference.
    let code = unsafe { Bound::from_owned_ptr(py, ffi::PyFrame_GetCode(frame).cast()) };
    // SAFETY: a live frame.
    let lasti = unsafe { PyFrame_GetLasti(frame) };
    let key = code.as_ptr() as usize;
    let slot = ((key >> 4) ^ (lasti as usize).wrapping_mul(0x9e37_79b9)) & (SITES - 1);
    let cached = CACHE.with(|c| {
        let c = c.borrow();
        match c.get(slot) {
            Some(Some(s)) if s.code.as_ptr() as usize == key && s.lasti == lasti => {
                Some(s.on_stack)
            }
            _ => None,
        }
    });
    let on_stack = cached.unwrap_or_else(|| {
        let on_stack = decide(py, &code, lasti);
        let old = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.is_empty() {
                c.resize_with(SITES, || None);
            }
            c[slot].replace(Site {
                code: code.clone().unbind(),
                lasti,
                on_stack,
            })
        });
        // Outside the borrow: a code object's last reference may go here; as a
        // Bound, so that no decref is deferred to PyO3's pool (see `super::block`).
        drop(old.map(|site| site.code.into_bound(py)));
        on_stack
    });
    // SAFETY: `frame` is live (borrowed above); this takes a reference of our own.
    on_stack.then(|| unsafe { Bound::from_borrowed_ptr(py, frame.cast()) }.unbind())
}

/// True when the frame executing `code` at byte offset `lasti` is a `with`
/// statement's `BEFORE_WITH` that nothing can suspend before its block
/// ends: in code that cannot be suspended at all, or, in a coroutine or
/// generator, one whose block holds no `await`, `yield`, `async for` or
/// `async with` (`perflab.trace.sites`, from the bytecode).
fn decide(py: Python<'_>, code: &Bound<'_, PyAny>, lasti: c_int) -> bool {
    let Some(opcode) = *WITH_OPCODE.get_or_init(py, || with_opcode(py)) else {
        return false;
    };
    let Ok(flags) = code.getattr("co_flags").and_then(|f| f.extract::<i64>()) else {
        return false;
    };
    let Ok(bytes) = code.getattr("co_code") else {
        return false;
    };
    let Ok(bytes) = bytes.cast_into::<PyBytes>() else {
        return false;
    };
    let at_with = usize::try_from(lasti)
        .ok()
        .and_then(|i| bytes.as_bytes().get(i).copied())
        == Some(opcode);
    if !at_with || flags & SUSPENDABLE == 0 {
        return at_with;
    }
    let answer = WITH_BODY_CHECK
        .get_or_try_init(py, || {
            py.import("perflab.trace.sites")?
                .getattr("with_body_cannot_suspend")
                .map(Bound::unbind)
        })
        .and_then(|check| check.bind(py).call1((code, lasti))?.extract::<bool>());
    answer.unwrap_or(false) // any doubt (an error included): the ContextVar path
}

/// `opcode.opmap["BEFORE_WITH"]` of the running interpreter, or None.
fn with_opcode(py: Python<'_>) -> Option<u8> {
    let opmap = py.import("opcode").ok()?.getattr("opmap").ok()?;
    opmap.get_item("BEFORE_WITH").ok()?.extract().ok()
}
