//! The one duration grammar of perflab: every option of every command that
//! takes a time (`--duration 1.5`, `--budget 2m`, `serve --delay exp:1ms`,
//! `--stall 1s/10s`, ...) is read by [`parse_seconds`], in Rust here and in
//! Python through `perflab._core.parse_duration_s`.
//!
//! Grammar (units case-insensitive; white space allowed around the whole
//! text, between a number and its unit, and between components):
//!
//! ```text
//! duration  := sign? component+
//! sign      := "+" | "-"
//! component := number unit?
//! number    := digit* ("." digit+)? (("e" | "E") sign? digit+)?   -- at least one digit
//! unit      := "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "min" | "h"
//! ```
//!
//! A bare number is seconds, and only stands alone (`1.5`); a compound gives
//! every component a unit, each unit at most once and from the largest down
//! (`1h30m`, `1m 30s`, `2s500ms`). The sign applies to the whole. Values are
//! at most [`MAX_SECONDS`] either way; negative values are returned as they
//! are, so that each option rejects them by their meaning ("must be above
//! zero"), and [`parse`] (a [`Duration`]) refuses them.

use std::fmt;
use std::time::Duration;

/// Longest duration any option accepts, s: a year (anything longer is a
/// typo or an attack).
pub const MAX_SECONDS: f64 = 366.0 * 86400.0;

/// Units from the largest down, with their length in seconds.
const UNITS: [(&[&str], f64); 6] = [
    (&["h"], 3600.0),
    (&["m", "min"], 60.0),
    (&["s"], 1.0),
    (&["ms"], 1e-3),
    (&["us", "µs", "μs"], 1e-6),
    (&["ns"], 1e-9),
];

/// What is wrong with a duration's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// Not in the grammar (no number, an unknown unit, a bare number in a
    /// compound, units repeated or out of order, ...).
    NotADuration,
    /// Beyond [`MAX_SECONDS`] either way, or not finite.
    TooLong,
    /// Below zero where only a length makes sense ([`parse`]).
    Negative,
}

impl DurationError {
    /// The reason, worded to follow the option and its text:
    /// `--budget '5x' is not a duration; write e.g. 500ms, 5s or 2m`.
    pub fn reason(self) -> &'static str {
        match self {
            DurationError::NotADuration => "is not a duration; write e.g. 500ms, 5s or 2m",
            DurationError::TooLong => {
                "is longer than any run can last (a year at most); write e.g. 500ms, 5s or 2m"
            }
            DurationError::Negative => "must not be negative; write e.g. 500ms, 5s or 2m",
        }
    }

    /// `"{text:?} {reason}"`: the message where no option name is at hand.
    pub fn message(self, text: &str) -> String {
        format!("{text:?} {}", self.reason())
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for DurationError {}

/// A cursor over the text being parsed.
struct Scanner<'a> {
    rest: &'a str,
}

impl<'a> Scanner<'a> {
    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    /// The longest prefix whose chars satisfy `keep`, consumed.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let end = self.rest.find(|c| !keep(c)).unwrap_or(self.rest.len());
        let (head, tail) = self.rest.split_at(end);
        self.rest = tail;
        head
    }

    /// A number as the grammar defines it, or None (nothing consumed then
    /// matters: the caller fails).
    fn number(&mut self) -> Option<f64> {
        let start = self.rest;
        let whole = self.take_while(|c| c.is_ascii_digit()).len();
        let mut digits = whole;
        if let Some(after) = self.rest.strip_prefix('.') {
            let fraction = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            if fraction == 0 {
                return None;
            }
            self.rest = &after[fraction..];
            digits += fraction;
        }
        if digits == 0 {
            return None;
        }
        if let Some(after) = self.rest.strip_prefix(['e', 'E']) {
            let unsigned = after.strip_prefix(['+', '-']).unwrap_or(after);
            let exponent = unsigned
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(unsigned.len());
            if exponent > 0 {
                self.rest = &unsigned[exponent..];
            }
        }
        start[..start.len() - self.rest.len()].parse().ok()
    }

    /// A unit's position in [`UNITS`], None when no letters follow, or
    /// Err for letters that are no unit.
    fn unit(&mut self) -> Result<Option<usize>, DurationError> {
        let word = self.take_while(|c| c.is_alphabetic());
        if word.is_empty() {
            return Ok(None);
        }
        let word = word.to_lowercase();
        UNITS
            .iter()
            .position(|(names, _)| names.contains(&word.as_str()))
            .map(Some)
            .ok_or(DurationError::NotADuration)
    }
}

/// Parse a duration (see the module's grammar) into seconds, sign kept.
///
/// # Errors
/// [`DurationError::NotADuration`] outside the grammar,
/// [`DurationError::TooLong`] beyond [`MAX_SECONDS`] either way.
pub fn parse_seconds(text: &str) -> Result<f64, DurationError> {
    let mut s = Scanner { rest: text.trim() };
    let negative = s.rest.starts_with('-');
    s.rest = s.rest.strip_prefix(['+', '-']).unwrap_or(s.rest);
    let (mut total, mut components) = (0.0f64, 0);
    let mut next_unit = 0; // the largest unit still allowed
    let mut bare = false;
    while !s.rest.is_empty() {
        let value = s.number().ok_or(DurationError::NotADuration)?;
        s.skip_space();
        components += 1;
        match s.unit()? {
            Some(u) if u >= next_unit => {
                total += value * UNITS[u].1;
                next_unit = u + 1;
            }
            Some(_) => return Err(DurationError::NotADuration),
            None => {
                total += value;
                bare = true;
            }
        }
        s.skip_space();
    }
    if components == 0 || (bare && components > 1) {
        return Err(DurationError::NotADuration);
    }
    let seconds = if negative { -total } else { total };
    if !seconds.is_finite() || seconds.abs() > MAX_SECONDS {
        return Err(DurationError::TooLong);
    }
    Ok(seconds)
}

