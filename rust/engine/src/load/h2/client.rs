//! One HTTP/2 client connection over a socket: a task on the engine
//! thread's `LocalSet` reads and writes it and runs [`State`] (the
//! protocol), and requests made through a [`Handle`] start streams and wait
//! for their outcome. Writes are batched: the requests of the lanes that
//! ran since the task's last poll go out in one write.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::super::conn::{Exchange, Stream};
use super::super::mux::Failure;
use super::super::recorder::ErrorKind;
use super::super::server_timing::Parsed;
use super::frame;
use super::state::State;

/// The read buffer's size, bytes: two frames of the largest size the
/// client accepts (after moving an incomplete frame to its start, the
/// whole frame fits).
const READ_BUF: usize = 2 * (frame::HEAD_LEN + frame::DEFAULT_MAX_FRAME);

/// A handle of an open connection; when the last one is dropped the
/// connection says GOAWAY and closes.
pub struct Handle(Rc<RefCell<State>>);

impl Drop for Handle {
    fn drop(&mut self) {
        let mut st = self.0.borrow_mut();
        st.close();
        st.wake_driver();
    }
}

/// Unless disarmed, cancels its stream when dropped (the request's future
/// dropped at its read timeout).
struct Cancel<'a> {
    state: &'a RefCell<State>,
    slot: usize,
    id: u32,
    armed: bool,
}

impl Drop for Cancel<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut st = self.state.borrow_mut();
            if st.cancel(self.slot, self.id) {
                st.wake_driver();
            }
        }
    }
}

impl Handle {
    /// Start HTTP/2 on `io` (a connected TCP or TLS stream): the client
    /// preface is sent and the socket task spawned on the current
    /// `LocalSet`; returns once the server's SETTINGS are applied.
    ///
    /// # Errors
    /// The connection's failure before that (I/O error, protocol error).
    pub async fn handshake(io: Stream) -> Result<Handle, ErrorKind> {
        let state = Rc::new(RefCell::new(State::new()));
        tokio::task::spawn_local(Driver {
            state: state.clone(),
            io,
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            rstart: 0,
            rend: 0,
            wbuf: Vec::with_capacity(4096),
            wpos: 0,
            flush: false,
        });
        let handle = Handle(state);
        poll_fn(|cx| handle.0.borrow_mut().poll_settled(cx)).await?;
        Ok(handle)
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub fn max_streams(&self) -> usize {
        self.0.borrow().max_streams()
    }

    /// Send a request (header block `block`, body `body`) on a new stream,
    /// once the server allows one more, and wait for the whole response:
    /// sets `ex`'s send time (when the HEADERS frame is queued), first byte
    /// and bytes, and `timing` from its `Server-Timing`. Dropped before the
    /// end, the stream is reset (CANCEL).
    ///
    /// # Errors
    /// The [`Failure`].
    pub async fn request(
        &self,
        block: &[u8],
        body: &Bytes,
        ex: &mut Exchange,
        timing: &mut Parsed,
    ) -> Result<u16, Failure> {
        let state = &*self.0;
        poll_fn(|cx| state.borrow_mut().poll_ready(cx)).await?;
        let (slot, id) = {
            let mut st = state.borrow_mut();
            let started = st.start(block, body)?;
            st.wake_driver();
            started
        };
        ex.write_start = Instant::now();
        ex.bytes_out = body.len() as u64;
        let mut cancel = Cancel {
            state,
            slot,
            id,
            armed: true,
        };
        let r = poll_fn(|cx| state.borrow_mut().poll_response(slot, cx, ex, timing)).await;
        cancel.armed = false;
        r
    }
}

/// How a read ended.
enum Read {
    Blocked,
    Answered,
    Ended,
}

/// The socket task.
struct Driver {
    state: Rc<RefCell<State>>,
    io: Stream,
    rbuf: Box<[u8]>,
    /// Unprocessed bytes: `rbuf[rstart..rend]`.
    rstart: usize,
    rend: usize,
    /// Bytes being written: `wbuf[wpos..]`.
    wbuf: Vec<u8>,
    wpos: usize,
    /// Written since the last flush (TLS buffers records until flushed).
    flush: bool,
}

impl Driver {
    /// Write what there is to write. Err on an I/O error.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Result<(), io::Error> {
        loop {
            if self.wpos == self.wbuf.len() {
                let mut st = self.state.borrow_mut();
                if st.out.is_empty() {
                    break;
                }
                self.wbuf.clear();
                self.wpos = 0;
                std::mem::swap(&mut self.wbuf, &mut st.out);
            }
            match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    self.wpos += n;
                    self.flush = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return Ok(()),
            }
        }
        if self.flush {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.flush = false,
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {}
            }
        }
        Ok(())
    }

    /// Read and process frames until the socket has nothing more
    /// ([`Read::Blocked`]), the frames read queued an answer
    /// ([`Read::Answered`]) or the connection ended.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Read {
        loop {
            if self.rend == self.rbuf.len() {
                // Only an incomplete frame is left unprocessed.
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
            }
            let mut rb = ReadBuf::new(&mut self.rbuf[self.rend..]);
            match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    let mut st = self.state.borrow_mut();
                    if n == 0 {
                        st.io_failed(None);
                        return Read::Ended;
                    }
                    self.rend += n;
                    let mut now = None;
                    self.rstart += st.receive(&self.rbuf[self.rstart..self.rend], &mut now);
                    if self.rstart == self.rend {
                        self.rstart = 0;
                        self.rend = 0;
                    }
                    if st.dead.is_some() {
                        return Read::Ended;
                    }
                    if !st.out.is_empty() {
                        // Answers (acknowledgements, window updates) go out
                        // before reading on.
                        return Read::Answered;
                    }
                }
                Poll::Ready(Err(e)) => {
                    self.state.borrow_mut().io_failed(Some(&e));
                    return Read::Ended;
                }
                Poll::Pending => return Read::Blocked,
            }
        }
    }
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        {
            let mut st = this.state.borrow_mut();
            if !st.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                st.driver = Some(cx.waker().clone());
            }
        }
        loop {
            if let Err(e) = this.poll_write(cx) {
                this.state.borrow_mut().io_failed(Some(&e));
                return Poll::Ready(());
            }
            {
                let st = this.state.borrow();
                if st.closed || st.dead.is_some() {
                    // What could be written (a GOAWAY) is; the socket
                    // closes with the task.
                    return Poll::Ready(());
                }
            }
            match this.poll_read(cx) {
                Read::Blocked => return Poll::Pending,
                Read::Answered => {}
                Read::Ended => {
                    // A GOAWAY the failure queued: one attempt to send it.
                    let _ = this.poll_write(cx);
                    return Poll::Ready(());
                }
            }
        }
    }
}
