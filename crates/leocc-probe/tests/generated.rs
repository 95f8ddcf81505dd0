//! The detector on generated probe streams (`leocc_probe::gen`): jittery, lossy, 10–20 ms
//! spacing, with ground truth. The bounds are chosen so that the paper's plain rule
//! (RI > 45 ms) fails them and the evidence scoring passes; `leocc probe bench` prints the
//! full numbers (docs/detector.md).

use leocc_probe::detect::{DetectorConfig, Scoring};
use leocc_probe::gen::{generate, GenConfig, Grid, PathKind};
use leocc_probe::replay::{percentile, score_generated, Score};

fn total(path: PathKind, grid: Grid, scoring: Scoring) -> (Score, Vec<i64>) {
    let (mut truth, mut dets, mut matched, mut delays) = (0, 0, 0, Vec::new());
    for (seed, (loss, spacing)) in [(0.01, 10.0), (0.02, 15.0), (0.03, 20.0), (0.02, 13.0)].into_iter().enumerate() {
        let c = GenConfig { grid, loss, spacing_ms: spacing, duration_s: 300.0, ..GenConfig::new(path, seed as u64 + 1) };
        let s = generate(&c).unwrap();
        let r = score_generated(&s, DetectorConfig { scoring, ..DetectorConfig::default() });
        truth += r.score.truth;
        dets += r.score.detections;
        matched += r.score.matched;
        delays.extend_from_slice(&r.score.delays_ns);
    }
    let s = Score {
        truth,
        detections: dets,
        matched,
        precision: matched as f64 / dets.max(1) as f64,
        recall: matched as f64 / truth.max(1) as f64,
        start_offsets_ns: Vec::new(),
        delays_ns: delays.clone(),
        missed: Vec::new(),
        false_positives: Vec::new(),
    };
    (s, delays)
}

#[test]
fn isl_streams_precise_and_complete_where_the_threshold_is_not() {
    for grid in [Grid::Starlink, Grid::Period(11.0)] {
        let (old, _) = total(PathKind::Isl, grid, Scoring::Threshold);
        let (new, _) = total(PathKind::Isl, grid, Scoring::Evidence);
        assert!(old.precision < 0.5, "{grid:?}: the plain rule fires on jitter and loss bursts: {}", old.precision);
        // `leocc probe bench` (more seeds and spacings) measures 98-99 % / 100 %; four streams
        // leave a few percent of room.
        assert!(new.precision >= 0.9 && new.recall >= 0.95, "{grid:?}: {} / {}", new.precision, new.recall);
    }
}

#[test]
fn events_fire_no_later_than_the_plain_rule() {
    // The scoring only removes candidates, and a silence already improbable however its
    // closing reply splits it is declared at the probe send where it becomes so: every event is
    // one the plain rule also declares (same outage start), at that reply or earlier. Over
    // inter-satellite links, whose outages lose 600-750 ms of probes, that is most of the
    // outage earlier.
    for path in [PathKind::Isl, PathKind::BentPipe] {
        let s = generate(&GenConfig { duration_s: 200.0, ..GenConfig::new(path, 9) }).unwrap();
        let old = score_generated(&s, DetectorConfig { scoring: Scoring::Threshold, ..DetectorConfig::default() });
        let new = score_generated(&s, DetectorConfig::default());
        assert!(!new.events.is_empty());
        for e in &new.events {
            let plain = old.events.iter().find(|o| o.start_mono_ns == e.start_mono_ns).unwrap_or_else(|| panic!("no plain event for {e:?}"));
            assert!(e.detect_mono_ns <= plain.detect_mono_ns, "{e:?} after {plain:?}");
        }
        let (a, b) = (percentile(&old.score.delays_ns, 50.0).unwrap(), percentile(&new.score.delays_ns, 50.0).unwrap());
        println!("{path:?}: median delay, plain rule {a} ns (earlier false matches included), evidence {b} ns");
        if path == PathKind::Isl {
            assert!(b * 2 < a, "ISL median delay {b} ns against the plain rule's {a} ns");
        }
    }
}

#[test]
fn bent_pipe_streams_gain_precision() {
    let (old, _) = total(PathKind::BentPipe, Grid::Starlink, Scoring::Threshold);
    let (new, _) = total(PathKind::BentPipe, Grid::Starlink, Scoring::Evidence);
    assert!(old.precision < 0.3, "{}", old.precision);
    // Bent-pipe outages (45-140 ms of held probes) hide in the jitter until the schedule is
    // learned: precision holds, recall is partial (docs/detector.md says how partial).
    assert!(new.precision >= 0.9, "{} / {}", new.precision, new.recall);
    assert!(new.recall >= 0.4, "{} / {}", new.precision, new.recall);
}

#[test]
fn every_event_carries_a_confidence_and_weak_ones_are_not_events() {
    let s = generate(&GenConfig { duration_s: 120.0, ..GenConfig::new(PathKind::BentPipe, 3) }).unwrap();
    let r = score_generated(&s, DetectorConfig::default());
    assert!(r.events.iter().all(|e| (50..=100).contains(&e.confidence)), "{:?}", r.events);
    assert!(r.weak.iter().all(|e| e.confidence < 50));
    assert!(!r.weak.is_empty(), "a jittery stream has weak candidates");
}
