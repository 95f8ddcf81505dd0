//! The detector on the real measurements in ../shared/traces/real (skips when absent).
//!
//! ping-isl: 154 s of `ping -D` over inter-satellite links, ~16 ms spacing, with the Starlink
//! slots at seconds 12/27/42/57 as the truth; the bent-pipe CSV recordings likewise. (The
//! probe stream over the real uplink trace is crates/leocc-sim's `probe_trace` test.)

use std::path::PathBuf;

use leocc_probe::detect::{DetectorConfig, Kind, Scoring};
use leocc_probe::input::load;
use leocc_probe::replay::{load_ping_d, replay_report};
use leocc_probe::schedule::{Schedule, DEFAULT_TOLERANCE_NS};

fn real(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/real").join(rel);
    if p.exists() {
        Some(p)
    } else {
        println!("SKIP: {} is absent (the real traces live in ../shared/traces/real)", p.display());
        None
    }
}

#[test]
fn ping_isl_replay_finds_every_slot() {
    let Some(p) = real("ping-isl/ping-example-isl.txt") else { return };
    let lines = load_ping_d(&p).unwrap();
    let sched = Schedule::starlink(DEFAULT_TOLERANCE_NS);
    let plain = DetectorConfig { scoring: Scoring::Threshold, ..DetectorConfig::default() };
    let r = replay_report(&lines, plain.clone(), &sched, None);
    assert_eq!(r.replies, 10_000);
    assert_eq!(r.score.truth, 10, "the 154 s span holds ten whole slot windows");
    assert_eq!(r.score.recall, 1.0, "missed slots: {:?}", r.score.missed);
    // Over ISLs the reconfiguration outage is long (~0.7 s); the start estimate precedes the
    // slot second by a few tens of ms.
    let periodic: Vec<_> = r.events.iter().filter(|e| e.kind == Kind::Periodic).collect();
    assert_eq!(periodic.len(), 10);
    assert!(periodic.iter().all(|e| e.ri_ns > 600_000_000), "{periodic:?}");
    assert!(r.score.start_offsets_ns.iter().all(|&o| (-60_000_000..=0).contains(&o)), "{:?}", r.score.start_offsets_ns);
    // At 45 ms the ~16 ms-spaced jitter gives false positives; just above 50 ms none remain.
    assert!(r.score.precision < 0.7);
    let strict = DetectorConfig { threshold_ns: 60_000_000, ..plain };
    let r60 = replay_report(&lines, strict, &sched, None);
    assert_eq!((r60.score.precision, r60.score.recall), (1.0, 1.0));
    // The evidence scoring at the paper's 45 ms needs no such tuning (validation, not a fit:
    // no constant of the detector was chosen on this file).
    let ev = replay_report(&lines, DetectorConfig::default(), &sched, None);
    assert!(ev.score.precision >= 0.95 && ev.score.recall >= 0.95, "{:?}", ev.score);
    assert!(ev.events.iter().all(|e| e.confidence >= 50));
}

#[test]
fn bent_pipe_csv_replays_far_more_precisely_than_the_threshold() {
    for name in ["bent_pipe_victoria_2_latency.csv", "bent_pipe_victoria_4_latency.csv"] {
        let Some(p) = real(&format!("ping-bentpipe/{name}")) else { return };
        let rec = load(&p).unwrap();
        let sched = Schedule::starlink(DEFAULT_TOLERANCE_NS);
        let plain = DetectorConfig { scoring: Scoring::Threshold, ..DetectorConfig::default() };
        let old = replay_report(&rec.replies, plain, &sched, None);
        let new = replay_report(&rec.replies, DetectorConfig::default(), &sched, None);
        assert!(old.score.precision < 0.3, "{name}: {:?}", old.score.precision);
        // Measured 92 % / 83-93 %; the bounds leave room, they are not a target.
        assert!(new.score.precision >= 0.85 && new.score.recall >= 0.75, "{name}: {} / {}", new.score.precision, new.score.recall);
    }
}
