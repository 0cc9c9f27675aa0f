//! Clock probes: the native read cost and the observed resolution of the OS
//! clocks, measured in a tight loop.
//!
//! Method: read cost is the wall time of `n` back-to-back reads divided by
//! `n` (as clockperf and pyperf's `perf_counter` overhead probe do);
//! resolution is the smallest non-zero difference between consecutive reads,
//! which is what a benchmark can actually resolve (it may be coarser than
//! `clock_getres` claims, never finer).
//!
//! Layout: `read` (the clocks, [`Snapshot`]) at the bottom; `bracket` (the
//! per-sample cross-check), `probe` (doctor's tight-loop probe) and
//! `system` (sleeps, timer slack, NTP, the hypervisor) on it; the probes
//! here, on all of them.
use std::hint::black_box;

mod bracket;
mod probe;
mod read;
mod system;

pub use bracket::{disagreement, Bracket, Disagreement, Tolerance};
pub use probe::{probe, BackwardSteps, ProbeData};
pub use read::{monotonic_ns, rdtsc, syscall_ns, true_ns, Clock, Snapshot, SnapshotTuple};
pub use system::{hypervisor_signature, ntp_state, sleep_durations, timer_slack_ns, NtpState};

/// Mean cost of one read of `clock`, in nanoseconds, over `reads` back-to-back
/// reads (timed on CLOCK_MONOTONIC). `None` if the clock is unavailable or
/// `reads` is 0. Cost: `reads` clock reads.
pub fn read_cost_ns(clock: Clock, reads: u64) -> Option<f64> {
    if reads == 0 || !clock.available() {
        return None;
    }
    let start = monotonic_ns();
    for _ in 0..reads {
        black_box(clock.read());
    }
    let elapsed = monotonic_ns().saturating_sub(start);
    Some(elapsed as f64 / reads as f64)
}

/// Smallest non-zero step between consecutive reads of `clock` seen in
/// `reads` reads (ns, or ticks for the TSC), and the number of backward steps
/// seen. `None` if unavailable or no step was ever seen.
pub fn observed_resolution(clock: Clock, reads: u64) -> Option<(u64, u64)> {
    let mut prev = clock.read()?;
    let mut smallest = u64::MAX;
    let mut backward = 0u64;
    for _ in 0..reads {
        let now = clock.read()?;
        if now < prev {
            backward += 1;
        } else if now > prev {
            smallest = smallest.min(now - prev);
        }
        prev = now;
    }
    (smallest != u64::MAX).then_some((smallest, backward))
}

/// A (TSC, reference ns) pair read as close together as possible: the TSC is
/// read just before and just after the reference system call, and the pair
/// with the narrowest bracket of `tries` is kept (midpoint of the bracket).
/// `None` without rdtsc.
pub fn tsc_reference(tries: u32) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..tries.max(1) {
        let a = rdtsc()?;
        let reference = true_ns();
        let b = rdtsc()?;
        let width = b.wrapping_sub(a);
        if best.is_none_or(|(_, _, w)| width < w) {
            best = Some((a + width / 2, reference, width));
        }
    }
    best.map(|(tsc, reference, _)| (tsc, reference))
}

/// TSC ticks per nanosecond from two [`tsc_reference`] pairs; `None` when
/// they are not in order (no time passed, or no TSC).
pub fn tsc_rate(start: (u64, u64), end: (u64, u64)) -> Option<f64> {
    let ticks = end.0.checked_sub(start.0)?;
    let ns = end.1.checked_sub(start.1)?;
    (ns > 0 && ticks > 0).then(|| ticks as f64 / ns as f64)
}

/// Calibrate the TSC: ticks per ns over at least `span_ns` of the kernel's
/// un-interposed MONOTONIC_RAW (spins for that long). Error ≈ bracket width
/// (~0.2 µs) / span, e.g. 1e-5 over 20 ms. `None` without rdtsc.
pub fn calibrate_tsc(span_ns: u64) -> Option<f64> {
    let start = tsc_reference(5)?;
    while true_ns().saturating_sub(start.1) < span_ns {
        std::hint::spin_loop();
    }
    tsc_rate(start, tsc_reference(5)?)
}

