//! Fairness of LeoCC (core/leocc.c; docs/algorithm.md, "Several flows") over the bundled
//! Starlink downlink trace: three LeoCC flows joining 10 s apart end up with near-equal
//! shares, and LeoCC holds its own against BBR. Before the fixes described there, the same
//! runs gave Jain 0.61 / 0.81 / 0.83 and LeoCC 0.40 / 0.16 / 1.04 of an equal share.

use std::path::Path;
use std::sync::Arc;

use leocc_sim::{parse_flows, run, RunResult, Scenario};
use leocc_trace::Trace;

const S: u64 = 1_000_000;

/// Runs `flows` over traces/starlink-down-60s.trace with `seed`; None when it is absent.
fn starlink_down(flows: &str, seed: u64) -> Option<RunResult> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/starlink-down-60s.trace");
    if !path.exists() {
        println!("skipping: no bundled trace at {}", path.display());
        return None;
    }
    let trace = Arc::new(Trace::load(&path).unwrap_or_else(|e| panic!("{e}")));
    let mut sc = Scenario::new(trace.clone(), "starlink-down-60s", "leocc", 60 * S);
    sc.data_dir = trace.meta.direction.primary();
    sc.seed = seed;
    sc.flows = parse_flows(flows, "", 60 * S).unwrap();
    Some(run(&sc).unwrap())
}

fn per_flow(r: &RunResult) -> Vec<f64> {
    r.flows.iter().map(|f| (f.throughput_mbps * 10.0).round() / 10.0).collect()
}

#[test]
fn three_staggered_leocc_flows_share_the_starlink_downlink() {
    for seed in 1..=3 {
        let Some(r) = starlink_down("leocc@0-60,leocc@10-60,leocc@20-60", seed) else { return };
        assert!(r.jain >= 0.9, "seed {seed}: Jain {:.3} < 0.9, Mbit/s {:?}", r.jain, per_flow(&r));
        assert!(r.utilization >= 0.9, "seed {seed}: utilisation {:.3}", r.utilization);
    }
}

#[test]
fn leocc_gets_at_least_half_an_equal_share_against_bbr() {
    for seed in 1..=3 {
        let Some(r) = starlink_down("leocc@0-60,bbr@0-60", seed) else { return };
        let (leocc, bbr) = (r.flows[0].throughput_mbps, r.flows[1].throughput_mbps);
        let equal = (leocc + bbr) / 2.0;
        assert!(leocc >= 0.5 * equal, "seed {seed}: leocc {leocc:.1} vs bbr {bbr:.1} Mbit/s");
    }
}
