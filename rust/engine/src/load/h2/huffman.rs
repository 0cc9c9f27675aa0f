//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B): encoding, and a
//! table-driven decoder that reads four bits per step (a finite-state
//! machine over the code tree's 256 inner nodes, as nghttp2 decodes), with
//! the padding rules of §5.2: at most 7 bits, all ones, and EOS never
//! decoded.

use std::sync::OnceLock;

/// A Huffman-coded string that is not valid (§5.2): EOS inside it, or
/// padding longer than 7 bits or not all ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HuffmanError;

/// The code of EOS (symbol 256): 30 one bits.
const EOS_CODE: u32 = 0x3fff_ffff;
const EOS_LENGTH: u8 = 30;

/// One step of the decoder: the node after four bits, the byte decoded on
/// the way (at most one: the shortest code has 5 bits) and flags.
#[derive(Clone, Copy, Default)]
struct Step {
    next: u8,
    byte: u8,
    flags: u8,
}

const EMIT: u8 = 1;
const FAIL: u8 = 2;

struct Decoder {
    /// `steps[node * 16 + nibble]`.
    steps: Vec<Step>,
    /// Nodes a string may end in: reached from the root by at most seven
    /// one bits (valid padding; the root is a clean end).
    accept: [bool; 256],
}

fn code(symbol: usize) -> (u32, u8) {
    if symbol == 256 {
        (EOS_CODE, EOS_LENGTH)
    } else {
        (CODES[symbol], LENGTHS[symbol])
    }
}

/// Child slots of the code tree: a leaf is `LEAF | symbol`.
const LEAF: u16 = 0x8000;

fn build() -> Decoder {
    let mut tree: Vec<[u16; 2]> = vec![[0, 0]];
    for symbol in 0..=256usize {
        let (bits, len) = code(symbol);
        let mut node = 0usize;
        for i in (0..len).rev() {
            let b = ((bits >> i) & 1) as usize;
            if i == 0 {
                tree[node][b] = LEAF | symbol as u16;
            } else {
                if tree[node][b] == 0 {
                    tree.push([0, 0]);
                    tree[node][b] = (tree.len() - 1) as u16;
                }
                node = tree[node][b] as usize;
            }
        }
    }
    debug_assert_eq!(tree.len(), 256);
    let mut steps = vec![Step::default(); tree.len() * 16];
    for (node, _) in tree.iter().enumerate() {
        for nibble in 0..16u8 {
            let mut at = node;
            let mut step = Step::default();
            for i in (0..4).rev() {
                let child = tree[at][usize::from((nibble >> i) & 1)];
                if child & LEAF == 0 {
                    at = usize::from(child);
                    continue;
                }
                let symbol = child & !LEAF;
                if symbol == 256 {
                    step.flags |= FAIL;
                    break;
                }
                step.flags |= EMIT;
                step.byte = symbol as u8;
                at = 0;
            }
            step.next = at as u8;
            steps[node * 16 + usize::from(nibble)] = step;
        }
    }
    let mut accept = [false; 256];
    let mut at = 0usize;
    accept[0] = true;
    for _ in 0..7 {
        at = usize::from(tree[at][1]);
        accept[at] = true;
    }
    Decoder { steps, accept }
}

fn decoder() -> &'static Decoder {
    static TABLE: OnceLock<Decoder> = OnceLock::new();
    TABLE.get_or_init(build)
}

/// Append the bytes Huffman-coded in `src` to `dst`.
///
/// # Errors
/// [`HuffmanError`] for EOS inside the string or bad padding; `dst` then
/// holds a partial result.
pub fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let d = decoder();
    dst.reserve(src.len() * 8 / 5 + 1);
    let mut node = 0u8;
    for &b in src {
        for nibble in [b >> 4, b & 15] {
            let step = d.steps[usize::from(node) * 16 + usize::from(nibble)];
            if step.flags & FAIL != 0 {
                return Err(HuffmanError);
            }
            if step.flags & EMIT != 0 {
                dst.push(step.byte);
            }
            node = step.next;
        }
    }
    if d.accept[usize::from(node)] {
        Ok(())
    } else {
        Err(HuffmanError)
    }
}

/// The length in bytes of `src` Huffman-coded.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| usize::from(LENGTHS[usize::from(b)]))
        .sum();
    bits.div_ceil(8)
}

