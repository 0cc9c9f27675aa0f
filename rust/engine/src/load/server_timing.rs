//! `Server-Timing` response headers (W3C Server Timing; RFC 7230 list,
//! token and quoted-string syntax): parsed from each response head into a
//! reused [`Parsed`], then recorded per step into one HdrHistogram of `dur`
//! per metric name (µs), the app's total and the time outside the app.
//!
//! Everything here is bounded because the header comes from the server:
//! metric names over [`MAX_NAME`] bytes, a `dur` that is not a finite
//! number ≥ 0, or broken syntax mark the response *malformed* (counted,
//! never a failed request); at most [`MAX_PER_RESPONSE`] metrics are kept
//! from one response and [`MAX_METRICS`] distinct names per step (the rest
//! are counted in `metrics_dropped`).

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::hdr::{new_histogram, record, serialize_report, Histogram};

/// Longest metric name kept, bytes.
pub const MAX_NAME: usize = 64;
/// Most metrics kept from one response.
pub const MAX_PER_RESPONSE: usize = 32;
/// Most distinct metric names recorded per step (and engine thread).
pub const MAX_METRICS: usize = 32;

/// The `Server-Timing` metrics of one response, reused across responses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The response carried at least one `Server-Timing` header.
    pub present: bool,
    /// Some part of it was malformed (the well-formed metrics are kept).
    pub malformed: bool,
    /// Metrics beyond [`MAX_PER_RESPONSE`], not kept.
    pub dropped: u64,
    /// (name, dur in ms) of each well-formed metric with a `dur`, in order.
    pub metrics: Vec<(String, f64)>,
    /// (name, count) of each well-formed metric with a `count` parameter: how many
    /// spans of that name the request ran (perflab.trace's middleware sends it).
    pub counts: Vec<(String, u64)>,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A cursor over one header value.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> &[u8] {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        &self.s[start..self.i]
    }

    /// A quoted-string's content (escapes kept as is), the cursor on its
    /// opening quote; None when it is unterminated.
    fn quoted(&mut self) -> Option<&[u8]> {
        let start = self.i + 1;
        let mut j = start;
        while j < self.s.len() {
            match self.s[j] {
                b'\\' => j += 2,
                b'"' => {
                    self.i = j + 1;
                    return Some(&self.s[start..j]);
                }
                _ => j += 1,
            }
        }
        self.i = self.s.len();
        None
    }

    /// Skip to just past the next comma outside a quoted string.
    fn skip_element(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b',' => {
                    self.i += 1;
                    return;
                }
                b'"' => {
                    let _ = self.quoted();
                }
                _ => self.i += 1,
            }
        }
    }
}

/// One metric: its name, `dur` in ms and `count`, each when given.
type Element = (String, Option<f64>, Option<u64>);

/// One list element: `name *( OWS ";" OWS param [ OWS "=" OWS value ] )`.
/// Returns (name, dur in ms, count) or None when malformed; the cursor ends
/// past the element's comma.
fn element(c: &mut Cursor<'_>) -> Option<Element> {
    let name = c.token();
    if name.is_empty() || name.len() > MAX_NAME {
        c.skip_element();
        return None;
    }
    let name = String::from_utf8_lossy(name).into_owned();
    let mut dur = None;
    let mut count = None;
    loop {
        c.skip_ows();
        match c.peek() {
            None => return Some((name, dur, count)),
            Some(b',') => {
                c.i += 1;
                return Some((name, dur, count));
            }
            Some(b';') => c.i += 1,
            Some(_) => break,
        }
        c.skip_ows();
        let param = c.token().to_ascii_lowercase();
        if param.is_empty() {
            break;
        }
        c.skip_ows();
        if c.peek() != Some(b'=') {
            continue; // a parameter without a value: allowed, ignored
        }
        c.i += 1;
        c.skip_ows();
        let value = if c.peek() == Some(b'"') {
            match c.quoted() {
                Some(v) => v.to_vec(),
                None => return None,
            }
        } else {
            c.token().to_vec()
        };
        // The first `dur` counts (W3C processing model); `count` (an
        // extension parameter: spans of that name in the request) too;
        // `desc` and unknown parameters are ignored.
        if param == b"count" && count.is_none() {
            match std::str::from_utf8(&value)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
            {
                Some(n) => count = Some(n),
                None => break,
            }
        }
        if param == b"dur" && dur.is_none() {
            let ms = std::str::from_utf8(&value)
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0);
            match ms {
                Some(ms) => dur = Some(ms),
                None => break,
            }
        }
    }
    c.skip_element();
    None
}

