//! LEOTP's evaluation (seed 003) on the emulator's multi-hop chain: LEOTP (consumer, a
//! mid-node on every intermediate node, producer at the server) against kernel TCP end to end
//! over the same chain, same hop traces and same loss seeds.
//!
//! Experiments (the seed's figures): `headline` (6 hops, 1.5 % loss per hop, fluctuating
//! capacity: LEOTP vs Cubic, BBR and LeoCC; its per-run scatter is Fig. 14), `loss`
//! (throughput against random loss, Fig. 12), `ablation` (Table II: in-network retransmission
//! × hop-by-hop CC), `hops` (3-10 hops, Fig. 17-18), `fairness` (two flows of a protocol at
//! once, equal RTTs, Fig. 15), `fairness-rtt` (the same with one flow's receiver half-way
//! along the chain: unequal RTTs, Fig. 16). Data flows server → client (a download) for every
//! protocol.
//!
//! What is measured: throughput is goodput at the receiver (LEOTP's consumer report; iperf3's
//! `sum_received`). One-way delay is measured the same way for every protocol, from the
//! chain's captures at its two ends (`pathdelay`): per delivered data packet, from the first
//! time the server sent that data; so are the retransmitted packets' delay (Fig. 10) and the
//! sender's traffic per delivered byte (Fig. 11). The endpoints' own estimates are kept beside
//! it (`owd_endpoint_*`): LEOTP's per segment from the producer's timestamp, kernel TCP's as
//! iperf3's smoothed RTT every 100 ms minus the chain's reverse-path base delay.

use leocc_base::controls;
use crate::pathdelay;
use anyhow::{anyhow, bail, Context, Result};
use leocc_emu::chain::{node_addr, Chain, ChainConfig, HopConfig};
use leocc_emu::owned::{die_with_parent, own_group, terminate_group};
use leocc_emu::QueueLimit;
use leocc_trace::isl::{self, ChainSpec};
use leocc_base::metrics::{mean, quantile_rounded};
use leocc_trace::{Dir, LinkModel};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod record;
mod report;

pub use record::{EndpointFlow, LeotpRecord};
pub use report::report;

/// Seconds per run unless told otherwise: long enough for a handover or two per hop.
pub const DEFAULT_DURATION_S: f64 = 20.0;
/// Median capacity of every hop, Mbit/s, unless told otherwise.
pub const DEFAULT_MBPS: f64 = 30.0;
/// The experiments, in the order they run.
pub const EXPERIMENTS: [&str; 6] = [
    "headline",
    "loss",
    "ablation",
    "hops",
    "fairness",
    "fairness-rtt",
];
/// Flows of one protocol in the fairness experiment (seed 003's Fig. 15: two flows, equal RTTs).
const FAIRNESS_FLOWS: usize = 2;
/// Node of the second flow's receiver in `fairness-rtt`: 3 of the 6 hops from the producer,
/// so its RTT is about half the first flow's, and the two share hops 3-5.
const NEAR_NODE: usize = 3;
/// Capacity of the hops only the far flow crosses in `fairness-rtt`, × the others': the flows
/// should compete where they share the path, not be limited apart.
const UNSHARED_CAPACITY: f64 = 2.0;
/// iperf3 and LEOTP port.
const PORT: u16 = 5301;
/// iperf3 interval, s (RTT samples for the OWD estimate).
const IPERF_INTERVAL_S: &str = "0.1";
/// Seconds given to processes to start before the measured transfer.
const SETTLE_MS: u64 = 300;

/// A protocol variant on the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variant {
    /// LEOTP with or without each half of the ablation.
    Leotp {
        /// In-network retransmission (holes, VPH).
        innet: bool,
        /// Hop-by-hop congestion control.
        hop_cc: bool,
    },
    /// Kernel TCP with this congestion control, end to end.
    Tcp(String),
}

impl Variant {
    /// Short label for tables and plots.
    pub fn label(&self) -> String {
        match self {
            Variant::Leotp {
                innet: true,
                hop_cc: true,
            } => "leotp".into(),
            Variant::Leotp {
                innet: false,
                hop_cc: true,
            } => "leotp-no-innet".into(),
            Variant::Leotp {
                innet: true,
                hop_cc: false,
            } => "leotp-no-hopcc".into(),
            Variant::Leotp {
                innet: false,
                hop_cc: false,
            } => "leotp-neither".into(),
            Variant::Tcp(cc) => cc.clone(),
        }
    }

