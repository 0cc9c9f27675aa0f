//! The open-loop connection pool's idle list and the rule by which the pool
//! follows the load down as well as up.
//!
//! The dispatcher opens a connection when every open one is busy (up to the
//! pool's cap), so the pool grows to the peak number of requests in flight.
//! Such peaks are often brief (a stall of the server, or of this machine,
//! lets requests pile up), and a pool kept at its peak for the rest of a
//! long step holds memory (a read buffer and socket state per connection)
//! that the load no longer needs.
//!
//! The rule: idle connections are reused last-in first-out, so the ones at
//! the bottom of the list are those idle the longest. A connection idle
//! longer than the idle bound ([`POOL_IDLE`]) is closed, oldest first, while
//! the pool holds more than its initial size. Under LIFO reuse, `k`
//! connections idle for the whole bound mean that over that time at most
//! `open − k` requests were ever in flight at once: the pool shrinks to the
//! peak of the last bound, never below it, and so never below what the
//! recent load needed. It is the idle timeout of HTTP client pools (Go's
//! `http.Transport.IdleConnTimeout`, which k6 uses; hyper's
//! `pool_idle_timeout`), with LIFO reuse so that the timeout measures
//! surplus rather than mere quiet; wrk2 and oha instead keep a fixed set of
//! connections for the whole run.
//!
//! Latency is not affected in kind: a request that finds no idle connection
//! opens one, and its connect time is part of its latency from the intended
//! send time, as it is when the pool grows.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long an open-loop connection may stay idle while the pool holds more
/// than its initial size. Long against a request and against a stall's
/// backlog (so a steady load does not churn connections: one in rank `k` is
/// closed only when `k` requests were never in flight at once for this
/// long), short against a shaped step (a ramp or sine of tens of seconds),
/// so the pool follows the load down within a few seconds.
pub const POOL_IDLE: Duration = Duration::from_secs(5);

/// How often the pool looks for connections idle past the bound: a quarter
/// of it, between 1 ms and 100 ms (so a connection is closed within 25% of
/// the bound past it, at a cost of at most 10 wake-ups a second).
pub fn reap_every(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(1), Duration::from_millis(100))
}

/// Idle connections (any `T`), with when each became idle.
///
/// `push` and `pop` are last-in first-out (the dispatcher reuses the most
/// recently idle connection); [`IdleList::expired`] takes from the other
/// end, the longest idle. All operations are O(1) per item.
#[derive(Debug)]
pub struct IdleList<T> {
    items: VecDeque<(T, Instant)>,
}

impl<T> Default for IdleList<T> {
    fn default() -> Self {
        Self {
            items: VecDeque::new(),
        }
    }
}

impl<T> IdleList<T> {
    /// Mark `item` idle since `now`.
    pub fn push(&mut self, item: T, now: Instant) {
        self.items.push_back((item, now));
    }

    /// The most recently idle item, if any.
    pub fn pop(&mut self) -> Option<T> {
        self.items.pop_back().map(|(item, _)| item)
    }

    /// Idle items.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.items.len()
    }

    /// Forget every idle item.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Take the items idle for at least `bound` at `now`, longest idle
    /// first, but at most `surplus` of them (the pool's size less its
    /// floor). Items taken are no longer idle: the caller closes them.
    pub fn expired(&mut self, now: Instant, bound: Duration, surplus: usize) -> Vec<T> {
        let mut out = Vec::new();
        while out.len() < surplus {
            match self.items.front() {
                Some(&(_, since)) if now.saturating_duration_since(since) >= bound => {
                    out.extend(self.items.pop_front().map(|(item, _)| item));
                }
                _ => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUND: Duration = Duration::from_secs(5);

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// A fake pool driven by a fake clock: `open` connections numbered in
    /// order, all idle (a burst has just ended at `t`).
    fn after_burst(t0: Instant, open: usize) -> IdleList<usize> {
        let mut l = IdleList::default();
        for c in 0..open {
            l.push(c, t0);
        }
        l
    }

    #[test]
    fn reuse_is_last_in_first_out() {
        let t0 = Instant::now();
        let mut l = after_burst(t0, 3);
        assert_eq!(l.pop(), Some(2));
        l.push(2, ms(t0, 1));
        assert_eq!(l.pop(), Some(2));
        assert_eq!(l.pop(), Some(1));
        assert_eq!(l.pop(), Some(0));
        assert_eq!(l.pop(), None);
    }

    #[test]
    fn a_burst_shrinks_to_what_a_light_rate_needs_after_the_bound() {
        // A burst left 40 connections idle at t0; then a light rate keeps
        // one request in flight at a time for 6 s, every 10 ms: it takes
        // the most recent idle connection and gives it back.
        let t0 = Instant::now();
        let mut l = after_burst(t0, 40);
        let (mut open, floor) = (40_usize, 1);
        let mut closed = Vec::new();
        for tick in 1..=600 {
            let now = ms(t0, tick * 10);
            let c = l.pop().unwrap();
            l.push(c, now);
            closed.extend(l.expired(now, BOUND, open - floor));
            open = l.len();
            if now < t0 + BOUND {
                assert!(closed.is_empty(), "closed before the bound at {tick}");
            }
        }
        // The light rate needs one connection: every other one went, the
        // longest idle (the burst's first) first.
        assert_eq!(open, 1);
        assert_eq!(closed.len(), 39);
        assert_eq!(&closed[..3], &[0, 1, 2]);
        assert_eq!(l.pop(), Some(39));
    }

    #[test]
    fn the_pool_keeps_the_peak_of_the_last_bound() {
        // 10 connections; every 2 s, 6 requests are in flight at once for a
        // moment (the 6 most recent idle connections are used): the 4
        // never used for a whole bound close, the 6 stay.
        let t0 = Instant::now();
        let mut l = after_burst(t0, 10);
        let mut closed = 0;
        for s in 1..=20 {
            let now = ms(t0, s * 1000);
            if s % 2 == 0 {
                let busy: Vec<_> = (0..6).map_while(|_| l.pop()).collect();
                for c in busy.into_iter().rev() {
                    l.push(c, now);
                }
            }
            let open = l.len();
            closed += l.expired(now, BOUND, open - 1).len();
        }
        assert_eq!((l.len(), closed), (6, 4));
    }

    #[test]
    fn never_below_the_floor_and_nothing_before_the_bound() {
        let t0 = Instant::now();
        let mut l = after_burst(t0, 8);
        assert!(l.expired(ms(t0, 4_999), BOUND, 7).is_empty());
        assert_eq!(l.expired(ms(t0, 5_000), BOUND, 5), vec![0, 1, 2, 3, 4]);
        assert_eq!(l.len(), 3);
        assert!(l.expired(ms(t0, 60_000), BOUND, 0).is_empty());
        assert_eq!(l.len(), 3);
    }

    #[test]
    fn the_reaper_looks_often_enough_and_rarely() {
        assert_eq!(reap_every(BOUND), Duration::from_millis(100));
        assert_eq!(
            reap_every(Duration::from_millis(200)),
            Duration::from_millis(50)
        );
        assert_eq!(reap_every(Duration::ZERO), Duration::from_millis(1));
    }
}