/// Append `src` Huffman-coded to `dst`, padded with one bits (§5.2).
pub fn encode(src: &[u8], dst: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut n: u32 = 0;
    for &b in src {
        let (bits, len) = code(usize::from(b));
        acc = (acc << len) | u64::from(bits);
        n += u32::from(len);
        while n >= 8 {
            n -= 8;
            dst.push((acc >> n) as u8);
        }
        acc &= (1u64 << n) - 1;
    }
    if n > 0 {
        dst.push(((acc << (8 - n)) | ((1u64 << (8 - n)) - 1)) as u8);
    }
}

/// The code of each byte value, right-aligned (RFC 7541 Appendix B).
const CODES: [u32; 256] = [
    0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7, 0xfffffe8,
    0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec, 0xfffffed,
    0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3, 0xffffff4,
    0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb, 0x14, 0x3f8,
    0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa, 0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
    0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb,
    0x3fc, 0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, 0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0,
    0x1ffc, 0x3ffc, 0x22, 0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26, 0x27, 0x6, 0x74, 0x75,
    0x28, 0x29, 0x2a, 0x7, 0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7ffe,
    0x7fc, 0x3ffd, 0x1ffd, 0xffffffc, 0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4,
    0x3fffd5, 0x7fffd9, 0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb,
    0x7fffdf, 0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
    0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef, 0x3fffda,
    0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde, 0x7fffea, 0x3fffdd,
    0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec, 0x1fffe0, 0x1fffe1, 0x3fffe0,
    0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef, 0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4,
    0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1, 0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7,
    0x7ffff2, 0x3fffe8, 0x1ffffec, 0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf,
    0x3ffffe5, 0xfffff1, 0x1ffffed, 0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7,
    0x7ffffe2, 0xfffff2, 0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4,
    0x7ffffe5, 0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
    0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4, 0x3ffffeb,
    0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea, 0x7ffffeb,
    0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee,
];

/// The length in bits of each byte value's code (RFC 7541 Appendix B).
const LENGTHS: [u8; 256] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rfc_7541_examples_encode_and_decode() {
        // C.4.1 and C.6.1's literals.
        for (plain, coded) in [
            ("www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"),
            ("no-cache", "a8eb10649cbf"),
            ("custom-key", "25a849e95ba97d7f"),
            ("302", "6402"),
            ("private", "aec3771a4b"),
            (
                "Mon, 21 Oct 2013 20:13:21 GMT",
                "d07abe941054d444a8200595040b8166e082a62d1bff",
            ),
        ] {
            let mut out = Vec::new();
            encode(plain.as_bytes(), &mut out);
            assert_eq!(out, hex(coded), "{plain}");
            assert_eq!(encoded_len(plain.as_bytes()), out.len());
            let mut back = Vec::new();
            decode(&out, &mut back).unwrap();
            assert_eq!(back, plain.as_bytes());
        }
    }

    #[test]
    fn every_byte_value_round_trips() {
        for b in 0..=255u8 {
            for s in [vec![b], vec![b; 7], vec![b'a', b, b'z']] {
                let mut coded = Vec::new();
                encode(&s, &mut coded);
                let mut back = Vec::new();
                decode(&coded, &mut back).unwrap();
                assert_eq!(back, s, "{b}");
            }
        }
        let all: Vec<u8> = (0..=255).collect();
        let mut coded = Vec::new();
        encode(&all, &mut coded);
        let mut back = Vec::new();
        decode(&coded, &mut back).unwrap();
        assert_eq!(back, all);
    }

    #[test]
    fn bad_padding_and_eos_are_errors() {
        let mut out = Vec::new();
        // 'a' is 00011 (5 bits): padded with zeros instead of ones.
        assert_eq!(decode(&[0x18], &mut out), Err(HuffmanError));
        // Eight bits of padding (a whole byte of ones after a clean end).
        assert_eq!(decode(&[0x1f, 0xff], &mut out), Err(HuffmanError));
        // EOS itself (30 ones) inside the string.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xfc], &mut out),
            Err(HuffmanError)
        );
        // 'a' then seven ones: valid.
        out.clear();
        assert_eq!(decode(&[0x1f], &mut out), Ok(()));
        assert_eq!(out, b"a");
        assert_eq!(decode(&[], &mut out), Ok(()));
    }
}
