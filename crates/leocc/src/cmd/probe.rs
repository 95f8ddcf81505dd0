//! `leocc probe ...`: the reconfiguration detector daemon, its status, and offline replay.
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use leocc_probe::daemon::{self, Options, PopSource};
use leocc_probe::detect::{DetectorConfig, Kind};
use leocc_probe::discover::{Prefix, DEFAULT_PREFIX};
use leocc_probe::instance;
use leocc_probe::net::parse_target;
use leocc_probe::replay;
use leocc_probe::schedule::{Schedule, DEFAULT_TOLERANCE_NS};

const NS_PER_MS: f64 = 1e6;

/// `leocc probe`: run the detector daemon (default), or one of its helper commands.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProbeArgs {
    #[command(subcommand)]
    action: Option<ProbeAction>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum ProbeAction {
    /// Show the running daemon's PoP, RTT statistics, counters and latest events.
    Status {
        /// Print the raw state file (JSON).
        #[arg(long)]
        json: bool,
        /// Run directory of the daemon [default: $LEOCC_RUN_DIR or /run/leocc].
        #[arg(long)]
        run_dir: Option<PathBuf>,
    },
    /// Run the detection logic offline over `ping -D` output and score it against Starlink's
    /// reconfiguration slots (seconds 12/27/42/57 of each minute).
    Replay {
        /// A file of `ping -D` output.
        file: PathBuf,
        /// Δoutage: response interval above which a reconfiguration is declared, ms.
        #[arg(long, default_value_t = 45.0)]
        threshold_ms: f64,
        /// Half-width of the window around each slot, ms.
        #[arg(long, default_value_t = DEFAULT_TOLERANCE_NS as f64 / NS_PER_MS)]
        slot_tolerance_ms: f64,
        /// Merge detections closer than this to the previous one, ms (0 = off, as the paper).
        #[arg(long, default_value_t = 0.0)]
        holdoff_ms: f64,
        /// Print the full report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate the detection logic in a pure simulation: probes every interval over a trace's
    /// link model (loss during outages and by the trace's loss rate, the trace's delays),
    /// scored against the trace's ground truth. Prints precision, recall, detection delay and
    /// the probe overhead.
    Simulate {
        #[command(flatten)]
        traces: TraceSet,
        /// Δoutage, ms.
        #[arg(long, default_value_t = 45.0)]
        threshold_ms: f64,
        /// Probe interval, ms.
        #[arg(long, default_value_t = 10.0)]
        interval_ms: f64,
        /// Loss-draw seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print one JSON object per trace.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate the real daemon in the emulator (root): for each trace, start `leocc emu`'s
    /// link, run the daemon in the client namespace against the emulated PoP for the trace's
    /// length, and score its event log against the trace's ground truth.
    Emulate {
        #[command(flatten)]
        traces: TraceSet,
        /// Δoutage, ms.
        #[arg(long, default_value_t = 45.0)]
        threshold_ms: f64,
        /// Stop each run after this many seconds even if the trace is longer.
        #[arg(long)]
        max_seconds: Option<f64>,
        /// Keep each run's event log as DIR/run-N.jsonl (N counts the traces from 1).
        #[arg(long, value_name = "DIR")]
        keep_logs: Option<PathBuf>,
    },
}

/// Traces to evaluate: files, and/or generated ones.
#[derive(Args)]
struct TraceSet {
    /// Traces (our format, a mahimahi file, or a directory with bw/delay files).
    #[arg(required_unless_present = "profile")]
    traces: Vec<PathBuf>,
    /// Also generate traces of this profile (e.g. starlink-down), one per seed.
    #[arg(long)]
    profile: Option<String>,
    /// Number of generated traces (seeds 1..=N).
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    /// Length of each generated trace, s.
    #[arg(long, default_value_t = 120)]
    duration: u64,
}

impl TraceSet {
    fn load(&self) -> anyhow::Result<Vec<(String, leocc_trace::Trace)>> {
        let mut all = Vec::new();
        for p in &self.traces {
            all.push((p.display().to_string(), leocc_trace::Trace::load(p)?));
        }
        if let Some(name) = &self.profile {
            let prof = leocc_trace::gen::Profile::parse(name).with_context(|| format!("--profile: unknown profile '{name}'"))?;
            for s in 1..=self.seeds {
                let cmd = format!("leocc trace gen --profile {name} --duration {} --seed {s}", self.duration);
                let t = leocc_trace::gen::generate(prof, self.duration * 1000, s, &cmd).map_err(anyhow::Error::msg)?;
                all.push((format!("{name} seed {s}"), t));
            }
        }
        Ok(all)
    }
}

/// Options of the daemon.
#[derive(Args)]
struct RunArgs {
    /// Address of the PoP to probe (e.g. 100.64.0.1, or fe80::1%eth0).
    #[arg(long, value_name = "ADDR", conflicts_with = "auto")]
    pop: Option<String>,
    /// Discover the PoP by TTL-limited probes toward DEST (first hop in --pop-prefix).
    #[arg(long, value_name = "DEST")]
    auto: Option<String>,
    /// Prefix the PoP lies in, for --auto (repeatable).
    #[arg(long = "pop-prefix", value_name = "CIDR", default_value = DEFAULT_PREFIX)]
    pop_prefix: Vec<String>,
    /// Δoutage: response interval above which a reconfiguration is declared, ms.
    #[arg(long, default_value_t = 45.0)]
    threshold_ms: f64,
    /// Probe interval, ms.
    #[arg(long, default_value_t = 10.0)]
    interval_ms: f64,
    /// Append events as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Stop after S seconds (default: run until SIGTERM/SIGINT).
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// Label events with a wall-clock schedule prior and flag missed slots (starlink).
    #[arg(long, value_name = "NAME")]
    schedule: Option<String>,
    /// Half-width of the window around each scheduled slot, ms.
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_NS as f64 / NS_PER_MS)]
    slot_tolerance_ms: f64,
    /// Merge detections closer than this to the previous one, ms (0 = off).
    #[arg(long, default_value_t = 0.0)]
    holdoff_ms: f64,
    /// Do not publish to the kernel's signal map; only log.
    #[arg(long)]
    no_kernel: bool,
    /// The pinned signal map to publish to.
    #[arg(long, value_name = "PATH", default_value = leocc_kernel::signal::SIGNAL_PIN)]
    signal_map: PathBuf,
    /// Seconds without a reply before the PoP is declared unreachable.
    #[arg(long, default_value_t = 1.0)]
    unreachable_after: f64,
    /// Seconds without a reply before --auto discovers the PoP again.
    #[arg(long, default_value_t = 10.0)]
    rediscover_after: f64,
    /// Run directory for the lock, pid and state files [default: $LEOCC_RUN_DIR or /run/leocc].
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Do not print each event on stdout.
    #[arg(long, short)]
    quiet: bool,
}