/// Parse a duration that is a length of time: [`parse_seconds`], then
/// negative values refused.
///
/// # Errors
/// As [`parse_seconds`], and [`DurationError::Negative`] below zero.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let seconds = parse_seconds(text)?;
    if seconds < 0.0 {
        return Err(DurationError::Negative);
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// [`parse`] with its error as a one-line message naming the text, for the
/// parsers of composite values (`serve --delay uniform:1ms:5ms`, `--stall`).
///
/// # Errors
/// `"{text:?} {reason}"`, e.g. `"5x" is not a duration; write e.g. ...`.
pub fn parse_or_message(text: &str) -> Result<Duration, String> {
    parse(text).map_err(|e| e.message(text.trim()))
}

/// Serde helper for an optional length of time given as text
/// (`#[serde(deserialize_with = "crate::duration::deserialize_text")]`):
/// null or absent is None, text goes through [`parse`].
///
/// # Errors
/// Not text, or [`parse_or_message`]'s message.
pub fn deserialize_text<'de, D>(deserializer: D) -> Result<Option<Duration>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize;
    Option::<String>::deserialize(deserializer)?
        .map(|text| parse_or_message(&text))
        .transpose()
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> f64 {
        parse_seconds(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn bare_numbers_are_seconds() {
        assert_eq!(s("1.5"), 1.5);
        assert_eq!(s("1"), 1.0);
        assert_eq!(s(".5"), 0.5);
        assert_eq!(s("1e3"), 1000.0);
        assert_eq!(s(" 2 "), 2.0);
        assert_eq!(parse("1"), Ok(Duration::from_secs(1)));
    }

    #[test]
    fn every_unit_scales() {
        assert_eq!(s("250ns"), 250.0 * 1e-9);
        assert_eq!(s("250us"), 250.0 * 1e-6);
        assert_eq!(s("250µs"), 250.0 * 1e-6);
        assert_eq!(s("250μs"), 250.0 * 1e-6);
        assert_eq!(s("1.5ms"), 1.5e-3);
        assert_eq!(s("2s"), 2.0);
        assert_eq!(s("2m"), 120.0);
        assert_eq!(s("2min"), 120.0);
        assert_eq!(s("2h"), 7200.0);
        assert_eq!(s("5 MS"), 5e-3);
        assert_eq!(s("1e-3s"), 1e-3);
        assert_eq!(parse("0.2ms"), Ok(Duration::from_micros(200)));
    }

    #[test]
    fn compounds_add_up_from_the_largest_unit_down() {
        assert_eq!(s("1m30s"), 90.0);
        assert_eq!(s("1m 30s"), 90.0);
        assert_eq!(s("1h2m3s"), 3723.0);
        assert_eq!(s("2s500ms"), 2.5);
        assert_eq!(s("-1m30s"), -90.0);
        for bad in ["30s1m", "1s1s", "1m30", "30 1m", "1min1m"] {
            assert_eq!(
                parse_seconds(bad),
                Err(DurationError::NotADuration),
                "{bad}"
            );
        }
    }

    #[test]
    fn signs_are_kept_for_the_caller_and_refused_as_lengths() {
        assert_eq!(s("-1ms"), -1e-3);
        assert_eq!(s("+5s"), 5.0);
        assert_eq!(parse("-1ms"), Err(DurationError::Negative));
        assert_eq!(parse("-0"), Ok(Duration::ZERO));
    }

    #[test]
    fn text_outside_the_grammar_is_refused() {
        for bad in [
            "", " ", "ms", "5x", "2d", "1.", "5.s", "1..5s", "- 5s", "--5s", "5e", "1,5s", "nan",
            "inf", "soon", "1s!", "0x10s",
        ] {
            assert_eq!(
                parse_seconds(bad),
                Err(DurationError::NotADuration),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_year_is_the_bound_either_way() {
        assert_eq!(s("8784h"), MAX_SECONDS);
        assert_eq!(parse_seconds("8785h"), Err(DurationError::TooLong));
        assert_eq!(parse_seconds("-8785h"), Err(DurationError::TooLong));
        assert_eq!(parse_seconds("1e12s"), Err(DurationError::TooLong));
        assert_eq!(parse_seconds("1e400"), Err(DurationError::TooLong));
    }

    #[test]
    fn messages_name_the_text_and_what_to_write() {
        let m = parse_or_message(" 5x ").unwrap_err();
        assert_eq!(m, "\"5x\" is not a duration; write e.g. 500ms, 5s or 2m");
        assert!(parse_or_message("-1s")
            .unwrap_err()
            .contains("must not be negative"));
        assert!(DurationError::TooLong.reason().contains("a year at most"));
    }
}
