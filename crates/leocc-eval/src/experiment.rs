//! Experiments: what `leocc eval` and `leocc demo` run, one shape for each kind. An
//! [`Experiment`] checks itself and says how many runs it holds ([`Experiment::plan`]) before
//! anything runs, then runs (resuming what an interrupted run of the same command finished),
//! writes its results and report under the output folder, and returns the table the command
//! prints. The command line only parses its options into experiments and runs them in order
//! (crates/leocc/src/cmd/eval.rs); every experiment's plan is checked before the first one
//! runs, so a bad option of the last one costs nothing.
//!
//! The kinds: [`MatrixExperiment`] (the engines over traces x buffers x scenarios x controls x
//! seeds, locally or on Ray), [`SweepExperiment`] (a parameter sweep and its fairness runs),
//! [`StartsExperiment`] (runs started where a trigger holds against random starts),
//! [`VideoExperiment`] (ABR sessions), [`LeotpExperiment`] (the LEOTP chain) and
//! [`AblationExperiment`] (`leocc bench ablation`, in process). `leocc bench robust` keeps its
//! own command: it draws its paths and scores them per path, not per run.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use leocc_sim::Qdisc;

use crate::matrix::Matrix;
use crate::ray::RayOptions;
use crate::report;
use crate::results::{self, stat, Record};
use crate::runner::{self, Runner};

/// What every experiment runs with.
#[derive(Clone, Debug)]
pub struct Context {
    /// The `leocc` binary the runs are children of.
    pub exe: PathBuf,
    /// The output folder (results.jsonl, report.html, ts/, logs/ and each kind's own files).
    pub out: PathBuf,
    /// Runs at once (the simulator; the emulator runs one at a time).
    pub jobs: usize,
    /// The command that made the results, for the report.
    pub command_line: String,
}

impl Context {
    /// A runner of child runs into [`Context::out`], with progress on stderr.
    pub fn runner(&self) -> Runner {
        Runner { exe: self.exe.clone(), out_dir: self.out.clone(), jobs: self.jobs, progress: true }
    }
}

/// One experiment.
pub trait Experiment {
    /// Its name in progress lines and errors (`matrix`, `sweep`, `video`, ...).
    fn name(&self) -> &'static str;
    /// Checks what can be checked without running and lists the runs it holds, one line
    /// each, as its progress lines name them (`leocc eval --dry-run` prints them).
    fn plan(&self) -> Result<Vec<String>>;
    /// Runs it and returns the table to print.
    fn run(&self, cx: &Context) -> Result<String>;
}

/// Every experiment's plan, checked, in order: its name and its runs. Nothing runs.
pub fn plan_all(experiments: &[Box<dyn Experiment>]) -> Result<Vec<(&'static str, Vec<String>)>> {
    experiments
        .iter()
        .map(|e| Ok((e.name(), e.plan().with_context(|| format!("planning the {} experiment", e.name()))?)))
        .collect()
}

