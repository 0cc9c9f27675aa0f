//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte frame header, the frames a
//! client writes, and the padding and priority fields a client strips from
//! what it reads. Payload meaning is [`super::conn`]'s.

/// The client connection preface (§3.4), before the client's SETTINGS.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The frame header's size, bytes.
pub const HEAD_LEN: usize = 9;

/// The largest frame payload either side may send until told otherwise
/// (SETTINGS_MAX_FRAME_SIZE's initial value), bytes; also what the client
/// accepts.
pub const DEFAULT_MAX_FRAME: usize = 16_384;

/// The largest SETTINGS_MAX_FRAME_SIZE allowed (2^24 - 1).
pub const MAX_FRAME_LIMIT: u32 = (1 << 24) - 1;

/// The initial flow-control window of a stream and of the connection.
pub const DEFAULT_WINDOW: u32 = 65_535;

/// The largest flow-control window (2^31 - 1, §6.9.1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

// Frame types (§6).
pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

// Error codes (§7).
pub const NO_ERROR: u32 = 0;
pub const PROTOCOL_ERROR: u32 = 1;
pub const FLOW_CONTROL_ERROR: u32 = 3;
pub const FRAME_SIZE_ERROR: u32 = 6;
pub const REFUSED_STREAM: u32 = 7;
pub const CANCEL: u32 = 8;
pub const COMPRESSION_ERROR: u32 = 9;

// Settings (§6.5.2).
pub const SETTINGS_ENABLE_PUSH: u16 = 2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 5;

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Payload length, bytes.
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl Head {
    /// The header at the start of `b` (at least [`HEAD_LEN`] bytes).
    pub fn parse(b: &[u8]) -> Head {
        Head {
            len: usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// A frame that breaks §6's layout rules: the error code to close with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameError(pub u32);

/// Append a frame header.
pub fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Append a SETTINGS frame holding `params` (id, value).
pub fn settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    head(out, params.len() * 6, SETTINGS, 0, 0);
    for (id, v) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Append a SETTINGS acknowledgement.
pub fn settings_ack(out: &mut Vec<u8>) {
    head(out, 0, SETTINGS, ACK, 0);
}

/// Append a WINDOW_UPDATE of `increment` bytes (1..2^31) for `stream` (0:
/// the connection).
pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Append the answer to a PING carrying `payload` (8 bytes).
pub fn ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    head(out, 8, PING, ACK, 0);
    out.extend_from_slice(payload);
}

/// Append an RST_STREAM.
pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Append a GOAWAY naming `last` as the last stream processed.
pub fn goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// Append a header block as a HEADERS frame and, past `max_frame` bytes,
/// CONTINUATION frames (§6.10); `end_stream` when no body follows.
pub fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: usize) {
    let mut flags = if end_stream { END_STREAM } else { 0 };
    if block.len() <= max_frame {
        head(out, block.len(), HEADERS, flags | END_HEADERS, stream);
        out.extend_from_slice(block);
        return;
    }
    let mut chunks = block.chunks(max_frame.max(1)).peekable();
    let mut kind = HEADERS;
    while let Some(chunk) = chunks.next() {
        if chunks.peek().is_none() {
            flags |= END_HEADERS;
        }
        head(out, chunk.len(), kind, flags, stream);
        out.extend_from_slice(chunk);
        kind = CONTINUATION;
        flags = 0;
    }
}

/// Append one DATA frame (`data` no longer than the peer's frame size).
pub fn data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    head(
        out,
        data.len(),
        DATA,
        if end_stream { END_STREAM } else { 0 },
        stream,
    );
    out.extend_from_slice(data);
}

/// The content of a DATA or HEADERS payload without its padding (and a
/// HEADERS frame's priority fields) (§6.1, §6.2).
///
/// # Errors
/// PROTOCOL_ERROR when the padding is as long as the payload or longer;
/// FRAME_SIZE_ERROR when the payload is shorter than its fixed fields.
pub fn content(payload: &[u8], kind: u8, flags: u8) -> Result<&[u8], FrameError> {
    let mut start = 0;
    let mut end = payload.len();
    if flags & PADDED != 0 {
        let pad = usize::from(*payload.first().ok_or(FrameError(FRAME_SIZE_ERROR))?);
        start = 1;
        end = end
            .checked_sub(pad)
            .filter(|&e| e >= start)
            .ok_or(FrameError(PROTOCOL_ERROR))?;
    }
    if kind == HEADERS && flags & PRIORITY_FLAG != 0 {
        start += 5;
        if start > end {
            return Err(FrameError(FRAME_SIZE_ERROR));
        }
    }
    Ok(&payload[start..end])
}

