//! Counting Python's allocations: every block and byte asked of the interpreter's
//! allocators, for `perflab run --memory`'s "allocated per op" (issue 28 §4).
//!
//! tracemalloc sees the memory still held and the peak, never the total a call
//! allocated and freed again (a loop allocating and freeing 1,000 × 1 KiB reads
//! "2.26 kB, 1 block" under it). So, as tracemalloc itself does, a hook is placed
//! in front of the `PYMEM_DOMAIN_MEM` and `PYMEM_DOMAIN_OBJ` allocators
//! (`PyMem_SetAllocator`, PEP 445): each `malloc`, `calloc` and `realloc` adds one
//! block and its size in bytes to two counters, then calls the allocator it
//! replaced. `PYMEM_DOMAIN_RAW` (called without the GIL, by the interpreter's own
//! internals) is not counted. A `realloc` counts as a new block of its new size,
//! as tracemalloc counts a resized block (BenchmarkDotNet's "Allocated" counts the
//! managed heap's allocations the same way: what was asked for, not what was kept).
//!
//! `PyMem_SetAllocator` is not in the limited API, so it is declared here: the
//! symbol is the running interpreter's, and `PyMemAllocatorEx`'s layout has been
//! the same since Python 3.5.

use std::os::raw::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;

#[repr(C)]
#[derive(Clone, Copy)]
struct PyMemAllocatorEx {
    ctx: *mut c_void,
    malloc: Option<unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void>,
    calloc: Option<unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void>,
    realloc: Option<unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> *mut c_void>,
    free: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
}

// SAFETY: the ctx pointers are the interpreter's allocator contexts, used only
// under the GIL (the MEM and OBJ domains require it).
unsafe impl Send for PyMemAllocatorEx {}

unsafe extern "C" {
    fn PyMem_GetAllocator(domain: i32, allocator: *mut PyMemAllocatorEx);
    fn PyMem_SetAllocator(domain: i32, allocator: *mut PyMemAllocatorEx);
}

/// `PYMEM_DOMAIN_MEM` and `PYMEM_DOMAIN_OBJ`.
const DOMAINS: [i32; 2] = [1, 2];

static BLOCKS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
/// The allocators replaced, per domain, while counting; None when not counting.
static SAVED: Mutex<Option<[PyMemAllocatorEx; 2]>> = Mutex::new(None);
/// The replaced allocators again, where the hooks read them (their `ctx`).
static mut ORIGINAL: [PyMemAllocatorEx; 2] = [EMPTY; 2];
const EMPTY: PyMemAllocatorEx = PyMemAllocatorEx {
    ctx: std::ptr::null_mut(),
    malloc: None,
    calloc: None,
    realloc: None,
    free: None,
};

fn count(bytes: usize) {
    BLOCKS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
}

unsafe extern "C" fn hook_malloc(ctx: *mut c_void, size: usize) -> *mut c_void {
    let orig = unsafe { &*(ctx as *const PyMemAllocatorEx) };
    count(size);
    unsafe { (orig.malloc.unwrap())(orig.ctx, size) }
}

unsafe extern "C" fn hook_calloc(ctx: *mut c_void, n: usize, size: usize) -> *mut c_void {
    let orig = unsafe { &*(ctx as *const PyMemAllocatorEx) };
    count(n.saturating_mul(size));
    unsafe { (orig.calloc.unwrap())(orig.ctx, n, size) }
}

unsafe extern "C" fn hook_realloc(ctx: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void {
    let orig = unsafe { &*(ctx as *const PyMemAllocatorEx) };
    count(size);
    unsafe { (orig.realloc.unwrap())(orig.ctx, ptr, size) }
}

unsafe extern "C" fn hook_free(ctx: *mut c_void, ptr: *mut c_void) {
    let orig = unsafe { &*(ctx as *const PyMemAllocatorEx) };
    unsafe { (orig.free.unwrap())(orig.ctx, ptr) }
}

/// Start counting allocations (a no-op when already counting).
///
/// Call it with tracemalloc stopped, and stop counting before tracemalloc starts:
/// each saves the allocator it finds and puts it back when stopped, so they must
/// not overlap.
///
/// Raises:
///     RuntimeError: tracemalloc is tracing (its hook would be lost on stop).
#[pyfunction]
fn alloc_count_start(py: Python<'_>) -> PyResult<()> {
    let tracing: bool = py
        .import("tracemalloc")?
        .call_method0("is_tracing")?
        .extract()?;
    if tracing {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "stop tracemalloc before counting allocations",
        ));
    }
    let mut saved = SAVED.lock().unwrap();
    if saved.is_some() {
        return Ok(());
    }
    let mut found = [EMPTY; 2];
    unsafe {
        for (i, domain) in DOMAINS.iter().enumerate() {
            PyMem_GetAllocator(*domain, &mut found[i]);
        }
        let original = &raw mut ORIGINAL;
        (*original) = found;
        for (i, domain) in DOMAINS.iter().enumerate() {
            let mut hook = PyMemAllocatorEx {
                ctx: (&raw mut (*original)[i]) as *mut c_void,
                malloc: Some(hook_malloc),
                calloc: Some(hook_calloc),
                realloc: Some(hook_realloc),
                free: Some(hook_free),
            };
            PyMem_SetAllocator(*domain, &mut hook);
        }
    }
    *saved = Some(found);
    Ok(())
}

/// Stop counting: put the allocators found at start back (a no-op when not counting).
#[pyfunction]
fn alloc_count_stop() {
    let mut saved = SAVED.lock().unwrap();
    if let Some(mut found) = saved.take() {
        unsafe {
            for (i, domain) in DOMAINS.iter().enumerate() {
                PyMem_SetAllocator(*domain, &mut found[i]);
            }
        }
    }
}

/// (blocks, bytes) allocated since counting first started in this process: both
/// cumulative counters; take differences around the code measured.
#[pyfunction]
fn alloc_count_read() -> (u64, u64) {
    (
        BLOCKS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    )
}

/// Add this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(alloc_count_start, m)?)?;
    m.add_function(wrap_pyfunction!(alloc_count_stop, m)?)?;
    m.add_function(wrap_pyfunction!(alloc_count_read, m)?)
}
