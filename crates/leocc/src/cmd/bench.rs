//! `leocc bench ...`: speed and memory measurements that print numbers (never timed tests).
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use leocc_sim::{constant_trace, QueueLimit, Scenario, World};

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCmd {
    /// Simulator speed (simulated s per wall s, packets/s) and peak memory over a long run.
    Sim(BenchSimArgs),
    /// Emulator accuracy and speed: delivered vs offered, release-time error, highest rate, CPU.
    Emu(crate::cmd::emu::BenchEmuArgs),
    /// CPU per ACK of the BPF LeoCC against the kernel's bbr on the same veth transfer.
    Kernel(crate::cmd::kernel::BenchArgs),
    /// LeoCC's heuristics and departures from the paper, each turned off in turn (simulator).
    Ablation(BenchAblationArgs),
    /// The Ray executor's overhead: one simulator matrix run locally and on a Ray cluster with
    /// as many CPUs, side by side.
    Ray(BenchRayArgs),
    /// Wall time of a parameter sweep in the simulator (`leocc eval --sweep`, child processes,
    /// all cores): by default seed 004's 4 x 4 grid of bbr3 over the two bundled Starlink traces
    /// x 3 seeds, one buffer; target under 2 minutes.
    Sweep(BenchSweepArgs),
    /// LEOTP mid-node forwarding speed on one core (loopback: producer, mid-node, consumer).
    Leotp(crate::cmd::leotp::BenchLeotpArgs),
    /// Robustness over drawn paths: the control alone, against Cubic and BBRv1, after a
    /// competitor leaves, three staggered flows and false events, in the simulator over paths
    /// drawn from wide ranges; worst case, worst 10 % and median per metric, with the seed of
    /// the worst path.
    Robust(BenchRobustArgs),
    /// The simulator against the kernel: the same traces x controls x buffers x loss through
    /// both engines, sim/emu ratios of throughput, p95 RTT, mean queueing delay (and share).
    Fidelity(BenchFidelityArgs),
}

/// Options of `leocc bench ray`.
#[derive(Args, Debug)]
pub struct BenchRayArgs {
    /// The Ray cluster's head, HOST:PORT.
    #[arg(long)]
    pub address: String,
    /// The Python that has `ray` installed [default: $LEOCC_PYTHON, else the project's
    /// .venv/bin/python, else python3].
    #[arg(long)]
    pub python: Option<std::path::PathBuf>,
    /// Local runs at once: the cluster's worker CPUs, so both sides have the same cores.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Runs in the matrix (seeds of leocc, cubic and bbr on the bundled Starlink downlink).
    #[arg(long, default_value_t = 24)]
    pub runs: u32,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 120.0)]
    pub duration: f64,
    /// Rounds, local and Ray alternating; the fastest of each is compared (a shared machine's
    /// noise only ever adds time).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
}

