//! The timeline of a step: per interval (1 s by default) the requests sent,
//! the OK responses and failures completed, and HdrHistograms of latency
//! and send lag.
//!
//! Two clocks, as the quantities need: a request's latency and send lag go
//! to the interval of its *intended* send time (so the latency of the load
//! offered in that second, coordinated omission included: a stall shows in
//! the second whose requests it held up), while OK responses and failures
//! count in the interval in which they *completed* (so `ok ÷ interval` is
//! the achieved rate of that second, as the step's achieved rate is).
//!
//! Memory stays flat over any length: an interval's histograms are sealed
//! (encoded, V2 deflate, a few hundred bytes; [`crate::hdr::encode`]) and
//! dropped as soon as the dispatcher has passed its end and none of its
//! requests is in flight; only the counters (five numbers) stay per
//! interval. Engine threads' timelines merge exactly at step end (counts
//! add, histograms add), and so do agents' (the encodings are standard).

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::hdr::{decode, encode, new_histogram, record, summarize, with_highest, Histogram};

/// A histogram of an interval: live while requests of it may still record,
/// then sealed.
enum Hist {
    Live(Histogram<u64>),
    Sealed(String),
}

impl Hist {
    fn seal(&mut self) {
        if let Hist::Live(h) = self {
            *self = Hist::Sealed(encode(h));
        }
    }

    fn decoded(&self) -> Histogram<u64> {
        match self {
            Hist::Live(h) => h.clone(),
            Hist::Sealed(b64) => decode(b64).unwrap_or_else(|_| new_histogram()),
        }
    }
}

/// One interval of one thread.
struct Row {
    sent: u64,
    ok: u64,
    errors: u64,
    in_flight: u64,
    latency: Hist,
    send_lag: Hist,
}

impl Row {
    fn new() -> Self {
        Row {
            sent: 0,
            ok: 0,
            errors: 0,
            in_flight: 0,
            latency: Hist::Live(new_histogram()),
            send_lag: Hist::Live(new_histogram()),
        }
    }
}

/// Most intervals of one step (a 1 s interval over a day); later requests
/// count in the last.
pub const MAX_INTERVALS: usize = 86_400;

/// One engine thread's timeline of one step.
pub struct Timeline {
    t0: Instant,
    interval_ns: u64,
    rows: Vec<Row>,
    /// Rows below this are sealed.
    sealed_to: usize,
    /// The row of the latest request handed out.
    issued_row: usize,
    /// The last row looked up and its interval `[start, end)`: most
    /// lookups fall in it, and two comparisons replace a division.
    last: (Instant, Instant, usize),
}

impl Timeline {
    /// An empty timeline from `t0` in intervals of `interval` (≥ 1 ms).
    pub fn new(t0: Instant, interval: Duration) -> Self {
        Timeline {
            t0,
            interval_ns: (interval.as_nanos() as u64).max(1_000_000),
            rows: Vec::new(),
            sealed_to: 0,
            issued_row: 0,
            last: (t0, t0, 0),
        }
    }

    fn row_of(&mut self, t: Instant) -> usize {
        let (start, end, j) = self.last;
        if start <= t && t < end {
            return j;
        }
        let ns = t.saturating_duration_since(self.t0).as_nanos() as u64;
        let j = ((ns / self.interval_ns) as usize).min(MAX_INTERVALS - 1);
        while self.rows.len() <= j {
            self.rows.push(Row::new());
        }
        if t >= self.t0 && j < MAX_INTERVALS - 1 {
            let start = self.t0 + Duration::from_nanos(j as u64 * self.interval_ns);
            self.last = (start, start + Duration::from_nanos(self.interval_ns), j);
        }
        j
    }

    /// A request intended at `intended` was handed to a connection.
    pub fn issue(&mut self, intended: Instant) {
        let j = self.row_of(intended);
        let row = &mut self.rows[j];
        row.sent += 1;
        row.in_flight += 1;
        if j > self.issued_row {
            self.issued_row = j;
            self.seal_ready();
        }
    }

    /// The request intended at `intended` ended at `end`: OK (`latency_us`
    /// from the intended time is recorded) or failed; `lag_us` is its send
    /// lag (open loop).
    pub fn done(
        &mut self,
        intended: Instant,
        end: Instant,
        ok: bool,
        latency_us: u64,
        lag_us: Option<u64>,
    ) {
        let k = self.row_of(end);
        if ok {
            self.rows[k].ok += 1;
        } else {
            self.rows[k].errors += 1;
        }
        let j = self.row_of(intended);
        let row = &mut self.rows[j];
        row.in_flight = row.in_flight.saturating_sub(1);
        if let (true, Hist::Live(h)) = (ok, &mut row.latency) {
            record(h, latency_us);
        }
        if let (Some(lag), Hist::Live(h)) = (lag_us, &mut row.send_lag) {
            record(h, lag);
        }
        if row.in_flight == 0 && j == self.sealed_to {
            self.seal_ready();
        }
    }

    /// Seal every row before the latest issued one whose requests are done.
    fn seal_ready(&mut self) {
        while self.sealed_to < self.issued_row && self.rows[self.sealed_to].in_flight == 0 {
            let row = &mut self.rows[self.sealed_to];
            row.latency.seal();
            row.send_lag.seal();
            self.sealed_to += 1;
        }
    }

    /// Rows whose histograms are still live (for tests of the memory bound).
    pub fn live_rows(&self) -> usize {
        self.rows.len() - self.sealed_to
    }
}

