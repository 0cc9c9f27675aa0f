//! HdrHistograms (Gil Tene's HdrHistogram; 3 significant digits, values in
//! µs in perflab): creating and recording, the percentile summary, the
//! standard V2-deflate base64 encoding written into results files, and the
//! one decoder of that text, bounded because results files are input from
//! anyone: every size is checked before it is allocated.

use std::io::Read;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
pub use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant decimal digits kept by every histogram.
pub const SIGFIG: u8 = 3;

/// A new empty auto-resizing histogram, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("3 significant digits is valid")
}

/// Record `value` in an auto-resizing histogram (`saturating_record` would
/// clamp to the current size instead of growing).
pub fn record(h: &mut Histogram<u64>, value: u64) {
    if h.record(value).is_err() {
        h.saturating_record(value);
    }
}

/// Percentile summary of a histogram, all values in µs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub min_us: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
}

/// Summarize `h` (zeros for an empty histogram). Percentiles are
/// HdrHistogram's `value_at_quantile` (highest-equivalent value of the
/// bucket holding the quantile), exact to 3 significant digits.
pub fn summarize(h: &Histogram<u64>) -> Summary {
    if h.is_empty() {
        return Summary {
            count: 0,
            min_us: 0,
            p50_us: 0,
            p90_us: 0,
            p99_us: 0,
            p999_us: 0,
            max_us: 0,
            mean_us: 0.0,
        };
    }
    Summary {
        count: h.len(),
        min_us: h.min(),
        p50_us: h.value_at_quantile(0.50),
        p90_us: h.value_at_quantile(0.90),
        p99_us: h.value_at_quantile(0.99),
        p999_us: h.value_at_quantile(0.999),
        max_us: h.max(),
        mean_us: h.mean(),
    }
}

/// A copy of `h` whose *highest trackable value* is `highest` (or `h`'s max
/// when that is larger), lowest 1, 3 significant digits, still auto-resizing.
///
/// The V2 header carries the highest trackable value. An auto-resizing
/// histogram's is whatever it grew to (about its max), so a reader that
/// allocates from the header (Python's `hdrhistogram`, whose
/// `decode_and_add` then fails with an IndexError on a histogram with a
/// larger max) can't merge two steps. Setting it to a fixed ceiling, the
/// run's timeout, gives every histogram of a run one shape.
pub fn with_highest(h: &Histogram<u64>, highest: u64) -> Histogram<u64> {
    let high = highest.max(h.max()).max(2);
    let mut out = Histogram::new_with_bounds(1, high, SIGFIG)
        .expect("bounds 1..high (high ≥ 2) with 3 digits are valid");
    out.auto(true);
    out.add(h)
        .expect("an auto-resizing histogram accepts every value");
    out
}

/// Encode `h` in the standard HdrHistogram V2 compressed (deflate) format,
/// then base64 (standard alphabet, padded): the form HdrHistogram tools in
/// Java, C, Go, Python and JS read.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing to a Vec cannot fail for a valid histogram");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A histogram as results files and `perflab._core` carry it: its summary
/// and its encoding ([`encode`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub summary: Summary,
    pub encoded_b64: String,
}

/// Serde helper: a histogram serialized as its [`Report`]
/// (`#[serde(serialize_with = "crate::hdr::serialize_report")]`).
///
/// # Errors
/// The serializer's.
pub fn serialize_report<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
    Report {
        summary: summarize(h),
        encoded_b64: encode(h),
    }
    .serialize(s)
}

/// A decoded histogram in full: its summary, its non-empty buckets and the
/// values at the quantiles asked for.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Detail {
    #[serde(flatten)]
    pub summary: Summary,
    /// Highest equivalent value of each non-empty bucket, ascending.
    pub values: Vec<u64>,
    /// Count of each bucket of `values`.
    pub counts: Vec<u64>,
    /// (quantile, value) pairs, serialized as {quantile: value}.
    #[serde(serialize_with = "pairs_as_map")]
    pub quantiles: Vec<(f64, u64)>,
}