    /// Parses a label.
    pub fn parse(s: &str) -> Result<Variant> {
        Ok(match s {
            "leotp" => Variant::Leotp { innet: true, hop_cc: true },
            "leotp-no-innet" => Variant::Leotp { innet: false, hop_cc: true },
            "leotp-no-hopcc" => Variant::Leotp { innet: true, hop_cc: false },
            "leotp-neither" => Variant::Leotp { innet: false, hop_cc: false },
            _ if controls::runs_in(controls::Engine::Kernel, s) => Variant::Tcp(s.into()),
            _ => bail!(
                "unknown variant {s:?} (leotp, leotp-no-innet, leotp-no-hopcc, leotp-neither, {})",
                controls::names(controls::Engine::Kernel).join(", ")
            ),
        })
    }
}

/// One run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Which experiment it belongs to.
    pub experiment: String,
    /// Protocol.
    pub variant: Variant,
    /// Hops of the chain.
    pub hops: usize,
    /// Random loss per hop.
    pub loss: f64,
    /// Median capacity per hop, Mbit/s.
    pub mbps: f64,
    /// Seed of the hop traces and of the emulator's loss.
    pub seed: u64,
    /// Seconds of transfer.
    pub duration_s: f64,
    /// Flows of the protocol at once, all from the producer at the chain's end to node 0
    /// (1; 2 for the fairness experiment).
    pub flows: usize,
}

impl Run {
    /// Whether `row` is this run's record: same experiment, protocol, chain, loss, seed,
    /// length and capacity.
    fn is_recorded_in(&self, row: &LeotpRecord) -> bool {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        row.experiment == self.experiment
            && row.variant == self.variant.label()
            && row.hops == self.hops
            && row.seed == self.seed
            && close(row.loss, self.loss)
            && close(row.duration_s, self.duration_s)
            && close(row.mbps, self.mbps)
            && row.flows == self.flows
    }

    /// The run as progress lines and `leocc eval --dry-run` name it.
    pub fn label(&self) -> String {
        format!(
            "leotp {} {} hops {} loss {:.1} % seed {}{}",
            self.experiment,
            self.variant.label(),
            self.hops,
            self.loss * 100.0,
            self.seed,
            if self.flows > 1 { format!(", {} flows", self.flows) } else { String::new() }
        )
    }

    /// A record of this run with its identity and nothing measured yet.
    fn record(&self) -> LeotpRecord {
        LeotpRecord {
            schema: record::SCHEMA,
            experiment: self.experiment.clone(),
            variant: self.variant.label(),
            hops: self.hops,
            loss: self.loss,
            mbps: self.mbps,
            seed: self.seed,
            duration_s: self.duration_s,
            flows: self.flows,
            ..LeotpRecord::default()
        }
    }
}

/// The plan of an experiment.
pub fn plan(
    experiment: &str,
    duration_s: f64,
    mbps: f64,
    seed: u64,
    with_leocc: bool,
) -> Result<Vec<Run>> {
    let run = |v: &str, hops: usize, loss: f64| -> Result<Run> {
        Ok(Run {
            experiment: experiment.into(),
            variant: Variant::parse(v)?,
            hops,
            loss,
            mbps,
            seed,
            duration_s,
            flows: 1,
        })
    };
    let mut out = Vec::new();
    match experiment {
        "headline" => {
            let mut vs = vec!["leotp", "cubic", "bbr"];
            if with_leocc {
                vs.push("leocc");
            }
            for v in vs {
                out.push(run(v, 6, 0.015)?);
            }
        }
        "loss" => {
            for loss in [0.0, 0.01, 0.02, 0.03, 0.05] {
                for v in ["leotp", "bbr", "cubic"] {
                    out.push(run(v, 6, loss)?);
                }
            }
        }
        "ablation" => {
            for v in ["leotp", "leotp-no-innet", "leotp-no-hopcc", "leotp-neither"] {
                out.push(run(v, 6, 0.015)?);
            }
        }
        "hops" => {
            for hops in [3, 6, 10] {
                for v in ["leotp", "bbr"] {
                    out.push(run(v, hops, 0.01)?);
                }
            }
        }
        "fairness" | "fairness-rtt" => {
            let mut vs = vec!["leotp", "cubic", "bbr"];
            if with_leocc {
                vs.push("leocc");
            }
            for v in vs {
                out.push(Run {
                    flows: FAIRNESS_FLOWS,
                    ..run(v, 6, 0.01)?
                });
            }
        }
        _ => bail!(
            "unknown experiment {experiment:?} (one of {})",
            EXPERIMENTS.join(", ")
        ),
    }
    Ok(out)
}

