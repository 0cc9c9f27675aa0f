//! The per-sample integrity check: how far MONOTONIC and the other clocks
//! may disagree over one interval ([`Tolerance`]), the worst disagreement
//! between two snapshots ([`disagreement`]), and the [`Bracket`] around a
//! sample.

use super::{Clock, Snapshot};

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
        self.skew_ns.unsigned_abs() as f64 > tol.allowed_ns(self.monotonic_ns)
    }
}

/// The per-sample integrity bracket: [`Bracket::start`] before a sample,
/// [`Bracket::stop`] after it. Cost: two [`Snapshot::take`] and O(1) work.
#[derive(Clone, Debug)]
pub struct Bracket {
    start: Snapshot,
    ticks_per_ns: Option<f64>,
    tolerance: Tolerance,
}

impl Bracket {
    /// A bracket comparing clocks with the calibrated TSC rate (None: no TSC check).
    pub fn new(ticks_per_ns: Option<f64>, tolerance: Tolerance) -> Bracket {
        Bracket {
            start: Snapshot::take(),
            ticks_per_ns,
            tolerance,
        }
    }

    /// Mark the start of a sample.
    #[inline]
    pub fn start(&mut self) {
        self.start = Snapshot::take();
    }

    /// End the sample: the worst disagreement since [`Bracket::start`] and
    /// whether it exceeds the tolerance.
    #[inline]
    pub fn stop(&self) -> (Disagreement, bool) {
        let d = disagreement(&self.start, &Snapshot::take(), self.ticks_per_ns);
        (d, d.exceeds(&self.tolerance))
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
