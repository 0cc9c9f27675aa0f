//! End-to-end: the engine against `perflab serve` on 127.0.0.1 only.
//! Each test is bounded to about a second and a few thousand requests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::server::{self, Delay, Fault, ServerConfig, ServerHandle, Stall};

fn serve(config: ServerConfig) -> ServerHandle {
    server::start(ServerConfig {
        host: "127.0.0.1".into(),
        port: 0,
        ..config
    })
    .unwrap()
}

fn open(h: &ServerHandle, rate: f64, duration_ms: u64) -> Config {
    let mut c = Config::open(&format!("http://{}/x", h.address()), rate).unwrap();
    c.duration = Duration::from_millis(duration_ms);
    c.threads = 1;
    c.read_timeout = Duration::from_secs(3);
    c
}

fn run_one(c: &Config) -> StepResult {
    let mut r = run(c, Arc::default(), Arc::default()).unwrap();
    assert_eq!(r.steps.len(), 1);
    r.steps.pop().unwrap()
}

/// Every issued request is accounted for exactly once.
fn assert_balanced(s: &StepResult) {
    let c = &s.recorder.counters;
    assert_eq!(
        c.requests_sent,
        c.successes + c.failures + c.unfinished,
        "{c:?}"
    );
    assert_eq!(s.recorder.latency.len(), c.successes);
    assert_eq!(s.recorder.failed_latency.len(), c.failures);
}

#[test]
fn fixed_delay_shows_in_latency_and_service_time() {
    let h = serve(ServerConfig {
        delay: Some(Delay::Fixed(Duration::from_millis(2))),
        ..Default::default()
    });
    let mut c = open(&h, 400.0, 1000);
    c.warmup = Duration::from_millis(200);
    let s = run_one(&c);
    assert_balanced(&s);
    let counters = &s.recorder.counters;
    // 0.8 s recorded at 400/s.
    assert!(
        (300..=340).contains(&counters.requests_sent),
        "{counters:?}"
    );
    assert_eq!(counters.status_counts(), vec![(200, counters.successes)]);
    assert_eq!((counters.unsent, counters.failures), (0, 0));
    assert!((s.recorded_s - 0.8).abs() < 1e-6);
    let lat = summarize(&s.recorder.latency);
    let svc = summarize(&s.recorder.service_time);
    assert!(lat.p50_us >= 2000 && lat.p50_us < 8000, "{lat:?}");
    assert!(
        svc.p50_us >= 2000 && svc.p50_us <= lat.p50_us + 50,
        "{svc:?}"
    );
    assert!(summarize(&s.recorder.send_lag).p50_us < 1000);
    assert!(counters.bytes_out > 0 && counters.bytes_in > 0);
    assert_eq!(s.thread_cpu_s.len(), 1);
    assert!(s.thread_cpu_s[0] > 0.0 && s.thread_cpu_s[0] < s.recorded_s);
    let back = decode(&encode(&s.recorder.latency)).unwrap();
    assert_eq!(summarize(&back), lat);
}

#[test]
fn stall_shows_in_latency_from_intended_time_but_not_in_service_time() {
    // Stalls at [300, 600) and [900, 1200) ms after the server starts.
    let h = serve(ServerConfig {
        stall: Some(Stall::parse("300ms/600ms").unwrap()),
        ..Default::default()
    });
    let mut c = open(&h, 500.0, 1200);
    c.steps[0].connections = Some(2);
    let s = run_one(&c);
    assert_balanced(&s);
    let lat = summarize(&s.recorder.latency);
    let svc = summarize(&s.recorder.service_time);
    let lag = summarize(&s.recorder.send_lag);
    // Half of the step (600 of 1200 ms) is stalled; a request intended
    // during a stall waits for its end, 150 ms on average. So latency from
    // the intended time averages about 0.5 * 150 ms = 75 ms.
    assert!(
        (55_000.0..95_000.0).contains(&lat.mean_us),
        "latency {lat:?}"
    );
    assert!(lat.p90_us > 200_000, "latency {lat:?}");
    // Only the few requests in flight when a stall began saw it in their
    // service time (2 connections, 2 stalls): its p99 stays small. This is
    // what a coordinated-omission-blind tool would report as latency.
    assert!(svc.p99_us < 50_000, "service {svc:?}");
    assert!(svc.max_us > 200_000, "service {svc:?}");
    assert!(lag.p99_us > 200_000, "send lag {lag:?}");
    assert_eq!(s.recorder.counters.failures, 0);
}

#[test]
fn error_rate_is_counted_and_kept_apart() {
    let h = serve(ServerConfig {
        error_rate: 0.25,
        ..Default::default()
    });
    let s = run_one(&open(&h, 1000.0, 600));
    assert_balanced(&s);
    let c = &s.recorder.counters;
    let share = c.status[500] as f64 / c.requests_sent as f64;
    assert!((share - 0.25).abs() < 0.07, "{share} of {c:?}");
    assert_eq!(c.failures, c.status[500]);
    assert_eq!(c.successes, c.status[200]);
}

#[test]
fn dead_server_counts_connect_refused_without_hanging() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = Config::open(&format!("http://127.0.0.1:{port}/"), 200.0).unwrap();
    c.duration = Duration::from_millis(300);
    c.threads = 1;
    let t = Instant::now();
    let s = run_one(&c);
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_balanced(&s);
    let k = &s.recorder.counters;
    assert_eq!(k.successes, 0);
    assert!(
        (50..=70).contains(&k.error(ErrorKind::ConnectRefused)),
        "{k:?}"
    );
    // Every connect failed: the recorded requests' and the pre-opened
    // connection's (made before the step starts, not a request).
    assert_eq!(k.connect_failures, k.connections_errored);
    assert!(k.connect_failures >= k.error(ErrorKind::ConnectRefused));
    assert!(k.connect_failures <= k.error(ErrorKind::ConnectRefused) + 1);
    assert_eq!(k.connections_opened, 0);
}

