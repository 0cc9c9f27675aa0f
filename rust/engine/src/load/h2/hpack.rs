//! HPACK (RFC 7541) for the load engine's HTTP/2 client: a full decoder of
//! the server's header blocks (static and dynamic table with size updates
//! and eviction, Huffman strings, bounded integers and strings) that hands
//! each field to a callback without building a header map, and the
//! encoder of the one request a run sends (encoded once, so each request's
//! header block is a copy).
//!
//! A server repeats most response fields byte for byte (`date` changes once
//! a second, `server`, `content-type`, `last-modified` never): the decoder
//! keeps the last Huffman string seen at each position of a block with its
//! decoding, and decodes again only when the coded bytes differ (exact:
//! decoding is a function of the coded bytes).

use std::collections::VecDeque;

use super::huffman;

/// A header block that is not valid HPACK (a COMPRESSION_ERROR, RFC 9113
/// §4.3): the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpackError(pub &'static str);

/// The static table (RFC 7541 Appendix A), index 1 first.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The dynamic table size a decoder starts with and allows at most, bytes
/// (SETTINGS_HEADER_TABLE_SIZE's default, which the client keeps).
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// Continuation bytes an integer may have: enough for 2^28, far above any
/// index, string length or table size a valid block holds.
const MAX_INTEGER_BYTES: usize = 4;

/// Huffman cache slots: two (name, value) per position, positions past the
/// last sharing its slots.
const CACHED_POSITIONS: usize = 32;

/// Evicted entries' buffers kept for reuse.
const SPARE_BUFFERS: usize = 16;

/// Read an integer with an `prefix`-bit prefix at `buf[*pos]` (§5.1).
///
/// # Errors
/// Truncated input or more than [`MAX_INTEGER_BYTES`] continuation bytes.
pub fn read_integer(buf: &[u8], pos: &mut usize, prefix: u32) -> Result<usize, HpackError> {
    let mask = (1usize << prefix) - 1;
    let first = *buf.get(*pos).ok_or(HpackError("truncated integer"))?;
    *pos += 1;
    let mut value = usize::from(first) & mask;
    if value < mask {
        return Ok(value);
    }
    for i in 0..MAX_INTEGER_BYTES {
        let b = *buf.get(*pos).ok_or(HpackError("truncated integer"))?;
        *pos += 1;
        value += usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(HpackError("integer too large"))
}

/// Append `value` with an `prefix`-bit prefix, the first byte's other bits
/// being `flags` (§5.1).
pub fn write_integer(dst: &mut Vec<u8>, flags: u8, prefix: u32, mut value: usize) {
    let mask = (1usize << prefix) - 1;
    if value < mask {
        dst.push(flags | value as u8);
        return;
    }
    dst.push(flags | mask as u8);
    value -= mask;
    while value >= 128 {
        dst.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    dst.push(value as u8);
}

/// Append a string literal (§5.2), Huffman-coded when that is shorter.
pub fn write_string(dst: &mut Vec<u8>, s: &[u8]) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        write_integer(dst, 0x80, 7, coded);
        huffman::encode(s, dst);
    } else {
        write_integer(dst, 0, 7, s.len());
        dst.extend_from_slice(s);
    }
}

/// The header block of a request: pseudo-headers first (`:method`,
/// `:scheme`, `:authority`, `:path`), then `headers` (names lower-case),
/// every field a static-table index or a literal without indexing (the
/// server's decoder table is never touched, so the block can be sent
/// again as is on any connection).
pub fn encode_request(
    method: &str,
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let mut field = |name: &str, value: &str| {
        if let Some(i) = STATIC.iter().position(|&(n, v)| n == name && v == value) {
            write_integer(&mut out, 0x80, 7, i + 1);
        } else if let Some(i) = STATIC.iter().position(|&(n, _)| n == name) {
            write_integer(&mut out, 0, 4, i + 1);
            write_string(&mut out, value.as_bytes());
        } else {
            out.push(0);
            write_string(&mut out, name.as_bytes());
            write_string(&mut out, value.as_bytes());
        }
    };
    field(":method", method);
    field(":scheme", scheme);
    field(":authority", authority);
    field(":path", path);
    for (name, value) in headers {
        field(name, value);
    }
    out
}

/// One dynamic table entry: name and value in one allocation.
struct Entry {
    bytes: Vec<u8>,
    split: usize,
}

impl Entry {
    /// The size the table counts for it (§4.1).
    fn size(&self) -> usize {
        self.bytes.len() + 32
    }
}

