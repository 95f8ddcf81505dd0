//! The probe stream alone over a trace's link model, scored against the trace's truth (`leocc
//! probe simulate`): no TCP flow and no probe noise. [`crate::detector`] runs the same
//! detector inside a full simulation, with the noise fitted to real recordings.
//!
//! The path host → satellite → PoP is one trace: an echo sent at t crosses the uplink (lost if
//! the uplink is in an outage at t, or by the trace's random loss), reaches the PoP after the
//! uplink's one-way delay, and its reply crosses the downlink the same way. Replies are fed to
//! the real detector (with the sends, so the self-stall check runs as in the daemon), and the
//! detections are scored against the trace's ground truth: its reconfiguration times when it
//! has them, otherwise the reconfigurations the trace crate detects from its outages and level
//! steps. Detection delay is measured from the true reconfiguration (outage start) to the
//! reply that revealed it.
//!
//! This is the evaluation the emulator run also performs, minus the kernel: it checks the
//! detection logic and the threshold against realistic outage lengths and delay spikes, not
//! the socket code (the netns integration test covers that).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use leocc_probe::detect::{Detector, DetectorConfig, Output};
use leocc_probe::replay::{score, Detection, Score, MATCH_TOLERANCE_US};
use leocc_trace::{Dir, Trace};
use serde::Serialize;

/// Configuration of a simulated run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Probe interval, µs.
    pub interval_us: u64,
    /// Seed of the random-loss draws.
    pub seed: u64,
    /// The detector under test.
    pub detector: DetectorConfig,
}

/// Outcome of a simulated run.
#[derive(Clone, Debug, Serialize)]
pub struct SimResult {
    /// Probes sent.
    pub probes: u64,
    /// Replies received.
    pub replies: u64,
    /// Where the truth came from ("trace" or "detected from the trace").
    pub truth_source: &'static str,
    /// The score (times in µs of trace time, but stored as ns-free integers: µs).
    pub score: Score,
}

/// Ground truth of a trace, µs, and where it came from.
pub fn truth_of(trace: &Trace) -> (Vec<u64>, &'static str) {
    if !trace.reconfigurations_us().is_empty() {
        return (trace.reconfigurations_us().to_vec(), "trace");
    }
    let dir = match trace.meta.direction {
        leocc_trace::Measured::Up => Dir::Up,
        _ => Dir::Down,
    };
    (leocc_trace::stats::detect_reconfigurations(trace, dir), "detected from the trace")
}

/// splitmix64 step, for reproducible loss draws.
fn next_rand(s: &mut u64) -> f64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as f64 / u64::MAX as f64
}

