//! [`RunSpec`]: a run described with plain names, numbers and seconds, as
//! `perflab._core.http_run` receives it from Python (deserialized by serde,
//! so the keys are these field names), and its checked conversion into a
//! [`Config`].

use std::fmt;
use std::time::{Duration, UNIX_EPOCH};

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::codec::RequestSpec;
use super::config::{default_threads, Config, LoadModel, Protocol, StepSpec};
use super::recorder::OkStatus;
use super::schedule::{Arrival, Lanes};
use super::url::Target;

/// A run as plain values. Every key but `url` is optional; a null is the
/// same as an absent key. See `perflab._core.http_run` for each key's
/// meaning and default.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// `http://` or `https://` target.
    pub url: String,
    /// `"open"` (default) or `"closed"`.
    pub mode: Option<String>,
    /// `"constant"` (default) or `"poisson"` (open loop).
    pub arrival: Option<String>,
    /// Offered rate, requests/s: one open-loop step.
    pub rate: Option<f64>,
    /// Offered rates, requests/s: one open-loop step each.
    pub rates: Option<Vec<f64>>,
    /// Open loop: the pool cap (automatic when absent). Closed loop: one
    /// step with this many connections.
    pub connections: Option<usize>,
    /// Closed loop: one step per connection count.
    pub connections_list: Option<Vec<usize>>,
    /// Length of each step including its warmup, s (10).
    pub duration_s: Option<f64>,
    /// Unrecorded start of each step, s (0).
    pub warmup_s: Option<f64>,
    /// Engine threads (the cores less one, at least one).
    pub threads: Option<usize>,
    /// TCP connect plus TLS handshake limit, s (2).
    pub connect_timeout_s: Option<f64>,
    /// Request write to last response byte limit, s (10).
    pub read_timeout_s: Option<f64>,
    /// Success statuses: `"200-299,304"` or a list of (low, high).
    pub ok: Option<OkStatus>,
    /// Skip TLS certificate checks.
    pub insecure: Option<bool>,
    /// Seed of Poisson arrivals.
    pub seed: Option<u64>,
    /// The single request's method (GET); its path is the URL's.
    pub method: Option<String>,
    /// The single request's headers: a dict or a list of (name, value).
    pub headers: Option<Headers>,
    /// The single request's body: str or bytes.
    pub body: Option<Body>,
    /// Requests sent round-robin instead of the single one.
    pub requests: Option<Vec<RequestInput>>,
    /// The first step's load starts at this realtime-clock instant, ns since
    /// the Unix epoch (a load agent's shared start); None: at once.
    pub start_unix_ns: Option<u64>,
    /// Open loop, constant arrivals: this load agent's slots of every
    /// `slot_period` requests of a schedule shared with other agents (see
    /// [`Lanes`]); both or neither.
    pub slots: Option<Vec<u64>>,
    pub slot_period: Option<u64>,
    /// `"http1"` (default) or `"http2"`.
    pub protocol: Option<String>,
    /// HTTP/2: concurrent streams per connection (1).
    pub streams: Option<usize>,
}

/// One of [`RunSpec::requests`]; the path defaults to the URL's.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestInput {
    pub method: Option<String>,
    pub path: Option<String>,
    pub headers: Option<Headers>,
    pub body: Option<Body>,
}

impl RequestInput {
    fn into_request(self, default_path: &str) -> RequestSpec {
        RequestSpec {
            method: self.method.unwrap_or_else(|| "GET".into()),
            path: self.path.unwrap_or_else(|| default_path.into()),
            headers: self.headers.unwrap_or_default().0,
            body: self.body.unwrap_or_default().0,
        }
    }
}

/// `value` seconds as a Duration, `default` when absent.
fn seconds(key: &str, value: Option<f64>, default: Duration) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s >= 0.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(format!(
            "{key} must be a non-negative number of seconds, got {s}"
        )),
    }
}

impl RunSpec {
    /// The load model: `mode` and `arrival`.
    fn model(&self) -> Result<LoadModel, String> {
        let arrival = Arrival::parse(self.arrival.as_deref().unwrap_or("constant"))?;
        match self.mode.as_deref().unwrap_or("open") {
            "open" => Ok(LoadModel::Open(arrival)),
            "closed" => Ok(LoadModel::Closed),
            m => Err(format!("unknown mode {m:?}; use \"open\" or \"closed\"")),
        }
    }

    /// The steps: one per rate (open loop) or per connection count (closed).
    fn steps(&self, model: LoadModel) -> Result<Vec<StepSpec>, String> {
        let connections = self.connections;
        Ok(match model {
            LoadModel::Open(_) => {
                let rates = match (&self.rates, self.rate) {
                    (Some(r), _) => r.clone(),
                    (None, Some(r)) => vec![r],
                    (None, None) => {
                        return Err("open loop needs \"rate\" or \"rates\" (requests/s)".into())
                    }
                };
                rates
                    .into_iter()
                    .map(|r| StepSpec {
                        rate: Some(r),
                        connections,
                    })
                    .collect()
            }
            LoadModel::Closed => {
                let list = match (&self.connections_list, connections) {
                    (Some(l), _) => l.clone(),
                    (None, Some(n)) => vec![n],
                    (None, None) => {
                        return Err(
                            "closed loop needs \"connections\" or \"connections_list\"".into()
                        )
                    }
                };
                list.into_iter()
                    .map(|n| StepSpec {
                        rate: None,
                        connections: Some(n),
                    })
                    .collect()
            }
        })
    }
}

