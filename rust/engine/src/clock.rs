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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub monotonic: u64,
    pub realtime: u64,
    pub monotonic_raw: u64,
    pub boottime: u64,
    pub tsc: Option<u64>,
}

impl Snapshot {
    /// One pass over the clocks, and how long the pass took: TSC ticks, or
    /// MONOTONIC ns without a TSC.
    #[inline(always)]
    fn take_once() -> (Snapshot, u64) {
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
        let (mut best, mut width) = Snapshot::take_once();
        for _ in 0..2 {
            if width <= MAX_SNAPSHOT_WIDTH {
                break;
            }
            let (snap, w) = Snapshot::take_once();
            if w < width {
                (best, width) = (snap, w);
            }
        }
        best
    }
}

/// A snapshot pass wider than this many TSC ticks (~10 µs at 3 GHz; ns
/// without a TSC) was split by a preemption: its clocks were read at
/// different moments, so it is retried (or, in the probe, discarded).
const MAX_SNAPSHOT_WIDTH: u64 = 30_000;

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

fn delta(a: u64, b: u64) -> i64 {
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

/// What a tight-loop probe of the clocks saw, raw: analysis happens in Python.
///
/// `windows` are snapshots taken every `window_ns` of true time (first =
/// start, last = end); `events` are consecutive snapshot pairs whose clocks
/// diverged by more than the event floor (steps, or pauses under a clock that
/// runs at the wrong rate), at most `MAX_EVENTS` kept and the rest counted;
/// `backward` counts backward steps of MONOTONIC, REALTIME, MONOTONIC_RAW,
/// BOOTTIME; `longest_gap` is the widest pair of consecutive reads; `torn`
/// counts snapshots discarded because a preemption split them.
#[derive(Clone, Debug, Default)]
pub struct ProbeData {
    pub iterations: u64,
    pub windows: Vec<Snapshot>,
    pub events: Vec<(Snapshot, Snapshot)>,
    pub events_dropped: u64,
    pub backward: [u64; 4],
    pub longest_gap: (Snapshot, Snapshot),
    pub torn: u64,
}

const MAX_EVENTS: usize = 4096;

/// The reference clock of a probe: TSC ns when calibrated, else MONOTONIC.
fn probe_ns(s: &Snapshot, ticks_per_ns: Option<f64>) -> u64 {
    match (s.tsc, ticks_per_ns) {
        (Some(t), Some(rate)) => (t as f64 / rate) as u64,
        _ => s.monotonic,
    }
}

/// Read every clock back to back for `duration_ns` of true time (bounded by
/// the un-interposed MONOTONIC_RAW, so a faked clock can't stretch it) and
/// record what [`ProbeData`] describes. Pairs whose MONOTONIC delta differs
/// from the REALTIME, RAW, BOOTTIME or TSC delta by more than `event_floor_ns`
/// become events. O(duration / read cost) time, O(duration / window + events) memory.
pub fn probe(
    duration_ns: u64,
    window_ns: u64,
    event_floor_ns: u64,
    ticks_per_ns: Option<f64>,
) -> ProbeData {
    let deadline = true_ns().saturating_add(duration_ns);
    let mut data = ProbeData::default();
    // Start from the narrowest of a few passes, which also sets the width
    // that later passes are judged torn against.
    let (mut prev, mut narrowest) = (Snapshot::default(), u64::MAX);
    for _ in 0..16 {
        let (snap, width) = Snapshot::take_once();
        if width < narrowest {
            (prev, narrowest) = (snap, width);
        }
    }
    let (mut window_start, mut widest) = (probe_ns(&prev, ticks_per_ns), 0u64);
    data.windows.push(prev);
    data.longest_gap = (prev, prev);
    while !data.iterations.is_multiple_of(256) || true_ns() < deadline {
        let (cur, width) = Snapshot::take_once();
        data.iterations += 1;
        // Slow clocks (an interposer reading a file per call) make every pass
        // wide; a pass is torn only when much wider than the fastest one.
        narrowest = narrowest.min(width);
        if width > MAX_SNAPSHOT_WIDTH.max(narrowest.saturating_mul(4)) {
            data.torn += 1;
            continue;
        }
        let (t_prev, t_cur) = (probe_ns(&prev, ticks_per_ns), probe_ns(&cur, ticks_per_ns));
        let gap = t_cur.saturating_sub(t_prev);
        if gap > widest {
            widest = gap;
            data.longest_gap = (prev, cur);
        }
        record_pair(&mut data, &prev, &cur, event_floor_ns, ticks_per_ns);
        if t_cur.saturating_sub(window_start) >= window_ns {
            data.windows.push(cur);
            window_start = t_cur;
        }
        prev = cur;
    }
    data.windows.push(prev);
    data
}

/// Count backward steps and keep the pair as an event if its clocks diverged.
fn record_pair(
    data: &mut ProbeData,
    a: &Snapshot,
    b: &Snapshot,
    floor_ns: u64,
    ticks_per_ns: Option<f64>,
) {
    let pairs = [
        (a.monotonic, b.monotonic),
        (a.realtime, b.realtime),
        (a.monotonic_raw, b.monotonic_raw),
        (a.boottime, b.boottime),
    ];
    for (count, (x, y)) in data.backward.iter_mut().zip(pairs) {
        *count += u64::from(y < x);
    }
    let boot_skew = delta(a.boottime, b.boottime) - delta(a.monotonic, b.monotonic);
    let skew = disagreement(a, b, ticks_per_ns).skew_ns.unsigned_abs();
    if skew.max(boot_skew.unsigned_abs()) > floor_ns {
        if data.events.len() < MAX_EVENTS {
            data.events.push((*a, *b));
        } else {
            data.events_dropped += 1;
        }
    }
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

/// Actual durations (ns, on MONOTONIC) of up to `count` relative
/// `clock_nanosleep(CLOCK_MONOTONIC)` sleeps of `request_ns` each, stopping
/// early once `budget_ns` has been spent. At least one sleep is always made.
pub fn sleep_durations(request_ns: u64, count: usize, budget_ns: u64) -> Vec<u64> {
    let req = libc::timespec {
        tv_sec: (request_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (request_ns % 1_000_000_000) as libc::c_long,
    };
    let started = monotonic_ns();
    let mut out = Vec::with_capacity(count);
    while out.len() < count.max(1) && (out.is_empty() || monotonic_ns() - started < budget_ns) {
        let t0 = monotonic_ns();
        // SAFETY: `req` is a valid timespec; a null remainder is allowed.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &req, std::ptr::null_mut()) };
        out.push(monotonic_ns().saturating_sub(t0));
    }
    out
}

/// The calling thread's timer slack (how late the kernel may fire its
/// timers to batch wake-ups), ns, via `prctl(PR_GET_TIMERSLACK)`.
pub fn timer_slack_ns() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK reads a value and takes no pointers.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    (rc >= 0).then_some(rc as u64)
}

/// The kernel's NTP discipline state, read with `adjtimex` (modes = 0: read
/// only, no privilege needed). See adjtimex(2) and RFC 5905.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NtpState {
    /// Clock state: 0 TIME_OK … 5 TIME_ERROR (not synchronised).
    pub state: i32,
    /// Status bits (STA_UNSYNC = 0x40, STA_NANO = 0x2000, …).
    pub status: i32,
    /// Frequency offset applied to the clock, ppm.
    pub freq_ppm: f64,
    /// Remaining phase offset being slewed out, ns.
    pub offset_ns: i64,
    /// Maximum / estimated error, µs.
    pub maxerror_us: i64,
    pub esterror_us: i64,
}

impl NtpState {
    /// True when the kernel considers the clock synchronised.
    pub fn synchronised(&self) -> bool {
        self.state != libc::TIME_ERROR && self.status & libc::STA_UNSYNC == 0
    }
}

/// Read the NTP state; `None` when `adjtimex` fails (e.g. seccomp).
pub fn ntp_state() -> Option<NtpState> {
    // SAFETY: an all-zero timex is valid input (modes = 0 means read only).
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex for the duration of the call.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    let nano = tx.status & libc::STA_NANO != 0;
    Some(NtpState {
        state,
        status: tx.status,
        freq_ppm: tx.freq as f64 / 65536.0,
        offset_ns: if nano {
            tx.offset as i64
        } else {
            tx.offset as i64 * 1000
        },
        maxerror_us: tx.maxerror as i64,
        esterror_us: tx.esterror as i64,
    })
}

/// The hypervisor's vendor signature from CPUID leaf 0x4000_0000
/// ("KVMKVMKVM", "Microsoft Hv", "VMwareVMware", "XenVMMXenVMM", …), or
/// `None` on bare metal (CPUID.1:ECX bit 31 clear) and off x86_64. This is
/// how systemd-detect-virt tells hypervisors apart without /sys or DMI.
pub fn hypervisor_signature() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        #[allow(unused_unsafe)]
        // SAFETY: cpuid exists on every x86_64 CPU and has no memory effects.
        let (leaf1, leaf) = unsafe { (__cpuid(1), __cpuid(0x4000_0000)) };
        if leaf1.ecx & (1 << 31) == 0 {
            return None;
        }
        let bytes: Vec<u8> = [leaf.ebx, leaf.ecx, leaf.edx]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let text = String::from_utf8_lossy(&bytes)
            .trim_matches('\0')
            .to_string();
        (!text.trim().is_empty()).then_some(text)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
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
    fn probe_runs_for_its_duration_and_sees_no_step() {
        let rate = calibrate_tsc(5_000_000);
        let t0 = true_ns();
        let data = probe(50_000_000, 5_000_000, 1_000_000_000, rate);
        let took = true_ns() - t0;
        assert!((50_000_000..5_000_000_000).contains(&took), "took {took}");
        assert!(data.iterations > 100);
        assert!(data.windows.len() >= 3);
        assert_eq!(data.backward[0], 0);
        assert!(
            data.events.is_empty(),
            "no event above a 1 s floor: {:?}",
            data.events
        );
    }

    #[test]
    fn coarse_clock_resolution_is_found_within_its_time_bound() {
        let (res, back) = resolution_within(Clock::MonotonicCoarse, 3, 200_000_000).unwrap();
        assert_eq!(back, 0);
        // A jiffy: 1 ms (HZ=1000) to 10 ms (HZ=100).
        assert!((100_000..=20_000_000).contains(&res), "res {res}");
    }

    #[test]
    fn sleeps_last_at_least_what_was_asked() {
        let got = sleep_durations(100_000, 5, 1_000_000_000);
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|&d| d >= 100_000), "{got:?}");
        assert_eq!(sleep_durations(1_000_000, 1000, 0).len(), 1);
    }

    #[test]
    fn hypervisor_signature_is_printable_when_present() {
        if let Some(sig) = hypervisor_signature() {
            assert!(sig.len() <= 12 && !sig.trim().is_empty(), "{sig:?}");
        }
    }

    #[test]
    fn timer_slack_and_ntp_state_are_readable() {
        assert!(timer_slack_ns().is_some());
        if let Some(ntp) = ntp_state() {
            assert!(ntp.freq_ppm.abs() < 1000.0, "{ntp:?}");
        }
    }
}
