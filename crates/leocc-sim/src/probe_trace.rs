//! The probe stream alone over a trace, scored against the trace's truth (`leocc probe
//! simulate`): no TCP flow. It is the stream the simulator's runs feed their detector
//! ([`crate::detector::Detector`]: the same probes held through outages, stopped at a drawn
//! path's PoP, with the noise model of the run's choice, clean by default here), driven
//! alone over one loop of the trace, so that what this command measures is what `leocc sim`'s
//! LeoCC hears. There is one simulated probe stream, and the daemon's one detector on it.
//!
//! The truth is the trace's reconfiguration times when it has them, otherwise the
//! reconfigurations the trace crate detects from its outages and level steps. Detection delay
//! is measured from the true reconfiguration (outage start) to the reply that revealed it.
//! This checks the detection logic against realistic outage lengths and delay spikes, not the
//! socket code (the netns integration test and `leocc probe emulate` cover that).

use leocc_probe::detect::DetectorConfig;
use leocc_probe::replay::Score;
use leocc_trace::Trace;
use serde::Serialize;

use crate::detector::{truth_of, Detector, ProbeNoiseModel};
#[cfg(test)]
use crate::detector::DEFAULT_WARMUP_US;

/// Configuration of a simulated run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Probe interval, µs.
    pub interval_us: u64,
    /// Seed of the random-loss draws.
    pub seed: u64,
    /// The detector under test.
    pub detector: DetectorConfig,
    /// The noise on the probe stream.
    pub noise: ProbeNoiseModel,
    /// How long the detector has been probing before the loop that is scored (rounded up to
    /// whole loops of the trace), as a daemon that runs all the time; 0: it starts cold.
    pub warmup_us: u64,
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

/// Runs the probe stream over one loop of `trace`, after the warm-up, and scores the
/// detections of that loop.
pub fn simulate(trace: &Trace, cfg: &SimConfig) -> SimResult {
    let end = trace.duration_us();
    let mut d = Detector::on_trace(trace, cfg.interval_us, cfg.detector.clone(), cfg.noise, cfg.seed)
        .warm_up(Detector::whole_loops(cfg.warmup_us, trace), 0);
    // Each send after the replies that arrived before it; then the replies still on their way
    // (held by an outage at the end of the loop, at most MAX_HOLD_US).
    let mut t = 0;
    while t < end {
        d.advance(t);
        t = d.send_probe(t).1;
    }
    while let Some(at) = d.next_arrival_us() {
        d.advance(at);
    }
    let (truth, truth_source) = truth_of(trace);
    let truth: Vec<u64> = truth.into_iter().filter(|&x| x < end).collect();
    SimResult { probes: d.probes_sent, replies: d.replies, truth_source, score: d.score(&truth) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leocc_trace::gen::{generate, Profile};

    #[test]
    fn generated_starlink_traces_are_detected() {
        let cfg = SimConfig { interval_us: 10_000, seed: 1, detector: DetectorConfig::default(), noise: ProbeNoiseModel::None, warmup_us: DEFAULT_WARMUP_US };
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
        let cfg = SimConfig { interval_us: 100_000, seed: 1, detector: DetectorConfig::default(), noise: ProbeNoiseModel::None, warmup_us: DEFAULT_WARMUP_US };
        let used = leocc_base::alloc_count::peak_during(|| simulate(&trace, &cfg));
        assert!(used < 8 << 20, "peak {used} bytes");
    }

    #[test]
    fn a_trace_without_reconfigurations_gives_no_events() {
        let trace = generate(Profile::Fiber, 20_000, 1, "test").unwrap();
        let cfg = SimConfig { interval_us: 10_000, seed: 1, detector: DetectorConfig::default(), noise: ProbeNoiseModel::None, warmup_us: DEFAULT_WARMUP_US };
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
        let r = simulate(&trace, &SimConfig { interval_us: 10_000, seed: 1, detector: DetectorConfig::default(), noise: ProbeNoiseModel::None, warmup_us: DEFAULT_WARMUP_US });
        assert_eq!(r.score.truth, 8, "{r:?}");
        assert_eq!((r.score.precision, r.score.recall), (1.0, 1.0), "{r:?}");
    }
}