fn run_ray_bench(a: BenchRayArgs) -> anyhow::Result<()> {
    use leocc_eval::matrix::{Engine, Matrix, Scenario};
    use leocc_eval::ray::{default_python, RayOptions};
    use leocc_eval::runner::Runner;

    let ccs = ["leocc", "cubic", "bbr"];
    let m = Matrix {
        engine: Engine::Sim,
        traces: vec![crate::cmd::eval::find_bundled("traces/starlink-down-60s.trace")?],
        ccs: ccs.iter().map(|s| s.to_string()).collect(),
        scenarios: vec![Scenario::Single],
        runs: a.runs.div_ceil(ccs.len() as u32).max(1),
        seed: 1,
        duration_s: Some(a.duration),
        queues: vec![QueueLimit::Packets(500)],
        loss: None,
        oracle_reconfig: false,
    };
    let specs = m.expand(|_| a.duration);
    let ray = RayOptions { address: a.address, python: a.python.unwrap_or_else(default_python) };
    let scratch = std::env::temp_dir().join(format!("leocc-bench-ray-{}", std::process::id()));
    let time = |name: &str, on_ray: bool| -> anyhow::Result<f64> {
        let out = scratch.join(name);
        let _ = std::fs::remove_dir_all(&out);
        let runner = Runner { exe: std::env::current_exe()?, out_dir: out, jobs: a.jobs, progress: false };
        let t = Instant::now();
        let o = if on_ray { runner.run_ray(&specs, &ray)? } else { runner.run(&specs)? };
        anyhow::ensure!(o.failed.is_empty(), "{name}: {} runs failed: {:?}", o.failed.len(), o.failed.first());
        Ok(t.elapsed().as_secs_f64())
    };
    eprintln!("bench ray: {} runs of {} s, local with {} jobs, then on {}", specs.len(), a.duration, a.jobs, ray.address);
    let (mut local, mut on_ray) = (f64::INFINITY, f64::INFINITY);
    for round in 1..=a.repeat.max(1) {
        let (l, r) = (time("local", false)?, time("ray", true)?);
        eprintln!("bench ray: round {round}: local {l:.2} s, ray {r:.2} s");
        (local, on_ray) = (local.min(l), on_ray.min(r));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!(
        "runs {}  local {:.2} s  ray {:.2} s (fastest of {})  overhead {:+.1} %",
        specs.len(),
        local,
        on_ray,
        a.repeat.max(1),
        (on_ray / local - 1.0) * 100.0
    );
    Ok(())
}


/// Options of `leocc bench sweep`.
#[derive(Args, Debug)]
pub struct BenchSweepArgs {
    /// The grid, as `leocc eval --sweep`: one or more axes after one --sweep, or --sweep again.
    #[arg(long, num_args = 1.., default_values_t = [SWEEP_ALPHA.to_string(), SWEEP_BETA.to_string()])]
    pub sweep: Vec<String>,
    /// Seeds per setting.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Buffers, as `leocc eval --queue`.
    #[arg(long, default_value = "500")]
    pub queue: String,
    /// Keep the runs here (default: a temporary directory, removed afterwards). A directory
    /// with finished runs is resumed, which times nothing: give a fresh one.
    #[arg(long, short)]
    pub out: Option<std::path::PathBuf>,
}

/// Seed 004's grid: ProbeRTT interval (alpha) x loss threshold (beta).
const SWEEP_ALPHA: &str = "bbr3.probe_rtt_interval_ms=1000,2000,5000,10000";
const SWEEP_BETA: &str = "bbr3.loss_thresh=0.02,0.04,0.08,0.16";
/// The target for the default sweep, seconds.
const SWEEP_TARGET_S: f64 = 120.0;

fn run_sweep_bench(a: BenchSweepArgs) -> anyhow::Result<()> {
    use leocc_eval::matrix::{parse_queues, Engine, Matrix, Scenario};
    use leocc_eval::sweep::{self, Sweep, SweepRun};
    let axes = a.sweep.iter().map(|s| s.parse()).collect::<Result<Vec<_>, String>>().map_err(|e| anyhow::anyhow!(e))?;
    let sw = Sweep::new(axes).map_err(|e| anyhow::anyhow!(e))?;
    let traces = ["traces/starlink-down-60s.trace", "traces/starlink-up-60s.trace"]
        .iter()
        .map(|t| crate::cmd::eval::find_bundled(t))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let m = Matrix {
        engine: Engine::Sim,
        traces,
        ccs: vec![sw.cc().to_string()],
        scenarios: vec![Scenario::Single],
        runs: a.runs.max(1),
        seed: 1,
        duration_s: None,
        queues: parse_queues(&a.queue).map_err(|e| anyhow::anyhow!(e))?,
        loss: None,
        oracle_reconfig: false,
    };
    let tmp = std::env::temp_dir().join(format!("leocc-bench-sweep-{}", std::process::id()));
    let out = a.out.clone().unwrap_or_else(|| tmp.clone());
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runner = leocc_eval::runner::Runner { exe: std::env::current_exe()?, out_dir: out.clone(), jobs, progress: true };
    let run = SweepRun { matrix: &m, sweep: &sw, runner: &runner, fairness: false, command_line: "leocc bench sweep" };
    let started = Instant::now();
    let result = sweep::run(&run, |p| leocc_trace::Trace::load(p).map_or(60.0, |t| t.duration_us() as f64 / 1e6));
    let wall = started.elapsed().as_secs_f64();
    if a.out.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let (groups, _) = result?;
    let runs: usize = groups.iter().filter(|g| !g.title.starts_with("average")).map(|g| g.defaults.runs + g.points.iter().map(|p| p.runs).sum::<usize>()).sum();
    println!("sweep: {} settings + defaults of {} x 2 traces x {} seeds = {runs} simulator runs of 60 s on {jobs} jobs", sw.settings().len(), sw.cc(), m.runs);
    println!("wall time: {wall:.1} s ({:.2} runs/s) incl. report; target < {SWEEP_TARGET_S:.0} s: {}", runs as f64 / wall, if wall < SWEEP_TARGET_S { "met" } else { "MISSED" });
    Ok(())
}

/// Options of `leocc bench ablation`.
#[derive(Args, Debug)]
#[command(after_help = "Each variant is a set of core parameters; reproduce any cell with \
`leocc sim --trace T --cc leocc --param leocc.NAME=VALUE ...`. Variants: see docs/algorithm.md, \
\"Ablation\".")]
pub struct BenchAblationArgs {
    /// Traces [default: the bundled starlink-down-60s, starlink-up-60s and oneweb-60s].
    #[arg(long)]
    pub trace: Vec<std::path::PathBuf>,
    /// Also generate starlink-down, starlink-up and oneweb traces with this many seeds (101, 102, ...).
    #[arg(long, default_value_t = 2)]
    pub gen_seeds: u64,
    /// Buffers, comma separated: packets, bytes or time of mean capacity.
    #[arg(long, value_delimiter = ',', default_value = "500,150ms")]
    pub queue: Vec<String>,
    /// Simulation seeds per cell.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Random loss on the data direction.
    #[arg(long, default_value_t = 0.002)]
    pub loss: f64,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// Single flows only (no three-flow Jain, no share against BBRv1).
    #[arg(long)]
    pub single_only: bool,
    /// Only these variants (comma separated names; `default` is always run).
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    /// Write the rows as JSON to FILE too.
    #[arg(long, short)]
    pub output: Option<std::path::PathBuf>,
    /// List the runs, one line each, and run none.
    #[arg(long)]
    pub dry_run: bool,
}

