//! `leocc kernel bench`: CPU per ACK of leocc against the kernel's own bbr (cubic when bbr is
//! not built in), side by side on the same unshaped veth transfer.
//!
//! Two figures per congestion control:
//! - the congestion control's own cost: for leocc, kernel.bpf_stats_enabled's run_time_ns /
//!   run_cnt of its struct_ops programs (cong_control is called once per ACK); the built-in
//!   bbr has no such counter, so for it only the second figure exists;
//! - the transfer's CPU: busy CPU time of the whole machine (/proc/stat, all CPUs) during the
//!   transfer divided by the ACKs the sender received (Tcp InSegs of its namespace). This
//!   includes both TCP stacks, the copies and iperf3, so the ratio shows what leocc costs a
//!   real transfer; it is noisy on a shared machine, so runs alternate and repeat.

use std::fs;
use std::time::Duration;

use crate::lab::{run_iperf3, Iperf3Server, NetnsPair, Side};
use crate::loader::{self, ProgStat};

/// Port of the benchmark's iperf3 server (inside its own namespace, so no clash).
const BENCH_PORT: u16 = 5201;
/// USER_HZ: /proc/stat counts in 1/100 s.
const USER_HZ_NS: u64 = 10_000_000;

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Seconds per transfer.
    pub seconds: u32,
    /// Transfers per congestion control (alternating with the baseline).
    pub repeats: u32,
    /// Baseline congestion control; None = bbr if available, else cubic.
    pub baseline: Option<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            seconds: 5,
            repeats: 2,
            baseline: None,
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
    /// Busy CPU of the machine during the transfers, ns.
    pub busy_cpu_ns: u64,
    /// BPF struct_ops runs of the congestion control (0 for built-in ones).
    pub bpf_runs: u64,
    /// Their total run time, ns.
    pub bpf_run_time_ns: u64,
    /// cong_control calls alone.
    pub cong_control_runs: u64,
    /// Their run time, ns.
    pub cong_control_ns: u64,
}

impl CcFigures {
    /// Machine CPU per ACK, ns.
    pub fn cpu_per_ack_ns(&self) -> f64 {
        self.busy_cpu_ns as f64 / self.acks.max(1) as f64
    }
    /// Mean run time of leocc's cong_control program (one call per ACK), ns.
    pub fn bpf_ns_per_call(&self) -> Option<f64> {
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
    /// leocc's machine CPU per ACK over the baseline's.
    pub fn cpu_per_ack_ratio(&self) -> f64 {
        self.leocc.cpu_per_ack_ns() / self.baseline.cpu_per_ack_ns().max(f64::MIN_POSITIVE)
    }
}

fn busy_jiffies() -> Result<u64, String> {
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
    // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
    let total: u64 = v.iter().take(8).sum();
    Ok(total - v.get(3).copied().unwrap_or(0) - v.get(4).copied().unwrap_or(0))
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

fn one_transfer(
    pair: &NetnsPair,
    cc: &str,
    secs: u32,
    acc: &mut CcFigures,
) -> Result<(), String> {
    let acks0 = pair.tcp_in_segs(Side::Client).map_err(|e| e.to_string())?;
    let progs0 = sum_progs(&loader::leocc_programs());
    let busy0 = busy_jiffies()?;
    let r = run_iperf3(pair, BENCH_PORT, cc, secs, 1)?;
    let busy1 = busy_jiffies()?;
    let progs1 = sum_progs(&loader::leocc_programs());
    let acks1 = pair.tcp_in_segs(Side::Client).map_err(|e| e.to_string())?;
    if r.sender_cc != cc {
        return Err(format!("iperf3 ran {} instead of {cc}", r.sender_cc));
    }
    acc.goodput_bps += r.received_bps;
    acc.acks += acks1 - acks0;
    acc.busy_cpu_ns += (busy1 - busy0) * USER_HZ_NS;
    if cc == loader::CC_NAME {
        acc.bpf_runs += progs1.0 - progs0.0;
        acc.bpf_run_time_ns += progs1.1 - progs0.1;
        acc.cong_control_runs += progs1.2 - progs0.2;
        acc.cong_control_ns += progs1.3 - progs0.3;
    }
    Ok(())
}

/// Runs the benchmark; `progress` gets one line per step. Loads leocc for the run if it was
/// not loaded (and unloads it after), and restores kernel.bpf_stats_enabled.
pub fn run(opts: &BenchOptions, mut progress: impl FnMut(&str)) -> Result<BenchReport, String> {
    if !crate::is_root() {
        return Err("the benchmark needs root (network namespaces, BPF statistics)".into());
    }
    let available = loader::available_ccs();
    let baseline = opts.baseline.clone().unwrap_or_else(|| {
        if available.iter().any(|c| c == "bbr") { "bbr" } else { "cubic" }.to_string()
    });
    let we_loaded = match loader::load(&loader::LoadOptions::default()).map_err(|e| e.to_string())? {
        loader::LoadOutcome::Loaded => true,
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
                let cc = fig.cc.clone();
                progress(&format!(
                    "run {}/{}: {cc}, {} s on an unshaped veth",
                    i + 1,
                    opts.repeats,
                    opts.seconds
                ));
                one_transfer(&pair, &cc, opts.seconds, fig)?;
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
            "{:<8} {:>12} {:>12} {:>16} {:>22}",
            "cc", "goodput", "ACKs", "machine CPU/ACK", "BPF cong_control/call"
        )?;
        for fig in [&self.baseline, &self.leocc] {
            let bpf = fig
                .bpf_ns_per_call()
                .map_or_else(|| "n/a (built-in)".to_string(), |ns| format!("{ns:.0} ns"));
            writeln!(
                f,
                "{:<8} {:>7.0} Mb/s {:>12} {:>13.0} ns {:>22}",
                fig.cc,
                fig.goodput_bps / 1e6,
                fig.acks,
                fig.cpu_per_ack_ns(),
                bpf
            )?;
        }
        if self.leocc.bpf_runs > 0 {
            writeln!(
                f,
                "leocc BPF, all struct_ops programs: {} runs, {:.0} ns per ACK",
                self.leocc.bpf_runs,
                self.leocc.bpf_run_time_ns as f64 / self.leocc.acks.max(1) as f64
            )?;
        }
        write!(
            f,
            "machine CPU per ACK, leocc / {}: {:.3}",
            self.baseline.cc,
            self.cpu_per_ack_ratio()
        )
    }
}
