//! Per-step recording: four HdrHistograms (Gil Tene's HdrHistogram, 3
//! significant digits, values in microseconds) and counters. Each engine
//! thread owns one [`Recorder`]; they are merged at step end. Memory is
//! constant in the number of requests: nothing is stored per request.

use std::io::Cursor;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
pub use hdrhistogram::Histogram;

/// Significant decimal digits kept by every histogram.
pub const SIGFIG: u8 = 3;

/// Kinds of failed requests (besides a response whose status is not OK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The target refused the TCP connection (nothing listening).
    ConnectRefused,
    /// TCP connect (or TLS handshake) did not finish within the connect timeout.
    ConnectTimeout,
    /// The response did not complete within the read timeout, counted
    /// from the request write to the last byte (an endless body ends here).
    ReadTimeout,
    /// The connection was reset (ECONNRESET, EPIPE).
    Reset,
    /// The server closed the connection before the response was complete.
    ClosedMidResponse,
    /// The response could not be parsed as HTTP/1.1.
    Protocol,
    /// The TLS handshake failed (bad certificate, no common protocol...).
    Tls,
    /// Any other I/O error (unreachable network, ...).
    Other,
}

impl ErrorKind {
    /// All kinds, in report order.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::ReadTimeout,
        ErrorKind::Reset,
        ErrorKind::ClosedMidResponse,
        ErrorKind::Protocol,
        ErrorKind::Tls,
        ErrorKind::Other,
    ];

    /// The key used in results (`"connect_refused"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::ReadTimeout => "read_timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::ClosedMidResponse => "closed_mid_response",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Tls => "tls",
            ErrorKind::Other => "other",
        }
    }

    /// Classify an I/O error from a read or write on an open connection.
    pub fn from_io(e: &std::io::Error) -> ErrorKind {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::ConnectionRefused => ErrorKind::ConnectRefused,
            K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => ErrorKind::Reset,
            K::UnexpectedEof => ErrorKind::ClosedMidResponse,
            K::TimedOut => ErrorKind::ReadTimeout,
            K::InvalidData => ErrorKind::Tls,
            _ => ErrorKind::Other,
        }
    }
}

/// Which response status codes count as success: inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OkStatus(pub Vec<(u16, u16)>);

impl Default for OkStatus {
    /// 200-299.
    fn default() -> Self {
        OkStatus(vec![(200, 299)])
    }
}

impl OkStatus {
    /// Parse `"200-299,304"` style lists.
    ///
    /// # Errors
    /// A message naming the bad item.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (a, b) = item.split_once('-').unwrap_or((item, item));
            let p = |x: &str| {
                x.trim()
                    .parse::<u16>()
                    .ok()
                    .filter(|c| (100..=999).contains(c))
            };
            match (p(a), p(b)) {
                (Some(a), Some(b)) if a <= b => out.push((a, b)),
                _ => return Err(format!("bad status range {item:?}; write e.g. 200-299,304")),
            }
        }
        if out.is_empty() {
            return Err("empty status range list; write e.g. 200-299".into());
        }
        Ok(OkStatus(out))
    }

    /// True when `status` lies in one of the ranges.
    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|&(a, b)| (a..=b).contains(&status))
    }
}

