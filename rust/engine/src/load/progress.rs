//! Live progress readable from another thread while a run goes on.

use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::hdr::{new_histogram, Histogram};

/// A point-in-time view of the current step, for live display.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Snapshot {
    /// 0-based index of the running step.
    pub step: usize,
    pub steps: usize,
    /// Offered rate of the step, req/s (None in closed loop).
    pub offered_rate: Option<f64>,
    /// Wall seconds since the step started (warmup included).
    pub wall_s: f64,
    /// True while the step is still in its warmup.
    pub in_warmup: bool,
    /// Responses and failures counted so far: `ok_responses + failures`.
    pub completed: u64,
    /// OK responses completed inside the recorded window so far.
    pub ok_responses: u64,
    /// Recorded requests that failed so far.
    pub failures: u64,
    /// `ok_responses` per second of recorded time so far.
    pub achieved_rate: f64,
    /// p99 of successful latency so far, µs (0 before any success).
    pub p99_us: u64,
}

struct Inner {
    snap: Snapshot,
    started: Option<Instant>,
    warmup_s: f64,
    latency: Histogram<u64>,
}

/// Shared progress of a run: engine threads publish deltas every ~100 ms;
/// any thread may read a [`Snapshot`]. Lock held for microseconds.
pub struct Progress {
    inner: Mutex<Inner>,
}

impl Default for Progress {
    fn default() -> Self {
        let snap = Snapshot {
            step: 0,
            steps: 0,
            offered_rate: None,
            wall_s: 0.0,
            in_warmup: false,
            completed: 0,
            ok_responses: 0,
            failures: 0,
            achieved_rate: 0.0,
            p99_us: 0,
        };
        Self {
            inner: Mutex::new(Inner {
                snap,
                started: None,
                warmup_s: 0.0,
                latency: new_histogram(),
            }),
        }
    }
}

impl Progress {
    /// Start a new step: counters reset.
    pub fn begin_step(
        &self,
        step: usize,
        steps: usize,
        offered_rate: Option<f64>,
        start: Instant,
        warmup_s: f64,
    ) {
        let mut g = self.lock();
        g.snap = Snapshot {
            step,
            steps,
            offered_rate,
            in_warmup: warmup_s > 0.0,
            ..Snapshot::clone(&g.snap)
        };
        g.snap.completed = 0;
        g.snap.ok_responses = 0;
        g.snap.failures = 0;
        g.snap.achieved_rate = 0.0;
        g.snap.p99_us = 0;
        g.started = Some(start);
        g.warmup_s = warmup_s;
        g.latency.reset();
    }

    /// Add an engine thread's delta since its last publish.
    pub fn publish(&self, ok_responses: u64, failures: u64, latency: &Histogram<u64>) {
        let mut g = self.lock();
        g.snap.ok_responses += ok_responses;
        g.snap.failures += failures;
        g.snap.completed += ok_responses + failures;
        let _ = g.latency.add(latency);
    }

    /// The current view.
    pub fn snapshot(&self) -> Snapshot {
        let g = self.lock();
        let mut s = g.snap.clone();
        if let Some(start) = g.started {
            s.wall_s = start.elapsed().as_secs_f64().max(0.0);
            s.in_warmup = s.wall_s < g.warmup_s;
            let recorded = s.wall_s - g.warmup_s;
            s.achieved_rate = if recorded > 0.0 {
                s.ok_responses as f64 / recorded
            } else {
                0.0
            };
        }
        s.p99_us = if g.latency.is_empty() {
            0
        } else {
            g.latency.value_at_quantile(0.99)
        };
        s
    }

    /// The successful latencies of the current step so far, encoded as in
    /// results files ([`crate::hdr::encode`]): what a controller merges
    /// exactly across load agents for a live p99.
    pub fn latency_encoded(&self) -> String {
        crate::hdr::encode(&self.lock().latency)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_accumulates_and_begin_step_resets() {
        let p = Progress::default();
        p.begin_step(0, 2, Some(100.0), Instant::now(), 0.0);
        let mut h = new_histogram();
        h.record(1000).unwrap();
        p.publish(1, 2, &h);
        p.publish(3, 0, &h);
        let s = p.snapshot();
        assert_eq!((s.completed, s.ok_responses, s.failures), (6, 4, 2));
        assert!((s.p99_us as i64 - 1000).abs() <= 1);
        p.begin_step(1, 2, Some(200.0), Instant::now(), 1.0);
        let s = p.snapshot();
        assert_eq!(
            (s.step, s.completed, s.p99_us, s.in_warmup),
            (1, 0, 0, true)
        );
    }
}
