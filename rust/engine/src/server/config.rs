//! What `perflab serve` is asked to do ([`ServerConfig`]) and what it
//! counted ([`ServerStats`]): plain data, below the listener (`super`) and
//! the connections (`super::conn`).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::behaviour::{Delay, Fault, Stall};

/// How the server behaves. Deserializable (`perflab._core.serve`'s config):
/// every key optional, durations and distributions as text in the one
/// duration grammar ([`crate::duration`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Host or IP to bind (`"127.0.0.1"`, `"::1"`).
    pub host: String,
    /// Port; 0 picks a free one (read it from [`ServerHandle::address`](super::ServerHandle::address)).
    pub port: u16,
    /// Processing delay per request (None = answer at once).
    pub delay: Option<Delay>,
    pub stall: Option<Stall>,
    /// Fraction of requests answered 500, drawn with a seeded RNG.
    pub error_rate: f64,
    /// Response body length, bytes.
    pub body_size: usize,
    pub fault: Fault,
    /// A global mutex held this long per request (after the delay), so that
    /// throughput saturates at 1/serialize: a contention point for USL tests.
    #[serde(deserialize_with = "crate::duration::deserialize_text")]
    pub serialize: Option<Duration>,
    /// Worker threads of the server's runtime.
    pub threads: usize,
    pub seed: u64,
    /// Also serve HTTP/3 over QUIC on the UDP port of the same number
    /// (self-signed certificate; see `super::h3`).
    pub http3: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 0,
            delay: None,
            stall: None,
            error_rate: 0.0,
            body_size: 0,
            fault: Fault::None,
            serialize: None,
            threads: 1,
            seed: 0x5EED,
            http3: false,
        }
    }
}

/// Counters of what the server did; read them while it runs.
#[derive(Debug, Default, Serialize)]
pub struct ServerStats {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    /// Requests answered 500 on purpose.
    pub errors_injected: AtomicU64,
}
