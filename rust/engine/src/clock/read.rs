//! Reading the clocks: [`Clock`] (every clock perflab reads natively, and
//! the TSC), the reference readings ([`monotonic_ns`], [`true_ns`] by system
//! call) and [`Snapshot`], one back-to-back reading of every clock the
//! integrity checks compare. The bottom of `clock/`: the probes
//! (`super`), the bracket, doctor's probe and the system checks read
//! through it.

use serde::Serialize;

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
