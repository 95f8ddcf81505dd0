//! `leocc eval` (the matrix) and `leocc demo` (the README's main job).

use anyhow::{bail, Context as _, Result};
use clap::Args;
use leocc_base::controls::{self, ORACLE_LEOCC};
use leocc_eval::experiment::{
    plan_all, plan_text, run_all, run_matrix, single_table, trace_seconds, Context, Experiment, LeotpExperiment, MatrixExperiment, StartsExperiment,
    SweepExperiment, VideoExperiment,
};
use leocc_eval::matrix::{parse_qdiscs, parse_queues, Engine, Matrix, Scenario, DEFAULT_QDISCS, DEFAULT_QUEUES};
use leocc_eval::ray::RayOptions;
use leocc_eval::report;
use leocc_eval::results;
use leocc_eval::runner;
use leocc_sim::Qdisc;
use std::path::{Path, PathBuf};

/// The names of `engine`'s controls, in the registry's order.
fn names(engine: controls::Engine) -> Vec<String> {
    controls::names(engine).into_iter().map(String::from).collect()
}

/// What `leocc eval` runs in the simulator without `--cc`: every control the simulator has but
/// the oracle (a diagnostic, run beside `leocc` when asked for), in the registry's order.
fn default_sim_ccs() -> Vec<String> {
    names(controls::Engine::Sim).into_iter().filter(|c| c != ORACLE_LEOCC).collect()
}

