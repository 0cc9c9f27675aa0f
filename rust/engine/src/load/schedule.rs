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

use super::shape::Shape;

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

/// Most slots in one period of [`Lanes`].
pub const MAX_LANE_PERIOD: u64 = 1 << 20;

/// One load agent's part of a constant schedule that several agents share.
///
/// The shared schedule is evenly spaced at `1 / R` (request `n` is due at
/// `n / R`); it repeats every `period` requests, and this agent sends the
/// requests `n` with `n mod period` in `slots`. An agent with `m` slots
/// offers `R·m/period`, so agents with unequal shares (a capacity-weighted
/// split) still add up to one evenly spaced stream. The even split of `R`
/// over `N` agents is `period = N`, agent `k` holding slot `k`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lanes {
    period: u64,
    slots: Vec<u64>,
}

impl Lanes {
    /// Lanes of `period` with this agent's `slots`.
    ///
    /// # Errors
    /// A period of 0 or above [`MAX_LANE_PERIOD`], no slots, or slots not
    /// strictly increasing below the period.
    pub fn new(period: u64, slots: Vec<u64>) -> Result<Self, String> {
        if period == 0 || period > MAX_LANE_PERIOD {
            return Err(format!(
                "slot_period must be between 1 and {MAX_LANE_PERIOD}, got {period}"
            ));
        }
        let increasing = slots.windows(2).all(|w| w[0] < w[1]);
        match slots.last() {
            Some(&last) if increasing && last < period => Ok(Self { period, slots }),
            _ => Err(format!(
                "slots must be a non-empty, strictly increasing list of numbers below \
                 slot_period ({period})"
            )),
        }
    }
}

/// The intended send times of one engine thread in one step.
///
/// With `threads` engine threads sharing a total `rate` (req/s), thread `k`
/// of a constant schedule sends at offsets `(k + i * threads) / rate`, so the
/// union over threads is evenly spaced at `1 / rate`; on [`Lanes`], thread
/// `k` sends this agent's requests `k + i * threads` of its slots. A Poisson
/// schedule gives each thread an independent Poisson process of rate
/// `rate/threads`; their superposition is a Poisson process of rate `rate`.
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
    /// Constant arrivals on an agent's lanes: the lanes, the shared
    /// schedule's gap (ns), this thread and the engine's threads.
    lanes: Option<(Lanes, f64, u64, u64)>,
    /// A load shape: the offsets above are then in units of
    /// 1/[`SHAPE_UNITS`] expected request, mapped to time by `Λ⁻¹`.
    shape: Option<Shape>,
}

