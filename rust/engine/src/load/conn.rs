//! One client connection: connect (TCP, optionally TLS), write a request,
//! read its response with [`ResponseReader`], classify failures.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::codec::{ResponseReader, MAX_HEAD};
use super::recorder::ErrorKind;
use super::server_timing::Parsed;

/// A plain or TLS byte stream.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// How to open connections to the target. Cheap to share across threads.
#[derive(Clone)]
pub struct Connector {
    pub addr: SocketAddr,
    /// TLS config and server name for https targets.
    pub tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    /// HTTP/3: the QUIC client config and the TLS server name (see
    /// [`super::h3`]); None for TCP.
    pub quic: Option<(quinn::ClientConfig, String)>,
    pub connect_timeout: Duration,
}

impl Connector {
    /// Open a connection (TCP_NODELAY set), including the TLS handshake,
    /// within the connect timeout; with how long each phase took.
    ///
    /// # Errors
    /// The failure's [`ErrorKind`]: `ConnectRefused`, `ConnectTimeout`,
    /// `Tls`, `Reset` or `Other`.
    pub async fn connect(&self) -> Result<(Stream, Handshake), ErrorKind> {
        match tokio::time::timeout(self.connect_timeout, self.connect_inner()).await {
            Ok(r) => r,
            Err(_) => Err(ErrorKind::ConnectTimeout),
        }
    }

    async fn connect_inner(&self) -> Result<(Stream, Handshake), ErrorKind> {
        let start = Instant::now();
        let tcp =
            TcpStream::connect(self.addr)
                .await
                .map_err(|e| match ErrorKind::from_io(&e) {
                    ErrorKind::ReadTimeout => ErrorKind::ConnectTimeout,
                    k => k,
                })?;
        let _ = tcp.set_nodelay(true);
        let connected = Instant::now();
        let mut phases = Handshake {
            connect: Some(connected - start),
            tls: None,
        };
        match &self.tls {
            None => Ok((Stream::Plain(tcp), phases)),
            Some((config, name)) => {
                let connector = tokio_rustls::TlsConnector::from(config.clone());
                match connector.connect(name.clone(), tcp).await {
                    Ok(s) => {
                        phases.tls = Some(connected.elapsed());
                        Ok((Stream::Tls(Box::new(s)), phases))
                    }
                    Err(e) => Err(match ErrorKind::from_io(&e) {
                        ErrorKind::Reset => ErrorKind::Reset,
                        _ => ErrorKind::Tls,
                    }),
                }
            }
        }
    }
}

/// How long opening a connection took, phase by phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handshake {
    /// TCP connect (SYN to established); None for QUIC (no separate phase).
    pub connect: Option<Duration>,
    /// The TLS handshake after it (QUIC: the whole QUIC handshake); None on
    /// plain TCP.
    pub tls: Option<Duration>,
}

/// The result of one request/response exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A complete response with this status.
    Response(u16),
    /// The request failed.
    Error(ErrorKind),
}

/// Timing and byte counts of one exchange.
#[derive(Clone, Copy, Debug)]
pub struct Exchange {
    pub outcome: Outcome,
    /// When the request write started (after any connect).
    pub write_start: Instant,
    /// When the response completed or the failure was seen.
    pub end: Instant,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// A connection was opened for this exchange.
    pub opened: bool,
    /// Opening a connection for this exchange failed.
    pub connect_failed: bool,
    /// The connection was closed (by either side) after this exchange.
    pub closed: bool,
    /// The phases of the connection this exchange opened (None when it
    /// reused one, or the connect failed).
    pub handshake: Option<Handshake>,
    /// When the response's first byte arrived (HTTP/2 and HTTP/3: its
    /// HEADERS frame); None when none did.
    pub first_byte: Option<Instant>,
}

impl Exchange {
    /// A failed exchange started now, to be filled in by its protocol.
    pub fn new() -> Self {
        let now = Instant::now();
        Exchange {
            outcome: Outcome::Error(ErrorKind::Other),
            write_start: now,
            end: now,
            bytes_out: 0,
            bytes_in: 0,
            opened: false,
            connect_failed: false,
            closed: false,
            handshake: None,
            first_byte: None,
        }
    }
}

