//! `perflab.trace`'s recorder: one HdrHistogram of durations and one of
//! self times per span name, in bounded memory, with no lock on the path
//! that records.
//!
//! * Names are registered once (a decorator at import, a `span(name)` the
//!   first time it is seen) under a lock, and get a small id. At most
//!   `PERFLAB_TRACE_MAX_NAMES` names (default [`DEFAULT_MAX_NAMES`]) are
//!   kept; later names are counted under [`OVERFLOW_NAME`] (id 0).
//! * Each thread records into its own [`Shard`]: per name, two
//!   [`sparse::SparseHist`]s written with plain relaxed stores (no lock, no
//!   atomic read-modify-write). A shard is created, and listed, under a lock
//!   the first time a thread records.
//! * [`snapshot`] merges every shard into standard HdrHistograms (2
//!   significant digits, ns); shards of threads that have exited are folded
//!   into one retired total and freed (also whenever a new thread starts
//!   recording), so memory is bounded by live threads × names they used.
//! * [`reset`] keeps the current totals as a baseline that later snapshots
//!   subtract, so a reset never races with a writer.

pub mod sparse;

use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::hdr::{encode, summarize};
use sparse::{new_hdr, SparseHist};

/// Name under which spans beyond the cap of distinct names are counted.
pub const OVERFLOW_NAME: &str = "(other spans)";
/// Distinct span names kept when `PERFLAB_TRACE_MAX_NAMES` is not set.
pub const DEFAULT_MAX_NAMES: usize = 1000;
/// Upper bound of `PERFLAB_TRACE_MAX_NAMES`.
pub const MAX_MAX_NAMES: usize = 100_000;
/// Longest span name kept, bytes (longer ones are cut at a char boundary).
pub const MAX_NAME_BYTES: usize = 200;

/// Nanoseconds on CLOCK_MONOTONIC (the vDSO: no system call).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One name's two histograms on one thread.
#[derive(Default)]
struct Slot {
    duration: SparseHist,
    self_time: SparseHist,
}

/// One thread's recorder: a slot per name id, allocated on first use.
pub struct Shard {
    slots: Box<[AtomicPtr<Slot>]>,
}

impl Shard {
    fn new(names: usize) -> Self {
        Self {
            slots: (0..names)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
        }
    }

    /// Record one span; only the shard's own thread calls this.
    #[inline]
    fn record(&self, id: u32, duration_ns: u64, self_ns: u64) {
        let Some(cell) = self.slots.get(id as usize) else {
            return;
        };
        let mut ptr = cell.load(Acquire);
        if ptr.is_null() {
            ptr = Box::into_raw(Box::<Slot>::default());
            cell.store(ptr, Release);
        }
        // SAFETY: slots are freed only in Drop (`&mut self`).
        let slot = unsafe { &*ptr };
        slot.duration.record(duration_ns);
        slot.self_time.record(self_ns);
    }

    fn slot(&self, id: usize) -> Option<&Slot> {
        let ptr = self.slots.get(id)?.load(Acquire);
        // SAFETY: see `record`.
        (!ptr.is_null()).then(|| unsafe { &*ptr })
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        for cell in self.slots.iter() {
            let ptr = cell.swap(std::ptr::null_mut(), AcqRel);
            if !ptr.is_null() {
                // SAFETY: allocated by Box::into_raw in `record`, freed once.
                drop(unsafe { Box::from_raw(ptr) });
            }
        }
    }
}

/// Merged figures of one name: histograms (ns) and exact totals.
#[derive(Clone)]
struct Totals {
    duration: Histogram<u64>,
    self_time: Histogram<u64>,
    total_ns: u64,
    self_total_ns: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Self {
            duration: new_hdr(),
            self_time: new_hdr(),
            total_ns: 0,
            self_total_ns: 0,
        }
    }
}