#[derive(Args)]
pub struct EvalArgs {
    /// Engine: sim (the simulator, every control) or emu (the emulator with kernel TCP). To put
    /// the two side by side, run emu first and then sim into the same folder: each simulator
    /// run then starts its flows where the emulator run of its cell and seed started its own
    /// (the tools' setup delays the emulator's by about a second), so both replay the same
    /// stretch of the trace.
    #[arg(long, default_value = "sim")]
    engine: Engine,
    /// Trace files (our format or mahimahi); one or more (or --traces-from).
    #[arg(long, num_args = 1..)]
    trace: Vec<PathBuf>,
    /// Take the traces from a dataset index written by `leocc trace import-dataset` (added to
    /// any --trace).
    #[arg(long, value_name = "INDEX")]
    traces_from: Option<PathBuf>,
    /// Only the index rows with COLUMN=VALUE (site, direction, name, number); repeatable, all
    /// must hold.
    #[arg(long = "where", value_name = "COLUMN=VALUE", requires = "traces_from")]
    filter: Vec<leocc_trace::dataset::Filter>,
    /// Draw this many of the (filtered) index rows at random instead of taking all.
    #[arg(long, value_name = "N", requires = "traces_from")]
    sample: Option<usize>,
    /// Seed of --sample's draw: the same seed draws the same traces.
    #[arg(long, default_value_t = 1, requires = "sample")]
    sample_seed: u64,
    /// Comma-separated controls [default: every simulator control (leocc, leocc-ref, cubic,
    /// reno, vegas, bbr, bbr3, copa, vivace, satcp); with --engine emu the kernel's: reno,
    /// cubic, bbr, leocc].
    #[arg(long, value_delimiter = ',')]
    cc: Option<Vec<String>>,
    /// Comma-separated scenarios: single, two-stream, fairness, vs-bbr, vs-cubic, video
    /// (adaptive video with RobustMPC per control and predictor, by python/leocc_ml: 3-minute
    /// sessions behind the emulator, or trace-driven with --engine sim; with --video-player
    /// dashjs, dash.js in Chromium per --video-abr rule; DIR/video.jsonl),
    /// leotp (seed 003's experiments on an emulated 3-10 hop ISL chain, LEOTP against kernel
    /// Cubic, BBR and LeoCC; --duration per run, default 20 s, --runs seeds; DIR/leotp/; root;
    /// `leocc leotp eval` runs a subset).
    #[arg(long, default_value = "single", value_delimiter = ',')]
    scenario: Vec<Scenario>,
    /// Runs per cell (seeds seed, seed+1, ...).
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds per run (default: the trace's length; two-stream is always 140 s).
    #[arg(long)]
    duration: Option<f64>,
    /// Bottleneck queues, comma separated; the matrix runs once per queue (the buffer axis).
    /// Each is packets (500), bytes (750kB) or time at the trace's mean capacity (150ms).
    /// Default: shallow 500 packets (the authors' replay setting) and deep 150 ms.
    #[arg(long, default_value = DEFAULT_QUEUES)]
    queue: String,
    /// Queue disciplines of the bottleneck queues, comma separated; the matrix runs once per
    /// discipline and buffer: droptail (an arriving packet that does not fit the buffer is
    /// dropped), dropfront (packets are dropped from the head of the queue until the arriving
    /// one fits; Starlink is reported to do this), codel (CoDel AQM, RFC 8289, target 5 ms,
    /// interval 100 ms: drops at dequeue when packets waited too long, under the buffer's
    /// drop-tail limit). Each run records its `qdisc`; the report names a discipline other than
    /// drop-tail beside the buffer.
    #[arg(long, default_value = DEFAULT_QDISCS, value_name = "droptail,dropfront,codel")]
    qdisc: String,
    /// Extra random loss rate, the same for every control.
    #[arg(long)]
    loss: Option<f64>,
    /// The video scenario's player: python (RobustMPC with each predictor, 3-minute sessions
    /// on demand) or dashjs (dash.js in headless Chromium, once per --video-abr rule; emulator
    /// only; `scripts/setup.sh --all` installs it).
    #[arg(long, value_enum, default_value = "python")]
    video_player: VideoPlayer,
    /// With --video-player dashjs: comma-separated ABR rules, dash.js's own (dynamic, bola,
    /// throughput, l2a, lolp) or mpc:PREDICTOR (RobustMPC as a dash.js rule: harmonic, leo,
    /// schedule, oracle).
    #[arg(long, value_delimiter = ',', default_value = "dynamic,l2a,mpc:harmonic,mpc:schedule")]
    video_abr: Vec<String>,
    /// With --video-player dashjs: the live stream's target latency, s (0: on demand).
    #[arg(long, default_value_t = 3.0)]
    video_latency: f64,
    /// With --video-player dashjs: segment length, s (divides 20); sessions last --duration
    /// (default 60 s) after the first frame.
    #[arg(long, default_value_t = 1.0)]
    video_segment: f64,
    /// Feed ground-truth reconfigurations instead of the detector (ablation only).
    #[arg(long)]
    oracle_reconfig: bool,
    /// Runs at once (default: the number of cores; the emulator always uses one).
    #[arg(long)]
    jobs: Option<usize>,
    /// Where the runs execute: local (child processes on this machine) or ray (one Ray task
    /// per run on the cluster at --address; simulator only).
    #[arg(long, value_enum, default_value = "local")]
    executor: Executor,
    /// The Ray cluster's head, HOST:PORT (with --executor ray).
    #[arg(long, required_if_eq("executor", "ray"))]
    address: Option<String>,
    /// The Python that has `ray` installed [default: $LEOCC_PYTHON, else the project's
    /// .venv/bin/python (found above the leocc binary or the working directory; `make test`
    /// sets it up), else python3].
    #[arg(long, requires = "address")]
    python: Option<PathBuf>,
    /// Output directory: results.jsonl, report.html, ts/ (time series: Parquet parts, CSVs while runs are unfolded), logs/.
    #[arg(short, long)]
    out: PathBuf,
    /// Sweep a control's parameter, CC.NAME=V1,V2,... (repeatable: the cartesian product of
    /// all, one control). Each setting runs next to the defaults; DIR/sweep.html gets heatmaps
    /// of throughput gain and p95-RTT inflation. Parameters: `leocc sim --list-params CC`.
    /// --cc defaults to the swept control.
    #[arg(long, value_name = "CC.NAME=V1,V2,...")]
    sweep: Vec<String>,
    /// With --sweep: skip the fairness runs of the chosen setting (and the defaults) against Cubic.
    #[arg(long, requires = "sweep")]
    no_fairness: bool,
    /// Check the options and list every run the command would make, one line each, without
    /// running any or writing anything (runs already in the output folder are listed too).
    #[arg(long)]
    dry_run: bool,
    /// Start runs where this trigger expression holds over each trace (e.g. 'event == 1',
    /// 'rtt > 1.5 * avg(rtt, 10s)'), and as many at random moments, then compare the two
    /// (median throughput and p95 RTT). What an expression sees over a trace:
    /// docs/evaluation.md, "Triggered starts".
    #[arg(long, value_name = "EXPR")]
    start_when: Option<String>,
    /// With --start-when: starts of each kind per trace (seeds still multiply them).
    #[arg(long, default_value_t = 5, requires = "start_when")]
    starts: usize,
}

#[derive(Args)]
pub struct DemoArgs {
    /// Output directory.
    #[arg(short, long, default_value = "out/demo")]
    out: PathBuf,
    /// Seeds per control.
    #[arg(long, default_value_t = 2)]
    runs: u32,
    /// Simulator only, even when the emulator could run.
    #[arg(long)]
    no_emu: bool,
    /// Keep the runs already in the output directory (default: start afresh, so the demo always
    /// shows this build).
    #[arg(long)]
    resume: bool,
}

/// Where the runs of `leocc eval` execute.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Executor {
    /// Child processes on this machine, --jobs at a time.
    Local,
    /// One Ray task per run on a Ray cluster.
    Ray,
}

fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

pub fn eval(a: EvalArgs) -> Result<()> {
    let sweep = if a.sweep.is_empty() {
        None
    } else {
        let axes = a.sweep.iter().map(|s| s.parse()).collect::<Result<Vec<_>, String>>().map_err(|e| anyhow::anyhow!(e))?;
        Some(leocc_eval::sweep::Sweep::new(axes).map_err(|e| anyhow::anyhow!(e))?)
    };
    let ccs = a.cc.or_else(|| sweep.as_ref().map(|s| vec![s.cc().to_string()])).unwrap_or_else(|| match a.engine {
        Engine::Sim => default_sim_ccs(),
        Engine::Emu => names(controls::Engine::Kernel),
    });
    let mut traces = a.trace;
    if let Some(index) = &a.traces_from {
        let rows = leocc_trace::dataset::read_index(index)?;
        let chosen = leocc_trace::dataset::select(&rows, &a.filter, a.sample, a.sample_seed);
        if chosen.is_empty() {
            bail!("{}: none of its {} traces matches the --where conditions", index.display(), rows.len());
        }
        eprintln!("eval: {} of the {} traces in {}", chosen.len(), rows.len(), index.display());
        traces.extend(chosen.into_iter().map(|e| e.trace));
    }
    // Everything the runs will need is checked here, before the first run starts: a typo in
    // the last control or trace must not cost the runs before it, nor surface as one failed
    // run per cell with an error about options the user never typed.
    leocc_eval::matrix::check_ccs(a.engine, &ccs).map_err(|e| anyhow::anyhow!(e))?;
    if a.dry_run && a.engine == Engine::Emu {
        // What every run checks of the host first (root, iperf3), here without loading
        // anything: a dry run that lists runs which cannot start would mislead.
        leocc_eval::emu_engine::check_host().context("the emulator engine cannot run here")?;
    }
    let seconds = trace_seconds(&traces)?;
    let queues = parse_queues(&a.queue).map_err(|e| anyhow::anyhow!(e))?;
    let qdiscs = parse_qdiscs(&a.qdisc).map_err(|e| anyhow::anyhow!(e))?;
    let ray = match a.executor {
        Executor::Local => None,
        Executor::Ray => {
            let ray = RayOptions {
                address: a.address.context("--executor ray needs --address HOST:PORT")?,
                python: a.python.unwrap_or_else(leocc_eval::ray::default_python),
            };
            leocc_eval::ray::check_python(&ray.python)?;
            Some(ray)
        }
    };
    let cx = Context {
        exe: std::env::current_exe().context("finding the leocc binary")?,
        out: a.out.clone(),
        jobs: a.jobs.unwrap_or_else(cores),
        command_line: command_line(),
    };
    // Whole experiments named as scenarios run first, in the order they were written; the flow
    // arrangements (single, vs-bbr, ...) make up one matrix after them.
    let mut experiments: Vec<Box<dyn Experiment>> = Vec::new();
    let mut scenarios = Vec::new();
    for s in a.scenario {
        match s {
            Scenario::Video => experiments.push(Box::new(VideoExperiment {
                plan: leocc_eval::video::VideoPlan {
                    engine: a.engine,
                    traces: traces.clone(),
                    ccs: ccs.clone(),
                    out_dir: a.out.clone(),
                    leocc_exe: cx.exe.clone(),
                    dashjs: video_player_setting(&a.video_player, a.engine, &a.video_abr, a.video_latency, a.video_segment, a.duration)?,
                },
            })),
            Scenario::Leotp => experiments.push(Box::new(LeotpExperiment {
                config: leocc_eval::leotp::EvalConfig {
                    experiments: leocc_eval::leotp::EXPERIMENTS.iter().map(|e| e.to_string()).collect(),
                    duration_s: a.duration.unwrap_or(leocc_eval::leotp::DEFAULT_DURATION_S),
                    mbps: leocc_eval::leotp::DEFAULT_MBPS,
                    seed: a.seed,
                    seeds: u64::from(a.runs.max(1)),
                    with_leocc: true,
                    exe: cx.exe.clone(),
                },
            })),
            s => scenarios.push(s),
        }
    }
    if !scenarios.is_empty() {
        let matrix = Matrix {
            engine: a.engine,
            traces,
            ccs,
            scenarios,
            runs: a.runs.max(1),
            seed: a.seed,
            duration_s: a.duration,
            queues,
            loss: a.loss,
            oracle_reconfig: a.oracle_reconfig,
        };
        if ray.is_some() && (sweep.is_some() || a.start_when.is_some()) {
            bail!("--executor ray runs plain matrices only; --sweep and --start-when run locally");
        }
        experiments.push(match (sweep, a.start_when) {
            (Some(sweep), _) => {
                if qdiscs != [Qdisc::DropTail] {
                    bail!("--sweep runs drop-tail queues only; leave out --qdisc {}", a.qdisc);
                }
                Box::new(SweepExperiment { matrix, sweep, fairness: !a.no_fairness, seconds })
            }
            (None, Some(expr)) => Box::new(StartsExperiment { matrix, qdiscs, expr, starts: a.starts.max(1) }),
            (None, None) => Box::new(MatrixExperiment { matrix, qdiscs, ray, seconds }),
        });
    }
    if a.dry_run {
        print!("{}", plan_text(&plan_all(&experiments)?));
        return Ok(());
    }
    print!("{}", run_all(&experiments, &cx)?);
    Ok(())
}

