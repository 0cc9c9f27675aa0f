//! The per-thread stack of sync spans (see `super`): decorated sync
//! calls and `with` blocks in code that cannot be suspended. Sync spans
//! nest strictly on a thread's C stack, so the stack stays LIFO.
//!
//! An entry is plain Rust data, not a Python object: its start, the child
//! time its sync children add to it, where its own duration goes when it
//! ends (the entry below it, a context span's [`Frame`], or nowhere) and
//! its request's [`Collector`]. A [`Frame`] is made for an entry only when
//! a span in the ContextVar (a block in a coroutine, a request) opens under
//! it and needs it as its parent ([`innermost`]); its child time is added
//! to the entry's when the entry ends. So a sync span allocates nothing
//! but its slot in the stack.
//!
//! The top entry is the innermost span when it was opened under the
//! current context's span (its *base*); else the context's span is.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use perflab_engine::trace::{self, now_ns};
use pyo3::ffi;
use pyo3::prelude::*;

use super::frame::{current, Collector, Frame};

/// The most sync spans open at once on one thread: a span opened deeper
/// (a recursion thousands of calls deep) is run unrecorded and counted in
/// [`DROPPED`], so the stack's memory stays bounded however deep the
/// traced code recurses.
pub(crate) const MAX_SYNC_DEPTH: usize = 10_000;

/// Spans not recorded because they opened deeper than [`MAX_SYNC_DEPTH`]
/// (all threads, since start or the last reset).
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Where a sync span's duration goes when it ends (its parent's child time).
enum Parent {
    None,
    /// The entry below it on this stack.
    Below,
    /// A span in the ContextVar.
    Frame(Py<Frame>),
}

/// A sync span running on this thread.
struct Entry {
    id: u32,
    /// Unique on this thread: what the end of a decorated call looks for.
    seq: u64,
    start_ns: u64,
    child_ns: u64,
    parent: Parent,
    collector: Option<Py<Collector>>,
    /// The current context's span when it was opened (compared by address;
    /// held, so the address is not reused meanwhile).
    base: Option<Py<Frame>>,
    /// A block's `with` frame (held, compared by address).
    caller: Option<Py<PyAny>>,
    /// Made when a context span opened under it ([`innermost`]).
    frame: Option<Py<Frame>>,
}

struct Stack {
    entries: Vec<Entry>,
    next_seq: u64,
}

thread_local! {
    /// The sync spans running on this thread, outermost first.
    static SYNC: RefCell<Stack> = const {
        RefCell::new(Stack { entries: Vec::new(), next_seq: 0 })
    };
}

impl Entry {
    /// Drop this entry's references now (as `Bound`s). Dropping a `Py` where
    /// PyO3 cannot tell the GIL is held (a vectorcall: no PyO3 trampoline)
    /// would queue its decref in PyO3's pool instead, behind a lock.
    fn release(self, py: Python<'_>) {
        if let Parent::Frame(p) = self.parent {
            drop(p.into_bound(py));
        }
        drop(self.collector.map(|c| c.into_bound(py)));
        drop(self.base.map(|b| b.into_bound(py)));
        drop(self.caller.map(|c| c.into_bound(py)));
        drop(self.frame.map(|f| f.into_bound(py)));
    }
}

impl Stack {
    /// Remove entry `i`, ended at `end_ns`, and record it: its duration and
    /// self time, its share of its parent's child time and of its request's
    /// sums. Returns it, to be dropped outside the borrow.
    fn finish(&mut self, i: usize, end_ns: u64) -> Entry {
        let e = self.entries.remove(i);
        let duration = end_ns.saturating_sub(e.start_ns);
        let child = e.child_ns
            + e.frame
                .as_ref()
                .map_or(0, |f| f.get().child_ns.load(Relaxed));
        match &e.parent {
            // Normally the new top; below `i` in any case (greenlets).
            Parent::Below => {
                if let Some(p) = i.checked_sub(1).and_then(|j| self.entries.get_mut(j)) {
                    p.child_ns += duration;
                }
            }
            Parent::Frame(p) => {
                p.get().child_ns.fetch_add(duration, Relaxed);
            }
            Parent::None => {}
        }
        trace::record(e.id, duration, duration.saturating_sub(child));
        if let Some(c) = &e.collector {
            c.get().add(e.id, duration);
        }
        e
    }
}