/// A 4-byte big-endian number at the start of `b` (at least 4 bytes), the
/// reserved top bit cleared.
pub fn u31(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_round_trip() {
        let mut out = Vec::new();
        head(&mut out, 0x01_02_03, GOAWAY, 0x25, 0x7fff_fffe);
        assert_eq!(out.len(), HEAD_LEN);
        let h = Head::parse(&out);
        assert_eq!(
            (h.len, h.kind, h.flags, h.stream),
            (0x01_02_03, GOAWAY, 0x25, 0x7fff_fffe)
        );
        // The reserved bit is ignored on reading.
        out[5] |= 0x80;
        assert_eq!(Head::parse(&out).stream, 0x7fff_fffe);
    }

    #[test]
    fn a_long_header_block_continues() {
        let block: Vec<u8> = (0..25).collect();
        let mut out = Vec::new();
        headers(&mut out, 3, &block, true, 10);
        let mut at = 0;
        let mut seen = Vec::new();
        let mut frames = Vec::new();
        while at < out.len() {
            let h = Head::parse(&out[at..]);
            seen.extend_from_slice(&out[at + HEAD_LEN..at + HEAD_LEN + h.len]);
            frames.push((h.kind, h.flags, h.len, h.stream));
            at += HEAD_LEN + h.len;
        }
        assert_eq!(seen, block);
        assert_eq!(
            frames,
            [
                (HEADERS, END_STREAM, 10, 3),
                (CONTINUATION, 0, 10, 3),
                (CONTINUATION, END_HEADERS, 5, 3)
            ]
        );
        let mut out = Vec::new();
        headers(&mut out, 1, &block[..3], false, 10);
        assert_eq!(Head::parse(&out).flags, END_HEADERS);
        assert_eq!(out.len(), HEAD_LEN + 3);
    }

    #[test]
    fn padding_and_priority_are_stripped_or_refused() {
        let p = [2, b'a', b'b', 0, 0];
        assert_eq!(content(&p, DATA, PADDED), Ok(&b"ab"[..]));
        assert_eq!(content(&p, DATA, 0), Ok(&p[..]));
        // Padding as long as the rest.
        assert_eq!(content(&[4, 0, 0, 0, 0], DATA, PADDED), Ok(&[][..]));
        assert_eq!(
            content(&[5, 0, 0, 0, 0], DATA, PADDED),
            Err(FrameError(PROTOCOL_ERROR))
        );
        assert_eq!(
            content(&[], DATA, PADDED),
            Err(FrameError(FRAME_SIZE_ERROR))
        );
        let h = [1, 0, 0, 0, 3, 16, b'x', 0];
        assert_eq!(content(&h, HEADERS, PADDED | PRIORITY_FLAG), Ok(&b"x"[..]));
        assert_eq!(
            content(&h[1..4], HEADERS, PRIORITY_FLAG),
            Err(FrameError(FRAME_SIZE_ERROR))
        );
    }

    #[test]
    fn control_frames_have_their_layout() {
        let mut out = Vec::new();
        settings(
            &mut out,
            &[
                (SETTINGS_ENABLE_PUSH, 0),
                (SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
            ],
        );
        assert_eq!(
            Head::parse(&out),
            Head {
                len: 12,
                kind: SETTINGS,
                flags: 0,
                stream: 0
            }
        );
        assert_eq!(&out[HEAD_LEN..HEAD_LEN + 6], &[0, 2, 0, 0, 0, 0]);
        let mut out = Vec::new();
        window_update(&mut out, 5, 1000);
        assert_eq!(u31(&out[HEAD_LEN..]), 1000);
        let mut out = Vec::new();
        goaway(&mut out, 7, CANCEL);
        assert_eq!((u31(&out[9..]), u31(&out[13..])), (7, CANCEL));
    }
}
