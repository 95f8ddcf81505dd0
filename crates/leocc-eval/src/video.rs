//! `leocc eval --scenario video`: adaptive video per trace, control and throughput predictor.
//!
//! The player, the server and RobustMPC live in the Python package `python/leocc_ml` (its
//! predictors need scikit-learn); this module only plans the sessions, runs the harness as
//! child processes (`leocc-video emu` behind the emulator, or `leocc-video sim` trace-driven),
//! gathers their JSON into `DIR/video.jsonl` and prints the table. Sessions already in
//! `DIR/video/` are not run again, so an interrupted evaluation resumes.

use crate::matrix::{trace_name, Engine};
use anyhow::{bail, Context, Result};
use leocc_emu::owned::{die_with_parent_by, own_group, terminate_group};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// RobustMPC's throughput predictors: MPC's default, ours, and the trace oracle.
pub const PREDICTORS: [&str; 3] = ["harmonic", "leo", "oracle"];
/// Python package directory relative to the repository root.
const PACKAGE_DIR: &str = "python/leocc_ml";
/// The venv `scripts/setup.sh` makes, relative to the repository root.
const VENV_PYTHON: &str = ".venv/bin/python";

/// What to run.
#[derive(Clone, Debug)]
pub struct VideoPlan {
    pub engine: Engine,
    pub traces: Vec<PathBuf>,
    /// Server-side congestion controls (emulator only; the trace-driven player has no TCP).
    pub ccs: Vec<String>,
    pub out_dir: PathBuf,
    /// The `leocc` binary the harness should use for `leocc emu` and `leocc trace`.
    pub leocc_exe: PathBuf,
}

/// One emulator session of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub trace: PathBuf,
    pub cc: String,
    pub predictor: &'static str,
    /// File name (in `DIR/video/`) of the session's result.
    pub file: String,
}

impl VideoPlan {
    /// The emulator sessions: every trace × control × predictor.
    pub fn sessions(&self) -> Vec<Session> {
        let mut out = Vec::new();
        for trace in &self.traces {
            for cc in &self.ccs {
                for p in PREDICTORS {
                    let file = format!("{}-{}-{}.json", trace_name(trace), cc, p);
                    out.push(Session {
                        trace: trace.clone(),
                        cc: cc.clone(),
                        predictor: p,
                        file,
                    });
                }
            }
        }
        out
    }
}

/// The Python interpreter with `leocc_ml` and the package directory: `$LEOCC_PYTHON`, else the
/// repository's `.venv` found above `exe` or the working directory.
pub fn find_python(exe: &Path) -> Result<(PathBuf, PathBuf)> {
    let mut roots: Vec<PathBuf> = exe.ancestors().skip(1).map(Path::to_path_buf).collect();
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    let root = roots
        .into_iter()
        .find(|r| r.join(PACKAGE_DIR).join("pyproject.toml").is_file())
        .with_context(|| format!("{PACKAGE_DIR} not found above {} or the working directory: run from the leocc checkout", exe.display()))?;
    let python = match std::env::var_os("LEOCC_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => root.join(VENV_PYTHON),
    };
    if !python.is_file() {
        bail!("{} missing: run `scripts/setup.sh --python` or `make test` (they make the venv with leocc_ml; `make demo` does not), or set LEOCC_PYTHON", python.display());
    }
    Ok((python, root.join(PACKAGE_DIR)))
}