impl Default for Exchange {
    fn default() -> Self {
        Self::new()
    }
}

/// `fut`'s output, or None when `deadline` passes first: `tokio::time::timeout`
/// without its per-request cost. A timeout registers a timer entry in the
/// runtime's wheel on its first poll and removes it when dropped, two locked
/// wheel operations per request (≈ 4% of the engine thread's CPU, closed loop,
/// `perf record`). Here one timer per connection stays armed across
/// exchanges: a connection's deadlines only move later (each is its write
/// time + the same read timeout), so the armed one is never after the
/// current one; when it fires early it is moved to the current deadline
/// (once per read timeout at most), and when it fires at or after it the
/// exchange has timed out, as `timeout` would have said. A deadline earlier
/// than the armed one moves the timer back at once.
pub(super) async fn within<F: Future>(
    timer: &mut Pin<Box<tokio::time::Sleep>>,
    deadline: tokio::time::Instant,
    fut: F,
) -> Option<F::Output> {
    if timer.deadline() > deadline {
        // an earlier deadline than the armed one (not from this engine's
        // exchanges, whose read timeout is fixed): the timer must not be late
        timer.as_mut().reset(deadline);
    }
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        loop {
            match timer.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if tokio::time::Instant::now() >= deadline => {
                    return Poll::Ready(None)
                }
                Poll::Ready(()) => timer.as_mut().reset(deadline),
            }
        }
    })
    .await
}

/// Initial read buffer per connection; it grows only for a larger head.
const BUF: usize = 8 * 1024;

/// A connection slot: an optional open stream plus its reusable read buffer.
pub struct Conn {
    stream: Option<Stream>,
    buf: Vec<u8>,
    reader: ResponseReader,
    /// The server sent bytes beyond the response: do not reuse the stream.
    desync: bool,
    /// The read timeout's timer, kept from one exchange to the next (see
    /// [`within`]); None before the first exchange.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Default for Conn {
    fn default() -> Self {
        Self::new()
    }
}

impl Conn {
    /// A slot with no open stream.
    pub fn new() -> Self {
        Self {
            stream: None,
            buf: vec![0; BUF],
            reader: ResponseReader::new(false),
            desync: false,
            timer: None,
        }
    }

    /// The `Server-Timing` metrics of the last response read.
    pub fn server_timing(&self) -> &Parsed {
        self.reader.server_timing()
    }

    /// True when a stream is open.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Open the stream now (pre-connecting before load starts).
    ///
    /// # Errors
    /// The connect failure's kind.
    pub async fn open(&mut self, connector: &Connector) -> Result<(), ErrorKind> {
        self.stream = Some(connector.connect().await?.0);
        Ok(())
    }

    /// Drop the stream, if any. Returns true when one was open.
    pub fn close(&mut self) -> bool {
        self.stream.take().is_some()
    }

    /// Send `request` (connecting first when needed) and read the whole
    /// response, within `read_timeout` from the write to the last byte.
    /// Never panics; failures come back as [`Outcome::Error`].
    pub async fn exchange(
        &mut self,
        connector: &Connector,
        request: &[u8],
        head_request: bool,
        read_timeout: Duration,
    ) -> Exchange {
        let mut ex = Exchange::new();
        if self.stream.is_none() {
            match connector.connect().await {
                Ok((s, phases)) => {
                    self.stream = Some(s);
                    ex.opened = true;
                    ex.handshake = Some(phases);
                }
                Err(kind) => {
                    ex.outcome = Outcome::Error(kind);
                    ex.connect_failed = true;
                    ex.end = Instant::now();
                    return ex;
                }
            }
            ex.write_start = Instant::now();
        }
        self.reader.reset(head_request);
        self.desync = false;
        let deadline = tokio::time::Instant::from_std(ex.write_start + read_timeout);
        let mut timer = self
            .timer
            .take()
            .unwrap_or_else(|| Box::pin(tokio::time::sleep_until(deadline)));
        let result = within(&mut timer, deadline, self.round_trip(request, &mut ex)).await;
        self.timer = Some(timer);
        ex.end = Instant::now();
        ex.outcome = match result {
            Some(Ok(status)) => Outcome::Response(status),
            Some(Err(kind)) => Outcome::Error(kind),
            None => Outcome::Error(ErrorKind::ReadTimeout),
        };
        let keep =
            matches!(ex.outcome, Outcome::Response(_)) && self.reader.keep_alive() && !self.desync;
        if !keep {
            ex.closed = self.close();
        }
        ex
    }

