//! Executes the runs of a matrix as child processes of the `leocc` binary, `jobs` at a time,
//! appending each result to results.jsonl as soon as it finishes, with progress and an ETA.

use crate::matrix::{Engine, RunSpec};
use crate::results::Record;
use crate::{align, results, tsstore};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How the runs of a matrix are carried out.
pub struct Runner {
    /// The `leocc` executable that runs each cell (normally the current executable).
    pub exe: PathBuf,
    /// The output directory: results.jsonl, ts/, logs/.
    pub out_dir: PathBuf,
    /// Runs at once. The emulator engine always uses one: two emulators on two cores would
    /// measure each other.
    pub jobs: usize,
    /// Print a progress line per finished run.
    pub progress: bool,
}

/// What a matrix execution did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub skipped: usize,
    pub ran: usize,
    /// (run key, reason) of the runs that failed; they are not in results.jsonl and a rerun
    /// tries them again.
    pub failed: Vec<(String, String)>,
}

/// Where the run's time series goes.
pub fn timeseries_path(out_dir: &Path, spec: &RunSpec) -> PathBuf {
    out_dir.join("ts").join(format!("{}.csv", spec.file_id()))
}

/// The results file of an output directory.
pub fn results_path(out_dir: &Path) -> PathBuf {
    out_dir.join("results.jsonl")
}

/// A run as a progress line names it: engine, trace, buffer (and its discipline when not
/// drop-tail), scenario, control, a sweep's parameters, seed. The buffer is in it because the
/// matrix runs every cell once per buffer: without it two lines would read the same.
/// A buffer as labels name it: `500 pkts`, `150ms`, `750000b`.
pub(crate) fn buffer_label(queue: &impl std::fmt::Display) -> String {
    let q = queue.to_string();
    match q.parse::<u64>() {
        Ok(_) => format!("{q} pkts"),
        Err(_) => q,
    }
}

pub fn run_label(spec: &RunSpec) -> String {
    let buffer = buffer_label(&spec.queue);
    let qdisc = match spec.qdisc {
        leocc_sim::Qdisc::DropTail => String::new(),
        other => format!(" {other}"),
    };
    let params = if spec.params.is_empty() {
        String::new()
    } else {
        format!(" [{}]", spec.params.join(" "))
    };
    format!(
        "{} {} buffer {buffer}{qdisc} {} {}{params} seed {}",
        spec.engine, spec.trace_name, spec.scenario, spec.label, spec.seed
    )
}

