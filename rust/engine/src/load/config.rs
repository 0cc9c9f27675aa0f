//! What to run: target, requests, load model, steps, timeouts.

use std::time::{Duration, SystemTime};

use super::codec::RequestSpec;
use super::recorder::OkStatus;
use super::schedule::{Arrival, Lanes};
use super::shape::Shape;
use super::url::Target;

/// The load model of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadModel {
    /// Open loop: requests at intended times from a [`super::Schedule`],
    /// independent of responses (wrk2). Each step has a rate.
    Open(Arrival),
    /// Closed loop: each connection sends its next request as soon as the
    /// previous response arrives (wrk). Each step has a connection count.
    Closed,
}

impl LoadModel {
    /// `"open"` or `"closed"`.
    pub fn mode_name(self) -> &'static str {
        match self {
            LoadModel::Open(_) => "open",
            LoadModel::Closed => "closed",
        }
    }
}

/// The HTTP version spoken to the target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1, one request at a time per connection (keep-alive).
    #[default]
    Http1,
    /// HTTP/2 ([`super::h2`]): ALPN `h2` over TLS, prior knowledge (h2c)
    /// on plain TCP; [`Config::streams`] concurrent streams per connection.
    Http2,
    /// HTTP/3 over QUIC ([`super::h3`]): always TLS 1.3 with ALPN `h3`, so
    /// https URLs only; [`Config::streams`] concurrent streams per connection.
    Http3,
}

impl Protocol {
    /// Parse `"http1"` / `"http/1.1"`, `"http2"` / `"h2"` or `"http3"` / `"h3"`.
    ///
    /// # Errors
    /// A message naming the accepted values.
    pub fn parse(s: &str) -> Result<Protocol, String> {
        match s {
            "http1" | "http/1.1" | "h1" => Ok(Protocol::Http1),
            "http2" | "h2" => Ok(Protocol::Http2),
            "http3" | "h3" => Ok(Protocol::Http3),
            _ => Err(format!(
                "unknown protocol {s:?}; use \"http1\", \"http2\" or \"http3\""
            )),
        }
    }

    /// The name in results: `"http/1.1"`, `"h2"` or `"h3"` (the ALPN names).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::Http2 => "h2",
            Protocol::Http3 => "h3",
        }
    }
}

/// Most concurrent streams per HTTP/2 or HTTP/3 connection ([`Config::streams`]).
pub const MAX_STREAMS: usize = 1024;

/// One step of a run (a sweep has several).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepSpec {
    /// Offered rate in requests per second (open loop only).
    pub rate: Option<f64>,
    /// Open loop: the connection pool's maximum (None = automatic).
    /// Closed loop: the number of connections (required).
    pub connections: Option<usize>,
}

/// A complete run description. Build it, then [`Config::validate`].
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// Requests sent round-robin; their paths override the URL's.
    pub requests: Vec<RequestSpec>,
    pub model: LoadModel,
    pub steps: Vec<StepSpec>,
    /// Length of each step, including its warmup.
    pub duration: Duration,
    /// Start of each step that is run but not recorded.
    pub warmup: Duration,
    /// Engine threads, each with its own event loop.
    pub threads: usize,
    /// Limit for TCP connect plus TLS handshake.
    pub connect_timeout: Duration,
    /// Limit from a request's write to its response's last byte.
    pub read_timeout: Duration,
    /// Statuses that count as success (default 200-299).
    pub ok: OkStatus,
    /// Skip TLS certificate verification.
    pub insecure: bool,
    /// Seed for Poisson arrivals.
    pub seed: u64,
    /// When the first step's load starts (its `t0`), on this machine's
    /// realtime clock: the shared start instant of several load agents
    /// (None: 30 ms after the call, as usual). Later steps start when the
    /// one before ends.
    pub start_at: Option<SystemTime>,
    /// Open loop, constant arrivals: this engine's lanes of a schedule
    /// shared with other load agents ([`Lanes`]; None: the whole schedule).
    pub lanes: Option<Lanes>,
    /// Open loop: a load shape ([`Shape`]) followed by every step instead
    /// of a fixed rate (the step's `rate` is then the shape's peak, which
    /// sizes the pool). None: each step at its fixed rate.
    pub shape: Option<Shape>,
    /// Length of a timeline interval ([`super::timeline`]); None: no
    /// timeline.
    pub timeline_interval: Option<Duration>,
    /// The HTTP version spoken.
    pub protocol: Protocol,
    /// HTTP/2 and HTTP/3: concurrent streams per connection (h2load's `-m`), each a
    /// request slot of its own; 1 for HTTP/1.1. Closed loop runs
    /// `connections × streams` request loops; open loop's pool holds that
    /// many slots at most.
    pub streams: usize,
    /// Open loop: how long a connection may stay idle while the pool holds
    /// more than its initial size ([`super::pool::POOL_IDLE`] by default;
    /// the rule is in [`super::pool`]).
    pub pool_idle: Duration,
}

