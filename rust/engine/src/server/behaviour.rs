//! What `perflab serve` can be told to do to each request: a delay drawn
//! from a distribution, periodic stalls, and deliberate faults; each parsed
//! from its option's text with the one duration grammar ([`crate::duration`]).

use std::time::Duration;

use serde::Deserialize;

use crate::duration::parse_or_message as parse_duration;
use crate::load::schedule::SplitMix64;

/// The per-request processing delay of the server.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(try_from = "String")]
pub enum Delay {
    /// Always this long.
    Fixed(Duration),
    /// Uniform between the two bounds.
    Uniform(Duration, Duration),
    /// Exponential with this mean.
    Exp(Duration),
}

impl Delay {
    /// Parse `"1ms"` (fixed), `"uniform:1ms:5ms"` or `"exp:2ms"` (mean);
    /// each duration in the one grammar (`"0.5"` is half a second).
    ///
    /// # Errors
    /// A message naming the accepted forms, or a bad duration.
    pub fn parse(s: &str) -> Result<Delay, String> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        match parts.as_slice() {
            [d] => Ok(Delay::Fixed(parse_duration(d)?)),
            ["uniform", a, b] => {
                let (a, b) = (parse_duration(a)?, parse_duration(b)?);
                if a > b {
                    return Err(format!(
                        "uniform delay {s:?}: the low bound is above the high bound"
                    ));
                }
                Ok(Delay::Uniform(a, b))
            }
            ["exp", m] => Ok(Delay::Exp(parse_duration(m)?)),
            _ => Err(format!(
                "bad delay {s:?}: write 1ms, uniform:1ms:5ms or exp:2ms"
            )),
        }
    }

    /// Draw one delay.
    pub fn sample(&self, rng: &mut SplitMix64) -> Duration {
        match *self {
            Delay::Fixed(d) => d,
            Delay::Uniform(a, b) => a + (b - a).mul_f64(rng.next_f64()),
            Delay::Exp(m) => m.mul_f64(-rng.next_f64_open0().ln()),
        }
    }
}

/// Periodic stalls: all responses freeze for `length` at the end of every
/// `every` period since the server started, i.e. during
/// `[k·every + (every − length), (k+1)·every)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Stall {
    pub length: Duration,
    pub every: Duration,
}

impl Stall {
    /// Parse `"1s/10s"` (1 s stall every 10 s).
    ///
    /// # Errors
    /// A message for a bad form or when the stall is not shorter than its
    /// period.
    pub fn parse(s: &str) -> Result<Stall, String> {
        let (a, b) = s
            .split_once('/')
            .ok_or_else(|| format!("bad stall {s:?}: write LENGTH/PERIOD, e.g. 1s/10s"))?;
        let stall = Stall {
            length: parse_duration(a)?,
            every: parse_duration(b)?,
        };
        if stall.length.is_zero() || stall.length >= stall.every {
            return Err(format!(
                "bad stall {s:?}: the stall must be positive and shorter than its period"
            ));
        }
        Ok(stall)
    }

    /// When the stall covering `elapsed` (time since server start) ends, or
    /// None when `elapsed` is outside every stall.
    pub fn end_of_stall(&self, elapsed: Duration) -> Option<Duration> {
        let every = self.every.as_nanos();
        let phase = elapsed.as_nanos() % every;
        (phase >= every - self.length.as_nanos())
            .then(|| elapsed + Duration::from_nanos((every - phase) as u64))
    }
}

/// A deliberate misbehaviour, for testing clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum Fault {
    #[default]
    None,
    /// Send the head and half the body, then close the connection.
    CloseMidResponse,
    /// Send a chunked head, then a 1-byte chunk every 100 ms, forever.
    EndlessBody,
}

impl Fault {
    /// Parse `none`, `close_mid_response` or `endless_body`.
    ///
    /// # Errors
    /// A message naming the accepted values.
    pub fn parse(s: &str) -> Result<Fault, String> {
        match s {
            "none" | "" => Ok(Fault::None),
            "close_mid_response" => Ok(Fault::CloseMidResponse),
            "endless_body" => Ok(Fault::EndlessBody),
            _ => Err(format!(
                "unknown fault {s:?}: use none, close_mid_response or endless_body"
            )),
        }
    }
}

/// Each behaviour is read from its text by its `parse`.
macro_rules! from_text {
    ($($t:ty),*) => {$(
        impl TryFrom<String> for $t {
            type Error = String;
            fn try_from(text: String) -> Result<Self, String> {
                <$t>::parse(&text)
            }
        }
    )*};
}
from_text!(Delay, Stall, Fault);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_parse_and_sample_in_range() {
        let mut rng = SplitMix64::new(1);
        assert_eq!(
            Delay::parse("3ms").unwrap().sample(&mut rng),
            Duration::from_millis(3)
        );
        let u = Delay::parse("uniform:1ms:5ms").unwrap();
        for _ in 0..1000 {
            let d = u.sample(&mut rng);
            assert!(d >= Duration::from_millis(1) && d <= Duration::from_millis(5));
        }
        let e = Delay::parse("exp:2ms").unwrap();
        let mean: f64 = (0..20_000)
            .map(|_| e.sample(&mut rng).as_secs_f64())
            .sum::<f64>()
            / 20_000.0;
        assert!((mean - 0.002).abs() < 0.0001, "{mean}");
        assert!(Delay::parse("uniform:5ms:1ms").is_err());
        assert!(Delay::parse("normal:1ms").unwrap_err().contains("uniform"));
    }

    #[test]
    fn stalls_parse_and_cover_the_end_of_each_period() {
        let s = Stall::parse("1s/10s").unwrap();
        assert_eq!(s.end_of_stall(Duration::from_secs(5)), None);
        assert_eq!(
            s.end_of_stall(Duration::from_millis(9500)),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            s.end_of_stall(Duration::from_millis(19_000)),
            Some(Duration::from_secs(20))
        );
        assert_eq!(s.end_of_stall(Duration::from_millis(20_001)), None);
        assert!(Stall::parse("10s/1s").is_err());
        assert!(Stall::parse("1s").unwrap_err().contains("LENGTH/PERIOD"));
        assert_eq!(Fault::parse("endless_body"), Ok(Fault::EndlessBody));
        assert!(Fault::parse("boom").is_err());
    }
}
