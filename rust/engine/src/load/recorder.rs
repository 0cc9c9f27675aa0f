//! Per-step recording: four HdrHistograms (Gil Tene's HdrHistogram, 3
//! significant digits, values in microseconds) and counters. Each engine
//! thread owns one [`Recorder`]; they are merged at step end. Memory is
//! constant in the number of requests: nothing is stored per request.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::server_timing::ServerTiming;
use crate::hdr::{new_histogram, record, serialize_report, Histogram};

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
///
/// Serialized (into `perflab._core.http_run`'s step dicts) under the field
/// names, with `status_counts` as {code: n} for the non-zero codes and
/// `errors` as {kind name: n} for every kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Recorded requests handed to a connection to be written (a request
    /// whose connect failed was sent and failed).
    pub requests_sent: u64,
    /// Responses to recorded requests by status code, index = code (0..1000).
    #[serde(serialize_with = "status_map")]
    pub status_counts: Vec<u64>,
    /// Errors by [`ErrorKind`], index = position in [`ErrorKind::ALL`].
    #[serde(serialize_with = "error_map")]
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
    /// Open loop: request slots (HTTP/1.1 connections, HTTP/2 and HTTP/3
    /// stream slots) the pool closed because they stayed idle past its
    /// bound while it was above its initial size (see `load/pool.rs`).
    pub pool_idle_closed: u64,
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
            status_counts: vec![0; 1000],
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
            pool_idle_closed: 0,
            unsent: 0,
            unfinished: 0,
        }
    }
}

impl Counters {
    /// Add another thread's counters into these.
    pub fn merge(&mut self, o: &Counters) {
        for (a, b) in self.status_counts.iter_mut().zip(&o.status_counts) {
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
        self.pool_idle_closed += o.pool_idle_closed;
        self.unsent += o.unsent;
        self.unfinished += o.unfinished;
    }

    /// Count of errors of `kind`.
    pub fn error(&self, kind: ErrorKind) -> u64 {
        self.errors[ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(7)]
    }

    /// Non-zero status counts as (code, count), ascending by code.
    pub fn nonzero_statuses(&self) -> Vec<(u16, u64)> {
        nonzero(&self.status_counts).collect()
    }
}

/// The nine histograms of one step, µs; serialized as {name: {count,
/// min_us, p50_us, p90_us, p99_us, p999_us, max_us, mean_us, encoded_b64}}
/// ([`crate::hdr::serialize_report`]).
#[derive(Clone, Debug, Serialize)]
pub struct Histograms {
    /// Latency of recorded requests answered OK, in the window or drained,
    /// from the *intended* send time to the last response byte, µs
    /// (coordinated-omission corrected, as wrk2).
    #[serde(serialize_with = "serialize_report")]
    pub latency: Histogram<u64>,
    /// Service time: actual write start to last response byte, µs.
    #[serde(serialize_with = "serialize_report")]
    pub service_time: Histogram<u64>,
    /// Send lag: actual write start minus intended send time, µs.
    #[serde(serialize_with = "serialize_report")]
    pub send_lag: Histogram<u64>,
    /// Dispatch lag (open loop): how late the dispatcher found each request
    /// due, µs: the generator's own lateness (timer, event loop, CPU),
    /// without any wait for a free connection, which is the server's.
    #[serde(serialize_with = "serialize_report")]
    pub dispatch_lag: Histogram<u64>,
    /// Latency from the intended time of failed requests (non-OK status or
    /// error), µs.
    #[serde(serialize_with = "serialize_report")]
    pub failed_latency: Histogram<u64>,
    /// TCP connect of each connection a recorded request opened, µs
    /// ([`super::phases`]).
    #[serde(serialize_with = "serialize_report")]
    pub connect: Histogram<u64>,
    /// TLS handshake after that connect, µs (HTTP/3: the QUIC handshake).
    #[serde(serialize_with = "serialize_report")]
    pub tls_handshake: Histogram<u64>,
    /// Time to first byte: request write start to the response's first
    /// byte (HTTP/2: its HEADERS frame), µs.
    #[serde(serialize_with = "serialize_report")]
    pub ttfb: Histogram<u64>,
    /// Body: the response's first byte to its last, µs.
    #[serde(serialize_with = "serialize_report")]
    pub body_time: Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            service_time: new_histogram(),
            send_lag: new_histogram(),
            dispatch_lag: new_histogram(),
            failed_latency: new_histogram(),
            connect: new_histogram(),
            tls_handshake: new_histogram(),
            ttfb: new_histogram(),
            body_time: new_histogram(),
        }
    }
}