impl Runner {
    /// Runs every spec whose key is not yet in results.jsonl. A simulator run whose cell and
    /// seed the folder already holds an emulator run of starts its flows where that run's did
    /// ([`align::aligned`]), so that the two engines' rows replay the same stretch of the trace.
    pub fn run(&self, specs: &[RunSpec]) -> Result<Outcome> {
        let (results_file, todo, mut outcome) = self.pending(specs)?;
        let todo = self.aligned_to_emulator(&results_file, todo)?;
        let todo: VecDeque<&RunSpec> = todo.iter().collect();
        let total = todo.len();
        let jobs = if specs.iter().any(|s| s.engine == Engine::Emu) {
            1
        } else {
            self.jobs.max(1)
        };
        let queue = Mutex::new(todo);
        let state = Mutex::new((0usize, Vec::<(String, String)>::new()));
        let started = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..jobs.min(total.max(1)) {
                scope.spawn(|| loop {
                    let Some(spec) = queue.lock().unwrap().pop_front() else {
                        break;
                    };
                    let result = self
                        .run_one(spec)
                        .and_then(|rec| results::append(&results_file, &rec));
                    let mut st = state.lock().unwrap();
                    st.0 += 1;
                    if let Err(e) = &result {
                        st.1.push((spec.key.clone(), format!("{e:#}")));
                    }
                    self.progress_line(st.0, total, started, spec, result.is_err());
                });
            }
        });
        let (ran, failed) = state.into_inner().unwrap();
        outcome.ran = ran - failed.len();
        outcome.failed = failed;
        self.fold_time_series();
        Ok(outcome)
    }

    /// `todo`, with each simulator run whose cell and seed results.jsonl holds an emulator run
    /// of moved to start its flows where that run's did ([`align::aligned`]); says how many.
    pub(crate) fn aligned_to_emulator(&self, results_file: &Path, todo: Vec<&RunSpec>) -> Result<Vec<RunSpec>> {
        let records = if todo.iter().any(|s| s.engine == Engine::Sim) {
            results::read(results_file)?
        } else {
            Vec::new()
        };
        let mut moved = 0;
        let todo = todo
            .into_iter()
            .map(|spec| match align::aligned(spec, &records) {
                Some(m) => {
                    moved += 1;
                    m
                }
                None => spec.clone(),
            })
            .collect();
        if moved > 0 && self.progress {
            eprintln!(
                "eval: {moved} simulator runs start their flows where the emulator run of their cell and seed in {} did",
                results_file.display()
            );
        }
        Ok(todo)
    }

    /// Folds the per-run time-series CSVs of the finished runs into a Parquet part
    /// ([`tsstore`]). A failure leaves them as CSVs, which every reader still takes.
    pub(crate) fn fold_time_series(&self) {
        match tsstore::fold_finished(&self.out_dir) {
            Ok(c) => {
                if let (Some(part), true) = (&c.part, self.progress) {
                    eprintln!(
                        "eval: time series of {} runs ({} rows) folded into {}",
                        c.runs,
                        c.rows,
                        part.display()
                    );
                }
            }
            Err(e) => eprintln!("eval: time series left as CSV files: {e:#}"),
        }
    }

    /// Runs one spec in a child process and returns its record, tagged with the run's identity.
    fn run_one(&self, spec: &RunSpec) -> Result<Value> {
        let mut cmd = self.command(spec);
        let output = cmd
            .output()
            .with_context(|| format!("starting {}", self.exe.display()))?;
        self.finish(
            spec,
            output
                .status
                .success()
                .then_some(())
                .ok_or_else(|| output.status.to_string()),
            &output.stdout,
            &output.stderr,
        )
    }

    /// The specs of `specs` not yet in results.jsonl (whose torn last line is repaired), with the
    /// output folders created and the outcome's `skipped` counted.
    pub(crate) fn pending<'a>(
        &self,
        specs: &'a [RunSpec],
    ) -> Result<(PathBuf, Vec<&'a RunSpec>, Outcome)> {
        std::fs::create_dir_all(self.out_dir.join("ts"))
            .with_context(|| format!("creating {}", self.out_dir.display()))?;
        std::fs::create_dir_all(self.out_dir.join("logs"))?;
        // What an eval killed mid-write (kill -9) left: zero-byte ts/.*.csv.tmp.* files.
        let stale = tsstore::remove_stale_temps(&self.out_dir)?;
        if !stale.is_empty() && self.progress {
            eprintln!(
                "eval: removed {} temporary files left in {} by an interrupted run",
                stale.len(),
                self.out_dir.join(tsstore::TS_DIR).display()
            );
        }
        let results_file = results_path(&self.out_dir);
        let records = results::read(&results_file)?;
        check_same_probe(specs, &records, &results_file)?;
        let done = results::finished_keys(&records);
        results::repair(&results_file)?;
        let todo: Vec<&RunSpec> = specs.iter().filter(|s| !done.contains(&s.key)).collect();
        let outcome = Outcome {
            skipped: specs.len() - todo.len(),
            ..Default::default()
        };
        if outcome.skipped > 0 && self.progress {
            eprintln!(
                "eval: {} of {} runs already in {}, skipping them",
                outcome.skipped,
                specs.len(),
                results_file.display()
            );
        }
        Ok((results_file, todo, outcome))
    }

    /// One progress line: `n` of `total` finished since `started`, the last being `spec`.
    pub(crate) fn progress_line(
        &self,
        n: usize,
        total: usize,
        started: Instant,
        spec: &RunSpec,
        failed: bool,
    ) {
        if !self.progress {
            return;
        }
        let eta = started.elapsed().mul_f64((total - n) as f64 / n as f64);
        eprintln!(
            "eval: [{n}/{total}] {:>3}% ETA {}  {}{}",
            n * 100 / total,
            fmt_duration(eta),
            run_label(spec),
            if failed { "  FAILED" } else { "" }
        );
    }

    /// The record of a finished run from what its process left: its exit (`Err` with how it
    /// failed), stdout (ending in the JSON result) and stderr (kept as the run's log).
    pub(crate) fn finish(
        &self,
        spec: &RunSpec,
        exit: Result<(), String>,
        stdout: &[u8],
        stderr: &[u8],
    ) -> Result<Value> {
        let log = self
            .out_dir
            .join("logs")
            .join(format!("{}.stderr", spec.file_id()));
        leocc_base::write_atomic(&log, stderr)?;
        if let Err(status) = exit {
            let tail: String = String::from_utf8_lossy(stderr)
                .lines()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .join(" | ");
            bail!(
                "{} exited with {status} ({}): {tail}",
                spec.engine,
                log.display()
            );
        }
        let stdout = String::from_utf8_lossy(stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .ok_or_else(|| anyhow!("the run printed no JSON result (see {})", log.display()))?;
        // The child protocol: the last JSON line is a run record (leocc_base::record).
        let mut rec = leocc_base::record::parse(line)
            .map_err(|e| anyhow!("{e} (see {})", log.display()))?
            .to_value();
        let obj = rec
            .as_object_mut()
            .expect("a run record is a JSON object");
        obj.insert("schema".into(), leocc_base::record::SCHEMA.into());
        obj.insert("key".into(), spec.key.clone().into());
        obj.insert("engine".into(), spec.engine.to_string().into());
        obj.insert("trace".into(), spec.trace_name.clone().into());
        obj.insert("trace_path".into(), spec.trace.display().to_string().into());
        obj.insert("scenario".into(), spec.scenario.to_string().into());
        obj.insert("label".into(), spec.label.clone().into());
        obj.insert("seed".into(), spec.seed.into());
        obj.insert("flows_spec".into(), spec.flows.clone().into());
        // The engines report the queue resolved for the trace (queue_bytes, queue_ms); the
        // queue as the matrix gave it is the run's identity.
        obj.insert("queue".into(), spec.queue.to_string().into());
        obj.insert("qdisc".into(), spec.qdisc.to_string().into());
        if !spec.params.is_empty() {
            obj.insert("params".into(), spec.params.clone().into());
        }
        obj.insert(
            "timeseries".into(),
            format!("ts/{}.csv", spec.file_id()).into(),
        );
        Ok(rec)
    }

    /// The child command of a run. It dies with eval (even by SIGINT to eval alone, or kill
    /// -9), so an interrupted eval leaves no simulations running; it is spawned on a worker
    /// thread that waits for it, which the death signal requires. An emulator run gets
    /// SIGTERM, on which it stops its flows and removes its namespaces (SIGKILL left them).
    pub(crate) fn command(&self, spec: &RunSpec) -> Command {
        let mut cmd = Command::new(&self.exe);
        let signal = if spec.engine == Engine::Emu {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        leocc_emu::owned::die_with_parent_by(&mut cmd, signal);
        match spec.engine {
            Engine::Sim => {
                cmd.arg("sim");
            }
            Engine::Emu => {
                cmd.arg("emu-run");
            }
        }
        cmd.arg("--trace").arg(&spec.trace);
        cmd.arg("--flows").arg(&spec.flows);
        cmd.arg("--duration").arg(spec.duration_s.to_string());
        cmd.arg("--seed").arg(spec.seed.to_string());
        cmd.arg("--queue").arg(spec.queue.to_string());
        // Only when not the default: a drop-tail run's command line stays what it was.
        if !spec.qdisc.is_default() {
            cmd.arg("--qdisc").arg(spec.qdisc.to_string());
        }
        if let Some(l) = spec.loss {
            cmd.arg("--loss").arg(l.to_string());
        }
        if spec.oracle_reconfig {
            cmd.arg("--oracle-reconfig");
        }
        if let (Engine::Sim, Some(noise)) = (spec.engine, spec.probe_noise) {
            cmd.arg("--probe-noise").arg(noise.name());
        }
        for p in &spec.params {
            cmd.arg("--param").arg(p);
        }
        cmd.arg("--json")
            .arg("--timeseries")
            .arg(timeseries_path(&self.out_dir, spec));
        cmd
    }
}

/// `1h02m`, `3m05s`, `42s`.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Refuses to resume a simulator run recorded with another PoP probe noise than this one asks
/// for. The noise is not part of a run's key (a key names the cell; `leocc bench fidelity`
/// aligns its simulator runs to the emulator's by it), so a folder of `bench fidelity` (a clean
/// probe) and a `leocc eval --engine sim` into it (the bent-pipe noise) would otherwise share
/// keys, and the eval would skip cells as done that ran with the other probe.
fn check_same_probe(specs: &[RunSpec], records: &[Record], file: &Path) -> Result<()> {
    let recorded: HashMap<&str, &str> = records
        .iter()
        .filter_map(|r| Some((r.str("key"), r.0.get("detection")?.get("probe_noise")?.as_str()?)))
        .collect();
    for s in specs.iter().filter(|s| s.engine == Engine::Sim) {
        let want = s.probe_noise.unwrap_or_default().name();
        if let Some(&had) = recorded.get(s.key.as_str()) {
            if had != want {
                bail!(
                    "{} holds run {} with the PoP probe noise {had}; this one asks for {want}: \
                     write to another folder (leocc bench fidelity's simulator runs use a clean probe, leocc eval the bent-pipe noise)",
                    file.display(),
                    s.key
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_name_the_buffer() {
        use crate::matrix::{Engine, Matrix, Scenario};
        let m = Matrix {
            engine: Engine::Sim,
            traces: vec!["traces/a.trace".into()],
            ccs: vec!["cubic".into()],
            scenarios: vec![Scenario::Single],
            runs: 1,
            seed: 1,
            duration_s: Some(5.0),
            queues: crate::matrix::parse_queues("500,150ms").unwrap(),
            loss: None,
            oracle_reconfig: false,
        };
        let labels: Vec<String> = m
            .expand_qdiscs(
                &[leocc_sim::Qdisc::DropTail, leocc_sim::Qdisc::CoDel],
                |_| 5.0,
            )
            .iter()
            .map(run_label)
            .collect();
        assert_eq!(labels[0], "sim a buffer 500 pkts single cubic seed 1");
        assert_eq!(labels[1], "sim a buffer 500 pkts codel single cubic seed 1");
        assert_eq!(labels[2], "sim a buffer 150ms single cubic seed 1");
        let distinct: std::collections::HashSet<_> = labels.iter().collect();
        assert_eq!(distinct.len(), labels.len(), "{labels:?}");
    }

    #[test]
    fn a_simulator_run_recorded_with_another_probe_is_not_resumed() {
        use crate::matrix::{test_matrix, Engine, Scenario};
        use leocc_sim::detector::ProbeNoiseModel;
        let mut specs = test_matrix(vec![Scenario::Single]).expand(|_| 30.0);
        let key = specs[0].key.clone();
        let row = |noise: &str| Record(serde_json::json!({"key": key, "detection": {"probe_noise": noise}}));
        let file = Path::new("out/results.jsonl");
        check_same_probe(&specs, &[row("bentpipe")], file).expect("the default probe, as recorded");
        let e = check_same_probe(&specs, &[row("none")], file).unwrap_err().to_string();
        assert!(e.contains("out/results.jsonl") && e.contains(&key) && e.contains("none") && e.contains("bentpipe"), "{e}");
        specs[0].probe_noise = Some(ProbeNoiseModel::None);
        check_same_probe(&specs, &[row("none")], file).expect("bench fidelity's clean probe, as recorded");
        specs[0].engine = Engine::Emu;
        check_same_probe(&specs, &[row("bentpipe")], file).expect("emulator runs have the daemon, not a noise model");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_duration(Duration::from_secs(42)), "42s");
        assert_eq!(fmt_duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(fmt_duration(Duration::from_secs(3720)), "1h02m");
    }
}