/// The bundled traces the demo runs, relative to the repository root.
const DEMO_TRACES: [&str; 2] = ["traces/starlink-down-60s.trace", "traces/starlink-up-60s.trace"];

/// Finds the repository's traces/ whether leocc runs from the checkout or from target/.
pub fn find_bundled(rel: &str) -> Result<PathBuf> {
    let mut candidates = vec![PathBuf::from(rel)];
    if let Ok(exe) = std::env::current_exe() {
        for anc in exe.ancestors().skip(1) {
            candidates.push(anc.join(rel));
        }
    }
    candidates
        .into_iter()
        .find(|p| p.exists())
        .with_context(|| format!("bundled trace {rel} not found: run `leocc demo` from the leocc checkout"))
}

pub fn demo(a: DemoArgs) -> Result<()> {
    let traces = DEMO_TRACES.iter().map(|t| find_bundled(t)).collect::<Result<Vec<_>>>()?;
    if !a.resume {
        for stale in [runner::results_path(&a.out), a.out.join("ts"), a.out.join("logs")] {
            if stale.is_dir() {
                std::fs::remove_dir_all(&stale)?;
            } else if stale.exists() {
                std::fs::remove_file(&stale)?;
            }
        }
    }
    eprintln!(
        "demo: LeoCC against the authors' code and eight controls on {} bundled LEO traces in the simulator ({} seeds each, buffers {DEFAULT_QUEUES})",
        traces.len(),
        a.runs
    );
    let sim = Matrix {
        engine: Engine::Sim,
        traces: traces.clone(),
        ccs: default_sim_ccs(),
        scenarios: vec![Scenario::Single],
        runs: a.runs.max(1),
        seed: 1,
        duration_s: None,
        queues: parse_queues(DEFAULT_QUEUES).map_err(|e| anyhow::anyhow!(e))?,
        loss: None,
        oracle_reconfig: false,
    };
    let cx = Context { exe: std::env::current_exe()?, out: a.out.clone(), jobs: cores(), command_line: command_line() };
    let mut records = run_matrix(&sim, &[Qdisc::DropTail], &cx)?;
    match emulator_unavailable() {
        Some(why) if !a.no_emu => eprintln!("demo: skipping the emulator part: {why}"),
        _ if a.no_emu => {}
        _ => {
            eprintln!(
                "demo: kernel reno, cubic, bbr and LeoCC (BPF) through the emulator on {} for {DEMO_EMU_SECONDS} s each (real time)",
                traces[0].display()
            );
            let emu = Matrix {
                engine: Engine::Emu,
                traces: vec![traces[0].clone()],
                ccs: names(controls::Engine::Kernel),
                runs: 1,
                duration_s: Some(DEMO_EMU_SECONDS),
                // One buffer (the authors' 500 packets) keeps the real-time part short.
                queues: vec![leocc_sim::QueueLimit::Packets(500)],
                ..sim
            };
            match run_matrix(&emu, &[Qdisc::DropTail], &Context { jobs: 1, ..cx.clone() }) {
                Ok(r) => records.extend(r),
                Err(e) => eprintln!("demo: the emulator part failed ({e:#}); the simulator results stand"),
            }
        }
    }
    print!("{}", single_table(&records));
    println!("\nreport: {}", a.out.join("report.html").display());
    Ok(())
}