fn run_ablation(a: BenchAblationArgs) -> anyhow::Result<()> {
    use leocc_eval::ablation::{NamedTrace, Plan, VARIANTS};
    use leocc_eval::experiment::{plan_all, plan_text, run_all, AblationExperiment, Context, Experiment};
    use leocc_trace::gen::{generate, Profile};

    if !(0.0..1.0).contains(&a.loss) || a.duration <= 0.0 || a.seeds == 0 {
        anyhow::bail!("--loss must be in [0, 1), --duration and --seeds positive");
    }
    let mut traces = Vec::new();
    let paths = if a.trace.is_empty() {
        ["traces/starlink-down-60s.trace", "traces/starlink-up-60s.trace", "traces/oneweb-60s.trace"]
            .iter()
            .map(|t| crate::cmd::eval::find_bundled(t))
            .collect::<anyhow::Result<Vec<_>>>()?
    } else {
        a.trace.clone()
    };
    for p in &paths {
        let t = leocc_trace::Trace::load(p).map_err(|e| anyhow::anyhow!("{e}"))?;
        let name = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string());
        traces.push(NamedTrace { name, trace: Arc::new(t) });
    }
    for seed in 101..101 + a.gen_seeds {
        for profile in [Profile::StarlinkDown, Profile::StarlinkUp, Profile::Oneweb] {
            let t = generate(profile, (a.duration * 1000.0) as u64, seed, "leocc bench ablation").map_err(|e| anyhow::anyhow!(e))?;
            traces.push(NamedTrace { name: format!("{}-{seed}", profile.name()), trace: Arc::new(t) });
        }
    }
    let queues = a
        .queue
        .iter()
        .map(|q| q.parse::<QueueLimit>().map_err(|e| anyhow::anyhow!(e)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let variants: Vec<_> = VARIANTS
        .iter()
        .filter(|v| v.name == "default" || a.variants.is_empty() || a.variants.iter().any(|n| n == v.name))
        .copied()
        .collect();
    for n in &a.variants {
        if !VARIANTS.iter().any(|v| v.name == n) {
            anyhow::bail!(
                "unknown variant '{n}' (known: {})",
                VARIANTS.iter().map(|v| v.name).collect::<Vec<_>>().join(", ")
            );
        }
    }
    let plan = Plan {
        traces,
        queues,
        seeds: (1..=a.seeds).collect(),
        loss: a.loss,
        duration_s: a.duration,
        multi: !a.single_only,
        variants,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    eprintln!(
        "ablation: {} variants x {} traces x {} buffers x {} seeds{} in the simulator",
        plan.variants.len(),
        plan.traces.len(),
        plan.queues.len(),
        plan.seeds.len(),
        if plan.multi { ", single flow, three flows and against BBRv1" } else { ", single flow" }
    );
    let jobs = plan.jobs;
    let experiments: Vec<Box<dyn Experiment>> = vec![Box::new(AblationExperiment { plan, output: a.output })];
    if a.dry_run {
        print!("{}", plan_text(&plan_all(&experiments)?));
        return Ok(());
    }
    let cx = Context {
        exe: std::env::current_exe()?,
        out: std::env::current_dir()?,
        jobs,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    print!("{}", run_all(&experiments, &cx)?);
    Ok(())
}

/// Options of `leocc bench fidelity`.
#[derive(Args, Debug)]
#[command(after_help = "Each run is the one `leocc eval` makes for the cell (leocc sim --json, or \
leocc emu-run with kernel TCP through iperf3), recorded in DIR/results.jsonl as it finishes; a \
rerun into DIR resumes. Emulator runs need root and each holds flock /tmp/leocc-emu.lock. The \
simulator runs with --probe-noise none: the emulator's PoP adds no noise to the detector's probe \
stream, and both engines' LeoCC must face the same detector. After \
a simulator change, --rerun sim measures the model again against the kernel runs already in DIR. \
Run k of a cell starts its flows (k-1) x 0.37 s into the trace in both engines; emulator runs go \
first, and each simulator run starts its flows where the emulator run of the same seed started \
sending (the tools' setup puts that 0.5-1.1 s later), so both replay the same stretch of trace.")]
pub struct BenchFidelityArgs {
    /// Traces (repeatable, or several after one --trace).
    #[arg(long, num_args = 1.., required = true)]
    pub trace: Vec<std::path::PathBuf>,
    /// Controls, comma separated; `a+b` is a two-flow cell (both from 0 s; the share column).
    #[arg(long, default_value = leocc_eval::fidelity::DEFAULT_CCS)]
    pub cc: String,
    /// Buffers, comma separated: packets, bytes or time of the mean capacity.
    #[arg(long, default_value = leocc_eval::fidelity::DEFAULT_QUEUES)]
    pub queue: String,
    /// Added random loss rates on the data direction, comma separated.
    #[arg(long, default_value = leocc_eval::fidelity::DEFAULT_LOSSES)]
    pub loss: String,
    /// Seconds per run.
    #[arg(long, default_value_t = 30.0)]
    pub duration: f64,
    /// Emulator runs per cell, and simulator seeds 1..=RUNS; run k starts (k-1) x 0.37 s
    /// into the trace.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Engines: sim,emu (both), or one of them.
    #[arg(long, value_delimiter = ',', default_value = "sim,emu")]
    pub engine: Vec<String>,
    /// Drop the recorded runs of these engines from DIR first (e.g. `sim` after a model change).
    #[arg(long, value_delimiter = ',')]
    pub rerun: Vec<String>,
    /// Output folder: results.jsonl (one line per run), fidelity.json (the cells), logs/, ts/
    /// [default: a temporary folder, removed afterwards].
    #[arg(long, short)]
    pub out: Option<std::path::PathBuf>,
    /// Print the table as Markdown.
    #[arg(long)]
    pub markdown: bool,
    /// Only print the table of what DIR holds; run nothing.
    #[arg(long)]
    pub report: bool,
}

fn run_fidelity(a: BenchFidelityArgs) -> anyhow::Result<()> {
    use leocc_eval::fidelity::{self, Fidelity};
    use leocc_eval::matrix::{parse_queues, Engine};
    let list = |s: &str| s.split(',').map(str::trim).filter(|x| !x.is_empty()).map(String::from).collect::<Vec<_>>();
    let engines = |v: &[String], opt: &str| -> anyhow::Result<Vec<Engine>> {
        v.iter().map(|e| e.parse::<Engine>().map_err(|e| anyhow::anyhow!("{opt}: {e}"))).collect()
    };
    let losses = list(&a.loss)
        .iter()
        .map(|l| l.parse::<f64>().map_err(|_| anyhow::anyhow!("--loss '{l}' is not a number")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let f = Fidelity {
        traces: a.trace.clone(),
        ccs: list(&a.cc),
        queues: parse_queues(&a.queue).map_err(|e| anyhow::anyhow!(e))?,
        losses,
        duration_s: a.duration,
        runs: a.runs,
        engines: engines(&a.engine, "--engine")?,
        rerun: engines(&a.rerun, "--rerun")?,
    };
    f.validate()?;
    let tmp = std::env::temp_dir().join(format!("leocc-bench-fidelity-{}", std::process::id()));
    let out = a.out.clone().unwrap_or_else(|| tmp.clone());
    if a.report {
        anyhow::ensure!(a.out.is_some(), "--report reads a folder: give --out DIR");
    } else {
        let runner = leocc_eval::runner::Runner { exe: std::env::current_exe()?, out_dir: out.clone(), jobs: 1, progress: true };
        let o = fidelity::run(&f, &runner)?;
        eprintln!("fidelity: {} runs, {} already in {}, {} failed", o.ran, o.skipped, out.display(), o.failed.len());
        for (key, why) in &o.failed {
            eprintln!("fidelity: FAILED {key}: {why}");
        }
    }
    let cells = fidelity::summarise(&out)?;
    print!("{}", fidelity::table(&cells, a.markdown));
    if a.out.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    } else {
        eprintln!("fidelity: runs in {}, cells in {}", out.join("results.jsonl").display(), out.join("fidelity.json").display());
    }
    Ok(())
}

/// Options of `leocc bench robust`.
#[derive(Args, Debug)]
#[command(after_help = "Paths come from `leocc trace draw` (docs/traces.md); path i has seed \
SEED+i, which is also the simulator's seed. Rerun a worst case with the commands printed under \
the table (docs/evaluation.md, \"Robustness over drawn paths\").")]
pub struct BenchRobustArgs {
    /// Number of drawn paths.
    #[arg(long, default_value_t = leocc_eval::robust::DEFAULT_PATHS)]
    pub paths: usize,
    /// Seed of the first path (the others follow it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated seconds per run (the drawn traces are this long).
    #[arg(long, default_value_t = leocc_eval::robust::DEFAULT_DURATION_S)]
    pub duration: f64,
    /// The control under test.
    #[arg(long, default_value = "leocc")]
    pub cc: String,
    /// Set a control's parameter, CC.NAME=VALUE (repeatable), as `leocc sim --param`.
    #[arg(long = "param", value_name = "CC.NAME=VALUE")]
    pub params: Vec<String>,
    /// Random loss added on the data direction, on top of each path's own.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Each sender's send buffer (tcp_wmem max), as `leocc sim --sndbuf`. The default is a
    /// server tuned for long, fat paths; 4MiB is Linux's default, under which every control is
    /// buffer-bound on the longest, fastest drawn paths.
    #[arg(long, default_value = "64MiB", value_parser = leocc_sim::parse_sndbuf)]
    pub sndbuf: u64,
    /// Queue disciplines, comma separated (droptail, dropfront, codel): every run under each,
    /// one table each.
    #[arg(long, value_delimiter = ',', default_value = "droptail")]
    pub qdisc: Vec<leocc_sim::Qdisc>,
    /// Simulator seeds per path: every setting runs this many times on each path (simulator
    /// seeds SEED, SEED+1000000, ...), a path's value is the mean over them, and the table adds
    /// the median range across seeds. One seed moves a worst-10 % share by 0.1-0.2 on its own.
    #[arg(long, default_value_t = 1)]
    pub sim_seeds: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Noise on the PoP probe stream (none, bentpipe, isl), as `leocc sim --probe-noise`. The
    /// default, the fit to real bent-pipe pings, is on the probe only: `none` shows what it
    /// costs the control, and is what the emulator's probe sees.
    #[arg(long, default_value = "bentpipe", value_parser = leocc_sim::detector::ProbeNoiseModel::parse)]
    pub probe_noise: leocc_sim::detector::ProbeNoiseModel,
    /// Write DIR/paths.csv, DIR/paths.jsonl and DIR/summary.json (created if missing).
    #[arg(long, short)]
    pub out: Option<std::path::PathBuf>,
}

fn run_robust(a: BenchRobustArgs) -> anyhow::Result<()> {
    use leocc_eval::robust::{self, Plan};
    let plan = Plan {
        paths: a.paths,
        base_seed: a.seed,
        duration_s: a.duration,
        cc: a.cc.clone(),
        cc_params: crate::cmd::sim::parse_cc_params(&a.params)?,
        loss: a.loss,
        sndbuf_bytes: a.sndbuf,
        qdiscs: a.qdisc.clone(),
        sim_seeds: a.sim_seeds,
        jobs: a.jobs.max(1),
        probe_noise: a.probe_noise,
    };
    plan.validate().map_err(|e| anyhow::anyhow!(e))?;
    let total = plan.paths * plan.qdiscs.len() * plan.sim_seeds as usize * robust::Setting::ALL.len();
    let qdiscs = plan.qdiscs.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(",");
    eprintln!(
        "robust: {} drawn paths (seeds {}-{}) x {} settings x qdisc {qdiscs} x {} simulator seeds = {total} simulator runs of {} s, {} at once",
        plan.paths,
        plan.base_seed,
        plan.base_seed + plan.paths as u64 - 1,
        robust::Setting::ALL.len(),
        plan.sim_seeds,
        plan.duration_s,
        plan.jobs
    );
    let started = Instant::now();
    let rows = robust::run(&plan, &|p| {
        eprintln!(
            "robust: run {}/{} done (seed {}, {}, {}), {:.1} s",
            p.done,
            p.total,
            p.seed,
            p.qdisc,
            p.setting.name(),
            started.elapsed().as_secs_f64()
        );
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    let wall = started.elapsed().as_secs_f64();
    let mut extra = if plan.loss > 0.0 { format!(", +{} random loss", plan.loss) } else { String::new() };
    extra += &format!(", send buffer {:.0} MiB", plan.sndbuf_bytes as f64 / (1u64 << 20) as f64);
    extra += &format!(", probe noise {}", plan.probe_noise.name());
    if plan.sim_seeds > 1 {
        extra += &format!(", {} simulator seeds per path (a path's value: their mean)", plan.sim_seeds);
    }
    println!("robust: {} over {} drawn paths, {} s each{extra}; {total} runs in {wall:.0} s", plan.cc, plan.paths, plan.duration_s);
    let mut all_sums = Vec::new();
    for &q in &plan.qdiscs {
        let sums = robust::summarise(&rows, q);
        println!("\nqueue discipline {q}:");
        print!("{}", robust::table(&sums));
        let mut seeds: Vec<u64> = sums.iter().map(|s| s.worst_seed).collect();
        seeds.sort_unstable();
        seeds.dedup();
        println!("rerun a worst path: draw its trace, then `leocc sim` with the setting's options (below):");
        for seed in seeds {
            let worst: Vec<&str> = sums.iter().filter(|s| s.worst_seed == seed).map(|s| s.label).collect();
            println!("  seed {seed} (worst: {})", worst.join("; "));
            println!("    {}", robust::draw_command(&plan, seed));
            println!("    {} ...", robust::sim_command(&plan, seed, q).map_err(|e| anyhow::anyhow!(e))?);
        }
        all_sums.extend(sums);
    }
    println!();
    for (what, opts) in robust::setting_options(&plan) {
        println!("  ... {what}: {opts}");
    }
    if let Some(dir) = &a.out {
        robust::write_out(dir, &plan, &rows, &all_sums).map_err(|e| anyhow::anyhow!(e))?;
        eprintln!(
            "robust: per-path rows in {} and {}, summary in {}",
            dir.join("paths.csv").display(),
            dir.join("paths.jsonl").display(),
            dir.join("summary.json").display()
        );
    }
    Ok(())
}

/// Options of `leocc bench sim`.
#[derive(Args, Debug)]
pub struct BenchSimArgs {
    /// Controls to time, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "cubic,leocc")]
    pub cc: Vec<String>,
    /// Link rate, Mbit/s (constant trace, 20 ms one-way delay each way).
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// Simulated seconds per timed run.
    #[arg(long, default_value_t = 120.0)]
    pub duration: f64,
    /// Simulated seconds of the memory run (peak RSS is compared with the timed runs').
    #[arg(long, default_value_t = 1200.0)]
    pub long: f64,
}

/// Peak resident set size of this process (VmHWM), kB.
fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn timed(trace: &Arc<leocc_trace::Trace>, cc: &str, secs: f64) -> anyhow::Result<(f64, u64, u64, f64)> {
    let mut sc = Scenario::new(trace.clone(), "bench", cc, (secs * 1e6) as u64);
    sc.queue = QueueLimit::Packets(leocc_sim::DEFAULT_QUEUE_PACKETS);
    let started = Instant::now();
    let mut w = World::new(&sc).map_err(|e| anyhow::anyhow!("{e}"))?;
    w.run(&mut |_| {});
    let wall = started.elapsed().as_secs_f64();
    let r = w.result(&sc);
    Ok((wall, w.sender(0).stats.sent, w.events_processed, r.utilization))
}

/// Run `leocc bench sim`.
pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    let a = match cmd {
        BenchCmd::Sim(a) => a,
        BenchCmd::Emu(a) => return crate::cmd::emu::bench(a),
        BenchCmd::Kernel(a) => return crate::cmd::kernel::run_bench(a),
        BenchCmd::Ablation(a) => return run_ablation(a),
        BenchCmd::Ray(a) => return run_ray_bench(a),
        BenchCmd::Sweep(a) => return run_sweep_bench(a),
        BenchCmd::Leotp(a) => return crate::cmd::leotp::bench(a),
        BenchCmd::Robust(a) => return run_robust(a),
        BenchCmd::Fidelity(a) => return run_fidelity(a),
    };
    if a.rate <= 0.0 || a.duration <= 0.0 || a.long <= 0.0 {
        anyhow::bail!("--rate, --duration and --long must be positive");
    }
    let trace = Arc::new(constant_trace(a.rate, 20_000, 10_000_000, &[]));
    println!("simulator: one flow, constant {:.0} Mbit/s, 40 ms base RTT, 500-packet queue, {:.0} s", a.rate, a.duration);
    println!("{:<8} {:>8} {:>12} {:>14} {:>14} {:>6}", "cc", "wall_s", "sim_x_real", "packets/s", "events/s", "util");
    for cc in &a.cc {
        let (wall, pkts, events, util) = timed(&trace, cc, a.duration)?;
        println!(
            "{cc:<8} {wall:>8.2} {:>12.1} {:>14.0} {:>14.0} {util:>6.3}",
            a.duration / wall,
            pkts as f64 / wall,
            events as f64 / wall
        );
    }
    let short_rss = peak_rss_kb();
    let cc = a.cc.first().cloned().unwrap_or_else(|| "cubic".into());
    let (wall, _, _, _) = timed(&trace, &cc, a.long)?;
    let long_rss = peak_rss_kb();
    match (short_rss, long_rss) {
        (Some(s), Some(l)) => println!(
            "memory: peak RSS {s} kB after the {:.0} s runs, {l} kB after a {:.0} s {cc} run ({wall:.1} s wall)",
            a.duration, a.long
        ),
        _ => println!("memory: /proc/self/status has no VmHWM here"),
    }
    Ok(())
}