/// Sub-units of one expected request in the internal clock of a shaped
/// [`Schedule`] (a Poisson gap keeps this resolution before `Λ⁻¹`).
pub const SHAPE_UNITS: f64 = 1000.0;

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
            lanes: None,
            shape: None,
        }
    }

    /// The schedule of thread `thread` of `threads` on a load `shape` (see
    /// [`super::shape`]): the same arrival model on the shape's clock, so
    /// thread `k` of a constant schedule sends the shape's requests
    /// `k + i·threads`, due at `Λ⁻¹(k + i·threads)`.
    pub fn shaped(
        arrival: Arrival,
        shape: Shape,
        thread: usize,
        threads: usize,
        seed: u64,
    ) -> Self {
        let mut s = Self::new(arrival, 1e9 / SHAPE_UNITS, thread, threads, seed);
        s.shape = Some(shape);
        s
    }

    /// A shaped schedule's internal offset `u` as ns after `t0`.
    fn shape_ns(&self, u: u64) -> u64 {
        match &self.shape {
            None => u,
            Some(sh) => (sh.time_of(u as f64 / SHAPE_UNITS) * 1e9) as u64,
        }
    }

    /// ns after `t0` as a shaped schedule's internal offset (the first
    /// offset at or after it).
    fn shape_units(&self, ns: u64) -> u64 {
        match &self.shape {
            None => ns,
            Some(sh) => (sh.expected(ns as f64 / 1e9) * SHAPE_UNITS).ceil() as u64,
        }
    }

    /// The same constant schedule (of `rate` over `threads`, this thread
    /// `thread`, as given to [`Schedule::new`]) placed on a load agent's
    /// `lanes` of a shared schedule (see [`Lanes`]); Poisson arrivals are
    /// left as they are.
    pub fn on_lanes(mut self, lanes: &Lanes, rate: f64, thread: usize, threads: usize) -> Self {
        if self.arrival == Arrival::Constant {
            let unit_ns = 1e9 * lanes.slots.len() as f64 / (rate * lanes.period as f64);
            self.lanes = Some((lanes.clone(), unit_ns, thread as u64, threads.max(1) as u64));
        }
        self
    }

    /// The next intended send time, as ns after the step start. Strictly
    /// non-decreasing. O(1), no allocation.
    pub fn next_offset_ns(&mut self) -> u64 {
        let u = self.next_unit();
        self.shape_ns(u)
    }

    /// The next offset on the schedule's own clock (ns, or shape units).
    fn next_unit(&mut self) -> u64 {
        let t = match self.arrival {
            Arrival::Constant => self.constant_offset(self.index),
            Arrival::Poisson => {
                // Inverse-CDF sampling of Exp(1/gap): -ln(U) * gap.
                self.poisson_ns += -self.rng.next_f64_open0().ln() * self.gap_ns;
                self.poisson_ns as u64
            }
        };
        self.index += 1;
        t
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
        let (from_ns, limit_ns) = (self.shape_units(from_ns), self.shape_units(limit_ns));
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
        match &self.lanes {
            None => (self.phase_ns + i as f64 * self.gap_ns) as u64,
            Some((lanes, unit_ns, thread, threads)) => {
                let j = thread + i * threads;
                let m = lanes.slots.len() as u64;
                let n = (j / m) * lanes.period + lanes.slots[(j % m) as usize];
                (n as f64 * unit_ns) as u64
            }
        }
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
            let t = self.next_unit();
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
    fn agents_on_lanes_interleave_into_one_even_stream() {
        // 1,000 req/s shared unevenly: agent 0 (2 threads) holds slots 0, 2
        // and 3 of every 5 (600/s), agent 1 (1 thread) slots 1 and 4
        // (400/s); their union is the 1 ms grid, each request once.
        let agents = [(vec![0, 2, 3], 2usize), (vec![1, 4], 1)];
        let mut times: Vec<u64> = agents
            .iter()
            .flat_map(|(slots, threads)| {
                let lanes = Lanes::new(5, slots.clone()).unwrap();
                let rate = 1000.0 * slots.len() as f64 / 5.0;
                (0..*threads).flat_map(move |k| {
                    let mut s = Schedule::new(Arrival::Constant, rate, k, *threads, 7)
                        .on_lanes(&lanes, rate, k, *threads);
                    let mut t = Vec::new();
                    loop {
                        let x = s.next_offset_ns();
                        if x >= 1_000_000_000 {
                            return t;
                        }
                        t.push(x);
                    }
                })
            })
            .collect();
        times.sort_unstable();
        assert_eq!(times.len(), 1000);
        for (i, t) in times.iter().enumerate() {
            assert!((*t as i64 - i as i64 * 1_000_000).abs() <= 1, "{i}: {t}");
        }
    }

    #[test]
    fn lanes_refuse_what_cannot_be_a_share() {
        assert!(Lanes::new(3, vec![0, 2]).is_ok());
        for (period, slots) in [(0, vec![0]), (3, vec![]), (3, vec![2, 1]), (3, vec![3])] {
            assert!(Lanes::new(period, slots).is_err());
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
        let lanes = Lanes::new(7, vec![1, 2, 5]).unwrap();
        let cases = [
            (100.0, 0, 1, None),
            (3000.0, 1, 3, None),
            (7.0, 0, 1, None),
            (300.0, 1, 2, Some(&lanes)),
        ];
        for (rate, thread, threads, on) in cases {
            let make = || {
                let s = Schedule::new(Arrival::Constant, rate, thread, threads, 1);
                match on {
                    Some(l) => s.on_lanes(l, rate, thread, threads),
                    None => s,
                }
            };
            let walk = |from: u64, limit: u64| {
                let mut s = make();
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
                let mut s = make();
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

    #[test]
    fn shaped_threads_interleave_into_the_shapes_even_stream() {
        // A 1k→10k/s ramp over 2 s on 3 threads: the union of the threads'
        // intended times is request n due at Λ⁻¹(n), 11,000 of them.
        let ramp = Shape::Ramp {
            from: 1000.0,
            to: 10_000.0,
            over_s: 2.0,
        };
        let mut all: Vec<u64> = (0..3)
            .flat_map(|k| {
                let mut s = Schedule::shaped(Arrival::Constant, ramp, k, 3, 1);
                std::iter::from_fn(move || Some(s.next_offset_ns()))
                    .take_while(|&t| t < 2_000_000_000)
            })
            .collect();
        all.sort_unstable();
        assert_eq!(all.len(), 11_000);
        for (n, t) in all.iter().enumerate() {
            let expect = ramp.time_of(n as f64) * 1e9;
            assert!((*t as f64 - expect).abs() <= 2.0, "{n}: {t} vs {expect}");
        }
        // Requests due in the first and the last 100 ms: the rate grew.
        let first = all.iter().filter(|&&t| t < 100_000_000).count();
        let last = all.iter().filter(|&&t| t >= 1_900_000_000).count();
        assert_eq!((first, last), (123, 977)); // Λ(0.1) = 122.5, Λ(2) − Λ(1.9) = 977.5
    }

    #[test]
    fn shaped_poisson_follows_the_rate_and_skips_by_the_shape() {
        let sine = Shape::Sine {
            mean: 5000.0,
            amplitude: 4000.0,
            period_s: 2.0,
        };
        let mut s = Schedule::shaped(Arrival::Poisson, sine, 0, 1, 11);
        let times: Vec<u64> = std::iter::from_fn(|| Some(s.next_offset_ns()))
            .take_while(|&t| t < 2_000_000_000)
            .collect();
        // Each quarter period holds Λ(b) − Λ(a) arrivals, within 5 σ.
        let count = |a: f64, b: f64| {
            times
                .iter()
                .filter(|&&t| t as f64 >= a * 1e9 && (t as f64) < b * 1e9)
                .count() as f64
        };
        for (a, b) in [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0)] {
            let expect = sine.expected(b) - sine.expected(a);
            assert!(
                (count(a, b) - expect).abs() < 5.0 * expect.sqrt(),
                "{a}: {expect}"
            );
        }
        // skip_until on a shaped constant schedule counts what a walk sees.
        for (from, limit) in [(0u64, 1_000_000_000u64), (123_456_789, 1_987_654_321)] {
            let mut a = Schedule::shaped(Arrival::Constant, sine, 1, 2, 1);
            let mut b = a.clone();
            a.next_offset_ns();
            b.next_offset_ns();
            let walk = std::iter::from_fn(|| Some(b.next_offset_ns()))
                .take_while(|&t| t < limit)
                .filter(|&t| t >= from)
                .count() as u64;
            assert_eq!(a.skip_until(from, limit), walk, "{from} {limit}");
        }
    }
}
