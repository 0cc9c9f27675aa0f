//! The HTTP load engine (HTTP/1.1, and HTTP/2 or HTTP/3 with `--streams`
//! per connection): open loop (constant or Poisson arrivals), closed loop, and
//! rate sweeps, with coordinated-omission-corrected latency.
//!
//! Method: open-loop latency is measured from each request's *intended*
//! send time, not from when it was actually written (Gil Tene, "How NOT to
//! Measure Latency"; wrk2). Service time (write → last byte) and send lag
//! (actual − intended send) are recorded beside it, and failed requests'
//! latencies go in their own histogram. All histograms are HdrHistograms
//! (3 significant digits, µs); memory is constant in the run's length.
//!
//! Layout: [`config`] (what to run), [`spec`] (the same from plain names
//! and seconds, as Python gives it), [`url`], [`schedule`] (intended times), [`codec`]
//! (HTTP/1.1 bytes), [`conn`] (one connection), [`h2`] (HTTP/2 streams on
//! shared connections), [`h3`] (HTTP/3 streams on shared QUIC connections),
//! `mux` (the connection both share among their request slots), `lane` (a request slot of any protocol),
//! [`phases`] (connect, TLS, TTFB, body timings), [`tls`], [`recorder`]
//! (histograms, counters and the accounting of every request), `thread`
//! (one engine thread's state, accounting and connection tasks), `runner`
//! (one engine thread's step: closed loop, drain) and `dispatch` (the
//! open-loop dispatcher), both on `thread`, [`progress`] (live snapshots), and [`run`] here,
//! which drives the steps. Results ([`RunResult`], [`StepResult`]) derive
//! `Serialize`: their field names are the names Python reads.

pub mod codec;
pub mod config;
pub mod conn;
mod dispatch;
pub mod h2;
pub mod h3;
mod lane;
mod mux;
pub mod phases;
mod pool;
pub mod progress;
pub mod recorder;
mod runner;
pub mod schedule;
pub mod server_timing;
pub mod shape;
pub mod spec;
mod thread;
pub mod timeline;
pub mod tls;
pub mod url;

#[cfg(test)]
mod e2e_tests;
#[cfg(test)]
mod h2_tests;
#[cfg(test)]
mod h3_tests;

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

pub use codec::RequestSpec;
pub use config::{
    cores, default_threads, Config, LoadModel, Protocol, StepSpec, MAX_RATE_PER_THREAD,
};
pub use progress::{Progress, Snapshot};
pub use recorder::{Counters, ErrorKind, Histograms, OkStatus, Recorder};
pub use schedule::{Arrival, Lanes, Schedule, SplitMix64};
pub use spec::RunSpec;
pub use url::{Scheme, Target};

use conn::Connector;
use runner::run_thread;
use thread::{Shared, ThreadPlan, ThreadResult};

/// A run could not start (bad input or setup); failures *during* a run are
/// counted in the results instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError(pub String);

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EngineError {}

impl From<String> for EngineError {
    fn from(s: String) -> Self {
        EngineError(s)
    }
}

