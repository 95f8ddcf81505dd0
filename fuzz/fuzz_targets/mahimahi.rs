//! mahimahi capacity files: parsing never panics; what parses writes back and re-parses
//! to the same schedule.
#![no_main]

use std::path::Path;

use leocc_trace::mahimahi;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(c) = mahimahi::parse_capacity(Path::new("fuzz"), data) else { return };
    let text = mahimahi::render_capacity(&c).expect("a parsed mahimahi schedule renders");
    let back = mahimahi::parse_capacity(Path::new("fuzz"), text.as_bytes()).expect("rendered file parses");
    assert_eq!(back, c);
});