    async fn round_trip(&mut self, request: &[u8], ex: &mut Exchange) -> Result<u16, ErrorKind> {
        let stream = self.stream.as_mut().ok_or(ErrorKind::Other)?;
        stream
            .write_all(request)
            .await
            .map_err(|e| ErrorKind::from_io(&e))?;
        if let Stream::Tls(_) = stream {
            stream.flush().await.map_err(|e| ErrorKind::from_io(&e))?;
        }
        ex.bytes_out = request.len() as u64;
        let mut filled = 0;
        loop {
            if filled == self.buf.len() {
                if self.buf.len() > MAX_HEAD {
                    return Err(ErrorKind::Protocol);
                }
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = stream
                .read(&mut self.buf[filled..])
                .await
                .map_err(|e| ErrorKind::from_io(&e))?;
            if n == 0 {
                return if self.reader.eof() {
                    Ok(self.reader.status())
                } else {
                    Err(ErrorKind::ClosedMidResponse)
                };
            }
            ex.bytes_in += n as u64;
            ex.first_byte.get_or_insert_with(Instant::now);
            filled += n;
            let fed = self
                .reader
                .feed(&self.buf[..filled])
                .map_err(|_| ErrorKind::Protocol)?;
            if fed.done {
                if fed.consumed < filled {
                    // Bytes beyond the response without pipelining: the
                    // stream is out of sync; do not reuse it.
                    self.desync = true;
                }
                return Ok(self.reader.status());
            }
            self.buf.copy_within(fed.consumed..filled, 0);
            filled -= fed.consumed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::within;
    use std::time::Duration;
    use tokio::time::{sleep, sleep_until, Instant};

    fn run<F: std::future::Future>(fut: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(fut)
    }

    /// A timer armed for an earlier exchange fires during a later one, long
    /// before the later one's deadline: that is no timeout.
    #[test]
    fn a_stale_deadline_firing_is_not_a_timeout() {
        run(async {
            let first = Instant::now() + Duration::from_millis(1);
            let mut timer = Box::pin(sleep_until(first));
            assert_eq!(within(&mut timer, first, async { 1 }).await, Some(1));
            let late = Instant::now() + Duration::from_secs(60);
            // the armed (first) deadline passes while this exchange waits
            let slow = async {
                sleep_until(first + Duration::from_millis(20)).await;
                2
            };
            assert_eq!(within(&mut timer, late, slow).await, Some(2));
            assert_eq!(timer.deadline(), late); // moved to the current deadline
        });
    }

    /// An exchange that never ends times out at its deadline: after a stale
    /// deadline fired, and when the armed deadline is later than its own.
    #[test]
    fn a_pending_exchange_times_out() {
        run(async {
            let soon = Instant::now() + Duration::from_millis(5);
            let mut timer = Box::pin(sleep_until(soon));
            let never = std::future::pending::<()>();
            assert_eq!(within(&mut timer, soon, never).await, None);
            sleep(Duration::from_millis(2)).await;
            let next = Instant::now() + Duration::from_millis(5);
            assert_eq!(
                within(&mut timer, next, std::future::pending::<()>()).await,
                None
            );
            assert!(Instant::now() >= next);
            // armed far ahead, asked for sooner: not a minute late
            let mut far = Box::pin(sleep_until(Instant::now() + Duration::from_secs(60)));
            let near = Instant::now() + Duration::from_millis(5);
            let bounded = tokio::time::timeout(
                Duration::from_secs(30),
                within(&mut far, near, std::future::pending::<()>()),
            );
            assert_eq!(bounded.await, Ok(None));
        });
    }
}