#[test]
fn faults_end_as_read_timeout_and_closed_mid_response() {
    let h = serve(ServerConfig {
        fault: Fault::EndlessBody,
        ..Default::default()
    });
    let mut c = open(&h, 20.0, 300);
    c.read_timeout = Duration::from_millis(200);
    let s = run_one(&c);
    assert_balanced(&s);
    let k = &s.recorder.counters;
    assert!(
        k.error(ErrorKind::ReadTimeout) >= 5 && k.successes == 0,
        "{k:?}"
    );
    let h = serve(ServerConfig {
        fault: Fault::CloseMidResponse,
        body_size: 100,
        ..Default::default()
    });
    let s = run_one(&open(&h, 100.0, 300));
    assert_balanced(&s);
    let k = &s.recorder.counters;
    assert!(
        k.error(ErrorKind::ClosedMidResponse) >= 25 && k.successes == 0,
        "{k:?}"
    );
}

#[test]
fn busy_connections_make_requests_wait_never_skip() {
    // One connection, 40 ms per response, 100 req/s offered: capacity is
    // 25/s, so requests queue and their send lag and latency grow.
    let h = serve(ServerConfig {
        delay: Some(Delay::Fixed(Duration::from_millis(40))),
        ..Default::default()
    });
    let mut c = open(&h, 100.0, 500);
    c.steps[0].connections = Some(1);
    let s = run_one(&c);
    assert_balanced(&s);
    let k = &s.recorder.counters;
    // Every one of the 50 intended requests was sent or is counted unsent.
    assert_eq!(k.requests_sent + k.unsent, 50, "{k:?}");
    assert!(k.unsent > 20, "{k:?}");
    let lat = summarize(&s.recorder.latency);
    let lag = summarize(&s.recorder.send_lag);
    assert!(lag.max_us > 200_000, "{lag:?}");
    assert!(lat.max_us >= lag.max_us, "{lat:?} {lag:?}");
    assert_eq!(s.connections, 1);
    // The send lag is the busy connection's doing (the server's): the
    // requests waited for it, and the dispatcher itself stayed on time.
    assert!(
        k.pool_waits + 1 >= k.requests_sent && k.pool_waits > 5,
        "{k:?}"
    );
    let dispatch = summarize(&s.recorder.dispatch_lag);
    assert!(dispatch.count >= k.requests_sent, "{dispatch:?}");
    assert!(dispatch.p99_us < lag.max_us / 4, "{dispatch:?} {lag:?}");
}

#[test]
fn closed_loop_runs_n_connections_without_send_lag() {
    let h = serve(ServerConfig::default());
    let mut c = open(&h, 1.0, 300);
    c.model = LoadModel::Closed;
    c.steps = vec![StepSpec {
        rate: None,
        connections: Some(4),
    }];
    c.threads = 2;
    let s = run_one(&c);
    assert_balanced(&s);
    assert_eq!(
        (s.mode, s.offered_rate, s.connections, s.threads),
        ("closed", None, 4, 2)
    );
    assert!(
        s.recorder.counters.successes > 200,
        "{:?}",
        s.recorder.counters
    );
    assert!(s.recorder.send_lag.is_empty());
    assert!(s.recorder.counters.connections_opened >= 4);
}

#[test]
fn poisson_sweep_runs_each_step_at_its_rate() {
    let h = serve(ServerConfig::default());
    let mut c = open(&h, 1.0, 500);
    c.model = LoadModel::Open(Arrival::Poisson);
    c.steps = [200.0, 1000.0]
        .iter()
        .map(|&r| StepSpec {
            rate: Some(r),
            connections: None,
        })
        .collect();
    c.warmup = Duration::from_millis(100);
    let r = run(&c, Arc::default(), Arc::default()).unwrap();
    assert_eq!(r.steps.len(), 2);
    for s in &r.steps {
        assert_balanced(s);
        let expect = s.offered_rate.unwrap() * s.recorded_s;
        let got = s.recorder.counters.successes as f64;
        // Poisson count: sd = sqrt(expect); allow 4 sd.
        assert!(
            (got - expect).abs() < 4.0 * expect.sqrt() + 2.0,
            "{got} vs {expect}"
        );
        assert_eq!(s.arrival, Some("poisson"));
    }
}

#[test]
fn stop_flag_ends_the_step_early_with_its_accounting() {
    let h = serve(ServerConfig {
        delay: Some(Delay::Fixed(Duration::from_millis(1))),
        ..Default::default()
    });
    let mut c = open(&h, 200.0, 10_000);
    c.steps.push(c.steps[0]);
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(Progress::default());
    let (s2, p2) = (stop.clone(), progress.clone());
    let watcher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        let snap = p2.snapshot();
        s2.store(true, Ordering::Relaxed);
        snap
    });
    let t = Instant::now();
    let r = run(&c, stop, progress).unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let snap = watcher.join().unwrap();
    assert!(snap.completed > 20 && snap.p99_us >= 1000, "{snap:?}");
    assert!(r.interrupted);
    assert_eq!(r.steps.len(), 1, "no step starts after a stop");
    let s = &r.steps[0];
    assert!(s.interrupted && s.recorded_s < 1.0, "{}", s.recorded_s);
    assert_balanced(s);
    assert!(s.recorder.counters.successes >= 40);
}