/// Entry point of `leocc probe`.
pub fn run(a: ProbeArgs) -> anyhow::Result<()> {
    match a.action {
        Some(ProbeAction::Status { json, run_dir }) => status(run_dir, json),
        Some(ProbeAction::Replay { file, threshold_ms, slot_tolerance_ms, holdoff_ms, json }) => {
            replay_cmd(&file, threshold_ms, slot_tolerance_ms, holdoff_ms, json)
        }
        Some(ProbeAction::Simulate { traces, threshold_ms, interval_ms, seed, json }) => {
            simulate_cmd(&traces.load()?, threshold_ms, interval_ms, seed, json)
        }
        Some(ProbeAction::Emulate { traces, threshold_ms, max_seconds, keep_logs }) => {
            emulate_cmd(&traces.load()?, threshold_ms, max_seconds, keep_logs.as_deref())
        }
        None => run_daemon(a.run),
    }
}

/// Milliseconds from the command line to ns, refusing nonsense.
fn ms_to_ns(name: &str, v: f64, min_ms: f64) -> anyhow::Result<u64> {
    if !v.is_finite() || v < min_ms {
        bail!("--{name} must be a number >= {min_ms} (got {v})");
    }
    Ok((v * NS_PER_MS) as u64)
}

fn schedule_of(name: Option<&str>, tol_ms: f64) -> anyhow::Result<Option<Schedule>> {
    let tol = ms_to_ns("slot-tolerance-ms", tol_ms, 0.0)?;
    name.map(|n| Schedule::by_name(n, tol).map_err(anyhow::Error::msg)).transpose()
}

