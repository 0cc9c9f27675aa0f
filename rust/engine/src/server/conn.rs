//! One connection of `perflab serve`: read each request head (skipping its
//! body), wait out the stall, the delay and the serialization lock, then
//! answer, or misbehave as the configured fault says.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::behaviour::Fault;
use super::config::{ServerConfig, ServerStats};
use crate::load::schedule::SplitMix64;
use crate::sys::PreciseTimer;

/// The four canned responses, built once per server.
pub(super) struct Responses {
    ok_keep: Vec<u8>,
    ok_close: Vec<u8>,
    err_keep: Vec<u8>,
    err_close: Vec<u8>,
}

impl Responses {
    /// The responses with a body of `body_size` bytes.
    pub(super) fn new(body_size: usize) -> Self {
        let build = |status: &str, close: bool| {
            let conn = if close { "Connection: close\r\n" } else { "" };
            let mut r = format!(
                "HTTP/1.1 {status}\r\nServer: perflab\r\n{conn}Content-Length: {body_size}\r\n\r\n"
            )
            .into_bytes();
            r.resize(r.len() + body_size, b'x');
            r
        };
        Self {
            ok_keep: build("200 OK", false),
            ok_close: build("200 OK", true),
            err_keep: build("500 Internal Server Error", false),
            err_close: build("500 Internal Server Error", true),
        }
    }
}

/// What every connection of one server shares.
pub(super) struct Ctx {
    pub(super) config: ServerConfig,
    pub(super) responses: Responses,
    pub(super) started: Instant,
    /// The serialization point (`ServerConfig::serialize`).
    pub(super) lock: tokio::sync::Mutex<()>,
    pub(super) stats: Arc<ServerStats>,
    /// The response body as HTTP/2 sends it (`body_size` bytes of `x`).
    pub(super) h2_body: bytes::Bytes,
}

/// What ended a connection (all are normal for a test server).
type Closed = ();

pub(super) async fn serve_conn(mut stream: TcpStream, ctx: Arc<Ctx>, id: u64) {
    let _ = stream.set_nodelay(true);
    let mut rng = SplitMix64::new(ctx.config.seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut timer: Option<PreciseTimer> = None;
    let mut buf = vec![0u8; 8192];
    let mut filled = 0;
    while let Ok(keep_alive) = read_request(&mut stream, &mut buf, &mut filled).await {
        ctx.stats.requests.fetch_add(1, Ordering::Relaxed);
        if respond(&mut stream, &ctx, &mut rng, &mut timer, keep_alive)
            .await
            .is_err()
            || !keep_alive
        {
            return;
        }
    }
}

/// Read one request head and skip its body; Ok(keep_alive).
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut [u8],
    filled: &mut usize,
) -> Result<bool, Closed> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..*filled]) {
            Ok(httparse::Status::Complete(n)) => {
                let http10 = req.version == Some(0);
                let (mut length, mut keep_alive) = (0u64, !http10);
                for h in req.headers.iter() {
                    let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().map_err(|_| ())?;
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        let _ = stream.write_all(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                        return Err(());
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        keep_alive = if v.contains("close") {
                            false
                        } else {
                            keep_alive || v.contains("keep-alive")
                        };
                    }
                }
                buf.copy_within(n..*filled, 0);
                *filled -= n;
                skip_body(stream, buf, filled, length).await?;
                return Ok(keep_alive);
            }
            Ok(httparse::Status::Partial) => {
                if *filled == buf.len() {
                    let _ = stream.write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                    return Err(());
                }
                match stream.read(&mut buf[*filled..]).await {
                    Ok(0) | Err(_) => return Err(()),
                    Ok(n) => *filled += n,
                }
            }
            Err(_) => {
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                return Err(());
            }
        }
    }
}

async fn skip_body(
    stream: &mut TcpStream,
    buf: &mut [u8],
    filled: &mut usize,
    mut left: u64,
) -> Result<(), Closed> {
    loop {
        let take = left.min(*filled as u64) as usize;
        buf.copy_within(take..*filled, 0);
        *filled -= take;
        left -= take as u64;
        if left == 0 {
            return Ok(());
        }
        match stream.read(&mut buf[*filled..]).await {
            Ok(0) | Err(_) => return Err(()),
            Ok(n) => *filled += n,
        }
    }
}

pub(super) async fn sleep(timer: &mut Option<PreciseTimer>, until: Instant) {
    if until <= Instant::now() {
        return;
    }
    if timer.is_none() {
        *timer = PreciseTimer::new().ok();
    }
    let precise = match timer {
        Some(t) => t.sleep_until(until).await.is_ok(),
        None => false,
    };
    if !precise {
        tokio::time::sleep_until(until.into()).await;
    }
}

pub(super) async fn wait_out_stall(ctx: &Ctx, timer: &mut Option<PreciseTimer>) {
    if let Some(stall) = ctx.config.stall {
        if let Some(end) = stall.end_of_stall(ctx.started.elapsed()) {
            sleep(timer, ctx.started + end).await;
        }
    }
}

async fn respond(
    stream: &mut TcpStream,
    ctx: &Ctx,
    rng: &mut SplitMix64,
    timer: &mut Option<PreciseTimer>,
    keep_alive: bool,
) -> Result<(), Closed> {
    wait_out_stall(ctx, timer).await;
    if let Some(delay) = ctx.config.delay {
        let d = delay.sample(rng);
        sleep(timer, Instant::now() + d).await;
    }
    if let Some(hold) = ctx.config.serialize {
        let _guard = ctx.lock.lock().await;
        sleep(timer, Instant::now() + hold).await;
    }
    wait_out_stall(ctx, timer).await;
    let error = ctx.config.error_rate > 0.0 && rng.next_f64() < ctx.config.error_rate;
    if error {
        ctx.stats.errors_injected.fetch_add(1, Ordering::Relaxed);
    }
    let r = &ctx.responses;
    let bytes = match (error, keep_alive) {
        (false, true) => &r.ok_keep,
        (false, false) => &r.ok_close,
        (true, true) => &r.err_keep,
        (true, false) => &r.err_close,
    };
    match ctx.config.fault {
        Fault::None => stream.write_all(bytes).await.map_err(|_| ()),
        Fault::CloseMidResponse => {
            let head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789";
            let _ = stream.write_all(head).await;
            let _ = stream.shutdown().await;
            Err(())
        }
        Fault::EndlessBody => {
            let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
            stream.write_all(head).await.map_err(|_| ())?;
            loop {
                stream.write_all(b"1\r\nx\r\n").await.map_err(|_| ())?;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
