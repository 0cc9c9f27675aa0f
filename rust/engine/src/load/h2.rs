//! HTTP/2 for the load engine (the `h2` crate over tokio, as hyper uses it):
//! one TCP (or TLS, ALPN `h2`) connection carries `streams` concurrent
//! requests, each a *lane* ([`H2Lane`]) that behaves for the engine like one
//! HTTP/1.1 connection: it takes one request at a time, so the open-loop
//! dispatcher and the closed loop drive lanes exactly as they drive
//! HTTP/1.1 connections. On plain TCP the client speaks HTTP/2 with prior
//! knowledge (h2c, RFC 9113 §3.3).
//!
//! Accounting: the lane that opens a connection reports it opened; the one
//! that drops it after a connection-level error (an I/O error, a GOAWAY)
//! reports it closed, and otherwise the last lane of the connection to end
//! closes it, so `connections_opened = connections_closed` holds as for
//! HTTP/1.1. A stream reset (RST_STREAM) fails that request only. A request
//! refused unprocessed (GOAWAY past its stream, REFUSED_STREAM; RFC 9113
//! §8.7) is retried once on a fresh connection, as browsers do, so a
//! server's per-connection request limit does not show up as errors.
//!
//! Bytes: HTTP/2 frames carry several requests and headers are
//! HPACK-compressed, so a request's share of the wire cannot be told apart:
//! `bytes_in`/`bytes_out` count the DATA payload (the bodies).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use http::header::{CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};

use super::codec::RequestSpec;
use super::conn::{Connector, Exchange, Handshake, Outcome, Stream};
use super::recorder::ErrorKind;
use super::server_timing::{self, Parsed};

/// HTTP/2 flow-control windows the client advertises, bytes: large, so a
/// response body is never held up by the client's window (h2load's
/// defaults are larger still).
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// Headers that are HTTP/1.1 connection options: HTTP/2 forbids them
/// (RFC 9113 §8.2.2), so they are left out.
const CONNECTION_HEADERS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// One request as HTTP/2 sends it, built once per run.
#[derive(Clone, Debug)]
pub struct H2Request {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
}

impl H2Request {
    /// The HTTP/2 form of `spec` for `scheme` (`"http"`/`"https"`) and
    /// `authority` (`host[:port]`; a `Host` header in `spec` replaces it).
    /// Connection-option headers are dropped, `TE` kept only as
    /// `trailers`, and a body gets a `content-length`.
    ///
    /// # Errors
    /// A message naming a method, path or header HTTP/2 cannot carry.
    pub fn new(spec: &RequestSpec, scheme: &str, authority: &str) -> Result<Self, String> {
        let method = Method::from_bytes(spec.method.as_bytes())
            .map_err(|_| format!("invalid HTTP method {:?}", spec.method))?;
        let mut authority = authority.to_string();
        let mut headers = HeaderMap::new();
        for (k, v) in &spec.headers {
            let lower = k.to_ascii_lowercase();
            if lower == HOST.as_str() {
                authority = v.trim().to_string();
                continue;
            }
            let te_ok = lower != "te" || v.trim().eq_ignore_ascii_case("trailers");
            if CONNECTION_HEADERS.contains(&lower.as_str()) || !te_ok {
                continue;
            }
            let name = HeaderName::from_bytes(lower.as_bytes())
                .map_err(|_| format!("invalid header name {k:?}"))?;
            let value =
                HeaderValue::from_str(v).map_err(|_| format!("invalid header {k:?}: {v:?}"))?;
            headers.append(name, value);
        }
        if !spec.body.is_empty() && !headers.contains_key(CONTENT_LENGTH) {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(spec.body.len()));
        }
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority.as_str())
            .path_and_query(spec.path.as_str())
            .build()
            .map_err(|e| format!("invalid request target {authority:?}{:?}: {e}", spec.path))?;
        Ok(Self {
            method,
            uri,
            headers,
            body: Bytes::from(spec.body.clone()),
        })
    }

    fn build(&self) -> Request<()> {
        let mut r = Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }
}