fn run_daemon(a: RunArgs) -> anyhow::Result<()> {
    let pop = match (&a.pop, &a.auto) {
        (Some(p), None) => PopSource::Fixed(parse_target(p).map_err(anyhow::Error::msg).context("--pop")?),
        (None, Some(d)) => {
            let dest = parse_target(d).map_err(anyhow::Error::msg).context("--auto")?;
            let prefixes = a
                .pop_prefix
                .iter()
                .map(|p| p.parse::<Prefix>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(anyhow::Error::msg)
                .context("--pop-prefix")?;
            PopSource::Auto { dest, prefixes }
        }
        _ => bail!("give the PoP with --pop ADDR or discover it with --auto DEST (see `leocc probe --help`)"),
    };
    let duration_ns = match a.duration {
        Some(s) if !(s.is_finite() && s > 0.0) => bail!("--duration must be a positive number of seconds (got {s})"),
        Some(s) => Some((s * 1e9) as u64),
        None => None,
    };
    let detector = DetectorConfig {
        threshold_ns: ms_to_ns("threshold-ms", a.threshold_ms, 1.0)?,
        holdoff_ns: ms_to_ns("holdoff-ms", a.holdoff_ms, 0.0)?,
        schedule: schedule_of(a.schedule.as_deref(), a.slot_tolerance_ms)?,
        ..DetectorConfig::default()
    };
    let interval_ns = ms_to_ns("interval-ms", a.interval_ms, 1.0)?;
    if interval_ns * 2 > detector.threshold_ns {
        bail!(
            "--interval-ms {} is too coarse for --threshold-ms {}: a single lost reply would look like an outage; keep the interval below half the threshold",
            a.interval_ms,
            a.threshold_ms
        );
    }
    let secs = |name: &str, v: f64| -> anyhow::Result<u64> {
        if !(v.is_finite() && v > 0.0) {
            bail!("--{name} must be a positive number of seconds (got {v})");
        }
        Ok((v * 1e9) as u64)
    };
    let opts = Options {
        pop,
        interval_ns,
        detector,
        log: a.log,
        duration_ns,
        run_dir: a.run_dir.unwrap_or_else(instance::run_dir),
        unreachable_after_ns: secs("unreachable-after", a.unreachable_after)?,
        rediscover_after_ns: secs("rediscover-after", a.rediscover_after)?,
        verbose: !a.quiet,
    };
    let publisher: Option<Box<dyn daemon::Publisher>> = if a.no_kernel { None } else { kernel_publisher(a.signal_map) };
    daemon::run(opts, publisher).map_err(anyhow::Error::msg)?;
    Ok(())
}

/// Writes the detector signal into the pinned BPF map that every LeoCC flow reads.
struct KernelMap {
    path: PathBuf,
}

impl daemon::Publisher for KernelMap {
    fn describe(&self) -> String {
        format!("kernel signal map {}", self.path.display())
    }

    fn current_seq(&mut self) -> Option<u64> {
        // Only the standard pin can be read back through the kernel crate.
        if self.path != std::path::Path::new(leocc_kernel::signal::SIGNAL_PIN) {
            return None;
        }
        leocc_kernel::read_signal().ok().filter(|s| s.is_valid()).map(|s| s.seq)
    }

    fn publish(&mut self, s: &daemon::SignalUpdate) -> Result<(), String> {
        let sig = leocc_kernel::Signal::new(s.reconfig_time_ns, s.seq, s.probe_time_ns, s.term_pop_rtt_us);
        leocc_kernel::signal::write_signal_at(&self.path, &sig).map_err(|e| e.to_string())
    }
}

/// The kernel publisher; the map may be absent (LeoCC not loaded), which the daemon reports
/// once and retries.
fn kernel_publisher(path: PathBuf) -> Option<Box<dyn daemon::Publisher>> {
    Some(Box::new(KernelMap { path }))
}

fn status(run_dir: Option<PathBuf>, json: bool) -> anyhow::Result<()> {
    let dir = run_dir.unwrap_or_else(instance::run_dir);
    let st = instance::read_status(&dir)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&st.state.unwrap_or(serde_json::Value::Null))?);
        return Ok(());
    }
    match st.running {
        Some(pid) => println!("leocc probe: running, pid {pid}"),
        None => println!("leocc probe: not running (run directory {})", dir.display()),
    }
    let Some(s) = st.state else {
        println!("no state file yet");
        return Ok(());
    };
    if st.running.is_none() {
        println!("last state written by pid {}:", s["pid"]);
    }
    let f = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.1}"));
    println!("  PoP            {} ({}), {}", s["pop"].as_str().unwrap_or("?"), s["pop_mode"].as_str().unwrap_or("?"), if s["reachable"] == true { "reachable" } else { "UNREACHABLE" });
    println!("  uptime         {} s", f(&s["uptime_s"]));
    println!("  probes         {} sent, {} replies, {} send errors, last reply {} ms ago", s["probes_sent"], s["replies"], s["send_errors"], f(&s["last_reply_age_ms"]));
    println!("  RTT to PoP     latest {} ms, srtt {} ms, min {} ms", f(&s["rtt"]["latest_ms"]), f(&s["rtt"]["srtt_ms"]), f(&s["rtt"]["min_ms"]));
    let c = &s["counters"];
    println!("  events         {} reconfigurations, {} missed slots, {} suppressed, {} wall-clock jumps", c["events"], c["missed_slots"], c["suppressed"], c["wall_jumps"]);
    println!("  kernel         {}", s["kernel"].as_str().unwrap_or("?"));
    if let Some(evs) = s["recent_events"].as_array() {
        if !evs.is_empty() {
            println!("  latest events:");
        }
        for e in evs.iter().rev() {
            println!("    #{:<5} wall {:.3}  ri {:>7} ms  {:<10} rtt {} ms", e["seq"], e["wall"].as_f64().unwrap_or(0.0), f(&e["ri_ms"]), e["kind"].as_str().unwrap_or("?"), f(&e["rtt_ms"]));
        }
    }
    Ok(())
}

