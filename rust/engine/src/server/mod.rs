//! `perflab serve`: an HTTP/1.1 keep-alive target, and on the same port
//! HTTP/2 with prior knowledge (h2c) and, asked for, HTTP/3 over QUIC on
//! the UDP port of that number, with controlled behaviour (delay,
//! periodic stalls, injected errors, faults, a serialization point), for
//! demos, tests and users who want to validate their setup.
//!
//! Timing uses [`crate::sys::PreciseTimer`] (timerfd, µs precision) so that a `1ms`
//! delay is 1 ms, not "1 to 2 ms" as with a 1 ms timer wheel: the
//! coordinated-omission benchmark derives the expected percentiles from
//! these values analytically.
//!
//! Layout, each using only those before it: [`behaviour`] (delay, stall and
//! fault, parsed from their text), `config` ([`ServerConfig`],
//! [`ServerStats`]), `conn` (one connection: read, wait, answer; the context
//! all connections share), `h2` (an HTTP/2 connection, each stream on its
//! own task), `h3` (QUIC connections, each HTTP/3 stream on its own task)
//! and, here, the listener, the protocol check and the handle.

use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

pub mod behaviour;
mod config;
mod conn;
mod h2;
mod h3;

pub use behaviour::{Delay, Fault, Stall};
pub use config::{ServerConfig, ServerStats};
use conn::{Ctx, Responses};

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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .thread_name("perflab-serve")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server runtime: {e}"))?;
    let (listener, quic) = {
        let _runtime = rt.enter();
        bind(addr, config.http3)?
    };
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(ServerStats::default());
    let ctx = Arc::new(Ctx {
        responses: Responses::new(config.body_size),
        h2_body: bytes::Bytes::from(vec![b'x'; config.body_size]),
        config,
        started: Instant::now(),
        lock: tokio::sync::Mutex::new(()),
        stats: stats.clone(),
    });
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("perflab-serve-main".into())
        .spawn(move || {
            rt.block_on(async move {
                match quic {
                    Some(endpoint) => {
                        let h3 = tokio::spawn(h3::accept_loop(endpoint, ctx.clone(), flag.clone()));
                        accept_loop(listener, ctx, flag).await;
                        let _ = h3.await;
                    }
                    None => accept_loop(listener, ctx, flag).await,
                }
            });
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

/// Bind the TCP listener on `addr` and, with `http3`, the QUIC endpoint on
/// the UDP port of the same number. When `addr`'s port is 0 and the UDP
/// port of the number TCP got is taken, another TCP port is tried (up to
/// 20 times).
fn bind(addr: SocketAddr, http3: bool) -> Result<(StdListener, Option<quinn::Endpoint>), String> {
    let mut tries = 0;
    loop {
        let listener =
            StdListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        if !http3 {
            return Ok((listener, None));
        }
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        match h3::endpoint(local) {
            Ok(endpoint) => return Ok((listener, Some(endpoint))),
            Err(e) if addr.port() != 0 || tries >= 20 => return Err(e),
            Err(_) => tries += 1,
        }
    }
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
            tokio::spawn(serve_any(stream, ctx.clone(), next_id));
        }
    }
}

/// Serve one connection in the protocol its first bytes speak: HTTP/2
/// with prior knowledge (h2c, the client preface) or HTTP/1.1.
async fn serve_any(stream: tokio::net::TcpStream, ctx: Arc<Ctx>, id: u64) {
    if h2::is_h2c(&stream).await {
        h2::serve_h2(stream, ctx, id).await;
    } else {
        conn::serve_conn(stream, ctx, id).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

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