/// Parse one `Server-Timing` header value into `out` (appending: a
/// response may carry several headers).
pub fn parse(value: &[u8], out: &mut Parsed) {
    out.present = true;
    let mut c = Cursor { s: value, i: 0 };
    loop {
        while matches!(c.peek(), Some(b' ' | b'\t' | b',')) {
            c.i += 1;
        }
        if c.peek().is_none() {
            return;
        }
        match element(&mut c) {
            None => out.malformed = true,
            Some((_, None, _)) => {} // a metric without a duration: nothing to record
            Some(_) if out.metrics.len() >= MAX_PER_RESPONSE => out.dropped += 1,
            Some((name, Some(ms), count)) => {
                if let Some(n) = count {
                    out.counts.push((name.clone(), n));
                }
                out.metrics.push((name, ms));
            }
        }
    }
}

impl Parsed {
    /// Forget the previous response (keeps the allocation).
    pub fn clear(&mut self) {
        self.present = false;
        self.malformed = false;
        self.dropped = 0;
        self.metrics.clear();
        self.counts.clear();
    }

    /// The app's total, ms: the metric named `app` or `total` (any case),
    /// else the largest `dur` (a lower bound when spans do not nest).
    pub fn app_total_ms(&self) -> Option<f64> {
        let named = self
            .metrics
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("app") || n.eq_ignore_ascii_case("total"));
        named
            .map(|(_, d)| *d)
            .or_else(|| self.metrics.iter().map(|(_, d)| *d).reduce(f64::max))
    }
}

fn us(ms: f64) -> u64 {
    // Finite and ≥ 0 by parsing; `as` saturates.
    (ms * 1000.0).round() as u64
}

/// The Server-Timing figures of one step (or one thread's share of it),
/// over the OK responses to recorded requests; histograms in µs.
#[derive(Clone, Debug, Serialize)]
pub struct ServerTiming {
    /// Responses that carried a `Server-Timing` header.
    pub responses: u64,
    /// Of those, responses whose header was partly or wholly malformed.
    pub malformed: u64,
    /// Metric values not recorded: beyond [`MAX_PER_RESPONSE`] in one
    /// response, or a new name beyond [`MAX_METRICS`] in the step.
    pub metrics_dropped: u64,
    /// `dur` per metric name, serialized as {name: histogram report}.
    #[serde(serialize_with = "metric_map")]
    pub metrics: BTreeMap<String, Histogram<u64>>,
    /// `count` per metric name (spans of that name per request), for the
    /// metrics that sent one; serialized as {name: histogram report}.
    #[serde(serialize_with = "metric_map")]
    pub counts: BTreeMap<String, Histogram<u64>>,
    /// The app's total per response ([`Parsed::app_total_ms`]).
    #[serde(serialize_with = "serialize_report")]
    pub app_total: Histogram<u64>,
    /// Service time (write start to last byte) minus the app's total, per
    /// response with a total, 0 when the total exceeds it.
    #[serde(serialize_with = "serialize_report")]
    pub outside_app: Histogram<u64>,
}

impl Default for ServerTiming {
    fn default() -> Self {
        Self {
            responses: 0,
            malformed: 0,
            metrics_dropped: 0,
            metrics: BTreeMap::new(),
            counts: BTreeMap::new(),
            app_total: new_histogram(),
            outside_app: new_histogram(),
        }
    }
}

