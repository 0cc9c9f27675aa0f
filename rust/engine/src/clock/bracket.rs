//! The per-sample integrity check: how far MONOTONIC and the other clocks
//! may disagree over one interval ([`Tolerance`]), the worst disagreement
//! between two snapshots ([`disagreement`]), and the [`Bracket`] around a
//! sample.

use super::read::{Clock, Snapshot};

/// How far apart the clocks may drift over one interval before it is flagged:
/// `abs_ns + rel × ΔMONOTONIC`. The relative part absorbs NTP slewing (the
/// kernel slews by at most 500 ppm frequency + 500 ppm phase) and TSC
/// calibration error; the absolute part absorbs read jitter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub rel: f64,
    pub abs_ns: u64,
}

impl Tolerance {
    /// The allowed disagreement over an interval of `monotonic_ns`, ns.
    pub fn allowed_ns(&self, monotonic_ns: u64) -> f64 {
        self.abs_ns as f64 + self.rel * monotonic_ns as f64
    }
}

/// The largest disagreement between MONOTONIC and another clock over one
/// interval: `skew_ns = Δother − ΔMONOTONIC` (positive: the other clock
/// advanced more), for the clock with the largest |skew|.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Disagreement {
    pub clock: Clock,
    pub skew_ns: i64,
    pub monotonic_ns: u64,
}

/// `b − a` of a clock that may have stepped back, as a signed count.
pub(super) fn delta(a: u64, b: u64) -> i64 {
    b.wrapping_sub(a) as i64
}

/// Compare MONOTONIC with REALTIME, MONOTONIC_RAW and the TSC (converted with
/// `ticks_per_ns`; skipped when `None`) between two snapshots. O(1).
pub fn disagreement(a: &Snapshot, b: &Snapshot, ticks_per_ns: Option<f64>) -> Disagreement {
    let mono = delta(a.monotonic, b.monotonic);
    let mut worst = Disagreement {
        clock: Clock::Monotonic,
        skew_ns: 0,
        monotonic_ns: mono.max(0) as u64,
    };
    let mut consider = |clock: Clock, other: i64| {
        let skew = other - mono;
        if skew.unsigned_abs() > worst.skew_ns.unsigned_abs() {
            worst.clock = clock;
            worst.skew_ns = skew;
        }
    };
    consider(Clock::Realtime, delta(a.realtime, b.realtime));
    consider(Clock::MonotonicRaw, delta(a.monotonic_raw, b.monotonic_raw));
    if let (Some(t0), Some(t1), Some(rate)) = (a.tsc, b.tsc, ticks_per_ns) {
        consider(Clock::Tsc, (delta(t0, t1) as f64 / rate).round() as i64);
    }
    worst
}

impl Disagreement {
    /// Whether the disagreement exceeds `tol` (or MONOTONIC went backwards).
    pub fn exceeds(&self, tol: &Tolerance) -> bool {
        self.exceeds_with_slack(tol, 0.0)
    }

    /// Whether the disagreement exceeds `tol` plus `slack_ns`: the widths of the
    /// two snapshots compared, within which their clocks may have been read at
    /// different moments (a disagreement that small is read timing, not a clock).
    pub fn exceeds_with_slack(&self, tol: &Tolerance, slack_ns: f64) -> bool {
        self.skew_ns.unsigned_abs() as f64 > tol.allowed_ns(self.monotonic_ns) + slack_ns
    }
}

/// The per-sample bracket retakes a snapshot wider than this many TSC ticks
/// (~1 µs at 3 GHz, several times a pass's usual cost) or than 4× the
/// tightest pass it has seen (clocks read by system call are slower): an
/// interrupt or a preemption of a few µs inside a pass would otherwise pass
/// for clock skew.
pub(crate) const BRACKET_SNAPSHOT_WIDTH: u64 = 3_000;
/// Passes the per-sample bracket tries for a snapshot no wider than that.
const BRACKET_SNAPSHOT_PASSES: u32 = 5;

/// The per-sample integrity bracket: [`Bracket::start`] before a sample,
/// [`Bracket::stop`] after it. Each end is a snapshot retaken until it is
/// tight ([`BRACKET_SNAPSHOT_WIDTH`]), and a disagreement within the two
/// snapshots' widths is never flagged: a preemption between the reads of one
/// snapshot is not a clock fault. Cost: two snapshots and O(1) work.
#[derive(Clone, Debug)]
pub struct Bracket {
    start: Snapshot,
    start_width: u64,
    tightest: u64,
    ticks_per_ns: Option<f64>,
    tolerance: Tolerance,
}

impl Bracket {
    /// A bracket comparing clocks with the calibrated TSC rate (None: no TSC
    /// check). It starts now: [`Bracket::stop`] without [`Bracket::start`]
    /// compares the clocks since it was made.
    pub fn new(ticks_per_ns: Option<f64>, tolerance: Tolerance) -> Bracket {
        let (start, start_width) = Snapshot::take_within(0, BRACKET_SNAPSHOT_PASSES);
        Bracket {
            start,
            start_width,
            tightest: start_width,
            ticks_per_ns,
            tolerance,
        }
    }

    /// A snapshot retaken while wider than the bound, and its width.
    #[inline]
    fn snapshot(&self) -> (Snapshot, u64) {
        let bound = BRACKET_SNAPSHOT_WIDTH.max(self.tightest.saturating_mul(4));
        Snapshot::take_within(bound, BRACKET_SNAPSHOT_PASSES)
    }

    /// Mark the start of a sample.
    #[inline]
    pub fn start(&mut self) {
        (self.start, self.start_width) = self.snapshot();
        self.tightest = self.tightest.min(self.start_width);
    }

