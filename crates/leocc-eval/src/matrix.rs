//! What to run: the matrix of engine x trace x buffer x queue discipline x scenario x controls
//! x seed, expanded into runs.

use leocc_base::controls;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use leocc_sim::{Qdisc, QueueLimit};

/// The buffers `leocc eval` runs by default: shallow, 500 packets (the LeoCC authors' replay
/// setting), and deep, 150 ms of the trace's mean capacity (Starlink-like: docs/evaluation.md).
pub const DEFAULT_QUEUES: &str = "500,150ms";

/// A buffer list as `--queue` takes it: comma-separated limits (`500,150ms`), duplicates dropped.
pub fn parse_queues(s: &str) -> Result<Vec<QueueLimit>, String> {
    let mut out: Vec<QueueLimit> = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let q: QueueLimit = item.parse()?;
        if !out.contains(&q) {
            out.push(q);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "--queue '{s}': no queue given ({})",
            leocc_sim::QUEUE_GRAMMAR
        ));
    }
    Ok(out)
}

/// The queue disciplines `leocc eval` runs by default: drop-tail only.
pub const DEFAULT_QDISCS: &str = "droptail";

/// A discipline list as `--qdisc` takes it: comma-separated names (`droptail,codel`),
/// duplicates dropped.
pub fn parse_qdiscs(s: &str) -> Result<Vec<Qdisc>, String> {
    let mut out: Vec<Qdisc> = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let q: Qdisc = item.parse()?;
        if !out.contains(&q) {
            out.push(q);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "--qdisc '{s}': no queue discipline given (one of: {})",
            leocc_sim::QDISC_NAMES.join(", ")
        ));
    }
    Ok(out)
}

/// Checks the controls of `--cc` for `engine` before any run starts: an unknown one is an
/// error naming it, the controls the engine runs, and the likely one for a typo (`cubci`: did
/// you mean cubic?), instead of a failed run per cell later.
pub fn check_ccs(engine: Engine, ccs: &[String]) -> Result<(), String> {
    for cc in ccs {
        match engine {
            Engine::Sim => {
                if !leocc_sim::cc::known(cc) {
                    return Err(format!("--cc: {}", leocc_sim::cc::unknown_cc(cc)));
                }
            }
            Engine::Emu => {
                if crate::emu_quic::quic_name(cc).is_some() {
                    crate::emu_quic::check(cc).map_err(|e| format!("--cc {cc}: {e}"))?;
                } else if !controls::runs_in(controls::Engine::Kernel, cc) {
                    let kernel = controls::names(controls::Engine::Kernel);
                    let hint = leocc_sim::cc::did_you_mean(cc, kernel.iter().copied());
                    return Err(format!(
                        "--cc: control '{cc}'{hint} has no kernel implementation (--engine emu \
                         runs {}, and quic:NAME)",
                        kernel.join(", ")
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Which engine carries a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The deterministic packet-level simulator (`leocc sim`): every control.
    Sim,
    /// The trace-driven emulator with real kernel TCP (`leocc emu` + iperf3).
    Emu,
}

impl FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sim" => Ok(Engine::Sim),
            "emu" => Ok(Engine::Emu),
            _ => Err(format!("unknown engine '{s}' (expected sim or emu)")),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Sim => "sim",
            Engine::Emu => "emu",
        })
    }
}

/// The flow arrangements a matrix can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// One flow of each control alone on the path, for the whole duration.
    Single,
    /// The two-stream test of seed 002: stream 1 from 0 s, stream 2 joins at 20 s, stream 1
    /// leaves at 120 s, stream 2 runs 20 s more (140 s in all).
    TwoStream,
    /// Three flows of the same control, joining 10 s apart: intra-protocol fairness.
    Fairness,
    /// One LeoCC flow against one BBR flow, started together.
    VsBbr,
    /// One LeoCC flow against one Cubic flow, started together.
    VsCubic,
    /// Adaptive video (RobustMPC with each throughput predictor) per control: run by
    /// [`crate::video`], not as flows.
    Video,
    /// LEOTP (seed 003) against kernel TCP on the emulator's multi-hop chain: run by
    /// [`crate::leotp`], on its own ISL-chain traces, not as flows over `--trace`.
    Leotp,
}

/// Seed 002's two-stream timings, in seconds.
pub const TWO_STREAM_JOIN_S: f64 = 20.0;
pub const TWO_STREAM_LEAVE_S: f64 = 120.0;
pub const TWO_STREAM_TAIL_S: f64 = 20.0;
/// Spacing between the joins of the fairness scenario's three flows, in seconds.
pub const FAIRNESS_JOIN_GAP_S: f64 = 10.0;

impl Scenario {
    /// Every scenario, in report order.
    pub const ALL: [Scenario; 7] = [
        Scenario::Single,
        Scenario::TwoStream,
        Scenario::Fairness,
        Scenario::VsBbr,
        Scenario::VsCubic,
        Scenario::Video,
        Scenario::Leotp,
    ];

    /// The scenario's own duration when it has one (two-stream is fixed by its method).
    pub fn fixed_duration_s(self) -> Option<f64> {
        match self {
            Scenario::TwoStream => Some(TWO_STREAM_LEAVE_S + TWO_STREAM_TAIL_S),
            _ => None,
        }
    }

    /// The controls this scenario runs for a requested control list: mixed scenarios run
    /// once (LeoCC against a fixed opponent) whatever the list.
    fn labels(self, ccs: &[String]) -> Vec<String> {
        match self {
            Scenario::VsBbr => vec!["leocc+bbr".into()],
            Scenario::VsCubic => vec!["leocc+cubic".into()],
            Scenario::Video | Scenario::Leotp => Vec::new(), // no flow runs: their modules run them
            _ => ccs.to_vec(),
        }
    }

    /// The simulator's `--flows` specification (`cc@start-stop,...`, seconds).
    pub fn flows_spec(self, label: &str, duration_s: f64) -> String {
        let d = duration_s;
        match self {
            Scenario::Single => format!("{label}@0-{d}"),
            Scenario::TwoStream => format!(
                "{label}@0-{TWO_STREAM_LEAVE_S},{label}@{TWO_STREAM_JOIN_S}-{}",
                TWO_STREAM_LEAVE_S + TWO_STREAM_TAIL_S
            ),
            Scenario::Fairness => (0..3)
                .map(|i| format!("{label}@{}-{d}", i as f64 * FAIRNESS_JOIN_GAP_S))
                .collect::<Vec<_>>()
                .join(","),
            Scenario::VsBbr | Scenario::VsCubic => label
                .split('+')
                .map(|cc| format!("{cc}@0-{d}"))
                .collect::<Vec<_>>()
                .join(","),
            Scenario::Video | Scenario::Leotp => String::new(),
        }
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.to_string() == s)
            .ok_or_else(|| {
                format!("unknown scenario '{s}' (expected single, two-stream, fairness, vs-bbr, vs-cubic, video or leotp)")
            })
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scenario::Single => "single",
            Scenario::TwoStream => "two-stream",
            Scenario::Fairness => "fairness",
            Scenario::VsBbr => "vs-bbr",
            Scenario::VsCubic => "vs-cubic",
            Scenario::Video => "video",
            Scenario::Leotp => "leotp",
        })
    }
}