impl ServerTiming {
    /// True when no response carried the header (the step omits it).
    pub fn is_empty(&self) -> bool {
        self.responses == 0
    }

    /// Record one OK response's parsed header; `service_us` is its
    /// service time. A response without the header records nothing.
    pub fn record(&mut self, parsed: &Parsed, service_us: u64) {
        if !parsed.present {
            return;
        }
        self.responses += 1;
        self.malformed += u64::from(parsed.malformed);
        self.metrics_dropped += parsed.dropped;
        for (name, ms) in &parsed.metrics {
            if let Some(h) = self.metrics.get_mut(name) {
                record(h, us(*ms));
            } else if self.metrics.len() < MAX_METRICS {
                let mut h = new_histogram();
                record(&mut h, us(*ms));
                self.metrics.insert(name.clone(), h);
            } else {
                self.metrics_dropped += 1;
            }
        }
        for (name, n) in &parsed.counts {
            if let Some(h) = self.counts.get_mut(name) {
                record(h, *n);
            } else if self.counts.len() < MAX_METRICS {
                let mut h = new_histogram();
                record(&mut h, *n);
                self.counts.insert(name.clone(), h);
            }
        }
        if let Some(total) = parsed.app_total_ms().map(us) {
            record(&mut self.app_total, total);
            record(&mut self.outside_app, service_us.saturating_sub(total));
        }
    }

    /// Add another thread's figures (the name cap applies to the merge).
    pub fn merge(&mut self, o: &ServerTiming) {
        self.responses += o.responses;
        self.malformed += o.malformed;
        self.metrics_dropped += o.metrics_dropped;
        for (name, h) in &o.metrics {
            if let Some(mine) = self.metrics.get_mut(name) {
                let _ = mine.add(h);
            } else if self.metrics.len() < MAX_METRICS {
                self.metrics.insert(name.clone(), h.clone());
            } else {
                self.metrics_dropped += h.len();
            }
        }
        for (name, h) in &o.counts {
            if let Some(mine) = self.counts.get_mut(name) {
                let _ = mine.add(h);
            } else if self.counts.len() < MAX_METRICS {
                self.counts.insert(name.clone(), h.clone());
            }
        }
        let _ = self.app_total.add(&o.app_total);
        let _ = self.outside_app.add(&o.outside_app);
    }
}

