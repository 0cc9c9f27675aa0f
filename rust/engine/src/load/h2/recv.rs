//! What the client reads on an HTTP/2 connection (RFC 9113 §6): each
//! frame's effect on [`State`]: responses, flow control, settings, pings,
//! resets and GOAWAY; a frame that breaks the protocol fails the
//! connection.

use std::time::Instant;

use super::super::mux::Failure;
use super::super::recorder::ErrorKind;
use super::super::server_timing;
use super::frame::{self, FrameError, Head};
use super::state::{
    State, CONNECTION_WINDOW, MAX_HEADER_BLOCK, MAX_STREAM_ID, REFUSED, STREAM_WINDOW,
};

/// A `:status` value: three digits, 100-999.
fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

impl State {
    /// Take in the bytes read: every whole frame at the start of `buf` is
    /// processed; returns how many bytes that was (the rest is an
    /// incomplete frame, or ignored once the connection failed). `now` is
    /// the read's time, taken at its first use.
    pub fn receive(&mut self, buf: &[u8], now: &mut Option<Instant>) -> usize {
        let mut at = 0;
        while self.dead.is_none() && buf.len() - at >= frame::HEAD_LEN {
            let h = Head::parse(&buf[at..]);
            if h.len > frame::DEFAULT_MAX_FRAME {
                self.fail(ErrorKind::Protocol, Some(frame::FRAME_SIZE_ERROR));
                break;
            }
            let end = at + frame::HEAD_LEN + h.len;
            if end > buf.len() {
                break;
            }
            if let Err(FrameError(code)) = self.frame(h, &buf[at + frame::HEAD_LEN..end], now) {
                self.fail(ErrorKind::Protocol, Some(code));
            }
            at = end;
        }
        at
    }

    fn frame(&mut self, h: Head, p: &[u8], now: &mut Option<Instant>) -> Result<(), FrameError> {
        let protocol = FrameError(frame::PROTOCOL_ERROR);
        let size = FrameError(frame::FRAME_SIZE_ERROR);
        if let Some((id, _)) = self.continuing {
            if h.kind != frame::CONTINUATION || h.stream != id {
                return Err(protocol);
            }
        }
        if !self.settled && (h.kind != frame::SETTINGS || h.flags & frame::ACK != 0) {
            return Err(protocol);
        }
        let on_connection = matches!(h.kind, frame::SETTINGS | frame::PING | frame::GOAWAY);
        if on_connection != (h.stream == 0) && h.kind != frame::WINDOW_UPDATE && h.kind <= 9 {
            return Err(protocol);
        }
        match h.kind {
            frame::DATA => self.data(h, p),
            frame::HEADERS => {
                self.known(h.stream)?;
                let content = frame::content(p, h.kind, h.flags)?;
                let end_stream = h.flags & frame::END_STREAM != 0;
                if h.flags & frame::END_HEADERS != 0 {
                    return self.header_block(h.stream, content, end_stream, now);
                }
                self.block.clear();
                self.block.extend_from_slice(content);
                self.continuing = Some((h.stream, end_stream));
                Ok(())
            }
            frame::CONTINUATION => {
                let Some((id, end_stream)) = self.continuing else {
                    return Err(protocol);
                };
                if self.block.len() + p.len() > MAX_HEADER_BLOCK {
                    return Err(protocol);
                }
                self.block.extend_from_slice(p);
                if h.flags & frame::END_HEADERS == 0 {
                    return Ok(());
                }
                self.continuing = None;
                let block = std::mem::take(&mut self.block);
                let r = self.header_block(id, &block, end_stream, now);
                self.block = block;
                r
            }
            frame::RST_STREAM => {
                if p.len() != 4 {
                    return Err(size);
                }
                if let Some(i) = self.known(h.stream)? {
                    let code = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                    self.finish(
                        i,
                        Err(Failure {
                            kind: ErrorKind::Reset,
                            connection: false,
                            refused: code == frame::REFUSED_STREAM,
                        }),
                    );
                }
                Ok(())
            }
            frame::SETTINGS => self.settings(h, p),
            frame::PUSH_PROMISE => Err(protocol),
            frame::PING => {
                if p.len() != 8 {
                    return Err(size);
                }
                if h.flags & frame::ACK == 0 {
                    frame::ping_ack(&mut self.out, p);
                }
                Ok(())
            }
            frame::GOAWAY => {
                if p.len() < 8 {
                    return Err(size);
                }
                let last = frame::u31(p).min(self.goaway.unwrap_or(MAX_STREAM_ID));
                self.goaway = Some(last);
                for i in 0..self.slots.len() {
                    let s = &self.slots[i];
                    if s.id > last && s.result.is_none() {
                        self.finish(i, Err(REFUSED));
                    }
                }
                self.wake_waiters();
                Ok(())
            }
            frame::WINDOW_UPDATE => self.window_update(h, p),
            // PRIORITY carries nothing a client acts on; unknown types
            // are ignored (§4.1, §5.5).
            _ => Ok(()),
        }
    }

    /// The slot of stream `id`, if the request is still open. A stream the
    /// client never opened is a connection error (§5.1); one it is done
    /// with is not.
    fn known(&self, id: u32) -> Result<Option<usize>, FrameError> {
        if id.is_multiple_of(2) || id >= self.next_id {
            return Err(FrameError(frame::PROTOCOL_ERROR));
        }
        Ok(self
            .slots
            .iter()
            .position(|s| s.id == id)
            .filter(|&i| self.slots[i].result.is_none()))
    }

