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
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The version of video.jsonl's rows: bumped when a field changes meaning or goes away. Rows
/// without it are version 0.
pub const SCHEMA: u32 = 1;

/// One video session as the harness reports it (`leocc_ml.video`: its QoE summary and the
/// session's settings), with the engine and, behind the emulator, the trace and control this
/// module ran it with. The harness's per-chunk log stays in its own file (`DIR/video/`). An
/// unknown or missing field is an error naming it: the harness and this type are one contract.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoRecord {
    /// The row's version ([`SCHEMA`]; 0 for rows written before it).
    #[serde(default)]
    pub schema: u32,
    /// `sim` (trace-driven player) or `emu` (kernel TCP behind the emulator).
    pub engine: String,
    /// The harness's mode: `trace` or `emu`.
    pub mode: String,
    /// The trace (emulator sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The trace's profile (trace-driven sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The server's congestion control (emulator sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// The client's congestion control (emulator sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cc: Option<String>,
    /// RobustMPC's throughput predictor (one of [`PREDICTORS`], or `schedule`); none for a
    /// dash.js session with one of dash.js's own rules.
    #[serde(default)]
    pub predictor: Option<String>,
    /// The player: absent for the Python player, `dashjs` for dash.js in Chromium.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player: Option<String>,
    /// dash.js's ABR rule (`abrDynamic`, `abrL2A`, ..., or `mpc`: RobustMPC as a dash.js rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abr: Option<String>,
    /// A live stream (dash.js sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<bool>,
    /// The live target latency, s (live dash.js sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target_s: Option<f64>,
    /// The live latency dash.js measured, median and p95, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_median_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p95_s: Option<f64>,
    /// Segment length, s (dash.js sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment_s: Option<f64>,
    /// Stalls after the first frame (dash.js sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalls: Option<u64>,
    /// Frames Chromium decoded and dropped (dash.js sessions: the proof that video played).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames_decoded: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames_dropped: Option<u64>,
    /// Quality changes the video element rendered (dash.js sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered_switches: Option<u64>,
    /// Seed of a trace-driven session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Chunks played.
    pub chunks: u64,
    /// QoE over the session (Pensieve's linear QoE: bitrate − rebuffering − switching).
    pub qoe: f64,
    /// QoE per chunk.
    pub qoe_per_chunk: f64,
    /// Mean bitrate played, Mbit/s.
    pub mean_bitrate_mbps: f64,
    /// The ladder's top rung, Mbit/s.
    pub top_mbps: f64,
    /// The top rung as a share of the trace's mean capacity (trace-driven sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_share: Option<f64>,
    /// The client's buffer target, s (trace-driven sessions: Pensieve's 60, or a live latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_s: Option<f64>,
    /// Chunk length, s (trace-driven sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_s: Option<f64>,
    /// Rebuffering time / session time.
    pub rebuffer_ratio: f64,
    /// Rebuffering time, s.
    pub rebuffer_s: f64,
    /// Time to the first frame, s.
    pub startup_s: f64,
    /// Bitrate switches.
    pub switches: u64,
    /// Wall-clock length of an emulator session, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

impl VideoRecord {
    /// What chose the qualities: the predictor (RobustMPC), or dash.js's rule with its
    /// predictor for RobustMPC in dash.js (`dashjs mpc:schedule`, `dashjs abrL2A`).
    pub fn rule(&self) -> String {
        match (&self.abr, &self.predictor) {
            (Some(a), Some(p)) => format!("dashjs {a}:{p}"),
            (Some(a), None) => format!("dashjs {a}"),
            (None, p) => p.clone().unwrap_or_else(|| "-".into()),
        }
    }

    /// A session the harness reported (`v`, its per-chunk or per-segment log dropped), run by
    /// `engine`.
    fn from_harness(mut v: Value, engine: Engine, what: &Path) -> Result<VideoRecord> {
        if let Some(o) = v.as_object_mut() {
            o.remove("chunks_log");
            o.remove("fragments_log");
            o.insert("engine".into(), engine.to_string().into());
            o.insert("schema".into(), SCHEMA.into());
        }
        serde_json::from_value(v).with_context(|| format!("{}: not a video session record", what.display()))
    }
}

