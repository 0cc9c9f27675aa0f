//! HPACK decoder and encoder against RFC 7541 Appendix C (C.2-C.6, with
//! and without Huffman), table eviction and size updates, and malformed
//! blocks (tests only).

use super::hpack::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode(d: &mut Decoder, block: &str) -> Result<Vec<(String, String)>, HpackError> {
    let mut out = Vec::new();
    d.decode(&hex(block), |n, v| {
        out.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        ));
    })?;
    Ok(out)
}

fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn c2_single_fields() {
    let mut d = Decoder::default();
    let got = decode(
        &mut d,
        "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
    );
    assert_eq!(got.unwrap(), fields(&[("custom-key", "custom-header")]));
    assert_eq!(d.table_size(), (55, 1));
    let mut d = Decoder::default();
    let got = decode(&mut d, "040c2f73616d706c652f70617468").unwrap();
    assert_eq!(got, fields(&[(":path", "/sample/path")]));
    let got = decode(&mut d, "100870617373776f726406736563726574").unwrap();
    assert_eq!(got, fields(&[("password", "secret")]));
    let got = decode(&mut d, "82").unwrap();
    assert_eq!(got, fields(&[(":method", "GET")]));
    assert_eq!(d.table_size(), (0, 0));
}

fn requests(blocks: [&str; 3]) {
    let mut d = Decoder::default();
    let base = [(":method", "GET"), (":scheme", "http"), (":path", "/")];
    let mut first = base.to_vec();
    first.push((":authority", "www.example.com"));
    assert_eq!(decode(&mut d, blocks[0]).unwrap(), fields(&first));
    assert_eq!(d.table_size(), (57, 1));
    first.push(("cache-control", "no-cache"));
    assert_eq!(decode(&mut d, blocks[1]).unwrap(), fields(&first));
    assert_eq!(d.table_size(), (110, 2));
    let third = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ];
    assert_eq!(decode(&mut d, blocks[2]).unwrap(), fields(&third));
    assert_eq!(d.table_size(), (164, 3));
    assert_eq!(
        d.entry(0),
        Some((b"custom-key".as_slice(), b"custom-value".as_slice()))
    );
}

#[test]
fn c3_requests_without_huffman() {
    requests([
        "828684410f7777772e6578616d706c652e636f6d",
        "828684be58086e6f2d6361636865",
        "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
    ]);
}

#[test]
fn c4_requests_with_huffman() {
    requests([
        "828684418cf1e3c2e5f23a6ba0ab90f4ff",
        "828684be5886a8eb10649cbf",
        "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
    ]);
}

