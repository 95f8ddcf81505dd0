//! `leocc kernel load|unload|status|stats|bench`: LeoCC as a BPF struct_ops congestion control
//! in the running kernel (crates/leocc-kernel does the work).
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use leocc_kernel::{bench, loader, stats};

/// Subcommands of `leocc kernel`.
#[derive(Subcommand)]
pub enum KernelCmd {
    /// Register the "leocc" congestion control (BPF struct_ops) and pin it under
    /// /sys/fs/bpf/leocc so it stays after this command exits. Idempotent. Needs root.
    Load(BtfArg),
    /// Unregister "leocc" and remove its pins. Flows already using it keep running until
    /// they close; new sockets cannot select it any more. Needs root.
    Unload,
    /// Show whether leocc is loaded, the kernel version, BTF and struct_ops support.
    Status(BtfArg),
    /// Per-flow model state: mode, bBW_a, bBW_m, bRTT range, target rate. Needs root.
    Stats(StatsArgs),
    /// CPU per ACK of leocc against the kernel's bbr (or cubic) on the same veth transfer.
    Bench(BenchArgs),
}

/// The kernel's BTF location.
#[derive(Args)]
pub struct BtfArg {
    /// Kernel BTF file (default /sys/kernel/btf/vmlinux).
    #[arg(long, value_name = "PATH")]
    btf: Option<PathBuf>,
}

/// Options of `leocc kernel stats`.
#[derive(Args)]
pub struct StatsArgs {
    /// One JSON object per flow instead of a table.
    #[arg(long)]
    json: bool,
}

/// Options of `leocc kernel bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Seconds per transfer.
    #[arg(long, default_value_t = 5)]
    seconds: u32,
    /// Transfers per congestion control (runs alternate with the baseline).
    #[arg(long, default_value_t = 2)]
    repeats: u32,
    /// Baseline congestion control (default: bbr if available, else cubic).
    #[arg(long)]
    baseline: Option<String>,
    /// Application rate limit in Mbit/s (iperf3 -b) so both move the same bytes; 0 = none.
    #[arg(long, default_value_t = bench::DEFAULT_RATE_MBPS)]
    rate: u32,
}

/// Runs one `leocc kernel` subcommand.
pub fn run(cmd: KernelCmd) -> anyhow::Result<()> {
    match cmd {
        KernelCmd::Load(a) => load(a),
        KernelCmd::Unload => {
            if loader::unload()? {
                println!("leocc unloaded (flows still using it run on until they close)");
            } else {
                println!("leocc was not loaded; stale pins, if any, removed");
            }
            Ok(())
        }
        KernelCmd::Status(a) => {
            print!("{}", loader::status(a.btf.as_deref()));
            Ok(())
        }
        KernelCmd::Stats(a) => show_stats(a),
        KernelCmd::Bench(a) => run_bench(a),
    }
}

fn load(a: BtfArg) -> anyhow::Result<()> {
    let outcome = loader::load(&loader::LoadOptions { btf: a.btf.clone() })?;
    match outcome {
        loader::LoadOutcome::Loaded => println!("leocc loaded"),
        loader::LoadOutcome::AlreadyLoaded => println!("leocc is already loaded; nothing changed"),
    }
    print!("{}", loader::status(a.btf.as_deref()));
    if !loader::is_registered() {
        bail!("leocc was loaded but is missing from net.ipv4.tcp_available_congestion_control");
    }
    println!("use it: sysctl net.ipv4.tcp_congestion_control=leocc, iperf3 -C leocc, or setsockopt(TCP_CONGESTION, \"leocc\")");
    Ok(())
}

fn show_stats(a: StatsArgs) -> anyhow::Result<()> {
    let flows = leocc_kernel::read_stats()?;
    if a.json {
        for f in &flows {
            println!("{}", serde_json::to_string(f).context("encoding stats")?);
        }
        return Ok(());
    }
    if flows.is_empty() {
        println!("no flows use leocc right now");
        return Ok(());
    }
    println!(
        "{:<22} {:<22} {:<12} {:>9} {:>9} {:>9} {:>15} {:>6} {:>7} {:>7}",
        "local", "remote", "mode", "bBW_a", "bBW_m", "target", "bRTT l-h (ms)", "cwnd", "rcf", "signal"
    );
    for f in &flows {
        println!(
            "{:<22} {:<22} {:<12} {:>9.1} {:>9.1} {:>9.1} {:>15} {:>6} {:>7} {:>7}",
            f.local.to_string(),
            f.remote.to_string(),
            format!("{}{}", f.mode_name, if f.congested { "*" } else { "" }),
            stats::mbps(f.bbw_a),
            stats::mbps(f.bbw_m),
            stats::mbps(f.target_rate),
            format!("{:.1}-{:.1}", f.brtt_l_us as f64 / 1e3, f.brtt_h_us as f64 / 1e3),
            f.cwnd,
            f.reconfigs_fed,
            f.signal,
        );
    }
    println!("rates in Mbit/s; * = congested (eq. 4); rcf = reconfigurations handed to the core");
    Ok(())
}

fn run_bench(a: BenchArgs) -> anyhow::Result<()> {
    let opts = bench::BenchOptions {
        seconds: a.seconds,
        repeats: a.repeats,
        baseline: a.baseline,
        rate_mbps: a.rate,
    };
    let report = bench::run(&opts, |line| eprintln!("bench: {line}")).map_err(anyhow::Error::msg)?;
    println!("{report}");
    Ok(())
}