/// Where a decoded string lies (resolved to bytes once the field is whole).
#[derive(Clone, Copy)]
enum At {
    Static(&'static str),
    /// Name (false) or value (true) of dynamic entry `.0` (0 = newest).
    Table(usize, bool),
    /// A raw literal: `block[start..end]`.
    Block(usize, usize),
    /// A Huffman literal, decoded in cache slot `.0`.
    Cache(usize),
}

/// An HPACK decoder: the dynamic table of one connection's server-to-client
/// direction.
pub struct Decoder {
    table: VecDeque<Entry>,
    size: usize,
    capacity: usize,
    /// The largest capacity a size update may set (our
    /// SETTINGS_HEADER_TABLE_SIZE).
    max_capacity: usize,
    /// (coded, decoded) of the last Huffman string at each slot.
    cache: Vec<(Vec<u8>, Vec<u8>)>,
    /// Buffers of evicted entries, for the next insertions.
    spare: Vec<Vec<u8>>,
    /// The last block decoded, for [`Last::replays`].
    pub(super) last: Last,
    /// Whether a repeated block may be replayed (tests compare both ways).
    replay: bool,
}

/// The last header block decoded and its fields. A server repeats its
/// response block byte for byte (nginx: `server`, `date`, `content-type`,
/// `content-length`, each a literal with incremental indexing, the same
/// until the date's second changes). Decoding such a block again gives the
/// same fields and leaves the table as it was, exactly when the block is
/// *pure* (it references no dynamic entry and updates no size: its fields
/// and the entries it inserts depend on its bytes alone) and the table
/// holds only entries inserted by its repeats, fewer than all of them:
/// the table is always the longest run of the latest insertions that fits
/// (§4.4), and for a periodic run of insertions that run no longer grows
/// once an entry of it was evicted.
#[derive(Default)]
pub(super) struct Last {
    pub(super) block: Vec<u8>,
    /// The fields as (name start, name end = value start, value end) in
    /// `bytes`.
    fields: Vec<(usize, usize, usize)>,
    bytes: Vec<u8>,
    pure: bool,
    /// Fields of the block inserted into the table.
    inserts: usize,
    /// Consecutive decodes of this block (the latest insertions are its).
    pub(super) repeats: usize,
    /// Blocks replayed (tests).
    #[cfg(test)]
    pub(super) replayed: usize,
}

impl Last {
    /// Decoding the block again would give its fields and not change a
    /// table of `entries` entries.
    fn replays(&self, entries: usize) -> bool {
        self.pure && (self.inserts == 0 || self.repeats.saturating_mul(self.inserts) > entries)
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new(DEFAULT_TABLE_SIZE)
    }
}

impl Decoder {
    /// A decoder whose table holds at most `max_capacity` bytes (§4.2).
    pub fn new(max_capacity: usize) -> Self {
        Self {
            table: VecDeque::new(),
            size: 0,
            capacity: max_capacity,
            max_capacity,
            cache: vec![(Vec::new(), Vec::new()); CACHED_POSITIONS * 2],
            spare: Vec::new(),
            last: Last::default(),
            replay: true,
        }
    }

    /// Decode every block in full (the replay of a repeated block off: the
    /// tests' reference).
    #[cfg(test)]
    pub fn without_replay(mut self) -> Self {
        self.replay = false;
        self
    }

    /// The dynamic table's size, bytes (§4.1), and entry count.
    #[cfg(test)]
    pub fn table_size(&self) -> (usize, usize) {
        (self.size, self.table.len())
    }

    /// The entry at dynamic index `i` (0 = newest) as (name, value).
    #[cfg(test)]
    pub fn entry(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.table.get(i).map(|e| e.bytes.split_at(e.split))
    }

    /// Decode one whole header block, calling `field(name, value)` for
    /// each field in order, and update the dynamic table.
    ///
    /// # Errors
    /// [`HpackError`] for any invalid representation: index 0 or past the
    /// tables, a truncated or oversize integer or string, a bad Huffman
    /// string, a size update above the maximum or after a field. The
    /// fields before it have been passed to `field`; the connection must
    /// then be closed (its table is out of step).
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let same = block == self.last.block.as_slice();
        if same && self.replay && self.last.replays(self.table.len()) {
            let last = &mut self.last;
            for &(a, b, c) in &last.fields {
                field(&last.bytes[a..b], &last.bytes[b..c]);
            }
            last.repeats = last.repeats.saturating_add(1);
            #[cfg(test)]
            {
                last.replayed += 1;
            }
            return Ok(());
        }
        let mut last = std::mem::take(&mut self.last);
        #[cfg(test)]
        let replayed = last.replayed;
        last.fields.clear();
        last.bytes.clear();
        let r = self.decode_full(block, &mut field, &mut last);
        if r.is_err() {
            last.block.clear();
            last.repeats = 0;
        } else if same {
            last.repeats = last.repeats.saturating_add(1);
        } else {
            last.block.clear();
            last.block.extend_from_slice(block);
            last.repeats = 1;
        }
        #[cfg(test)]
        {
            last.replayed = replayed;
        }
        self.last = last;
        r
    }