impl Totals {
    fn add_slot(&mut self, slot: &Slot) {
        slot.duration.add_to(&mut self.duration);
        slot.self_time.add_to(&mut self.self_time);
        self.total_ns = self.total_ns.wrapping_add(slot.duration.total());
        self.self_total_ns = self.self_total_ns.wrapping_add(slot.self_time.total());
    }

    fn subtract(&mut self, o: &Totals) {
        let _ = self.duration.subtract(&o.duration);
        let _ = self.self_time.subtract(&o.self_time);
        self.total_ns = self.total_ns.wrapping_sub(o.total_ns);
        self.self_total_ns = self.self_total_ns.wrapping_sub(o.self_total_ns);
    }
}

struct Names {
    by_name: HashMap<String, u32>,
    list: Vec<String>,
    /// Names refused because the cap was reached (first few kept).
    refused: u64,
}

/// Every name, shard and total of the process.
pub struct Registry {
    /// Distinct names kept, the overflow name not included.
    pub max_names: usize,
    names: Mutex<Names>,
    shards: Mutex<Vec<Arc<Shard>>>,
    /// Merged counts of threads that have exited, by id.
    retired: Mutex<Vec<Totals>>,
    /// Totals at the last [`reset`], by id (subtracted by [`snapshot`]).
    baseline: Mutex<Vec<Totals>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The process's registry, created on first use with the cap read from
/// `PERFLAB_TRACE_MAX_NAMES` (a whole number in 1..=[`MAX_MAX_NAMES`];
/// anything else means the default).
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let max_names = std::env::var("PERFLAB_TRACE_MAX_NAMES")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| (1..=MAX_MAX_NAMES).contains(n))
            .unwrap_or(DEFAULT_MAX_NAMES);
        Registry::new(max_names)
    })
}

/// What [`Registry::register`] did with a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registered {
    /// The id to record under (0: the overflow name).
    pub id: u32,
    /// True when the name was refused because the cap was reached.
    pub overflowed: bool,
}

thread_local! {
    static SHARD: Arc<Shard> = registry().new_shard();
}

/// Record one span of name `id` on this thread: its duration and its self
/// time (the duration less its child spans'), ns. Lock-free; a no-op while
/// the thread is being torn down.
#[inline]
pub fn record(id: u32, duration_ns: u64, self_ns: u64) {
    let _ = SHARD.try_with(|s| s.record(id, duration_ns, self_ns));
}

impl Registry {
    /// An empty registry keeping at most `max_names` names.
    pub fn new(max_names: usize) -> Self {
        let mut by_name = HashMap::new();
        by_name.insert(OVERFLOW_NAME.to_string(), 0);
        Self {
            max_names,
            names: Mutex::new(Names {
                by_name,
                list: vec![OVERFLOW_NAME.to_string()],
                refused: 0,
            }),
            shards: Mutex::new(Vec::new()),
            retired: Mutex::new(Vec::new()),
            baseline: Mutex::new(Vec::new()),
        }
    }

    /// The id of `name`, registering it if new (names longer than
    /// [`MAX_NAME_BYTES`] are cut). Beyond the cap a new name gets the
    /// overflow id 0.
    pub fn register(&self, name: &str) -> Registered {
        let mut cut = name.len().min(MAX_NAME_BYTES);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let name = &name[..cut];
        let mut names = lock(&self.names);
        if let Some(&id) = names.by_name.get(name) {
            return Registered {
                id,
                overflowed: false,
            };
        }
        if names.list.len() > self.max_names {
            names.refused += 1;
            return Registered {
                id: 0,
                overflowed: true,
            };
        }
        let id = names.list.len() as u32;
        names.list.push(name.to_string());
        names.by_name.insert(name.to_string(), id);
        Registered {
            id,
            overflowed: false,
        }
    }

    /// Names registered, by id (id 0 is [`OVERFLOW_NAME`]).
    pub fn names(&self) -> Vec<String> {
        lock(&self.names).list.clone()
    }

    /// New names refused since start because the cap was reached.
    pub fn refused(&self) -> u64 {
        lock(&self.names).refused
    }