/// The plans as `leocc eval --dry-run` prints them: each experiment's runs under a heading.
pub fn plan_text(plans: &[(&'static str, Vec<String>)]) -> String {
    let total: usize = plans.iter().map(|(_, runs)| runs.len()).sum();
    let mut out = String::new();
    for (name, runs) in plans {
        out += &format!("{name}: {} runs\n", runs.len());
        for r in runs {
            out += &format!("  {r}\n");
        }
    }
    out + &format!("{total} runs in all; none run (--dry-run)\n")
}

/// Checks every experiment's plan, then runs them in order; returns their tables, joined.
pub fn run_all(experiments: &[Box<dyn Experiment>], cx: &Context) -> Result<String> {
    let plans = plan_all(experiments)?;
    if experiments.len() > 1 {
        let each: Vec<String> = plans.iter().map(|(name, runs)| format!("{name} ({} runs)", runs.len())).collect();
        eprintln!("eval: {}", each.join(", then "));
    }
    let mut out = String::new();
    for e in experiments {
        out += &e.run(cx).with_context(|| format!("the {} experiment", e.name()))?;
    }
    Ok(out)
}

/// The matrix of [`Matrix`] under each queue discipline, on this machine or a Ray cluster.
pub struct MatrixExperiment {
    pub matrix: Matrix,
    pub qdiscs: Vec<Qdisc>,
    pub ray: Option<RayOptions>,
    /// The traces' lengths, parsed once ([`trace_seconds`]).
    pub seconds: TraceSeconds,
}

impl Experiment for MatrixExperiment {
    fn name(&self) -> &'static str {
        "matrix"
    }
    fn plan(&self) -> Result<Vec<String>> {
        if self.matrix.traces.is_empty() {
            bail!("give the traces to run over: --trace FILE... or --traces-from INDEX (only --scenario leotp makes its own)");
        }
        Ok(self.matrix.expand_qdiscs(&self.qdiscs, |t| self.seconds[t]).iter().map(runner::run_label).collect())
    }
    fn run(&self, cx: &Context) -> Result<String> {
        let records = run_matrix_on(&self.matrix, &self.qdiscs, cx, self.ray.as_ref(), Some(&self.seconds))?;
        Ok(single_table(&records))
    }
}

/// A parameter sweep over a drop-tail matrix, then its chosen setting against Cubic
/// ([`crate::sweep`]).
pub struct SweepExperiment {
    pub matrix: Matrix,
    pub sweep: crate::sweep::Sweep,
    pub fairness: bool,
    pub seconds: TraceSeconds,
}

impl Experiment for SweepExperiment {
    fn name(&self) -> &'static str {
        "sweep"
    }
    fn plan(&self) -> Result<Vec<String>> {
        // The sweep's runs; the fairness runs that follow are not listed: their setting is
        // chosen from the sweep's results.
        Ok(self.sweep.expand(&self.matrix.expand(|t| self.seconds[t])).iter().map(runner::run_label).collect())
    }
    fn run(&self, cx: &Context) -> Result<String> {
        let runner = cx.runner();
        let run = crate::sweep::SweepRun { matrix: &self.matrix, sweep: &self.sweep, runner: &runner, fairness: self.fairness, command_line: &cx.command_line };
        let (groups, page) = crate::sweep::run(&run, |t| self.seconds[t])?;
        eprintln!("eval: sweep page {}", page.display());
        Ok(groups.last().map(|g| crate::sweep::table(&self.sweep, g)).unwrap_or_default())
    }
}

/// The matrix run from the moments each trace's loop satisfies a trigger expression, against
/// as many random moments ([`crate::starts`]).
pub struct StartsExperiment {
    pub matrix: Matrix,
    pub qdiscs: Vec<Qdisc>,
    /// The trigger expression (`leocc probe --trigger`'s language).
    pub expr: String,
    /// Starts of each kind per trace.
    pub starts: usize,
}

impl Experiment for StartsExperiment {
    fn name(&self) -> &'static str {
        "triggered starts"
    }
    fn plan(&self) -> Result<Vec<String>> {
        self.expr.parse::<leocc_probe::trigger::Expr>().map_err(|e| anyhow::anyhow!("--start-when '{}': {e}", self.expr))?;
        // Each trace becomes `starts` triggered and as many random copies of itself (where the
        // trigger holds is found when it runs), each run as the matrix runs a trace (every
        // scenario, control, buffer, discipline and seed).
        let mut runs = Vec::new();
        for trace in &self.matrix.traces {
            let cells = Matrix { traces: vec![trace.clone()], ..self.matrix.clone() }.expand_qdiscs(&self.qdiscs, |_| 0.0);
            for kind in ["triggered", "random"] {
                for k in 1..=self.starts {
                    runs.extend(cells.iter().map(|c| format!("{kind} start {k}: {}", runner::run_label(c))));
                }
            }
        }
        Ok(runs)
    }
    fn run(&self, cx: &Context) -> Result<String> {
        let mut m = self.matrix.clone();
        m.traces = crate::starts::prepare(&m.traces, &self.expr, self.starts, m.duration_s, m.seed, &cx.out)?;
        let records = run_matrix(&m, &self.qdiscs, cx)?;
        Ok(crate::starts::table(&crate::starts::compare(&records)))
    }
}

/// ABR video sessions over the traces ([`crate::video`]).
pub struct VideoExperiment {
    pub plan: crate::video::VideoPlan,
}