/// A whole evaluation as the user asked for it.
#[derive(Clone, Debug)]
pub struct Matrix {
    pub engine: Engine,
    pub traces: Vec<PathBuf>,
    pub ccs: Vec<String>,
    pub scenarios: Vec<Scenario>,
    /// Runs per cell; run i uses seed `seed + i`.
    pub runs: u32,
    pub seed: u64,
    /// Seconds per run; None = the trace's own duration (capped by the engine).
    pub duration_s: Option<f64>,
    /// Bottleneck queues (the buffer axis): the matrix runs once per queue, the same queue
    /// for every control.
    pub queues: Vec<QueueLimit>,
    /// Random loss added on the path, the same for every control.
    pub loss: Option<f64>,
    /// Feed ground-truth reconfigurations instead of the detector (ablation only).
    pub oracle_reconfig: bool,
}

/// One run of the matrix: everything needed to execute it and to find it again on resume.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// Stable identity of the run; a run whose key is in results.jsonl is not run again.
    pub key: String,
    pub engine: Engine,
    pub trace: PathBuf,
    /// The trace's file stem, used in the report.
    pub trace_name: String,
    pub scenario: Scenario,
    /// The control (or `a+b` for mixed scenarios).
    pub label: String,
    pub flows: String,
    pub duration_s: f64,
    pub seed: u64,
    /// The bottleneck queue as given (a time is resolved per trace by the engine).
    pub queue: QueueLimit,
    /// The bottleneck queues' discipline.
    pub qdisc: Qdisc,
    pub loss: Option<f64>,
    pub oracle_reconfig: bool,
    /// `CC.NAME=VALUE` parameter settings of a sweep (empty: the controls' defaults).
    pub params: Vec<String>,
    /// The simulator's PoP probe noise (`leocc sim --probe-noise`); None: its default. Not
    /// part of the key.
    pub probe_noise: Option<leocc_sim::detector::ProbeNoiseModel>,
}