fn hop_models(r: &Run) -> Result<Vec<HopConfig>> {
    // Long enough that the schedule does not loop within a run.
    let secs = (r.duration_s.ceil() as u64 + 10).max(30);
    let gen = |mbps: f64| {
        isl::chain(&ChainSpec {
            hops: r.hops,
            duration_ms: secs * 1000,
            median_mbps: mbps,
            loss: 0.0,
            seed: r.seed,
        })
        .map_err(|e| anyhow!(e))
    };
    let mut traces = gen(r.mbps)?;
    if r.experiment == "fairness-rtt" {
        // Same seed, same geometry and handovers: only the capacity of the far flow's own
        // hops is scaled.
        let wide = gen(r.mbps * UNSHARED_CAPACITY)?;
        traces[..NEAR_NODE].clone_from_slice(&wide[..NEAR_NODE]);
    }
    Ok(traces
        .iter()
        .map(|t| HopConfig {
            up: t.link(Dir::Up),
            down: t.link(Dir::Down),
        })
        .collect())
}

/// The node flow `k` of run `r` receives at: node 0, except the second flow of `fairness-rtt`.
fn receiver_node(r: &Run, k: usize) -> usize {
    if r.experiment == "fairness-rtt" && k == 1 {
        NEAR_NODE
    } else {
        0
    }
}