/// One HTTP/2 connection, shared by its lanes on one engine thread.
#[derive(Default)]
pub struct H2Conn {
    send: RefCell<Option<SendRequest<Bytes>>>,
    /// Held by the lane opening the connection; the others wait for it.
    opening: tokio::sync::Mutex<()>,
    /// Lanes using this connection and not yet closed.
    lanes: Cell<usize>,
    /// Bumped at each (re)open: an error seen on an older connection does
    /// not close its replacement.
    generation: Cell<u64>,
}

impl H2Conn {
    /// A connection not yet opened (the first exchange opens it).
    pub fn new() -> Rc<Self> {
        Rc::new(Self::default())
    }

    /// Lanes joined so far and still running.
    pub fn lanes(&self) -> usize {
        self.lanes.get()
    }

    /// Drop the connection if it is still generation `generation`; true
    /// when this closed it.
    fn drop_if(&self, generation: u64) -> bool {
        generation == self.generation.get() && self.send.borrow_mut().take().is_some()
    }
}

/// Why a request failed, and whether its connection is gone with it.
struct Failure {
    kind: ErrorKind,
    /// The connection is unusable (I/O error, GOAWAY, protocol error).
    connection: bool,
    /// The server did not process the request: it may be sent again.
    refused: bool,
}

fn classify(e: &h2::Error) -> Failure {
    let refused = e.is_go_away() || e.reason() == Some(h2::Reason::REFUSED_STREAM);
    if let Some(io) = e.get_io() {
        let kind = match ErrorKind::from_io(io) {
            ErrorKind::Other | ErrorKind::ReadTimeout => ErrorKind::Reset,
            k => k,
        };
        return Failure {
            kind,
            connection: true,
            refused: false,
        };
    }
    Failure {
        kind: if e.is_reset() || e.is_go_away() {
            ErrorKind::Reset
        } else {
            ErrorKind::Protocol
        },
        connection: e.is_go_away() || !e.is_reset(),
        refused,
    }
}

/// One request slot on an HTTP/2 connection.
pub struct H2Lane {
    conn: Rc<H2Conn>,
    timing: Parsed,
    joined: bool,
}

impl H2Lane {
    /// A new lane on `conn`.
    pub fn join(conn: &Rc<H2Conn>) -> Self {
        conn.lanes.set(conn.lanes.get() + 1);
        Self {
            conn: conn.clone(),
            timing: Parsed::default(),
            joined: true,
        }
    }

    /// The `Server-Timing` metrics of the last response.
    pub fn server_timing(&self) -> &Parsed {
        &self.timing
    }

    /// Open the connection unless it is open (or being opened by another
    /// lane, which is waited for). Returns the phases when this lane opened
    /// it.
    ///
    /// # Errors
    /// The connect failure's kind; `Protocol` when a TLS server did not
    /// agree to `h2` or the HTTP/2 handshake failed.
    pub async fn open(&mut self, connector: &Connector) -> Result<Option<Handshake>, ErrorKind> {
        if self.conn.send.borrow().is_some() {
            return Ok(None);
        }
        let _guard = self.conn.opening.lock().await;
        if self.conn.send.borrow().is_some() {
            return Ok(None);
        }
        let (stream, phases) = connector.connect().await?;
        if let Stream::Tls(s) = &stream {
            if s.get_ref().1.alpn_protocol() != Some(b"h2".as_slice()) {
                return Err(ErrorKind::Protocol);
            }
        }
        let handshake = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .enable_push(false)
            .handshake::<_, Bytes>(stream);
        let (send, connection) = tokio::time::timeout(connector.connect_timeout, handshake)
            .await
            .map_err(|_| ErrorKind::ConnectTimeout)?
            .map_err(|e| classify(&e).kind)?;
        tokio::task::spawn_local(async move {
            let _ = connection.await;
        });
        *self.conn.send.borrow_mut() = Some(send);
        self.conn.generation.set(self.conn.generation.get() + 1);
        Ok(Some(phases))
    }