/// One interval of a step's merged timeline, as results carry it.
#[derive(Clone, Debug, Serialize)]
pub struct Interval {
    /// Start of the interval, s after the step's `t0` (warmup included).
    pub t_s: f64,
    /// Offered rate over the interval, requests/s: the shape's mean over
    /// it, or the step's rate (None in closed loop).
    pub offered_rate: Option<f64>,
    /// Requests intended in the interval and handed to a connection.
    pub sent: u64,
    /// OK responses completed in the interval (÷ interval = achieved rate).
    pub ok: u64,
    /// Failed requests (non-OK status or error) completed in the interval.
    pub errors: u64,
    /// Latency of the OK requests intended in the interval, from the
    /// intended send time, µs ([`crate::hdr::Report`]).
    pub latency: crate::hdr::Report,
    /// Send lag of the requests intended in the interval, µs.
    pub send_lag: crate::hdr::Report,
}

/// A step's timeline: the interval length and its intervals.
#[derive(Clone, Debug, Serialize)]
pub struct StepTimeline {
    pub interval_s: f64,
    pub intervals: Vec<Interval>,
}

/// Merge the threads' timelines of a step; `offered(a_s, b_s)` gives the
/// offered rate over an interval; every histogram is encoded with the
/// highest trackable value `highest_us` (see [`with_highest`]).
pub fn merge(
    parts: Vec<Timeline>,
    offered: impl Fn(f64, f64) -> Option<f64>,
    highest_us: u64,
) -> StepTimeline {
    let interval_ns = parts.first().map_or(1_000_000_000, |p| p.interval_ns);
    let n = parts.iter().map(|p| p.rows.len()).max().unwrap_or(0);
    let report = |h: &Histogram<u64>| {
        let h = with_highest(h, highest_us);
        crate::hdr::Report {
            summary: summarize(&h),
            encoded_b64: encode(&h),
        }
    };
    let intervals = (0..n)
        .map(|j| {
            let (mut lat, mut lag) = (new_histogram(), new_histogram());
            let (mut sent, mut ok, mut errors) = (0, 0, 0);
            for row in parts.iter().filter_map(|p| p.rows.get(j)) {
                sent += row.sent;
                ok += row.ok;
                errors += row.errors;
                let _ = lat.add(row.latency.decoded());
                let _ = lag.add(row.send_lag.decoded());
            }
            let a = (j as u64 * interval_ns) as f64 / 1e9;
            Interval {
                t_s: a,
                offered_rate: offered(a, a + interval_ns as f64 / 1e9),
                sent,
                ok,
                errors,
                latency: report(&lat),
                send_lag: report(&lag),
            }
        })
        .collect();
    StepTimeline {
        interval_s: interval_ns as f64 / 1e9,
        intervals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn requests_land_in_their_intended_and_completion_intervals() {
        let t0 = Instant::now();
        let mut a = Timeline::new(t0, S);
        let mut b = Timeline::new(t0, S);
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Sent at 0.9 s, answered at 1.2 s: latency in row 0, OK in row 1.
        a.issue(at(900));
        a.done(at(900), at(1200), true, 300_000, Some(5));
        b.issue(at(100));
        b.done(at(100), at(150), false, 50_000, Some(7));
        b.issue(at(2500));
        b.done(at(2500), at(2510), true, 10_000, Some(9));
        let m = merge(vec![a, b], |_, _| Some(2.0), 10_000_000);
        assert_eq!(m.intervals.len(), 3);
        let r: Vec<_> = m
            .intervals
            .iter()
            .map(|i| (i.sent, i.ok, i.errors))
            .collect();
        assert_eq!(r, vec![(2, 0, 1), (0, 1, 0), (1, 1, 0)]);
        assert_eq!(m.intervals[0].latency.summary.count, 1);
        assert!((m.intervals[0].latency.summary.p50_us as f64 - 300_000.0).abs() < 300.0);
        assert_eq!(m.intervals[0].send_lag.summary.count, 2);
        assert_eq!(m.intervals[2].t_s, 2.0);
        assert_eq!(m.intervals[1].offered_rate, Some(2.0));
    }

    #[test]
    fn rows_are_found_whatever_the_order_of_lookups() {
        let t0 = Instant::now();
        let mut tl = Timeline::new(t0, S);
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // the cached interval must never answer for a time outside it
        for (ms, row) in [
            (1500, 1),
            (500, 0),
            (1999, 1),
            (2000, 2),
            (999, 0),
            (1000, 1),
        ] {
            assert_eq!(tl.row_of(at(ms)), row, "{ms} ms");
        }
        assert_eq!(tl.row_of(t0 - Duration::from_millis(5)), 0);
        assert_eq!(tl.row_of(at(2500)), 2);
    }

    #[test]
    fn finished_intervals_are_sealed_so_memory_stays_flat() {
        let t0 = Instant::now();
        let mut tl = Timeline::new(t0, Duration::from_millis(10));
        // 10 minutes of 10 ms intervals, 20 requests each, one held open
        // across a whole interval now and then.
        let mut open: Option<Instant> = None;
        for j in 0..60_000u64 {
            for i in 0..20 {
                let t = t0 + Duration::from_micros(j * 10_000 + i * 500);
                tl.issue(t);
                if i == 0 && j % 100 == 0 {
                    if let Some(o) = open.replace(t) {
                        tl.done(o, t, true, 10_000, Some(1));
                    }
                    continue;
                }
                tl.done(t, t + Duration::from_micros(100), true, 100, Some(1));
            }
            assert!(tl.live_rows() <= 102, "{j}: {}", tl.live_rows());
        }
        let total: u64 = tl.rows.iter().map(|r| r.sent).sum();
        assert_eq!(total, 1_200_000);
    }
}
