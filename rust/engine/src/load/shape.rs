//! Load shapes: an offered rate that changes over a step.
//!
//! A shape is a rate function `λ(t)` (requests/s, `t` in seconds from the
//! step's `t0`). Its cumulative `Λ(t) = ∫₀ᵗ λ` is the expected number of
//! requests due by `t`, and the intended send times are the arrival times of
//! a non-homogeneous process obtained by *time change* (Çinlar 1975; Lewis &
//! Shedler 1979 use the same inversion): request `n` of an evenly spaced
//! stream is due at `Λ⁻¹(n)`, and a Poisson process of rate `λ(t)` is
//! `Λ⁻¹` applied to the points of a unit-rate Poisson process. So every
//! arrival model of [`super::Schedule`] works on a shape unchanged, and
//! latency is still measured from each intended time (no coordinated
//! omission).
//!
//! Shapes: a linear ramp `from..to` over `over_s` (held at `to` after), and
//! a sine `mean ± amplitude` of period `period_s`. A stepped shape is a
//! sweep (one held step per rate) and needs nothing here.

use serde::{Deserialize, Serialize};

/// An offered rate over time; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Shape {
    /// `λ(t) = from + (to − from)·t/over_s` for `t < over_s`, then `to`.
    Ramp { from: f64, to: f64, over_s: f64 },
    /// `λ(t) = mean + amplitude·sin(2πt/period_s)`, `amplitude < mean`.
    Sine {
        mean: f64,
        amplitude: f64,
        period_s: f64,
    },
}