/// C.5 and C.6: three responses through a 256-byte table, which evicts.
fn responses(blocks: [&str; 3]) {
    let mut d = Decoder::new(256);
    let mut r = vec![
        (":status", "302"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ];
    assert_eq!(decode(&mut d, blocks[0]).unwrap(), fields(&r));
    assert_eq!(d.table_size(), (222, 4));
    r[0].1 = "307";
    assert_eq!(decode(&mut d, blocks[1]).unwrap(), fields(&r));
    // ":status: 302" was evicted for ":status: 307".
    assert_eq!(d.table_size(), (222, 4));
    assert_eq!(d.entry(0), Some((b":status".as_slice(), b"307".as_slice())));
    assert_eq!(
        d.entry(3),
        Some((b"cache-control".as_slice(), b"private".as_slice()))
    );
    r[0].1 = "200";
    r[2].1 = "Mon, 21 Oct 2013 20:13:22 GMT";
    r.push(("content-encoding", "gzip"));
    r.push((
        "set-cookie",
        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    ));
    assert_eq!(decode(&mut d, blocks[2]).unwrap(), fields(&r));
    assert_eq!(d.table_size(), (215, 3));
    assert_eq!(d.entry(2).unwrap().0, b"date");
}

#[test]
fn c5_responses_without_huffman() {
    responses([
        "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
        "4803333037c1c0bf",
        "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
    ]);
}

#[test]
fn c6_responses_with_huffman() {
    responses([
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
        "4883640effc1c0bf",
        "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
    ]);
}

#[test]
fn the_huffman_cache_is_exact() {
    // The same position seen with a new coded value decodes the new value;
    // seen again, the cached one.
    let mut d = Decoder::default();
    for date in ["21", "22", "22", "21"] {
        let mut block = vec![0x0f, 0x12]; // date (33), literal without indexing
        let value = format!("Mon, 21 Oct 2013 20:13:{date} GMT");
        write_string(&mut block, value.as_bytes());
        assert!(block[2] & 0x80 != 0, "Huffman-coded");
        let mut got = Vec::new();
        d.decode(&block, |n, v| got.push((n.to_vec(), v.to_vec())))
            .unwrap();
        assert_eq!(got, vec![(b"date".to_vec(), value.into_bytes())]);
    }
}

#[test]
fn size_updates_evict_and_are_bounded() {
    let mut d = Decoder::default();
    decode(
        &mut d,
        "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
    )
    .unwrap();
    decode(&mut d, "4003616263036465664003676869036a6b6c").unwrap();
    assert_eq!(d.table_size(), (55 + 38 + 38, 3));
    // A size update to 50 keeps the newest entry only; to 0 empties it.
    let mut block = Vec::new();
    write_integer(&mut block, 0x20, 5, 50);
    decode(
        &mut d,
        &block.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    )
    .unwrap();
    assert_eq!(d.table_size(), (38, 1));
    assert_eq!(d.entry(0).unwrap().0, b"ghi");
    assert_eq!(decode(&mut d, "20").unwrap(), vec![]);
    assert_eq!(d.table_size(), (0, 0));
    // Indexing into a zero-size table adds nothing.
    decode(&mut d, "4003616263036465664003676869036a6b6c").unwrap();
    assert_eq!(d.table_size(), (0, 0));
    // Back up to 4096 (the maximum), then past it: an error.
    decode(&mut d, "3fe11f").unwrap();
    assert!(decode(&mut d, "3fe21f").is_err());
    // An update after a field.
    assert!(decode(&mut d, "8220").is_err());
    // An entry larger than the table empties it.
    let mut d = Decoder::new(64);
    decode(&mut d, "4003616263036465664003676869036a6b6c").unwrap();
    assert_eq!(d.table_size(), (38, 1));
    let mut block = vec![0x40];
    write_string(&mut block, b"n");
    write_string(&mut block, &[b'x'; 40]);
    d.decode(&block, |_, _| {}).unwrap();
    assert_eq!(d.table_size(), (0, 0));
}

#[test]
fn malformed_blocks_are_errors_not_panics() {
    for bad in [
        "80",             // index 0
        "be",             // index 62 with an empty table
        "ff80808080",     // an integer with five continuation bytes
        "ff",             // a truncated integer
        "0005616263",     // a name string past the block
        "0003616263",     // a value missing
        "00810001",       // Huffman name with zero padding ("\x00" -> bad)
        "0f1284ffffffff", // a value holding EOS
        "40",             // a literal with no name
        "7f",             // an index past the tables, truncated
    ] {
        let mut d = Decoder::default();
        assert!(decode(&mut d, bad).is_err(), "{bad}");
    }
    // Every prefix of a valid block either decodes or fails cleanly.
    let block = hex("88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007");
    for n in 0..block.len() {
        let _ = Decoder::default().decode(&block[..n], |_, _| {});
    }
}

#[test]
fn integers_round_trip() {
    for prefix in [4, 5, 6, 7] {
        for v in [
            0,
            1,
            14,
            15,
            30,
            31,
            62,
            63,
            126,
            127,
            128,
            1337,
            4096,
            1 << 20,
        ] {
            let mut out = Vec::new();
            write_integer(&mut out, 0, prefix, v);
            let mut pos = 0;
            assert_eq!(read_integer(&out, &mut pos, prefix), Ok(v));
            assert_eq!(pos, out.len());
        }
    }
    // C.1.2: 1337 with a 5-bit prefix.
    let mut out = Vec::new();
    write_integer(&mut out, 0, 5, 1337);
    assert_eq!(out, [0x1f, 0x9a, 0x0a]);
}

#[test]
fn the_request_block_decodes_to_the_request() {
    let headers = vec![
        ("user-agent".to_string(), "perflab".to_string()),
        ("x-token".to_string(), "abc".to_string()),
        ("content-length".to_string(), "3".to_string()),
    ];
    let block = encode_request("POST", "https", "example.test:8443", "/a?b=1", &headers);
    let mut got = Vec::new();
    Decoder::default()
        .decode(&block, |n, v| {
            got.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ))
        })
        .unwrap();
    let mut want = fields(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "example.test:8443"),
        (":path", "/a?b=1"),
    ]);
    want.extend(headers);
    assert_eq!(got, want);
    // GET / over http is three static-table indices and the authority.
    let block = encode_request("GET", "http", "h", "/", &[]);
    assert_eq!(block, [0x82, 0x86, 0x01, 0x01, b'h', 0x84]);
}

/// Everything a decoder holds that decoding depends on.
fn table(d: &Decoder) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..d.table_size().1)
        .map(|i| {
            let (n, v) = d.entry(i).unwrap();
            (n.to_vec(), v.to_vec())
        })
        .collect()
}

#[test]
fn replaying_a_repeated_block_is_exact() {
    // nginx-like responses (":status: 200" indexed, then literals with
    // incremental indexing), the date changing every 7th block; now and
    // then a reference to the dynamic table or a size update, through
    // tables of several sizes. The replaying decoder must give the same
    // fields, errors and table as one that decodes every block in full.
    for capacity in [0usize, 60, 100, 200, 256, 1000, 4096] {
        let mut fast = Decoder::new(4096);
        let mut full = Decoder::new(4096).without_replay();
        for i in 0..300 {
            let mut b = Vec::new();
            if i == 0 || i % 53 == 7 {
                write_integer(
                    &mut b,
                    0x20,
                    5,
                    if i == 0 { capacity } else { capacity / 2 },
                );
            }
            b.push(0x88);
            b.push(0x40 | 54);
            write_string(&mut b, b"nginx/1.22.1");
            b.push(0x40 | 33);
            write_string(
                &mut b,
                format!("Mon, 21 Oct 2013 20:13:{:02} GMT", i / 7).as_bytes(),
            );
            b.push(0x40 | 31);
            write_string(&mut b, b"text/plain");
            if i % 37 == 5 {
                b.push(0xbe);
            }
            let (mut a, mut z) = (Vec::new(), Vec::new());
            let ra = fast.decode(&b, |n, v| a.push((n.to_vec(), v.to_vec())));
            let rz = full.decode(&b, |n, v| z.push((n.to_vec(), v.to_vec())));
            assert_eq!((ra, &a), (rz, &z), "capacity {capacity}, block {i}");
            assert_eq!(table(&fast), table(&full), "capacity {capacity}, block {i}");
            assert_eq!(fast.table_size(), full.table_size());
        }
        // Tables up to 1000 bytes fill within the 7 blocks of a date (169
        // bytes a block); 4096 does not.
        let replayed = fast.last.replayed;
        assert_eq!(
            replayed > 50,
            capacity <= 1000,
            "capacity {capacity}: {replayed}"
        );
    }
}
