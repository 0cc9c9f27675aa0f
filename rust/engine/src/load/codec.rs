//! HTTP/1.1 codec: request bytes serialized once, and an incremental
//! response reader (httparse for the head; its own state machine for
//! `Content-Length`, chunked and read-until-close bodies).
//!
//! The reader never copies body bytes: it only counts them, so memory per
//! connection is the read buffer, whatever the body size.

use std::fmt;

use super::server_timing::{self, Parsed};

/// One request to send: method, path (with query), extra headers and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestSpec {
    pub method: String,
    /// Path plus query, starting with `/`.
    pub path: String,
    /// Extra headers, sent in order. A `Host` here replaces the default.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RequestSpec {
    /// A bodiless `GET path`.
    pub fn get(path: &str) -> Self {
        Self {
            method: "GET".into(),
            path: path.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The request's wire bytes: request line, `Host` (unless given),
    /// the extra headers, `Content-Length` when there is a body (unless
    /// given), blank line, body. Serialized once per run, then written
    /// as-is for every request.
    ///
    /// # Errors
    /// A message when the method, path or a header contains CR, LF or
    /// (method, path) spaces, which would corrupt the request.
    pub fn to_bytes(&self, host_header: &str) -> Result<Vec<u8>, String> {
        let bad = |s: &str| s.contains(['\r', '\n']);
        if self.method.is_empty() || bad(&self.method) || self.method.contains(' ') {
            return Err(format!("invalid HTTP method {:?}", self.method));
        }
        if !self.path.starts_with('/') || bad(&self.path) || self.path.contains(' ') {
            return Err(format!(
                "invalid request path {:?}: it must start with '/' and hold no spaces",
                self.path
            ));
        }
        let has = |name: &str| {
            self.headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(name))
        };
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        if !has("host") {
            out.push_str(&format!("Host: {host_header}\r\n"));
        }
        for (k, v) in &self.headers {
            if k.is_empty() || bad(k) || k.contains(':') || bad(v) {
                return Err(format!("invalid header {k:?}: {v:?}"));
            }
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        if !self.body.is_empty() && !has("content-length") && !has("transfer-encoding") {
            out.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&self.body);
        Ok(bytes)
    }

    /// True for `HEAD`, whose responses carry no body.
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }
}

/// Why a response could not be parsed: the `protocol` error kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecError(pub String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Largest response head accepted, bytes.
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits of a chunk size.
    Size,
    /// Skipping a chunk extension up to CR.
    Ext,
    /// Expecting LF after the size line's CR.
    SizeLf,
    /// Inside chunk data, n bytes left.
    Data(u64),
    DataCr,
    DataLf,
    /// At the start of a trailer line (an empty one ends the body).
    TrailerStart,
    /// Inside a trailer line.
    Trailer,
    TrailerLf,
    /// Expecting the final LF.
    EndLf,
}

fn chunk_error(what: &str) -> CodecError {
    CodecError(format!("malformed chunked body: {what}"))
}

