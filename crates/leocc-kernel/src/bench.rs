//! `leocc kernel bench`: CPU per ACK of leocc against the kernel's own bbr (cubic when bbr is
//! not built in), side by side on the same unshaped veth transfer.
//!
//! Two figures per congestion control:
//! - the congestion control's own cost per ACK: for leocc, kernel.bpf_stats_enabled's
//!   run_time_ns / run_cnt of its cong_control struct_ops program (measured by the kernel
//!   around each call). The built-in bbr has no such counter, and timing it with fentry/fexit
//!   needs ftrace (CONFIG_FUNCTION_TRACER), which these kernels lack, so for bbr only the
//!   second figure exists;
//! - the transfer's CPU: the CPU time of both iperf3 processes (user + system, as iperf3
//!   reports from getrusage; TCP work done in process context lands here) plus the machine's
//!   irq + softirq time (/proc/stat; TCP work done in softirq), divided by the ACKs the sender
//!   received (Tcp InSegs of its namespace) and by the bytes sent. Other processes' user time
//!   stays out, so a busy shared machine disturbs it less than total CPU would; it still
//!   includes both TCP stacks and the copies, so it shows what leocc costs a real transfer.
//!   Transfers are rate-limited by default (iperf3 -b) so both congestion controls do the
//!   same work; runs alternate and repeat because the figure is noisy.

use std::fs;
use std::time::Duration;

use crate::lab::{run_iperf3_with, Iperf3Result, Iperf3Server, NetnsPair, Side};
use crate::loader::{self, ProgStat};

/// Port of the benchmark's iperf3 server (inside its own namespace, so no clash).
const BENCH_PORT: u16 = 5201;
/// USER_HZ: /proc/stat counts in 1/100 s.
const USER_HZ_NS: u64 = 10_000_000;
/// Default application rate: well below what either congestion control reaches on a veth
/// here (about 10 Gbit/s paced), so both move the same bytes.
pub const DEFAULT_RATE_MBPS: u32 = 2000;

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Seconds per transfer.
    pub seconds: u32,
    /// Transfers per congestion control (alternating with the baseline).
    pub repeats: u32,
    /// Baseline congestion control; None = bbr if available, else cubic.
    pub baseline: Option<String>,
    /// Application rate limit in Mbit/s (iperf3 -b); 0 = unlimited.
    pub rate_mbps: u32,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            seconds: 5,
            repeats: 2,
            baseline: None,
            rate_mbps: DEFAULT_RATE_MBPS,
        }
    }
}

/// Totals of one congestion control over its transfers.
#[derive(Clone, Debug, Default)]
pub struct CcFigures {
    /// Congestion control name.
    pub cc: String,
    /// Mean goodput, bit/s.
    pub goodput_bps: f64,
    /// ACKs (TCP segments) received by the sender.
    pub acks: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// CPU of the transfers (both iperf3 processes + irq/softirq), ns.
    pub cpu_ns: u64,
    /// BPF struct_ops runs of the congestion control (0 for built-in ones).
    pub bpf_runs: u64,
    /// Their total run time, ns.
    pub bpf_run_time_ns: u64,
    /// cong_control calls alone (BPF statistics; 0 for built-in congestion controls).
    pub cong_control_runs: u64,
    /// Their run time, ns.
    pub cong_control_ns: u64,
}

impl CcFigures {
    /// Transfer CPU per ACK, ns.
    pub fn cpu_per_ack_ns(&self) -> f64 {
        self.cpu_ns as f64 / self.acks.max(1) as f64
    }
    /// Transfer CPU per megabyte sent, ns.
    pub fn cpu_per_mb_ns(&self) -> f64 {
        self.cpu_ns as f64 / (self.bytes.max(1) as f64 / 1e6)
    }
    /// Mean run time of the congestion control's per-ACK function, ns.
    pub fn cc_ns_per_call(&self) -> Option<f64> {
        (self.cong_control_runs > 0)
            .then(|| self.cong_control_ns as f64 / self.cong_control_runs as f64)
    }
}

/// The benchmark's result.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// leocc's figures.
    pub leocc: CcFigures,
    /// The baseline's figures.
    pub baseline: CcFigures,
}

impl BenchReport {
    /// leocc's transfer CPU per ACK over the baseline's.
    pub fn cpu_per_ack_ratio(&self) -> f64 {
        self.leocc.cpu_per_ack_ns() / self.baseline.cpu_per_ack_ns().max(f64::MIN_POSITIVE)
    }

}

/// irq + softirq time of all CPUs so far, in USER_HZ ticks.
fn softirq_jiffies() -> Result<u64, String> {
    let stat = fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or("/proc/stat: no cpu line")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    Ok(v.get(5).copied().unwrap_or(0) + v.get(6).copied().unwrap_or(0))
}

fn sum_progs(progs: &[ProgStat]) -> (u64, u64, u64, u64) {
    progs.iter().fold((0, 0, 0, 0), |(r, t, cr, ct), p| {
        let cc = p.name.starts_with("leocc_cong");
        (
            r + p.run_cnt,
            t + p.run_time_ns,
            cr + if cc { p.run_cnt } else { 0 },
            ct + if cc { p.run_time_ns } else { 0 },
        )
    })
}

