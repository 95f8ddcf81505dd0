//! `leocc sim`: run congestion controls over a trace in the packet-level simulator.
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use leocc_sim::{parse_flows, Qdisc, QueueLimit, RunResult, Scenario, FLOWS_GRAMMAR};
use leocc_trace::{Dir, Trace};

/// Which way the data flows.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Direction {
    /// Server to satellite user (downlink); ACKs and the detector signal go up.
    Down,
    /// Satellite user to server (uplink).
    Up,
}

/// Options of `leocc sim`.
#[derive(Args, Debug)]
#[command(after_help = format!("Flows: {FLOWS_GRAMMAR}\n\n\
Output: a table, or with --json one JSON object per run (engine, cc, trace, seed, duration_s, \
throughput_mbps, goodput_mbps, utilization, rtt_avg_ms, rtt_p50_ms, rtt_p95_ms, rtt_p99_ms, owd_p95_ms, \
qdelay_avg_ms, qdelay_p95_ms, srtt_p95_ms, srtt_qdelay_avg_ms, loss_rate, retrans_rate, jain, reconfigs_detected, queue, \
queue_bytes, queue_ms, qdisc, detection {{source, probe_noise, truth, detections, matched, precision, recall, \
delay_p50_ms, confidence_avg}}, flows[...]). \
See docs/simulator.md for the model and the metric definitions."))]
pub struct SimArgs {
    /// Trace file (our format, a mahimahi capacity file, or a mahimahi/LeoReplayer directory).
    #[arg(long, required_unless_present_any = ["list_params", "list_cc"])]
    pub trace: Option<PathBuf>,
    /// Congestion control(s), comma separated; one run each [default: cubic]. `--list-cc` lists
    /// them.
    #[arg(long, value_delimiter = ',')]
    pub cc: Option<Vec<String>>,
    /// Flows: a number N (N flows of each --cc) or a list like 'cubic@0-60,leocc@20-80' (one run).
    #[arg(long)]
    pub flows: Option<String>,
    /// Simulated seconds [default: the trace's length].
    #[arg(long)]
    pub duration: Option<f64>,
    /// Seed of every random choice (loss, probe phase, controls' randomness).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bottleneck queue: packets (500, 500p), bytes (750000b, 750kB, 1MB) or time at the
    /// trace's mean capacity in the data direction (150ms).
    #[arg(long, default_value = "500")]
    pub queue: String,
    /// Queue discipline of every bottleneck queue: droptail (an arriving packet that does not
    /// fit the --queue limit is dropped), dropfront (packets are dropped from the head of the
    /// queue until the arriving one fits; Starlink is reported to do this) or codel (CoDel AQM,
    /// RFC 8289, target 5 ms, interval 100 ms: drops at dequeue when packets waited too long,
    /// with --queue as a hard drop-tail limit).
    #[arg(long, default_value = "droptail", value_name = "droptail|dropfront|codel")]
    pub qdisc: Qdisc,
    /// Random loss rate added on the data direction (on top of the trace's own loss).
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Each sender's send buffer (Linux's tcp_wmem max): bytes or 4MiB, 64MiB, ... On a path
    /// whose bandwidth-delay product approaches it, the buffer, not the congestion control,
    /// bounds the data in flight; servers for long, fat paths raise it (sysctl
    /// net.ipv4.tcp_wmem).
    #[arg(long, default_value = "4MiB", value_parser = leocc_sim::parse_sndbuf)]
    pub sndbuf: u64,
    /// Data direction [default: the direction the trace measured; down when it has both].
    #[arg(long, value_enum)]
    pub direction: Option<Direction>,
    /// Receiver ACKs every N in-order segments ...
    #[arg(long, default_value_t = leocc_sim::DEFAULT_DELACK_SEGS)]
    pub delack: u32,
    /// ... or after this many ms.
    #[arg(long, default_value_t = 40.0)]
    pub delack_ms: f64,
    /// The receiving host merges up to N in-order segments that reach it in the same instant
    /// into one skb and ACKs per skb (Linux GRO, 64 KiB); 1 = ACK decisions per segment.
    #[arg(long, value_name = "N", default_value_t = leocc_sim::tcp::GRO_MAX_SEGS)]
    pub gro: u32,
    /// Feed the trace's ground-truth reconfiguration times instead of detected ones (ablation).
    /// By default the daemon's own detector (`leocc probe`) runs on the simulated probe stream
    /// and its events reach LeoCC with their confidence.
    #[arg(long)]
    pub oracle_reconfig: bool,
    /// Noise on the simulated probe stream: bentpipe (jitter, send slips and 2 % bursty loss
    /// fitted to real bent-pipe ping recordings), isl (the fit to an inter-satellite-link
    /// recording) or none (the trace's propagation delay, outages and loss only).
    #[arg(long, default_value = "bentpipe", value_name = "bentpipe|isl|none", value_parser = leocc_sim::detector::ProbeNoiseModel::parse)]
    pub probe_noise: leocc_sim::detector::ProbeNoiseModel,
    /// Seconds the detector has been probing before the run starts (rounded up to whole loops of
    /// the trace), as a daemon that runs all the time: its statistics and learned schedule are
    /// warm. 0: it starts with the flows.
    #[arg(long, value_name = "S", default_value_t = leocc_sim::detector::DEFAULT_WARMUP_US as f64 / 1e6)]
    pub detector_warmup: f64,
    /// How the detector judges a long response interval: evidence (the daemon's default: the
    /// gap's signature against the stream's own statistics and learned schedule, graded 0-100)
    /// or threshold (the paper's rule: every response interval over 45 ms is an event).
    #[arg(long, default_value = "evidence", value_name = "evidence|threshold", value_parser = parse_scoring)]
    pub detector_scoring: leocc_probe::detect::Scoring,
    /// The detector also declares a false event every MS milliseconds (robustness to a noisy
    /// detector).
    #[arg(long, value_name = "MS")]
    pub false_events: Option<f64>,
    /// Ignore the trace's terrestrial segment.
    #[arg(long)]
    pub no_terrestrial: bool,
    /// One JSON object per run on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write a per-100 ms time series (JSON lines, or CSV if FILE ends in .csv).
    #[arg(long)]
    pub timeseries: Option<PathBuf>,
    /// Set a control's parameter, CC.NAME=VALUE (repeatable), e.g. leocc.delta_rtt_us=0.
    #[arg(long = "param", value_name = "CC.NAME=VALUE")]
    pub params: Vec<String>,
    /// List the parameters of a control (with defaults) and exit.
    #[arg(long, value_name = "CC")]
    pub list_params: Option<String>,
    /// List every congestion control, the engines that have it and where its parameters are
    /// declared, and exit.
    #[arg(long)]
    pub list_cc: bool,
    /// No progress output on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Build the scenarios of one invocation (one per --cc, or one for a named --flows list).
