//! HTTP/3 for the load engine: QUIC by `quinn`, HTTP/3 framing and QPACK
//! by `h3` over `h3-quinn` (RFC 9114). As for HTTP/2 ([`super::h2`]), one
//! QUIC connection carries `streams` concurrent requests, each a *lane*
//! ([`H3Lane`], a [`MuxLane`]) that takes one request at a time, so the
//! closed loop and the open-loop dispatcher drive HTTP/3 exactly as they
//! drive HTTP/1.1 connections and HTTP/2 streams.
//!
//! An engine thread's connections share one UDP socket (a quinn client
//! endpoint bound to an ephemeral port, [`thread_endpoint`]); QUIC tells
//! them apart by connection ID. QUIC is always encrypted (TLS 1.3, ALPN `h3`): the URL is
//! https, and `--insecure` skips the certificate check as it does for TCP.
//!
//! Phases: QUIC has no separate connect; the QUIC handshake (Initial to
//! handshake confirmed, one round trip, carrying the TLS 1.3 handshake) is
//! recorded as `tls_handshake`, and `connect` is not recorded.
//!
//! Accounting and retries are [`super::mux`]'s, as for HTTP/2: a stream
//! reset fails its request only; a request the server refused unprocessed
//! (GOAWAY, H3_REQUEST_REJECTED) is sent once more on a fresh connection.
//! `bytes_in`/`bytes_out` count the bodies (QPACK headers and QUIC framing
//! are shared by the connection's requests).

use std::cell::RefCell;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, Bytes};
use h3::error::{Code, ConnectionError, StreamError};

use super::conn::{Connector, Exchange, Handshake};
use super::h2::H2Request;
use super::mux::{Failure, MuxConn, MuxLane, Session};
use super::recorder::ErrorKind;
use super::server_timing::{self, Parsed};

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// QUIC flow-control windows each end grants, bytes: large, so a body is
/// never held up by the receiver (as for HTTP/2).
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// The QUIC transport settings of both ends of perflab's HTTP/3, this
/// client and `perflab serve --http3`; quinn's defaults otherwise.
///
/// - `bidi_streams`: request streams the peer may have open at once on a
///   connection: the server grants its clients many (`perflab serve`:
///   1024); the client grants 0, as RFC 9114 §6.1 lets no server open one.
/// - Stream and connection receive windows of 4 and 16 MiB
///   ([`STREAM_WINDOW`], [`CONNECTION_WINDOW`]).
/// - Segmentation offload (GSO) stays on, quinn's default: a run of
///   full-size packets goes to the kernel in one `sendmsg`.
///
/// Left at quinn's defaults after measuring (docs/http.md, "HTTP/3's
/// QUIC settings"): ACK frequency (asking the peer to ACK every 11th
/// packet changed neither datagrams nor CPU per request: requests and
/// responses carry the ACKs), Cubic congestion control and pacing (on
/// loopback nothing is lost and the window never limits request-sized
/// packets), the initial MTU (requests and small responses fit in one
/// packet).
pub fn transport_config(bidi_streams: u32) -> quinn::TransportConfig {
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(bidi_streams.into())
        .stream_receive_window(STREAM_WINDOW.into())
        .receive_window(CONNECTION_WINDOW.into())
        .enable_segmentation_offload(true);
    transport
}

/// The quinn client config for HTTP/3: `tls` (offering ALPN `h3`) as QUIC's
/// crypto, with [`transport_config`]'s settings.
///
/// # Errors
/// A message when `tls` cannot carry QUIC (no TLS 1.3, no AES-128-GCM).
pub fn quic_client_config(tls: Arc<rustls::ClientConfig>) -> Result<quinn::ClientConfig, String> {
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("TLS setup for QUIC failed: {e}"))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport_config(0)));
    Ok(config)
}

/// An open QUIC connection with HTTP/3 on it.
#[derive(Clone)]
pub struct H3Session {
    send: SendRequest,
    /// The connection's UDP endpoint, kept while the connection lives.
    _endpoint: quinn::Endpoint,
}

thread_local! {
    /// This thread's client endpoints (IPv4, IPv6), each with the runtime
    /// its driver task runs on.
    static ENDPOINTS: RefCell<[Option<(tokio::runtime::Id, quinn::Endpoint)>; 2]> =
        const { RefCell::new([None, None]) };
}