/// Runs one cell; returns its JSON record.
pub fn run(r: &Run, exe: &Path, scratch: &Path) -> Result<LeotpRecord> {
    let hops = hop_models(r)?;
    let ups: Vec<LinkModel> = hops.iter().map(|h| h.up.clone()).collect();
    let bottleneck = bottleneck_mbps(&hops, r.duration_s);
    let mut cfg = ChainConfig::new(hops);
    cfg.loss = r.loss;
    cfg.seed = r.seed;
    let capture = scratch.join("capture");
    cfg.pcap_dir = Some(capture.clone());
    cfg.queue = QueueLimit {
        packets: Some(leocc_emu::emulator::DEFAULT_QUEUE_PACKETS),
        bytes: None,
    };
    for ns in leocc_emu::netns::leftover_namespaces() {
        let _ = leocc_emu::netns::remove(&ns);
    }
    let _kernel_lock = match &r.variant {
        Variant::Tcp(cc) if cc == "leocc" => Some(ensure_leocc()?),
        _ => None,
    };
    let chain = Chain::start(&cfg).map_err(|e| anyhow!("{e}"))?;
    let mut kids: Vec<Child> = Vec::new();
    let result = (|| -> Result<Vec<EndpointFlow>> {
        let h = chain.hops();
        let exe_s = exe.to_string_lossy().to_string();
        let spawn = |c: &mut Command| -> Result<Child> {
            own_group(die_with_parent(c))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting a chain process")
        };
        let dur = format!("{}", r.duration_s);
        match &r.variant {
            Variant::Leotp { innet, hop_cc } => {
                let listen = format!("0.0.0.0:{PORT}");
                let p = spawn(
                    chain
                        .command(h, &exe_s)
                        .args(["leotp", "serve", "--listen", &listen]),
                )?;
                leocc_emu::shell::wait_until_listening(p.id());
                kids.push(p);
                for i in (1..h).rev() {
                    let mut c = chain.command(i, &exe_s);
                    c.args([
                        "leotp",
                        "mid",
                        "--listen",
                        &listen,
                        "--upstream",
                        &format!("{}:{PORT}", node_addr(i + 1)),
                    ]);
                    if !innet {
                        c.arg("--no-innet-retx");
                    }
                    if !hop_cc {
                        c.arg("--no-hop-cc");
                    }
                    let m = spawn(&mut c)?;
                    leocc_emu::shell::wait_until_listening(m.id());
                    kids.push(m);
                }
                // One consumer per flow, each fetching its own endless source (`bulk`,
                // `bulk-2`, ...), all at once.
                let mut consumers = Vec::new();
                for k in 0..r.flows {
                    let json = scratch.join(format!("leotp-get-{k}.json"));
                    let _ = std::fs::remove_file(&json);
                    let name = if k == 0 {
                        "bulk".to_string()
                    } else {
                        format!("bulk-{}", k + 1)
                    };
                    let at = receiver_node(r, k);
                    let mut c = chain.command(at, &exe_s);
                    c.args([
                        "leotp",
                        "get",
                        &format!("{}:{PORT}", node_addr(at + 1)),
                        &name,
                        "-t",
                        &dur,
                        "--json",
                    ])
                    .arg(&json);
                    if !innet {
                        c.arg("--no-innet-retx");
                    }
                    let child = own_group(die_with_parent(&mut c))
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .context("starting leotp get")?;
                    consumers.push((child, json));
                }
                let mut flows = Vec::new();
                for (mut child, json) in consumers {
                    let st = child.wait().context("waiting for leotp get")?;
                    if !st.success() {
                        bail!("leotp get failed ({st})");
                    }
                    let v: Value = serde_json::from_slice(
                        &std::fs::read(&json).context("reading the leotp report")?,
                    )?;
                    let e = &v["end"];
                    flows.push(EndpointFlow {
                        thr_mbps: e["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6,
                        owd_mean_ms: e["one_way_delay_ms"]["mean"].as_f64(),
                        owd_p95_ms: e["one_way_delay_ms"]["p95"].as_f64(),
                        retransmits: e["retransmits"].as_u64(),
                    });
                }
                Ok(flows)
            }
            Variant::Tcp(cc) => {
                let ports: Vec<u16> = (0..r.flows).map(|k| PORT + k as u16).collect();
                for (k, port) in ports.iter().enumerate() {
                    let s = spawn(chain.command(receiver_node(r, k), "iperf3").args([
                        "-s",
                        "-1",
                        "-p",
                        &port.to_string(),
                    ]))?;
                    leocc_emu::shell::wait_until_listening(s.id());
                    kids.push(s);
                }
                std::thread::sleep(std::time::Duration::from_millis(SETTLE_MS));
                let t0 = chain.clock().now_us();
                let clients = ports
                    .iter()
                    .enumerate()
                    .map(|(k, port)| {
                        die_with_parent(&mut chain.command(h, "iperf3"))
                            .args([
                                "-c",
                                &node_addr(receiver_node(r, k)).to_string(),
                                "-p",
                                &port.to_string(),
                                "-t",
                                &dur,
                                "-C",
                                cc,
                                "-i",
                                IPERF_INTERVAL_S,
                                "-J",
                            ])
                            .stdout(Stdio::piped())
                            .stderr(Stdio::null())
                            .spawn()
                            .context("running iperf3 -c")
                    })
                    .collect::<Result<Vec<Child>>>()?;
                let mut flows = Vec::new();
                for (k, c) in clients.into_iter().enumerate() {
                    let out = c.wait_with_output().context("waiting for iperf3 -c")?;
                    let v: Value = serde_json::from_slice(&out.stdout)
                        .map_err(|e| anyhow!("iperf3 output: {e}"))?;
                    if let Some(err) = v["error"].as_str() {
                        bail!("iperf3: {err}");
                    }
                    let thr = v["end"]["sum_received"]["bits_per_second"]
                        .as_f64()
                        .unwrap_or(0.0)
                        / 1e6;
                    // OWD = RTT sample − reverse base delay (ACKs rarely queue: they are small).
                    let mut owd = Vec::new();
                    for iv in v["intervals"].as_array().into_iter().flatten() {
                        let Some(rtt_us) = iv["streams"][0]["rtt"].as_f64() else {
                            continue;
                        };
                        let at = t0 + (iv["sum"]["end"].as_f64().unwrap_or(0.0) * 1e6) as u64;
                        let back: u64 = ups[receiver_node(r, k)..]
                            .iter()
                            .map(|l| l.delay_us(at))
                            .sum();
                        owd.push((rtt_us - back as f64).max(0.0) / 1000.0);
                    }
                    let owd_mean = mean(&owd);
                    owd.sort_by(f64::total_cmp);
                    let p95 = quantile_rounded(&owd, 0.95);
                    flows.push(EndpointFlow {
                        thr_mbps: thr,
                        owd_mean_ms: owd_mean,
                        owd_p95_ms: p95,
                        retransmits: v["end"]["sum_sent"]["retransmits"].as_u64(),
                    });
                }
                Ok(flows)
            }
        }
    })();
    for k in kids.iter_mut() {
        terminate_group(k);
    }
    let hops_summary: Vec<String> = chain.stop().iter().map(|s| s.to_string()).collect();
    let flows = result?;
    let mut rec = r.record();
    rec.set_endpoints(flows, owd_endpoint_method(&r.variant));
    let path = pathdelay::analyse(
        &capture.join("server.pcap"),
        node_addr(r.hops),
        &capture.join("client.pcap"),
        node_addr(0),
    );
    let _ = std::fs::remove_dir_all(&capture);
    rec.set_path_delay(&path.context("measuring one-way delay from the chain's captures")?);
    rec.bottleneck_mbps = Some(bottleneck);
    rec.chain = Some(hops_summary);
    Ok(rec)
}

/// How each variant's endpoints measure one-way delay (kept beside the path's measurement).
fn owd_endpoint_method(v: &Variant) -> &'static str {
    match v {
        Variant::Leotp { .. } => "per segment, producer timestamp",
        Variant::Tcp(_) => "sender srtt every 100 ms minus reverse base delay",
    }
}

