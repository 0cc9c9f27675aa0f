//! Per-sample counters of the calling thread: what the kernel counted while
//! one timed sample ran, read before and after it.
//!
//! * Software events through `perf_event_open` (opened with the
//!   `perf-event2` crate): task clock (ns on a CPU), page faults and, where
//!   kernel-side events are permitted, CPU migrations. Software events are
//!   never multiplexed: they count the whole sample.
//! * Voluntary and involuntary context switches from
//!   `getrusage(RUSAGE_THREAD)`: perf's `context-switches` event counts both
//!   kinds together (and reads 0 when kernel-side events are not permitted,
//!   as `perf stat -e cs:u` shows), while the harness must tell a sample
//!   that was preempted (involuntary) from one that slept on I/O (voluntary).
//! * Hardware events (user-space instructions, cycles, branch misses, cache
//!   misses) in a group of their own, where the kernel exposes a PMU: on a
//!   VM without one `perf_event_open` fails (ENOENT, "not supported"); that
//!   is detected once, at [`Counters::open`], and the events are then absent
//!   (never reported as zero), with [`Counters::hardware_note`] saying why.
//!   When the PMU multiplexes the group, a sample's counts are scaled by
//!   enabled/running time (perf stat's method); a sample during which the
//!   group never ran has no hardware counts.
//!
//! Cost per boundary: one `read` per group into a preallocated buffer (a raw
//! `read(2)` of the leader's descriptor, since the crate's `read_group`
//! allocates), and `getrusage` only when perf's context-switch count moved
//! since the last one (always where that count is refused): a sample that was
//! not switched out costs one system call at each end.

mod event;
mod group;

use std::io;

use perf_event::events::{Hardware, Software};

pub use event::Event;
use group::PerfGroup;
pub use group::{parse_group, GroupRead};

/// What [`Counters::open_with`] asks of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Count kernel-side software events too (needed by CPU migrations, which
    /// happen in the kernel). Refused under `perf_event_paranoid` ≥ 2 without
    /// CAP_PERFMON; [`Counters::open`] then falls back to user-side events.
    pub include_kernel: bool,
    /// Try the hardware group.
    pub hardware: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            include_kernel: true,
            hardware: true,
        }
    }
}

/// The counters of the calling thread, read around each sample.
///
/// Open it on the thread that runs the samples (`perf_event_open` with
/// pid 0 follows the calling thread only). Then [`Counters::start`] before
/// and [`Counters::stop`] after each sample.
pub struct Counters {
    software: Option<PerfGroup>,
    hardware: Option<PerfGroup>,
    events: Vec<Event>,
    software_note: Option<String>,
    hardware_note: Option<String>,
    before: Vec<u64>,
    after: Vec<u64>,
    hw_times_before: GroupRead,
    hw_times_after: GroupRead,
    deltas: Vec<Option<u64>>,
    /// where perf's context-switches count is in `events`, when it is there
    switches_at: Option<usize>,
    /// the last getrusage reading and perf's switch count just before it
    rusage: Option<(u64, (u64, u64))>,
}

fn software_event(e: Event) -> Software {
    match e {
        Event::TaskClock => Software::TASK_CLOCK,
        Event::PageFaults => Software::PAGE_FAULTS,
        Event::ContextSwitches => Software::CONTEXT_SWITCHES,
        _ => Software::CPU_MIGRATIONS,
    }
}

fn hardware_event(e: Event) -> Hardware {
    match e {
        Event::Instructions => Hardware::INSTRUCTIONS,
        Event::Cycles => Hardware::CPU_CYCLES,
        Event::BranchMisses => Hardware::BRANCH_MISSES,
        _ => Hardware::CACHE_MISSES,
    }
}

/// The software group: task clock, page faults and, with `include_kernel`,
/// CPU migrations.
fn open_software(include_kernel: bool) -> io::Result<PerfGroup> {
    let mut events = vec![Event::TaskClock, Event::PageFaults];
    if include_kernel {
        // both happen in the kernel: user-side copies would read 0
        events.extend([Event::CpuMigrations, Event::ContextSwitches]);
    }
    PerfGroup::open(&events, include_kernel, |e, b| {
        b.event(software_event(e));
    })
}

