//! One perf event group of the calling thread, read with a single `read(2)`
//! of its leader into a preallocated buffer.

use std::io;
use std::os::fd::AsRawFd;

use perf_event::{Builder, Counter, ReadFormat};

use super::event::Event;

/// The times of one group read: how long the group was enabled and how long
/// it was actually counting on the PMU (they differ when multiplexed), ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupRead {
    pub enabled_ns: u64,
    pub running_ns: u64,
}

/// Parse the words of a group read (`read_format` = GROUP |
/// TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID: `nr, enabled, running,
/// {value, id} × nr`) into `out`, where `out[k]` receives the value whose id
/// is `ids[k]`. O(nr × ids).
///
/// # Errors
/// `InvalidData` when the words are truncated, or when an id is missing.
pub fn parse_group(words: &[u64], ids: &[u64], out: &mut [u64]) -> io::Result<GroupRead> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let [nr, enabled_ns, running_ns, entries @ ..] = words else {
        return Err(bad("perf group read shorter than its header"));
    };
    let nr = usize::try_from(*nr).map_err(|_| bad("perf group size out of range"))?;
    let entries = entries
        .get(..nr.saturating_mul(2))
        .filter(|e| e.len() == nr * 2)
        .ok_or_else(|| bad("perf group read truncated"))?;
    for (slot, id) in out.iter_mut().zip(ids) {
        *slot = entries
            .chunks_exact(2)
            .find(|pair| pair[1] == *id)
            .map(|pair| pair[0])
            .ok_or_else(|| bad("perf group read lacks a member"))?;
    }
    Ok(GroupRead {
        enabled_ns: *enabled_ns,
        running_ns: *running_ns,
    })
}

/// An open group: its leader, its members (kept open), the events they
/// count and their ids, and the read buffer.
pub(super) struct PerfGroup {
    leader: Counter,
    _members: Vec<Counter>,
    events: Vec<Event>,
    ids: Vec<u64>,
    words: Vec<u64>,
}

impl PerfGroup {
    /// Open `events` on the calling thread as one group, enabled at once:
    /// the first is the leader (its failure is the group's), a member the
    /// kernel refuses is left out. `configure` sets a builder's event.
    ///
    /// # Errors
    /// The leader's `perf_event_open` or `ioctl` error.
    pub(super) fn open(
        events: &[Event],
        include_kernel: bool,
        configure: impl Fn(Event, &mut Builder<'static>),
    ) -> io::Result<PerfGroup> {
        let builder = |e: Event| {
            let mut b = Builder::new(perf_event::events::Software::DUMMY);
            configure(e, &mut b);
            b.observe_self()
                .any_cpu()
                .exclude_kernel(!include_kernel)
                .exclude_hv(true)
                .inherit(false);
            b
        };
        let (first, rest) = events
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no events"))?;
        let mut lead = builder(*first);
        lead.read_format(
            ReadFormat::GROUP | ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING,
        );
        let mut leader = lead.build()?;
        let mut opened = vec![*first];
        let mut ids = vec![leader.id()];
        let mut members = Vec::new();
        for &e in rest {
            if let Ok(member) = builder(e).build_with_group(&mut leader) {
                opened.push(e);
                ids.push(member.id());
                members.push(member);
            }
        }
        leader.enable_group()?;
        // Measured on Linux 6.18: a software event enabled on the running
        // thread (task-clock aside) starts counting only once the thread is
        // next scheduled in; page faults of the first sample were lost (0 for
        // 64 fresh pages touched). A 1 µs sleep switches the thread out and in.
        std::thread::sleep(std::time::Duration::from_micros(1));
        let words = vec![0; 3 + 2 * opened.len()];
        Ok(PerfGroup {
            leader,
            _members: members,
            events: opened,
            ids,
            words,
        })
    }

    /// The events counted, in read order.
    pub(super) fn events(&self) -> &[Event] {
        &self.events
    }

    /// How many events the group counts.
    pub(super) fn len(&self) -> usize {
        self.events.len()
    }

    /// Read every member's running total into `out` (length [`Self::len`]).
    ///
    /// # Errors
    /// The OS error of `read`, or `InvalidData` for a short read.
    pub(super) fn read(&mut self, out: &mut [u64]) -> io::Result<GroupRead> {
        let bytes = std::mem::size_of_val(self.words.as_slice());
        // SAFETY: reads at most `bytes` bytes into the buffer we own.
        let n = unsafe {
            libc::read(
                self.leader.as_raw_fd(),
                self.words.as_mut_ptr().cast(),
                bytes,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = (n as usize) / std::mem::size_of::<u64>();
        parse_group(&self.words[..got], &self.ids, out)
    }
}