/// Smallest non-zero step of `clock` and its backward steps, reading until
/// `min_steps` steps were seen or `max_ns` of MONOTONIC passed; for clocks
/// that tick slowly (the coarse clocks step every jiffy, 1–10 ms), where a
/// fixed read count would end before the first step. `None` if unavailable
/// or no step was seen. Units: ns (ticks for the TSC).
pub fn resolution_within(clock: Clock, min_steps: u64, max_ns: u64) -> Option<(u64, u64)> {
    let deadline = monotonic_ns().saturating_add(max_ns);
    let mut prev = clock.read()?;
    let (mut smallest, mut steps, mut backward) = (u64::MAX, 0u64, 0u64);
    let mut reads = 0u64;
    while steps < min_steps && (!reads.is_multiple_of(64) || monotonic_ns() < deadline) {
        let now = clock.read()?;
        reads += 1;
        if now < prev {
            backward += 1;
        } else if now > prev {
            smallest = smallest.min(now - prev);
            steps += 1;
        }
        prev = now;
    }
    (smallest != u64::MAX).then_some((smallest, backward))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in Clock::ALL {
            assert_eq!(Clock::from_name(c.name()), Some(c));
        }
        assert_eq!(Clock::from_name("sundial"), None);
    }

    #[test]
    fn monotonic_read_cost_is_positive_and_bounded() {
        let cost = read_cost_ns(Clock::Monotonic, 10_000).unwrap();
        // Generous: a vDSO read is ~20 ns, a syscall fallback ~1 µs; 100 µs
        // would mean the probe itself is broken.
        assert!(cost > 0.0 && cost < 100_000.0, "cost {cost}");
    }

    #[test]
    fn zero_reads_is_none() {
        assert_eq!(read_cost_ns(Clock::Monotonic, 0), None);
    }

    #[test]
    fn monotonic_never_steps_back_and_resolves() {
        let (res, back) = observed_resolution(Clock::Monotonic, 100_000).unwrap();
        assert_eq!(back, 0);
        assert!(res >= 1);
    }

    #[test]
    fn tsc_calibration_matches_the_kernel_clock() {
        if let Some(rate) = calibrate_tsc(10_000_000) {
            // Any real TSC runs between 0.1 and 10 GHz.
            assert!(rate > 0.1 && rate < 10.0, "rate {rate}");
            let again = calibrate_tsc(10_000_000).unwrap();
            assert!((again / rate - 1.0).abs() < 1e-3, "{rate} vs {again}");
        }
    }

    #[test]
    fn syscall_and_libc_clocks_agree() {
        let a = syscall_ns(libc::CLOCK_MONOTONIC).unwrap();
        let b = monotonic_ns();
        let c = syscall_ns(libc::CLOCK_MONOTONIC).unwrap();
        assert!(a <= b && b <= c);
    }

    #[test]
    fn coarse_clock_resolution_is_found_within_its_time_bound() {
        let (res, back) = resolution_within(Clock::MonotonicCoarse, 3, 200_000_000).unwrap();
        assert_eq!(back, 0);
        // The kernel's own word for the coarse clock's step: a jiffy, 1 ms (HZ=1000) to
        // 10 ms (HZ=100). The smallest step seen is never below it; a busy machine can
        // deschedule the reader across several jiffies, so above it the only bound is the
        // search's own 200 ms (the step is found, not the machine's speed).
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        assert_eq!(
            unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) },
            0
        );
        let jiffy = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        assert!((100_000..=20_000_000).contains(&jiffy), "jiffy {jiffy}");
        assert!(
            res >= jiffy * 9 / 10 && res <= 200_000_000,
            "res {res}, jiffy {jiffy}"
        );
    }
}
