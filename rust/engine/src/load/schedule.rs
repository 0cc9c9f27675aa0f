//! Intended send times for open-loop load.
//!
//! Open-loop load (wrk2, Gil Tene's coordinated-omission correction) sends
//! request `i` at an *intended* time fixed in advance, whatever the server
//! does; latency is measured from that time, so a stalled server cannot
//! silently slow the generator down and hide its own stall.
//!
//! A [`Schedule`] yields intended times as nanosecond offsets from the step
//! start `t0`, in increasing order, without storing them: the pending
//! backlog while every connection is busy is just the cursor position, so
//! memory stays constant for any duration.

/// SplitMix64 (Steele, Lea & Flood 2014): a tiny, fast, seedable PRNG whose
/// output passes BigCrush; plenty for arrival jitter and server error draws.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`; equal seeds give equal sequences.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in the half-open interval (0, 1] (never 0, so that
    /// `ln` of it is finite).
    pub fn next_f64_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// A uniform float in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How arrivals are spaced in an open-loop step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly spaced: `t_i = t0 + i / rate` (wrk2's model).
    Constant,
    /// A Poisson process: exponential inter-arrival times with mean
    /// `1 / rate`, drawn from a seeded [`SplitMix64`] (deterministic).
    Poisson,
}

impl Arrival {
    /// Parse `"constant"` or `"poisson"`.
    ///
    /// # Errors
    /// A message naming the accepted values for anything else.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "constant" => Ok(Arrival::Constant),
            "poisson" => Ok(Arrival::Poisson),
            _ => Err(format!(
                "unknown arrival {s:?}; use \"constant\" or \"poisson\""
            )),
        }
    }

    /// The name used in results (`"constant"`, `"poisson"`).
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// The intended send times of one engine thread in one step.
///
/// With `threads` engine threads sharing a total `rate` (req/s), thread `k`
/// of a constant schedule sends at offsets `(k + i * threads) / rate`, so the
/// union over threads is evenly spaced at `1 / rate`. A Poisson schedule
/// gives each thread an independent Poisson process of rate `rate/threads`;
/// their superposition is a Poisson process of rate `rate`.
#[derive(Clone, Debug)]
pub struct Schedule {
    arrival: Arrival,
    /// Mean gap between this thread's requests, ns (f64 to avoid drift).
    gap_ns: f64,
    /// Offset of this thread's first request, ns (constant arrivals).
    phase_ns: f64,
    index: u64,
    poisson_ns: f64,
    rng: SplitMix64,
}

impl Schedule {
    /// The schedule of thread `thread` (0-based) of `threads`, for a total
    /// offered `rate` in requests per second (`rate > 0`, finite).
    pub fn new(arrival: Arrival, rate: f64, thread: usize, threads: usize, seed: u64) -> Self {
        let threads = threads.max(1) as f64;
        Self {
            arrival,
            gap_ns: 1e9 * threads / rate,
            phase_ns: 1e9 * thread as f64 / rate,
            index: 0,
            poisson_ns: 0.0,
            rng: SplitMix64::new(seed ^ (thread as u64).wrapping_mul(0xA24B_AED4_963E_E407)),
        }
    }

    /// The same schedule shifted `offset_ns` later (every intended time;
    /// a Poisson process starts there): a load agent's place among several
    /// sharing one rate (see [`super::Config::phase`]).
    pub fn offset_by(mut self, offset_ns: f64) -> Self {
        self.phase_ns += offset_ns;
        self.poisson_ns += offset_ns;
        self
    }

    /// The next intended send time, as ns after the step start. Strictly
    /// non-decreasing. O(1), no allocation.
    pub fn next_offset_ns(&mut self) -> u64 {
        let t = match self.arrival {
            Arrival::Constant => self.phase_ns + self.index as f64 * self.gap_ns,
            Arrival::Poisson => {
                // Inverse-CDF sampling of Exp(1/gap): -ln(U) * gap.
                self.poisson_ns += -self.rng.next_f64_open0().ln() * self.gap_ns;
                self.poisson_ns
            }
        };
        self.index += 1;
        t as u64
    }

    /// How many times [`Schedule::next_offset_ns`] has been called.
    pub fn issued(&self) -> u64 {
        self.index
    }