fn replay_cmd(file: &std::path::Path, threshold_ms: f64, tol_ms: f64, holdoff_ms: f64, json: bool) -> anyhow::Result<()> {
    let lines = replay::load_ping_d(file)?;
    let sched = schedule_of(Some("starlink"), tol_ms)?.expect("named schedule");
    let cfg = DetectorConfig {
        threshold_ns: ms_to_ns("threshold-ms", threshold_ms, 1.0)?,
        holdoff_ns: ms_to_ns("holdoff-ms", holdoff_ms, 0.0)?,
        ..DetectorConfig::default()
    };
    let r = replay::replay_report(&lines, cfg, &sched);
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    let ms = |ns: i64| ns as f64 / NS_PER_MS;
    println!(
        "{}: {} replies over {:.1} s, median spacing {:.1} ms, {} echoes lost",
        file.display(),
        r.replies,
        (r.span_ns.1 - r.span_ns.0) as f64 / 1e9,
        r.median_spacing_ns as f64 / NS_PER_MS,
        r.lost
    );
    println!("threshold {threshold_ms} ms, hold-off {holdoff_ms} ms, Starlink slots 12/27/42/57 s ± {tol_ms} ms");
    println!("{:>4}  {:>18}  {:>6}  {:>9}  {:>10}  {:>8}", "#", "outage start (wall)", "second", "RI ms", "kind", "slot ms");
    for e in &r.events {
        let sec = (e.start_wall_ns.rem_euclid(60_000_000_000)) as f64 / 1e9;
        let off = e.slot_offset_ns.map_or("-".into(), |o| format!("{:+.0}", ms(o)));
        println!("{:>4}  {:>18.3}  {:>6.2}  {:>9.1}  {:>10}  {:>8}", e.seq, e.start_wall_ns as f64 / 1e9, sec, e.ri_ns as f64 / NS_PER_MS, e.kind.as_str(), off);
    }
    let s = &r.score;
    let periodic = r.events.iter().filter(|e| e.kind == Kind::Periodic).count();
    println!(
        "events {} ({} periodic, {} aperiodic); slots observed {}, detected {}, missed {}",
        r.events.len(),
        periodic,
        r.events.len() - periodic,
        s.truth,
        s.matched,
        s.missed.len()
    );
    println!("precision {:.1} % ({} of {} detections on a slot), recall {:.1} %", s.precision * 100.0, s.matched, s.detections, s.recall * 100.0);
    if let (Some(p50), Some(lo), Some(hi)) = (
        replay::percentile(&s.start_offsets_ns, 50.0),
        s.start_offsets_ns.iter().min(),
        s.start_offsets_ns.iter().max(),
    ) {
        println!("outage start − slot: median {:+.0} ms, range [{:+.0}, {:+.0}] ms", ms(p50), ms(*lo), ms(*hi));
    }
    Ok(())
}

