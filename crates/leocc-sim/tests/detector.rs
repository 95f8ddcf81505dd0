//! The simulator runs the daemon's detection core on the probe stream it simulates.

use std::sync::Arc;

use leocc_sim::detector::ProbeNoiseModel;
use leocc_sim::{Scenario, World};
use leocc_trace::Trace;

fn bundled(name: &str) -> Arc<Trace> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces").join(name);
    Arc::new(Trace::load(&path).unwrap())
}

#[test]
fn debug_up() {
    for name in ["starlink-up-60s.trace", "starlink-down-60s.trace"] {
        let t = bundled(name);
        for seed in 1..=3 {
            let mut sc = Scenario::new(t.clone(), name, "leocc", t.duration_us());
            sc.seed = seed;
            sc.probe_noise = ProbeNoiseModel::BentPipe;
            let mut w = World::new(&sc).unwrap();
            w.run(&mut |_| {});
            let d = w.detector();
            let truth: Vec<u64> = t.reconfigurations_us().to_vec();
            let s = d.score(&truth);
            eprintln!("{name} seed {seed}: {:?} dets {:?} missed {:?} fp {:?} conf {:?} counters {:?}", (s.precision, s.recall), d.detections_us, s.missed, s.false_positives, d.confidences, d.core().counters());
            for e in &d.weak { eprintln!("   weak start {} ri {} S {} step {} p_normal {:.2e} prior {:.3} conf {}", e.start_mono_ns/1000, e.ri_ns/1000, e.send_gap_ns/1000, e.rtt_step_ns/1000, e.p_normal, e.prior, e.confidence); }
        }
    }
}