impl Counters {
    /// Open every counter the kernel grants for the calling thread, falling
    /// back to user-side software events when kernel-side ones are refused.
    /// Never fails: what can't be opened is absent, and
    /// [`Counters::software_note`] / [`Counters::hardware_note`] say why.
    /// The switches (getrusage) are always present.
    pub fn open() -> Counters {
        Counters::open_with(OpenOptions::default())
    }

    /// Open with explicit options (tests use them to take the fallback
    /// paths). Never fails; see [`Counters::open`].
    pub fn open_with(options: OpenOptions) -> Counters {
        const USER_ONLY: &str = "cpu_migrations absent: kernel-side events need \
                                 perf_event_paranoid <= 1 or CAP_PERFMON";
        let unavailable = |err: io::Error| {
            format!(
                "software events unavailable: {err} ({})",
                refusal_cause(&err)
            )
        };
        let (software, software_note) = match open_software(options.include_kernel) {
            Ok(g) => (
                Some(g),
                (!options.include_kernel).then(|| USER_ONLY.to_string()),
            ),
            Err(err) if options.include_kernel && err.kind() == io::ErrorKind::PermissionDenied => {
                match open_software(false) {
                    Ok(g) => (Some(g), Some(USER_ONLY.to_string())),
                    Err(err) => (None, Some(unavailable(err))),
                }
            }
            Err(err) => (None, Some(unavailable(err))),
        };
        let (hardware, hardware_note) = if options.hardware {
            let hw_events = [
                Event::Instructions,
                Event::Cycles,
                Event::BranchMisses,
                Event::CacheMisses,
            ];
            match PerfGroup::open(&hw_events, false, |e, b| {
                b.event(hardware_event(e));
            }) {
                Ok(group) => (Some(group), None),
                Err(err) => (
                    None,
                    Some(format!(
                        "perf_event_open refused the hardware events: {err} ({})",
                        refusal_cause(&err)
                    )),
                ),
            }
        } else {
            (None, Some("hardware events not requested".into()))
        };
        let mut events: Vec<Event> = Vec::new();
        if let Some(g) = &software {
            events.extend(g.events());
        }
        events.extend([Event::VoluntarySwitches, Event::InvoluntarySwitches]);
        if let Some(g) = &hardware {
            events.extend(g.events());
        }
        let n = events.len();
        let switches_at = events.iter().position(|e| *e == Event::ContextSwitches);
        Counters {
            software,
            hardware,
            events,
            software_note,
            hardware_note,
            before: vec![0; n],
            after: vec![0; n],
            hw_times_before: GroupRead::default(),
            hw_times_after: GroupRead::default(),
            deltas: vec![None; n],
            switches_at,
            rusage: None,
        }
    }

    /// The events present, in the order of [`Counters::stop`]'s values.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Why software perf events are absent or reduced, or None.
    pub fn software_note(&self) -> Option<&str> {
        self.software_note.as_deref()
    }

    /// Why hardware events are absent, or None when they are present.
    pub fn hardware_note(&self) -> Option<&str> {
        self.hardware_note.as_deref()
    }

    /// Read every counter's running total into `out` (in [`Counters::events`]
    /// order) and return the hardware group's enabled/running times.
    fn read_into(&mut self, after: bool) -> io::Result<()> {
        let mut out = std::mem::take(if after {
            &mut self.after
        } else {
            &mut self.before
        });
        let result = self.read_totals(&mut out, after);
        if after {
            self.after = out;
        } else {
            self.before = out;
        }
        result
    }

    fn read_totals(&mut self, out: &mut [u64], after: bool) -> io::Result<()> {
        let mut i = 0;
        if let Some(g) = self.software.as_mut() {
            g.read(&mut out[i..i + g.len()])?;
            i += g.len();
        }
        let (voluntary, involuntary) = self.switches(self.switches_at.map(|k| out[k]))?;
        out[i] = voluntary;
        out[i + 1] = involuntary;
        i += 2;
        if let Some(g) = self.hardware.as_mut() {
            let times = g.read(&mut out[i..i + g.len()])?;
            *(if after {
                &mut self.hw_times_after
            } else {
                &mut self.hw_times_before
            }) = times;
        }
        Ok(())
    }

