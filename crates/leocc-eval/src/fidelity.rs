//! `leocc bench fidelity`: the same paths through the simulator and through the emulator with
//! the kernel's own TCP, and how far the simulator's numbers are from the kernel's.
//!
//! Every cell (trace x buffer x added loss x control) runs `runs` times in each engine: the
//! simulator with seeds 1..=runs, the emulator `runs` times (seeds 1..=runs of its loss
//! generator). Each run is exactly what `leocc eval` runs for that cell (the same child
//! `leocc sim --json` / `leocc emu-run`, through [`Runner::command`] and [`Runner::finish`]), and
//! its record goes into `DIR/results.jsonl` the moment it finishes (one write per line; `leocc
//! report DIR` reads the folder too). Emulator runs each hold an exclusive `flock` on
//! [`EMU_LOCK`], so they never overlap anyone else's emulator run on the machine.
//!
//! A rerun into the same folder resumes: runs already recorded are not run again. After a
//! change to the simulator, `rerun` = [sim] drops the simulator's rows first, so the table
//! compares this build's model with the kernel runs already measured.
//!
//! Both engines replay the same stretch of the trace. Run k of a cell starts its flows
//! (k - 1) x [`START_STEP_S`] into it, so that repeated runs sample how start-up meets the
//! trace's features (one start gives nearly the same run every time in both engines, and a
//! different start can change the run entirely: HyStart meeting an RTT band or not). The
//! emulator's flows then start later than that by the tools' own setup (process start,
//! iperf3's control connection: 0.85 s on a 128 ms path), so the emulator's runs go first
//! and each simulator run starts its flows where the emulator run of the same seed started
//! its own (`data_start_s`, see [`aligned`]).
//!
//! Per cell and metric the table gives sim / emu, the ratio of the two engines' means, with a
//! 95 % interval from the spread of the repeated runs (on the log scale: the delta method with
//! Welch's degrees of freedom, see [`crate::stats::ratio_interval`]). Metrics: throughput, p95 RTT, mean
//! queueing delay, and for two-flow cells (`--cc a+b`) the first flow's share of the two
//! flows' throughput. The worst cell is the one with the largest |ln ratio| among the
//! differences that matter (above [`floor`] in absolute terms).

use leocc_base::controls;
use crate::align::{aligned, move_flows};
use crate::matrix::{trace_name, Engine, RunSpec, Scenario};
use crate::results::{self, Record};
use crate::runner::Runner;
use crate::stats::{fmt_ratio, ratio_interval, Stat};
use anyhow::{anyhow, bail, Context, Result};
use leocc_sim::detector::ProbeNoiseModel;
use leocc_sim::QueueLimit;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The simulator's probe noise in a fidelity run: the emulator's PoP answers the detector's
/// pings through the trace's path with no noise of its own, so the simulator's probe stream
/// must have none either, or the two engines' LeoCC see different detectors. (With the
/// simulator's default bent-pipe noise, drawn path 1 with 0.2 % loss got false events at 10
/// and 15 s and a competing mode a quarter of the time that the kernel's flow never had.)
pub const EMU_PROBE_NOISE: ProbeNoiseModel = ProbeNoiseModel::None;

/// The lock every emulator run on this machine is taken under (`flock /tmp/leocc-emu.lock`).
pub const EMU_LOCK: &str = "/tmp/leocc-emu.lock";
/// Default controls: the four the kernel runs here.
pub const DEFAULT_CCS: &str = "reno,cubic,bbr,leocc";
/// Default buffers.
pub const DEFAULT_QUEUES: &str = crate::matrix::DEFAULT_QUEUES;
/// Default added random loss rates.
pub const DEFAULT_LOSSES: &str = "0,0.002";
/// Run k of a cell starts its flows (k - 1) x this into the trace, in both engines, so that
/// repeated runs sample how start-up meets the trace's features (a step off the 10 ms grid of
/// trace delays and off common RTTs). Repeated at one start, both engines are nearly
/// deterministic there (the emulator's flows started within 2 ms of each other) while a
/// start 0.1 s later changed the simulator's CUBIC on drawn path 8 from 57 to 77 Mbit/s
/// (HyStart meeting an RTT band or not), and the kernel's as much.
pub const START_STEP_S: f64 = 0.37;

