//! The daemon inside the trace-driven emulator, scored against the trace's ground truth
//! (root only; skips when namespaces or TUN are unavailable).
//!
//! The emulator's PoP answers echoes after the satellite delay and drops them during outages,
//! like Starlink's; the daemon runs unmodified in the client namespace against LEOCC_POP. Its
//! event log is put on trace time through the emulator clock's monotonic origin and matched
//! with `Trace::reconfigurations_us`.

use std::path::PathBuf;

use leocc_emu::{EmuConfig, Emulator, Side, POP_ADDR};
use leocc_probe::daemon::{self, Options, PopSource};
use leocc_probe::detect::DetectorConfig;
use leocc_probe::net::parse_target;
use leocc_probe::replay::percentile;
use leocc_probe::replay::score_log;
use leocc_trace::gen::{generate, Profile};
use leocc_trace::Dir;

/// Trace length, s: 40 s holds two or three periodic slots (plus aperiodic events, if any).
const TRACE_S: u64 = 40;
/// The daemon stops this long before the trace would loop, ms.
const END_MARGIN_MS: u64 = 300;

#[test]
fn detector_in_emulator_matches_generated_starlink_truth() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP detector_in_emulator_matches_generated_starlink_truth: needs root");
        return;
    }
    let trace = generate(Profile::StarlinkDown, TRACE_S * 1000, 1, "leocc trace gen --profile starlink-down --duration 40 --seed 1").unwrap();
    let truth = trace.reconfigurations_us().to_vec();
    assert!(truth.len() >= 2, "{truth:?}");
    let emu = match Emulator::start(&EmuConfig::new(trace.link(Dir::Up), trace.link(Dir::Down))) {
        Ok(e) => e,
        Err(e) => {
            println!("SKIP detector_in_emulator_matches_generated_starlink_truth: emulator unavailable: {e}");
            return;
        }
    };
    let t0 = emu.clock().t0_mono_ns();
    let dir: PathBuf = std::env::temp_dir().join(format!("leocc-probe-emu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let opts = Options {
        pop: PopSource::Fixed(parse_target(&POP_ADDR.to_string()).unwrap()),
        interval_ns: daemon::DEFAULT_INTERVAL_NS,
        detector: DetectorConfig::default(),
        log: Some(log.clone()),
        duration_ns: Some((TRACE_S * 1000 - END_MARGIN_MS) * 1_000_000),
        run_dir: dir.clone(),
        unreachable_after_ns: daemon::DEFAULT_UNREACHABLE_AFTER_NS,
        rediscover_after_ns: daemon::DEFAULT_REDISCOVER_AFTER_NS,
        verbose: true,
        metrics: None,
    };
    let h = emu.spawn_in(Side::Client, "leocc-probe", move || daemon::run(opts, None)).unwrap();
    let run = h.join().unwrap().unwrap();
    let end_us = (leocc_probe::net::mono_ns() - t0) / 1000;
    emu.stop();
    let summary = run.expect("daemon run");
    let s = score_log(&std::fs::read_to_string(&log).unwrap(), t0, &truth, end_us).unwrap();
    let ms = |v: Option<i64>| v.map_or(f64::NAN, |x| x as f64 / 1000.0);
    println!(
        "emulator: {} probes, {} replies; truth {}, detections {}, matched {}; precision {:.3}, recall {:.3}; delay median {:.1} ms, p95 {:.1} ms",
        summary.sent,
        summary.replies,
        s.truth,
        s.detections,
        s.matched,
        s.precision,
        s.recall,
        ms(percentile(&s.delays_ns, 50.0)),
        ms(percentile(&s.delays_ns, 95.0)),
    );
    assert!(s.precision >= 0.99 && s.recall >= 0.99, "{s:#?}");
    // Detection needs the outage to end and a reply to come back: 45-130 ms plus one RTT.
    assert!(s.delays_ns.iter().all(|&d| d > 40_000 && d < 500_000), "{:?}", s.delays_ns);
    std::fs::remove_dir_all(&dir).unwrap();
}