pub fn scenarios(a: &SimArgs) -> anyhow::Result<Vec<Scenario>> {
    let path = a.trace.as_ref().context("--trace is required")?;
    let trace = Trace::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let queue: QueueLimit = a.queue.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    if !(0.0..1.0).contains(&a.loss) {
        bail!("--loss {} must be in [0, 1)", a.loss);
    }
    let duration_us = match a.duration {
        Some(d) if d > 0.0 && d <= 1e6 => (d * 1e6) as u64,
        Some(d) => bail!("--duration {d} must be in (0, 1e6] seconds"),
        None => trace.duration_us(),
    };
    if duration_us == 0 {
        bail!("the trace has zero length; give --duration");
    }
    if a.delack == 0 || !(0.0..=500.0).contains(&a.delack_ms) {
        bail!("--delack must be at least 1 and --delack-ms in [0, 500]");
    }
    if a.gro == 0 {
        bail!("--gro must be at least 1 (1: no coalescing)");
    }
    let cc_params = parse_cc_params(&a.params)?;
    let trace = Arc::new(trace);
    let name = path.display().to_string();
    let named_flows = a.flows.as_deref().filter(|f| f.trim().parse::<u32>().is_err());
    let mut out = Vec::new();
    if named_flows.is_some() && a.cc.is_some() {
        bail!("give either --cc or a --flows list that names the controls, not both");
    }
    let ccs: Vec<String> = match (named_flows, &a.cc) {
        (Some(_), _) => vec![String::new()],
        (None, Some(ccs)) => ccs.clone(),
        (None, None) => vec!["cubic".to_string()],
    };
    for cc in ccs {
        let flows = match (&a.flows, named_flows) {
            (_, Some(spec)) => parse_flows(spec, "", duration_us),
            (Some(n), None) => parse_flows(n, &cc, duration_us),
            (None, None) => parse_flows("1", &cc, duration_us),
        }
        .map_err(|e| anyhow::anyhow!(e))?;
        for f in &flows {
            if !leocc_sim::cc::known(&f.cc) {
                bail!("{}", leocc_sim::cc::unknown_cc(&f.cc));
            }
        }
        let mut sc = Scenario::new(trace.clone(), &name, &flows[0].cc, duration_us);
        sc.flows = flows;
        sc.seed = a.seed;
        sc.queue = queue;
        sc.qdisc = a.qdisc;
        sc.loss = a.loss;
        sc.sndbuf_bytes = a.sndbuf;
        sc.data_dir = match a.direction {
            Some(Direction::Down) => Dir::Down,
            Some(Direction::Up) => Dir::Up,
            None => trace.meta.direction.primary(),
        };
        sc.delack_segs = a.delack;
        sc.delack_timeout_us = (a.delack_ms * 1000.0) as u64;
        sc.gro_segs = a.gro;
        sc.oracle_reconfig = a.oracle_reconfig;
        sc.probe_noise = a.probe_noise;
        sc.detector_scoring = a.detector_scoring;
        sc.detector_warmup_us = match a.detector_warmup {
            s if (0.0..=86_400.0).contains(&s) => (s * 1e6) as u64,
            s => bail!("--detector-warmup {s} must be in [0, 86400] s"),
        };
        sc.false_event_interval_us = match a.false_events {
            None => 0,
            Some(ms) if (1.0..=1e6).contains(&ms) => (ms * 1000.0) as u64,
            Some(ms) => bail!("--false-events {ms} must be in [1, 1e6] ms"),
        };
        sc.terrestrial = !a.no_terrestrial;
        sc.timeseries = a.timeseries.is_some();
        sc.cc_params = cc_params.clone();
        out.push(sc);
    }
    Ok(out)
}