    /// End the sample: the worst disagreement since [`Bracket::start`] and
    /// whether it exceeds the tolerance plus the two snapshots' widths.
    #[inline]
    pub fn stop(&self) -> (Disagreement, bool) {
        let (end, end_width) = self.snapshot();
        let d = disagreement(&self.start, &end, self.ticks_per_ns);
        let widths = (self.start_width + end_width) as f64;
        // widths are TSC ticks when there is a TSC; without a rate, count a tick
        // as a ns (ticks run at ≥ 1 GHz, so this only errs on the lenient side)
        let slack_ns = match (self.start.tsc, self.ticks_per_ns) {
            (Some(_), Some(rate)) => widths / rate,
            _ => widths,
        };
        (d, d.exceeds_with_slack(&self.tolerance, slack_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::super::calibrate_tsc;
    use super::*;

    fn snap(mono: u64, real: u64, raw: u64, tsc: Option<u64>) -> Snapshot {
        Snapshot {
            monotonic: mono,
            realtime: real,
            monotonic_raw: raw,
            boottime: mono,
            tsc,
        }
    }

    #[test]
    fn agreeing_clocks_are_not_flagged() {
        let tol = Tolerance {
            rel: 2e-3,
            abs_ns: 5_000,
        };
        let a = snap(1_000, 5_000, 2_000, Some(3_000));
        let b = snap(1_001_000, 1_005_050, 1_001_990, Some(3_000 + 2_000_000));
        let d = disagreement(&a, &b, Some(2.0));
        assert!(!d.exceeds(&tol), "{d:?}");
        assert_eq!(d.clock, Clock::Realtime);
        assert_eq!(d.skew_ns, 50);
    }

    #[test]
    fn realtime_step_and_double_rate_are_flagged() {
        let tol = Tolerance {
            rel: 2e-3,
            abs_ns: 5_000,
        };
        let a = snap(0, 0, 0, Some(0));
        let stepped = snap(1_000_000, 1_001_000_000, 1_000_000, Some(1_000_000));
        let d = disagreement(&a, &stepped, Some(1.0));
        assert_eq!((d.clock, d.skew_ns), (Clock::Realtime, 1_000_000_000));
        assert!(d.exceeds(&tol));
        // Every OS clock at 2×: only the TSC can tell.
        let fast = snap(2_000_000, 2_000_000, 2_000_000, Some(3_000_000));
        let d = disagreement(&a, &fast, Some(3.0));
        assert_eq!((d.clock, d.skew_ns), (Clock::Tsc, -1_000_000));
        assert!(d.exceeds(&tol));
        assert!(
            !disagreement(&a, &fast, None).exceeds(&tol),
            "without a TSC rate it can't be seen"
        );
    }

    #[test]
    fn a_skew_within_the_snapshot_widths_is_read_timing_not_a_fault() {
        // issue 11: a 1.46 ms sample flagged for a 6.6 µs TSC skew against a 6.5 µs
        // tolerance, on an idle machine: a preemption inside one snapshot.
        let tol = Tolerance {
            rel: 1e-3,
            abs_ns: 5_000,
        };
        let a = snap(0, 0, 0, Some(0));
        let b = snap(
            1_460_000,
            1_460_000,
            1_460_000,
            Some(3 * (1_460_000 + 6_600)),
        );
        let d = disagreement(&a, &b, Some(3.0));
        assert_eq!((d.clock, d.skew_ns), (Clock::Tsc, 6_600));
        assert!(d.exceeds(&tol), "without slack it is flagged");
        assert!(
            !d.exceeds_with_slack(&tol, 7_000.0),
            "a 7 µs-wide snapshot explains it"
        );
        assert!(d.exceeds_with_slack(&tol, 100.0), "tight snapshots do not");
        // a real step or a clock at the wrong rate is far beyond any snapshot width
        let stepped = snap(1_000_000, 1_001_000_000, 1_000_000, Some(3_000_000));
        assert!(disagreement(&a, &stepped, Some(3.0)).exceeds_with_slack(&tol, 60_000.0));
        let fast = snap(2_000_000, 2_000_000, 2_000_000, Some(3_000_000));
        assert!(disagreement(&a, &fast, Some(3.0)).exceeds_with_slack(&tol, 60_000.0));
    }

    #[test]
    fn bracket_snapshots_are_retaken_until_tight() {
        for _ in 0..1_000 {
            let (_, width) = Snapshot::take_within(BRACKET_SNAPSHOT_WIDTH, 50);
            // 50 tries: on any machine one pass in 50 is uninterrupted
            assert!(width <= 10 * BRACKET_SNAPSHOT_WIDTH, "width {width}");
        }
    }

    #[test]
    fn tolerance_grows_with_the_interval() {
        let tol = Tolerance {
            rel: 1e-3,
            abs_ns: 1_000,
        };
        assert_eq!(tol.allowed_ns(0), 1_000.0);
        assert_eq!(tol.allowed_ns(1_000_000_000), 1_001_000.0);
    }

    #[test]
    fn bracket_over_a_quiet_interval_agrees() {
        let rate = calibrate_tsc(5_000_000);
        let mut b = Bracket::new(
            rate,
            Tolerance {
                rel: 2e-3,
                abs_ns: 50_000,
            },
        );
        b.start();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (d, flagged) = b.stop();
        // Generous abs tolerance: a loaded CI machine may preempt between reads.
        assert!(!flagged, "{d:?}");
        assert!(d.monotonic_ns >= 2_000_000);
    }
}
