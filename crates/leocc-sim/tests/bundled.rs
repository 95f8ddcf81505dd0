//! leocc and cubic end to end over every bundled trace (traces/ at the repository root).

use std::path::Path;
use std::sync::Arc;

use leocc_sim::{run, Scenario};
use leocc_trace::Trace;

/// Simulated seconds per trace (the bundled traces are 30-60 s; 30 s keeps this test short).
const MAX_SECS: u64 = 30;

#[test]
fn leocc_and_cubic_run_over_every_bundled_trace() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("skipping: no bundled traces at {}", dir.display());
        return;
    };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "trace")).collect();
    paths.sort();
    if paths.is_empty() {
        println!("skipping: no .trace files in {}", dir.display());
        return;
    }
    for path in paths {
        let trace = Arc::new(Trace::load(&path).unwrap_or_else(|e| panic!("{e}")));
        let duration = trace.duration_us().min(MAX_SECS * 1_000_000);
        // Reconfigurations whose outage ends well before the end must be detected.
        let truth: Vec<u64> = trace.reconfigurations_us().iter().copied().filter(|&t| t < duration).collect();
        let surely_seen = truth.iter().filter(|&&t| t + 500_000 < duration).count() as u64;
        for cc in ["leocc", "cubic"] {
            let mut sc = Scenario::new(trace.clone(), &path.display().to_string(), cc, duration);
            sc.data_dir = trace.meta.direction.primary();
            let r = run(&sc).unwrap();
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(r.throughput_mbps > 0.5, "{name} {cc}: throughput {}", r.throughput_mbps);
            assert!(r.utilization > 0.0 && r.utilization <= 1.0 + 1e-9, "{name} {cc}: utilization {}", r.utilization);
            assert!(r.rtt_p50_ms > 0.0 && r.rtt_p95_ms >= r.rtt_p50_ms, "{name} {cc}: rtt {} / {}", r.rtt_p50_ms, r.rtt_p95_ms);
            assert!(r.owd_p95_ms > 0.0, "{name} {cc}: owd {}", r.owd_p95_ms);
            // The daemon's detector (evidence scoring, probe noise fitted to real bent-pipe
            // recordings) declares nothing the trace does not hold; how many it finds depends on
            // the schedule it learned (tests/detector.rs bounds it on the Starlink traces).
            assert!(r.reconfigs_detected.unwrap() <= truth.len() as u64, "{name} {cc}: detected {} reconfigurations, ground truth {truth:?}", r.reconfigs_detected.unwrap());
            if cc == "leocc" {
                // Every outage is visible to the probes: on a clean stream the paper's rule sees
                // each. An outage holds the probes on both directions: when it outlasts the
                // uplink delay the replies held on the way back and those of the probes held on
                // the way out come back in two bursts, an uplink delay apart, and the paper's
                // rule (no merging) may count a second event (oneweb-60s: 44 ms one way).
                sc.probe_noise = leocc_sim::detector::ProbeNoiseModel::None;
                sc.detector_scoring = leocc_probe::detect::Scoring::Threshold;
                let n = run(&sc).unwrap().reconfigs_detected.unwrap();
                assert!(n >= surely_seen && n <= 2 * truth.len() as u64, "{name}: the paper's rule detected {n} reconfigurations, ground truth {truth:?}");
            }
            println!("{name} {cc}: {:.1} Mbit/s, utilization {:.3}, rtt p95 {:.1} ms", r.throughput_mbps, r.utilization, r.rtt_p95_ms);
        }
    }
}
