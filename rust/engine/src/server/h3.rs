//! HTTP/3 in `perflab serve --http3`: QUIC (quinn) on the UDP port of the
//! same number as the TCP listener, TLS 1.3 with ALPN `h3` and a
//! self-signed certificate made at start (rcgen; clients use `--insecure`),
//! HTTP/3 by the `h3` crate, each request stream served within its
//! connection's task (a `FuturesUnordered`), concurrently, with the
//! same stall, delay, serialization point, injected errors and faults as
//! HTTP/1.1 and HTTP/2 ([`super::h2::wait_and_status`]): `close_mid_response`
//! resets the stream after 10 of 100 announced bytes, `endless_body` sends
//! one byte every 100 ms until the client stops reading.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use h3::error::Code;
use http::StatusCode;

use super::behaviour::Fault;
use super::conn::Ctx;
use super::h2::{response_head, stream_seed, wait_and_status};
use crate::load::h3::transport_config;
use crate::load::schedule::SplitMix64;

type Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;
type Resolver = h3::server::RequestResolver<h3_quinn::Connection, Bytes>;

/// Concurrent request streams a client may open per connection.
const MAX_STREAMS: u32 = 1024;

/// Bind the QUIC endpoint on `addr` (UDP) with a fresh self-signed
/// certificate for `localhost` and the address's IP. Call inside a tokio
/// runtime.
///
/// # Errors
/// A message when the certificate cannot be made or the UDP port cannot be
/// bound (in use, permission).
pub(super) fn endpoint(addr: SocketAddr) -> Result<quinn::Endpoint, String> {
    let names = vec!["localhost".to_string(), addr.ip().to_string()];
    let cert = rcgen::generate_simple_self_signed(names)
        .map_err(|e| format!("cannot make a certificate: {e}"))?;
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .and_then(|b| {
            b.with_no_client_auth()
                .with_single_cert(vec![cert.cert.der().clone()], key.into())
        })
        .map_err(|e| format!("TLS setup for QUIC failed: {e}"))?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| format!("TLS setup for QUIC failed: {e}"))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    server.transport_config(Arc::new(transport_config(MAX_STREAMS)));
    quinn::Endpoint::server(server, addr)
        .map_err(|e| format!("cannot listen on {addr} (UDP, HTTP/3): {e}"))
}

/// Accept QUIC connections until `stop` is set, each on its own task;
/// their ids start at 2^48, apart from the TCP connections' ids.
pub(super) async fn accept_loop(endpoint: quinn::Endpoint, ctx: Arc<Ctx>, stop: Arc<AtomicBool>) {
    let mut next_id = 1u64 << 48;
    while !stop.load(Ordering::Relaxed) {
        let accepted = tokio::time::timeout(Duration::from_millis(50), endpoint.accept()).await;
        match accepted {
            Ok(Some(incoming)) => {
                next_id += 1;
                ctx.stats.connections.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(serve_h3(incoming, ctx.clone(), next_id));
            }
            Ok(None) => break,
            Err(_) => {}
        }
    }
    endpoint.close(0u32.into(), b"server stopped");
}

async fn serve_h3(incoming: quinn::Incoming, ctx: Arc<Ctx>, id: u64) {
    let Ok(conn) = incoming.await else {
        return;
    };
    let Ok(mut conn) = h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(conn))
        .await
    else {
        return;
    };
    // The connection's request streams run in this task, not one task each
    // (docs/http.md, "HTTP/3's QUIC settings"): a tokio task is a
    // 128-byte-aligned allocation (posix_memalign, past glibc's thread
    // cache), and each stream task woke quinn's connection driver, which
    // tokio ran next, so it sent a packet every two or three responses.
    // Here the responses of one wake-up leave together: serve's CPU per
    // request fell from 10.5 to about 6 µs, its sendmsg calls from 0.43 to
    // 0.13 per request.
    let ctx: &Ctx = &ctx;
    let mut streams = FuturesUnordered::new();
    let mut n = 0u64;
    loop {
        tokio::select! {
            biased;
            Some(()) = streams.next(), if !streams.is_empty() => {}
            accepted = conn.accept() => {
                let Ok(Some(resolver)) = accepted else { break };
                n += 1;
                ctx.stats.requests.fetch_add(1, Ordering::Relaxed);
                streams.push(serve_stream(resolver, ctx, stream_seed(ctx, id, n)));
            }
        }
    }
    // The connection is closing: let the streams in flight end.
    while streams.next().await.is_some() {}
}

/// One request stream: read the request, drop its body, wait and answer as
/// the config asks.
async fn serve_stream(resolver: Resolver, ctx: &Ctx, rng: SplitMix64) {
    let Ok((_request, mut stream)) = resolver.resolve_request().await else {
        return;
    };
    while let Ok(Some(_)) = stream.recv_data().await {}
    let status = wait_and_status(ctx, rng).await;
    let _ = answer(stream, ctx, status).await;
}

async fn answer(
    mut stream: Stream,
    ctx: &Ctx,
    status: StatusCode,
) -> Result<(), h3::error::StreamError> {
    let head = |length| response_head(status, length);
    let body = &ctx.h2_body;
    match ctx.config.fault {
        Fault::None => {
            stream.send_response(head(Some(body.len()))).await?;
            if !body.is_empty() {
                stream.send_data(body.clone()).await?;
            }
            stream.finish().await
        }
        Fault::CloseMidResponse => {
            stream.send_response(head(Some(100))).await?;
            stream.send_data(Bytes::from_static(b"0123456789")).await?;
            stream.stop_stream(Code::H3_INTERNAL_ERROR);
            Ok(())
        }
        Fault::EndlessBody => {
            stream.send_response(head(None)).await?;
            loop {
                stream.send_data(Bytes::from_static(b"x")).await?;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