/// What to compare.
#[derive(Clone, Debug)]
pub struct Fidelity {
    pub traces: Vec<PathBuf>,
    /// Controls; `a+b` is a two-flow cell (both from 0 s).
    pub ccs: Vec<String>,
    pub queues: Vec<QueueLimit>,
    /// Random loss added on the data direction's satellite hop (0 = none).
    pub losses: Vec<f64>,
    pub duration_s: f64,
    /// Emulator runs per cell, and simulator seeds 1..=runs.
    pub runs: u32,
    /// Engines to run (both by default).
    pub engines: Vec<Engine>,
    /// Engines whose recorded runs are dropped before running (the simulator after a model change).
    pub rerun: Vec<Engine>,
}

/// The metrics compared, as (record field or derived name, label, unit).
pub const METRICS: [(&str, &str); 4] = [
    ("throughput_mbps", "throughput"),
    ("rtt_p95_ms", "p95 RTT"),
    ("qdelay_avg_ms", "mean qdelay"),
    ("share", "share"),
];

impl Fidelity {
    /// Checks the options.
    pub fn validate(&self) -> Result<()> {
        if self.traces.is_empty() {
            bail!("give at least one --trace");
        }
        if self.ccs.is_empty() || self.queues.is_empty() || self.losses.is_empty() {
            bail!("--cc, --queue and --loss need at least one value each");
        }
        if !(self.duration_s > 0.0 && self.duration_s <= 3600.0) {
            bail!(
                "--duration {} must be in (0, 3600] seconds",
                self.duration_s
            );
        }
        if self.runs == 0 {
            bail!("--runs must be at least 1");
        }
        for &l in &self.losses {
            if !(0.0..1.0).contains(&l) {
                bail!("--loss {l} must be in [0, 1)");
            }
        }
        for label in &self.ccs {
            let parts: Vec<&str> = label.split('+').collect();
            if parts.len() > 2 || parts.iter().any(|p| p.is_empty()) {
                bail!("--cc '{label}': a control, or two joined by '+' for a two-flow cell");
            }
            for p in parts {
                if !leocc_sim::cc::known(p) {
                    bail!("--cc '{label}': {}", leocc_sim::cc::unknown_cc(p));
                }
                if self.engines.contains(&Engine::Emu) && !controls::runs_in(controls::Engine::Kernel, p) {
                    bail!(
                        "--cc '{label}': '{p}' has no kernel implementation for the emulator (it runs {}); give --engine sim to compare nothing but the simulator",
                        controls::names(controls::Engine::Kernel).join(", ")
                    );
                }
            }
        }
        for t in &self.traces {
            if !t.exists() {
                bail!("trace {} not found", t.display());
            }
        }
        Ok(())
    }

