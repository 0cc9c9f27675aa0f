//! `perflab doctor`'s tight-loop probe of the clocks: windows, divergent
//! read pairs, the longest gap, backward and torn reads. Raw data only; the
//! analysis is in Python.

use serde::Serialize;

use super::bracket::{delta, disagreement};
use super::read::{true_ns, Snapshot, MAX_SNAPSHOT_WIDTH};

/// What a tight-loop probe of the clocks saw, raw: analysis happens in Python.
///
/// `windows` are snapshots taken every `window_ns` of true time (first =
/// start, last = end); `events` are consecutive snapshot pairs whose clocks
/// diverged by more than the event floor (steps, or pauses under a clock that
/// runs at the wrong rate), at most `MAX_EVENTS` kept and the rest counted;
/// `backward` counts backward steps of each OS clock; `longest_gap` is the
/// widest pair of consecutive reads; `torn_reads` counts snapshots discarded
/// because a preemption split them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProbeData {
    pub iterations: u64,
    pub windows: Vec<Snapshot>,
    pub events: Vec<(Snapshot, Snapshot)>,
    pub events_dropped: u64,
    pub torn_reads: u64,
    pub backward: BackwardSteps,
    pub longest_gap: (Snapshot, Snapshot),
}

/// Backward steps seen of each OS clock a [`Snapshot`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BackwardSteps {
    pub monotonic: u64,
    pub realtime: u64,
    pub monotonic_raw: u64,
    pub boottime: u64,
}

impl BackwardSteps {
    /// Count the clocks that stepped back from `a` to `b`.
    fn count(&mut self, a: &Snapshot, b: &Snapshot) {
        self.monotonic += u64::from(b.monotonic < a.monotonic);
        self.realtime += u64::from(b.realtime < a.realtime);
        self.monotonic_raw += u64::from(b.monotonic_raw < a.monotonic_raw);
        self.boottime += u64::from(b.boottime < a.boottime);
    }
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
            data.torn_reads += 1;
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
    data.backward.count(a, b);
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

#[cfg(test)]
mod tests {
    use super::super::calibrate_tsc;
    use super::*;

    #[test]
    fn probe_runs_for_its_duration_and_sees_no_step() {
        let rate = calibrate_tsc(5_000_000);
        let t0 = true_ns();
        let data = probe(50_000_000, 5_000_000, 1_000_000_000, rate);
        let took = true_ns() - t0;
        assert!((50_000_000..5_000_000_000).contains(&took), "took {took}");
        assert!(data.iterations > 100);
        assert!(data.windows.len() >= 3);
        assert_eq!(data.backward.monotonic, 0);
        assert!(
            data.events.is_empty(),
            "no event above a 1 s floor: {:?}",
            data.events
        );
    }
}