fn parse_scoring(s: &str) -> Result<leocc_probe::detect::Scoring, String> {
    match s {
        "evidence" => Ok(leocc_probe::detect::Scoring::Evidence),
        "threshold" => Ok(leocc_probe::detect::Scoring::Threshold),
        _ => Err(format!("unknown scoring '{s}' (evidence or threshold)")),
    }
}

/// `CC.NAME=VALUE` settings as (control, `NAME=VALUE`), each checked against its control.
pub fn parse_cc_params(params: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    params.iter().map(|p| leocc_sim::cc::parse_setting(p).map_err(|e| anyhow::anyhow!("--param '{p}': {e}"))).collect()
}

/// Run `leocc sim`.
pub fn run(a: SimArgs) -> anyhow::Result<()> {
    if a.list_cc {
        print!("{}", list_controls());
        return Ok(());
    }
    if let Some(cc) = &a.list_params {
        let params = leocc_sim::cc::list_params(cc).map_err(|e| anyhow::anyhow!(e))?;
        if params.is_empty() {
            println!("{cc} has no settable parameters");
        }
        for p in params {
            let (name, default, doc) = (p.name, leocc_sim::cc::param::fmt_value(p.default), p.doc);
            let range = format!("{} ..= {}", leocc_sim::cc::param::fmt_value(p.min), leocc_sim::cc::param::fmt_value(p.max));
            println!("{cc}.{name:<24} {default:>10}  [{range}]  {doc}");
        }
        return Ok(());
    }
    let scs = scenarios(&a)?;
    // Opened before simulating, so an unwritable destination fails at once; dropped on any
    // error below, which removes the temporary file.
    let ts_out = a.timeseries.as_deref().map(leocc_base::OutFile::create).transpose()?;
    let tty = std::io::stderr().is_terminal();
    let mut results = Vec::new();
    let stdout = std::io::stdout();
    if !a.json {
        println!("{}", table_header());
    }
    for sc in &scs {
        let label = sc.flows.iter().map(|f| f.cc.as_str()).collect::<Vec<_>>().join("+");
        let total = sc.duration_us as f64 / 1e6;
        let started = std::time::Instant::now();
        let mut progress = |t: u64| {
            if tty && !a.quiet {
                eprint!("\rsim: {label} {:.0}/{total:.0} s", t as f64 / 1e6);
            }
        };
        let r = leocc_sim::run_with_progress(sc, &mut progress).map_err(|e| anyhow::anyhow!("{e}"))?;
        let wall = started.elapsed().as_secs_f64();
        if !a.quiet {
            eprint!("{}", if tty { "\r" } else { "" });
            eprintln!("sim: {label}: {total:.1} s simulated in {wall:.2} s ({:.0}x real time)", total / wall.max(1e-9));
            if let Some(d) = &r.detection {
                eprintln!(
                    "sim: {label}: {} fed LeoCC; detector: {} events, {} of {} true reconfigurations (precision {:.2}, recall {:.2}), delay p50 {}, confidence avg {}",
                    d.source,
                    d.detections,
                    d.matched,
                    d.truth,
                    d.precision,
                    d.recall,
                    d.delay_p50_ms.map_or("-".into(), |v| format!("{v:.0} ms")),
                    d.confidence_avg.map_or("-".into(), |v| format!("{v:.0}")),
                );
            }
        }
        let mut lock = stdout.lock();
        if a.json {
            writeln!(lock, "{}", serde_json::to_string(&r)?)?;
        } else {
            for line in table_rows(&r) {
                writeln!(lock, "{line}")?;
            }
        }
        results.push(r);
    }
    if let Some(out) = ts_out {
        let path = out.dest().to_path_buf();
        write_timeseries(out, &results)?;
        if !a.quiet {
            eprintln!("sim: time series written to {}", path.display());
        }
    }
    Ok(())
}