    /// Every run, emulator runs first (the simulator's runs start where they did, see
    /// [`aligned`]), in a stable order. Keys are the ones `leocc eval` gives the same run.
    pub fn specs(&self) -> Vec<RunSpec> {
        let mut out = Vec::new();
        for engine in [Engine::Emu, Engine::Sim] {
            if !self.engines.contains(&engine) {
                continue;
            }
            for trace in &self.traces {
                let name = trace_name(trace);
                for &queue in &self.queues {
                    for &loss in &self.losses {
                        let loss = (loss > 0.0).then_some(loss);
                        for label in &self.ccs {
                            let (scenario, flows) = cell_flows(label, self.duration_s);
                            for seed in 1..=u64::from(self.runs) {
                                let offset = (seed - 1) as f64 * START_STEP_S;
                                let key = format!(
                                    "{engine}|{name}|{scenario}|{label}|{seed}|d{}|q{queue}|l{}",
                                    self.duration_s,
                                    loss.map_or("-".into(), |l| l.to_string()),
                                );
                                out.push(RunSpec {
                                    key,
                                    engine,
                                    trace: trace.clone(),
                                    trace_name: name.clone(),
                                    scenario,
                                    label: label.clone(),
                                    flows: move_flows(&flows, self.duration_s, |_, f| {
                                        Some(f.start_us + (offset * 1e6).round() as u64)
                                    })
                                    .expect("cell_flows writes valid flows")
                                    .0,
                                    duration_s: self.duration_s + offset,
                                    seed,
                                    queue,
                                    qdisc: leocc_sim::Qdisc::DropTail,
                                    loss,
                                    oracle_reconfig: false,
                                    params: Vec::new(),
                                    probe_noise: (engine == Engine::Sim).then_some(EMU_PROBE_NOISE),
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

/// The scenario and flows of a cell: one flow, or two started together (`a+b`).
fn cell_flows(label: &str, d: f64) -> (Scenario, String) {
    match label {
        "leocc+bbr" => (Scenario::VsBbr, Scenario::VsBbr.flows_spec(label, d)),
        "leocc+cubic" => (Scenario::VsCubic, Scenario::VsCubic.flows_spec(label, d)),
        l if l.contains('+') => (
            Scenario::Single,
            l.split('+')
                .map(|c| format!("{c}@0-{d}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        l => (Scenario::Single, Scenario::Single.flows_spec(l, d)),
    }
}

/// An exclusive hold on [`EMU_LOCK`], released on drop (the kernel drops it if we die).
pub struct EmuLock {
    _file: std::fs::File,
}

impl EmuLock {
    /// Blocks until the lock is ours; says so on stderr when someone else holds it.
    pub fn acquire(progress: bool) -> Result<EmuLock> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(EMU_LOCK)
            .with_context(|| format!("opening {EMU_LOCK}"))?;
        // SAFETY: flock on a descriptor we own; the lock goes with the descriptor.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            if progress {
                eprintln!("fidelity: waiting for {EMU_LOCK} (another emulator run holds it)");
            }
            // SAFETY: as above.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("locking {EMU_LOCK}"));
            }
        }
        Ok(EmuLock { _file: file })
    }
}

/// What [`run`] did.
#[derive(Debug, Default)]
pub struct RunOutcome {
    pub skipped: usize,
    pub ran: usize,
    pub failed: Vec<(String, String)>,
}

/// Drops the rows of `engines` from the folder's results.jsonl (rewritten atomically).
fn drop_engine_rows(path: &Path, engines: &[Engine]) -> Result<usize> {
    if engines.is_empty() || !path.exists() {
        return Ok(0);
    }
    results::repair(path)?;
    let recs = results::read(path)?;
    let names: Vec<String> = engines.iter().map(Engine::to_string).collect();
    let keep: Vec<&Record> = recs
        .iter()
        .filter(|r| !names.iter().any(|n| n == r.str("engine")))
        .collect();
    let mut text = String::new();
    for r in &keep {
        text.push_str(&serde_json::to_string(&r.0)?);
        text.push('\n');
    }
    leocc_base::write_atomic(path, text.as_bytes())?;
    Ok(recs.len() - keep.len())
}

/// Runs what is not yet in `runner.out_dir`, one run at a time (emulator runs under
/// [`EMU_LOCK`]), with a progress line per run on stderr.
pub fn run(f: &Fidelity, runner: &Runner) -> Result<RunOutcome> {
    f.validate()?;
    let specs = f.specs();
    if specs.iter().any(|s| s.engine == Engine::Emu) {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            bail!("the emulator side needs root (network namespaces and TUN); --engine sim runs the simulator alone");
        }
    }
    std::fs::create_dir_all(&runner.out_dir)
        .with_context(|| format!("creating {}", runner.out_dir.display()))?;
    let dropped = drop_engine_rows(&crate::runner::results_path(&runner.out_dir), &f.rerun)?;
    if dropped > 0 && runner.progress {
        eprintln!(
            "fidelity: dropped {dropped} recorded runs of {} to run them again",
            f.rerun
                .iter()
                .map(Engine::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let (results_file, todo, o) = runner.pending(&specs)?;
    // What the folder holds, and each run as it finishes: the simulator's runs align to the
    // emulator's (`aligned`).
    let mut records = results::read(&results_file)?;
    let mut outcome = RunOutcome {
        skipped: o.skipped,
        ..Default::default()
    };
    let total = todo.len();
    // Per engine: (runs left, seconds spent, runs done), for an ETA that knows an emulator
    // run takes its duration and a simulator run a fraction of a second.
    let mut per = [Engine::Sim, Engine::Emu].map(|e| {
        (
            todo.iter().filter(|s| s.engine == e).count(),
            0.0f64,
            0usize,
        )
    });
    for (i, spec) in todo.iter().enumerate() {
        let t0 = Instant::now();
        let result = (|| -> Result<Value> {
            let _lock = if spec.engine == Engine::Emu {
                Some(EmuLock::acquire(runner.progress)?)
            } else {
                None
            };
            let moved = aligned(spec, &records);
            if runner.progress {
                if let Some(m) = &moved {
                    eprintln!("fidelity: {} starts where the emulator's flows did: {}", spec.key, m.flows);
                }
            }
            let spec = moved.as_ref().unwrap_or(spec);
            let out = runner
                .command(spec)
                .output()
                .with_context(|| format!("starting {}", runner.exe.display()))?;
            let exit = if out.status.success() {
                Ok(())
            } else {
                Err(out.status.to_string())
            };
            let mut rec = runner.finish(spec, exit, &out.stdout, &out.stderr)?;
            rec["loss_added"] = spec.loss.unwrap_or(0.0).into();
            results::append(&results_file, &rec)?;
            records.push(Record(rec.clone()));
            Ok(rec)
        })();
        if runner.progress {
            let what = match &result {
                Ok(r) => format!(
                    "{:.1} Mbit/s, p95 RTT {:.1} ms, mean qdelay {:.1} ms",
                    r["throughput_mbps"].as_f64().unwrap_or(0.0),
                    r["rtt_p95_ms"].as_f64().unwrap_or(0.0),
                    r["qdelay_avg_ms"].as_f64().unwrap_or(0.0)
                ),
                Err(e) => format!("FAILED: {e:#}"),
            };
            let done = i + 1;
            let e = usize::from(spec.engine == Engine::Emu);
            per[e].0 -= 1;
            per[e].1 += t0.elapsed().as_secs_f64();
            per[e].2 += 1;
            let guess = [1.0, f.duration_s + 6.0];
            let eta_s: f64 = (0..2)
                .map(|k| {
                    per[k].0 as f64
                        * if per[k].2 > 0 {
                            per[k].1 / per[k].2 as f64
                        } else {
                            guess[k]
                        }
                })
                .sum();
            let eta = std::time::Duration::from_secs_f64(eta_s);
            eprintln!(
                "fidelity: [{done}/{total}] ETA {} {} {} q{} loss {} {} seed {} ({:.1} s): {what}",
                crate::runner::fmt_duration(eta),
                spec.engine,
                spec.trace_name,
                spec.queue,
                spec.loss.unwrap_or(0.0),
                spec.label,
                spec.seed,
                t0.elapsed().as_secs_f64()
            );
        }
        match result {
            Ok(_) => outcome.ran += 1,
            Err(e) => outcome.failed.push((spec.key.clone(), format!("{e:#}"))),
        }
    }
    runner.fold_time_series();
    Ok(outcome)
}

/// One metric of one cell in both engines.
#[derive(Clone, Debug)]
pub struct Compared {
    pub metric: &'static str,
    pub sim: Stat,
    pub emu: Stat,
    /// sim mean / emu mean.
    pub ratio: f64,
    /// 95 % interval of the ratio, when both sides have runs to estimate it from.
    pub interval: Option<(f64, f64)>,
}

/// One cell: a trace, buffer, added loss and control, in both engines.
#[derive(Clone, Debug)]
pub struct Cell {
    pub trace: String,
    pub queue: String,
    pub loss: f64,
    pub label: String,
    pub metrics: Vec<Compared>,
}

impl Cell {
    /// The metric's comparison, if the cell has it.
    pub fn get(&self, metric: &str) -> Option<&Compared> {
        self.metrics.iter().find(|m| m.metric == metric)
    }

    /// The largest |ln ratio| over the metrics whose difference is above [`floor`].
    pub fn badness(&self) -> Option<(f64, &Compared)> {
        self.metrics
            .iter()
            .filter(|m| {
                (m.sim.mean - m.emu.mean).abs() > floor(m.metric)
                    && m.ratio.is_finite()
                    && m.ratio > 0.0
            })
            .map(|m| (m.ratio.ln().abs(), m))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }
}

/// Differences at or below this (in the metric's unit) do not make a cell the worst: a 0.3
/// against 3.4 ms queue is a ratio of 0.09 and means nothing for a comparison of controls.
pub fn floor(metric: &str) -> f64 {
    match metric {
        "throughput_mbps" => 1.0,
        "share" => 0.02,
        _ => 5.0,
    }
}

/// A record's value of a metric; `share` is the first flow's part of a two-flow run's throughput.
/// RTT and queueing delay are compared like for like: the emulator's are the kernel's smoothed
/// RTT every 100 ms (iperf3's tcpi_rtt), so a simulator record is read at its senders' smoothed
/// RTT every 100 ms (`srtt_p95_ms`, `srtt_qdelay_avg_ms`) when it has them, not at its per-ACK
/// samples (a record from before those fields falls back to the per-ACK ones).
fn value(r: &Record, metric: &str) -> Option<f64> {
    if r.str("engine") == "sim" {
        let smoothed = match metric {
            "rtt_p95_ms" => Some("srtt_p95_ms"),
            "qdelay_avg_ms" => Some("srtt_qdelay_avg_ms"),
            _ => None,
        };
        if let Some(v) = smoothed.and_then(|m| r.num(m)) {
            return Some(v);
        }
    }
    if metric == "share" {
        let flows = r.flows();
        if flows.len() != 2 {
            return None;
        }
        let t: Vec<f64> = flows
            .iter()
            .filter_map(|f| f["throughput_mbps"].as_f64())
            .collect();
        return (t.len() == 2 && t[0] + t[1] > 0.0).then(|| t[0] / (t[0] + t[1]));
    }
    r.num(metric)
}

/// The cells of a folder's records that have runs in both engines, in a stable order.
pub fn cells(records: &[Record]) -> Vec<Cell> {
    type Key = (String, String, String, String);
    let mut by: BTreeMap<Key, (Vec<&Record>, Vec<&Record>)> = BTreeMap::new();
    for r in records {
        let loss = r.num("loss_added").unwrap_or(0.0);
        let key = (
            r.str("trace").to_string(),
            r.queue(),
            format!("{loss}"),
            r.str("label").to_string(),
        );
        let e = by.entry(key).or_default();
        match r.str("engine") {
            "sim" => e.0.push(r),
            "emu" => e.1.push(r),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for ((trace, queue, loss, label), (sim, emu)) in by {
        if sim.is_empty() || emu.is_empty() {
            continue;
        }
        let mut metrics = Vec::new();
        for (metric, _) in METRICS {
            let sv: Vec<f64> = sim.iter().filter_map(|r| value(r, metric)).collect();
            let ev: Vec<f64> = emu.iter().filter_map(|r| value(r, metric)).collect();
            let (Some(s), Some(e)) = (Stat::of(&sv), Stat::of(&ev)) else {
                continue;
            };
            let ratio = if e.mean != 0.0 {
                s.mean / e.mean
            } else {
                f64::NAN
            };
            metrics.push(Compared {
                metric,
                sim: s,
                emu: e,
                ratio,
                interval: ratio_interval(&s, &e),
            });
        }
        out.push(Cell {
            trace,
            queue,
            loss: loss.parse().unwrap_or(0.0),
            label,
            metrics,
        });
    }
    out
}

/// The worst cell (see [`Cell::badness`]): its index and the metric that makes it so.
pub fn worst(cells: &[Cell]) -> Option<(usize, &Compared)> {
    cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.badness().map(|(b, m)| (i, b, m)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _, m)| (i, m))
}

fn fmt_metric(c: Option<&Compared>, digits: usize) -> String {
    match c {
        Some(c) => format!(
            "{:.*} / {:.*} = {}",
            digits,
            c.sim.mean,
            digits,
            c.emu.mean,
            fmt_ratio(c.ratio, c.interval)
        ),
        None => "–".into(),
    }
}

/// The comparison as a table: plain text for the terminal, or Markdown. The worst cell is
/// marked, and a last line names it.
pub fn table(cells: &[Cell], markdown: bool) -> String {
    let worst = worst(cells);
    let two_flow = cells.iter().any(|c| c.get("share").is_some());
    let mut heads = vec![
        "trace",
        "buffer",
        "loss",
        "control",
        "runs sim/emu",
        "throughput Mbit/s sim / emu = ratio [95 %]",
        "p95 RTT ms (sRTT / 100 ms)",
        "mean queueing delay ms (sRTT)",
    ];
    if two_flow {
        heads.push("share of flow 1");
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let n = c.metrics.first().map_or((0, 0), |m| (m.sim.n, m.emu.n));
        let mark = |s: String, metric: &str| -> String {
            match worst {
                Some((w, m)) if w == i && m.metric == metric => {
                    if markdown {
                        format!("**{s}**")
                    } else {
                        format!("{s} <== worst")
                    }
                }
                _ => s,
            }
        };
        let mut row = vec![
            c.trace.clone(),
            c.queue.clone(),
            if c.loss > 0.0 {
                format!("{}", c.loss)
            } else {
                "0".into()
            },
            c.label.clone(),
            format!("{}/{}", n.0, n.1),
            mark(fmt_metric(c.get("throughput_mbps"), 1), "throughput_mbps"),
            mark(fmt_metric(c.get("rtt_p95_ms"), 1), "rtt_p95_ms"),
            mark(fmt_metric(c.get("qdelay_avg_ms"), 1), "qdelay_avg_ms"),
        ];
        if two_flow {
            row.push(mark(fmt_metric(c.get("share"), 2), "share"));
        }
        rows.push(row);
    }
    let mut s = String::new();
    if markdown {
        s.push_str(&format!("| {} |\n", heads.join(" | ")));
        s.push_str(&format!(
            "|{}\n",
            heads
                .iter()
                .enumerate()
                .map(|(i, _)| if i < 4 { "---|" } else { "---:|" })
                .collect::<String>()
        ));
        for r in &rows {
            s.push_str(&format!("| {} |\n", r.join(" | ")));
        }
    } else {
        let mut w: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cols: Vec<String>| -> String {
            cols.iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<width$}", width = w[i]))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
                + "\n"
        };
        s.push_str(&line(heads.iter().map(|h| h.to_string()).collect()));
        for r in rows {
            s.push_str(&line(r));
        }
    }
    match worst {
        Some((i, m)) => {
            let c = &cells[i];
            let label = METRICS
                .iter()
                .find(|(f, _)| *f == m.metric)
                .map_or(m.metric, |(_, l)| *l);
            s.push_str(&format!(
                "\nworst cell: {} {} loss {} {}: {label} sim/emu {} (sim {:.2}, emu {:.2})\n",
                c.trace,
                c.queue,
                c.loss,
                c.label,
                fmt_ratio(m.ratio, m.interval),
                m.sim.mean,
                m.emu.mean
            ));
        }
        None if cells.is_empty() => s.push_str("\nno cell has runs in both engines yet\n"),
        None => s.push_str("\nno difference above the floors\n"),
    }
    s
}

/// The cells as JSON, for DIR/fidelity.json.
pub fn cells_json(cells: &[Cell]) -> Value {
    let worst = worst(cells).map(|(i, m)| (i, m.metric));
    Value::Array(
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let metrics: serde_json::Map<String, Value> = c
                    .metrics
                    .iter()
                    .map(|m| {
                        (
                            m.metric.to_string(),
                            json!({
                                "sim_mean": m.sim.mean, "sim_sd": m.sim.sd, "sim_n": m.sim.n,
                                "emu_mean": m.emu.mean, "emu_sd": m.emu.sd, "emu_n": m.emu.n,
                                "ratio": m.ratio,
                                "ratio_lo": m.interval.map(|x| x.0), "ratio_hi": m.interval.map(|x| x.1),
                            }),
                        )
                    })
                    .collect();
                json!({
                    "trace": c.trace, "queue": c.queue, "loss": c.loss, "control": c.label,
                    "worst": worst.filter(|w| w.0 == i).map(|w| w.1),
                    "metrics": metrics,
                })
            })
            .collect(),
    )
}

/// Reads the folder's records, writes DIR/fidelity.json (atomically) and returns the cells.
pub fn summarise(out_dir: &Path) -> Result<Vec<Cell>> {
    let recs = results::read(&crate::runner::results_path(out_dir))?;
    let cells = cells(&recs);
    let text = serde_json::to_string_pretty(&cells_json(&cells))? + "\n";
    leocc_base::write_atomic(&out_dir.join("fidelity.json"), text.as_bytes())
        .map_err(|e| anyhow!("{e}"))?;
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(engine: &str, label: &str, seed: u64, thr: f64, rtt: f64, q: f64) -> Record {
        Record(json!({
            "key": format!("{engine}|t|single|{label}|{seed}"), "engine": engine, "trace": "t", "queue": "150ms",
            "label": label, "seed": seed, "loss_added": 0.002,
            "throughput_mbps": thr, "rtt_p95_ms": rtt, "qdelay_avg_ms": q,
            "flows": [{"throughput_mbps": thr * 0.25}, {"throughput_mbps": thr * 0.75}],
        }))
    }

    /// The kernel's RTT is its smoothed RTT every 100 ms; the simulator's record is read at the
    /// same statistic when it has it, else at its per-ACK samples.
    #[test]
    fn rtt_is_compared_at_the_smoothed_rtt_in_both_engines() {
        let mut s = rec("sim", "bbr", 1, 50.0, 80.0, 30.0);
        s.0["srtt_p95_ms"] = json!(70.0);
        s.0["srtt_qdelay_avg_ms"] = json!(20.0);
        assert_eq!(value(&s, "rtt_p95_ms"), Some(70.0));
        assert_eq!(value(&s, "qdelay_avg_ms"), Some(20.0));
        assert_eq!(value(&s, "throughput_mbps"), Some(50.0));
        let mut e = rec("emu", "bbr", 1, 50.0, 75.0, 25.0);
        e.0["srtt_p95_ms"] = json!(1.0);
        assert_eq!(
            value(&e, "rtt_p95_ms"),
            Some(75.0),
            "the emulator's RTT is already smoothed"
        );
        assert_eq!(
            value(&rec("sim", "bbr", 2, 50.0, 80.0, 30.0), "rtt_p95_ms"),
            Some(80.0),
            "an older record"
        );
    }

    /// Both engines on one trace with 150 ms of buffer for 30 s.
    fn both_engines(trace: &str, ccs: &[&str], losses: &[f64], runs: u32) -> Fidelity {
        Fidelity {
            traces: vec![trace.into()],
            ccs: ccs.iter().map(|c| c.to_string()).collect(),
            queues: vec![QueueLimit::Time(150_000)],
            losses: losses.to_vec(),
            duration_s: 30.0,
            runs,
            engines: vec![Engine::Sim, Engine::Emu],
            rerun: Vec::new(),
        }
    }

    /// Run k starts (k - 1) x START_STEP_S into the trace; a simulator run then starts its
    /// flows where the emulator run of its cell and seed started theirs, each keeping its
    /// length; other cells' and seeds' runs, and runs recorded without starts, do not move it.
    #[test]
    fn simulator_flows_start_where_the_emulator_flows_of_the_same_run_did() {
        let f = both_engines("d8.trace", &["cubic", "leocc+cubic"], &[0.0], 2);
        let specs = f.specs();
        let spec = |engine: Engine, label: &str, seed: u64| {
            specs
                .iter()
                .find(|s| s.engine == engine && s.label == label && s.seed == seed)
                .unwrap()
                .clone()
        };
        assert_eq!(spec(Engine::Emu, "cubic", 1).flows, "cubic@0-30");
        let second = spec(Engine::Emu, "cubic", 2);
        assert_eq!(second.flows, "cubic@0.37-30.37");
        assert!((second.duration_s - 30.37).abs() < 1e-9);
        assert_eq!(spec(Engine::Sim, "leocc+cubic", 2).flows, "leocc@0.37-30.37,cubic@0.37-30.37");
        let emu = |label: &str, seed: u64, starts: &[f64]| {
            Record(json!({
                "key": format!("emu|d8|{}|{label}|{seed}|d30|q150ms|l-",
                    if label.contains('+') { "vs-cubic" } else { "single" }),
                "engine": "emu", "seed": seed,
                "flows": starts.iter().map(|s| json!({"data_start_s": s})).collect::<Vec<_>>(),
            }))
        };
        let one = spec(Engine::Sim, "cubic", 2);
        assert_eq!(aligned(&one, &[]).map(|s| s.flows), None, "no emulator run: as it is");
        let runs = [emu("cubic", 1, &[0.85]), emu("cubic", 2, &[1.22]), emu("bbr", 2, &[3.0])];
        let moved = aligned(&one, &runs).expect("moved");
        assert_eq!(moved.flows, "cubic@1.22-31.22");
        assert!((moved.duration_s - 31.22).abs() < 1e-9);
        assert_eq!(moved.key, one.key, "the run keeps its identity");
        let old = [emu("cubic", 1, &[0.85]), Record(json!({
            "key": "emu|d8|single|cubic|2|d30|q150ms|l-", "engine": "emu", "seed": 2, "flows": [{}]}))];
        assert_eq!(aligned(&one, &old).map(|s| s.flows), None, "a run without its start");
        let two = spec(Engine::Sim, "leocc+cubic", 1);
        let runs = [emu("leocc+cubic", 1, &[0.8, 0.9]), emu("leocc+cubic", 2, &[1.2, 1.2])];
        assert_eq!(aligned(&two, &runs).unwrap().flows, "leocc@0.8-30.8,cubic@0.9-30.9");
        let e = spec(Engine::Emu, "cubic", 1);
        assert!(aligned(&e, &runs).is_none(), "the emulator's runs are not moved");
    }

    #[test]
    fn specs_pair_the_engines_with_eval_keys() {
        let f = both_engines(
            "traces/starlink-down-60s.trace",
            &["bbr", "leocc+bbr", "cubic+bbr"],
            &[0.0, 0.002],
            3,
        );
        let s = f.specs();
        assert_eq!(s.len(), 2 * 2 * 3 * 3);
        assert!(
            s[..18].iter().all(|r| r.engine == Engine::Emu),
            "emulator runs first"
        );
        assert_eq!(s[18].key, "sim|starlink-down-60s|single|bbr|1|d30|q150ms|l-");
        assert!(s
            .iter()
            .any(|r| r.key == "emu|starlink-down-60s|vs-bbr|leocc+bbr|3|d30|q150ms|l0.002"));
        let two = s.iter().find(|r| r.label == "cubic+bbr").unwrap();
        assert_eq!(two.flows, "cubic@0-30,bbr@0-30");
        // The simulator's detector gets a probe stream as clean as the emulator's PoP gives.
        let runner = crate::runner::Runner { exe: "leocc".into(), out_dir: "out".into(), jobs: 1, progress: false };
        for r in &s {
            let args: Vec<String> = runner.command(r).get_args().map(|a| a.to_string_lossy().into_owned()).collect();
            let noise = args.iter().position(|a| a == "--probe-noise").map(|i| args[i + 1].as_str());
            assert_eq!(noise, (r.engine == Engine::Sim).then_some("none"), "{args:?}");
        }
        let mut keys: Vec<_> = s.iter().map(|r| &r.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), s.len());
    }

    #[test]
    fn ratios_intervals_and_the_worst_cell() {
        let recs = vec![
            rec("sim", "bbr", 1, 100.0, 120.0, 50.0),
            rec("sim", "bbr", 2, 102.0, 130.0, 55.0),
            rec("sim", "bbr", 3, 98.0, 140.0, 60.0),
            rec("emu", "bbr", 1, 100.0, 60.0, 20.0),
            rec("emu", "bbr", 2, 100.0, 70.0, 25.0),
            rec("emu", "bbr", 3, 100.0, 80.0, 30.0),
            rec("sim", "cubic", 1, 10.0, 35.0, 0.3),
            rec("emu", "cubic", 1, 10.0, 35.0, 3.3),
            rec("emu", "reno", 1, 10.0, 35.0, 3.3),
        ];
        let cells = cells(&recs);
        assert_eq!(cells.len(), 2, "reno has no simulator runs: no cell");
        let bbr = &cells[0];
        let rtt = bbr.get("rtt_p95_ms").unwrap();
        assert!((rtt.ratio - 130.0 / 70.0).abs() < 1e-9);
        let (lo, hi) = rtt.interval.unwrap();
        assert!(lo < rtt.ratio && rtt.ratio < hi && lo > 1.0, "{lo} {hi}");
        assert!((bbr.get("share").unwrap().ratio - 1.0).abs() < 1e-9);
        // Cubic's 0.3 vs 3.3 ms is below the floor; BBR's queue ratio (55/25) is the worst.
        let (i, m) = worst(&cells).unwrap();
        assert_eq!((i, m.metric), (0, "qdelay_avg_ms"));
        assert!(
            cells[1].get("rtt_p95_ms").unwrap().interval.is_none(),
            "one run each: no interval"
        );
        let t = table(&cells, false);
        assert!(
            t.contains("<== worst")
                && t.contains("worst cell: t 150ms loss 0.002 bbr: mean qdelay"),
            "{t}"
        );
        let md = table(&cells, true);
        assert!(md.starts_with("| trace |") && md.contains("**"), "{md}");
    }

    #[test]
    fn bad_options_are_named() {
        let mut f = Fidelity {
            traces: vec!["/nonexistent.trace".into()],
            ccs: vec!["bbr3".into()],
            queues: vec![QueueLimit::Packets(500)],
            losses: vec![0.0],
            duration_s: 30.0,
            runs: 3,
            engines: vec![Engine::Sim, Engine::Emu],
            rerun: Vec::new(),
        };
        assert!(f
            .validate()
            .unwrap_err()
            .to_string()
            .contains("no kernel implementation"));
        f.ccs = vec!["a+b+c".into()];
        assert!(f.validate().is_err());
        f.ccs = vec!["bbr".into()];
        assert!(f.validate().unwrap_err().to_string().contains("not found"));
    }
}