/// The measurements of one step; serialized flat, the recorder's counters
/// and `histograms` beside the fields here.
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    /// 0-based position in the run.
    pub index: usize,
    /// `"open"` or `"closed"`.
    pub mode: &'static str,
    /// `"constant"` or `"poisson"` in open loop, None in closed loop.
    pub arrival: Option<&'static str>,
    /// Offered rate, req/s (None in closed loop).
    pub offered_rate: Option<f64>,
    /// Open loop: the pool cap used. Closed loop: the connection count.
    pub connections: usize,
    /// Engine threads used.
    pub threads: usize,
    /// Planned step length including warmup, s.
    pub duration_s: f64,
    /// Warmup at the start of the step that was not recorded, s.
    pub warmup_s: f64,
    /// Length of the recorded window, s: `duration − warmup`, or less when
    /// the step was interrupted. The achieved rate is
    /// `counters.ok_responses / elapsed_s`.
    pub elapsed_s: f64,
    /// Wall time the step really took (pre-opening of connections and the
    /// drain of in-flight requests included), s.
    pub wall_s: f64,
    /// How long after the recorded window the last recorded request was
    /// answered, failed or cut off, s (0 when none was left in flight): a
    /// server that kept up drains in about one response time.
    pub drain_s: f64,
    /// The step was cut short by the stop flag.
    pub interrupted: bool,
    /// How long before its load started (`t0`) the step was asked to run,
    /// s: 0.03 (pre-opening connections), or the wait for a shared start
    /// instant ([`Config::start_at`]); negative when the call came after
    /// that instant, so the first requests went out late.
    pub start_lead_s: f64,
    /// CPU time of each engine thread over the recorded window, s. A value
    /// near `elapsed_s` means that thread was CPU-bound
    /// (generator-limited).
    pub thread_cpu_s: Vec<f64>,
    /// The HTTP version spoken: `"http/1.1"`, `"h2"` or `"h3"`.
    pub protocol: &'static str,
    /// HTTP/2 and HTTP/3: concurrent streams per connection (1 for HTTP/1.1).
    pub streams: usize,
    /// Histograms and counters, merged over threads.
    #[serde(flatten)]
    pub recorder: Recorder,
    /// The load shape followed (None: a fixed rate, or closed loop).
    pub shape: Option<shape::Shape>,
    /// The step's timeline, merged over threads (None when off).
    pub timeline: Option<timeline::StepTimeline>,
}

/// Unit of every histogram value: microseconds.
pub const HISTOGRAM_UNIT: &str = "us";

/// All steps run (a stop keeps the steps measured so far).
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub steps: Vec<StepResult>,
    /// The run was stopped before its last step ended.
    pub interrupted: bool,
    /// The address connected to ("host:port", "[v6]:port" when serialized).
    pub address: SocketAddr,
    /// The target URL as the engine understood it.
    pub url: String,
    /// [`HISTOGRAM_UNIT`].
    pub histogram_unit: &'static str,
}

/// Delay between starting the engine threads and the step's `t0`, used to
/// pre-open connections.
const START_DELAY: Duration = Duration::from_millis(30);

/// Run every step of `config` and return the measurements.
///
/// Setting `stop` (e.g. on Ctrl-C) ends the current step early: its
/// accounting is finished and returned with `interrupted = true`, and no
/// further step starts. `progress` is updated about every 100 ms and may be
/// read from any thread.
///
/// # Errors
/// [`EngineError`] before any load is sent: an invalid config (see
/// [`Config::validate`]), a host that does not resolve, a TLS setup
/// failure, or an engine thread that could not start. An unreachable or
/// failing server is *not* an error: it shows up as counted errors.
pub fn run(
    config: &Config,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> Result<RunResult, EngineError> {
    config.validate()?;
    let shared = Arc::new(prepare(config, stop.clone(), progress.clone())?);
    let mut steps = Vec::new();
    for (index, spec) in config.steps.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        steps.push(run_step(config, &shared, index, spec)?);
    }
    let interrupted = stop.load(Ordering::Relaxed);
    Ok(RunResult {
        steps,
        interrupted,
        address: shared.connector.addr,
        url: config.target.to_string(),
        histogram_unit: HISTOGRAM_UNIT,
    })
}