/// Runs the probe stream over one loop of `trace` and scores the detections.
pub fn simulate(trace: &Trace, cfg: &SimConfig) -> SimResult {
    let up = trace.link(Dir::Up);
    let down = trace.link(Dir::Down);
    let end = trace.duration_us();
    let mut rng = cfg.seed;
    let mut d = Detector::new(cfg.detector.clone());
    let mut dets = Vec::new();
    let (mut probes, mut replies) = (0, 0);
    // Sends and replies are fed in time order, sends first at equal times (a reply cannot
    // precede its own send anyway). Replies in flight wait in a min-heap of (arrival, rtt):
    // memory is bounded by the replies in flight, not by the trace's length (a 7-day trace at
    // 10 ms is 60 M probes).
    // (arrival, send number, rtt): the send number keeps equal arrivals in send order.
    let mut in_flight: BinaryHeap<Reverse<(u64, u64, u64)>> = BinaryHeap::new();
    let mut events = 0usize;
    let feed_reply = |d: &mut Detector, dets: &mut Vec<Detection>, at: u64, rtt: u64, i: usize| {
        let ns = at * 1000;
        let reply = leocc_probe::detect::Reply { seq: i as u16, recv_mono_ns: ns, recv_wall_ns: ns as i64, rtt_ns: Some(rtt * 1000) };
        for o in d.on_reply(reply) {
            if let Output::Reconfig(e) = o {
                dets.push(Detection { start_ns: (e.start_mono_ns / 1000) as i64, detect_ns: (e.detect_mono_ns / 1000) as i64 });
            }
        }
    };
    let mut t = 0;
    while t < end {
        while let Some(&Reverse((at, _, rtt))) = in_flight.peek().filter(|r| r.0 .0 < t) {
            in_flight.pop();
            feed_reply(&mut d, &mut dets, at, rtt, events);
            (replies, events) = (replies + 1, events + 1);
        }
        d.on_send(t * 1000);
        (probes, events) = (probes + 1, events + 1);
        let lost_up = up.in_outage(t) || next_rand(&mut rng) < up.loss_prob(t);
        if !lost_up {
            let at_pop = t + up.delay_us(t);
            let lost_down = down.in_outage(at_pop) || next_rand(&mut rng) < down.loss_prob(at_pop);
            if !lost_down {
                let back = at_pop + down.delay_us(at_pop);
                in_flight.push(Reverse((back, probes, back - t)));
            }
        }
        t += cfg.interval_us;
    }
    while let Some(Reverse((at, _, rtt))) = in_flight.pop() {
        feed_reply(&mut d, &mut dets, at, rtt, events);
        (replies, events) = (replies + 1, events + 1);
    }
    let (truth, truth_source) = truth_of(trace);
    let truth: Vec<i64> = truth.iter().filter(|&&x| x < end).map(|&x| x as i64).collect();
    SimResult { probes, replies, truth_source, score: score(&dets, &truth, MATCH_TOLERANCE_US) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leocc_trace::gen::{generate, Profile};

    #[test]
    fn generated_starlink_traces_are_detected() {
        let cfg = SimConfig { interval_us: 10_000, seed: 1, detector: DetectorConfig::default() };
        for seed in 1..=3 {
            let trace = generate(Profile::StarlinkDown, 60_000, seed, "test").unwrap();
            let r = simulate(&trace, &cfg);
            assert!(r.score.truth >= 3, "a minute holds at least three 15 s slots: {r:?}");
            assert_eq!(r.score.recall, 1.0, "seed {seed}: missed {:?}", r.score.missed);
            assert_eq!(r.score.precision, 1.0, "seed {seed}: false {:?}", r.score.false_positives);
            // Detected after the outage ends: 45-130 ms outage plus the path delay.
            assert!(r.score.delays_ns.iter().all(|&d| d > 40_000 && d < 400_000), "{:?}", r.score.delays_ns);
        }
    }

    #[global_allocator]
    static ALLOC: leocc_base::alloc_count::Counting = leocc_base::alloc_count::Counting;

    /// `1\n604799999\n` (11 bytes, 7 days): the probe stream is fed as it is generated, so
    /// memory stays small (the whole timeline was 1.5 GB at 10 ms).
    #[test]
    fn week_long_sparse_trace_runs_in_bounded_memory() {
        let trace = leocc_trace::mahimahi::trace_from_capacity_file(std::path::Path::new("t"), b"1\n604799999\n").unwrap();
        let cfg = SimConfig { interval_us: 100_000, seed: 1, detector: DetectorConfig::default() };
        let used = leocc_base::alloc_count::peak_during(|| simulate(&trace, &cfg));
        assert!(used < 8 << 20, "peak {used} bytes");
    }

    #[test]
    fn a_trace_without_reconfigurations_gives_no_events() {
        let trace = generate(Profile::Fiber, 20_000, 1, "test").unwrap();
        let cfg = SimConfig { interval_us: 10_000, seed: 1, detector: DetectorConfig::default() };
        let r = simulate(&trace, &cfg);
        assert_eq!(r.score.truth, 0);
        assert_eq!(r.score.detections, 0);
    }

    #[test]
    /// The real 120 s Starlink uplink in ../shared/traces/real (skips when absent).
    fn example_uplink_simulation_detects_all_eight() {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/real/leocc-example-uplink");
            if !p.exists() {
                println!("SKIP: {} is absent (the real traces live in ../shared/traces/real)", p.display());
                return;
            }
        let trace = leocc_trace::Trace::load(&p).unwrap();
        let r = simulate(&trace, &SimConfig { interval_us: 10_000, seed: 1, detector: DetectorConfig::default() });
        assert_eq!(r.score.truth, 8, "{r:?}");
        assert_eq!((r.score.precision, r.score.recall), (1.0, 1.0), "{r:?}");
    }
}
