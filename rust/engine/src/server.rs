//! `perflab serve`: an HTTP/1.1 keep-alive target with controlled behaviour
//! (delay, periodic stalls, injected errors, faults, a serialization point),
//! for demos, tests and users who want to validate their setup.
//!
//! Timing uses [`PreciseTimer`] (timerfd, µs precision) so that a `1ms`
//! delay is 1 ms, not "1 to 2 ms" as with a 1 ms timer wheel: the
//! coordinated-omission benchmark derives the expected percentiles from
//! these values analytically.

use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::engine::schedule::SplitMix64;
use crate::engine::sys::PreciseTimer;

/// Parse a duration with a unit: `"250us"`, `"1.5ms"`, `"2s"`, `"1m"`
/// (units ns, us, µs, ms, s, m).
///
/// # Errors
/// A message for a missing unit, an unknown unit, or a negative or
/// non-numeric value.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?}: write e.g. 1ms, 250us, 2s"))?;
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "" => return Err(format!("duration {s:?} needs a unit: ns, us, ms, s or m")),
        u => {
            return Err(format!(
                "unknown unit {u:?} in {s:?}: use ns, us, ms, s or m"
            ))
        }
    };
    Duration::try_from_secs_f64(value * scale)
        .map_err(|_| format!("duration {s:?} is out of range"))
}

/// The per-request processing delay of the server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delay {
    /// Always this long.
    Fixed(Duration),
    /// Uniform between the two bounds.
    Uniform(Duration, Duration),
    /// Exponential with this mean.
    Exp(Duration),
}

impl Delay {
    /// Parse `"1ms"` (fixed), `"uniform:1ms:5ms"` or `"exp:2ms"` (mean).
    ///
    /// # Errors
    /// A message naming the accepted forms, or a bad duration.
    pub fn parse(s: &str) -> Result<Delay, String> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        match parts.as_slice() {
            [d] => Ok(Delay::Fixed(parse_duration(d)?)),
            ["uniform", a, b] => {
                let (a, b) = (parse_duration(a)?, parse_duration(b)?);
                if a > b {
                    return Err(format!(
                        "uniform delay {s:?}: the low bound is above the high bound"
                    ));
                }
                Ok(Delay::Uniform(a, b))
            }
            ["exp", m] => Ok(Delay::Exp(parse_duration(m)?)),
            _ => Err(format!(
                "bad delay {s:?}: write 1ms, uniform:1ms:5ms or exp:2ms"
            )),
        }
    }

    /// Draw one delay.
    pub fn sample(&self, rng: &mut SplitMix64) -> Duration {
        match *self {
            Delay::Fixed(d) => d,
            Delay::Uniform(a, b) => a + (b - a).mul_f64(rng.next_f64()),
            Delay::Exp(m) => m.mul_f64(-rng.next_f64_open0().ln()),
        }
    }
}

/// Periodic stalls: all responses freeze for `length` at the end of every
/// `every` period since the server started, i.e. during
/// `[k·every + (every − length), (k+1)·every)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    pub length: Duration,
    pub every: Duration,
}

impl Stall {
    /// Parse `"1s/10s"` (1 s stall every 10 s).
    ///
    /// # Errors
    /// A message for a bad form or when the stall is not shorter than its
    /// period.
    pub fn parse(s: &str) -> Result<Stall, String> {
        let (a, b) = s
            .split_once('/')
            .ok_or_else(|| format!("bad stall {s:?}: write LENGTH/PERIOD, e.g. 1s/10s"))?;
        let stall = Stall {
            length: parse_duration(a)?,
            every: parse_duration(b)?,
        };
        if stall.length.is_zero() || stall.length >= stall.every {
            return Err(format!(
                "bad stall {s:?}: the stall must be positive and shorter than its period"
            ));
        }
        Ok(stall)
    }

    /// When the stall covering `elapsed` (time since server start) ends, or
    /// None when `elapsed` is outside every stall.
    pub fn end_of_stall(&self, elapsed: Duration) -> Option<Duration> {
        let every = self.every.as_nanos();
        let phase = elapsed.as_nanos() % every;
        (phase >= every - self.length.as_nanos())
            .then(|| elapsed + Duration::from_nanos((every - phase) as u64))
    }
}