/// Counters of one step (or one thread's share of it).
///
/// The step's *recorded requests* are those whose intended send time (open
/// loop) or send time (closed loop) falls after the warmup; the *recorded
/// window* runs from the end of the warmup to the end of the step, or to
/// the stop when one cut the step short. Every recorded request ends in
/// exactly one of: an OK response inside the window, an OK response after
/// it (`drained`), a failure, or `unfinished`; open loop adds the requests
/// that fell due in the window but were never handed to a connection
/// (`unsent`). So the requests due in the window (open loop:
/// `requests_sent + unsent`; closed loop: `requests_sent`) are
///
/// ```text
/// ok_in_window + drained + failures + unfinished + unsent
/// ```
///
/// where `ok_in_window = ok_responses - ok_from_warmup`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counters {
    /// Recorded requests handed to a connection to be written (a request
    /// whose connect failed was sent and failed).
    pub requests_sent: u64,
    /// Responses to recorded requests by status code, index = code (0..1000).
    pub status: Vec<u64>,
    /// Errors by [`ErrorKind`], index = position in [`ErrorKind::ALL`].
    pub errors: [u64; 8],
    /// OK responses that *completed inside the recorded window*, whichever
    /// request they answered: the achieved rate is this ÷ the window. It
    /// includes `ok_from_warmup`.
    pub ok_responses: u64,
    /// Of `ok_responses`: answers to requests sent during the warmup (not
    /// recorded requests; their latencies are not recorded). They balance
    /// the recorded requests still in flight when the window ends, so that
    /// the rate counts every response the server completed in the window.
    pub ok_from_warmup: u64,
    /// OK responses to recorded requests that completed after the window
    /// ended, while the step drained: not in the achieved rate, but their
    /// latencies are recorded (they are the slowest ones).
    pub drained: u64,
    /// Recorded requests that failed (non-OK status or an error), whenever
    /// the failure came.
    pub failures: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Connections opened during the step (warmup included).
    pub connections_opened: u64,
    /// Connections closed during the step, by either side (warmup and the
    /// close of the pool at step end included).
    pub connections_closed: u64,
    /// Connections (or connect attempts) that ended with an error during
    /// the step (warmup included); over `connections_opened` plus failed
    /// connects this is the per-connection error share.
    pub connections_errored: u64,
    /// Most connections open at once (summed over engine threads).
    pub connections_peak: u64,
    /// Connect attempts (TCP or TLS) that failed during the step (warmup
    /// included); connections tried = `connections_opened` + this.
    pub connect_failures: u64,
    /// Open loop: recorded requests that found every connection busy and
    /// waited for one (their send lag then measures the server, not the
    /// generator).
    pub pool_waits: u64,
    /// Requests whose intended time fell in the recorded window but that
    /// were never handed to a connection: the backlog left when the
    /// dispatcher gave up (every connection busy, or perflab too late).
    pub unsent: u64,
    /// Recorded requests sent but still unanswered when the step was cut
    /// off: by a stop, or `--timeout` after the step's end.
    pub unfinished: u64,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            requests_sent: 0,
            status: vec![0; 1000],
            errors: [0; 8],
            ok_responses: 0,
            ok_from_warmup: 0,
            drained: 0,
            failures: 0,
            bytes_in: 0,
            bytes_out: 0,
            connections_opened: 0,
            connections_closed: 0,
            connections_errored: 0,
            connections_peak: 0,
            connect_failures: 0,
            pool_waits: 0,
            unsent: 0,
            unfinished: 0,
        }
    }
}

impl Counters {
    /// Add another thread's counters into these.
    pub fn merge(&mut self, o: &Counters) {
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(&o.errors) {
            *a += b;
        }
        self.requests_sent += o.requests_sent;
        self.ok_responses += o.ok_responses;
        self.ok_from_warmup += o.ok_from_warmup;
        self.drained += o.drained;
        self.failures += o.failures;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.connections_opened += o.connections_opened;
        self.connections_closed += o.connections_closed;
        self.connections_errored += o.connections_errored;
        self.connections_peak += o.connections_peak;
        self.connect_failures += o.connect_failures;
        self.pool_waits += o.pool_waits;
        self.unsent += o.unsent;
        self.unfinished += o.unfinished;
    }

    /// Count of errors of `kind`.
    pub fn error(&self, kind: ErrorKind) -> u64 {
        self.errors[ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(7)]
    }

    /// Non-zero status counts as (code, count), ascending by code.
    pub fn status_counts(&self) -> Vec<(u16, u64)> {
        self.status
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(c, &n)| (c as u16, n))
            .collect()
    }
}

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

/// The histograms and counters of one step.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// Latency of recorded requests answered OK, in the window or drained,
    /// from the *intended* send time to the last response byte, µs
    /// (coordinated-omission corrected, as wrk2).
    pub latency: Histogram<u64>,
    /// Service time: actual write start to last response byte, µs.
    pub service_time: Histogram<u64>,
    /// Send lag: actual write start minus intended send time, µs.
    pub send_lag: Histogram<u64>,
    /// Dispatch lag (open loop): how late the dispatcher found each request
    /// due, µs: the generator's own lateness (timer, event loop, CPU),
    /// without any wait for a free connection, which is the server's.
    pub dispatch_lag: Histogram<u64>,
    /// Latency from the intended time of failed requests (non-OK status or
    /// error), µs.
    pub failed_latency: Histogram<u64>,
    pub counters: Counters,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            service_time: new_histogram(),
            send_lag: new_histogram(),
            dispatch_lag: new_histogram(),
            failed_latency: new_histogram(),
            counters: Counters::default(),
        }
    }
}