    /// The thread's (voluntary, involuntary) switches so far. Where perf counts
    /// every switch (`perf_now`, read just before), `getrusage` is skipped
    /// while that count has not moved since the last `getrusage`: no switch
    /// since, so the split is unchanged. That halves the system calls of a
    /// sample that was not switched out. A switch between perf's read and
    /// `getrusage` shows as a moved count at the next read, which reads again.
    fn switches(&mut self, perf_now: Option<u64>) -> io::Result<(u64, u64)> {
        if let (Some(now), Some((then, split))) = (perf_now, self.rusage) {
            if now == then {
                return Ok(split);
            }
        }
        let split = thread_switches()?;
        self.rusage = perf_now.map(|now| (now, split));
        Ok(split)
    }

    /// Read the counters at the start of a sample.
    ///
    /// # Errors
    /// The OS error of `read` or `getrusage` (not expected once open).
    pub fn start(&mut self) -> io::Result<()> {
        self.read_into(false)
    }

    /// Read the counters at the end of a sample and return what each counted
    /// since [`Counters::start`], in [`Counters::events`] order. Hardware
    /// counts are scaled by enabled/running time when the PMU multiplexed the
    /// group, and None when the group did not run during the sample.
    ///
    /// # Errors
    /// The OS error of `read` or `getrusage` (not expected once open).
    pub fn stop(&mut self) -> io::Result<&[Option<u64>]> {
        self.read_into(true)?;
        let hw_start = self.events.iter().position(|e| e.is_hardware());
        let scale = sample_scale(&self.hw_times_before, &self.hw_times_after);
        for (k, d) in self.deltas.iter_mut().enumerate() {
            let raw = self.after[k].wrapping_sub(self.before[k]);
            *d = match hw_start {
                Some(h) if k >= h => scale.map(|s| (raw as f64 * s).round() as u64),
                _ => Some(raw),
            };
        }
        Ok(&self.deltas)
    }
}

/// The factor that corrects a multiplexed group's counts over one sample:
/// Δenabled / Δrunning (1 when it ran throughout), or None when it never ran.
pub fn sample_scale(before: &GroupRead, after: &GroupRead) -> Option<f64> {
    let enabled = after.enabled_ns.wrapping_sub(before.enabled_ns);
    let running = after.running_ns.wrapping_sub(before.running_ns);
    if running == 0 {
        return None;
    }
    if running >= enabled {
        return Some(1.0);
    }
    Some(enabled as f64 / running as f64)
}

/// The likely cause of `perf_event_open`'s refusal, in plain words, from its
/// errno (perf_event_open(2), ERRORS).
pub fn refusal_cause(err: &io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => {
            "no PMU exposed to this kernel: usual in VMs"
        }
        Some(libc::EACCES | libc::EPERM) => {
            "not permitted: perf_event_paranoid, or a seccomp filter as in containers"
        }
        Some(libc::ENOSYS) => "this kernel has no perf events",
        _ => "unexpected error",
    }
}

/// (voluntary, involuntary) context switches of the calling thread so far
/// (`getrusage(RUSAGE_THREAD)`).
///
/// # Errors
/// The OS error of `getrusage` (not expected).
pub fn thread_switches() -> io::Result<(u64, u64)> {
    // SAFETY: getrusage writes a plain struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage; RUSAGE_THREAD is Linux's.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((usage.ru_nvcsw as u64, usage.ru_nivcsw as u64))
}

/// Mean cost of one sample's counter reads ([`Counters::start`] +
/// [`Counters::stop`]) over `pairs` pairs, ns (monotonic clock; natively,
/// without Python's call cost).
///
/// # Errors
/// The OS error of a read.
pub fn read_cost_ns(counters: &mut Counters, pairs: u32) -> io::Result<f64> {
    let pairs = pairs.max(1);
    let t0 = std::time::Instant::now();
    for _ in 0..pairs {
        counters.start()?;
        counters.stop()?;
    }
    Ok(t0.elapsed().as_nanos() as f64 / f64::from(pairs))
}

#[cfg(test)]
mod tests;
