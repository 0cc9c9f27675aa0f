//! HTTP/2 in `perflab serve`: a connection that opens with the HTTP/2 client
//! preface (prior knowledge, h2c; RFC 9113 §3.3) is served by the `h2`
//! crate, each stream on its own task, with the same stall, delay,
//! serialization point, injected errors and faults as HTTP/1.1 (a fault
//! acts on the stream: `close_mid_response` resets it after half the body,
//! `endless_body` sends one byte every 100 ms until the client gives up).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use http::{Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::behaviour::Fault;
use super::conn::{sleep, wait_out_stall, Ctx};
use crate::load::schedule::SplitMix64;

/// The client preface of HTTP/2 (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// True when the connection's first bytes are the HTTP/2 client preface
/// (looked at without consuming them; waits at most 1 s for a preface that
/// arrives in pieces).
pub(super) async fn is_h2c(stream: &TcpStream) -> bool {
    let mut buf = [0u8; PREFACE.len()];
    for _ in 0..1000 {
        let n = match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        if !PREFACE.starts_with(&buf[..n]) {
            return false;
        }
        if n == PREFACE.len() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    false
}

/// Serve HTTP/2 on `io` (plain TCP after the preface check, or TLS after
/// ALPN `h2`) until the client goes away or the server stops.
pub(super) async fn serve_h2<T>(io: T, ctx: Arc<Ctx>, id: u64)
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let Ok(mut conn) = h2::server::Builder::new()
        .max_concurrent_streams(1024)
        .initial_window_size(1 << 20)
        .handshake::<_, Bytes>(io)
        .await
    else {
        return;
    };
    let mut n = 0u64;
    while let Some(Ok((request, respond))) = conn.accept().await {
        n += 1;
        ctx.stats.requests.fetch_add(1, Ordering::Relaxed);
        let seed = stream_seed(&ctx, id, n);
        let ctx = ctx.clone();
        tokio::spawn(async move {
            // The request body is read and dropped, freeing its window.
            let mut body = request.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            answer(respond, &ctx, seed).await;
        });
    }
}

/// The seed of the `n`th stream of connection `id` (its error draw and
/// delay), distinct per stream and fixed by the config's seed.
pub(super) fn stream_seed(ctx: &Ctx, id: u64, n: u64) -> SplitMix64 {
    SplitMix64::new(
        ctx.config.seed
            ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ n.wrapping_mul(0xBF58_476D_1CE4_E5B9),
    )
}

/// Wait as the config asks (stall, delay, serialization point, stall) and
/// draw the status (500 at the error rate, counted, else 200): what an
/// HTTP/2 or HTTP/3 stream answers with.
pub(super) async fn wait_and_status(ctx: &Ctx, mut rng: SplitMix64) -> StatusCode {
    let mut timer = None;
    wait_out_stall(ctx, &mut timer).await;
    if let Some(delay) = ctx.config.delay {
        let d = delay.sample(&mut rng);
        sleep(&mut timer, Instant::now() + d).await;
    }
    if let Some(hold) = ctx.config.serialize {
        let _guard = ctx.lock.lock().await;
        sleep(&mut timer, Instant::now() + hold).await;
    }
    wait_out_stall(ctx, &mut timer).await;
    let error = ctx.config.error_rate > 0.0 && rng.next_f64() < ctx.config.error_rate;
    if error {
        ctx.stats.errors_injected.fetch_add(1, Ordering::Relaxed);
    }
    if error {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    }
}

/// The response head of an HTTP/2 or HTTP/3 answer: `status`, `server:
/// perflab` and the body's length when it is known.
pub(super) fn response_head(status: StatusCode, length: Option<usize>) -> Response<()> {
    let mut r = Response::builder()
        .status(status)
        .header("server", "perflab");
    if let Some(length) = length {
        r = r.header("content-length", length);
    }
    r.body(()).unwrap_or_default()
}

async fn answer(mut respond: SendResponse<Bytes>, ctx: &Ctx, rng: SplitMix64) {
    let status = wait_and_status(ctx, rng).await;
    let body = &ctx.h2_body;
    let head = |length| response_head(status, length);
    match ctx.config.fault {
        Fault::None => {
            let Ok(mut out) = respond.send_response(head(Some(body.len())), body.is_empty()) else {
                return;
            };
            if !body.is_empty() {
                let _ = out.send_data(body.clone(), true);
            }
        }
        Fault::CloseMidResponse => {
            let Ok(mut out) = respond.send_response(head(Some(100)), false) else {
                return;
            };
            let _ = out.send_data(Bytes::from_static(b"0123456789"), false);
            out.send_reset(h2::Reason::INTERNAL_ERROR);
        }
        Fault::EndlessBody => {
            let Ok(mut out) = respond.send_response(head(None), false) else {
                return;
            };
            while out.send_data(Bytes::from_static(b"x"), false).is_ok() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if futures_poll_reset(&mut out).is_ready() {
                    return;
                }
            }
        }
    }
}

/// Whether the client reset the stream (it stopped waiting for the body).
fn futures_poll_reset(out: &mut h2::SendStream<Bytes>) -> std::task::Poll<()> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match out.poll_reset(&mut cx) {
        std::task::Poll::Ready(_) => std::task::Poll::Ready(()),
        std::task::Poll::Pending => std::task::Poll::Pending,
    }
}
