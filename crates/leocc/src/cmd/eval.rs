//! `leocc eval` (the matrix) and `leocc demo` (the README's main job).

use anyhow::{bail, Context, Result};
use clap::Args;
use leocc_eval::matrix::{parse_qdiscs, parse_queues, Engine, Matrix, Scenario, DEFAULT_QDISCS, DEFAULT_QUEUES};
use leocc_sim::Qdisc;
use leocc_eval::ray::RayOptions;
use leocc_eval::report;
use leocc_eval::results::{self, stat};
use leocc_eval::runner::{self, Runner};
use std::path::{Path, PathBuf};
use leocc_base::controls::{self, ORACLE_LEOCC};

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
    /// sessions behind the emulator, or trace-driven with --engine sim; DIR/video.jsonl),
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

/// Parses every trace of the matrix once, before any run: a bad one fails the eval with its file
/// and line, and the length of each (which bounds a run without --duration) is kept, so that
/// expanding a matrix of thousands of traces does not parse each again per buffer and scenario.
fn trace_seconds(traces: &[PathBuf]) -> Result<TraceSeconds> {
    traces
        .iter()
        .map(|t| {
            if !t.exists() {
                bail!("--trace {}: no such file{}", t.display(), similar_file(t));
            }
            let trace = leocc_trace::Trace::load(t).map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok((t.clone(), trace.duration_us() as f64 / 1e6))
        })
        .collect()
}

/// Each trace's length in seconds, by path.
type TraceSeconds = std::collections::HashMap<PathBuf, f64>;

/// ` (did you mean DIR/NAME?)` when `missing`'s directory holds a file whose name is a likely
/// typo of its name, else empty.
fn similar_file(missing: &Path) -> String {
    let (Some(name), dir) = (missing.file_name().and_then(|n| n.to_str()), missing.parent()) else {
        return String::new();
    };
    let dir = dir.filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    match leocc_sim::cc::closest(name, names.iter().map(String::as_str)) {
        Some(n) => format!(" (did you mean {}?)", missing.with_file_name(n).display()),
        None => String::new(),
    }
}

/// Runs a matrix (once per queue discipline of `qdiscs`) and writes the report; returns the
/// records of the matrix's runs.
fn run_matrix(m: &Matrix, qdiscs: &[Qdisc], out: &Path, jobs: usize, command_line: &str) -> Result<Vec<results::Record>> {
    run_matrix_on(m, qdiscs, out, jobs, None, None, command_line)
}

/// [`run_matrix`] on a Ray cluster when `ray` is given; `seconds` are the traces' lengths when
/// the caller has parsed them already.
fn run_matrix_on(
    m: &Matrix,
    qdiscs: &[Qdisc],
    out: &Path,
    jobs: usize,
    ray: Option<&RayOptions>,
    seconds: Option<TraceSeconds>,
    command_line: &str,
) -> Result<Vec<results::Record>> {
    let seconds = match seconds {
        Some(s) => s,
        None => trace_seconds(&m.traces)?,
    };
    let specs = m.expand_qdiscs(qdiscs, |t| seconds[t]);
    let runner = Runner { exe: std::env::current_exe()?, out_dir: out.to_path_buf(), jobs, progress: true };
    let outcome = match ray {
        Some(r) => runner.run_ray(&specs, r)?,
        None => runner.run(&specs)?,
    };
    let all = results::read(&runner::results_path(out))?;
    let report = report::write(out, &all, command_line)?;
    eprintln!(
        "eval: {} ran, {} already done, {} failed; results {}, report {}",
        outcome.ran,
        outcome.skipped,
        outcome.failed.len(),
        runner::results_path(out).display(),
        report.display()
    );
    for (key, why) in &outcome.failed {
        eprintln!("eval: FAILED {key}: {why}");
    }
    if !outcome.failed.is_empty() {
        bail!("{} of {} runs failed; rerun the same command to retry only those", outcome.failed.len(), specs.len());
    }
    let keys: std::collections::HashSet<_> = specs.iter().map(|s| s.key.as_str()).collect();
    Ok(all.into_iter().filter(|r| keys.contains(r.str("key"))).collect())
}

