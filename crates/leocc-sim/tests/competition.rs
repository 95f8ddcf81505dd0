//! LeoCC's switch to its own RTT range when another flow's queue stands (core/leocc.c,
//! check_standing_queue): it must serve a flow that competes with BBR and stay out of the way
//! of a flow that is alone. Over generated Starlink uplinks (bursty: the flow's own burst phase
//! lifts its RTT above the probe's range), against the same runs with the switch off.

use std::sync::Arc;

use leocc_sim::{parse_flows, run, QueueLimit, Scenario};
use leocc_trace::gen::{generate, Profile};
use leocc_trace::Dir;

const S: u64 = 1_000_000;
/// Trace length: two reconfiguration intervals and a half.
const SECS: u64 = 40;
const SWITCH_OFF: &str = "competing_cycles=0";

fn scenario(seed: u64, flows: &str, switch_off: bool) -> Scenario {
    let trace = generate(Profile::StarlinkUp, SECS * 1000, seed, "competition test").unwrap();
    let mut sc = Scenario::new(Arc::new(trace), "starlink-up", "leocc", SECS * S);
    sc.data_dir = Dir::Up;
    sc.flows = parse_flows(flows, "leocc", SECS * S).unwrap();
    sc.queue = "150ms".parse::<QueueLimit>().unwrap();
    if switch_off {
        sc.cc_params.push(("leocc".into(), SWITCH_OFF.into()));
    }
    sc
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn the_standing_queue_switch_serves_competition_and_spares_a_lone_flow() {
    let seeds = 11..21;
    let p95 = |off: bool| -> Vec<f64> { seeds.clone().map(|s| run(&scenario(s, "leocc", off)).unwrap().rtt_p95_ms).collect() };
    let share = |off: bool| -> Vec<f64> {
        seeds
            .clone()
            .map(|s| {
                let r = run(&scenario(s, "leocc,bbr", off)).unwrap();
                r.flows[0].throughput_mbps / (r.flows[0].throughput_mbps + r.flows[1].throughput_mbps)
            })
            .collect()
    };
    // Alone: the switch may fire on a burst, but must not keep the flow on its own range
    // (before the drain test: 1.74 x the p95 RTT of the runs without the switch).
    let (on, off) = (mean(&p95(false)), mean(&p95(true)));
    assert!(on <= 1.5 * off, "lone flow: mean p95 RTT {on:.1} ms with the switch, {off:.1} ms without");
    // Against BBR: without the switch LeoCC reads BBR's queue as congestion and yields.
    let (on, off) = (mean(&share(false)), mean(&share(true)));
    assert!(on >= 1.4 * off, "against BBR: LeoCC's share {on:.2} with the switch, {off:.2} without");
}