impl TryFrom<RunSpec> for Config {
    type Error = String;

    /// The checked [`Config`] ([`Config::validate`] included): defaults
    /// filled in, the URL parsed, the requests built.
    fn try_from(spec: RunSpec) -> Result<Config, String> {
        let target = Target::parse(&spec.url)?;
        let model = spec.model()?;
        let mut c = Config::open(&spec.url, 1.0)?;
        c.steps = spec.steps(model)?;
        c.model = model;
        c.duration = seconds("duration_s", spec.duration_s, Duration::from_secs(10))?;
        c.warmup = seconds("warmup_s", spec.warmup_s, Duration::ZERO)?;
        c.threads = spec.threads.unwrap_or_else(default_threads);
        c.connect_timeout = seconds(
            "connect_timeout_s",
            spec.connect_timeout_s,
            c.connect_timeout,
        )?;
        c.read_timeout = seconds("read_timeout_s", spec.read_timeout_s, c.read_timeout)?;
        c.ok = spec.ok.unwrap_or_default();
        c.insecure = spec.insecure.unwrap_or(false);
        c.seed = spec.seed.unwrap_or(c.seed);
        c.start_at = spec
            .start_unix_ns
            .map(|ns| UNIX_EPOCH + Duration::from_nanos(ns));
        c.lanes = match (spec.slot_period, spec.slots) {
            (Some(period), Some(slots)) => Some(Lanes::new(period, slots)?),
            (None, None) => None,
            _ => return Err("slots and slot_period go together".into()),
        };
        c.requests = match spec.requests {
            Some(list) => list
                .into_iter()
                .map(|r| r.into_request(&target.path))
                .collect(),
            None => vec![RequestInput {
                method: spec.method,
                path: None,
                headers: spec.headers,
                body: spec.body,
            }
            .into_request(&target.path)],
        };
        c.protocol = Protocol::parse(spec.protocol.as_deref().unwrap_or("http1"))?;
        c.streams = spec.streams.unwrap_or(1);
        c.target = target;
        c.validate()?;
        Ok(c)
    }
}

/// A request body given as str or bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Body(pub Vec<u8>);

/// Request headers given as a dict or a list of (name, value) pairs, kept
/// in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Body;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a request body as str or bytes")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Body, E> {
                Ok(Body(v.as_bytes().to_vec()))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Body, E> {
                Ok(Body(v.to_vec()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("headers as a dict or a list of (name, value) pairs")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut out = Vec::new();
                while let Some(pair) = map.next_entry()? {
                    out.push(pair);
                }
                Ok(Headers(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Headers, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Headers)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for OkStatus {
    /// `"200-299,304"` ([`OkStatus::parse`]) or a list of (low, high).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OkStatus;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("ok statuses as \"200-299,304\" or a list of (low, high)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OkStatus, E> {
                OkStatus::parse(v).map_err(E::custom)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OkStatus, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(OkStatus)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str) -> RunSpec {
        RunSpec {
            url: url.into(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_fill_in_and_the_single_request_takes_the_url_path() {
        let c = Config::try_from(RunSpec {
            rate: Some(100.0),
            ..spec("http://127.0.0.1:1/p?q=1")
        })
        .unwrap();
        assert_eq!(c.model, LoadModel::Open(Arrival::Constant));
        assert_eq!(c.duration, Duration::from_secs(10));
        assert_eq!(c.warmup, Duration::ZERO);
        assert_eq!(c.requests, vec![RequestSpec::get("/p?q=1")]);
        assert_eq!(c.steps.len(), 1);
        assert_eq!(c.ok, OkStatus::default());
    }

    #[test]
    fn steps_follow_the_mode() {
        let c = Config::try_from(RunSpec {
            rates: Some(vec![10.0, 20.0]),
            connections: Some(4),
            ..spec("http://127.0.0.1:1/")
        })
        .unwrap();
        assert_eq!(
            c.steps.iter().map(|s| s.rate).collect::<Vec<_>>(),
            [Some(10.0), Some(20.0)]
        );
        assert!(c.steps.iter().all(|s| s.connections == Some(4)));
        let c = Config::try_from(RunSpec {
            mode: Some("closed".into()),
            connections_list: Some(vec![1, 2]),
            ..spec("http://127.0.0.1:1/")
        })
        .unwrap();
        assert_eq!(c.steps[1].connections, Some(2));
    }

    #[test]
    fn bad_values_say_which_key() {
        let err = |s: RunSpec| Config::try_from(s).unwrap_err();
        assert!(err(spec("http://127.0.0.1:1/")).contains("\"rate\""));
        let closed = |s| RunSpec {
            mode: Some("closed".into()),
            ..s
        };
        assert!(err(closed(spec("http://127.0.0.1:1/"))).contains("connections_list"));
        let warp = RunSpec {
            mode: Some("warp".into()),
            ..spec("http://127.0.0.1:1/")
        };
        assert!(err(warp).contains("unknown mode"));
        let negative = RunSpec {
            rate: Some(1.0),
            warmup_s: Some(-1.0),
            ..spec("http://127.0.0.1:1/")
        };
        assert!(err(negative).contains("warmup_s must be a non-negative"));
        assert!(err(spec("ftp://x/")).contains("scheme"));
    }
}