impl Experiment for VideoExperiment {
    fn name(&self) -> &'static str {
        "video"
    }
    fn plan(&self) -> Result<Vec<String>> {
        Ok(self.plan.labels())
    }
    fn run(&self, _cx: &Context) -> Result<String> {
        Ok(crate::video::table(&crate::video::run(&self.plan)?))
    }
}

/// The LEOTP experiments over the multi-hop chain, into `OUT/leotp` ([`crate::leotp`]).
pub struct LeotpExperiment {
    pub config: crate::leotp::EvalConfig,
}

impl Experiment for LeotpExperiment {
    fn name(&self) -> &'static str {
        "leotp"
    }
    fn plan(&self) -> Result<Vec<String>> {
        Ok(crate::leotp::plan_all(&self.config)?.iter().map(crate::leotp::Run::label).collect())
    }
    fn run(&self, cx: &Context) -> Result<String> {
        let summary = crate::leotp::evaluate(&self.config, &cx.out.join("leotp"))?;
        Ok(format!("LEOTP summary: {}\n", summary.display()))
    }
}

/// `leocc bench ablation`: LeoCC's variants against the default and the reference controls
/// in the simulator, in process ([`crate::ablation`]); the rows also go to `output` as JSON.
pub struct AblationExperiment {
    pub plan: crate::ablation::Plan,
    pub output: Option<PathBuf>,
}

impl Experiment for AblationExperiment {
    fn name(&self) -> &'static str {
        "ablation"
    }
    fn plan(&self) -> Result<Vec<String>> {
        Ok(self.plan.labels())
    }
    fn run(&self, _cx: &Context) -> Result<String> {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        let started = std::time::Instant::now();
        let progress = |done: usize, total: usize| {
            let el = started.elapsed().as_secs_f64();
            let eta = el / done as f64 * (total - done) as f64;
            if tty {
                eprint!("\rablation: {done}/{total} runs, {el:.0} s, about {eta:.0} s left   ");
            } else if done.is_multiple_of(50) || done == total {
                eprintln!("ablation: {done}/{total} runs, {el:.0} s, about {eta:.0} s left");
            }
        };
        let rows = crate::ablation::run(&self.plan, &progress).map_err(|e| anyhow::anyhow!(e))?;
        if tty {
            eprintln!();
        }
        if let Some(path) = &self.output {
            leocc_base::write_atomic(path, serde_json::to_string_pretty(&rows)?.as_bytes())
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            eprintln!("ablation: rows written to {}", path.display());
        }
        Ok(crate::ablation::table(&rows))
    }
}