impl Histograms {
    /// Give every histogram the highest trackable value `highest_us` (the
    /// run's timeout), so the V2 headers written to results files are the
    /// same for every step and other HdrHistogram libraries can merge them
    /// ([`crate::hdr::with_highest`]).
    pub fn set_highest(&mut self, highest_us: u64) {
        for h in [
            &mut self.latency,
            &mut self.service_time,
            &mut self.send_lag,
            &mut self.dispatch_lag,
            &mut self.failed_latency,
            &mut self.connect,
            &mut self.tls_handshake,
            &mut self.ttfb,
            &mut self.body_time,
        ] {
            *h = crate::hdr::with_highest(h, highest_us);
        }
    }

    /// Add another thread's histograms into these.
    pub fn merge(&mut self, o: &Histograms) {
        // Auto-resizing histograms never fail to add.
        let _ = self.latency.add(&o.latency);
        let _ = self.service_time.add(&o.service_time);
        let _ = self.send_lag.add(&o.send_lag);
        let _ = self.dispatch_lag.add(&o.dispatch_lag);
        let _ = self.failed_latency.add(&o.failed_latency);
        let _ = self.connect.add(&o.connect);
        let _ = self.tls_handshake.add(&o.tls_handshake);
        let _ = self.ttfb.add(&o.ttfb);
        let _ = self.body_time.add(&o.body_time);
    }
}

/// The histograms and counters of one step; serialized flat: the counters'
/// fields, then `histograms`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Recorder {
    #[serde(flatten)]
    pub counters: Counters,
    pub histograms: Histograms,
    /// `Server-Timing` of the OK responses (omitted when none had one).
    #[serde(skip_serializing_if = "ServerTiming::is_empty")]
    pub server_timing: ServerTiming,
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
        self.counters.status_counts[(status as usize).min(999)] += 1;
        record(&mut self.histograms.service_time, service_us);
        if ok {
            if drained {
                self.counters.drained += 1;
            } else {
                self.counters.ok_responses += 1;
            }
            record(&mut self.histograms.latency, latency_us);
        } else {
            self.counters.failures += 1;
            record(&mut self.histograms.failed_latency, latency_us);
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
        record(&mut self.histograms.failed_latency, latency_us);
    }

    /// Merge another recorder (another thread's) into this one.
    pub fn merge(&mut self, o: &Recorder) {
        self.histograms.merge(&o.histograms);
        self.counters.merge(&o.counters);
        self.server_timing.merge(&o.server_timing);
    }
}

/// (code, count) of the non-zero entries of counts indexed by status code.
fn nonzero(counts: &[u64]) -> impl Iterator<Item = (u16, u64)> + '_ {
    counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(code, &n)| (code as u16, n))
}

/// `status_counts` as {code: n}, non-zero codes ascending.
fn status_map<S: Serializer>(counts: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(nonzero(counts))
}

/// `errors` as {kind name: n}, every kind in [`ErrorKind::ALL`] order.
fn error_map<S: Serializer>(errors: &[u64; 8], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(errors.len()))?;
    for (kind, n) in ErrorKind::ALL.iter().zip(errors) {
        map.serialize_entry(kind.name(), n)?;
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdr::summarize;

    #[test]
    fn percentiles_of_one_to_ten_thousand() {
        let mut r = Recorder::default();
        for v in 1..=10_000 {
            r.response(200, true, false, v, v / 2);
        }
        let s = summarize(&r.histograms.latency);
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
        assert_eq!(a.counters.nonzero_statuses(), vec![(200, 2), (500, 1)]);
        assert_eq!((a.counters.ok_responses, a.counters.drained), (1, 1));
        assert_eq!(a.counters.failures, 2);
        assert_eq!(a.counters.error(ErrorKind::Reset), 1);
        assert_eq!(a.histograms.latency.len(), 2);
        assert_eq!(a.histograms.failed_latency.len(), 2);
        assert_eq!(a.histograms.service_time.len(), 3);
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
        let size = r.histograms.latency.distinct_values();
        for v in 0..1_000_000u64 {
            r.response(200, true, false, v % 5000, v % 4000);
        }
        assert_eq!(r.histograms.latency.distinct_values(), size);
    }
}
