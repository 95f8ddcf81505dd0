//! The LEOTP packet parser: never panics; whatever parses encodes back to the same bytes, and
//! a mid-node's in-place header rewrite keeps the packet valid. Version 2's token and error
//! packets: a token packet carries exactly a token, an error exactly one known code, and an
//! interest nothing or a token.
#![no_main]

use leocc_leotp::packet::{self, Kind, TOKEN_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = packet::parse(data) else { return };
    let mut out = Vec::new();
    p.encode(&mut out);
    assert_eq!(out, data, "a parsed packet encodes back to its bytes");
    assert_eq!(p.wire_len(), data.len());
    match p.kind {
        Kind::Token => assert_eq!(p.payload.len(), TOKEN_LEN),
        Kind::Error => assert!(p.error_code().is_some()),
        Kind::Interest => assert!(p.payload.is_empty() || p.payload.len() == TOKEN_LEN),
        Kind::Void => assert!(p.payload.is_empty()),
        Kind::Data => {}
    }
    if p.kind == Kind::Data {
        packet::set_hold(&mut out, 12345, 678);
        let q = packet::parse(&out).expect("rewritten header still parses");
        assert_eq!((q.hold_us, q.backlog, q.start, q.payload), (12345, 678, p.start, p.payload));
    }
});