    /// Send `req` on this lane (opening the connection first when needed)
    /// and read the whole response, within `read_timeout` from the send to
    /// the last byte. A request refused unprocessed is sent once more on a
    /// fresh connection. Never panics; failures come back in the outcome.
    pub async fn exchange(
        &mut self,
        connector: &Connector,
        req: &H2Request,
        read_timeout: Duration,
    ) -> Exchange {
        let mut ex = Exchange::new();
        for attempt in 0..2 {
            match self.open(connector).await {
                Ok(phases) => {
                    ex.opened |= phases.is_some();
                    ex.handshake = ex.handshake.or(phases);
                }
                Err(kind) => {
                    ex.outcome = Outcome::Error(kind);
                    ex.connect_failed = true;
                    ex.end = Instant::now();
                    return ex;
                }
            }
            let Some(send) = self.conn.send.borrow().clone() else {
                ex.outcome = Outcome::Error(ErrorKind::Reset);
                break;
            };
            let generation = self.conn.generation.get();
            ex.write_start = Instant::now();
            self.timing.clear();
            let result =
                tokio::time::timeout(read_timeout, self.round_trip(send, req, &mut ex)).await;
            ex.end = Instant::now();
            match result {
                Ok(Ok(status)) => ex.outcome = Outcome::Response(status),
                Err(_) => ex.outcome = Outcome::Error(ErrorKind::ReadTimeout),
                Ok(Err(f)) => {
                    if f.connection {
                        ex.closed |= self.conn.drop_if(generation);
                    }
                    ex.outcome = Outcome::Error(f.kind);
                    // One retry, on a connection this exchange did not
                    // open (so its open and close stay counted once each).
                    if f.refused && attempt == 0 && !ex.opened {
                        continue;
                    }
                }
            }
            break;
        }
        ex
    }

    async fn round_trip(
        &mut self,
        send: SendRequest<Bytes>,
        req: &H2Request,
        ex: &mut Exchange,
    ) -> Result<u16, Failure> {
        let mut send = send.ready().await.map_err(|e| classify(&e))?;
        let (response, mut body_out) = send
            .send_request(req.build(), req.body.is_empty())
            .map_err(|e| classify(&e))?;
        if !req.body.is_empty() {
            body_out
                .send_data(req.body.clone(), true)
                .map_err(|e| classify(&e))?;
        }
        ex.bytes_out = req.body.len() as u64;
        let response = response.await.map_err(|e| classify(&e))?;
        ex.first_byte = Some(Instant::now());
        let status = response.status().as_u16();
        for v in response.headers().get_all("server-timing") {
            server_timing::parse(v.as_bytes(), &mut self.timing);
        }
        let mut body = response.into_body();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| classify(&e))?;
            ex.bytes_in += chunk.len() as u64;
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        Ok(status)
    }

    /// Leave the connection; the last lane to leave closes it. Returns true
    /// when this closed an open connection.
    pub fn close(&mut self) -> bool {
        if !std::mem::take(&mut self.joined) {
            return false;
        }
        let left = self.conn.lanes.get().saturating_sub(1);
        self.conn.lanes.set(left);
        left == 0 && self.conn.send.borrow_mut().take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_drop_connection_headers_and_take_host_as_authority() {
        let mut spec = RequestSpec::get("/a?b=1");
        spec.method = "POST".into();
        spec.body = b"xyz".to_vec();
        spec.headers = vec![
            ("Host".into(), "example.test:8443".into()),
            ("Connection".into(), "keep-alive".into()),
            ("TE".into(), "gzip".into()),
            ("X-Token".into(), "1".into()),
        ];
        let r = H2Request::new(&spec, "https", "127.0.0.1:1")
            .unwrap()
            .build();
        assert_eq!(r.uri().to_string(), "https://example.test:8443/a?b=1");
        assert_eq!(r.method(), Method::POST);
        assert!(r.headers().get("connection").is_none() && r.headers().get("te").is_none());
        assert_eq!(r.headers()["x-token"], "1");
        assert_eq!(r.headers()["content-length"], "3");
        spec.headers = vec![("Bad Name".into(), "1".into())];
        assert!(H2Request::new(&spec, "http", "h").is_err());
    }

    #[test]
    fn the_last_lane_closes_the_connection() {
        let conn = H2Conn::new();
        let (mut a, mut b) = (H2Lane::join(&conn), H2Lane::join(&conn));
        assert_eq!(conn.lanes(), 2);
        // Never opened: no lane reports a close.
        assert!(!a.close() && !a.close() && !b.close());
        assert_eq!(conn.lanes(), 0);
    }
}