fn prepare(
    config: &Config,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> Result<Shared, EngineError> {
    let t = &config.target;
    let addr = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve host {:?}: {e}", t.host))?
        .next()
        .ok_or_else(|| format!("host {:?} resolved to no address", t.host))?;
    let alpn: &[u8] = match config.protocol {
        Protocol::Http1 => b"http/1.1",
        Protocol::Http2 => b"h2",
        Protocol::Http3 => b"h3",
    };
    let quic = match config.protocol {
        Protocol::Http3 => Some((
            h3::quic_client_config(tls::client_config_alpn(config.insecure, &[alpn])?)?,
            tls::server_name(&t.host)?.to_str().into_owned(),
        )),
        _ => None,
    };
    let tls = match t.scheme {
        Scheme::Https if quic.is_none() => Some((
            tls::client_config_alpn(config.insecure, &[alpn])?,
            tls::server_name(&t.host)?,
        )),
        _ => None,
    };
    let host = t.host_header();
    let requests = config
        .requests
        .iter()
        .map(|r| Ok((r.to_bytes(&host)?, r.is_head())))
        .collect::<Result<Vec<_>, String>>()?;
    let scheme = match t.scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    let h2_requests = match config.protocol {
        Protocol::Http1 => Vec::new(),
        Protocol::Http2 | Protocol::Http3 => config
            .requests
            .iter()
            .map(|r| h2::H2Request::new(r, scheme, &host))
            .collect::<Result<Vec<_>, String>>()?,
    };
    Ok(Shared {
        connector: Connector {
            addr,
            tls,
            quic,
            connect_timeout: config.connect_timeout,
        },
        requests,
        ok: config.ok.clone(),
        read_timeout: config.read_timeout,
        model: config.model,
        seed: config.seed,
        lanes: config.lanes.clone(),
        stop,
        progress,
        stopped_at: OnceLock::new(),
        shape: config.shape,
        timeline_interval: config.timeline_interval,
        protocol: config.protocol,
        streams: config.streams,
        h2_requests,
        pool_idle: config.pool_idle,
    })
}

/// `n` split into `parts` near-equal shares, largest first.
fn split(n: usize, parts: usize) -> Vec<usize> {
    (0..parts)
        .map(|k| n / parts + usize::from(k < n % parts))
        .collect()
}

/// The instants of one step: `t0` (load starts), the end of the warmup
/// and the end of the step; `lead_s` is [`StepResult::start_lead_s`].
struct StepClock {
    started: Instant,
    t0: Instant,
    warmup_end: Instant,
    end: Instant,
    lead_s: f64,
}

impl StepClock {
    /// Start a step: load at `START_DELAY` from now, or at the shared
    /// instant `at` (realtime clock), waited for until `START_DELAY` before
    /// it (a stop ends the wait).
    fn start(config: &Config, at: Option<SystemTime>, stop: &AtomicBool) -> Self {
        let called = Instant::now();
        let t0 = at.map_or(called + START_DELAY, |at| instant_of(at, called));
        while !stop.load(Ordering::Relaxed) {
            let Some(left) = t0.checked_duration_since(Instant::now() + START_DELAY) else {
                break;
            };
            std::thread::sleep(left.min(Duration::from_millis(10)));
        }
        let lead_s = match t0.checked_duration_since(called) {
            Some(d) => d.as_secs_f64(),
            None => -called.duration_since(t0).as_secs_f64(),
        };
        StepClock {
            started: Instant::now().min(t0),
            t0,
            warmup_end: t0 + config.warmup,
            end: t0 + config.duration,
            lead_s,
        }
    }
}

/// The monotonic instant of the realtime-clock time `at`, read beside
/// `now` (a realtime step later does not move it).
fn instant_of(at: SystemTime, now: Instant) -> Instant {
    match at.duration_since(SystemTime::now()) {
        Ok(ahead) => now + ahead,
        Err(behind) => now.checked_sub(behind.duration()).unwrap_or(now),
    }
}

fn run_step(
    config: &Config,
    shared: &Arc<Shared>,
    index: usize,
    spec: &StepSpec,
) -> Result<StepResult, EngineError> {
    let (connections, threads) = config.step_load(spec);
    let at = config.start_at.filter(|_| index == 0);
    let clock = StepClock::start(config, at, &shared.stop);
    shared.progress.begin_step(
        index,
        config.steps.len(),
        spec.rate,
        clock.t0,
        config.warmup.as_secs_f64(),
    );
    let handles = split(connections, threads)
        .into_iter()
        .enumerate()
        .map(|(thread, conns)| {
            // About 2 ms of requests per connection in flight to start with.
            let per_thread = spec.rate.unwrap_or(0.0) / threads as f64;
            // HTTP/2: each connection holds `streams` request slots.
            let slots = conns * config.streams;
            let plan = ThreadPlan {
                thread,
                threads,
                rate: spec.rate,
                connections: slots,
                prewarm: ((per_thread * 0.002).ceil() as usize).clamp(1, slots),
                t0: clock.t0,
                warmup_end: clock.warmup_end,
                end: clock.end,
            };
            spawn_thread(shared, plan)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let threads_done = join_threads(handles)?;
    Ok(step_result(
        config,
        shared,
        index,
        spec,
        (connections, threads),
        &clock,
        threads_done,
    ))
}

fn spawn_thread(
    shared: &Arc<Shared>,
    plan: ThreadPlan,
) -> Result<JoinHandle<Result<ThreadResult, String>>, EngineError> {
    let shared = shared.clone();
    std::thread::Builder::new()
        .name(format!("perflab-engine-{}", plan.thread))
        .spawn(move || run_thread(shared, plan))
        .map_err(|e| EngineError(format!("cannot start an engine thread: {e}")))
}

fn join_threads(
    handles: Vec<JoinHandle<Result<ThreadResult, String>>>,
) -> Result<Vec<ThreadResult>, EngineError> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .map_err(|_| EngineError("an engine thread panicked".into()))?
                .map_err(EngineError)
        })
        .collect()
}

