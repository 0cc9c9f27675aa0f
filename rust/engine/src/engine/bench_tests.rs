//! Speed probes of the engine, ignored by default; run them on a release
//! build against a fast target (e.g. nginx `return 200`):
//!
//! ```text
//! PERFLAB_BENCH_URL=http://127.0.0.1:PORT/ cargo test --release -p perflab-engine \
//!     bench_ -- --ignored --nocapture --test-threads 1
//! ```
//!
//! Each prints one line: achieved rate, CPU per request of the engine
//! thread, and the send-lag and dispatch-lag p99.

use std::sync::Arc;
use std::time::Duration;

use super::*;

fn env(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

fn report(name: &str, s: &StepResult) {
    let c = &s.recorder.counters;
    let done = (c.ok_responses + c.failures) as f64;
    let cpu: f64 = s.thread_cpu_s.iter().sum();
    println!(
        "{name}: achieved {:.0}/s, {:.2} us CPU/request, send lag p50 {} p99 {} us, \
         dispatch lag p99 {} us, latency p50 {} p99 {} us, failures {}, unsent {}, \
         connections peak {}",
        c.ok_responses as f64 / s.elapsed_s,
        cpu / done * 1e6,
        summarize(&s.recorder.send_lag).p50_us,
        summarize(&s.recorder.send_lag).p99_us,
        summarize(&s.recorder.dispatch_lag).p99_us,
        summarize(&s.recorder.latency).p50_us,
        summarize(&s.recorder.latency).p99_us,
        c.failures,
        c.unsent,
        c.connections_peak,
    );
}

fn config() -> Config {
    let url = env("PERFLAB_BENCH_URL", "http://127.0.0.1:8080/");
    let mut c = Config::open(&url, 1.0).unwrap();
    c.threads = 1;
    c.duration = Duration::from_secs_f64(env("PERFLAB_BENCH_SECONDS", "6").parse().unwrap());
    c.warmup = Duration::from_secs(1);
    c
}

#[test]
#[ignore]
fn bench_open_loop() {
    let mut c = config();
    c.steps[0].rate = Some(env("PERFLAB_BENCH_RATE", "20000").parse().unwrap());
    let r = run(&c, Arc::default(), Arc::default()).unwrap();
    report("open loop", &r.steps[0]);
}

#[test]
#[ignore]
fn bench_closed_loop() {
    let mut c = config();
    c.model = LoadModel::Closed;
    c.steps[0] = StepSpec {
        rate: None,
        connections: Some(env("PERFLAB_BENCH_CONNECTIONS", "50").parse().unwrap()),
    };
    let r = run(&c, Arc::default(), Arc::default()).unwrap();
    report("closed loop", &r.steps[0]);
}
