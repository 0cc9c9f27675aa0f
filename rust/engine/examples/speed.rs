//! Speed probe of the load engine: one open-loop and one closed-loop step,
//! each printed as one line (achieved rate, engine CPU per request, send-lag
//! and dispatch-lag percentiles, latency). Run it on a release build:
//!
//! ```text
//! cd rust && cargo run --release -p perflab-engine --example speed -- [open|closed|both]
//! ```
//!
//! Environment: `PERFLAB_BENCH_URL` (a fast loopback target, e.g. nginx
//! `return 200`; without it a `perflab serve` target is started in this
//! process, on one thread that shares the cores with the engine),
//! `PERFLAB_BENCH_SECONDS` (6, each step, 1 s of warmup included),
//! `PERFLAB_BENCH_RATE` (20000 requests/s, open loop) and
//! `PERFLAB_BENCH_CONNECTIONS` (50, closed loop). The engine runs one
//! thread. Quote medians of several runs: the machines are shared.

use std::sync::Arc;
use std::time::Duration;

use perflab_engine::hdr::summarize;
use perflab_engine::load::{run, Config, LoadModel, StepResult, StepSpec};
use perflab_engine::server::{self, ServerConfig, ServerHandle};

fn env(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

/// `key` from the environment as a number, or exit with a one-line error.
fn number<T: std::str::FromStr>(key: &str, default: &str) -> T {
    env(key, default).parse().unwrap_or_else(|_| {
        eprintln!("error: {key} must be a number");
        std::process::exit(2)
    })
}

fn report(name: &str, s: &StepResult) {
    let c = &s.recorder.counters;
    let h = &s.recorder.histograms;
    let done = (c.ok_responses + c.failures).max(1) as f64;
    let cpu: f64 = s.thread_cpu_s.iter().sum();
    let (lag, lat) = (summarize(&h.send_lag), summarize(&h.latency));
    println!(
        "{name}: achieved {:.0}/s, {:.2} us CPU/request, send lag p50 {} p99 {} us, \
         dispatch lag p99 {} us, latency p50 {} p99 {} us, failures {}, unsent {}, \
         connections peak {}",
        c.ok_responses as f64 / s.elapsed_s,
        cpu / done * 1e6,
        lag.p50_us,
        lag.p99_us,
        summarize(&h.dispatch_lag).p99_us,
        lat.p50_us,
        lat.p99_us,
        c.failures,
        c.unsent,
        c.connections_peak,
    );
}

fn config(url: &str) -> Config {
    let mut c = Config::open(url, 1.0).unwrap_or_else(|e| {
        eprintln!("error: PERFLAB_BENCH_URL: {e}");
        std::process::exit(2)
    });
    c.threads = 1;
    c.duration = Duration::from_secs_f64(number("PERFLAB_BENCH_SECONDS", "6"));
    c.warmup = Duration::from_secs(1);
    c
}

fn step(c: &Config) -> StepResult {
    let mut r = run(c, Arc::default(), Arc::default()).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    r.steps.remove(0)
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "both".into());
    if !["open", "closed", "both"].contains(&which.as_str()) {
        eprintln!("error: say open, closed or both");
        std::process::exit(2);
    }
    let own: Option<ServerHandle> = std::env::var("PERFLAB_BENCH_URL")
        .is_err()
        .then(|| server::start(ServerConfig::default()).expect("start perflab serve"));
    let url = match &own {
        Some(h) => {
            let url = format!("http://{}/", h.address());
            eprintln!("note: no PERFLAB_BENCH_URL; measuring against perflab serve on {url}");
            url
        }
        None => env("PERFLAB_BENCH_URL", ""),
    };
    if which != "closed" {
        let mut c = config(&url);
        c.steps[0].rate = Some(number("PERFLAB_BENCH_RATE", "20000"));
        report("open loop", &step(&c));
    }
    if which != "open" {
        let mut c = config(&url);
        c.model = LoadModel::Closed;
        c.steps[0] = StepSpec {
            rate: None,
            connections: Some(number("PERFLAB_BENCH_CONNECTIONS", "50")),
        };
        report("closed loop", &step(&c));
    }
}