fn run_child(mut cmd: Command, what: &str) -> Result<()> {
    die_with_parent_by(&mut cmd, libc::SIGTERM);
    own_group(&mut cmd);
    let mut child = cmd.spawn().with_context(|| format!("starting {what}"))?;
    let status = child
        .wait()
        .with_context(|| format!("waiting for {what}"))?;
    terminate_group(&mut child);
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

fn read_rows(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match serde_json::from_str::<Value>(&text)
        .with_context(|| format!("{}: not JSON", path.display()))?
    {
        Value::Array(v) => Ok(v),
        v @ Value::Object(_) => Ok(vec![v]),
        _ => bail!("{}: expected a JSON object or array", path.display()),
    }
}

/// Runs the plan; returns every session's result (with `engine`, `trace`, `cc` set) and writes
/// them to `DIR/video.jsonl`.
pub fn run(plan: &VideoPlan) -> Result<Vec<Value>> {
    let (python, pkg) = find_python(&plan.leocc_exe)?;
    let dir = plan.out_dir.join("video");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let harness = |args: &[&str]| {
        let mut c = Command::new(&python);
        c.args(["-m", "leocc_ml.video.cli"])
            .args(args)
            .current_dir(&pkg)
            .env("LEOCC_BIN", &plan.leocc_exe);
        c
    };
    let abs = |p: &Path| std::fs::canonicalize(p).with_context(|| format!("trace {}", p.display()));
    let mut rows = Vec::new();
    match plan.engine {
        Engine::Sim => {
            let out = dir.join("sim.json");
            let traces = plan
                .traces
                .iter()
                .map(|t| abs(t))
                .collect::<Result<Vec<_>>>()?;
            let mut args: Vec<String> = vec![
                "sim".into(),
                "--json".into(),
                out.display().to_string(),
                "--traces".into(),
            ];
            args.extend(traces.iter().map(|t| t.display().to_string()));
            eprintln!(
                "eval video: trace-driven sessions ({}) on {} trace(s)",
                PREDICTORS.join(", "),
                traces.len()
            );
            run_child(
                harness(&args.iter().map(String::as_str).collect::<Vec<_>>()),
                "leocc-video sim",
            )?;
            for mut r in read_rows(&out)? {
                r["engine"] = "sim".into();
                rows.push(r);
            }
        }
        Engine::Emu => {
            // Root, the kernel's controls, and this build's LeoCC loaded, as for flow runs.
            crate::emu_engine::preflight(&plan.ccs)?;
            let sessions = plan.sessions();
            for (i, s) in sessions.iter().enumerate() {
                let out = dir.join(&s.file);
                if !out.is_file() {
                    eprintln!(
                        "eval video: session {}/{}: {} {} {}",
                        i + 1,
                        sessions.len(),
                        trace_name(&s.trace),
                        s.cc,
                        s.predictor
                    );
                    let trace = abs(&s.trace)?.display().to_string();
                    let o = out.display().to_string();
                    let args = [
                        "emu",
                        "--trace",
                        &trace,
                        "--cc",
                        &s.cc,
                        "--predictor",
                        s.predictor,
                        "--json",
                        &o,
                    ];
                    run_child(harness(&args), &format!("video session {}", s.file))?;
                }
                for mut r in read_rows(&out)? {
                    r["engine"] = "emu".into();
                    r["trace"] = trace_name(&s.trace).into();
                    r["cc"] = s.cc.clone().into();
                    rows.push(r);
                }
            }
        }
    }
    let mut text = String::new();
    for r in &mut rows {
        if let Some(o) = r.as_object_mut() {
            o.remove("chunks_log");
        }
        text.push_str(&r.to_string());
        text.push('\n');
    }
    let jsonl = plan.out_dir.join("video.jsonl");
    leocc_base::out::write_atomic(&jsonl, text.as_bytes()).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(rows)
}

/// A plain table: one row per engine, trace, control and predictor.
pub fn table(rows: &[Value]) -> String {
    let f = |r: &Value, k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let s = |r: &Value, k: &str| {
        let v = r.get(k).and_then(Value::as_str).unwrap_or("-");
        Path::new(v)
            .file_stem()
            .and_then(|x| x.to_str())
            .unwrap_or(v)
            .to_string()
    };
    let mut out = format!(
        "{:<6} {:<22} {:<7} {:<9} {:>7} {:>13} {:>9} {:>9}\n",
        "engine", "trace", "cc", "predictor", "QoE", "bitrate Mbit/s", "rebuf %", "switches"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<6} {:<22} {:<7} {:<9} {:>7.1} {:>13.1} {:>9.2} {:>9}\n",
            s(r, "engine"),
            s(r, "trace"),
            r.get("cc").and_then(Value::as_str).unwrap_or("-"),
            s(r, "predictor"),
            f(r, "qoe"),
            f(r, "mean_bitrate_mbps"),
            100.0 * f(r, "rebuffer_ratio"),
            r.get("switches").and_then(Value::as_u64).unwrap_or(0)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(engine: Engine, out: &Path) -> VideoPlan {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        VideoPlan {
            engine,
            traces: vec![
                root.join("traces/starlink-down-60s.trace"),
                root.join("traces/oneweb-60s.trace"),
            ],
            ccs: vec!["bbr".into(), "leocc".into()],
            out_dir: out.to_path_buf(),
            leocc_exe: root.join("target/release/leocc"),
        }
    }

    #[test]
    fn every_trace_control_and_predictor_once() {
        let s = plan(Engine::Emu, Path::new("/nonexistent")).sessions();
        assert_eq!(s.len(), 2 * 2 * 3);
        let mut files: Vec<_> = s.iter().map(|x| x.file.clone()).collect();
        files.sort();
        files.dedup();
        assert_eq!(files.len(), 12);
        assert_eq!(s[0].file, "starlink-down-60s-bbr-harmonic.json");
    }

    #[test]
    fn table_lists_each_session() {
        let rows = vec![
            serde_json::json!({"engine": "emu", "trace": "starlink-down-60s", "cc": "bbr",
            "predictor": "leo", "qoe": 170.25, "mean_bitrate_mbps": 150.0, "rebuffer_ratio": 0.01, "switches": 4}),
        ];
        let t = table(&rows);
        assert!(
            t.lines().nth(1).unwrap().contains("starlink-down-60s"),
            "{t}"
        );
        assert!(
            t.contains("170.2") && t.contains("150.0") && t.contains("1.00"),
            "{t}"
        );
    }

    /// The real harness, trace-driven, on the two bundled traces (needs the venv of
    /// scripts/setup.sh and a built leocc; says so and passes when they are missing).
    #[test]
    fn trace_driven_sessions_run_through_the_python_harness() {
        let dir = std::env::temp_dir().join(format!("leocc-video-test-{}", std::process::id()));
        let p = plan(Engine::Sim, &dir);
        if find_python(&p.leocc_exe).is_err() || !p.leocc_exe.is_file() {
            eprintln!("skipping: no .venv (scripts/setup.sh) or no target/release/leocc");
            return;
        }
        let rows = run(&p).expect("video sim");
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(rows.len(), 2 * PREDICTORS.len());
        for r in &rows {
            let q = r["qoe"].as_f64().unwrap();
            // 45 chunks at most at the top rung (4.3 Pensieve units each).
            assert!(q > 0.0 && q <= 45.0 * 4.3 + 1e-9, "{r}");
            assert_eq!(r["chunks"].as_u64(), Some(45));
        }
    }
}