/// Window over which the narrowest hop is taken, µs: about one RTT of a 6-hop chain.
const BOTTLENECK_WINDOW_US: u64 = 100_000;

/// Mean over the run of the narrowest hop's downlink capacity, Mbit/s: what an ideal
/// transport could deliver end to end (before loss and header overhead).
pub fn bottleneck_mbps(hops: &[HopConfig], duration_s: f64) -> f64 {
    let end = (duration_s * 1e6) as u64;
    let windows: Vec<f64> = (0..end / BOTTLENECK_WINDOW_US)
        .map(|k| {
            let t = k * BOTTLENECK_WINDOW_US;
            hops.iter()
                .map(|h| h.down.mean_capacity_bps(t, t + BOTTLENECK_WINDOW_US))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    mean(&windows).map_or(0.0, |m| m / 1e6)
}

/// LeoCC must be registered in the kernel: if it is not, load this build's (holding the
/// kernel lab lock, as `emu_engine` does, so no test unloads it under the flow). It is left
/// loaded: other users of this machine may be using it.
fn ensure_leocc() -> Result<leocc_kernel::lab::GlobalLock> {
    let lock = leocc_kernel::lab::GlobalLock::acquire().context("taking the kernel lab lock")?;
    if !leocc_kernel::loader::is_registered() {
        leocc_kernel::load(&leocc_kernel::LoadOptions::default())
            .map_err(|e| anyhow!("loading LeoCC into the kernel: {e}: LeoCC cannot run end to end here"))?;
    }
    Ok(lock)
}

/// What `leocc leotp eval` runs.
#[derive(Debug, Clone)]
pub struct EvalConfig {
    /// Experiments, from `EXPERIMENTS`.
    pub experiments: Vec<String>,
    /// Seconds per run.
    pub duration_s: f64,
    /// Median capacity per hop, Mbit/s.
    pub mbps: f64,
    /// Seed of traces and losses (the first of `seeds`).
    pub seed: u64,
    /// Runs per cell, seeds seed, seed + 1, ...: each a different chain and loss pattern.
    pub seeds: u64,
    /// Include LeoCC (kernel, end to end) in the headline.
    pub with_leocc: bool,
    /// The leocc binary run at every node.
    pub exe: PathBuf,
}

/// Every run of the evaluation, in the order they run: each experiment's plan for each seed.
pub fn plan_all(cfg: &EvalConfig) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for e in &cfg.experiments {
        for k in 0..cfg.seeds.max(1) {
            runs.extend(plan(e, cfg.duration_s, cfg.mbps, cfg.seed + k, cfg.with_leocc)?);
        }
    }
    Ok(runs)
}

/// Runs the experiments one run at a time, writing `results.jsonl` after every run (so a
/// long evaluation can be watched and an interrupted one keeps its runs), then summary.md
/// and the plots. A run that fails is reported on stderr and recorded with its error.
pub fn evaluate(cfg: &EvalConfig, out: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    let runs = plan_all(cfg)?;
    // Finished runs of an earlier, interrupted or smaller evaluation into the same folder are
    // kept, not run again; failed ones are.
    let mut rows: Vec<LeotpRecord> = record::read(&out.join("results.jsonl"))?
        .into_iter()
        .filter(LeotpRecord::ok)
        .collect();
    let kept = rows.len();
    let todo: Vec<&Run> = runs
        .iter()
        .filter(|r| !rows.iter().any(|row| r.is_recorded_in(row)))
        .collect();
    if runs.len() > todo.len() {
        eprintln!(
            "leotp eval: {} of {} runs already in {}, skipping them",
            runs.len() - todo.len(),
            runs.len(),
            out.join("results.jsonl").display()
        );
    }
    for (i, r) in todo.iter().enumerate() {
        eprintln!("leotp eval: [{}/{}] {} ...", i + 1, todo.len(), r.label());
        let row = match run(r, &cfg.exe, out) {
            Ok(v) => {
                eprintln!(
                    "leotp eval:   {:.2} Mbit/s, mean OWD {} ms",
                    v.thr_mbps.unwrap_or(0.0),
                    v.owd_mean_ms.map_or("-".into(), |x| format!("{x:.1}"))
                );
                v
            }
            Err(e) => {
                eprintln!("leotp eval:   failed: {e:#}");
                LeotpRecord { error: Some(format!("{e:#}")), ..r.record() }
            }
        };
        rows.push(row);
        record::write(&out.join("results.jsonl"), &rows)?;
    }
    for k in 0..FAIRNESS_FLOWS.max(1) {
        let _ = std::fs::remove_file(out.join(format!("leotp-get-{k}.json")));
    }
    if kept > 0 && todo.is_empty() {
        eprintln!("leotp eval: nothing to run; summary and plots rebuilt");
    }
    report(&rows, out)
}

/// Rebuilds summary.md and the plots in `out` from earlier results files, keeping the rows
/// of `experiments` from each file in turn (so runs of different evaluations can be combined).
/// A malformed line is an error naming file and line.
pub fn report_from(files: &[PathBuf], experiments: &[String], out: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    let mut rows = Vec::new();
    for f in files {
        if !f.is_file() {
            bail!("{}: no such results file", f.display());
        }
        rows.extend(
            record::read(f)?
                .into_iter()
                .filter(|v| experiments.contains(&v.experiment)),
        );
    }
    record::write(&out.join("results.jsonl"), &rows)?;
    report(&rows, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_runs_two_flows_and_combines_them() {
        let runs = plan("fairness", 20.0, 30.0, 1, true).unwrap();
        assert_eq!(
            runs.iter().map(|r| r.variant.label()).collect::<Vec<_>>(),
            ["leotp", "cubic", "bbr", "leocc"]
        );
        assert!(runs.iter().all(|r| r.flows == 2 && r.hops == 6));
        assert!(
            runs.iter()
                .all(|r| (receiver_node(r, 0), receiver_node(r, 1)) == (0, 0)),
            "equal RTTs: both at node 0"
        );
        let rtt = plan("fairness-rtt", 20.0, 30.0, 1, false).unwrap();
        assert!(rtt
            .iter()
            .all(|r| r.flows == 2 && (receiver_node(r, 0), receiver_node(r, 1)) == (0, NEAR_NODE)));
        // The far flow's own hops are wider; the shared ones and every delay are the same.
        let (eq, un) = (hop_models(&runs[0]).unwrap(), hop_models(&rtt[0]).unwrap());
        let cap = |h: &HopConfig| h.down.mean_capacity_bps(0, 10_000_000);
        for i in 0..6 {
            let ratio = cap(&un[i]) / cap(&eq[i]);
            let want = if i < NEAR_NODE {
                UNSHARED_CAPACITY
            } else {
                1.0
            };
            assert!((ratio - want).abs() < 0.05, "hop {i}: {ratio}");
            assert_eq!(
                un[i].down.delay_us(5_000_000),
                eq[i].down.delay_us(5_000_000)
            );
        }
        // A fairness run's record is not mistaken for a one-flow run of the same cell.
        let single = Run {
            flows: 1,
            ..runs[0].clone()
        };
        let row = runs[0].record();
        assert!(runs[0].is_recorded_in(&row) && !single.is_recorded_in(&row));
    }

    #[test]
    fn a_run_finds_its_own_record_and_no_other() {
        let r = plan("headline", 20.0, 30.0, 2, false).unwrap().remove(0);
        let row = LeotpRecord { thr_mbps: Some(1.0), ..r.record() };
        assert!(r.is_recorded_in(&row));
        for (k, other) in [
            ("seed", LeotpRecord { seed: 3, ..row.clone() }),
            ("variant", LeotpRecord { variant: "bbr".into(), ..row.clone() }),
            ("duration_s", LeotpRecord { duration_s: 30.0, ..row.clone() }),
            ("loss", LeotpRecord { loss: 0.01, ..row.clone() }),
        ] {
            assert!(!r.is_recorded_in(&other), "{k} differs");
        }
    }

    #[test]
    fn plans_cover_the_seed_figures_and_labels_round_trip() {
        assert_eq!(plan("headline", 20.0, 30.0, 1, true).unwrap().len(), 4);
        assert_eq!(plan("headline", 20.0, 30.0, 1, false).unwrap().len(), 3);
        let loss = plan("loss", 20.0, 30.0, 1, false).unwrap();
        assert!(loss.iter().any(|r| r.loss == 0.05) && loss.iter().any(|r| r.loss == 0.0));
        let ab = plan("ablation", 20.0, 30.0, 1, false).unwrap();
        assert_eq!(
            ab.iter().map(|r| r.variant.label()).collect::<Vec<_>>(),
            ["leotp", "leotp-no-innet", "leotp-no-hopcc", "leotp-neither"]
        );
        for r in ab {
            assert_eq!(Variant::parse(&r.variant.label()).unwrap(), r.variant);
        }
        assert!(plan("fig99", 20.0, 30.0, 1, false).is_err());
        assert!(Variant::parse("quic").is_err());
    }

    #[test]
    fn the_report_tables_every_row() {
        let dir = std::env::temp_dir().join(format!("leotp-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let row = |experiment: &str, variant: &str| LeotpRecord { experiment: experiment.into(), variant: variant.into(), ..LeotpRecord::default() };
        let rows = vec![
            LeotpRecord {
                thr_mbps: Some(20.0), owd_mean_ms: Some(40.0), owd_p95_ms: Some(60.0), retransmits: Some(3), retx_share: Some(0.1), retx_owd_mean_ms: Some(80.0),
                retx_owd_quantiles_ms: Some(vec![50.0, 70.0, 160.0]), inorder_mean_ms: Some(45.0), inorder_p95_ms: Some(70.0),
                ..row("headline", "leotp")
            },
            LeotpRecord { thr_mbps: Some(18.0), owd_mean_ms: Some(90.0), owd_p95_ms: Some(120.0), retransmits: Some(30), ..row("headline", "bbr") },
            LeotpRecord { loss: 0.02, thr_mbps: Some(19.0), owd_mean_ms: Some(41.0), sender_traffic_ratio: Some(1.02), ..row("loss", "leotp") },
        ];
        let md = std::fs::read_to_string(report(&rows, &dir).unwrap()).unwrap();
        assert!(
            md.contains("| leotp | 20.0 | 40.0 | 60.0 | 45.0 / 70.0 | 10.0 | 80.0 | 3.0 | - | 1 |"),
            "{md}"
        );
        assert!(
            md.contains("| bbr | 18.0 | 90.0 | 120.0 | - / - | - | - | 30.0"),
            "{md}"
        );
        assert!(
            md.contains("| leotp | 2 | 19.0 | 41.0 | 102.0 | 1 |"),
            "{md}"
        );
        for f in [
            "headline-throughput.svg",
            "headline-owd.svg",
            "headline-retx-owd.svg",
            "loss.svg",
        ] {
            assert!(dir.join(f).exists(), "{f}");
        }
        let cdf = std::fs::read_to_string(dir.join("headline-retx-owd.svg")).unwrap();
        assert!(
            cdf.contains("leotp") && cdf.contains("<path"),
            "Fig. 10 draws LEOTP's CDF"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
