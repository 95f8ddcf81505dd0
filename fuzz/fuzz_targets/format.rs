//! Our v1 format: parsing never panics; whatever parses renders back to the same trace, and
//! the link model answers queries on it without panicking.
#![no_main]

use std::path::Path;

use leocc_trace::{format, Dir};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = format::parse(Path::new("fuzz"), data) else { return };
    let text = format::render(&t);
    let back = format::parse(Path::new("fuzz"), text.as_bytes()).expect("rendered trace parses");
    assert_eq!(back, t);
    for d in [Dir::Up, Dir::Down] {
        let l = t.link(d);
        let p = l.period_us();
        for at in [0, p / 3, p, p + 1, 3 * p + 7] {
            let _ = l.next_opportunity(at);
            let _ = l.opportunities(at, 50_000).take(10_000).count();
            let _ = (l.delay_us(at), l.loss_prob(at), l.in_outage(at));
        }
        let _ = l.mean_capacity_bps(0, 2 * p);
    }
    if let Some(l) = t.terrestrial() {
        let _ = l.next_opportunity(l.period_us());
    }
});