/// Seconds per emulator run in the demo: four real-time runs keep the demo under five minutes.
const DEMO_EMU_SECONDS: f64 = 30.0;

/// Why the emulator engine cannot run here, if it cannot.
fn emulator_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (namespaces, TUN and BPF need root)".into());
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("the kernel has no BTF, so LeoCC cannot load as BPF struct_ops".into());
    }
    if !std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("iperf3").is_file())) {
        return Some("iperf3 is not installed (scripts/setup.sh installs it)".into());
    }
    None
}

#[derive(Args)]
pub struct ReportArgs {
    /// An eval output directory (with results.jsonl).
    dir: PathBuf,
    /// Print the README's markdown results table instead of rewriting report.html.
    #[arg(long)]
    markdown: bool,
}

/// Remakes report.html (or prints the markdown table) from a directory's results.jsonl.
pub fn report(a: ReportArgs) -> Result<()> {
    if a.dir.is_file() {
        bail!("{}: is a file; `leocc report` takes the eval output directory (the one holding results.jsonl)", a.dir.display());
    }
    let path = runner::results_path(&a.dir);
    let records = results::read(&path)?;
    if records.is_empty() {
        bail!("{}: no results (run `leocc eval ... -o {}` first)", path.display(), a.dir.display());
    }
    if a.markdown {
        print!("{}", report::markdown(&records));
    } else {
        let out = report::write(&a.dir, &records, &command_line())?;
        println!("report: {}", out.display());
    }
    Ok(())
}

