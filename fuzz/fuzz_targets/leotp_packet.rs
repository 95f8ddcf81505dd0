//! The LEOTP packet parser: never panics; whatever parses encodes back to the same bytes, and
//! a mid-node's in-place header rewrite keeps the packet valid.
#![no_main]

use leocc_leotp::packet::{self, Kind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = packet::parse(data) else { return };
    let mut out = Vec::new();
    p.encode(&mut out);
    assert_eq!(out, data, "a parsed packet encodes back to its bytes");
    if p.kind == Kind::Data {
        packet::set_hold(&mut out, 12345, 678);
        let q = packet::parse(&out).expect("rewritten header still parses");
        assert_eq!((q.hold_us, q.backlog, q.start, q.payload), (12345, 678, p.start, p.payload));
    }
});