/// A deliberate misbehaviour, for testing clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Send the head and half the body, then close the connection.
    CloseMidResponse,
    /// Send a chunked head, then a 1-byte chunk every 100 ms, forever.
    EndlessBody,
}

impl Fault {
    /// Parse `none`, `close_mid_response` or `endless_body`.
    ///
    /// # Errors
    /// A message naming the accepted values.
    pub fn parse(s: &str) -> Result<Fault, String> {
        match s {
            "none" | "" => Ok(Fault::None),
            "close_mid_response" => Ok(Fault::CloseMidResponse),
            "endless_body" => Ok(Fault::EndlessBody),
            _ => Err(format!(
                "unknown fault {s:?}: use none, close_mid_response or endless_body"
            )),
        }
    }
}

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Host or IP to bind (`"127.0.0.1"`, `"::1"`).
    pub host: String,
    /// Port; 0 picks a free one (read it from [`ServerHandle::address`]).
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
    pub serialize: Option<Duration>,
    /// Worker threads of the server's runtime.
    pub threads: usize,
    pub seed: u64,
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
        }
    }
}

/// Counters of what the server did; read them while it runs.
#[derive(Debug, Default)]
pub struct ServerStats {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    /// Requests answered 500 on purpose.
    pub errors_injected: AtomicU64,
}

/// A running server. Dropping it stops the server.
pub struct ServerHandle {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<ServerStats>,
    thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address actually bound (the real port when 0 was asked for).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Live counters.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// The flag that stops the server when set; shareable.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Ask the server to stop (returns at once; see [`ServerHandle::join`]).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// True once the server thread has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Wait for the server thread to end (after [`ServerHandle::stop`]).
    /// Open connections are dropped within about 100 ms of the stop.
    pub fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
        self.join();
    }
}

struct Responses {
    ok_keep: Vec<u8>,
    ok_close: Vec<u8>,
    err_keep: Vec<u8>,
    err_close: Vec<u8>,
}

