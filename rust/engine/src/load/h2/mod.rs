//! HTTP/2 for the load engine (the `h2` crate over tokio, as hyper uses it):
//! one TCP (or TLS, ALPN `h2`) connection carries `streams` concurrent
//! requests, each a lane ([`H2Lane`], a [`MuxLane`]: accounting and retries
//! are [`super::mux`]'s). On plain TCP the client speaks HTTP/2 with prior
//! knowledge (h2c, RFC 9113 §3.3). A stream reset (RST_STREAM) fails that
//! request only.
//!
//! Bytes: HTTP/2 frames carry several requests and headers are
//! HPACK-compressed, so a request's share of the wire cannot be told apart:
//! `bytes_in`/`bytes_out` count the DATA payload (the bodies).

// Used by the connection (step 2); tested on their own meanwhile.
#[allow(dead_code)]
mod hpack;
#[cfg(test)]
mod hpack_tests;
#[allow(dead_code)]
mod huffman;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::Ping;
use http::header::{CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};

use super::codec::RequestSpec;
use super::conn::{Connector, Exchange, Handshake, Stream};
use super::mux::{Failure, MuxConn, MuxLane, Session};
use super::recorder::ErrorKind;
use super::server_timing::{self, Parsed};

/// HTTP/2 flow-control windows the client advertises, bytes: large, so a
/// response body is never held up by the client's window (h2load's
/// defaults are larger still).
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// The response header read for server-side phases (parsed once, not per
/// response).
const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// Headers that are HTTP/1.1 connection options: HTTP/2 forbids them
/// (RFC 9113 §8.2.2), so they are left out.
const CONNECTION_HEADERS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// One request as HTTP/2 (and HTTP/3, [`super::h3`]) sends it, built once
/// per run.
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

    /// The request head (method, URI, headers) for the `h2` or `h3` crate.
    pub(super) fn build(&self) -> Request<()> {
        let mut r = Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }

    /// The request body (empty for none).
    pub(super) fn body(&self) -> &Bytes {
        &self.body
    }
}

/// One HTTP/2 connection, shared by its lanes on one engine thread.
pub type H2Conn = MuxConn<H2Session>;

/// One request slot on an HTTP/2 connection.
pub type H2Lane = MuxLane<H2Session>;

/// An open HTTP/2 connection: the `h2` crate's request handle (its
/// connection task runs beside it on the thread's `LocalSet`), and the
/// streams its lanes have in use (shared by the clones of one connection).
#[derive(Clone)]
pub struct H2Session {
    send: SendRequest<Bytes>,
    in_use: Rc<Cell<usize>>,
}

/// One stream of a connection in use for as long as it lives (dropped at the
/// end of the exchange, or with it when the read timeout cuts it off).
struct InUse(Rc<Cell<usize>>);

impl InUse {
    fn new(count: &Rc<Cell<usize>>) -> Self {
        count.set(count.get() + 1);
        Self(count.clone())
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
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

impl Session for H2Session {
    type Request = H2Request;

    /// TCP (and TLS) connect, then the HTTP/2 handshake, which ends when
    /// the server's SETTINGS are known: a PING's answer follows the server's
    /// preface (RFC 9113 §3.4), so its SETTINGS_MAX_CONCURRENT_STREAMS is
    /// applied before the first request (otherwise the `h2` crate assumes no
    /// limit, and requests past the server's would queue in it).
    ///
    /// # Errors
    /// The connect failure's kind; `Protocol` when a TLS server did not
    /// agree to `h2` or the HTTP/2 handshake failed.
    async fn open(connector: &Connector) -> Result<(Self, Handshake), ErrorKind> {
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
        let settled = async {
            let (send, mut connection) = handshake.await?;
            let ping = connection.ping_pong();
            tokio::task::spawn_local(async move {
                let _ = connection.await;
            });
            if let Some(mut ping) = ping {
                ping.ping(Ping::opaque()).await?;
            }
            Ok::<_, h2::Error>(send)
        };
        let send = tokio::time::timeout(connector.connect_timeout, settled)
            .await
            .map_err(|_| ErrorKind::ConnectTimeout)?
            .map_err(|e| classify(&e).kind)?;
        Ok((
            H2Session {
                send,
                in_use: Rc::default(),
            },
            phases,
        ))
    }

    /// Below the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    fn has_free_stream(&self) -> bool {
        self.in_use.get() < self.send.current_max_send_streams()
    }

    /// Send time (`ex.write_start`): when the request's HEADERS frame is
    /// queued on the connection (`send_request`), after any wait for a
    /// stream; the connection task, on the same thread, writes it at its
    /// next poll.
    async fn round_trip(
        &mut self,
        req: &H2Request,
        ex: &mut Exchange,
        timing: &mut Parsed,
    ) -> Result<u16, Failure> {
        let _stream = InUse::new(&self.in_use);
        std::future::poll_fn(|cx| self.send.poll_ready(cx))
            .await
            .map_err(|e| classify(&e))?;
        let (response, mut body_out) = self
            .send
            .send_request(req.build(), req.body.is_empty())
            .map_err(|e| classify(&e))?;
        ex.write_start = Instant::now();
        if !req.body.is_empty() {
            body_out
                .send_data(req.body.clone(), true)
                .map_err(|e| classify(&e))?;
        }
        ex.bytes_out = req.body.len() as u64;
        let response = response.await.map_err(|e| classify(&e))?;
        ex.first_byte = Some(Instant::now());
        let status = response.status().as_u16();
        for v in response.headers().get_all(&SERVER_TIMING) {
            server_timing::parse(v.as_bytes(), timing);
        }
        let mut body = response.into_body();
        // A response whose HEADERS ended the stream has no body to poll for.
        while !body.is_end_stream() {
            let Some(chunk) = body.data().await else {
                break;
            };
            let chunk = chunk.map_err(|e| classify(&e))?;
            ex.bytes_in += chunk.len() as u64;
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        Ok(status)
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