/// Parses every trace of the matrix once, before any run: a bad one fails the eval with its file
/// and line, and the length of each (which bounds a run without --duration) is kept, so that
/// expanding a matrix of thousands of traces does not parse each again per buffer and scenario.
pub fn trace_seconds(traces: &[PathBuf]) -> Result<TraceSeconds> {
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
pub type TraceSeconds = std::collections::HashMap<PathBuf, f64>;

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
pub fn run_matrix(m: &Matrix, qdiscs: &[Qdisc], cx: &Context) -> Result<Vec<Record>> {
    run_matrix_on(m, qdiscs, cx, None, None)
}

/// [`run_matrix`] on a Ray cluster when `ray` is given; `seconds` are the traces' lengths when
/// the caller has parsed them already.
pub fn run_matrix_on(
    m: &Matrix,
    qdiscs: &[Qdisc],
    cx: &Context,
    ray: Option<&RayOptions>,
    seconds: Option<&TraceSeconds>,
) -> Result<Vec<Record>> {
    let out = cx.out.as_path();
    let parsed;
    let seconds = match seconds {
        Some(s) => s,
        None => {
            parsed = trace_seconds(&m.traces)?;
            &parsed
        }
    };
    let specs = m.expand_qdiscs(qdiscs, |t| seconds[t]);
    let runner = cx.runner();
    let outcome = match ray {
        Some(r) => runner.run_ray(&specs, r)?,
        None => runner.run(&specs)?,
    };
    let all = results::read(&runner::results_path(out))?;
    let report = report::write(out, &all, &cx.command_line)?;
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

/// A plain table of the single-flow cells: one row per control. With more than one run in a cell, each mean carries ± the half-width
/// of its 95 % confidence interval (as the HTML report does), and a `runs` column says over how
/// many runs.
pub fn single_table(records: &[Record]) -> String {
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
        out += &format!("{}\n", crate::stats::CI_LEGEND);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn rec(label: &str, seed: u64, thr: f64) -> Record {
        Record(serde_json::json!({
            "engine": "sim", "trace": "t", "scenario": "single", "label": label, "seed": seed,
            "queue": "500", "queue_ms": 31.0, "throughput_mbps": thr, "rtt_p95_ms": 50.0,
        }))
    }

    #[test]
    fn the_table_shows_runs_and_spread_only_with_several_runs() {
        let one = single_table(&[rec("cubic", 1, 10.0), rec("leocc", 1, 12.0)]);
        assert!(!one.contains('±') && !one.contains("runs"), "{one}");
        let two = single_table(&[rec("cubic", 1, 10.0), rec("cubic", 2, 12.0), rec("leocc", 1, 12.0), rec("leocc", 2, 12.0)]);
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
    fn triggered_starts_plan_every_copy_of_every_trace_as_the_matrix_runs_a_trace() {
        use crate::matrix::Scenario;
        let e = StartsExperiment {
            matrix: Matrix {
                queues: crate::matrix::parse_queues("500,150ms").unwrap(),
                ..crate::matrix::test_matrix(vec![Scenario::Single])
            },
            qdiscs: vec![Qdisc::DropTail, Qdisc::CoDel],
            expr: "ri > 45".into(),
            starts: 2,
        };
        // Per trace copy: 2 controls x 2 buffers x 2 disciplines x 3 seeds = 24 runs; each of
        // the 2 traces has 2 triggered and 2 random copies.
        let runs = e.plan().unwrap();
        assert_eq!(runs.len(), 2 * 4 * 24);
        let distinct: std::collections::HashSet<_> = runs.iter().collect();
        assert_eq!(distinct.len(), runs.len(), "every run has its own line: {runs:?}");
        assert!(runs[0].starts_with("triggered start 1: ") && runs.iter().any(|r| r.starts_with("random start 2: ")), "{runs:?}");
        let bad = StartsExperiment { expr: "ri >".into(), ..e };
        assert!(bad.plan().unwrap_err().to_string().contains("--start-when 'ri >'"));
    }

    /// An experiment whose plan fails, after one that would run: nothing may run.
    struct Refused;
    impl Experiment for Refused {
        fn name(&self) -> &'static str {
            "refused"
        }
        fn plan(&self) -> Result<Vec<String>> {
            bail!("bad option")
        }
        fn run(&self, _: &Context) -> Result<String> {
            unreachable!("a refused plan must not run")
        }
    }

    /// Counts its runs.
    struct Counted(&'static AtomicUsize);
    impl Experiment for Counted {
        fn name(&self) -> &'static str {
            "counted"
        }
        fn plan(&self) -> Result<Vec<String>> {
            Ok(vec!["one".into()])
        }
        fn run(&self, _: &Context) -> Result<String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok("ran\n".into())
        }
    }

    #[test]
    fn every_plan_is_checked_before_the_first_experiment_runs() {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let cx = Context { exe: "leocc".into(), out: std::env::temp_dir(), jobs: 1, command_line: String::new() };
        let err = run_all(&[Box::new(Counted(&RUNS)), Box::new(Refused)], &cx).unwrap_err();
        assert!(format!("{err:#}").contains("planning the refused experiment: bad option"), "{err:#}");
        assert_eq!(RUNS.load(Ordering::SeqCst), 0);
        assert_eq!(run_all(&[Box::new(Counted(&RUNS))], &cx).unwrap(), "ran\n");
        let plans = plan_all(&[Box::new(Counted(&RUNS)), Box::new(Counted(&RUNS))]).unwrap();
        assert_eq!(plan_text(&plans), "counted: 1 runs\n  one\ncounted: 1 runs\n  one\n2 runs in all; none run (--dry-run)\n");
        assert_eq!(RUNS.load(Ordering::SeqCst), 1);
    }
}
