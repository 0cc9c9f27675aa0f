//! End-to-end: HTTP/3 over QUIC against `perflab serve` (its HTTP/3 on the
//! UDP port of the TCP port's number, self-signed, so `insecure`) on
//! 127.0.0.1. Each test is bounded to about a second; they assert
//! accounting identities and what each phase holds, never speeds.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::e2e_tests::{assert_balanced, run_one, serve};
use super::*;
use crate::hdr::summarize;
use crate::server::{Delay, Fault, ServerConfig, ServerHandle, Stall};

fn serve_h3(config: ServerConfig) -> ServerHandle {
    serve(ServerConfig {
        http3: true,
        ..config
    })
}

/// An HTTP/3 run against `h` at `rate` (open loop) for `duration_ms`.
fn h3(h: &ServerHandle, rate: f64, duration_ms: u64, streams: usize) -> Config {
    let mut c = Config::open(&format!("https://{}/x", h.address()), rate).unwrap();
    c.duration = Duration::from_millis(duration_ms);
    c.threads = 1;
    c.read_timeout = Duration::from_secs(3);
    c.insecure = true;
    c.protocol = Protocol::Http3;
    c.streams = streams;
    c
}

/// A closed-loop HTTP/3 run against `h`: `connections` × `streams`.
fn h3_closed(h: &ServerHandle, connections: usize, streams: usize, duration_ms: u64) -> Config {
    let mut c = h3(h, 1.0, duration_ms, streams);
    c.model = LoadModel::Closed;
    c.steps[0] = StepSpec {
        rate: None,
        connections: Some(connections),
    };
    c
}

#[test]
fn closed_loop_multiplexes_streams_on_few_quic_connections() {
    let h = serve_h3(ServerConfig {
        delay: Some(Delay::Fixed(Duration::from_millis(2))),
        body_size: 100,
        ..Default::default()
    });
    let c = h3_closed(&h, 2, 4, 600);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert_eq!((s.protocol, s.streams, s.connections), ("h3", 4, 2));
    assert_eq!(k.connections_opened, 2, "{k:?}");
    assert_eq!(h.stats().connections.load(Ordering::Relaxed), 2);
    assert!(k.ok_responses > 0 && k.failures == 0, "{k:?}");
    assert!(k.bytes_in > 0 && k.bytes_in.is_multiple_of(100), "{k:?}");
    let hs = &s.recorder.histograms;
    assert_eq!(hs.ttfb.len(), hs.latency.len());
    assert_eq!(hs.body_time.len(), hs.latency.len());
    // QUIC: no TCP connect; its handshake is recorded as tls_handshake.
    assert_eq!((hs.connect.len(), hs.tls_handshake.len()), (0, 2));
    assert!(hs.ttfb.min() >= 1900, "{}", hs.ttfb.min());
}

#[test]
fn open_loop_accounts_every_intended_request() {
    let h = serve_h3(ServerConfig {
        delay: Some(Delay::Fixed(Duration::from_millis(1))),
        ..Default::default()
    });
    let c = h3(&h, 500.0, 800, 8);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert_eq!(k.requests_sent + k.unsent, 400, "{k:?}");
    assert_eq!(s.recorder.histograms.send_lag.len(), k.requests_sent);
    assert!(k.connections_opened >= 1 && k.failures == 0, "{k:?}");
    assert_eq!(h.stats().requests.load(Ordering::Relaxed), k.requests_sent);
}

#[test]
fn errors_and_faults_fail_the_stream_not_the_connection() {
    let h = serve_h3(ServerConfig {
        error_rate: 1.0,
        ..Default::default()
    });
    let s = run_one(&h3(&h, 200.0, 400, 4));
    let k = &s.recorder.counters;
    assert_eq!(k.status_counts[500], k.failures);
    assert!(k.failures > 0 && k.connections_errored == 0, "{k:?}");

    let h = serve_h3(ServerConfig {
        fault: Fault::CloseMidResponse,
        ..Default::default()
    });
    let c = h3(&h, 200.0, 400, 4);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert!(k.failures > 0);
    assert_eq!(k.error(ErrorKind::Reset), k.failures, "{k:?}");
    assert_eq!(k.connections_errored, 0, "{k:?}");

    let h = serve_h3(ServerConfig {
        fault: Fault::EndlessBody,
        ..Default::default()
    });
    let mut c = h3(&h, 20.0, 300, 2);
    c.read_timeout = Duration::from_millis(300);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let k = &s.recorder.counters;
    assert!(k.failures > 0);
    assert_eq!(k.error(ErrorKind::ReadTimeout), k.failures, "{k:?}");
}