    /// Skip every remaining intended time before `limit_ns` and return how
    /// many of them fall at or after `from_ns`: the requests of the window
    /// `[from_ns, limit_ns)` that were never sent when the dispatcher gave up.
    ///
    /// O(1) for constant arrivals. Poisson arrivals are drawn one by one up
    /// to [`EXACT_SKIP`] of them; the rest of the span is a single normal
    /// draw with the Poisson count's mean and variance λ·span (a Poisson
    /// process is memoryless, so the count over the remaining span does not
    /// depend on the arrivals before it). So a huge backlog never costs more
    /// than a few milliseconds to count.
    pub fn skip_until(&mut self, from_ns: u64, limit_ns: u64) -> u64 {
        match self.arrival {
            Arrival::Constant => {
                let start = self.first_index_at(from_ns).max(self.index);
                let stop = self.first_index_at(limit_ns).max(self.index);
                self.index = stop;
                stop.saturating_sub(start)
            }
            Arrival::Poisson => self.skip_poisson(from_ns, limit_ns),
        }
    }

    /// Constant arrivals: the offset of request `i`, as `next_offset_ns`
    /// computes it.
    fn constant_offset(&self, i: u64) -> u64 {
        (self.phase_ns + i as f64 * self.gap_ns) as u64
    }

    /// Constant arrivals: the first index whose offset is at or after `x_ns`.
    fn first_index_at(&self, x_ns: u64) -> u64 {
        let guess = ((x_ns as f64 - self.phase_ns) / self.gap_ns)
            .ceil()
            .max(0.0) as u64;
        let mut i = guess;
        // The float guess may be off by one at a boundary; settle it exactly.
        while i > 0 && self.constant_offset(i - 1) >= x_ns {
            i -= 1;
        }
        while self.constant_offset(i) < x_ns {
            i += 1;
        }
        i
    }

    fn skip_poisson(&mut self, from_ns: u64, limit_ns: u64) -> u64 {
        let mut n = 0;
        for _ in 0..EXACT_SKIP {
            let t = self.next_offset_ns();
            if t >= limit_ns {
                return n;
            }
            n += u64::from(t >= from_ns);
        }
        let start = (self.poisson_ns as u64).max(from_ns);
        if start >= limit_ns {
            return n;
        }
        let mean = (limit_ns - start) as f64 / self.gap_ns;
        // Box-Muller: one standard normal from two uniforms.
        let (u1, u2) = (self.rng.next_f64_open0(), self.rng.next_f64());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        self.poisson_ns = limit_ns as f64;
        n + (mean + z * mean.sqrt()).round().max(0.0) as u64
    }
}