/// RobustMPC's throughput predictors: MPC's default, ours, and the trace oracle.
pub const PREDICTORS: [&str; 3] = ["harmonic", "leo", "oracle"];
/// Every predictor the harness knows (`schedule`: the link's reconfiguration times).
pub const ALL_PREDICTORS: [&str; 4] = ["harmonic", "leo", "schedule", "oracle"];
/// dash.js's own ABR rules, as `leocc-video --abr` names them.
pub const DASHJS_RULES: [&str; 5] = ["dynamic", "bola", "throughput", "l2a", "lolp"];
/// The ABR rules a real-player evaluation runs unless told otherwise.
pub const DEFAULT_DASHJS_RULES: [&str; 4] = ["dynamic", "l2a", "mpc:harmonic", "mpc:schedule"];

/// The real player's setting (`leocc eval --video-player dashjs`): dash.js in Chromium behind
/// the emulator, once per rule.
#[derive(Clone, Debug, PartialEq)]
pub struct DashSetting {
    /// dash.js's own rules ([`DASHJS_RULES`]) or `mpc:PREDICTOR`: RobustMPC as a dash.js rule.
    pub rules: Vec<String>,
    /// Live target latency, s; `None`: on demand.
    pub latency_s: Option<f64>,
    /// Segment length, s (divides 20).
    pub segment_s: f64,
    /// Session length after the first frame, s.
    pub duration_s: f64,
}

impl DashSetting {
    /// Checks every rule's name; the error lists the known ones.
    pub fn check(&self) -> Result<()> {
        for r in &self.rules {
            let ok = match r.split_once(':') {
                Some(("mpc", p)) => ALL_PREDICTORS.contains(&p),
                None => DASHJS_RULES.contains(&r.as_str()),
                _ => false,
            };
            if !ok {
                bail!(
                    "unknown video ABR rule {r:?}: dash.js's {} or mpc:PREDICTOR with a predictor of {}",
                    DASHJS_RULES.join(", "),
                    ALL_PREDICTORS.join(", ")
                );
            }
        }
        if !(self.segment_s > 0.0 && self.duration_s > 0.0) || self.latency_s.is_some_and(|l| !(l > 0.0)) {
            bail!("video segment length, session length and live latency must be positive");
        }
        Ok(())
    }

    /// The session's name part: the rule and the setting (`dynamic-live3s`, `mpc-oracle-vod`).
    fn tag(&self, rule: &str) -> String {
        let setting = self.latency_s.map_or("vod".to_string(), |l| format!("live{l}s"));
        format!("{}-{setting}", rule.replace(':', "-"))
    }
}
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
    /// The real player and its rules (emulator only); `None`: the Python player with RobustMPC
    /// and each of [`PREDICTORS`].
    pub dashjs: Option<DashSetting>,
}

/// One emulator session of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub trace: PathBuf,
    pub cc: String,
    /// The Python player's predictor, or the dash.js rule (`l2a`, `mpc:schedule`).
    pub rule: String,
    /// File name (in `DIR/video/`) of the session's result.
    pub file: String,
}

impl VideoPlan {
    /// One line per session, as `leocc eval --dry-run` lists them: behind the emulator every
    /// trace × control × predictor, trace-driven every trace × predictor (one harness run).
    pub fn labels(&self) -> Vec<String> {
        match self.engine {
            Engine::Emu => self
                .sessions()
                .iter()
                .map(|s| format!("video emu {} {} {}{}", trace_name(&s.trace), s.cc, if self.dashjs.is_some() { "dashjs " } else { "" }, s.rule))
                .collect(),
            Engine::Sim => self
                .traces
                .iter()
                .flat_map(|t| PREDICTORS.iter().map(move |p| format!("video sim {} {p}", trace_name(t))))
                .collect(),
        }
    }