fn table_header() -> String {
    format!(
        "{:<14} {:>5} {:>9} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>5}",
        "cc", "flow", "tput_Mbps", "util", "rtt_avg", "rtt_p95", "owd_p95", "qdel_avg", "qdel_p95", "loss%", "retx%", "jain"
    )
}

fn table_rows(r: &RunResult) -> Vec<String> {
    let mut v = vec![format!(
        "{:<14} {:>5} {:>9.2} {:>6.3} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>7.3} {:>7.3} {:>5.3}",
        r.cc, "all", r.throughput_mbps, r.utilization, r.rtt_avg_ms, r.rtt_p95_ms, r.owd_p95_ms, r.qdelay_avg_ms,
        r.qdelay_p95_ms, r.loss_rate * 100.0, r.retrans_rate * 100.0, r.jain
    )];
    if r.flows.len() > 1 {
        for f in &r.flows {
            v.push(format!(
                "{:<14} {:>5} {:>9.2} {:>6.3} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>7.3} {:>7.3} {:>5}",
                format!("  {}", f.cc), f.flow, f.throughput_mbps, f.utilization, f.rtt_avg_ms, f.rtt_p95_ms, f.owd_p95_ms,
                f.qdelay_avg_ms, f.qdelay_p95_ms, f.loss_rate.unwrap_or(0.0) * 100.0, f.retrans_rate * 100.0, ""
            ));
        }
    }
    v
}

/// Write every run's time series through `out` (temporary file, renamed when complete).
fn write_timeseries(mut out_file: leocc_base::OutFile, results: &[RunResult]) -> anyhow::Result<()> {
    let path = out_file.dest().to_path_buf();
    let csv = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let mut out = String::new();
    if csv {
        out.push_str("cc,seed,t_s,flow,flow_cc,throughput_mbps,rtt_ms,cwnd,pacing_mbps,inflight,state\n");
    }
    for r in results {
        for row in &r.timeseries {
            let flow_cc = &r.flows[row.flow].cc;
            if csv {
                let state: Vec<String> = row.state.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!(
                    "{},{},{:.1},{},{},{:.3},{:.2},{},{:.3},{},{}\n",
                    r.cc, r.seed, row.t_s, row.flow, flow_cc, row.throughput_mbps, row.rtt_ms, row.cwnd, row.pacing_mbps,
                    row.inflight, state.join(";")
                ));
            } else {
                let mut obj = serde_json::to_value(row)?;
                let state: serde_json::Map<String, serde_json::Value> =
                    row.state.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect();
                obj["state"] = serde_json::Value::Object(state);
                obj["cc"] = serde_json::json!(r.cc);
                obj["flow_cc"] = serde_json::json!(flow_cc);
                obj["seed"] = serde_json::json!(r.seed);
                out.push_str(&serde_json::to_string(&obj)?);
                out.push('\n');
            }
        }
    }
    out_file.write_all(out.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(out_file.commit()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn args(trace: &std::path::Path, ts: &std::path::Path) -> SimArgs {
        let (t, s) = (trace.display().to_string(), ts.display().to_string());
        Cli::parse_from(["sim", "--trace", &t, "--timeseries", &s, "--quiet", "--json"]).sim
    }

    #[test]
    fn timeseries_destination_is_checked_first_and_leaves_nothing_behind() {
        let d = std::env::temp_dir().join(format!("leocc-cli-sim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let trace = d.join("bw.txt");
        std::fs::write(&trace, (0..2000).map(|i| format!("{i}\n")).collect::<String>()).unwrap();
        let e = run(args(&trace, &d.join("missing/ts.csv"))).unwrap_err();
        assert!(e.to_string().contains("missing") && e.to_string().contains("does not exist"), "{e}");
        run(args(&trace, &d.join("ts.csv"))).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["bw.txt", "ts.csv"]);
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// `--list-cc`: the registry ([`leocc_base::controls::CONTROLS`]) as a table.
fn list_controls() -> String {
    use leocc_base::controls::{Params, CONTROLS};
    let mut out = format!("{:<14} {:<28} {:<11} {}\n", "control", "engines", "parameters", "what");
    for c in CONTROLS {
        let mut engines = Vec::new();
        if c.sim {
            engines.push("sim".to_string());
        }
        if c.kernel {
            engines.push("kernel".to_string());
        }
        match c.quic {
            Some(q) if q == c.name => engines.push("quic".to_string()),
            Some(q) => engines.push(format!("quic ({q})")),
            None => {}
        }
        let params = match c.params {
            Params::None => "-",
            Params::Sim => "simulator",
            Params::Core => "core table",
        };
        out += &format!("{:<14} {:<28} {:<11} {}\n", c.name, engines.join(", "), params, c.doc);
    }
    out
}