/// The cores this process may run on (`available_parallelism`; 1 when
/// unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Default number of engine threads: the cores less one, at least one.
pub fn default_threads() -> usize {
    cores().saturating_sub(1).max(1)
}

/// Highest offered rate one engine thread accepts, requests/s: one request
/// per microsecond. Every request costs its thread at least a write and a
/// read system call plus the dispatcher's bookkeeping, more than 1 µs on
/// any machine, so a higher rate could not be sent: it would only pile up
/// as `unsent`.
pub const MAX_RATE_PER_THREAD: f64 = 1e6;

/// `1234567.0` → `"1,234,567"` (rounded to a whole number).
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Largest automatic open-loop pool (all threads together).
pub const AUTO_MAX_CONNECTIONS: usize = 1024;

impl Config {
    /// A one-step open-loop config at `rate` req/s against `url` with
    /// defaults: GET of the URL's path, constant arrivals, 10 s steps, no
    /// warmup, default threads, 2 s connect and 10 s read timeouts.
    ///
    /// # Errors
    /// The URL parse error.
    pub fn open(url: &str, rate: f64) -> Result<Self, String> {
        let target = Target::parse(url)?;
        Ok(Self {
            requests: vec![RequestSpec::get(&target.path)],
            target,
            model: LoadModel::Open(Arrival::Constant),
            steps: vec![StepSpec {
                rate: Some(rate),
                connections: None,
            }],
            duration: Duration::from_secs(10),
            warmup: Duration::ZERO,
            threads: default_threads(),
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(10),
            ok: OkStatus::default(),
            insecure: false,
            seed: 0x5EED,
            start_at: None,
            lanes: None,
            shape: None,
            timeline_interval: Some(Duration::from_secs(1)),
            protocol: Protocol::Http1,
            streams: 1,
            pool_idle: super::pool::POOL_IDLE,
        })
    }