/// The totals lines of `simulate` and `emulate`. A ratio over nothing is "n/a": with no
/// detections, "precision 100.00 %" would read as a perfect detector.
fn totals(truth: usize, dets: usize, matched: usize) -> String {
    let pct = |a: usize, b: usize| if b == 0 { "n/a".to_string() } else { format!("{:.2} %", a as f64 * 100.0 / b as f64) };
    format!("total: truth {truth}, detections {dets}, matched {matched}\nprecision {}, recall {}\n", pct(matched, dets), pct(matched, truth))
}

/// Link capacity the overhead is quoted against (issue 7): a 10 Mbit/s uplink.
const REFERENCE_UPLINK_BPS: f64 = 10e6;

fn simulate_cmd(traces: &[(String, leocc_trace::Trace)], threshold_ms: f64, interval_ms: f64, seed: u64, json: bool) -> anyhow::Result<()> {
    use leocc_probe::sim::{overhead_bps, simulate, SimConfig};
    let cfg = SimConfig {
        interval_us: ms_to_ns("interval-ms", interval_ms, 1.0)? / 1000,
        seed,
        detector: DetectorConfig { threshold_ns: ms_to_ns("threshold-ms", threshold_ms, 1.0)?, ..DetectorConfig::default() },
    };
    let (mut truth, mut dets, mut matched) = (0usize, 0usize, 0usize);
    let mut delays = Vec::new();
    for (name, trace) in traces {
        let r = simulate(trace, &cfg);
        if json {
            println!("{}", serde_json::json!({"trace": name, "result": r}));
        } else {
            println!(
                "{}: truth {} ({}), detections {}, matched {}, missed {:?} us, false {:?} us",
                name,
                r.score.truth,
                r.truth_source,
                r.score.detections,
                r.score.matched,
                r.score.missed,
                r.score.false_positives
            );
        }
        truth += r.score.truth;
        dets += r.score.detections;
        matched += r.score.matched;
        delays.extend_from_slice(&r.score.delays_ns);
    }
    if json {
        return Ok(());
    }
    print!("{}", totals(truth, dets, matched));
    if let (Some(p50), Some(p95)) = (replay::percentile(&delays, 50.0), replay::percentile(&delays, 95.0)) {
        println!("detection delay from outage start: median {:.1} ms, p95 {:.1} ms", p50 as f64 / 1e3, p95 as f64 / 1e3);
    }
    let bps = overhead_bps(cfg.interval_us);
    println!(
        "probe overhead: {:.1} kbit/s per direction at the IP layer ({:.3} % of a 10 Mbit/s uplink)",
        bps / 1e3,
        bps * 100.0 / REFERENCE_UPLINK_BPS
    );
    Ok(())
}

/// The daemon stops this long before a trace would loop in the emulator, ms.
const EMU_END_MARGIN_MS: u64 = 300;

