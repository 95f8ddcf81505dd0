//! Speed of the link-model queries the engines make in their hot loops, on a bundled trace.
//! `cargo run --release -p leocc-trace --example link_bench [TRACE]`

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use leocc_trace::Trace;

/// Queries per measurement.
const N: u64 = 2_000_000;
/// Query times advance by this many µs (a 1500-byte packet at ~1 Gbit/s).
const STEP_US: u64 = 12;

fn time(name: &str, mut f: impl FnMut(u64) -> u64) {
    let start = Instant::now();
    let mut acc = 0u64;
    for i in 0..N {
        acc = acc.wrapping_add(f(i * STEP_US));
    }
    black_box(acc);
    println!("{name:<28} {:>7.1} ns/query", start.elapsed().as_nanos() as f64 / N as f64);
}

fn main() {
    let path = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces/starlink-down-60s.trace")
    });
    let t0 = Instant::now();
    let trace = Trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
    println!("load {}: {:.1} ms", path.display(), t0.elapsed().as_secs_f64() * 1e3);
    let l = trace.link(trace.meta.direction.primary());
    time("next_opportunity", |t| l.next_opportunity(t).unwrap_or(0));
    time("opportunities(t, 1 ms).count", |t| l.opportunities(t, 1000).count() as u64);
    time("delay_us", |t| l.delay_us(t));
    time("in_outage", |t| l.in_outage(t) as u64);
    time("loss_prob", |t| l.loss_prob(t).to_bits());
    time("mean_capacity_bps(t, +100ms)", |t| l.mean_capacity_bps(t, t + 100_000) as u64);
}