impl Shape {
    /// Check the parameters.
    ///
    /// # Errors
    /// One line naming the bad value: a rate that is not positive and
    /// finite, a non-positive length, or a sine whose amplitude is not below
    /// its mean (the rate would reach zero).
    pub fn validate(&self) -> Result<(), String> {
        let pos = |name: &str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a positive number, got {x}"))
            }
        };
        match *self {
            Shape::Ramp { from, to, over_s } => {
                pos("ramp start rate", from)?;
                pos("ramp end rate", to)?;
                pos("ramp length (s)", over_s)
            }
            Shape::Sine {
                mean,
                amplitude,
                period_s,
            } => {
                pos("sine mean rate", mean)?;
                pos("sine period (s)", period_s)?;
                if !(amplitude.is_finite() && amplitude >= 0.0 && amplitude < mean) {
                    return Err(format!(
                        "sine amplitude must be at least 0 and below the mean rate ({mean}), \
                         got {amplitude}"
                    ));
                }
                Ok(())
            }
        }
    }

    /// The offered rate at `t_s` seconds after `t0`, requests/s.
    pub fn rate_at(&self, t_s: f64) -> f64 {
        match *self {
            Shape::Ramp { from, to, over_s } => from + (to - from) * (t_s / over_s).clamp(0.0, 1.0),
            Shape::Sine {
                mean,
                amplitude,
                period_s,
            } => mean + amplitude * (std::f64::consts::TAU * t_s / period_s).sin(),
        }
    }

    /// The highest rate the shape reaches, requests/s (to size the pool
    /// and check what the engine threads can schedule).
    pub fn peak(&self) -> f64 {
        match *self {
            Shape::Ramp { from, to, .. } => from.max(to),
            Shape::Sine {
                mean, amplitude, ..
            } => mean + amplitude,
        }
    }

    /// `Λ(t_s)`: the expected number of requests due in `[0, t_s)`.
    pub fn expected(&self, t_s: f64) -> f64 {
        let t = t_s.max(0.0);
        match *self {
            Shape::Ramp { from, to, over_s } => {
                let k = (to - from) / over_s;
                let u = t.min(over_s);
                from * u + 0.5 * k * u * u + to * (t - u)
            }
            Shape::Sine {
                mean,
                amplitude,
                period_s,
            } => {
                let w = std::f64::consts::TAU / period_s;
                mean * t + amplitude / w * (1.0 - (w * t).cos())
            }
        }
    }

    /// `Λ⁻¹(n)`: the time (s after `t0`) by which `n` requests are due.
    /// Exact for a ramp (the quadratic's stable root); for a sine a
    /// Newton iteration kept inside a bracket that always holds the root
    /// (`Λ(t) − mean·t` lies in `[0, 2·amplitude/ω]`), to 1 ns.
    pub fn time_of(&self, n: f64) -> f64 {
        let n = n.max(0.0);
        match *self {
            Shape::Ramp { from, to, over_s } => {
                let at_end = self.expected(over_s);
                if n >= at_end {
                    return over_s + (n - at_end) / to;
                }
                let k = (to - from) / over_s;
                // Root of k/2·t² + from·t − n = 0, written without the
                // cancellation of (−from + √…)/k.
                2.0 * n / (from + (from * from + 2.0 * k * n).max(0.0).sqrt())
            }
            Shape::Sine {
                mean,
                amplitude,
                period_s,
            } => {
                // 2·amplitude/ω = amplitude·period/π bounds Λ(t) − mean·t.
                let lo = (n - amplitude * period_s / std::f64::consts::PI) / mean;
                self.inverse_in(n, lo.max(0.0), n / mean)
            }
        }
    }

    /// The `t` in `[lo, hi]` with `Λ(t) = n` (the bracket holds it), to
    /// 1 ns: Newton steps, a bisection whenever one would leave the bracket.
    fn inverse_in(&self, n: f64, mut lo: f64, mut hi: f64) -> f64 {
        let mut t = 0.5 * (lo + hi);
        for _ in 0..100 {
            let f = self.expected(t) - n;
            if f > 0.0 {
                hi = t;
            } else {
                lo = t;
            }
            if hi - lo < 1e-9 {
                break;
            }
            let next = t - f / self.rate_at(t);
            t = if next > lo && next < hi {
                next
            } else {
                0.5 * (lo + hi)
            };
        }
        t
    }

    /// The mean offered rate over `[a_s, b_s)`, requests/s.
    pub fn mean_rate(&self, a_s: f64, b_s: f64) -> f64 {
        if b_s <= a_s {
            return self.rate_at(a_s);
        }
        (self.expected(b_s) - self.expected(a_s)) / (b_s - a_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAMP: Shape = Shape::Ramp {
        from: 1000.0,
        to: 10_000.0,
        over_s: 20.0,
    };
    const SINE: Shape = Shape::Sine {
        mean: 5000.0,
        amplitude: 2000.0,
        period_s: 30.0,
    };

    #[test]
    fn expected_counts_are_the_integral_of_the_rate() {
        for s in [RAMP, SINE] {
            // Trapezoid sum of λ against the closed form.
            let (mut sum, dt) = (0.0, 1e-3);
            for i in 0..40_000 {
                let t = i as f64 * dt;
                sum += 0.5 * (s.rate_at(t) + s.rate_at(t + dt)) * dt;
            }
            assert!((sum - s.expected(40.0)).abs() < 1e-3 * sum, "{s:?}");
        }
        // A 1k→10k ramp over 20 s: 110,000 requests, then 10k/s held.
        assert!((RAMP.expected(20.0) - 110_000.0).abs() < 1e-6);
        assert!((RAMP.expected(21.0) - 120_000.0).abs() < 1e-6);
        // A whole sine period offers exactly mean × period.
        assert!((SINE.expected(30.0) - 150_000.0).abs() < 1e-6);
    }

    #[test]
    fn time_of_inverts_expected() {
        for s in [
            RAMP,
            SINE,
            Shape::Ramp {
                from: 9000.0,
                to: 100.0,
                over_s: 5.0,
            },
        ] {
            for n in [0.0, 0.5, 1.0, 17.0, 1234.5, 60_000.0, 109_999.0, 300_000.0] {
                let t = s.time_of(n);
                assert!((s.expected(t) - n).abs() < 1e-4, "{s:?} n={n} t={t}");
            }
        }
    }

    #[test]
    fn the_ramp_rate_grows_linearly_between_its_ends() {
        assert_eq!(RAMP.rate_at(0.0), 1000.0);
        assert_eq!(RAMP.rate_at(10.0), 5500.0);
        assert_eq!(RAMP.rate_at(25.0), 10_000.0);
        assert_eq!(RAMP.peak(), 10_000.0);
        assert!((RAMP.mean_rate(0.0, 20.0) - 5500.0).abs() < 1e-9);
        assert_eq!(SINE.peak(), 7000.0);
    }

    #[test]
    fn bad_shapes_are_refused_by_name() {
        let bad = [
            (
                Shape::Ramp {
                    from: 0.0,
                    to: 5.0,
                    over_s: 1.0,
                },
                "start",
            ),
            (
                Shape::Ramp {
                    from: 1.0,
                    to: 5.0,
                    over_s: f64::NAN,
                },
                "length",
            ),
            (
                Shape::Sine {
                    mean: 5.0,
                    amplitude: 5.0,
                    period_s: 1.0,
                },
                "amplitude",
            ),
        ];
        for (s, word) in bad {
            assert!(s.validate().unwrap_err().contains(word), "{s:?}");
        }
        assert!(RAMP.validate().is_ok() && SINE.validate().is_ok());
    }
}