#[test]
fn http3_is_refused_on_plain_http_and_without_a_quic_server() {
    let h = serve(ServerConfig::default());
    let mut c = h3(&h, 50.0, 300, 1);
    c.connect_timeout = Duration::from_millis(200);
    // Nothing answers QUIC on that UDP port: the handshake times out.
    let s = run_one(&c);
    let k = &s.recorder.counters;
    assert!(k.failures > 0 && k.ok_responses == 0, "{k:?}");
    assert_eq!(k.error(ErrorKind::ConnectTimeout), k.failures, "{k:?}");
    c.target = url::Target::parse(&format!("http://{}/", h.address())).unwrap();
    assert!(c.validate().unwrap_err().contains("https://"));
}

#[test]
fn stall_shows_in_latency_from_intended_time_over_quic() {
    // Stalls at [300, 600) and [900, 1200) ms after the server starts; as
    // e2e_tests' HTTP/1.1 stall test, on two single-stream QUIC connections.
    let h = serve_h3(ServerConfig {
        stall: Some(Stall::parse("300ms/600ms").unwrap()),
        ..Default::default()
    });
    let mut c = h3(&h, 500.0, 1200, 1);
    c.steps[0].connections = Some(2);
    let s = run_one(&c);
    assert_balanced(&s, &c);
    let lat = summarize(&s.recorder.histograms.latency);
    let service = &s.recorder.histograms.service_time;
    // Half the step is stalled, 150 ms left on average: latency from the
    // intended time averages about 75 ms, while only requests in flight
    // when a stall began saw it in their service time: one per connection
    // per stall at most (2 × the up to 3 stalls the run meets; a busy
    // machine can leave 4 of the ≈ 400 there, so no percentile is asserted).
    assert!(
        (55_000.0..95_000.0).contains(&lat.mean_us),
        "latency {lat:?}"
    );
    assert!(lat.p90_us > 200_000, "latency {lat:?}");
    let stalled = service.count_between(50_000, service.max().max(50_000));
    assert!(stalled <= 6, "{stalled} stalled: {:?}", summarize(service));
    assert_eq!(s.recorder.counters.failures, 0);
}

#[test]
fn a_self_signed_certificate_without_insecure_is_a_tls_error() {
    let h = serve_h3(ServerConfig::default());
    let mut c = h3(&h, 50.0, 300, 1);
    c.insecure = false;
    let s = run_one(&c);
    let k = &s.recorder.counters;
    assert!(k.failures > 0 && k.ok_responses == 0, "{k:?}");
    assert_eq!(k.error(ErrorKind::Tls), k.failures, "{k:?}");
}

#[test]
fn a_connection_serves_its_streams_concurrently() {
    // serve answers a connection's streams within the connection's task
    // (server/h3.rs): one stream that never ends must not hold up the
    // others. Every stream here gets its response head and then an endless
    // body, so every request that timed out had begun its response (a
    // TTFB); a stream queued behind another would time out without one.
    let h = serve_h3(ServerConfig {
        fault: Fault::EndlessBody,
        ..Default::default()
    });
    let mut c = h3_closed(&h, 1, 4, 900);
    c.read_timeout = Duration::from_millis(300);
    let s = run_one(&c);
    let k = &s.recorder.counters;
    assert_eq!(k.connections_opened, 1, "{k:?}");
    assert!(k.failures >= 4, "{k:?}");
    assert_eq!(k.error(ErrorKind::ReadTimeout), k.failures, "{k:?}");
    let ttfb = s.recorder.histograms.ttfb.len();
    assert!(
        ttfb >= k.failures,
        "{ttfb} heads for {} timeouts",
        k.failures
    );
}
