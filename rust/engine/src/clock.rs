//! Clock probes: the native read cost and the observed resolution of the OS
//! clocks, measured in a tight loop.
//!
//! Method: read cost is the wall time of `n` back-to-back reads divided by
//! `n` (as clockperf and pyperf's `perf_counter` overhead probe do);
//! resolution is the smallest non-zero difference between consecutive reads,
//! which is what a benchmark can actually resolve (it may be coarser than
//! `clock_getres` claims, never finer).

use std::hint::black_box;

/// A clock perflab knows how to read natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Monotonic,
    MonotonicRaw,
    MonotonicCoarse,
    Realtime,
    RealtimeCoarse,
    Boottime,
    ProcessCpu,
    /// The CPU's time-stamp counter via `rdtsc` (x86_64 only); ticks, not ns.
    Tsc,
}

impl Clock {
    /// All clocks, in report order.
    pub const ALL: [Clock; 8] = [
        Clock::Monotonic,
        Clock::MonotonicRaw,
        Clock::MonotonicCoarse,
        Clock::Realtime,
        Clock::RealtimeCoarse,
        Clock::Boottime,
        Clock::ProcessCpu,
        Clock::Tsc,
    ];

    /// The name used in reports and JSON (`"monotonic"`, `"tsc"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Clock::Monotonic => "monotonic",
            Clock::MonotonicRaw => "monotonic_raw",
            Clock::MonotonicCoarse => "monotonic_coarse",
            Clock::Realtime => "realtime",
            Clock::RealtimeCoarse => "realtime_coarse",
            Clock::Boottime => "boottime",
            Clock::ProcessCpu => "process_cputime",
            Clock::Tsc => "tsc",
        }
    }

    /// Parse a name produced by [`Clock::name`]; `None` for unknown names.
    pub fn from_name(name: &str) -> Option<Clock> {
        Clock::ALL.iter().copied().find(|c| c.name() == name)
    }

    fn clockid(self) -> Option<libc::clockid_t> {
        match self {
            Clock::Monotonic => Some(libc::CLOCK_MONOTONIC),
            Clock::MonotonicRaw => Some(libc::CLOCK_MONOTONIC_RAW),
            Clock::MonotonicCoarse => Some(libc::CLOCK_MONOTONIC_COARSE),
            Clock::Realtime => Some(libc::CLOCK_REALTIME),
            Clock::RealtimeCoarse => Some(libc::CLOCK_REALTIME_COARSE),
            Clock::Boottime => Some(libc::CLOCK_BOOTTIME),
            Clock::ProcessCpu => Some(libc::CLOCK_PROCESS_CPUTIME_ID),
            Clock::Tsc => None,
        }
    }

    /// Whether this machine can read the clock (rdtsc needs x86_64).
    pub fn available(self) -> bool {
        match self {
            Clock::Tsc => cfg!(target_arch = "x86_64"),
            _ => read_clockid(self.clockid().unwrap_or(libc::CLOCK_MONOTONIC)).is_some(),
        }
    }

    /// One read: nanoseconds for OS clocks, ticks for the TSC. `None` when
    /// the clock can't be read on this machine.
    #[inline(always)]
    pub fn read(self) -> Option<u64> {
        match self.clockid() {
            Some(id) => read_clockid(id),
            None => rdtsc(),
        }
    }
}

#[inline(always)]
fn read_clockid(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Read the time-stamp counter; `None` off x86_64.
#[inline(always)]
pub fn rdtsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no memory effects and exists on every x86_64 CPU.
        Some(unsafe { core::arch::x86_64::_rdtsc() })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Nanoseconds on CLOCK_MONOTONIC, the reference clock of every probe.
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    read_clockid(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

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
}