    /// The emulator sessions: every trace × control × predictor (or dash.js rule).
    pub fn sessions(&self) -> Vec<Session> {
        let rules: Vec<String> = match &self.dashjs {
            Some(d) => d.rules.clone(),
            None => PREDICTORS.iter().map(|p| p.to_string()).collect(),
        };
        let mut out = Vec::new();
        for trace in &self.traces {
            for cc in &self.ccs {
                for rule in &rules {
                    let what = match &self.dashjs {
                        Some(d) => format!("dashjs-{}", d.tag(rule)),
                        None => rule.clone(),
                    };
                    out.push(Session {
                        trace: trace.clone(),
                        cc: cc.clone(),
                        rule: rule.clone(),
                        file: format!("{}-{}-{}.json", trace_name(trace), cc, what),
                    });
                }
            }
        }
        out
    }

    /// The harness's `emu` arguments for session `s` (its trace already absolute).
    fn emu_args(&self, s: &Session, trace: &str, out: &str) -> Vec<String> {
        let mut a: Vec<String> = ["emu", "--trace", trace, "--cc", &s.cc].iter().map(|x| x.to_string()).collect();
        match &self.dashjs {
            None => a.extend(["--predictor".to_string(), s.rule.clone()]),
            Some(d) => {
                let (abr, pred) = s.rule.split_once(':').map_or((s.rule.as_str(), None), |(a, p)| (a, Some(p)));
                a.extend(["--player", "dashjs", "--abr", abr].iter().map(|x| x.to_string()));
                if let Some(p) = pred {
                    a.extend(["--predictor".to_string(), p.to_string()]);
                }
                a.extend(["--segment-s".to_string(), d.segment_s.to_string(), "--duration".to_string(), d.duration_s.to_string()]);
                if let Some(l) = d.latency_s {
                    a.extend(["--live".to_string(), "--latency".to_string(), l.to_string()]);
                }
            }
        }
        a.extend(["--json".to_string(), out.to_string()]);
        a
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
pub fn run(plan: &VideoPlan) -> Result<Vec<VideoRecord>> {
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
                "--predictors".into(),
                PREDICTORS.join(","),
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
            for r in read_rows(&out)? {
                rows.push(VideoRecord::from_harness(r, Engine::Sim, &out)?);
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
                        s.rule
                    );
                    let trace = abs(&s.trace)?.display().to_string();
                    let args = plan.emu_args(s, &trace, &out.display().to_string());
                    run_child(harness(&args.iter().map(String::as_str).collect::<Vec<_>>()), &format!("video session {}", s.file))?;
                }
                for r in read_rows(&out)? {
                    let mut r = VideoRecord::from_harness(r, Engine::Emu, &out)?;
                    r.trace = Some(trace_name(&s.trace));
                    r.cc = Some(s.cc.clone());
                    rows.push(r);
                }
            }
        }
    }
    let text: String = rows
        .iter()
        .map(|r| serde_json::to_value(r).expect("a video record always serialises").to_string() + "\n")
        .collect();
    let jsonl = plan.out_dir.join("video.jsonl");
    leocc_base::out::write_atomic(&jsonl, text.as_bytes()).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(rows)
}