/// The QUIC client endpoint (one UDP socket on an ephemeral port) that this
/// engine thread's connections to `addr`'s address family share: its driver
/// reads every connection's datagrams in one `recvmmsg` batch, where one
/// endpoint per connection made a wake-up, an `epoll_wait` turn and a
/// `recvmmsg` per connection. Made on first use in each tokio runtime
/// (an endpoint's driver task lives in the runtime that made it).
///
/// # Errors
/// The socket could not be bound.
fn thread_endpoint(addr: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    let runtime = tokio::runtime::Handle::current().id();
    let family = usize::from(addr.is_ipv6());
    ENDPOINTS.with(|cell| {
        let mut endpoints = cell.borrow_mut();
        if let Some((id, endpoint)) = &endpoints[family] {
            if *id == runtime {
                return Ok(endpoint.clone());
            }
        }
        let local: SocketAddr = match addr {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let endpoint = quinn::Endpoint::client(local)?;
        endpoints[family] = Some((runtime, endpoint.clone()));
        Ok(endpoint)
    })
}

/// Open a QUIC connection to the connector's address and the HTTP/3
/// session on it, within the connect timeout.
///
/// # Errors
/// `ConnectTimeout` (no answer: nothing speaks QUIC there), `Tls` (the
/// handshake failed: certificate, ALPN), `ConnectRefused` (the server
/// closed it), `Protocol` (HTTP/3 setup failed), `Other`.
async fn connect(connector: &Connector) -> Result<(H3Session, Handshake), ErrorKind> {
    let Some((config, name)) = &connector.quic else {
        return Err(ErrorKind::Other);
    };
    let start = Instant::now();
    let endpoint = thread_endpoint(connector.addr).map_err(|e| ErrorKind::from_io(&e))?;
    let connecting = endpoint
        .connect_with(config.clone(), connector.addr, name)
        .map_err(|_| ErrorKind::Other)?;
    let handshake = async {
        let conn = connecting.await.map_err(|e| quic_kind(&e))?;
        let quic = start.elapsed();
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
            .await
            .map_err(|_| ErrorKind::Protocol)?;
        tokio::task::spawn_local(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        Ok::<_, ErrorKind>((send, quic))
    };
    let (send, quic) = tokio::time::timeout(connector.connect_timeout, handshake)
        .await
        .map_err(|_| ErrorKind::ConnectTimeout)??;
    let phases = Handshake {
        connect: None,
        tls: Some(quic),
    };
    Ok((
        H3Session {
            send,
            _endpoint: endpoint,
        },
        phases,
    ))
}

/// A QUIC error code carrying a TLS alert (CRYPTO_ERROR, 0x100-0x1ff;
/// RFC 9000 §20.1).
fn is_crypto(code: quinn::TransportErrorCode) -> bool {
    (0x100..0x200).contains(&u64::from(code))
}

/// The [`ErrorKind`] of a failed QUIC handshake.
fn quic_kind(e: &quinn::ConnectionError) -> ErrorKind {
    use quinn::ConnectionError as E;
    match e {
        E::TimedOut => ErrorKind::ConnectTimeout,
        E::TransportError(t) if is_crypto(t.code) => ErrorKind::Tls,
        E::ConnectionClosed(c) if is_crypto(c.error_code) => ErrorKind::Tls,
        E::ConnectionClosed(_) | E::ApplicationClosed(_) | E::Reset => ErrorKind::ConnectRefused,
        E::VersionMismatch | E::TransportError(_) => ErrorKind::Protocol,
        _ => ErrorKind::Other,
    }
}

/// One QUIC connection, shared by its lanes on one engine thread.
pub type H3Conn = MuxConn<H3Session>;

/// One request slot on an HTTP/3 connection.
pub type H3Lane = MuxLane<H3Session>;

fn classify(e: &StreamError) -> Failure {
    let (kind, connection, refused) = match e {
        StreamError::RemoteTerminate { code, .. } => {
            (ErrorKind::Reset, false, *code == Code::H3_REQUEST_REJECTED)
        }
        StreamError::RemoteClosing { .. } => (ErrorKind::Reset, true, true),
        StreamError::ConnectionError { 0: c, .. } => match c {
            ConnectionError::Timeout { .. } => (ErrorKind::ReadTimeout, true, false),
            _ => (ErrorKind::Reset, true, false),
        },
        StreamError::Undefined { .. } => (ErrorKind::Reset, true, false),
        _ => (ErrorKind::Protocol, false, false),
    };
    Failure {
        kind,
        connection,
        refused,
    }
}

impl Session for H3Session {
    type Request = H2Request;

    /// The QUIC handshake, then the HTTP/3 session (see [`connect`]).
    async fn open(connector: &Connector) -> Result<(Self, Handshake), ErrorKind> {
        connect(connector).await
    }

    async fn round_trip(
        &mut self,
        req: &H2Request,
        ex: &mut Exchange,
        timing: &mut Parsed,
    ) -> Result<u16, Failure> {
        let mut stream = self
            .send
            .send_request(req.build())
            .await
            .map_err(|e| classify(&e))?;
        if !req.body().is_empty() {
            stream
                .send_data(req.body().clone())
                .await
                .map_err(|e| classify(&e))?;
        }
        stream.finish().await.map_err(|e| classify(&e))?;
        ex.bytes_out = req.body().len() as u64;
        let response = stream.recv_response().await.map_err(|e| classify(&e))?;
        ex.first_byte = Some(Instant::now());
        for v in response.headers().get_all("server-timing") {
            server_timing::parse(v.as_bytes(), timing);
        }
        while let Some(mut chunk) = stream.recv_data().await.map_err(|e| classify(&e))? {
            let n = chunk.remaining();
            ex.bytes_in += n as u64;
            chunk.advance(n);
        }
        Ok(response.status().as_u16())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_failures_are_classified() {
        use quinn::ConnectionError as E;
        let closed = |code| {
            E::ConnectionClosed(quinn::ConnectionClose {
                error_code: code,
                frame_type: None,
                reason: Bytes::new(),
            })
        };
        // A TLS alert (bad certificate: 42) is a TLS failure; a plain
        // close (the server refused the connection) is a refusal.
        let tls = closed(quinn::TransportErrorCode::crypto(42));
        assert_eq!(quic_kind(&tls), ErrorKind::Tls);
        let refused = closed(quinn::TransportErrorCode::CONNECTION_REFUSED);
        assert_eq!(quic_kind(&refused), ErrorKind::ConnectRefused);
        assert_eq!(quic_kind(&E::TimedOut), ErrorKind::ConnectTimeout);
        assert_eq!(quic_kind(&E::VersionMismatch), ErrorKind::Protocol);
    }

    #[test]
    fn the_last_lane_closes_the_connection_and_configs_build() {
        let conn = H3Conn::new();
        let (mut a, mut b) = (H3Lane::join(&conn), H3Lane::join(&conn));
        assert!(!a.close() && !a.close() && !b.close());
        assert_eq!(conn.lanes(), 0);
        let tls = super::super::tls::client_config_alpn(true, &[b"h3"]).unwrap();
        assert!(quic_client_config(tls).is_ok());
    }

    #[test]
    fn a_thread_shares_one_endpoint_per_runtime() {
        let addr: SocketAddr = "127.0.0.1:443".parse().unwrap();
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        let local = |rt: &tokio::runtime::Runtime| {
            rt.block_on(async { thread_endpoint(addr).unwrap().local_addr().unwrap() })
        };
        let first = runtime();
        let a = local(&first);
        assert_eq!(local(&first), a, "one socket for the runtime's connections");
        // A new runtime gets its own endpoint (the first one's driver lives
        // in the first runtime, whose socket is still bound: a new port).
        let second = runtime();
        assert_ne!(local(&second), a);
    }

    #[test]
    fn transport_settings_are_the_documented_ones() {
        // quinn keeps the fields private; its Debug form shows them.
        let shown = |bidi| format!("{:?}", transport_config(bidi));
        let client = shown(0);
        for want in [
            "max_concurrent_bidi_streams: 0,",
            "stream_receive_window: 4194304,",
            "receive_window: 16777216,",
            "enable_segmentation_offload: true",
        ] {
            assert!(client.contains(want), "{want} not in {client}");
        }
        assert!(shown(1024).contains("max_concurrent_bidi_streams: 1024,"));
    }
}