/// The [`Detail`] of `h` at `quantiles` (each in [0, 1]; 0 is the value of
/// every quantile of an empty histogram).
///
/// # Errors
/// A quantile outside [0, 1] (NaN included).
pub fn detail(h: &Histogram<u64>, quantiles: &[f64]) -> Result<Detail, String> {
    let (values, counts) = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .unzip();
    let quantiles = quantiles
        .iter()
        .map(|&q| match q {
            q if !(0.0..=1.0).contains(&q) => Err(format!("quantile {q} is outside [0, 1]")),
            q if h.is_empty() => Ok((q, 0)),
            q => Ok((q, h.value_at_quantile(q))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Detail {
        summary: summarize(h),
        values,
        counts,
        quantiles,
    })
}

fn pairs_as_map<S: serde::Serializer>(pairs: &[(f64, u64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().copied())
}

/// Merge histograms exactly: every bucket's count is the sum of the
/// inputs' counts, so the merged percentiles are those of one histogram fed
/// every value (HdrHistogram's `add`). The inputs must share one bucket
/// layout: the same lowest discernible value and significant digits
/// (perflab's are auto-resizing, so their highest trackable values may
/// differ; the merged histogram grows to the largest).
///
/// # Errors
/// Histograms whose lowest discernible value or significant digits differ
/// (their buckets do not line up, so no exact merge exists).
pub fn merge(hists: &[Histogram<u64>]) -> Result<Histogram<u64>, String> {
    let Some(first) = hists.first() else {
        return Ok(new_histogram());
    };
    let (low, digits) = (first.low(), first.sigfig());
    let high = hists.iter().map(Histogram::high).max().unwrap_or(2 * low);
    let mut out = Histogram::new_with_bounds(low, high.max(2 * low), digits)
        .map_err(|e| format!("cannot create the merged histogram: {e}"))?;
    out.auto(true);
    for (i, h) in hists.iter().enumerate() {
        if (h.low(), h.sigfig()) != (low, digits) {
            return Err(format!(
                "histogram {i} has another bucket layout (lowest {}, {} digits) than \
                 histogram 0 (lowest {low}, {digits} digits): no exact merge",
                h.low(),
                h.sigfig()
            ));
        }
        out.add(h)
            .map_err(|e| format!("cannot add histogram {i}: {e:?}"))?;
    }
    Ok(out)
}

/// Longest base64 text accepted (perflab's histograms are a few KiB).
pub const MAX_ENCODED: usize = 4 << 20;
/// Largest V2 payload accepted after inflating, bytes.
pub const MAX_PAYLOAD: usize = 16 << 20;
/// Largest counts array a histogram may need (its memory is 8 bytes each).
pub const MAX_COUNTS: u64 = 1 << 21;
/// Highest trackable value accepted: 2^53 (µs: 285 years), exact in f64.
pub const MAX_HIGHEST: u64 = 1 << 53;
/// Cookies without their word-size bits (0xF0), which V2 ignores: other
/// implementations write 0x…03/0x…04 | size << 4, this crate reads 0x…13 only.
const V2: u32 = 0x1c84_9303;
const V2_DEFLATE: u32 = 0x1c84_9304;
const WORD_SIZE_BITS: u32 = 0xf0;
const HEADER: usize = 40;

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Length of the counts array HdrHistogram allocates for these bounds
/// (its `new_with_bounds` geometry), or None when it overflows.
pub fn counts_len(low: u64, high: u64, digits: u32) -> Option<u64> {
    let largest = 2 * 10u64.pow(digits);
    let magnitude = 64 - (largest - 1).leading_zeros();
    let half = 1u64 << (magnitude - 1);
    let unit = 63 - low.leading_zeros();
    let mut untrackable = (1u128 << magnitude) << unit;
    let mut buckets = 1u64;
    while untrackable <= u128::from(high) {
        untrackable <<= 1;
        buckets += 1;
    }
    (buckets + 1).checked_mul(half)
}

/// Decode base64 V2 or V2-deflate bytes into a histogram, within bounds.
///
/// # Errors
/// A message naming the bound or the defect: not base64, a foreign
/// cookie, a payload or counts array too large, a range beyond 2^53,
/// more than 5 significant digits, or a corrupt counts payload.
pub fn decode(b64: &str) -> Result<Histogram<u64>, String> {
    let text = b64.trim();
    if text.len() > MAX_ENCODED {
        return Err(format!(
            "histogram is {} bytes of base64, more than the {MAX_ENCODED} accepted",
            text.len()
        ));
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("histogram is not valid base64: {e}"))?;
    if raw.len() < 8 {
        return Err("not an HdrHistogram V2 encoding (too short)".into());
    }
    let mut plain = match be32(&raw, 0) & !WORD_SIZE_BITS {
        V2 => raw,
        V2_DEFLATE => {
            let length = be32(&raw, 4) as usize;
            let body = raw
                .get(8..8 + length)
                .ok_or("compressed length beyond the data")?;
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(body)
                .take(MAX_PAYLOAD as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("not an HdrHistogram V2 encoding (deflate: {e})"))?;
            if out.len() > MAX_PAYLOAD {
                return Err(format!("histogram inflates beyond {MAX_PAYLOAD} bytes"));
            }
            out
        }
        other => {
            return Err(format!(
                "not an HdrHistogram V2 encoding (cookie {other:#x})"
            ))
        }
    };
    check_plain(&plain)?;
    plain[0..4].copy_from_slice(&(V2 | 0x10).to_be_bytes());
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(&plain))
        .map_err(|e| format!("not an HdrHistogram V2 encoding: {e}"))
}

/// Check the header and the counts payload of an uncompressed V2 encoding.
fn check_plain(plain: &[u8]) -> Result<(), String> {
    if plain.len() < HEADER || be32(plain, 0) & !WORD_SIZE_BITS != V2 {
        return Err("not an HdrHistogram V2 encoding (bad inner cookie or header)".into());
    }
    let payload = be32(plain, 4) as usize;
    let digits = be32(plain, 12);
    let (low, high) = (be64(plain, 16), be64(plain, 24));
    if payload > plain.len() - HEADER {
        return Err("histogram payload is longer than its data (truncated?)".into());
    }
    if digits > 5 || low < 1 || high < low.saturating_mul(2) {
        return Err(format!(
            "histogram bounds are invalid (lowest {low}, highest {high}, {digits} digits)"
        ));
    }
    if high > MAX_HIGHEST {
        return Err(format!(
            "histogram range up to {high} is beyond the 2^53 accepted"
        ));
    }
    if counts_len(low, high, digits).is_none_or(|n| n > MAX_COUNTS) {
        return Err(format!(
            "histogram needs more than {MAX_COUNTS} buckets (range {low}..{high}, {digits} digits)"
        ));
    }
    // ZigZag u64::MAX decodes to i64::MIN, which the decoder cannot negate.
    let mut run = 0;
    for &byte in &plain[HEADER..HEADER + payload] {
        run = if byte == 0xff { run + 1 } else { 0 };
        if run >= 9 {
            return Err("histogram counts payload holds an impossible run length".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_is_exact() {
        let mut h = new_histogram();
        for v in [0, 1, 17, 999, 1_000, 123_456, 3_600_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let b64 = encode(&h);
        let back = decode(&b64).unwrap();
        assert_eq!(back, h);
        assert_eq!(summarize(&back), summarize(&h));
        assert!(decode("!!!").unwrap_err().contains("base64"));
        assert!(decode("AAAA").is_err());
    }

    #[test]
    fn with_highest_sets_the_headers_highest_trackable_value() {
        let mut h = new_histogram();
        for v in [5, 900, 12_345] {
            record(&mut h, v);
        }
        let wide = with_highest(&h, 10_000_000);
        assert_eq!(wide.high(), 10_000_000);
        assert_eq!(summarize(&wide), summarize(&h));
        let plain = decode(&encode(&wide)).unwrap();
        assert_eq!(plain.high(), 10_000_000);
        // A value beyond the ceiling is kept: the ceiling grows to hold it.
        assert!(with_highest(&h, 100).high() >= 12_345);
    }

    #[test]
    fn merge_equals_one_histogram_fed_every_value() {
        let (mut a, mut b, mut all) = (new_histogram(), new_histogram(), new_histogram());
        for v in 1..5_000u64 {
            let (h, x) = if v % 3 == 0 {
                (&mut a, v * 7)
            } else {
                (&mut b, v * v)
            };
            record(h, x);
            record(&mut all, x);
        }
        let merged = merge(&[decode(&encode(&a)).unwrap(), decode(&encode(&b)).unwrap()]).unwrap();
        assert_eq!(merged.len(), all.len());
        assert_eq!(summarize(&merged), summarize(&all));
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(merged.value_at_quantile(q), all.value_at_quantile(q));
        }
        assert_eq!(merge(&[]).unwrap().len(), 0);
        let other = Histogram::<u64>::new_with_bounds(1, 1000, 2).unwrap();
        assert!(merge(&[a, other]).unwrap_err().contains("bucket layout"));
    }

    #[test]
    fn empty_histogram_summary_is_zero_and_encodes() {
        let h = new_histogram();
        assert_eq!(summarize(&h).count, 0);
        assert_eq!(decode(&encode(&h)).unwrap().len(), 0);
    }

    #[test]
    fn detail_lists_the_buckets_and_refuses_bad_quantiles() {
        let mut h = new_histogram();
        h.record_n(10, 3).unwrap();
        h.record(2000).unwrap();
        let d = detail(&h, &[0.5]).unwrap();
        assert_eq!(d.values.len(), 2);
        assert_eq!(d.counts, vec![3, 1]);
        assert_eq!(d.quantiles, vec![(0.5, 10)]);
        assert_eq!(d.summary, summarize(&h));
        assert!(detail(&h, &[1.5]).unwrap_err().contains("outside [0, 1]"));
        assert!(detail(&h, &[f64::NAN]).is_err());
        let empty = detail(&new_histogram(), &[0.9]).unwrap();
        assert_eq!((empty.quantiles, empty.values.len()), (vec![(0.9, 0)], 0));
    }

    #[test]
    fn the_decoder_refuses_what_it_cannot_bound() {
        let mut h = new_histogram();
        h.record(5).unwrap();
        assert_eq!(decode(&encode(&h)).unwrap(), h);
        let huge = "A".repeat(MAX_ENCODED + 4);
        assert!(decode(&huge).unwrap_err().contains("accepted"));
        assert!(decode("AAAAAAAAAAAA").unwrap_err().contains("cookie"));
        assert_eq!(counts_len(1, 2, 3).map(|n| n > 0), Some(true));
    }
}