/// `(the current context's span, the innermost span)`: the innermost is the
/// top of this thread's sync stack when it was opened under the context's
/// current span (a [`Frame`] is made for it then, once), else that span.
pub(crate) fn innermost(py: Python<'_>) -> (Option<Bound<'_, Frame>>, Option<Bound<'_, Frame>>) {
    let ctx = current(py);
    let ctx_ptr = ctx.as_ref().map(Bound::as_ptr);
    let top = SYNC.with(|s| {
        let s = s.borrow();
        let top = s.entries.last()?;
        if top.base.as_ref().map(Py::as_ptr) != ctx_ptr {
            return None;
        }
        Some(match &top.frame {
            Some(f) => Ok(f.bind(py).clone()),
            None => Err((
                top.seq,
                top.id,
                top.start_ns,
                top.collector.as_ref().map(|c| c.clone_ref(py)),
            )),
        })
    });
    let top = match top {
        None => None,
        Some(Ok(frame)) => Some(frame),
        // Made outside the borrow: an allocation may run the GC.
        Some(Err((seq, id, start_ns, collector))) => {
            // No parent: the entry itself records where its time goes.
            let frame = Frame::new(py, id, start_ns, None, collector, None).ok();
            if let Some(f) = &frame {
                SYNC.with(|s| {
                    let mut s = s.borrow_mut();
                    if let Some(top) = s.entries.last_mut().filter(|t| t.seq == seq) {
                        top.frame = Some(f.clone().unbind());
                    }
                });
            }
            frame
        }
    };
    let inner = top.or_else(|| ctx.clone());
    (ctx, inner)
}

/// Open a sync span of `id` on this thread's stack (see the module doc);
/// `caller` is a block's `with` frame. Returns the entry's `seq`, or None
/// when the stack is [`MAX_SYNC_DEPTH`] deep (the span is then counted in
/// [`DROPPED`] and not recorded).
pub(crate) fn push_sync(py: Python<'_>, id: u32, caller: Option<Py<PyAny>>) -> Option<u64> {
    if depth() >= MAX_SYNC_DEPTH {
        DROPPED.fetch_add(1, Relaxed);
        drop(caller.map(|c| c.into_bound(py)));
        return None;
    }
    let ctx = current(py);
    Some(SYNC.with(|s| {
        let mut s = s.borrow_mut();
        let ctx_ptr = ctx.as_ref().map(Bound::as_ptr);
        let (parent, collector) = match s.entries.last() {
            Some(top) if top.base.as_ref().map(Py::as_ptr) == ctx_ptr => (
                Parent::Below,
                top.collector.as_ref().map(|c| c.clone_ref(py)),
            ),
            _ => match &ctx {
                Some(f) => (
                    Parent::Frame(f.clone().unbind()),
                    f.get().collector().map(|c| c.clone_ref(py)),
                ),
                None => (Parent::None, None),
            },
        };
        let seq = s.next_seq;
        s.next_seq += 1;
        s.entries.push(Entry {
            id,
            seq,
            start_ns: 0,
            child_ns: 0,
            parent,
            collector,
            base: ctx.map(Bound::unbind),
            caller,
            frame: None,
        });
        let top = s.entries.last_mut().expect("just pushed");
        top.start_ns = now_ns();
        seq
    }))
}

/// Close the block of `id` that the calling frame opened on this thread's
/// stack, ended at `end_ns`; false when there is none. Normally the top
/// entry; searched for, so that a stack switched under us (greenlets) never
/// pops someone else's.
pub(crate) fn pop_block(py: Python<'_>, id: u32, end_ns: u64) -> bool {
    if SYNC.with(|s| s.borrow().entries.is_empty()) {
        return false;
    }
    // SAFETY: the GIL is held; a borrowed reference or NULL. Called before
    // the borrow below: the frame object already exists, nothing runs.
    let here = unsafe { ffi::PyEval_GetFrame() }.cast::<ffi::PyObject>();
    let entry = SYNC.with(|s| {
        let mut s = s.borrow_mut();
        let i = s
            .entries
            .iter()
            .rposition(|e| e.id == id && e.caller.as_ref().is_some_and(|c| c.as_ptr() == here))?;
        Some(s.finish(i, end_ns))
    });
    entry.map(|e| e.release(py)).is_some() // outside the borrow
}

/// Run `call` as a sync span of `id` (see [`push_sync`]); unrecorded when
/// the stack is full.
pub(crate) fn sync_span<T>(py: Python<'_>, id: u32, call: impl FnOnce() -> T) -> T {
    let Some(seq) = push_sync(py, id, None) else {
        return call();
    };
    let out = call();
    let end = now_ns();
    // Normally the top; searched for (greenlets, as in `pop_block`).
    let entry = SYNC.with(|s| {
        let mut s = s.borrow_mut();
        let i = s.entries.iter().rposition(|e| e.seq == seq)?;
        Some(s.finish(i, end))
    });
    if let Some(e) = entry {
        e.release(py); // outside the borrow
    }
    out
}

/// How many sync spans (calls and blocks) are open on this thread's stack.
pub(crate) fn depth() -> usize {
    SYNC.with(|s| s.borrow().entries.len())
}