impl RunSpec {
    /// A file-name-safe form of the key, for the run's time-series file.
    pub fn file_id(&self) -> String {
        self.key
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// The stem of a trace path (`traces/starlink-down-60s.leo` -> `starlink-down-60s`).
pub fn trace_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.split_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => name,
    }
}

impl Matrix {
    /// Expands the matrix into runs, in a stable order (trace, queue, scenario, control, seed),
    /// every queue drop-tail. `trace_duration_s` gives each trace's length, which bounds a run
    /// with no --duration.
    pub fn expand(&self, trace_duration_s: impl Fn(&Path) -> f64) -> Vec<RunSpec> {
        self.expand_qdiscs(&[Qdisc::DropTail], trace_duration_s)
    }

    /// [`Matrix::expand`] with a queue-discipline axis: every run once per discipline, in the
    /// order (trace, queue, discipline, scenario, control, seed). A drop-tail run's key is the
    /// key it had before disciplines existed, so a results file from then resumes; the others'
    /// keys end in `|dropfront` or `|codel`.
    pub fn expand_qdiscs(
        &self,
        qdiscs: &[Qdisc],
        trace_duration_s: impl Fn(&Path) -> f64,
    ) -> Vec<RunSpec> {
        let mut out = Vec::new();
        for trace in &self.traces {
            let name = trace_name(trace);
            for &queue in &self.queues {
                for &qdisc in qdiscs {
                    for &scenario in &self.scenarios {
                        let duration_s = scenario
                            .fixed_duration_s()
                            .or(self.duration_s)
                            .unwrap_or_else(|| trace_duration_s(trace));
                        for label in scenario.labels(&self.ccs) {
                            for i in 0..self.runs {
                                let seed = self.seed + u64::from(i);
                                // `q500` is what keys had before the buffer axis, and drop-tail
                                // adds nothing, as before the discipline axis: a results file
                                // from then resumes.
                                let key = format!(
                                    "{}|{}|{}|{}|{}|d{}|q{}|l{}{}{}",
                                    self.engine,
                                    name,
                                    scenario,
                                    label,
                                    seed,
                                    duration_s,
                                    queue,
                                    self.loss.map_or("-".into(), |l| l.to_string()),
                                    if self.oracle_reconfig { "|oracle" } else { "" },
                                    if qdisc.is_default() {
                                        String::new()
                                    } else {
                                        format!("|{qdisc}")
                                    },
                                );
                                out.push(RunSpec {
                                    key,
                                    engine: self.engine,
                                    trace: trace.clone(),
                                    trace_name: name.clone(),
                                    scenario,
                                    flows: scenario.flows_spec(&label, duration_s),
                                    label: label.clone(),
                                    duration_s,
                                    seed,
                                    queue,
                                    qdisc,
                                    loss: self.loss,
                                    oracle_reconfig: self.oracle_reconfig,
                                    params: Vec::new(),
                                    probe_noise: None,
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// A simulator matrix for tests: traces a and b, cubic and leocc, 3 seeds, 500 packets.
#[cfg(test)]
pub(crate) fn test_matrix(scenarios: Vec<Scenario>) -> Matrix {
    Matrix {
        engine: Engine::Sim,
        traces: vec!["traces/a.leo".into(), "traces/b.leo".into()],
        ccs: vec!["cubic".into(), "leocc".into()],
        scenarios,
        runs: 3,
        seed: 7,
        duration_s: Some(30.0),
        queues: vec![QueueLimit::Packets(500)],
        loss: None,
        oracle_reconfig: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_controls_fail_up_front_with_a_suggestion() {
        let ccs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_ccs(Engine::Sim, &ccs(&["leocc", "cubic", "leocc-ref"])).is_ok());
        let e = check_ccs(Engine::Sim, &ccs(&["leocc", "cubci"])).unwrap_err();
        assert!(
            e.contains("'cubci'") && e.contains("did you mean cubic?"),
            "{e}"
        );
        assert!(!e.contains("--flows"), "{e}");
        // The emulator runs the kernel's controls only.
        let e = check_ccs(Engine::Emu, &ccs(&["vegas"])).unwrap_err();
        assert!(e.contains("no kernel implementation"), "{e}");
        let e = check_ccs(Engine::Emu, &ccs(&["bbbr"])).unwrap_err();
        assert!(e.contains("did you mean bbr?"), "{e}");
    }

    #[test]
    fn expands_every_cell_with_distinct_keys() {
        let runs = test_matrix(vec![Scenario::Single, Scenario::VsBbr]).expand(|_| 60.0);
        // 2 traces x (2 controls + 1 mixed) x 3 seeds
        assert_eq!(runs.len(), 2 * 3 * 3);
        let mut keys: Vec<_> = runs.iter().map(|r| r.key.clone()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), runs.len());
        assert_eq!(runs[0].seed, 7);
        assert_eq!(runs[2].seed, 9);
    }

    #[test]
    fn every_buffer_is_a_run_of_its_own() {
        let mut m = test_matrix(vec![Scenario::Single]);
        m.queues = parse_queues(DEFAULT_QUEUES).unwrap();
        assert_eq!(
            m.queues,
            vec![QueueLimit::Packets(500), QueueLimit::Time(150_000)]
        );
        let runs = m.expand(|_| 60.0);
        assert_eq!(runs.len(), 2 * 2 * 2 * 3);
        assert_eq!(
            runs.iter()
                .filter(|r| r.queue == QueueLimit::Time(150_000))
                .count(),
            runs.len() / 2
        );
        // The shallow buffer keeps the key runs had before the buffer axis.
        assert!(runs[0].key.contains("|q500|"), "{}", runs[0].key);
        assert!(runs.iter().any(|r| r.key.contains("|q150ms|")));
        let mut keys: Vec<_> = runs.iter().map(|r| r.key.clone()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), runs.len());
        assert_eq!(parse_queues("500, 500p,150ms").unwrap().len(), 2);
        assert!(parse_queues("500,deep").is_err());
        assert!(parse_queues(",").is_err());
    }

    #[test]
    fn two_stream_follows_seed_002_timings() {
        let runs = test_matrix(vec![Scenario::TwoStream]).expand(|_| 60.0);
        assert_eq!(runs[0].duration_s, 140.0);
        assert_eq!(runs[0].flows, "cubic@0-120,cubic@20-140");
    }

    #[test]
    fn mixed_and_fairness_flow_specs() {
        assert_eq!(
            Scenario::VsCubic.flows_spec("leocc+cubic", 30.0),
            "leocc@0-30,cubic@0-30"
        );
        assert_eq!(
            Scenario::Fairness.flows_spec("bbr", 60.0),
            "bbr@0-60,bbr@10-60,bbr@20-60"
        );
    }

    #[test]
    fn names_round_trip_and_reject_unknown() {
        for s in Scenario::ALL {
            assert_eq!(s.to_string().parse::<Scenario>().unwrap(), s);
        }
        assert!("sideways"
            .parse::<Scenario>()
            .unwrap_err()
            .contains("sideways"));
        assert!("qemu".parse::<Engine>().is_err());
        assert_eq!(
            trace_name(Path::new("x/starlink-down-60s.leo")),
            "starlink-down-60s"
        );
    }

    #[test]
    fn the_qdisc_axis_multiplies_the_runs_and_keeps_drop_tail_keys() {
        let m = test_matrix(vec![Scenario::Single]);
        let plain = m.expand(|_| 60.0);
        let qdiscs = parse_qdiscs("droptail, codel,dropfront,codel").unwrap();
        assert_eq!(
            qdiscs,
            vec![Qdisc::DropTail, Qdisc::CoDel, Qdisc::DropFront]
        );
        let runs = m.expand_qdiscs(&qdiscs, |_| 60.0);
        assert_eq!(runs.len(), 3 * plain.len());
        let keys: std::collections::HashSet<&str> = runs.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys.len(), runs.len(), "keys are distinct");
        // Drop-tail runs are the plain matrix's runs, keys included (old results resume).
        let tail: Vec<&str> = runs
            .iter()
            .filter(|r| r.qdisc == Qdisc::DropTail)
            .map(|r| r.key.as_str())
            .collect();
        assert_eq!(
            tail,
            plain.iter().map(|r| r.key.as_str()).collect::<Vec<_>>()
        );
        assert!(plain.iter().all(|r| r.qdisc == Qdisc::DropTail));
        let codel = runs.iter().find(|r| r.qdisc == Qdisc::CoDel).unwrap();
        assert!(codel.key.ends_with("|codel"), "{}", codel.key);
        assert_eq!(
            runs.iter().filter(|r| r.qdisc == Qdisc::DropFront).count(),
            plain.len()
        );
        assert!(parse_qdiscs("droptail,red").unwrap_err().contains("'red'"));
        assert!(parse_qdiscs(" , ").is_err());
    }
}