    /// A shard for a thread, listed for merging (dead shards folded first).
    pub fn new_shard(&self) -> Arc<Shard> {
        let shard = Arc::new(Shard::new(self.max_names + 1));
        let mut shards = lock(&self.shards);
        self.fold_dead(&mut shards);
        shards.push(shard.clone());
        shard
    }

    /// Fold the shards no thread holds any more into `retired` and free them.
    fn fold_dead(&self, shards: &mut Vec<Arc<Shard>>) {
        let (dead, live): (Vec<_>, Vec<_>) = std::mem::take(shards)
            .into_iter()
            .partition(|s| Arc::strong_count(s) == 1);
        *shards = live;
        if dead.is_empty() {
            return;
        }
        let mut retired = lock(&self.retired);
        for shard in &dead {
            for id in 0..shard.slots.len() {
                if let Some(slot) = shard.slot(id) {
                    if retired.len() <= id {
                        retired.resize_with(id + 1, Totals::default);
                    }
                    retired[id].add_slot(slot);
                }
            }
        }
    }

    /// Merged totals by id, since start (no baseline subtracted).
    fn merged(&self) -> Vec<Totals> {
        let mut shards = lock(&self.shards);
        self.fold_dead(&mut shards);
        let mut out = lock(&self.retired).clone();
        for shard in shards.iter() {
            for id in 0..shard.slots.len() {
                if let Some(slot) = shard.slot(id) {
                    if out.len() <= id {
                        out.resize_with(id + 1, Totals::default);
                    }
                    out[id].add_slot(slot);
                }
            }
        }
        out
    }

    /// Every name with at least one span since the last reset, in id order.
    pub fn snapshot(&self) -> Vec<SpanStats> {
        let mut merged = self.merged();
        let baseline = lock(&self.baseline);
        for (totals, base) in merged.iter_mut().zip(baseline.iter()) {
            totals.subtract(base);
        }
        let names = self.names();
        merged
            .into_iter()
            .enumerate()
            .filter(|(_, t)| !t.duration.is_empty())
            .map(|(id, t)| SpanStats {
                name: names.get(id).cloned().unwrap_or_default(),
                count: t.duration.len(),
                total_ns: t.total_ns,
                self_total_ns: t.self_total_ns,
                duration: t.duration,
                self_time: t.self_time,
            })
            .collect()
    }

    /// Start the next snapshots from zero (names stay registered).
    pub fn reset(&self) {
        let merged = self.merged();
        *lock(&self.baseline) = merged;
    }

    /// Slots allocated over live shards and their pages: the memory held,
    /// bytes (for tests and `snapshot`'s caller).
    pub fn memory_bytes(&self) -> usize {
        let shards = lock(&self.shards);
        shards
            .iter()
            .map(|s| {
                s.slots.len() * 8
                    + (0..s.slots.len())
                        .filter_map(|id| s.slot(id))
                        .map(|slot| {
                            std::mem::size_of::<Slot>()
                                + (slot.duration.pages_used() + slot.self_time.pages_used()) * 1024
                        })
                        .sum::<usize>()
            })
            .sum()
    }
}

/// Register `name` in the process's registry (see [`Registry::register`]).
pub fn register(name: &str) -> Registered {
    registry().register(name)
}

/// The process's spans (see [`Registry::snapshot`]).
pub fn snapshot() -> Vec<SpanStats> {
    registry().snapshot()
}

/// Reset the process's spans (see [`Registry::reset`]).
pub fn reset() {
    registry().reset();
}

/// One span name's merged figures.
pub struct SpanStats {
    pub name: String,
    /// Spans recorded.
    pub count: u64,
    /// Sum of their durations, ns (exact, not bucketed).
    pub total_ns: u64,
    /// Sum of their self times, ns.
    pub self_total_ns: u64,
    /// Durations, ns (HdrHistogram, 2 significant digits).
    pub duration: Histogram<u64>,
    /// Self times: duration less the durations of direct child spans, ns.
    pub self_time: Histogram<u64>,
}

