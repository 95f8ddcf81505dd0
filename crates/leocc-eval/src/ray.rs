//! The Ray executor of `leocc eval --executor ray`: the same runs as the local executor, one
//! Ray task each, for when one machine is outgrown.
//!
//! Ray's API is Python, so eval starts a small Python driver (ray_driver.py, embedded here) as
//! its child, writes it the runs as JSON lines and reads back each result as it finishes. The
//! task on the worker runs the very command the local executor runs (`leocc sim ... --json`),
//! with the executable and the trace sent through Ray's object store, so workers need only Ray.
//! Results go through the same [`Runner::finish`] into results.jsonl as they arrive: a run is
//! appended once, when it is done, and a rerun of the same command skips what is there (the
//! local executor's resume-and-no-duplicate guarantee).

use crate::matrix::{Engine, RunSpec};
use crate::results;
use crate::runner::{timeseries_path, Outcome, Runner};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The driver's source, written to a temporary file at each eval.
const DRIVER: &str = include_str!("ray_driver.py");
/// Stand-ins in a run's arguments that the worker replaces by its local files.
const TRACE_ARG: &str = "{trace}";
const TIMESERIES_ARG: &str = "{timeseries}";

/// Where and how to reach the cluster.
#[derive(Debug, Clone)]
pub struct RayOptions {
    /// The head's `HOST:PORT` (as `ray start --head --port` printed it).
    pub address: String,
    /// The Python that has `ray` installed.
    pub python: PathBuf,
}