impl Chunk {
    /// The state after byte `b` of the framing (not `Data` or `EndLf`,
    /// which [`ResponseReader::feed_chunked`] handles); `size` accumulates
    /// the hex size of the chunk being announced.
    fn next(self, b: u8, size: &mut u64) -> Result<Chunk, CodecError> {
        let expect = |want: u8, then: Chunk, what: &str| {
            if b == want {
                Ok(then)
            } else {
                Err(chunk_error(what))
            }
        };
        match self {
            Chunk::Size => match (b as char).to_digit(16) {
                Some(_) if *size > (u64::MAX >> 8) => Err(chunk_error("chunk size overflows")),
                Some(d) => {
                    *size = *size * 16 + u64::from(d);
                    Ok(Chunk::Size)
                }
                None if b == b';' || b == b' ' || b == b'\t' => Ok(Chunk::Ext),
                None if b == b'\r' => Ok(Chunk::SizeLf),
                None => Err(chunk_error("bad chunk size")),
            },
            Chunk::Ext => Ok(if b == b'\r' {
                Chunk::SizeLf
            } else {
                Chunk::Ext
            }),
            Chunk::SizeLf => {
                let then = if *size == 0 {
                    Chunk::TrailerStart
                } else {
                    Chunk::Data(*size)
                };
                *size = 0;
                expect(b'\n', then, "expected LF after chunk size")
            }
            Chunk::DataCr => expect(b'\r', Chunk::DataLf, "expected CRLF after chunk data"),
            Chunk::DataLf => expect(b'\n', Chunk::Size, "expected CRLF after chunk data"),
            Chunk::TrailerStart if b == b'\r' => Ok(Chunk::EndLf),
            Chunk::TrailerStart | Chunk::Trailer => Ok(if b == b'\r' {
                Chunk::TrailerLf
            } else {
                Chunk::Trailer
            }),
            Chunk::TrailerLf => expect(b'\n', Chunk::TrailerStart, "expected LF in trailer"),
            // Handled by feed_chunked before it calls this.
            Chunk::Data(_) | Chunk::EndLf => Ok(self),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    Chunked(Chunk, u64),
    UntilClose,
    Done,
}

/// What [`ResponseReader::feed`] did with the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fed {
    /// Bytes of the input consumed; the caller drops them from its buffer.
    pub consumed: usize,
    /// The response is complete.
    pub done: bool,
}

/// An incremental HTTP/1.1 response reader for one response at a time.
///
/// Feed it the unconsumed bytes of the read buffer after every read; it
/// consumes what it can. The head must arrive whole in the buffer (httparse
/// is not incremental), so the caller keeps unconsumed bytes and appends.
#[derive(Clone, Debug)]
pub struct ResponseReader {
    state: State,
    status: u16,
    keep_alive: bool,
    head_request: bool,
    /// `Server-Timing` of the current response (reused across responses).
    timing: Parsed,
}

impl Default for ResponseReader {
    fn default() -> Self {
        Self::new(false)
    }
}

impl ResponseReader {
    /// A reader expecting a response to a request; `head_request` is true
    /// for `HEAD` (no body whatever the headers say).
    pub fn new(head_request: bool) -> Self {
        Self {
            state: State::Head,
            status: 0,
            keep_alive: true,
            head_request,
            timing: Parsed::default(),
        }
    }

    /// Reset for the next response on the same connection.
    pub fn reset(&mut self, head_request: bool) {
        let mut timing = std::mem::take(&mut self.timing);
        timing.clear();
        *self = Self::new(head_request);
        self.timing = timing;
    }

    /// The `Server-Timing` metrics of the response (empty until its head).
    pub fn server_timing(&self) -> &Parsed {
        &self.timing
    }

    /// Status code of the response (0 until the head is parsed).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Whether the connection may be reused after this response.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive && self.state != State::UntilClose
    }

    /// True once any byte of a head has been consumed or it was complete.
    pub fn head_done(&self) -> bool {
        self.state != State::Head
    }

    /// Consume as much of `buf` as possible.
    ///
    /// # Errors
    /// [`CodecError`] for a malformed head, a head over [`MAX_HEAD`], a bad
    /// `Content-Length` or a malformed chunk.
    pub fn feed(&mut self, buf: &[u8]) -> Result<Fed, CodecError> {
        let mut consumed = 0;
        loop {
            let rest = &buf[consumed..];
            match self.state {
                State::Done => {
                    return Ok(Fed {
                        consumed,
                        done: true,
                    })
                }
                State::Head => match self.parse_head(rest)? {
                    Some(n) => consumed += n,
                    None => {
                        return Ok(Fed {
                            consumed,
                            done: false,
                        })
                    }
                },
                State::Length(left) => {
                    let take = left.min(rest.len() as u64);
                    consumed += take as usize;
                    self.state = if take == left {
                        State::Done
                    } else {
                        State::Length(left - take)
                    };
                    if self.state != State::Done {
                        return Ok(Fed {
                            consumed,
                            done: false,
                        });
                    }
                }
                State::Chunked(..) => {
                    consumed += self.feed_chunked(rest)?;
                    if self.state != State::Done {
                        return Ok(Fed {
                            consumed,
                            done: false,
                        });
                    }
                }
                State::UntilClose => {
                    return Ok(Fed {
                        consumed: buf.len(),
                        done: false,
                    })
                }
            }
        }
    }

