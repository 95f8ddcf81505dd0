//! LeoReplayer delay files: parsing never panics; what parses writes back and re-parses to
//! the same series.
#![no_main]

use std::path::Path;

use leocc_trace::mahimahi;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(d) = mahimahi::parse_delay(Path::new("fuzz"), data) else { return };
    let text = mahimahi::render_delay(&d, 0).expect("a parsed 10 ms series renders");
    let back = mahimahi::parse_delay(Path::new("fuzz"), text.as_bytes()).expect("rendered file parses");
    assert_eq!(back, d);
});
