//! `leocc probe ...`: the reconfiguration detector daemon, its status, and offline replay.
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use leocc_probe::daemon::{self, Options, PopSource};
use leocc_probe::detect::{DetectorConfig, Kind};
use leocc_probe::discover::{Prefix, DEFAULT_PREFIX};
use leocc_probe::instance;
use leocc_probe::net::parse_target;
use leocc_probe::replay::{self, Totals};
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
    /// Run the detector offline over a recording (`ping -D` output, `irtt client -o` JSON, or
    /// CSV `timestamp,rtt_ms`) and score it against the file's ground truth (`# truth` lines of
    /// `leocc probe gen`) or else Starlink's slots (seconds 12/27/42/57 of each minute).
    Replay {
        /// The recording.
        file: PathBuf,
        /// Δoutage: response interval above which an interval is a candidate, ms.
        #[arg(long, default_value_t = 45.0)]
        threshold_ms: f64,
        /// How candidates are judged: `evidence` (default) or `threshold` (the paper's rule).
        #[arg(long, default_value = "evidence")]
        scoring: String,
        /// Candidates at least this confident (0-100) are events.
        #[arg(long, default_value_t = leocc_probe::detect::DEFAULT_MIN_CONFIDENCE)]
        min_confidence: u8,
        /// Candidates below this confidence are not listed at all (as weak).
        #[arg(long, default_value_t = leocc_probe::detect::DEFAULT_REPORT_CONFIDENCE)]
        report_confidence: u8,
        /// Score against Starlink's slots even if the file has ground truth.
        #[arg(long)]
        slots: bool,
        /// Also print the stream's statistics (spacing, jitter, RI percentiles).
        #[arg(long)]
        stats: bool,
        /// Half-width of the window around each slot, ms.
        #[arg(long, default_value_t = DEFAULT_TOLERANCE_NS as f64 / NS_PER_MS)]
        slot_tolerance_ms: f64,
        /// Merge detections closer than this to the previous one, ms (0 = off, as the paper).
        #[arg(long, default_value_t = 0.0)]
        holdoff_ms: f64,
        /// Replay as the daemon runs with `--schedule NAME` (starlink): the learned schedule
        /// starts from its slots. Scoring is against the file's truth or Starlink's slots either way.
        #[arg(long, value_name = "NAME")]
        schedule: Option<String>,
        /// Print the full report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Generate a probe-reply stream with ground truth (CSV `timestamp_ns,rtt_ms`, truth in
    /// `# truth` comment lines), for tests and benchmarks; `leocc probe replay` reads it.
    Gen {
        #[command(flatten)]
        gen: GenArgs,
        /// Output file (`-` = stdout).
        #[arg(short, long, default_value = "-")]
        output: PathBuf,
    },
    /// Benchmark the detector on generated streams: both path types, every grid, 1-3 %
    /// bursty loss, 10-20 ms spacing; the paper's rule against the evidence scoring.
    Bench {
        /// Seeds per combination.
        #[arg(long, default_value_t = 3)]
        seeds: u64,
        /// Length of each stream, s.
        #[arg(long, default_value_t = 300.0)]
        duration: f64,
        /// Run every stream's detector as the daemon with `--schedule NAME` (starlink), also the
        /// streams on other grids, where the seed is wrong and must cost little.
        #[arg(long, value_name = "NAME")]
        schedule: Option<String>,
        /// Print one JSON object per combination and scoring.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate the detection logic in a pure simulation: the probe stream `leocc sim` feeds
    /// its detector (probes every interval over the trace's delays up to the PoP, held through
    /// outages, lost by the trace's loss rate, with the chosen noise), without flows, scored
    /// against the trace's ground truth. Prints precision, recall, detection delay and the
    /// probe overhead.
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
        /// Noise on the probe stream: none (the trace alone), bentpipe or isl (the fits to real
        /// recordings that `leocc sim` uses; its default is bentpipe).
        #[arg(long, default_value = "none", value_parser = leocc_sim::detector::ProbeNoiseModel::parse)]
        probe_noise: leocc_sim::detector::ProbeNoiseModel,
        /// Seconds the detector has been probing before the loop that is scored (rounded up
        /// to whole loops of the trace), as a daemon that runs all the time and as `leocc sim`
        /// warms it; 0: it starts cold with the trace.
        #[arg(long, default_value_t = 300.0)]
        detector_warmup: f64,
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

/// Parameters of a generated stream.
#[derive(Args)]
struct GenArgs {
    /// Path type: `bentpipe` (45-140 ms outages, probes held) or `isl` (600-750 ms, lost).
    #[arg(long, default_value = "bentpipe")]
    path: String,
    /// Schedule: starlink, oneweb, shifting, none, or period:SECONDS.
    #[arg(long, default_value = "starlink")]
    grid: String,
    /// Aperiodic reconfigurations per minute.
    #[arg(long, default_value_t = 0.5)]
    aperiodic_per_min: f64,
    /// Probe spacing, ms [default: by path: 13 on a bent pipe, 16 over ISLs].
    #[arg(long)]
    spacing_ms: Option<f64>,
    /// Mean background loss rate, percent (Gilbert-Elliott).
    #[arg(long, default_value_t = 2.0)]
    loss_pct: f64,
    /// Mean loss burst length, probes.
    #[arg(long, default_value_t = 2.0)]
    burst: f64,
    /// Length, s.
    #[arg(long, default_value_t = 300.0)]
    duration: f64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl GenArgs {
    fn config(&self) -> anyhow::Result<leocc_probe::gen::GenConfig> {
        use leocc_probe::gen::{GenConfig, Grid, PathKind};
        let path = match self.path.as_str() {
            "bentpipe" | "bent-pipe" => PathKind::BentPipe,
            "isl" => PathKind::Isl,
            other => bail!("--path: unknown path type '{other}' (bentpipe or isl)"),
        };
        let mut c = GenConfig::new(path, self.seed);
        c.grid = Grid::parse(&self.grid).map_err(anyhow::Error::msg).context("--grid")?;
        c.aperiodic_per_s = self.aperiodic_per_min / 60.0;
        if let Some(s) = self.spacing_ms {
            c.spacing_ms = s;
        }
        c.loss = self.loss_pct / 100.0;
        c.burst_len = self.burst;
        c.duration_s = self.duration;
        c.validate().map_err(anyhow::Error::msg)?;
        Ok(c)
    }

    fn command(&self, c: &leocc_probe::gen::GenConfig) -> String {
        format!(
            "leocc probe gen --path {} --grid {} --aperiodic-per-min {} --spacing-ms {} --loss-pct {} --burst {} --duration {} --seed {}",
            self.path, self.grid, self.aperiodic_per_min, c.spacing_ms, self.loss_pct, self.burst, self.duration, self.seed
        )
    }
}

fn scoring_of(name: &str) -> anyhow::Result<leocc_probe::detect::Scoring> {
    match name {
        "evidence" => Ok(leocc_probe::detect::Scoring::Evidence),
        "threshold" => Ok(leocc_probe::detect::Scoring::Threshold),
        other => bail!("--scoring: unknown '{other}' (evidence or threshold)"),
    }
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
    /// Δoutage: response interval above which an interval is a candidate, ms.
    #[arg(long, default_value_t = 45.0)]
    threshold_ms: f64,
    /// How candidates are judged: `evidence` (default: the gap's whole signature against the
    /// stream's statistics and learned schedule) or `threshold` (the paper's rule).
    #[arg(long, default_value = "evidence")]
    scoring: String,
    /// Candidates at least this confident (0-100) are published as reconfigurations; weaker
    /// ones are only logged (`weak`).
    #[arg(long, default_value_t = leocc_probe::detect::DEFAULT_MIN_CONFIDENCE)]
    min_confidence: u8,
    /// Probe interval, ms.
    #[arg(long, default_value_t = 10.0)]
    interval_ms: f64,
    /// Append events as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Stop after S seconds (default: run until SIGTERM/SIGINT).
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// The link's wall-clock reconfiguration schedule (starlink: seconds 12/27/42/57): events
    /// are labelled periodic or aperiodic, unseen slots are flagged, and the learned schedule
    /// starts from these slots instead of from three confident events.
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
    /// Serve the measurements (RTTs, loss, events, confidence) in Prometheus' text format at
    /// http://ADDR/metrics, e.g. 127.0.0.1:9464 (no authentication: bind it where only your
    /// Prometheus reaches).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// Run the matching --exec when this expression over the measurements holds, e.g.
    /// 'rtt > 10 * avg(rtt, 10s)' (repeatable, paired with --exec in order). Variables rtt, ri
    /// (ms), loss, event, confidence, srtt, min_rtt; avg/min/max(VAR, 10s); docs/evaluation.md.
    #[arg(long, value_name = "EXPR")]
    trigger: Vec<String>,
    /// Shell command of a --trigger; the matched values are in its environment (LEOCC_RTT, ...).
    #[arg(long, value_name = "CMD")]
    exec: Vec<String>,
    /// Least time between two firings of one trigger, seconds.
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    trigger_every: f64,
}

/// Entry point of `leocc probe`.
pub fn run(a: ProbeArgs) -> anyhow::Result<()> {
    match a.action {
        Some(ProbeAction::Status { json, run_dir }) => status(run_dir, json),
        Some(ProbeAction::Replay { file, threshold_ms, scoring, min_confidence, report_confidence, slots, stats, slot_tolerance_ms, holdoff_ms, schedule, json }) => {
            check_seed(schedule.as_deref())?;
            let cfg = DetectorConfig {
                seed_schedule: schedule.is_some(),
                threshold_ns: ms_to_ns("threshold-ms", threshold_ms, 1.0)?,
                holdoff_ns: ms_to_ns("holdoff-ms", holdoff_ms, 0.0)?,
                scoring: scoring_of(&scoring)?,
                min_confidence,
                report_confidence,
                ..DetectorConfig::default()
            };
            replay_cmd(&file, cfg, slots, stats, slot_tolerance_ms, json)
        }
        Some(ProbeAction::Gen { gen, output }) => gen_cmd(&gen, &output),
        Some(ProbeAction::Bench { seeds, duration, schedule, json }) => {
            check_seed(schedule.as_deref())?;
            bench_cmd(seeds, duration, schedule.is_some(), json)
        }
        Some(ProbeAction::Simulate { traces, threshold_ms, interval_ms, seed, probe_noise, detector_warmup, json }) => {
            if !(0.0..=86_400.0).contains(&detector_warmup) {
                anyhow::bail!("--detector-warmup {detector_warmup}: seconds from 0 to 86400");
            }
            simulate_cmd(&traces.load()?, threshold_ms, interval_ms, seed, probe_noise, (detector_warmup * 1e6) as u64, json)
        }
        Some(ProbeAction::Emulate { traces, threshold_ms, max_seconds, keep_logs }) => {
            emulate_cmd(&traces.load()?, threshold_ms, max_seconds, keep_logs.as_deref())
        }
        None => run_daemon(a.run),
    }
}

/// Checks a `--schedule` name for replay and bench, whose scoring labels with Starlink's slots
/// whatever the seed (only Starlink's are known by name today).
fn check_seed(name: Option<&str>) -> anyhow::Result<()> {
    match name {
        None => Ok(()),
        Some(n) => Schedule::by_name(n, DEFAULT_TOLERANCE_NS).map(|_| ()).map_err(|e| anyhow::anyhow!("--schedule: {e}")),
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
    // Before anything starts: a bad expression never reaches a running daemon.
    let actions = leocc_probe::trigger::actions(&a.trigger, &a.exec, a.trigger_every).map_err(anyhow::Error::msg)?;
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
    if a.min_confidence > 100 {
        bail!("--min-confidence must be 0..100 (got {})", a.min_confidence);
    }
    let detector = DetectorConfig {
        threshold_ns: ms_to_ns("threshold-ms", a.threshold_ms, 1.0)?,
        holdoff_ns: ms_to_ns("holdoff-ms", a.holdoff_ms, 0.0)?,
        schedule: schedule_of(a.schedule.as_deref(), a.slot_tolerance_ms)?,
        seed_schedule: a.schedule.is_some(),
        scoring: scoring_of(&a.scoring)?,
        min_confidence: a.min_confidence,
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
        metrics: a.metrics,
    };
    let publisher: Option<Box<dyn daemon::Publisher>> = if a.no_kernel { None } else { kernel_publisher(a.signal_map) };
    // User-space transports (QUIC) subscribe to the same signal: leocc_probe::subscribe.
    let sock = opts.run_dir.join(leocc_probe::subscribe::SOCKET_NAME);
    let publisher: Option<Box<dyn daemon::Publisher>> = Some(Box::new(leocc_probe::subscribe::Tee::new(sock, publisher)));
    daemon::run_with_triggers(opts, publisher, actions).map_err(anyhow::Error::msg)?;
    Ok(())
}

/// The kernel publisher (leocc_probe::kernel_map); the map may be absent (LeoCC not loaded),
/// which the daemon reports once and retries.
fn kernel_publisher(path: PathBuf) -> Option<Box<dyn daemon::Publisher>> {
    Some(Box::new(leocc_probe::kernel_map::KernelMap::new(&path)))
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
    println!(
        "  events         {} reconfigurations (confidence >= {}), {} weak candidates, {} missed slots, {} suppressed, {} wall-clock jumps",
        c["events"], s["min_confidence"], c["weak"], c["missed_slots"], c["suppressed"], c["wall_jumps"]
    );
    let seeded = if s["schedule_seeded"].as_bool() == Some(true) { " (from --schedule, holding)" } else { "" };
    let learned = s["learned_period_ms"].as_f64().map_or("none yet".to_string(), |p| format!("period {:.3} s{seeded}", p / 1e3));
    println!("  scoring        {}, probe spacing {} ms, learned schedule: {learned}", s["scoring"].as_str().unwrap_or("?"), f(&s["spacing_ms"]));
    println!("  kernel         {}", s["kernel"].as_str().unwrap_or("?"));
    let sub = &s["subscribers"];
    if sub.is_object() {
        println!(
            "  subscribers    {} of at most {} ({}, socket mode {:o}); refused {} (full), {} (not allowed); dropped {}",
            sub["count"],
            sub["max"],
            sub["access"].as_str().unwrap_or("?"),
            sub["mode"].as_u64().unwrap_or(0),
            sub["refused_full"],
            sub["refused_credentials"],
            sub["dropped"]
        );
    }
    if let Some(evs) = s["recent_events"].as_array() {
        if !evs.is_empty() {
            println!("  latest events:");
        }
        for e in evs.iter().rev() {
            println!(
                "    #{:<5} wall {:.3}  confidence {:>3}  ri {:>7} ms  {:<10} rtt {} ms",
                e["seq"],
                e["wall"].as_f64().unwrap_or(0.0),
                e["confidence"].as_u64().map_or("-".to_string(), |c| c.to_string()),
                f(&e["ri_ms"]),
                e["kind"].as_str().unwrap_or("?"),
                f(&e["rtt_ms"])
            );
        }
    }
    Ok(())
}

fn replay_cmd(file: &std::path::Path, cfg: DetectorConfig, force_slots: bool, stats: bool, tol_ms: f64, json: bool) -> anyhow::Result<()> {
    let rec = leocc_probe::input::load(file)?;
    let sched = schedule_of(Some("starlink"), tol_ms)?.expect("named schedule");
    let truth = (!force_slots && !rec.truth.is_empty()).then_some(&rec.truth[..]);
    let scoring = cfg.scoring;
    let (threshold_ms, min_conf) = (cfg.threshold_ns as f64 / NS_PER_MS, cfg.min_confidence);
    let mut r = replay::replay_report(&rec.replies, cfg, &sched, truth);
    // Lost probes: sent minus replies when the file says how many were sent; a CSV without
    // that line has no sequence numbers to count them by (its `lost` would always be 0).
    let lost = match (rec.sent, rec.format) {
        (Some(sent), _) => Some((sent as i64 - r.replies as i64).max(0)),
        (None, leocc_probe::input::Format::Csv) => None,
        (None, _) => Some(r.lost),
    };
    r.lost = lost.unwrap_or(0);
    let st = if stats { leocc_probe::gen::stream_stats(&rec.replies) } else { None };
    if json {
        let mut v = serde_json::to_value(&r)?;
        v["format"] = serde_json::to_value(rec.format)?;
        v["lost"] = serde_json::json!(lost);
        v["delay_median_ns"] = serde_json::json!(replay::percentile(&r.score.delays_ns, 50.0));
        v["delay_p95_ns"] = serde_json::json!(replay::percentile(&r.score.delays_ns, 95.0));
        if let Some(st) = st {
            v["stats"] = serde_json::to_value(st)?;
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let ms = |ns: i64| ns as f64 / NS_PER_MS;
    println!(
        "{} ({}): {} replies over {:.1} s, median spacing {:.1} ms, {}",
        file.display(),
        rec.format.describe(),
        r.replies,
        (r.span_ns.1 - r.span_ns.0) as f64 / 1e9,
        r.median_spacing_ns as f64 / NS_PER_MS,
        match (lost, rec.sent) {
            (Some(l), Some(sent)) => format!("{l} of {sent} probes lost"),
            (Some(l), None) => format!("{l} probes lost"),
            (None, _) => "probes lost unknown (the CSV has no sequence numbers nor a `# probes sent N` line)".to_string(),
        }
    );
    // Events are numbered as listed here, from #1; the detector's own sequence numbers also
    // count the weak candidates and the warm-up, which are not listed.
    let number = |seq: u64| r.events.iter().position(|e| e.seq == seq).map_or(seq, |i| i as u64 + 1);
    if let Some(st) = &st {
        println!("stats: {}", serde_json::to_string(st)?);
    }
    let against = if r.truth_source == "truth" { "the file's ground truth" } else { "Starlink slots 12/27/42/57 s" };
    let scoring = match scoring {
        leocc_probe::detect::Scoring::Threshold => "threshold (the paper's rule)",
        leocc_probe::detect::Scoring::Evidence => "evidence",
    };
    println!("scoring {scoring}, threshold {threshold_ms} ms, min confidence {min_conf}; against {against} ± {tol_ms} ms");
    if let Some(p) = r.learned_period_ns {
        println!("learned schedule: period {:.3} s", p as f64 / 1e9);
    }
    println!("{:>18}  {:>6}  {:>6}  {:>5}  {:>9}  {:>9}", "true time (wall)", "second", "event", "conf", "start ms", "delay ms");
    for sl in &r.slots {
        let sec = sl.time_ns.rem_euclid(60_000_000_000) as f64 / 1e9;
        match (sl.event_seq, sl.confidence, sl.offset_ns, sl.delay_ns) {
            (Some(seq), Some(c), Some(o), Some(d)) => {
                println!("{:>18.3}  {:>6.2}  {:>6}  {:>5}  {:>+9.0}  {:>9.0}", sl.time_ns as f64 / 1e9, sec, format!("#{}", number(seq)), c, ms(o), ms(d))
            }
            _ => println!("{:>18.3}  {:>6.2}  {:>6}", sl.time_ns as f64 / 1e9, sec, "MISSED"),
        }
    }
    let s = &r.score;
    if !s.false_positives.is_empty() {
        println!("false events (outage start, confidence, RI):");
        for e in r.events.iter().filter(|e| s.false_positives.contains(&e.start_wall_ns)) {
            let sec = e.start_wall_ns.rem_euclid(60_000_000_000) as f64 / 1e9;
            println!("  #{:<5} {:.3} (second {:.2})  conf {:>3}  RI {:.1} ms  S {:.1} ms  step {:+.1} ms", number(e.seq), e.start_wall_ns as f64 / 1e9, sec, e.confidence, e.ri_ns as f64 / NS_PER_MS, e.send_gap_ns as f64 / NS_PER_MS, ms(e.rtt_step_ns));
        }
    }
    let periodic = r.events.iter().filter(|e| e.kind == Kind::Periodic).count();
    println!(
        "events {} ({} periodic, {} aperiodic), {} weak candidates; true {}, detected {}, missed {}",
        r.events.len(),
        periodic,
        r.events.len() - periodic,
        r.weak.len(),
        s.truth,
        s.matched,
        s.missed.len()
    );
    let pct = |v: f64, of: usize| if of == 0 { "–".to_string() } else { format!("{:.1} %", v * 100.0) };
    println!("precision {} ({} of {} events matched), recall {}", pct(s.precision, s.detections), s.matched, s.detections, pct(s.recall, s.truth));
    if let (Some(p50), Some(p95)) = (replay::percentile(&s.delays_ns, 50.0), replay::percentile(&s.delays_ns, 95.0)) {
        println!("detection delay from the true time: median {:.0} ms, p95 {:.0} ms", ms(p50), ms(p95));
    }
    Ok(())
}

fn gen_cmd(g: &GenArgs, output: &std::path::Path) -> anyhow::Result<()> {
    let c = g.config()?;
    let s = leocc_probe::gen::generate(&c).map_err(anyhow::Error::msg)?;
    let csv = leocc_probe::gen::to_csv(&s, &g.command(&c));
    if output == std::path::Path::new("-") {
        print!("{csv}");
    } else {
        std::fs::write(output, csv).with_context(|| format!("writing {}", output.display()))?;
        eprintln!("{}: {} replies, {} true reconfigurations", output.display(), s.replies.len(), s.truth.len());
    }
    Ok(())
}

/// One line of the bench table: true events, detections, precision, recall, median delay.
/// A precision with no events (or a recall with no true events) is undefined, not 100 %: "–".
fn bench_line(t: &Totals) -> String {
    let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{:.1} %", v * 100.0));
    let delay = replay::percentile(&t.delays_ns, 50.0).map_or("–".to_string(), |d| format!("{:.0} ms", d as f64 / NS_PER_MS));
    format!("{:>5} {:>5} {:>9} {:>9} {:>10}", t.truth, t.detections, pct(t.precision()), pct(t.recall()), delay)
}

fn bench_cmd(seeds: u64, duration: f64, seed_schedule: bool, json: bool) -> anyhow::Result<()> {
    use leocc_probe::bench::{self, SCORINGS};
    if !json {
        let seeded = if seed_schedule { ", every detector seeded with Starlink's slots" } else { "" };
        println!("{} s streams, seeds 1..={seeds}, loss 1/2/3 % in bursts of 2, spacing 10/15/20 ms, 0.5 aperiodic events/min{seeded}", duration);
        println!("{:<9} {:<9} {:<9} {:>5} {:>5} {:>9} {:>9} {:>10}", "path", "grid", "scoring", "true", "dets", "precision", "recall", "delay p50");
    }
    let (groups, all) = bench::run(seeds, duration, seed_schedule, |c| {
        if json {
            println!("{}", serde_json::json!({"path": c.path, "grid": c.grid, "loss": c.loss, "spacing_ms": c.spacing_ms, "seed": c.seed, "scoring": c.scoring, "score": c.score}));
        }
    })
    .map_err(anyhow::Error::msg)?;
    if json {
        return Ok(());
    }
    let name = |sc: &leocc_probe::detect::Scoring| format!("{sc:?}").to_lowercase();
    for g in &groups {
        for (sc, t) in SCORINGS.iter().zip(&g.totals) {
            println!("{:<9} {:<9} {:<9} {}", g.path, g.grid, name(sc), bench_line(t));
        }
    }
    for (sc, t) in SCORINGS.iter().zip(&all) {
        println!("{:<9} {:<9} {:<9} {}", "all", "all", name(sc), bench_line(t));
    }
    Ok(())
}

/// The totals lines of `simulate` and `emulate` (scores in µs). A ratio over nothing is "n/a": with no
/// detections, "precision 100.00 %" would read as a perfect detector.
fn totals(t: &Totals) -> String {
    let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |x| format!("{:.2} %", x * 100.0));
    let mut out = format!(
        "total: truth {}, detections {}, matched {}\nprecision {}, recall {}\n",
        t.truth,
        t.detections,
        t.matched,
        pct(t.precision()),
        pct(t.recall())
    );
    // These scores are on the trace's clock, in µs (leocc_probe::sim), not ns.
    if let (Some(p50), Some(p95)) = (replay::percentile(&t.delays_ns, 50.0), replay::percentile(&t.delays_ns, 95.0)) {
        out += &format!("detection delay from outage start: median {:.1} ms, p95 {:.1} ms\n", p50 as f64 / 1e3, p95 as f64 / 1e3);
    }
    out
}

/// Link capacity the overhead is quoted against (issue 7): a 10 Mbit/s uplink.
const REFERENCE_UPLINK_BPS: f64 = 10e6;

fn overhead_line(what: &str, bps: f64) -> String {
    format!("probe overhead{what}: {:.1} kbit/s per direction at the IP layer ({:.3} % of a 10 Mbit/s uplink)", bps / 1e3, bps * 100.0 / REFERENCE_UPLINK_BPS)
}

fn simulate_cmd(
    traces: &[(String, leocc_trace::Trace)],
    threshold_ms: f64,
    interval_ms: f64,
    seed: u64,
    noise: leocc_sim::detector::ProbeNoiseModel,
    warmup_us: u64,
    json: bool,
) -> anyhow::Result<()> {
    use leocc_probe::icmp::overhead_bps;
    use leocc_sim::probe_trace::{simulate, SimConfig};
    let cfg = SimConfig {
        interval_us: ms_to_ns("interval-ms", interval_ms, 1.0)? / 1000,
        seed,
        detector: DetectorConfig { threshold_ns: ms_to_ns("threshold-ms", threshold_ms, 1.0)?, ..DetectorConfig::default() },
        noise,
        warmup_us,
    };
    let mut all = Totals::default();
    for (name, trace) in traces {
        let r = simulate(trace, &cfg);
        if json {
            println!("{}", serde_json::json!({"trace": name, "result": r}));
        } else {
            println!(
                "{}: truth {} ({}), detections {}, matched {}, missed {:?} us, false {:?} us",
                name, r.score.truth, r.truth_source, r.score.detections, r.score.matched, r.score.missed, r.score.false_positives
            );
        }
        all.add(&r.score);
    }
    if !json {
        print!("{}", totals(&all));
        println!("{}", overhead_line("", overhead_bps(cfg.interval_us)));
    }
    Ok(())
}

fn emulate_cmd(
    traces: &[(String, leocc_trace::Trace)],
    threshold_ms: f64,
    max_seconds: Option<f64>,
    keep_logs: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use leocc_eval::detector::{emulate, run_ms};
    leocc_emu::shell::check_privileges()?;
    let detector = DetectorConfig { threshold_ns: ms_to_ns("threshold-ms", threshold_ms, 1.0)?, ..DetectorConfig::default() };
    if let Some(k) = keep_logs {
        std::fs::create_dir_all(k).with_context(|| format!("--keep-logs {}", k.display()))?;
    }
    let mut all = Totals::default();
    let (mut sent, mut secs) = (0u64, 0.0f64);
    for (n, (name, trace)) in traces.iter().enumerate() {
        let ms = run_ms(trace, max_seconds);
        println!("{name}: emulating {:.1} s ...", ms as f64 / 1e3);
        let keep = keep_logs.map(|k| k.join(format!("run-{}.jsonl", n + 1)));
        let r = emulate(name, trace, &detector, ms, keep.as_deref())?;
        if let Some((dest, t0)) = &r.kept_log {
            println!("{name}: log kept as {} (trace time zero at CLOCK_MONOTONIC {t0} ns)", dest.display());
        }
        let (s, sum) = (&r.score, &r.summary);
        println!(
            "{name}: truth {} ({}), detections {}, matched {}, missed {:?} us, false {:?} us, {} probes, {} replies, {} suppressed",
            s.truth, r.truth_source, s.detections, s.matched, s.missed, s.false_positives, sum.sent, sum.replies, sum.suppressed
        );
        all.add(s);
        sent += sum.sent;
        secs += r.seconds;
    }
    print!("{}", totals(&all));
    let measured_bps = sent as f64 * leocc_probe::icmp::PROBE_IP_BYTES as f64 * 8.0 / secs.max(1e-9);
    println!("{}", overhead_line(" (measured send rate)", measured_bps));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_without_detections_print_na_not_100_percent() {
        let t = |truth, detections, matched| totals(&Totals { truth, detections, matched, delays_ns: Vec::new() });
        assert!(t(3, 0, 0).contains("precision n/a, recall 0.00 %"), "{}", t(3, 0, 0));
        assert!(t(0, 0, 0).contains("precision n/a, recall n/a"));
        assert!(t(4, 2, 1).contains("precision 50.00 %, recall 25.00 %"));
    }

    #[test]
    fn bench_cells_without_events_print_a_dash_not_100_percent() {
        let line = |truth, detections, matched| bench_line(&Totals { truth, detections, matched, delays_ns: Vec::new() });
        let none = line(3, 0, 0);
        assert!(!none.contains("100.0") && none.matches('–').count() == 2, "{none}");
        assert!(line(4, 2, 1).contains("50.0 %") && line(4, 2, 1).contains("25.0 %"), "{}", line(4, 2, 1));
    }
}