fn one_transfer(pair: &NetnsPair, opts: &BenchOptions, acc: &mut CcFigures) -> Result<(), String> {
    let cc = acc.cc.clone();
    let rate = format!("{}M", opts.rate_mbps);
    let extra: Vec<&str> = if opts.rate_mbps > 0 { vec!["-b", &rate] } else { Vec::new() };
    let transfer = || -> Result<(Iperf3Result, u64, u64), String> {
        let acks0 = pair.tcp_in_segs(Side::Client).map_err(|e| e.to_string())?;
        let irq0 = softirq_jiffies()?;
        let r = run_iperf3_with(pair, BENCH_PORT, &cc, opts.seconds, 1, &extra)?;
        let irq1 = softirq_jiffies()?;
        let acks1 = pair.tcp_in_segs(Side::Client).map_err(|e| e.to_string())?;
        let processes_ns = (r.sender_cpu_pct + r.receiver_cpu_pct) / 100.0 * r.seconds * 1e9;
        Ok((r, acks1 - acks0, (irq1 - irq0) * USER_HZ_NS + processes_ns as u64))
    };

    let (r, acks, cpu) = if cc == loader::CC_NAME {
        let progs0 = sum_progs(&loader::leocc_programs());
        let out = transfer()?;
        let progs1 = sum_progs(&loader::leocc_programs());
        acc.bpf_runs += progs1.0 - progs0.0;
        acc.bpf_run_time_ns += progs1.1 - progs0.1;
        acc.cong_control_runs += progs1.2 - progs0.2;
        acc.cong_control_ns += progs1.3 - progs0.3;
        out
    } else {
        transfer()?
    };
    if r.sender_cc != cc {
        return Err(format!("iperf3 ran {} instead of {cc}", r.sender_cc));
    }
    acc.goodput_bps += r.received_bps;
    acc.bytes += r.sent_bytes;
    acc.acks += acks;
    acc.cpu_ns += cpu;
    Ok(())
}

/// Runs the benchmark; `progress` gets one line per step. Loads leocc for the run if it was
/// not loaded (and unloads it after), and restores kernel.bpf_stats_enabled.
pub fn run(opts: &BenchOptions, mut progress: impl FnMut(&str)) -> Result<BenchReport, String> {
    if !crate::is_root() {
        return Err("the benchmark needs root (network namespaces, BPF statistics)".into());
    }
    let _lock = crate::lab::GlobalLock::acquire().map_err(|e| format!("{}: {e}", crate::lab::GLOBAL_LOCK))?;
    let available = loader::available_ccs();
    let baseline = opts.baseline.clone().unwrap_or_else(|| {
        if available.iter().any(|c| c == "bbr") { "bbr" } else { "cubic" }.to_string()
    });
    let we_loaded = match loader::load(&loader::LoadOptions::default()).map_err(|e| e.to_string())? {
        loader::LoadOutcome::Loaded | loader::LoadOutcome::Replaced => true,
        loader::LoadOutcome::AlreadyLoaded => false,
    };
    let stats_were_on = loader::bpf_stats_enabled().unwrap_or(false);
    loader::set_bpf_stats(true).map_err(|e| e.to_string())?;

    let result = (|| {
        let pair = NetnsPair::new("bench").map_err(|e| format!("network namespaces: {e}"))?;
        let _server = Iperf3Server::start(&pair, BENCH_PORT).map_err(|e| e.to_string())?;
        let mut leocc = CcFigures {
            cc: loader::CC_NAME.into(),
            ..Default::default()
        };
        let mut base = CcFigures {
            cc: baseline.clone(),
            ..Default::default()
        };
        for i in 0..opts.repeats {
            for fig in [&mut base, &mut leocc] {
                let limit = match opts.rate_mbps {
                    0 => "unlimited".to_string(),
                    r => format!("{r} Mbit/s"),
                };
                progress(&format!(
                    "run {}/{}: {}, {} s at {limit} on an unshaped veth",
                    i + 1,
                    opts.repeats,
                    fig.cc,
                    opts.seconds
                ));
                one_transfer(&pair, opts, fig)?;
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        for fig in [&mut base, &mut leocc] {
            fig.goodput_bps /= f64::from(opts.repeats.max(1));
        }
        Ok(BenchReport {
            leocc,
            baseline: base,
        })
    })();

    let _ = loader::set_bpf_stats(stats_were_on);
    if we_loaded {
        let _ = loader::unload();
    }
    result
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{:<7} {:>11} {:>9} {:>12} {:>16} {:>16}  measured by",
            "cc", "goodput", "ACKs", "CPU/ACK", "CPU/MB", "cc time/ACK"
        )?;
        for fig in [&self.baseline, &self.leocc] {
            let (cc_time, how) = match fig.cc_ns_per_call() {
                Some(ns) => (format!("{ns:.0} ns"), "BPF run_time_ns/run_cnt of cong_control"),
                None => ("n/a".to_string(), "built in: no BPF statistics"),
            };
            writeln!(
                f,
                "{:<7} {:>6.0} Mb/s {:>9} {:>9.0} ns {:>13.0} ns {:>16}  {how}",
                fig.cc,
                fig.goodput_bps / 1e6,
                fig.acks,
                fig.cpu_per_ack_ns(),
                fig.cpu_per_mb_ns(),
                cc_time
            )?;
        }
        writeln!(
            f,
            "transfer CPU per MB, leocc / {}: {:.3}",
            self.baseline.cc,
            self.leocc.cpu_per_mb_ns() / self.baseline.cpu_per_mb_ns().max(f64::MIN_POSITIVE)
        )?;
        write!(
            f,
            "transfer CPU per ACK (iperf3 processes + irq/softirq), leocc / {}: {:.3}",
            self.baseline.cc,
            self.cpu_per_ack_ratio()
        )
    }
}