/// A plain table: one row per engine, trace, control and predictor.
pub fn table(rows: &[VideoRecord]) -> String {
    let stem = |v: &str| Path::new(v).file_stem().and_then(|x| x.to_str()).unwrap_or(v).to_string();
    let mut out = format!(
        "{:<6} {:<22} {:<7} {:<16} {:>7} {:>13} {:>9} {:>9}\n",
        "engine", "trace", "cc", "rule", "QoE", "bitrate Mbit/s", "rebuf %", "switches"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<6} {:<22} {:<7} {:<16} {:>7.1} {:>13.1} {:>9.2} {:>9}\n",
            r.engine,
            r.trace.as_deref().map_or("-".into(), stem),
            r.cc.as_deref().unwrap_or("-"),
            r.rule(),
            r.qoe,
            r.mean_bitrate_mbps,
            100.0 * r.rebuffer_ratio,
            r.switches
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
            dashjs: None,
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
    fn a_real_player_plan_runs_every_rule_with_its_setting() {
        let mut p = plan(Engine::Emu, Path::new("/nonexistent"));
        p.dashjs = Some(DashSetting { rules: vec!["l2a".into(), "mpc:schedule".into()], latency_s: Some(3.0), segment_s: 1.0, duration_s: 45.0 });
        p.dashjs.as_ref().unwrap().check().unwrap();
        let s = p.sessions();
        assert_eq!(s.len(), 2 * 2 * 2);
        assert_eq!(s[1].file, "starlink-down-60s-bbr-dashjs-mpc-schedule-live3s.json");
        let a = p.emu_args(&s[1], "/t.trace", "/o.json").join(" ");
        assert_eq!(a, "emu --trace /t.trace --cc bbr --player dashjs --abr mpc --predictor schedule --segment-s 1 --duration 45 --live --latency 3 --json /o.json");
        assert!(p.labels()[0].ends_with("bbr dashjs l2a"), "{:?}", p.labels());
        let vod = DashSetting { rules: vec!["dynamic".into()], latency_s: None, segment_s: 2.0, duration_s: 60.0 };
        assert_eq!(vod.tag("dynamic"), "dynamic-vod");
        for bad in ["mpc:crystal", "abrDynamic", "mpc"] {
            let e = DashSetting { rules: vec![bad.into()], ..vod.clone() }.check().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("mpc:PREDICTOR"), "{e}");
        }
    }

    #[test]
    fn a_dashjs_session_is_a_record_too() {
        let harness = serde_json::json!({"mode": "emu", "trace": "/x/starlink-down-60s.trace", "cc": "leocc", "predictor": null,
            "player": "dashjs", "abr": "abrL2A", "live": true, "latency_target_s": 3.0, "latency_median_s": 3.0, "latency_p95_s": 3.01,
            "segment_s": 1.0, "stalls": 0, "frames_decoded": 1114, "frames_dropped": 1, "rendered_switches": 5, "chunks": 45,
            "qoe": 135.9, "qoe_per_chunk": 3.0, "mean_bitrate_mbps": 120.4, "top_mbps": 163.0, "rebuffer_ratio": 0.0, "rebuffer_s": 0.0,
            "startup_s": 0.47, "switches": 5, "wall_s": 50.2, "fragments_log": [{"index": 0}]});
        let r = VideoRecord::from_harness(harness, Engine::Emu, Path::new("d.json")).unwrap();
        assert_eq!((r.rule().as_str(), r.frames_decoded, r.live), ("dashjs abrL2A", Some(1114), Some(true)));
        assert!(table(&[r]).contains("dashjs abrL2A"));
    }

    #[test]
    fn table_lists_each_session() {
        let harness = serde_json::json!({"mode": "emu", "trace": "/x/starlink-down-60s.trace", "cc": "bbr", "client_cc": "bbr",
            "predictor": "leo", "chunks": 45, "qoe": 170.25, "qoe_per_chunk": 3.78, "mean_bitrate_mbps": 150.0, "top_mbps": 170.0,
            "rebuffer_ratio": 0.01, "rebuffer_s": 0.5, "startup_s": 0.3, "switches": 4, "wall_s": 61.0, "chunks_log": [{"chunk": 0}]});
        let r = VideoRecord::from_harness(harness.clone(), Engine::Emu, Path::new("s.json")).unwrap();
        assert_eq!((r.engine.as_str(), r.schema, r.switches), ("emu", SCHEMA, 4));
        let mut bad = harness;
        bad["rebufer_s"] = 0.5.into();
        let e = format!("{:#}", VideoRecord::from_harness(bad, Engine::Emu, Path::new("s.json")).unwrap_err());
        assert!(e.contains("s.json") && e.contains("rebufer_s"), "{e}");
        let t = table(&[r]);
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
            // 45 chunks at most at the top rung (4.3 Pensieve units each).
            assert!(r.qoe > 0.0 && r.qoe <= 45.0 * 4.3 + 1e-9, "{r:?}");
            assert_eq!((r.chunks, r.engine.as_str()), (45, "sim"));
        }
    }
}