    /// Tell the reader the peer closed the connection. Returns true when
    /// that legitimately ends the response (a body delimited by close).
    pub fn eof(&mut self) -> bool {
        if self.state == State::UntilClose {
            self.state = State::Done;
            self.keep_alive = false;
        }
        self.state == State::Done
    }

    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, CodecError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
                return Err(CodecError(format!(
                    "response head larger than {MAX_HEAD} bytes"
                )))
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(CodecError(format!("malformed response head: {e}"))),
        };
        let status = resp.code.unwrap_or(0);
        let http10 = resp.version == Some(0);
        let mut length = None;
        let mut chunked = false;
        let mut keep_alive = !http10;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok());
                let v = v.ok_or_else(|| CodecError("malformed Content-Length".into()))?;
                if length.is_some_and(|l| l != v) {
                    return Err(CodecError("conflicting Content-Length headers".into()));
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .to_ascii_lowercase()
                    .windows(7)
                    .any(|w| w == b"chunked");
            } else if h.name.eq_ignore_ascii_case("server-timing") {
                server_timing::parse(h.value, &mut self.timing);
            } else if h.name.eq_ignore_ascii_case("connection") {
                let v = h.value.to_ascii_lowercase();
                if v.windows(5).any(|w| w == b"close") {
                    keep_alive = false;
                } else if v.windows(10).any(|w| w == b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
        if (100..200).contains(&status) {
            // Interim response (100 Continue): skip it, read the real one.
            self.timing.clear();
            return Ok(Some(n));
        }
        self.status = status;
        self.keep_alive = keep_alive;
        let bodiless = self.head_request || status == 204 || status == 304;
        self.state = match (bodiless, chunked, length) {
            (true, _, _) => State::Done,
            (_, true, _) => State::Chunked(Chunk::Size, 0),
            (_, _, Some(0)) => State::Done,
            (_, _, Some(l)) => State::Length(l),
            (_, _, None) => State::UntilClose,
        };
        Ok(Some(n))
    }

    fn feed_chunked(&mut self, buf: &[u8]) -> Result<usize, CodecError> {
        let State::Chunked(mut st, mut size) = self.state else {
            return Ok(0);
        };
        let mut i = 0;
        while i < buf.len() {
            if let Chunk::Data(left) = st {
                // Skip chunk data in one go rather than byte by byte.
                let take = left.min((buf.len() - i) as u64);
                i += take as usize;
                st = if take == left {
                    Chunk::DataCr
                } else {
                    Chunk::Data(left - take)
                };
                continue;
            }
            if st == Chunk::EndLf {
                if buf[i] != b'\n' {
                    return Err(chunk_error("expected final LF"));
                }
                self.state = State::Done;
                return Ok(i + 1);
            }
            st = st.next(buf[i], &mut size)?;
            i += 1;
        }
        self.state = State::Chunked(st, size);
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `wire` in pieces of `step` bytes, keeping unconsumed bytes like
    /// a connection's read buffer does. Returns (status, keep_alive, leftover).
    fn read_in_pieces(wire: &[u8], step: usize) -> Result<(u16, bool, Vec<u8>), CodecError> {
        let mut r = ResponseReader::new(false);
        let mut buf = Vec::new();
        for piece in wire.chunks(step) {
            buf.extend_from_slice(piece);
            let fed = r.feed(&buf)?;
            buf.drain(..fed.consumed);
            if fed.done {
                return Ok((r.status(), r.keep_alive(), buf));
            }
        }
        if r.eof() {
            return Ok((r.status(), r.keep_alive(), buf));
        }
        Err(CodecError("incomplete".into()))
    }

    const CL: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    const CHUNKED: &[u8] =
        b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n";

    #[test]
    fn content_length_whole_and_byte_by_byte() {
        for step in [1, 2, 7, CL.len()] {
            assert_eq!(
                read_in_pieces(CL, step).unwrap(),
                (200, true, vec![]),
                "step {step}"
            );
        }
    }

    #[test]
    fn chunked_whole_and_byte_by_byte() {
        for step in [1, 3, 16, CHUNKED.len()] {
            assert_eq!(
                read_in_pieces(CHUNKED, step).unwrap(),
                (404, true, vec![]),
                "step {step}"
            );
        }
    }

    #[test]
    fn leftover_bytes_of_next_response_are_not_consumed() {
        let mut wire = CL.to_vec();
        wire.extend_from_slice(b"HTTP/1.1");
        let (_, _, rest) = read_in_pieces(&wire, wire.len()).unwrap();
        assert_eq!(rest, b"HTTP/1.1");
    }

    #[test]
    fn connection_close_and_http10_disable_keep_alive() {
        let w = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(read_in_pieces(w, 4).unwrap(), (200, false, vec![]));
        let w = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert!(!read_in_pieces(w, 100).unwrap().1);
    }

    #[test]
    fn body_until_close_ends_at_eof() {
        let w = b"HTTP/1.1 200 OK\r\n\r\nsome body";
        assert_eq!(read_in_pieces(w, 5).unwrap(), (200, false, vec![]));
    }

    #[test]
    fn head_204_and_interim_100_have_no_body() {
        let w = b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(read_in_pieces(w, 100).unwrap().0, 204);
        let mut r = ResponseReader::new(true);
        assert!(r.feed(CL).unwrap().done);
        let w = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(read_in_pieces(w, 3).unwrap().0, 201);
    }

    #[test]
    fn server_timing_headers_are_read_and_reset_per_response() {
        let mut r = ResponseReader::new(false);
        let w = b"HTTP/1.1 100 Continue\r\nServer-Timing: early;dur=9\r\n\r\n\
HTTP/1.1 200 OK\r\nserver-timing: db;dur=2.5\r\nContent-Length: 0\r\n\
Server-Timing: app;dur=7, bad;dur=x\r\n\r\n";
        assert!(r.feed(w).unwrap().done);
        let t = r.server_timing();
        assert!(t.present && t.malformed);
        assert_eq!(t.metrics, vec![("db".into(), 2.5), ("app".into(), 7.0)]);
        r.reset(false);
        assert!(r.feed(CL).unwrap().done);
        assert_eq!(r.server_timing(), &Parsed::default());
    }

    #[test]
    fn truncated_body_is_incomplete_at_eof() {
        assert!(read_in_pieces(&CL[..CL.len() - 2], 100).is_err());
        assert!(read_in_pieces(&CHUNKED[..CHUNKED.len() - 3], 100).is_err());
    }

    #[test]
    fn malformed_responses_are_codec_errors() {
        let bad: [&[u8]; 5] = [
            b"HTTX/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc",
        ];
        for w in bad {
            assert!(
                read_in_pieces(w, 100).is_err(),
                "{:?}",
                String::from_utf8_lossy(w)
            );
        }
        let mut r = ResponseReader::new(false);
        let huge = vec![b'a'; MAX_HEAD];
        let mut head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        head.extend_from_slice(&huge);
        assert!(r.feed(&head).unwrap_err().0.contains("larger"));
    }

    #[test]
    fn request_bytes_have_host_headers_and_length() {
        let spec = RequestSpec {
            method: "POST".into(),
            path: "/p?q=1".into(),
            headers: vec![("X-A".into(), "b".into())],
            body: b"abc".to_vec(),
        };
        let wire = String::from_utf8(spec.to_bytes("h:81").unwrap()).unwrap();
        assert_eq!(
            wire,
            "POST /p?q=1 HTTP/1.1\r\nHost: h:81\r\nX-A: b\r\nContent-Length: 3\r\n\r\nabc"
        );
        let get = String::from_utf8(RequestSpec::get("/").to_bytes("h").unwrap()).unwrap();
        assert_eq!(get, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    #[test]
    fn request_rejects_header_injection() {
        let mut spec = RequestSpec::get("/");
        spec.headers.push(("X".into(), "a\r\nEvil: 1".into()));
        assert!(spec.to_bytes("h").is_err());
        assert!(RequestSpec::get("no-slash").to_bytes("h").is_err());
        assert!(RequestSpec {
            method: "G T".into(),
            ..RequestSpec::get("/")
        }
        .to_bytes("h")
        .is_err());
    }
}