    /// Decode `block` field by field, recording each field and whether
    /// the block is pure (see [`Last`]) in `last`.
    fn decode_full(
        &mut self,
        block: &[u8],
        field: &mut impl FnMut(&[u8], &[u8]),
        last: &mut Last,
    ) -> Result<(), HpackError> {
        let mut record = |name: &[u8], value: &[u8]| {
            let a = last.bytes.len();
            last.bytes.extend_from_slice(name);
            let b = last.bytes.len();
            last.bytes.extend_from_slice(value);
            last.fields.push((a, b, last.bytes.len()));
            field(name, value);
        };
        last.pure = true;
        last.inserts = 0;
        let mut pos = 0;
        let mut n = 0usize;
        while pos < block.len() {
            let b = block[pos];
            if b & 0x80 != 0 {
                let index = read_integer(block, &mut pos, 7)?;
                last.pure &= index < 62;
                let (name, value) = self.lookup(index)?;
                record(self.bytes(block, name), self.bytes(block, value));
            } else if b & 0xe0 == 0x20 {
                if n > 0 {
                    return Err(HpackError("table size update after a field"));
                }
                let size = read_integer(block, &mut pos, 5)?;
                if size > self.max_capacity {
                    return Err(HpackError("table size update above the maximum"));
                }
                last.pure = false;
                self.capacity = size;
                self.evict(0);
                continue;
            } else {
                let indexing = b & 0x40 != 0;
                let index = read_integer(block, &mut pos, if indexing { 6 } else { 4 })?;
                // An evicted entry's buffer, taken before the field's bytes
                // are borrowed (no allocation per insertion).
                let mut bytes = if indexing {
                    self.spare.pop().unwrap_or_default()
                } else {
                    Vec::new()
                };
                let slot = n.min(CACHED_POSITIONS - 1) * 2;
                let name = if index == 0 {
                    self.string(block, &mut pos, slot)?
                } else {
                    self.lookup(index)?.0
                };
                let value = self.string(block, &mut pos, slot + 1)?;
                last.pure &= index < 62;
                let (name, value) = (self.bytes(block, name), self.bytes(block, value));
                record(name, value);
                if indexing {
                    last.inserts += 1;
                    bytes.clear();
                    bytes.extend_from_slice(name);
                    bytes.extend_from_slice(value);
                    let split = name.len();
                    self.insert(Entry { bytes, split });
                }
            }
            n += 1;
        }
        Ok(())
    }

    #[inline]
    fn lookup(&self, index: usize) -> Result<(At, At), HpackError> {
        match index {
            0 => Err(HpackError("index 0")),
            1..=61 => {
                let (n, v) = STATIC[index - 1];
                Ok((At::Static(n), At::Static(v)))
            }
            _ if index - 62 < self.table.len() => {
                Ok((At::Table(index - 62, false), At::Table(index - 62, true)))
            }
            _ => Err(HpackError("index past the tables")),
        }
    }

    #[inline]
    fn bytes<'a>(&'a self, block: &'a [u8], at: At) -> &'a [u8] {
        match at {
            At::Static(s) => s.as_bytes(),
            At::Table(i, value) => {
                let e = &self.table[i];
                let (n, v) = e.bytes.split_at(e.split);
                if value {
                    v
                } else {
                    n
                }
            }
            At::Block(start, end) => &block[start..end],
            At::Cache(slot) => &self.cache[slot].1,
        }
    }

    /// Read a string literal at `block[*pos]`; a Huffman one is decoded in
    /// cache slot `slot` unless it holds the same coded bytes already.
    fn string(&mut self, block: &[u8], pos: &mut usize, slot: usize) -> Result<At, HpackError> {
        let huffman = block.get(*pos).is_some_and(|b| b & 0x80 != 0);
        let len = read_integer(block, pos, 7)?;
        let start = *pos;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= block.len())
            .ok_or(HpackError("string past the block"))?;
        *pos = end;
        if !huffman {
            return Ok(At::Block(start, end));
        }
        let coded = &block[start..end];
        let (seen, decoded) = &mut self.cache[slot];
        if seen.as_slice() != coded {
            seen.clear();
            decoded.clear();
            if huffman::decode(coded, decoded).is_err() {
                decoded.clear();
                return Err(HpackError("invalid Huffman string"));
            }
            seen.extend_from_slice(coded);
        }
        Ok(At::Cache(slot))
    }

    /// Add `e` as the newest entry, evicting the oldest to make room; an
    /// entry larger than the table empties it and is not added (§4.4).
    fn insert(&mut self, e: Entry) {
        let size = e.size();
        if size > self.capacity {
            self.evict(self.capacity + 1);
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front(e);
    }

    /// Evict the oldest entries until `room` more bytes fit (§4.3).
    fn evict(&mut self, room: usize) {
        while self.size + room > self.capacity {
            let Some(e) = self.table.pop_back() else {
                break;
            };
            self.size -= e.size();
            if self.spare.len() < SPARE_BUFFERS {
                self.spare.push(e.bytes);
            }
        }
    }
}