/// The Python to use when none is named: `$LEOCC_PYTHON`, else the project's own environment
/// (`.venv/bin/python`, which `make test` sets up with Ray), looked for above the leocc binary
/// and above the working directory, else `python3`.
pub fn default_python() -> PathBuf {
    if let Some(p) = std::env::var_os("LEOCC_PYTHON") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().ok();
    let cwd = std::env::current_dir().ok();
    exe.iter()
        .chain(cwd.iter())
        .flat_map(|start| start.ancestors())
        .map(|dir| dir.join(".venv/bin/python"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// A directory of this process's own for the driver script. Python puts the script's directory
/// first on `sys.path`; in the shared temporary directory that would make Ray's own session
/// folder (`/tmp/ray`) importable as a namespace package called `ray`, so that a Python without
/// Ray fails with "module 'ray' has no attribute 'remote'" instead of "No module named 'ray'".
fn driver_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("leocc-ray-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Checks, before any run starts, that `python` runs and imports Ray; the error names the
/// Python tried and how to get one with Ray.
pub fn check_python(python: &std::path::Path) -> Result<()> {
    let dir = driver_dir()?;
    // From the private directory (a neutral working directory too), with `-c` so that nothing
    // but the standard sys.path is searched.
    let out = Command::new(python)
        .args(["-c", "import ray; ray.remote"])
        .current_dir(&dir)
        .output();
    let _ = std::fs::remove_dir(&dir);
    let install = "`make test` or `scripts/setup.sh --python` sets up the project's .venv with Ray \
                   (or: PYTHON -m pip install -r python/requirements.txt); name another Python with --python or $LEOCC_PYTHON";
    match out {
        Err(e) => bail!(
            "--executor ray: cannot run Python {} ({e}); {install}",
            python.display()
        ),
        Ok(o) if !o.status.success() => {
            let why = String::from_utf8_lossy(&o.stderr);
            let last = why
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            bail!(
                "--executor ray: Python {} has no usable Ray ({last}); {install}",
                python.display()
            )
        }
        Ok(_) => Ok(()),
    }
}

/// A run's arguments for a worker: the local command's, with the trace and time series paths
/// replaced by the stand-ins.
fn worker_args(runner: &Runner, spec: &RunSpec) -> Vec<String> {
    let cmd = runner.command(spec);
    let mut args: Vec<String> = Vec::new();
    let mut it = cmd.get_args().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        let stand_in = match a.as_str() {
            "--trace" => Some(TRACE_ARG),
            "--timeseries" => Some(TIMESERIES_ARG),
            _ => None,
        };
        args.push(a);
        if let Some(s) = stand_in {
            it.next();
            args.push(s.to_string());
        }
    }
    args
}

impl Runner {
    /// Runs every spec whose key is not yet in results.jsonl on the Ray cluster `ray`.
    pub fn run_ray(&self, specs: &[RunSpec], ray: &RayOptions) -> Result<Outcome> {
        if specs.iter().any(|s| s.engine == Engine::Emu) {
            bail!("--executor ray runs the simulator only: an emulator run needs the whole machine it runs on");
        }
        let (results_file, todo, mut outcome) = self.pending(specs)?;
        if todo.is_empty() {
            return Ok(outcome);
        }
        let todo = self.aligned_to_emulator(&results_file, todo)?;
        let dir = driver_dir()?;
        let driver = dir.join("ray_driver.py");
        leocc_base::write_atomic(&driver, DRIVER.as_bytes())?;
        let mut cmd = Command::new(&ray.python);
        cmd.arg(&driver)
            .arg("--address")
            .arg(&ray.address)
            .arg("--exe")
            .arg(&self.exe);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        leocc_emu::owned::die_with_parent_by(&mut cmd, libc::SIGTERM);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting the Ray driver with {}", ray.python.display()))?;
        let lines: Vec<String> = todo
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({"id": i, "args": worker_args(self, s), "trace": s.trace}).to_string()
            })
            .collect();
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let started = Instant::now();
        let mut finished = vec![false; todo.len()];
        let (mut n, mut ok, mut failed) = (0usize, 0usize, Vec::new());
        let driver_log = std::thread::scope(|scope| -> Result<Vec<u8>> {
            // Writing and reading at once: a pipe holds only so much of either side.
            scope.spawn(move || {
                for l in &lines {
                    if writeln!(stdin, "{l}").is_err() {
                        break;
                    }
                }
            });
            let log = scope.spawn(move || {
                let mut v = Vec::new();
                let _ = std::io::Read::read_to_end(&mut stderr, &mut v);
                v
            });
            for line in BufReader::new(stdout).lines() {
                let line = line.context("reading the Ray driver's output")?;
                let msg: Value = serde_json::from_str(&line)
                    .with_context(|| format!("the Ray driver printed `{line}`"))?;
                let id = msg["id"]
                    .as_u64()
                    .map(|i| i as usize)
                    .filter(|&i| i < todo.len() && !finished[i]);
                let id = id.ok_or_else(|| {
                    anyhow!("the Ray driver answered for an unknown or finished run: `{line}`")
                })?;
                finished[id] = true;
                let spec = &todo[id];
                let result = self
                    .record_of(spec, &msg)
                    .and_then(|rec| results::append(&results_file, &rec));
                n += 1;
                match &result {
                    Ok(()) => ok += 1,
                    Err(e) => failed.push((spec.key.clone(), format!("{e:#}"))),
                }
                self.progress_line(n, todo.len(), started, spec, result.is_err());
            }
            Ok(log.join().unwrap_or_default())
        })?;
        let status = child.wait()?;
        let _ = std::fs::remove_file(&driver);
        let _ = std::fs::remove_dir(&dir);
        let why = String::from_utf8_lossy(&driver_log)
            .lines()
            .rev()
            .take(3)
            .collect::<Vec<_>>()
            .join(" | ");
        for spec in todo
            .iter()
            .zip(&finished)
            .filter(|(_, &f)| !f)
            .map(|(s, _)| s)
        {
            failed.push((
                spec.key.clone(),
                format!("the Ray driver exited ({status}) before this run finished: {why}"),
            ));
        }
        outcome.ran = ok;
        outcome.failed = failed;
        self.fold_time_series();
        Ok(outcome)
    }

    /// The record of one driver message (see ray_driver.py), its time series written where the
    /// local executor writes it.
    fn record_of(&self, spec: &RunSpec, msg: &Value) -> Result<Value> {
        if let Some(e) = msg["error"].as_str() {
            bail!("the Ray task failed: {e}");
        }
        let code = msg["code"]
            .as_i64()
            .ok_or_else(|| anyhow!("the Ray driver's result has no exit code"))?;
        if let Some(ts) = msg["timeseries"].as_str() {
            leocc_base::write_atomic(&timeseries_path(&self.out_dir, spec), ts.as_bytes())?;
        }
        let text = |k: &str| msg[k].as_str().unwrap_or("").as_bytes().to_vec();
        let exit = if code == 0 {
            Ok(())
        } else {
            Err(format!("exit status {code} on a Ray worker"))
        };
        self.finish(spec, exit, &text("stdout"), &text("stderr"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{Matrix, Scenario};
    use leocc_sim::QueueLimit;

    #[test]
    fn worker_args_replace_only_the_trace_and_timeseries_paths() {
        let runner = Runner {
            exe: "/bin/leocc".into(),
            out_dir: "/tmp/o".into(),
            jobs: 1,
            progress: false,
        };
        let m = Matrix {
            engine: Engine::Sim,
            traces: vec!["/data/a.trace".into()],
            ccs: vec!["leocc".into()],
            scenarios: vec![Scenario::Single],
            runs: 1,
            seed: 3,
            duration_s: Some(5.0),
            queues: vec![QueueLimit::Packets(500)],
            loss: None,
            oracle_reconfig: false,
        };
        let spec = &m.expand(|_| 5.0)[0];
        let args = worker_args(&runner, spec);
        let after = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
        assert_eq!(after("--trace"), TRACE_ARG);
        assert_eq!(after("--timeseries"), TIMESERIES_ARG);
        assert_eq!(after("--seed"), "3");
        assert_eq!(args[0], "sim");
        assert!(
            !args
                .iter()
                .any(|a| a.contains("/data/a.trace") || a.contains("/tmp/o")),
            "{args:?}"
        );
    }
}