fn emulate_cmd(
    traces: &[(String, leocc_trace::Trace)],
    threshold_ms: f64,
    max_seconds: Option<f64>,
    keep_logs: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use leocc_emu::{EmuConfig, Emulator, Side, POP_ADDR};
    use leocc_probe::sim::score_log;
    leocc_emu::shell::check_privileges()?;
    let detector = DetectorConfig { threshold_ns: ms_to_ns("threshold-ms", threshold_ms, 1.0)?, ..DetectorConfig::default() };
    let (mut truth, mut dets, mut matched) = (0usize, 0usize, 0usize);
    let mut delays = Vec::new();
    let (mut sent, mut secs) = (0u64, 0.0f64);
    if let Some(k) = keep_logs {
        std::fs::create_dir_all(k).with_context(|| format!("--keep-logs {}", k.display()))?;
    }
    for (n, (name, trace)) in traces.iter().enumerate() {
        let (truth_us, source) = leocc_probe::sim::truth_of(trace);
        let mut run_ms = trace.duration_us() / 1000 - EMU_END_MARGIN_MS.min(trace.duration_us() / 1000);
        if let Some(m) = max_seconds {
            run_ms = run_ms.min((m * 1000.0) as u64);
        }
        println!("{name}: emulating {:.1} s ...", run_ms as f64 / 1e3);
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
        };
        let mut cfg = EmuConfig::new(trace.link(leocc_trace::Dir::Up), trace.link(leocc_trace::Dir::Down));
        cfg.label = name.clone();
        let emu = Emulator::start(&cfg)?;
        let t0 = emu.clock().t0_mono_ns();
        let h = emu.spawn_in(Side::Client, "leocc-probe", move || daemon::run(opts, None))?;
        let run = h.join().map_err(|_| anyhow::anyhow!("the probe thread panicked"))?;
        let end_us = (leocc_probe::net::mono_ns() - t0) / 1000;
        emu.stop();
        let summary = run?.map_err(anyhow::Error::msg)?;
        let text = std::fs::read_to_string(&log)?;
        let s = score_log(&text, t0, &truth_us, end_us).map_err(anyhow::Error::msg)?;
        if let Some(k) = keep_logs {
            let dest = k.join(format!("run-{}.jsonl", n + 1));
            leocc_trace::write_atomic(&dest, text.as_bytes()).with_context(|| format!("keeping the log as {}", dest.display()))?;
            println!("{name}: log kept as {} (trace time zero at CLOCK_MONOTONIC {t0} ns)", dest.display());
        }
        std::fs::remove_dir_all(&dir)?;
        println!(
            "{name}: truth {} ({source}), detections {}, matched {}, missed {:?} us, false {:?} us, {} probes, {} replies, {} suppressed",
            s.truth, s.detections, s.matched, s.missed, s.false_positives, summary.sent, summary.replies, summary.suppressed
        );
        truth += s.truth;
        dets += s.detections;
        matched += s.matched;
        delays.extend_from_slice(&s.delays_ns);
        sent += summary.sent;
        secs += run_ms as f64 / 1e3;
    }
    print!("{}", totals(truth, dets, matched));
    if let (Some(p50), Some(p95)) = (replay::percentile(&delays, 50.0), replay::percentile(&delays, 95.0)) {
        println!("detection delay from outage start: median {:.1} ms, p95 {:.1} ms", p50 as f64 / 1e3, p95 as f64 / 1e3);
    }
    let measured_bps = sent as f64 * leocc_probe::sim::PROBE_IP_BYTES as f64 * 8.0 / secs.max(1e-9);
    println!(
        "probe overhead (measured send rate): {:.1} kbit/s per direction at the IP layer ({:.3} % of a 10 Mbit/s uplink)",
        measured_bps / 1e3,
        measured_bps * 100.0 / REFERENCE_UPLINK_BPS
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_without_detections_print_na_not_100_percent() {
        let t = totals(3, 0, 0);
        assert!(t.contains("precision n/a, recall 0.00 %"), "{t}");
        assert!(totals(0, 0, 0).contains("precision n/a, recall n/a"));
        assert!(totals(4, 2, 1).contains("precision 50.00 %, recall 25.00 %"));
    }
}
