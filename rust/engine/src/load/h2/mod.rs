//! HTTP/2 for the load engine, perflab's own client (RFC 9113, RFC 7541):
//! one TCP (or TLS, ALPN `h2`) connection carries `streams` concurrent
//! requests, each a lane ([`H2Lane`], a [`MuxLane`]: accounting and retries
//! are [`super::mux`]'s). On plain TCP the client speaks HTTP/2 with prior
//! knowledge (h2c, RFC 9113 §3.3). A stream reset (RST_STREAM) fails that
//! request only.
//!
//! The parts: [`frame`] (frame layout), [`huffman`] and [`hpack`] (header
//! compression: the request encoded once, the responses decoded without a
//! header map), [`state`] and [`recv`] (the connection's protocol, no I/O),
//! [`client`] (the socket task and the requests' handle).
//!
//! Bytes: HTTP/2 frames carry several requests and headers are
//! HPACK-compressed, so a request's share of the wire cannot be told apart:
//! `bytes_in`/`bytes_out` count the DATA payload (the bodies).

mod client;
mod frame;
mod hpack;
#[cfg(test)]
mod hpack_tests;
mod huffman;
mod recv;
mod state;
#[cfg(test)]
mod state_tests;

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};

use super::codec::RequestSpec;
use super::conn::{Connector, Exchange, Handshake, Stream};
use super::mux::{Failure, MuxConn, MuxLane, Session};
use super::recorder::ErrorKind;
use super::server_timing::Parsed;

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
    /// The HPACK header block HTTP/2 sends (encoded once).
    block: Vec<u8>,
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
        let mut fields = Vec::new();
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
            fields.push((lower, v.clone()));
        }
        if !spec.body.is_empty() && !headers.contains_key(CONTENT_LENGTH) {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(spec.body.len()));
            fields.push((CONTENT_LENGTH.to_string(), spec.body.len().to_string()));
        }
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority.as_str())
            .path_and_query(spec.path.as_str())
            .build()
            .map_err(|e| format!("invalid request target {authority:?}{:?}: {e}", spec.path))?;
        let block = hpack::encode_request(
            method.as_str(),
            scheme,
            &authority,
            uri.path_and_query().map_or("/", |p| p.as_str()),
            &fields,
        );
        Ok(Self {
            method,
            uri,
            headers,
            body: Bytes::from(spec.body.clone()),
            block,
        })
    }

    /// The request head (method, URI, headers) for the `h3` crate.
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

/// An open HTTP/2 connection (perflab's own client: [`client`] runs it on
/// the thread's `LocalSet`), and the streams its lanes have in use (shared
/// by the clones of one connection).
#[derive(Clone)]
pub struct H2Session {
    conn: Rc<client::Handle>,
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

impl Session for H2Session {
    type Request = H2Request;

    /// TCP (and TLS) connect, then the HTTP/2 handshake, which ends when
    /// the server's SETTINGS are applied (its preface, RFC 9113 §3.4), so
    /// its SETTINGS_MAX_CONCURRENT_STREAMS holds from the first request.
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
        let conn =
            tokio::time::timeout(connector.connect_timeout, client::Handle::handshake(stream))
                .await
                .map_err(|_| ErrorKind::ConnectTimeout)??;
        Ok((
            H2Session {
                conn: Rc::new(conn),
                in_use: Rc::default(),
            },
            phases,
        ))
    }

    /// Below the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    fn has_free_stream(&self) -> bool {
        self.in_use.get() < self.conn.max_streams()
    }

    /// Send time (`ex.write_start`): when the request's HEADERS frame is
    /// queued on the connection, after any wait for a stream; the
    /// connection's task, on the same thread, writes it at its next poll.
    async fn round_trip(
        &mut self,
        req: &H2Request,
        ex: &mut Exchange,
        timing: &mut Parsed,
    ) -> Result<u16, Failure> {
        let _stream = InUse::new(&self.in_use);
        self.conn.request(&req.block, &req.body, ex, timing).await
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
        let req = H2Request::new(&spec, "https", "127.0.0.1:1").unwrap();
        let mut fields = Vec::new();
        hpack::Decoder::default()
            .decode(&req.block, |n, v| fields.push((n.to_vec(), v.to_vec())))
            .unwrap();
        let field = |n: &str| {
            fields
                .iter()
                .find(|f| f.0 == n.as_bytes())
                .map(|f| f.1.as_slice())
        };
        assert_eq!(field(":authority"), Some(b"example.test:8443".as_slice()));
        assert_eq!(field(":path"), Some(b"/a?b=1".as_slice()));
        assert_eq!(field(":method"), Some(b"POST".as_slice()));
        assert_eq!(field("content-length"), Some(b"3".as_slice()));
        assert_eq!(field("x-token"), Some(b"1".as_slice()));
        assert_eq!(
            (field("connection"), field("te"), field("host")),
            (None, None, None)
        );
        let r = req.build();
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