/// Serde helper: {name: histogram report}, names ascending.
fn metric_map<S: Serializer>(
    m: &BTreeMap<String, Histogram<u64>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    struct Report<'a>(&'a Histogram<u64>);
    impl Serialize for Report<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serialize_report(self.0, s)
        }
    }
    let mut map = s.serialize_map(Some(m.len()))?;
    for (name, h) in m {
        map.serialize_entry(name, &Report(h))?;
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(values: &[&str]) -> Parsed {
        let mut p = Parsed::default();
        for v in values {
            parse(v.as_bytes(), &mut p);
        }
        p
    }

    fn names(p: &Parsed) -> Vec<(&str, f64)> {
        p.metrics.iter().map(|(n, d)| (n.as_str(), *d)).collect()
    }

    #[test]
    fn standard_syntax_and_several_headers() {
        let p = parsed(&[
            "db;dur=12.3, render;desc=\"tmpl, with comma\";dur=4.1",
            "app ; dur = 17 , cache;desc=hit, miss;dur=0",
        ]);
        assert!(p.present && !p.malformed, "{p:?}");
        assert_eq!(
            names(&p),
            vec![("db", 12.3), ("render", 4.1), ("app", 17.0), ("miss", 0.0)]
        );
        assert_eq!(p.app_total_ms(), Some(17.0));
    }

    #[test]
    fn count_parameter_is_kept_per_metric() {
        let p = parsed(&["db;dur=12.3;count=41, render;dur=2, x;dur=1;count=abc"]);
        assert_eq!(p.counts, vec![("db".to_string(), 41)]);
        assert_eq!(names(&p), vec![("db", 12.3), ("render", 2.0)]);
        assert!(p.malformed);
        let mut st = ServerTiming::default();
        st.record(&p, 20_000);
        st.record(&p, 20_000);
        assert_eq!(st.counts["db"].len(), 2);
        assert_eq!(st.counts["db"].max(), 41);
        assert!(!st.counts.contains_key("render"));
    }

    #[test]
    fn first_dur_counts_and_unknown_params_are_ignored() {
        let p = parsed(&["x;dur=1;dur=2;foo;bar=\"baz\""]);
        assert_eq!(names(&p), vec![("x", 1.0)]);
        assert!(!p.malformed);
    }

    #[test]
    fn malformed_parts_are_flagged_and_the_rest_kept() {
        for bad in [
            "a;dur=abc, b;dur=2",
            "a;dur=-1, b;dur=2",
            "a;dur=NaN, b;dur=2",
            "a;dur=inf, b;dur=2",
            "=x, b;dur=2",
            "a dur=1, b;dur=2",
        ] {
            let p = parsed(&[bad]);
            assert!(p.malformed, "{bad}: {p:?}");
            assert_eq!(names(&p), vec![("b", 2.0)], "{bad}");
        }
        let p = parsed(&["a;desc=\"unterminated, b;dur=2"]);
        assert!(p.malformed && p.metrics.is_empty(), "{p:?}");
        let long = format!("{};dur=1, ok;dur=3", "n".repeat(MAX_NAME + 1));
        let p = parsed(&[&long]);
        assert!(p.malformed);
        assert_eq!(names(&p), vec![("ok", 3.0)]);
        let p = parsed(&["\u{1F600};dur=1"]);
        assert!(p.malformed && p.metrics.is_empty());
    }

    #[test]
    fn empty_and_garbage_values_never_panic() {
        for v in [
            "",
            ",,,",
            " ; ",
            ";;;===",
            "\"",
            "a;dur=\"5\"",
            "a;dur=",
            "\\\"x",
        ] {
            let p = parsed(&[v]);
            assert!(p.present);
            assert!(p.metrics.len() <= 1, "{v}: {p:?}");
        }
        assert_eq!(names(&parsed(&["a;dur=\"5\""])), vec![("a", 5.0)]);
    }

    #[test]
    fn per_response_and_per_step_caps() {
        let many: Vec<String> = (0..MAX_PER_RESPONSE + 5)
            .map(|i| format!("m{i};dur=1"))
            .collect();
        let p = parsed(&[&many.join(",")]);
        assert_eq!((p.metrics.len(), p.dropped), (MAX_PER_RESPONSE, 5));
        let mut st = ServerTiming::default();
        for i in 0..MAX_METRICS + 3 {
            st.record(&parsed(&[&format!("n{i};dur=2")]), 5_000);
        }
        assert_eq!(st.metrics.len(), MAX_METRICS);
        assert_eq!(st.metrics_dropped, 3);
        assert_eq!(st.responses, (MAX_METRICS + 3) as u64);
    }

    #[test]
    fn recording_totals_outside_and_merge() {
        let mut a = ServerTiming::default();
        let mut b = ServerTiming::default();
        a.record(&parsed(&["db;dur=3, app;dur=10"]), 12_000);
        a.record(&Parsed::default(), 9_000); // no header: nothing
        b.record(&parsed(&["db;dur=4"]), 5_000); // total = largest dur
        b.record(&parsed(&["app;dur=20, x;dur=zz"]), 15_000); // total above service time
        a.merge(&b);
        assert_eq!((a.responses, a.malformed), (3, 1));
        assert_eq!(a.metrics["db"].len(), 2);
        assert_eq!(a.app_total.len(), 3);
        assert!(a.app_total.equivalent(a.app_total.max(), 20_000));
        assert_eq!(a.outside_app.min(), 0);
        assert_eq!(a.outside_app.max(), 2_000);
    }
}