/// Merge the threads' shares into the step's result.
fn step_result(
    config: &Config,
    shared: &Shared,
    index: usize,
    spec: &StepSpec,
    (connections, threads): (usize, usize),
    clock: &StepClock,
    mut done: Vec<ThreadResult>,
) -> StepResult {
    let mut recorder = Recorder::default();
    for r in &done {
        recorder.merge(&r.recorder);
    }
    let timeout_us = u64::try_from(config.read_timeout.as_micros()).unwrap_or(u64::MAX >> 11);
    recorder.histograms.set_highest(timeout_us);
    let stopped_at = shared.stopped_at.get().copied();
    let window_end = stopped_at.map_or(clock.end, |s| s.min(clock.end));
    let last = done.iter().filter_map(|r| r.last_completion).max();
    let offered_rate = match (config.model, config.shape) {
        (LoadModel::Closed, _) => None,
        (_, Some(s)) => {
            Some(s.mean_rate(config.warmup.as_secs_f64(), config.duration.as_secs_f64()))
        }
        (_, None) => spec.rate,
    };
    let parts: Vec<_> = done.iter_mut().filter_map(|r| r.timeline.take()).collect();
    let timeline = (!parts.is_empty()).then(|| {
        let shape = config.shape;
        let offered = |a: f64, b: f64| match shape {
            Some(s) => Some(s.mean_rate(a, b)),
            None => offered_rate,
        };
        timeline::merge(parts, offered, timeout_us)
    });
    StepResult {
        index,
        mode: config.model.mode_name(),
        arrival: match config.model {
            LoadModel::Open(a) => Some(a.name()),
            LoadModel::Closed => None,
        },
        offered_rate,
        connections,
        threads,
        duration_s: config.duration.as_secs_f64(),
        warmup_s: config.warmup.as_secs_f64(),
        elapsed_s: window_end
            .saturating_duration_since(clock.warmup_end)
            .as_secs_f64(),
        wall_s: clock.started.elapsed().as_secs_f64(),
        drain_s: last.map_or(0.0, |l| {
            l.saturating_duration_since(window_end).as_secs_f64()
        }),
        interrupted: stopped_at.is_some_and(|s| s < clock.end),
        start_lead_s: clock.lead_s,
        thread_cpu_s: done.iter().map(|r| r.cpu_s).collect(),
        protocol: config.protocol.name(),
        streams: config.streams,
        recorder,
        shape: config.shape,
        timeline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_fair_and_complete() {
        assert_eq!(split(10, 3), vec![4, 3, 3]);
        assert_eq!(split(2, 2), vec![1, 1]);
        assert_eq!(split(7, 1), vec![7]);
    }

    #[test]
    fn unresolvable_host_is_a_clear_error() {
        let c = Config::open("http://no-such-host.invalid:80/", 10.0).unwrap();
        let err = run(&c, Arc::default(), Arc::default()).unwrap_err();
        assert!(
            err.0.contains("resolve") || err.0.contains("no address"),
            "{err}"
        );
    }
}