#[derive(Args)]
pub struct EmuRunArgs {
    /// Trace file.
    #[arg(long)]
    trace: PathBuf,
    /// Flows: CC@START-STOP,... (seconds), as `leocc sim --flows`.
    #[arg(long)]
    flows: String,
    /// Seconds.
    #[arg(long)]
    duration: f64,
    /// Seed of the emulator's random loss.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Queue limit: packets, bytes or time at the data direction's mean capacity (150ms)
    /// [default: the emulator's 500 packets].
    #[arg(long)]
    queue: Option<leocc_sim::QueueLimit>,
    /// Queue discipline: droptail, dropfront or codel (as `leocc emu --qdisc`).
    #[arg(long, default_value = "droptail", value_name = "droptail|dropfront|codel")]
    qdisc: Qdisc,
    /// Extra random loss on the satellite segment.
    #[arg(long)]
    loss: Option<f64>,
    /// Not supported by the emulator engine (the kernel gets reconfigurations from the detector).
    #[arg(long)]
    oracle_reconfig: bool,
    /// Print the result as one JSON line (always on; kept for the runner's common arguments).
    #[arg(long)]
    json: bool,
    /// Per-100 ms CSV time series.
    #[arg(long)]
    timeseries: Option<PathBuf>,
    /// A LeoCC parameter for this run's LeoCC flows, leocc.NAME=VALUE (repeatable; as `leocc
    /// sim --param`; reset to the defaults after the run).
    #[arg(long, value_name = "leocc.NAME=VALUE")]
    param: Vec<String>,
    /// The senders' send buffer (tcp_wmem max in the sending namespace), as `leocc sim
    /// --sndbuf` [default: the kernel's, 4 MiB].
    #[arg(long, value_parser = leocc_sim::parse_sndbuf)]
    sndbuf: Option<u64>,
}

/// One emulator run of kernel TCP flows (what `leocc eval --engine emu` runs per cell).
pub fn emu_run(a: EmuRunArgs) -> Result<()> {
    if a.oracle_reconfig {
        bail!("--oracle-reconfig is a simulator ablation; the emulator engine always uses the detector");
    }
    let rec = leocc_eval::emu_engine::run(&leocc_eval::emu_engine::EmuRun {
        trace: a.trace,
        flows: a.flows,
        duration_s: a.duration,
        seed: a.seed,
        queue: a.queue,
        qdisc: a.qdisc,
        loss: a.loss,
        timeseries: a.timeseries,
        leocc_exe: std::env::current_exe()?,
        params: a.param,
        sndbuf_bytes: a.sndbuf,
    })?;
    println!("{}", rec.to_value());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_on_a_file_or_foreign_json_is_an_error() {
        let d = std::env::temp_dir().join(format!("leocc-cli-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("package.json");
        std::fs::write(&f, "{\"name\":\"x\"}\n").unwrap();
        let e = report(ReportArgs { dir: f, markdown: true }).unwrap_err();
        assert!(e.to_string().contains("is a file"), "{e}");
        std::fs::write(runner::results_path(&d), "{\"name\":\"x\"}\n").unwrap();
        let e = report(ReportArgs { dir: d.clone(), markdown: true }).unwrap_err();
        assert!(e.to_string().contains("not an eval result"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// The video scenario's player.
#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
enum VideoPlayer {
    Python,
    Dashjs,
}

/// The real player's setting from the command line (`None`: the Python player).
fn video_player_setting(player: &VideoPlayer, engine: Engine, rules: &[String], latency: f64, segment: f64, duration: Option<f64>) -> Result<Option<leocc_eval::video::DashSetting>> {
    if *player == VideoPlayer::Python {
        return Ok(None);
    }
    if engine != Engine::Emu {
        bail!("--video-player dashjs plays behind the emulator: add --engine emu");
    }
    let d = leocc_eval::video::DashSetting {
        rules: rules.to_vec(),
        latency_s: (latency > 0.0).then_some(latency),
        segment_s: segment,
        duration_s: duration.unwrap_or(DASHJS_SESSION_S),
    };
    d.check()?;
    Ok(Some(d))
}

/// Default length of a dash.js session after its first frame, s.
const DASHJS_SESSION_S: f64 = 60.0;
