//! A single-writer HdrHistogram with atomic counts and pages allocated on
//! first use: the per-thread recorder of one span name.
//!
//! Geometry: HdrHistogram's with 2 significant digits and a unit of 1 ns
//! (256 sub-buckets; every value below 256 ns has its own count, above
//! that each power of two is split into 128 equal buckets, a relative
//! error of at most 1/128 = 0.8%). Each power of two is one page of 128
//! counts (1 KiB), allocated the first time a value falls in it, so a span
//! whose durations stay within three decades holds about 10 KiB, and no
//! span more than [`PAGES`] KiB, however many values it records.
//!
//! One thread writes (relaxed load + store of its own counters: no lock,
//! no read-modify-write); any thread reads, at any time, with relaxed
//! loads. A reader may see a record half done (its count without its
//! total); the next read sees it whole.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::*};

use hdrhistogram::Histogram;

/// Counts per page: one power of two, split in 128.
const PAGE: usize = 128;
/// Largest value recorded, ns (2^52 ns: 52 days); larger ones are counted
/// as this (the total keeps their exact sum), so that every histogram stays
/// within the bounds of perflab's decoder of results files (2^53).
pub const MAX_VALUE: u64 = 1 << 52;
/// Pages: values below 128, then one per power of two from 2^7 to 2^52.
pub const PAGES: usize = 47;
/// Significant digits of the geometry (HdrHistogram's own parameter).
pub const SIGFIG: u8 = 2;

type Page = [AtomicU64; PAGE];

/// Page and slot of `value`: page 0 holds 0..127 exactly; page p ≥ 1 holds
/// [128·2^(p−1), 256·2^(p−1)) in 128 equal buckets.
#[inline]
fn index(value: u64) -> (usize, usize) {
    if value < PAGE as u64 {
        return (0, value as usize);
    }
    let shift = 63 - value.leading_zeros() as usize - 7;
    (shift + 1, (value >> shift) as usize - PAGE)
}

/// The lowest value of a bucket: what [`SparseHist::to_hdr`] records.
fn value_at(page: usize, slot: usize) -> u64 {
    if page == 0 {
        slot as u64
    } else {
        ((slot + PAGE) as u64) << (page - 1)
    }
}

/// One span name's counts on one thread (see the module's doc).
pub struct SparseHist {
    pages: [AtomicPtr<Page>; PAGES],
    /// Sum of the recorded values (ns): the exact total, not bucketed.
    total: AtomicU64,
}

impl Default for SparseHist {
    fn default() -> Self {
        Self {
            pages: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            total: AtomicU64::new(0),
        }
    }
}

impl Drop for SparseHist {
    fn drop(&mut self) {
        for p in &self.pages {
            let ptr = p.swap(std::ptr::null_mut(), AcqRel);
            if !ptr.is_null() {
                // SAFETY: allocated by Box::into_raw in `page_for`, freed once.
                drop(unsafe { Box::from_raw(ptr) });
            }
        }
    }
}

impl SparseHist {
    /// Record `value` (ns). Must be called by this histogram's one writer
    /// thread only; allocates 1 KiB the first time a power of two is hit.
    #[inline]
    pub fn record(&self, value: u64) {
        let (page, slot) = index(value.min(MAX_VALUE));
        let cell = &self.page_for(page)[slot];
        cell.store(cell.load(Relaxed) + 1, Relaxed);
        self.total
            .store(self.total.load(Relaxed).wrapping_add(value), Relaxed);
    }

    #[inline]
    fn page_for(&self, page: usize) -> &Page {
        let ptr = self.pages[page].load(Acquire);
        let ptr = if ptr.is_null() {
            let fresh: Box<Page> = Box::new(std::array::from_fn(|_| AtomicU64::new(0)));
            let fresh = Box::into_raw(fresh);
            self.pages[page].store(fresh, Release);
            fresh
        } else {
            ptr
        };
        // SAFETY: pages are only freed in Drop, which has `&mut self`.
        unsafe { &*ptr }
    }

    /// Pages allocated (each [`PAGE`] counts of 8 bytes).
    pub fn pages_used(&self) -> usize {
        self.pages
            .iter()
            .filter(|p| !p.load(Relaxed).is_null())
            .count()
    }

    /// Sum of recorded values, ns.
    pub fn total(&self) -> u64 {
        self.total.load(Relaxed)
    }

    /// Add these counts into `out` (an HdrHistogram of [`SIGFIG`] digits,
    /// auto-resizing): every bucket lands in the same bucket of `out`.
    pub fn add_to(&self, out: &mut Histogram<u64>) {
        for (p, page) in self.pages.iter().enumerate() {
            let ptr = page.load(Acquire);
            if ptr.is_null() {
                continue;
            }
            // SAFETY: see `page_for`.
            let counts = unsafe { &*ptr };
            for (s, c) in counts.iter().enumerate() {
                let n = c.load(Relaxed);
                if n > 0 {
                    let _ = out.record_n(value_at(p, s), n);
                }
            }
        }
    }
}

/// A new empty histogram of the geometry [`SparseHist`] merges into.
pub fn new_hdr() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("2 significant digits is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_matches_hdrhistogram_buckets() {
        let mut reference = new_hdr();
        for v in [
            0u64,
            1,
            127,
            128,
            255,
            256,
            257,
            1000,
            123_456,
            1 << 40,
            MAX_VALUE,
        ] {
            assert!(index(v).0 < PAGES);
            let (p, s) = index(v);
            let low = value_at(p, s);
            assert!(low <= v, "{v}: {low}");
            assert!(
                reference.equivalent(low, v),
                "{v} and {low} are not in one HdrHistogram bucket"
            );
            reference.reset();
        }
    }

    #[test]
    fn merged_percentiles_and_totals_are_exact_to_the_bucket() {
        let h = SparseHist::default();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        let mut out = new_hdr();
        h.add_to(&mut out);
        assert_eq!(out.len(), 10_000);
        assert_eq!(h.total(), 10_000 * 10_001 / 2);
        let p50 = out.value_at_quantile(0.5) as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.01, "{p50}");
        let p99 = out.value_at_quantile(0.99) as f64;
        assert!((p99 - 9900.0).abs() / 9900.0 < 0.01, "{p99}");
    }

    #[test]
    fn memory_grows_with_the_range_not_the_count() {
        let h = SparseHist::default();
        for i in 0..1_000_000u64 {
            h.record(1_000 + i % 1_000); // 1–2 µs: two powers of two
        }
        assert_eq!(h.pages_used(), 2);
        h.record(u64::MAX);
        assert_eq!(h.pages_used(), 3);
        let mut out = new_hdr();
        h.add_to(&mut out);
        assert_eq!(out.len(), 1_000_001);
        assert!(out.max() <= MAX_VALUE * 2);
    }

    #[test]
    fn a_reader_on_another_thread_sees_the_counts() {
        let h = std::sync::Arc::new(SparseHist::default());
        let w = h.clone();
        std::thread::spawn(move || {
            for _ in 0..1000 {
                w.record(500);
            }
        })
        .join()
        .unwrap();
        let mut out = new_hdr();
        h.add_to(&mut out);
        assert_eq!(out.len(), 1000);
    }
}