/// A histogram of nanoseconds as Python and results files carry it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NsReport {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Standard V2-deflate encoding, base64 ([`crate::hdr::encode`]).
    pub encoded_b64: String,
}

impl NsReport {
    /// The summary and encoding of `h` (values in ns).
    pub fn of(h: &Histogram<u64>) -> Self {
        let s = summarize(h);
        Self {
            count: s.count,
            min_ns: s.min_us,
            mean_ns: s.mean_us,
            p50_ns: s.p50_us,
            p90_ns: s.p90_us,
            p99_ns: s.p99_us,
            p999_ns: s.p999_us,
            max_ns: s.max_us,
            encoded_b64: encode(h),
        }
    }
}

/// [`SpanStats`] as it crosses to Python.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpanReport {
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
    pub self_total_ns: u64,
    pub duration: NsReport,
    pub self_time: NsReport,
}

impl From<&SpanStats> for SpanReport {
    fn from(s: &SpanStats) -> Self {
        Self {
            name: s.name.clone(),
            count: s.count,
            total_ns: s.total_ns,
            self_total_ns: s.self_total_ns,
            duration: NsReport::of(&s.duration),
            self_time: NsReport::of(&s.self_time),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_beyond_the_cap_share_the_overflow_id() {
        let r = Registry::new(2);
        assert_eq!(r.register("a").id, 1);
        assert_eq!(r.register("b").id, 2);
        assert_eq!(r.register("a").id, 1);
        let c = r.register("c");
        assert_eq!((c.id, c.overflowed), (0, true));
        assert_eq!(r.refused(), 1);
        assert_eq!(r.names(), vec![OVERFLOW_NAME, "a", "b"]);
        let long = "é".repeat(MAX_NAME_BYTES);
        let r = Registry::new(5);
        let id = r.register(&long).id;
        assert_eq!(r.names()[id as usize].len(), MAX_NAME_BYTES);
    }

    #[test]
    fn threads_record_without_locks_and_merge_on_read() {
        let r = Arc::new(Registry::new(10));
        let id = r.register("work").id;
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let r = r.clone();
                std::thread::spawn(move || {
                    let shard = r.new_shard();
                    for i in 0..1000u64 {
                        shard.record(id, 1000 + t * 10 + i % 7, 400);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let snap = r.snapshot();
        assert_eq!(snap.len(), 1);
        assert_eq!(snap[0].name, "work");
        assert_eq!(snap[0].count, 4000);
        assert_eq!(snap[0].self_total_ns, 4000 * 400);
        // The threads have exited: their shards were folded and freed.
        assert!(lock(&r.shards).is_empty());
        assert_eq!(r.snapshot()[0].count, 4000);
    }

    #[test]
    fn reset_starts_from_zero_and_keeps_names() {
        let r = Registry::new(10);
        let shard = r.new_shard();
        let id = r.register("x").id;
        shard.record(id, 100, 100);
        r.reset();
        assert!(r.snapshot().is_empty());
        shard.record(id, 300, 200);
        let snap = r.snapshot();
        assert_eq!((snap[0].count, snap[0].total_ns), (1, 300));
        assert_eq!(r.register("x").id, id);
        let report = SpanReport::from(&snap[0]);
        // HdrHistogram reports a bucket's highest equivalent value.
        assert!((300..=302).contains(&report.duration.p50_ns), "{report:?}");
        assert!((200..=201).contains(&report.self_time.max_ns), "{report:?}");
    }

    #[test]
    fn memory_is_bounded_by_names_and_ranges() {
        let r = Registry::new(3);
        let shard = r.new_shard();
        for _ in 0..100_000 {
            shard.record(1, 5_000, 5_000);
        }
        let one = r.memory_bytes();
        for _ in 0..100_000 {
            shard.record(1, 5_000, 5_000);
        }
        assert_eq!(r.memory_bytes(), one);
        assert!(one < 8 * 1024, "{one}");
        shard.record(99, 1, 1); // an id beyond the shard is ignored
    }
}