impl Responses {
    fn new(body_size: usize) -> Self {
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

struct Ctx {
    config: ServerConfig,
    responses: Responses,
    started: Instant,
    lock: tokio::sync::Mutex<()>,
    stats: Arc<ServerStats>,
}

/// Bind and start serving on a background thread.
///
/// # Errors
/// A message when the config is invalid (error rate outside [0, 1], zero
/// threads), the address does not resolve, or binding fails (port in use,
/// permission).
pub fn start(config: ServerConfig) -> Result<ServerHandle, String> {
    if !(0.0..=1.0).contains(&config.error_rate) {
        return Err(format!(
            "error rate must be between 0 and 1, got {}",
            config.error_rate
        ));
    }
    if config.threads == 0 {
        return Err("server threads must be at least 1".into());
    }
    let addr = (config.host.as_str(), config.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve bind address {:?}: {e}", config.host))?
        .next()
        .ok_or_else(|| format!("bind address {:?} resolved to nothing", config.host))?;
    let listener = StdListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .thread_name("perflab-serve")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server runtime: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(ServerStats::default());
    let ctx = Arc::new(Ctx {
        responses: Responses::new(config.body_size),
        config,
        started: Instant::now(),
        lock: tokio::sync::Mutex::new(()),
        stats: stats.clone(),
    });
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("perflab-serve-main".into())
        .spawn(move || {
            rt.block_on(accept_loop(listener, ctx, flag));
            rt.shutdown_timeout(Duration::from_millis(100));
        })
        .map_err(|e| format!("cannot start the server thread: {e}"))?;
    Ok(ServerHandle {
        address,
        stop,
        stats,
        thread: Some(thread),
    })
}

async fn accept_loop(listener: StdListener, ctx: Arc<Ctx>, stop: Arc<AtomicBool>) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    let mut next_id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let accepted = tokio::time::timeout(Duration::from_millis(50), listener.accept()).await;
        if let Ok(Ok((stream, _))) = accepted {
            next_id += 1;
            ctx.stats.connections.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(serve_conn(stream, ctx.clone(), next_id));
        }
    }
}

/// What ended a connection (all are normal for a test server).
type Closed = ();

async fn serve_conn(mut stream: TcpStream, ctx: Arc<Ctx>, id: u64) {
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

async fn sleep(timer: &mut Option<PreciseTimer>, until: Instant) {
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

async fn wait_out_stall(ctx: &Ctx, timer: &mut Option<PreciseTimer>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("0.2ms"), Ok(Duration::from_micros(200)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("5").unwrap_err().contains("unit"));
        assert!(parse_duration("5h").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn delays_parse_and_sample_in_range() {
        let mut rng = SplitMix64::new(1);
        assert_eq!(
            Delay::parse("3ms").unwrap().sample(&mut rng),
            Duration::from_millis(3)
        );
        let u = Delay::parse("uniform:1ms:5ms").unwrap();
        for _ in 0..1000 {
            let d = u.sample(&mut rng);
            assert!(d >= Duration::from_millis(1) && d <= Duration::from_millis(5));
        }
        let e = Delay::parse("exp:2ms").unwrap();
        let mean: f64 = (0..20_000)
            .map(|_| e.sample(&mut rng).as_secs_f64())
            .sum::<f64>()
            / 20_000.0;
        assert!((mean - 0.002).abs() < 0.0001, "{mean}");
        assert!(Delay::parse("uniform:5ms:1ms").is_err());
        assert!(Delay::parse("normal:1ms").unwrap_err().contains("uniform"));
    }

    #[test]
    fn stalls_parse_and_cover_the_end_of_each_period() {
        let s = Stall::parse("1s/10s").unwrap();
        assert_eq!(s.end_of_stall(Duration::from_secs(5)), None);
        assert_eq!(
            s.end_of_stall(Duration::from_millis(9500)),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            s.end_of_stall(Duration::from_millis(19_000)),
            Some(Duration::from_secs(20))
        );
        assert_eq!(s.end_of_stall(Duration::from_millis(20_001)), None);
        assert!(Stall::parse("10s/1s").is_err());
        assert!(Stall::parse("1s").unwrap_err().contains("LENGTH/PERIOD"));
        assert_eq!(Fault::parse("endless_body"), Ok(Fault::EndlessBody));
        assert!(Fault::parse("boom").is_err());
    }

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn serves_body_on_ephemeral_port_and_stops() {
        let mut h = start(ServerConfig {
            body_size: 5,
            ..Default::default()
        })
        .unwrap();
        assert!(h.address().ip().is_loopback() && h.address().port() != 0);
        let r = get(
            h.address(),
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        );
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        assert!(r.ends_with("\r\n\r\nxxxxx"), "{r}");
        let r = get(h.address(), b"GARBAGE\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        assert_eq!(h.stats().requests.load(Ordering::Relaxed), 1);
        h.stop();
        h.join();
        assert!(h.is_finished());
        assert!(std::net::TcpStream::connect(h.address()).is_err());
    }

    #[test]
    fn error_rate_one_always_answers_500_and_bad_config_is_refused() {
        let h = start(ServerConfig {
            error_rate: 1.0,
            ..Default::default()
        })
        .unwrap();
        let r = get(h.address(), b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 500"), "{r}");
        assert!(start(ServerConfig {
            error_rate: 1.5,
            ..Default::default()
        })
        .is_err());
        let taken = h.address().port();
        let err = start(ServerConfig {
            port: taken,
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(err.contains("cannot listen"), "{err}");
    }

    #[test]
    fn fixed_delay_is_precise() {
        let h = start(ServerConfig {
            delay: Some(Delay::Fixed(Duration::from_millis(3))),
            ..Default::default()
        })
        .unwrap();
        let t = Instant::now();
        let r = get(h.address(), b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
        let took = t.elapsed();
        assert!(r.starts_with("HTTP/1.1 200"));
        assert!(
            took >= Duration::from_millis(3) && took < Duration::from_millis(50),
            "{took:?}"
        );
    }
}
