//! The detector daemon measured in the emulator (`leocc probe emulate`): per trace, a real
//! `leocc probe` daemon runs in the emulator's client namespace against the PoP for the
//! trace's length, and its event log is scored against the trace's ground truth.

use anyhow::{Context, Result};
use leocc_emu::{EmuConfig, Emulator, Side, POP_ADDR};
use leocc_probe::daemon::{self, Options, PopSource, Summary};
use leocc_probe::detect::DetectorConfig;
use leocc_probe::net::parse_target;
use leocc_probe::replay::Score;
use leocc_probe::replay::score_log;
use leocc_sim::detector::truth_of;
use leocc_trace::{Dir, Trace};
use std::path::{Path, PathBuf};

/// The daemon stops this long before a trace would loop in the emulator, ms.
const END_MARGIN_MS: u64 = 300;

/// One trace's run.
pub struct TraceRun {
    /// Where the ground truth came from ("trace" or the Starlink slots).
    pub truth_source: &'static str,
    /// The daemon's events scored against it.
    pub score: Score,
    /// The daemon's counters.
    pub summary: Summary,
    /// Seconds emulated.
    pub seconds: f64,
    /// The event log, when asked to keep it, and the CLOCK_MONOTONIC time (ns) of trace time 0.
    pub kept_log: Option<(PathBuf, u64)>,
}

/// How long the daemon runs over `trace`: its length less the margin, at most `max_seconds`.
pub fn run_ms(trace: &Trace, max_seconds: Option<f64>) -> u64 {
    let ms = trace.duration_us() / 1000;
    let ms = ms - END_MARGIN_MS.min(ms);
    max_seconds.map_or(ms, |m| ms.min((m * 1000.0) as u64))
}

/// Emulates `trace` (labelled `name`) for `run_ms` with the daemon in the client namespace;
/// keeps the event log as `keep_log` when given. Needs root (the caller checks).
pub fn emulate(
    name: &str,
    trace: &Trace,
    detector: &DetectorConfig,
    run_ms: u64,
    keep_log: Option<&Path>,
) -> Result<TraceRun> {
    let (truth_us, truth_source) = truth_of(trace);
    let dir = std::env::temp_dir().join(format!("leocc-probe-emulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let log = dir.join("events.jsonl");
    let _ = std::fs::remove_file(&log);
    let opts = Options {
        pop: PopSource::Fixed(parse_target(&POP_ADDR.to_string()).map_err(anyhow::Error::msg)?),
        interval_ns: daemon::DEFAULT_INTERVAL_NS,
        detector: detector.clone(),
        log: Some(log.clone()),
        duration_ns: Some(run_ms * 1_000_000),
        run_dir: dir.clone(),
        unreachable_after_ns: daemon::DEFAULT_UNREACHABLE_AFTER_NS,
        rediscover_after_ns: daemon::DEFAULT_REDISCOVER_AFTER_NS,
        verbose: false,
        metrics: None,
    };
    let mut cfg = EmuConfig::new(trace.link(Dir::Up), trace.link(Dir::Down));
    cfg.beyond_pop_us = trace.beyond_pop_us();
    cfg.label = name.to_string();
    let emu = Emulator::start(&cfg)?;
    let t0 = emu.clock().t0_mono_ns();
    let h = emu.spawn_in(Side::Client, "leocc-probe", move || daemon::run(opts, None))?;
    let run = h
        .join()
        .map_err(|_| anyhow::anyhow!("the probe thread panicked"))?;
    let end_us = (leocc_probe::net::mono_ns() - t0) / 1000;
    emu.stop();
    let summary = run?.map_err(anyhow::Error::msg)?;
    let text = std::fs::read_to_string(&log)?;
    let score = score_log(&text, t0, &truth_us, end_us).map_err(anyhow::Error::msg)?;
    let kept_log = match keep_log {
        Some(dest) => {
            leocc_base::write_atomic(dest, text.as_bytes())
                .with_context(|| format!("keeping the log as {}", dest.display()))?;
            Some((dest.to_path_buf(), t0))
        }
        None => None,
    };
    std::fs::remove_dir_all(&dir)?;
    Ok(TraceRun {
        truth_source,
        score,
        summary,
        seconds: run_ms as f64 / 1e3,
        kept_log,
    })
}