/// A plain table of the single-flow cells: one row per control.
fn print_table(records: &[results::Record]) {
    print!("{}", table(records));
}

/// [`print_table`]'s text. With more than one run in a cell, each mean carries ± the half-width
/// of its 95 % confidence interval (as the HTML report does), and a `runs` column says over how
/// many runs.
fn table(records: &[results::Record]) -> String {
    const COLS: [(&str, &str, f64); 7] = [
        ("thr Mbit/s", "throughput_mbps", 1.0),
        ("util %", "utilization", 100.0),
        ("RTT p95", "rtt_p95_ms", 1.0),
        ("OWD p95", "owd_p95_ms", 1.0),
        ("qdelay avg", "qdelay_avg_ms", 1.0),
        ("loss %", "loss_rate", 100.0),
        ("retx %", "retrans_rate", 100.0),
    ];
    let cells = results::by_cell(records);
    let single: Vec<_> = cells.iter().filter(|((_, _, _, scenario, _), _)| scenario == "single").collect();
    let spread = single.iter().any(|(_, runs)| runs.len() > 1);
    let rows: Vec<Vec<String>> = single
        .iter()
        .map(|((engine, trace, _, _, label), runs)| {
            let mut row = vec![
                engine.to_string(),
                trace.to_string(),
                runs.first().map(|r| r.queue_label()).unwrap_or_default(),
                label.to_string(),
                runs.len().to_string(),
            ];
            row.extend(COLS.iter().map(|(_, f, k)| stat(runs, f).map_or("–".to_string(), |s| s.fmt_ci(*k, 1))));
            row
        })
        .collect();
    let head: Vec<&str> = ["engine", "trace", "buffer", "cc", "runs"].into_iter().chain(COLS.iter().map(|c| c.0)).collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).chain([head[i].chars().count()]).max().unwrap_or(0);
    let widths: Vec<usize> = (0..head.len()).map(width).collect();
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            // The runs column only when it says something (some cell has several runs).
            if i == 4 && !spread {
                continue;
            }
            let pad = widths[i].saturating_sub(c.chars().count());
            // Names left-aligned, numbers right-aligned.
            if i < 4 {
                out += &format!("{c}{} ", " ".repeat(pad));
            } else {
                out += &format!("{}{c} ", " ".repeat(pad));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(head.clone());
    for r in &rows {
        out += &line(r.iter().map(String::as_str).collect());
    }
    if spread {
        out += &format!("{}\n", leocc_eval::stats::CI_LEGEND);
    }
    out
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
    let seconds = trace_seconds(&traces)?;
    let queues = parse_queues(&a.queue).map_err(|e| anyhow::anyhow!(e))?;
    let qdiscs = parse_qdiscs(&a.qdisc).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(expr) = &a.start_when {
        expr.parse::<leocc_probe::trigger::Expr>().map_err(|e| anyhow::anyhow!("--start-when '{expr}': {e}"))?;
    }
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
    let mut scenarios = a.scenario;
    if scenarios.contains(&Scenario::Video) {
        scenarios.retain(|s| *s != Scenario::Video);
        let plan = leocc_eval::video::VideoPlan {
            engine: a.engine,
            traces: traces.clone(),
            ccs: ccs.clone(),
            out_dir: a.out.clone(),
            leocc_exe: std::env::current_exe().context("finding the leocc binary")?,
        };
        print!("{}", leocc_eval::video::table(&leocc_eval::video::run(&plan)?));
        if scenarios.is_empty() {
            return Ok(());
        }
    }
    if scenarios.contains(&Scenario::Leotp) {
        scenarios.retain(|s| *s != Scenario::Leotp);
        let cfg = leocc_eval::leotp::EvalConfig {
            experiments: leocc_eval::leotp::EXPERIMENTS.iter().map(|e| e.to_string()).collect(),
            duration_s: a.duration.unwrap_or(leocc_eval::leotp::DEFAULT_DURATION_S),
            mbps: leocc_eval::leotp::DEFAULT_MBPS,
            seed: a.seed,
            seeds: u64::from(a.runs.max(1)),
            with_leocc: true,
            exe: std::env::current_exe().context("finding the leocc binary")?,
        };
        let summary = leocc_eval::leotp::evaluate(&cfg, &a.out.join("leotp"))?;
        eprintln!("eval: LEOTP summary {}", summary.display());
        if scenarios.is_empty() {
            return Ok(());
        }
    }
    if traces.is_empty() {
        bail!("give the traces to run over: --trace FILE... or --traces-from INDEX (only --scenario leotp makes its own)");
    }
    let m = Matrix {
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
    if let Some(sweep) = sweep {
        if qdiscs != [Qdisc::DropTail] {
            bail!("--sweep runs drop-tail queues only; leave out --qdisc {}", a.qdisc);
        }
        return run_sweep(&m, &sweep, &a.out, a.jobs.unwrap_or_else(cores), !a.no_fairness, seconds);
    }
    let mut m = m;
    if let Some(expr) = &a.start_when {
        m.traces = leocc_eval::starts::prepare(&m.traces, expr, a.starts.max(1), m.duration_s, m.seed, &a.out)?;
        let records = run_matrix(&m, &qdiscs, &a.out, a.jobs.unwrap_or_else(cores), &command_line())?;
        print!("{}", leocc_eval::starts::table(&leocc_eval::starts::compare(&records)));
        return Ok(());
    }
    let records = run_matrix_on(&m, &qdiscs, &a.out, a.jobs.unwrap_or_else(cores), ray.as_ref(), Some(seconds), &command_line())?;
    print_table(&records);
    Ok(())
}

/// `leocc eval --sweep`: the sweep, its page, and the average's table on stdout.
fn run_sweep(m: &Matrix, sweep: &leocc_eval::sweep::Sweep, out: &Path, jobs: usize, fairness: bool, seconds: TraceSeconds) -> Result<()> {
    let runner = Runner { exe: std::env::current_exe()?, out_dir: out.to_path_buf(), jobs, progress: true };
    let run = leocc_eval::sweep::SweepRun { matrix: m, sweep, runner: &runner, fairness, command_line: &command_line() };
    let (groups, page) = leocc_eval::sweep::run(&run, |t| seconds[t])?;
    if let Some(g) = groups.last() {
        print!("{}", leocc_eval::sweep::table(sweep, g));
    }
    eprintln!("eval: sweep page {}", page.display());
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
    let mut records = run_matrix(&sim, &[Qdisc::DropTail], &a.out, cores(), &command_line())?;
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
            match run_matrix(&emu, &[Qdisc::DropTail], &a.out, 1, &command_line()) {
                Ok(r) => records.extend(r),
                Err(e) => eprintln!("demo: the emulator part failed ({e:#}); the simulator results stand"),
            }
        }
    }
    print_table(&records);
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

    fn rec(label: &str, seed: u64, thr: f64) -> results::Record {
        results::Record(serde_json::json!({
            "engine": "sim", "trace": "t", "scenario": "single", "label": label, "seed": seed,
            "queue": "500", "queue_ms": 31.0, "throughput_mbps": thr, "rtt_p95_ms": 50.0,
        }))
    }

    #[test]
    fn the_table_shows_runs_and_spread_only_with_several_runs() {
        let one = table(&[rec("cubic", 1, 10.0), rec("leocc", 1, 12.0)]);
        assert!(!one.contains('±') && !one.contains("runs"), "{one}");
        let two = table(&[rec("cubic", 1, 10.0), rec("cubic", 2, 12.0), rec("leocc", 1, 12.0), rec("leocc", 2, 12.0)]);
        let head = two.lines().next().unwrap();
        assert!(head.contains("runs"), "{two}");
        // cubic: mean 11, t(0.975, 1) = 12.71 x sd 1.414 / sqrt 2 = 12.7.
        let cubic = two.lines().find(|l| l.contains("cubic")).unwrap();
        assert!(cubic.contains("11.0 ± 12.7") && cubic.contains(" 2 "), "{two}");
        assert!(two.contains("confidence interval"), "{two}");
        // Every row is as wide as the header: the columns line up.
        assert!(two.lines().take(3).all(|r| r.chars().count() == head.chars().count()), "{two}");
    }

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