    /// Check every value a user can get wrong.
    ///
    /// # Errors
    /// One line saying which value is wrong and what is accepted: no steps,
    /// a rate that is not a positive finite number or is above what the
    /// engine threads can schedule ([`MAX_RATE_PER_THREAD`] each), a
    /// missing or zero connection count, a non-positive duration, a warmup
    /// not shorter than the duration, zero threads or more threads than
    /// cores, zero timeouts, no requests, or more connections than the
    /// open-file limit allows (naming `ulimit -n`).
    pub fn validate(&self) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("no steps to run: give at least one rate (or connection count)".into());
        }
        if self.requests.is_empty() {
            return Err("no requests to send".into());
        }
        if self.duration.is_zero() {
            return Err("duration must be positive".into());
        }
        if self.warmup >= self.duration {
            return Err(format!(
                "warmup ({:?}) must be shorter than the step duration ({:?})",
                self.warmup, self.duration
            ));
        }
        if self.threads == 0 {
            return Err("threads must be at least 1".into());
        }
        let cores = cores();
        if self.threads > cores {
            return Err(format!(
                "threads {} is more than the {cores} cores of this machine: engine threads \
                 beyond the cores only take turns on them; use --threads {cores} or fewer",
                self.threads
            ));
        }
        if self.connect_timeout.is_zero() || self.read_timeout.is_zero() {
            return Err("connect and read timeouts must be positive".into());
        }
        if self.streams == 0 || self.streams > MAX_STREAMS {
            return Err(format!(
                "streams must be between 1 and {MAX_STREAMS}, got {}",
                self.streams
            ));
        }
        if self.streams > 1 && self.protocol == Protocol::Http1 {
            return Err(
                "several streams per connection need HTTP/2 or HTTP/3 (--http2, --http3)".into(),
            );
        }
        if self.protocol == Protocol::Http3 && self.target.scheme != super::url::Scheme::Https {
            return Err(format!(
                "HTTP/3 runs over QUIC, which is always encrypted: use an https:// URL, not {}",
                self.target
            ));
        }
        if self.lanes.is_some() && self.model != LoadModel::Open(Arrival::Constant) {
            return Err("slots need an open loop with constant arrivals".into());
        }
        self.check_shape()?;
        let mut max_conns = 0;
        for s in &self.steps {
            match self.model {
                LoadModel::Open(_) => match s.rate {
                    Some(r) if r.is_finite() && r > 0.0 => self.check_schedulable(s, r)?,
                    other => {
                        return Err(format!(
                            "rate must be a positive number of requests/s, got {other:?}"
                        ))
                    }
                },
                LoadModel::Closed => {
                    if s.connections.unwrap_or(0) == 0 {
                        return Err("closed loop needs a connection count of at least 1".into());
                    }
                }
            }
            if s.connections == Some(0) {
                return Err("connections must be at least 1".into());
            }
            max_conns = max_conns.max(s.connections.unwrap_or(0));
        }
        crate::sys::check_open_files(max_conns as u64)
    }

    /// A shape needs an open loop of its own (no agents' lanes) and valid
    /// parameters; an interval of at least 1 ms.
    fn check_shape(&self) -> Result<(), String> {
        if let Some(d) = self.timeline_interval {
            if d < Duration::from_millis(1) {
                return Err(format!(
                    "timeline interval must be at least 1 ms, got {d:?}"
                ));
            }
        }
        let Some(shape) = &self.shape else {
            return Ok(());
        };
        shape.validate()?;
        if !matches!(self.model, LoadModel::Open(_)) {
            return Err("a load shape needs an open loop (a rate)".into());
        }
        if self.lanes.is_some() {
            return Err("a load shape cannot be split over load agents' slots yet".into());
        }
        Ok(())
    }

    /// A rate above what the step's engine threads can schedule is refused.
    fn check_schedulable(&self, step: &StepSpec, rate: f64) -> Result<(), String> {
        let threads = self.step_load(step).1;
        let limit = MAX_RATE_PER_THREAD * threads as f64;
        if rate <= limit {
            return Ok(());
        }
        let more = if threads < cores() {
            format!(", or use more --threads (up to the {} cores)", cores())
        } else {
            String::new()
        };
        Err(format!(
            "rate {rate:e} requests/s is more than the load engine can schedule: at most \
             {} requests/s per engine thread, {}/s with {threads} here; offer less{more}",
            thousands(MAX_RATE_PER_THREAD),
            thousands(limit)
        ))
    }

    /// The (connections, engine threads) of a step: closed loop, its
    /// connection count; open loop, the pool's cap (given, or
    /// [`Config::auto_connections`]). Never more threads than connections.
    pub fn step_load(&self, step: &StepSpec) -> (usize, usize) {
        let n = match self.model {
            LoadModel::Closed => step.connections.unwrap_or(1),
            LoadModel::Open(_) => step.connections.unwrap_or_else(|| self.auto_connections()),
        };
        (n, self.threads.min(n).max(1))
    }

    /// The connection pool cap of an open-loop step with no explicit
    /// count: [`AUTO_MAX_CONNECTIONS`], lowered to fit the open-file limit,
    /// at least one per thread.
    pub fn auto_connections(&self) -> usize {
        let fit = crate::sys::open_file_limit()
            .map(|l| l.saturating_sub(crate::sys::FD_RESERVE) as usize)
            .unwrap_or(AUTO_MAX_CONNECTIONS);
        AUTO_MAX_CONNECTIONS.min(fit).max(self.threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let c = Config::open("http://127.0.0.1:1/", 100.0).unwrap();
        assert!(c.validate().is_ok());
        assert!(c.auto_connections() >= c.threads);
    }

    #[test]
    fn bad_values_are_rejected_with_reasons() {
        let base = Config::open("http://127.0.0.1:1/", 100.0).unwrap();
        let mut c = base.clone();
        c.steps[0].rate = Some(0.0);
        assert!(c.validate().unwrap_err().contains("rate"));
        c.steps[0].rate = Some(-5.0);
        assert!(c.validate().unwrap_err().contains("rate"));
        c.steps[0].rate = Some(f64::NAN);
        assert!(c.validate().is_err());
        let mut c = base.clone();
        c.steps[0].rate = Some(1e10);
        let err = c.validate().unwrap_err();
        assert!(err.contains("1e10 requests/s"), "{err}");
        assert!(
            err.contains("1,000,000 requests/s per engine thread"),
            "{err}"
        );
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1234567.4), "1,234,567");
        let mut c = base.clone();
        c.threads = cores() + 1;
        let err = c.validate().unwrap_err();
        assert!(err.contains("cores") && err.contains("--threads"), "{err}");
        let mut c = base.clone();
        c.steps[0].rate = Some(MAX_RATE_PER_THREAD);
        c.threads = 1;
        assert!(c.validate().is_ok());
        let mut c = base.clone();
        c.duration = Duration::ZERO;
        assert!(c.validate().unwrap_err().contains("duration"));
        let mut c = base.clone();
        c.warmup = c.duration;
        assert!(c.validate().unwrap_err().contains("warmup"));
        let mut c = base.clone();
        c.model = LoadModel::Closed;
        assert!(c.validate().unwrap_err().contains("connection"));
        let mut c = base.clone();
        c.steps.clear();
        assert!(c.validate().is_err());
        let mut c = base.clone();
        c.streams = 8;
        assert!(c.validate().unwrap_err().contains("HTTP/2"));
        c.protocol = Protocol::Http2;
        assert!(c.validate().is_ok());
        c.streams = 0;
        assert!(c.validate().unwrap_err().contains("streams"));
        assert_eq!(Protocol::parse("h2"), Ok(Protocol::Http2));
        assert!(Protocol::parse("spdy").is_err());
        let mut c = base;
        c.steps[0].connections = Some(usize::MAX / 4);
        if crate::sys::open_file_limit().is_some() {
            assert!(c.validate().unwrap_err().contains("ulimit -n"));
        }
    }
}