    fn data(&mut self, h: Head, p: &[u8]) -> Result<(), FrameError> {
        let slot = self.known(h.stream)?;
        let content = frame::content(p, h.kind, h.flags)?;
        let n = p.len() as u32;
        self.recv_window -= i64::from(n);
        if self.recv_window < 0 {
            return Err(FrameError(frame::FLOW_CONTROL_ERROR));
        }
        self.recv_unacked += n;
        if self.recv_unacked >= CONNECTION_WINDOW / 2 {
            frame::window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_window += i64::from(self.recv_unacked);
            self.recv_unacked = 0;
        }
        let Some(i) = slot else {
            return Ok(());
        };
        let s = &mut self.slots[i];
        if s.status == 0 {
            self.reset(i, frame::PROTOCOL_ERROR);
            return Ok(());
        }
        s.bytes_in += content.len() as u64;
        s.recv_window -= i64::from(n);
        if s.recv_window < 0 {
            self.reset(i, frame::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        if h.flags & frame::END_STREAM != 0 {
            let status = s.status;
            self.finish(i, Ok(status));
            return Ok(());
        }
        s.recv_unacked += n;
        if s.recv_unacked >= STREAM_WINDOW / 2 {
            frame::window_update(&mut self.out, s.id, s.recv_unacked);
            s.recv_window += i64::from(s.recv_unacked);
            s.recv_unacked = 0;
        }
        Ok(())
    }

    /// A whole header block of stream `id`: decoded (whether or not the
    /// request still waits, to keep the table in step), then the response
    /// head, informational head or trailers it is.
    fn header_block(
        &mut self,
        id: u32,
        block: &[u8],
        end_stream: bool,
        now: &mut Option<Instant>,
    ) -> Result<(), FrameError> {
        let slot = self.known(id)?;
        let mut status = None;
        let mut statuses = 0;
        {
            let mut timing = slot.map(|i| &mut self.slots[i].timing);
            self.decoder
                .decode(block, |name, value| {
                    if name == b":status" {
                        status = parse_status(value);
                        statuses += 1;
                    } else if name == b"server-timing" {
                        if let Some(t) = timing.as_deref_mut() {
                            server_timing::parse(value, t);
                        }
                    }
                })
                .map_err(|_| FrameError(frame::COMPRESSION_ERROR))?;
        }
        let Some(i) = slot else {
            return Ok(());
        };
        let s = &mut self.slots[i];
        if s.status != 0 {
            // Trailers end the stream.
            if end_stream && statuses == 0 {
                let status = s.status;
                self.finish(i, Ok(status));
            } else {
                self.reset(i, frame::PROTOCOL_ERROR);
            }
            return Ok(());
        }
        match status {
            Some(st) if statuses == 1 && st >= 200 => {
                s.status = st;
                s.first_byte = Some(*now.get_or_insert_with(Instant::now));
                if end_stream {
                    self.finish(i, Ok(st));
                }
            }
            // An informational head: the response follows.
            Some(_) if statuses == 1 && !end_stream => {}
            _ => self.reset(i, frame::PROTOCOL_ERROR),
        }
        Ok(())
    }

    fn settings(&mut self, h: Head, p: &[u8]) -> Result<(), FrameError> {
        if h.flags & frame::ACK != 0 {
            return if p.is_empty() {
                Ok(())
            } else {
                Err(FrameError(frame::FRAME_SIZE_ERROR))
            };
        }
        if !p.len().is_multiple_of(6) {
            return Err(FrameError(frame::FRAME_SIZE_ERROR));
        }
        for param in p.chunks_exact(6) {
            let id = u16::from_be_bytes([param[0], param[1]]);
            let v = u32::from_be_bytes([param[2], param[3], param[4], param[5]]);
            match id {
                frame::SETTINGS_ENABLE_PUSH if v > 1 => {
                    return Err(FrameError(frame::PROTOCOL_ERROR));
                }
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.max_streams = v as usize,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if i64::from(v) > frame::MAX_WINDOW {
                        return Err(FrameError(frame::FLOW_CONTROL_ERROR));
                    }
                    let delta = i64::from(v) - self.initial_window;
                    self.initial_window = i64::from(v);
                    for s in self.slots.iter_mut().filter(|s| s.id != 0) {
                        s.send_window += delta;
                        if s.send_window > frame::MAX_WINDOW {
                            return Err(FrameError(frame::FLOW_CONTROL_ERROR));
                        }
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME as u32..=frame::MAX_FRAME_LIMIT).contains(&v) {
                        return Err(FrameError(frame::PROTOCOL_ERROR));
                    }
                    self.max_frame = v as usize;
                }
                // HEADER_TABLE_SIZE: the request encoder uses no dynamic
                // table; MAX_HEADER_LIST_SIZE and unknown ones: nothing to do.
                _ => {}
            }
        }
        frame::settings_ack(&mut self.out);
        if !self.settled {
            self.settled = true;
        }
        self.wake_waiters();
        self.send_bodies();
        Ok(())
    }

    fn window_update(&mut self, h: Head, p: &[u8]) -> Result<(), FrameError> {
        if p.len() != 4 {
            return Err(FrameError(frame::FRAME_SIZE_ERROR));
        }
        let increment = i64::from(frame::u31(p));
        if h.stream == 0 {
            if increment == 0 {
                return Err(FrameError(frame::PROTOCOL_ERROR));
            }
            self.send_window += increment;
            if self.send_window > frame::MAX_WINDOW {
                return Err(FrameError(frame::FLOW_CONTROL_ERROR));
            }
        } else if let Some(i) = self.known(h.stream)? {
            let s = &mut self.slots[i];
            s.send_window += increment;
            if increment == 0 {
                self.reset(i, frame::PROTOCOL_ERROR);
            } else if s.send_window > frame::MAX_WINDOW {
                self.reset(i, frame::FLOW_CONTROL_ERROR);
            }
        }
        self.send_bodies();
        Ok(())
    }
}