/// Poisson arrivals counted one by one by [`Schedule::skip_until`] before
/// the rest is drawn at once (a normal draw is then within a fraction of a
/// percent of the exact count's distribution: its mean is over 65,536).
pub const EXACT_SKIP: u64 = 1 << 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_single_thread_is_evenly_spaced() {
        let mut s = Schedule::new(Arrival::Constant, 1000.0, 0, 1, 1);
        let t: Vec<u64> = (0..4).map(|_| s.next_offset_ns()).collect();
        assert_eq!(t, vec![0, 1_000_000, 2_000_000, 3_000_000]);
    }

    #[test]
    fn constant_threads_interleave_into_one_even_stream() {
        let mut all: Vec<u64> = (0..3)
            .flat_map(|k| {
                let mut s = Schedule::new(Arrival::Constant, 3000.0, k, 3, 1);
                (0..100).map(move |_| s.next_offset_ns())
            })
            .collect();
        all.sort_unstable();
        for (i, t) in all.iter().enumerate() {
            let expect = i as f64 * 1e9 / 3000.0;
            assert!((*t as f64 - expect).abs() <= 1.0, "{i}: {t} vs {expect}");
        }
    }

    #[test]
    fn agents_with_phases_interleave_into_one_even_stream() {
        // Two agents of one engine thread each share 1,000 req/s: agent k
        // offers 500/s shifted by k/1000 s; their union is the 1 ms grid.
        let mut times: Vec<u64> = (0..2u32)
            .flat_map(|k| {
                let mut s =
                    Schedule::new(Arrival::Constant, 500.0, 0, 1, 7).offset_by(f64::from(k) * 1e6);
                (0..50).map(move |_| s.next_offset_ns())
            })
            .collect();
        times.sort_unstable();
        for (i, t) in times.iter().enumerate() {
            assert_eq!(*t, i as u64 * 1_000_000);
        }
    }

    #[test]
    fn constant_has_no_cumulative_drift() {
        let mut s = Schedule::new(Arrival::Constant, 7.0, 0, 1, 1);
        let mut last = 0;
        for _ in 0..=7_000_000 {
            last = s.next_offset_ns();
        }
        assert!((last as i64 - 1_000_000_000_000_000).abs() <= 1, "{last}");
    }

    #[test]
    fn poisson_is_deterministic_for_a_seed() {
        let run = |seed| {
            let mut s = Schedule::new(Arrival::Poisson, 500.0, 0, 1, seed);
            (0..50).map(|_| s.next_offset_ns()).collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }

    #[test]
    fn poisson_mean_gap_and_spread_match_exponential() {
        let mut s = Schedule::new(Arrival::Poisson, 1000.0, 0, 1, 7);
        let n = 200_000;
        let mut prev = 0u64;
        let (mut sum, mut sum2) = (0.0, 0.0);
        for _ in 0..n {
            let t = s.next_offset_ns();
            assert!(t >= prev);
            let gap = (t - prev) as f64;
            sum += gap;
            sum2 += gap * gap;
            prev = t;
        }
        let mean = sum / n as f64;
        let sd = (sum2 / n as f64 - mean * mean).sqrt();
        // Exponential: mean = sd = 1 ms.
        assert!((mean - 1e6).abs() < 1e4, "mean {mean}");
        assert!((sd - 1e6).abs() < 2e4, "sd {sd}");
    }

    #[test]
    fn skip_until_counts_constant_arrivals_exactly() {
        for (rate, thread, threads) in [(100.0, 0, 1), (3000.0, 1, 3), (7.0, 0, 1)] {
            let walk = |from: u64, limit: u64| {
                let mut s = Schedule::new(Arrival::Constant, rate, thread, threads, 1);
                s.next_offset_ns();
                let mut n = 0;
                loop {
                    let t = s.next_offset_ns();
                    if t >= limit {
                        return n;
                    }
                    n += u64::from(t >= from);
                }
            };
            for (from, limit) in [(0, 500_000_000), (123_456_789, 987_654_321), (5, 5), (0, 1)] {
                let mut s = Schedule::new(Arrival::Constant, rate, thread, threads, 1);
                s.next_offset_ns();
                assert_eq!(
                    s.skip_until(from, limit),
                    walk(from, limit),
                    "{rate} {from} {limit}"
                );
            }
        }
    }

    #[test]
    fn skip_until_is_fast_and_right_for_a_huge_poisson_backlog() {
        // 10^9 arrivals' worth of span: counted in microseconds, mean right.
        let mut s = Schedule::new(Arrival::Poisson, 1e9, 0, 1, 3);
        let t = std::time::Instant::now();
        let n = s.skip_until(0, 1_000_000_000) as f64;
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert!((n - 1e9).abs() < 6.0 * 1e9f64.sqrt(), "{n}");
        // A small span is counted exactly, arrival by arrival.
        let mut a = Schedule::new(Arrival::Poisson, 1000.0, 0, 1, 9);
        let mut b = a.clone();
        let exact = (0..)
            .map(|_| b.next_offset_ns())
            .take_while(|&t| t < 50_000_000)
            .count();
        assert_eq!(a.skip_until(0, 50_000_000), exact as u64);
    }

    #[test]
    fn splitmix_floats_stay_in_range() {
        let mut r = SplitMix64::new(0);
        for _ in 0..10_000 {
            let a = r.next_f64_open0();
            let b = r.next_f64();
            assert!(a > 0.0 && a <= 1.0);
            assert!((0.0..1.0).contains(&b));
        }
    }

    #[test]
    fn arrival_parse_names_round_trip() {
        for a in [Arrival::Constant, Arrival::Poisson] {
            assert_eq!(Arrival::parse(a.name()), Ok(a));
        }
        assert!(Arrival::parse("uniform").unwrap_err().contains("poisson"));
    }
}
