//! Clock probes: the native read cost and the observed resolution of the OS
//! clocks, measured in a tight loop.
//!
//! Method: read cost is the wall time of `n` back-to-back reads divided by
//! `n` (as clockperf and pyperf's `perf_counter` overhead probe do);
//! resolution is the smallest non-zero difference between consecutive reads,
//! which is what a benchmark can actually resolve (it may be coarser than
//! `clock_getres` claims, never finer).

use std::hint::black_box;

use serde::Serialize;

mod bracket;
mod probe;
mod system;

pub use bracket::{disagreement, Bracket, Disagreement, Tolerance};
pub use probe::{probe, BackwardSteps, ProbeData};
pub use system::{hypervisor_signature, ntp_state, sleep_durations, timer_slack_ns, NtpState};

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
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
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

/// Nanoseconds of `id` read through a direct system call, bypassing libc's
/// `clock_gettime` symbol and the vDSO. An LD_PRELOAD interposer such as
/// libfaketime replaces the libc symbol but not the system call, so this is
/// the reference the TSC is calibrated against. `None` if the call fails.
pub fn syscall_ns(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: SYS_clock_gettime writes one timespec into `ts`, which lives
    // for the duration of the call.
    let rc = unsafe { libc::syscall(libc::SYS_clock_gettime, id, &mut ts as *mut libc::timespec) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The kernel's CLOCK_MONOTONIC_RAW by system call: un-slewed, and out of an
/// LD_PRELOAD interposer's reach (see [`syscall_ns`]). 0 if unreadable.
pub fn true_ns() -> u64 {
    syscall_ns(libc::CLOCK_MONOTONIC_RAW).unwrap_or(0)
}

/// One reading of every clock the integrity checks compare, taken back to
/// back: MONOTONIC, REALTIME, MONOTONIC_RAW, BOOTTIME (ns, through libc, as
/// benchmarks read them) and the TSC (ticks; `None` without rdtsc).
/// Serialized as the tuple [`SnapshotTuple`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(into = "SnapshotTuple")]
pub struct Snapshot {
    pub monotonic: u64,
    pub realtime: u64,
    pub monotonic_raw: u64,
    pub boottime: u64,
    pub tsc: Option<u64>,
}

/// A [`Snapshot`] as it crosses to Python: `(monotonic, realtime,
/// monotonic_raw, boottime, tsc | None)`.
pub type SnapshotTuple = (u64, u64, u64, u64, Option<u64>);

impl From<Snapshot> for SnapshotTuple {
    fn from(s: Snapshot) -> Self {
        (s.monotonic, s.realtime, s.monotonic_raw, s.boottime, s.tsc)
    }
}

impl From<SnapshotTuple> for Snapshot {
    fn from((monotonic, realtime, monotonic_raw, boottime, tsc): SnapshotTuple) -> Self {
        Snapshot {
            monotonic,
            realtime,
            monotonic_raw,
            boottime,
            tsc,
        }
    }
}

impl Snapshot {
    /// One pass over the clocks, and how long the pass took: TSC ticks, or
    /// MONOTONIC ns without a TSC.
    #[inline(always)]
    pub(crate) fn take_once() -> (Snapshot, u64) {
        let before = rdtsc();
        let snap = Snapshot {
            monotonic: read_clockid(libc::CLOCK_MONOTONIC).unwrap_or(0),
            realtime: read_clockid(libc::CLOCK_REALTIME).unwrap_or(0),
            monotonic_raw: read_clockid(libc::CLOCK_MONOTONIC_RAW).unwrap_or(0),
            boottime: read_clockid(libc::CLOCK_BOOTTIME).unwrap_or(0),
            tsc: before,
        };
        let width = match (before, rdtsc()) {
            (Some(a), Some(b)) => b.wrapping_sub(a),
            _ => monotonic_ns().saturating_sub(snap.monotonic),
        };
        (snap, width)
    }

    /// Read every clock; the tightest of up to 3 passes, so that a preemption
    /// inside one pass can't make the clocks seem to disagree (the Linux
    /// kernel's `tsc_read_refs` retries wide brackets the same way). Cost:
    /// about 4 vDSO reads + 2 rdtsc, ~0.1–0.3 µs.
    #[inline]
    pub fn take() -> Snapshot {
        Snapshot::take_within(MAX_SNAPSHOT_WIDTH, 3).0
    }

    /// The tightest of up to `passes` passes, stopping at the first no wider
    /// than `max_width`; and that pass's width (TSC ticks, or MONOTONIC ns
    /// without a TSC): how far apart in time its clocks may have been read.
    #[inline]
    pub fn take_within(max_width: u64, passes: u32) -> (Snapshot, u64) {
        let (mut best, mut width) = Snapshot::take_once();
        for _ in 1..passes.max(1) {
            if width <= max_width {
                break;
            }
            let (snap, w) = Snapshot::take_once();
            if w < width {
                (best, width) = (snap, w);
            }
        }
        (best, width)
    }
}

/// A snapshot pass wider than this many TSC ticks (~10 µs at 3 GHz; ns
/// without a TSC) was split by a preemption: its clocks were read at
/// different moments, so it is retried (or, in the probe, discarded).
pub(crate) const MAX_SNAPSHOT_WIDTH: u64 = 30_000;

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
        // A jiffy: 1 ms (HZ=1000) to 10 ms (HZ=100).
        assert!((100_000..=20_000_000).contains(&res), "res {res}");
    }
}
