//! Fairness of LeoCC (core/leocc.c; docs/algorithm.md, "Several flows") over the bundled
//! Starlink traces: LeoCC flows joining 10 s apart end up with near-equal shares, and LeoCC
//! gets at least half an equal share against BBR. Jain varies a lot from seed to seed, so the
//! three-flow tests judge the mean over five seeds. Before the changes described there, the
//! same runs gave a mean Jain of 0.81 (down) and 0.77 (up), and LeoCC 0.16-1.04 (down) and
//! 0.08-0.14 (up) of an equal share against BBR.

use std::path::Path;
use std::sync::Arc;

use leocc_sim::{parse_flows, run, RunResult, Scenario};
use leocc_base::metrics::mean;
use leocc_trace::Trace;

const S: u64 = 1_000_000;
const STAGGERED: &str = "leocc@0-60,leocc@10-60,leocc@20-60";

/// Runs `flows` for 60 s over traces/`name`.trace with `seed`; None when it is absent.
fn bundled(name: &str, flows: &str, seed: u64) -> Option<RunResult> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../traces/{name}.trace"));
    if !path.exists() {
        println!("skipping: no bundled trace at {}", path.display());
        return None;
    }
    let trace = Arc::new(Trace::load(&path).unwrap_or_else(|e| panic!("{e}")));
    let mut sc = Scenario::new(trace.clone(), name, "leocc", 60 * S);
    sc.data_dir = trace.meta.direction.primary();
    sc.seed = seed;
    sc.flows = parse_flows(flows, "", 60 * S).unwrap();
    Some(run(&sc).unwrap())
}

/// Jain's index of three staggered LeoCC flows for seeds 1-10 (None when the trace is absent).
/// Ten, not five: a single seed's Jain swings between 0.78 and 1.0 (which flow leaves Startup
/// or an adaptation first decides the shares for a while), so five seeds' mean moved by 0.05
/// with changes that left the ten seeds' mean where it was.
fn staggered_jains(name: &str) -> Option<Vec<f64>> {
    let mut jains = Vec::new();
    for seed in 1..=10 {
        let r = bundled(name, STAGGERED, seed)?;
        assert!(r.utilization >= 0.9, "{name} seed {seed}: utilisation {:.3}", r.utilization);
        jains.push(r.jain);
    }
    Some(jains)
}

#[test]
fn staggered_leocc_flows_share_the_starlink_downlink() {
    let Some(j) = staggered_jains("starlink-down-60s") else { return };
    // Seeds 1-10 give a mean of 0.914 and a worst seed of 0.855 with the cycle grid of
    // session 32 (core `grid_ticked`) and the simulator's TCP of that session (one recovery
    // while a segment is still lost, the send buffer per skb); 0.964 and 0.901 with that TCP
    // and no grid; 0.904 and 0.684 in session 31. Ten seeds of one trace move by +-0.05 with
    // any change to the model, so the grid was judged on bench robust's drawn paths (three
    // staggered flows' Jain 0.76 -> 0.83 at the worst path, 0.77 -> 0.83 at the worst 10 %,
    // docs/algorithm.md). The target (issue 27) is 0.98.
    let m = mean(&j).unwrap();
    assert!(m >= 0.90, "mean Jain {m:.3} < 0.90 over seeds 1-10: {j:.3?}");
    assert!(j.iter().all(|&x| x >= 0.75), "a seed below Jain 0.75: {j:.3?}");
}

#[test]
fn staggered_leocc_flows_share_the_starlink_uplink() {
    // The target is 0.9; 0.85 is what the uplink's bursty grants allow today (docs).
    let Some(j) = staggered_jains("starlink-up-60s") else { return };
    let m = mean(&j).unwrap();
    assert!(m >= 0.85, "mean Jain {m:.3} < 0.85 over seeds 1-10: {j:.3?}");
}

#[test]
fn leocc_gets_at_least_half_an_equal_share_against_bbr() {
    for name in ["starlink-down-60s", "starlink-up-60s"] {
        for seed in 1..=3 {
            let Some(r) = bundled(name, "leocc@0-60,bbr@0-60", seed) else { return };
            let (leocc, bbr) = (r.flows[0].throughput_mbps, r.flows[1].throughput_mbps);
            let equal = (leocc + bbr) / 2.0;
            assert!(leocc >= 0.5 * equal, "{name} seed {seed}: leocc {leocc:.1} vs bbr {bbr:.1} Mbit/s");
        }
    }
}

/// Issue 27: after a buffer-filling flow leaves, LeoCC returns to its delay mode: its queue is
/// short again within 5 s.
#[test]
fn leocc_returns_to_its_delay_mode_after_the_competitor_leaves() {
    let trace = Arc::new(leocc_sim::constant_trace(40.0, 20_000, 60 * S, &[]));
    let mut sc = Scenario::new(trace, "constant-40", "leocc", 40 * S);
    sc.queue = "150ms".parse().unwrap();
    sc.timeseries = true;
    sc.flows = parse_flows("leocc@0-40,cubic@0-20", "", 40 * S).unwrap();
    let r = run(&sc).unwrap();
    let rtts = |from: f64| -> Vec<f64> {
        r.timeseries.iter().filter(|row| row.flow == 0 && row.t_s >= from && row.rtt_ms > 0.0).map(|row| row.rtt_ms).collect()
    };
    let base = rtts(0.0).into_iter().fold(f64::INFINITY, f64::min);
    let late = rtts(25.0);
    let mean_q = late.iter().sum::<f64>() / late.len() as f64 - base;
    println!("LeoCC's mean queueing delay 25-40 s, after Cubic left at 20 s: {mean_q:.1} ms");
    assert!(mean_q < 10.0, "mean queueing delay {mean_q:.1} ms after the competitor left");
}