impl Recorder {
    /// Record a complete response to a recorded request; `drained` when it
    /// completed after the recorded window. Times in µs.
    pub fn response(
        &mut self,
        status: u16,
        ok: bool,
        drained: bool,
        latency_us: u64,
        service_us: u64,
    ) {
        self.counters.status[(status as usize).min(999)] += 1;
        record(&mut self.service_time, service_us);
        if ok {
            if drained {
                self.counters.drained += 1;
            } else {
                self.counters.ok_responses += 1;
            }
            record(&mut self.latency, latency_us);
        } else {
            self.counters.failures += 1;
            record(&mut self.failed_latency, latency_us);
        }
    }

    /// Count an OK response to a warmup request that completed inside the
    /// recorded window (see [`Counters::ok_from_warmup`]).
    pub fn warmup_response_in_window(&mut self) {
        self.counters.ok_responses += 1;
        self.counters.ok_from_warmup += 1;
    }

    /// Record a request that failed with `kind` after `latency_us` µs from
    /// its intended send time.
    pub fn error(&mut self, kind: ErrorKind, latency_us: u64) {
        let i = ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(7);
        self.counters.errors[i] += 1;
        self.counters.failures += 1;
        record(&mut self.failed_latency, latency_us);
    }

    /// Merge another recorder (another thread's) into this one.
    pub fn merge(&mut self, o: &Recorder) {
        // Auto-resizing histograms never fail to add.
        let _ = self.latency.add(&o.latency);
        let _ = self.service_time.add(&o.service_time);
        let _ = self.send_lag.add(&o.send_lag);
        let _ = self.dispatch_lag.add(&o.dispatch_lag);
        let _ = self.failed_latency.add(&o.failed_latency);
        self.counters.merge(&o.counters);
    }
}

/// Percentile summary of a histogram, all values in µs.
#[derive(Clone, Debug, PartialEq)]
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

/// Decode a histogram produced by [`encode`] (or any V2 / V2-deflate
/// encoding, base64).
///
/// # Errors
/// A message for invalid base64 or an invalid histogram encoding.
pub fn decode(b64: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| format!("histogram is not valid base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .map_err(|e| format!("not an HdrHistogram V2 encoding: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_ten_thousand() {
        let mut r = Recorder::default();
        for v in 1..=10_000 {
            r.response(200, true, false, v, v / 2);
        }
        let s = summarize(&r.latency);
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min_us, 1);
        // HdrHistogram reports the bucket's highest equivalent value.
        assert!((10_000..=10_010).contains(&s.max_us), "{s:?}");
        assert!((s.p50_us as f64 - 5000.0).abs() <= 5.0, "{s:?}");
        assert!((s.p99_us as f64 - 9900.0).abs() <= 10.0, "{s:?}");
        assert!((s.mean_us - 5000.5).abs() < 5.0);
    }

    #[test]
    fn merging_threads_adds_counts_and_histograms() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        a.response(200, true, false, 100, 90);
        a.response(200, true, true, 150, 90);
        b.response(500, false, false, 300, 250);
        b.error(ErrorKind::Reset, 50);
        a.counters.requests_sent = 1;
        b.counters.requests_sent = 2;
        a.merge(&b);
        assert_eq!(a.counters.requests_sent, 3);
        assert_eq!(a.counters.status_counts(), vec![(200, 2), (500, 1)]);
        assert_eq!((a.counters.ok_responses, a.counters.drained), (1, 1));
        assert_eq!(a.counters.failures, 2);
        assert_eq!(a.counters.error(ErrorKind::Reset), 1);
        assert_eq!(a.latency.len(), 2);
        assert_eq!(a.failed_latency.len(), 2);
        assert_eq!(a.service_time.len(), 3);
    }

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
    fn empty_histogram_summary_is_zero_and_encodes() {
        let h = new_histogram();
        assert_eq!(summarize(&h).count, 0);
        assert_eq!(decode(&encode(&h)).unwrap().len(), 0);
    }

    #[test]
    fn ok_status_ranges() {
        let ok = OkStatus::parse("200-299, 304").unwrap();
        assert!(ok.contains(204) && ok.contains(304) && !ok.contains(301));
        assert!(OkStatus::default().contains(200) && !OkStatus::default().contains(500));
        assert!(OkStatus::parse("300-200").is_err());
        assert!(OkStatus::parse("abc").is_err());
        assert!(OkStatus::parse("").is_err());
    }

    #[test]
    fn memory_is_constant_in_request_count() {
        let mut r = Recorder::default();
        for v in 0..1_000_000u64 {
            r.response(200, true, false, v % 5000, v % 4000);
        }
        let size = r.latency.distinct_values();
        for v in 0..1_000_000u64 {
            r.response(200, true, false, v % 5000, v % 4000);
        }
        assert_eq!(r.latency.distinct_values(), size);
    }
}
