//! `leocc bench ...`: speed and memory measurements that print numbers (never timed tests).
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use leocc_sim::{constant_trace, QueueLimit, Scenario, World};

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCmd {
    /// Simulator speed (simulated s per wall s, packets/s) and peak memory over a long run.
    Sim(BenchSimArgs),
    /// Emulator accuracy and speed: delivered vs offered, release-time error, highest rate, CPU.
    Emu(crate::cmd::emu::BenchEmuArgs),
    /// CPU per ACK of the BPF LeoCC against the kernel's bbr on the same veth transfer.
    Kernel(crate::cmd::kernel::BenchArgs),
}

/// Options of `leocc bench sim`.
#[derive(Args, Debug)]
pub struct BenchSimArgs {
    /// Controls to time, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "cubic,leocc")]
    pub cc: Vec<String>,
    /// Link rate, Mbit/s (constant trace, 20 ms one-way delay each way).
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// Simulated seconds per timed run.
    #[arg(long, default_value_t = 120.0)]
    pub duration: f64,
    /// Simulated seconds of the memory run (peak RSS is compared with the timed runs').
    #[arg(long, default_value_t = 1200.0)]
    pub long: f64,
}

/// Peak resident set size of this process (VmHWM), kB.
fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn timed(trace: &Arc<leocc_trace::Trace>, cc: &str, secs: f64) -> anyhow::Result<(f64, u64, u64, f64)> {
    let mut sc = Scenario::new(trace.clone(), "bench", cc, (secs * 1e6) as u64);
    sc.queue = QueueLimit::Packets(leocc_sim::DEFAULT_QUEUE_PACKETS);
    let started = Instant::now();
    let mut w = World::new(&sc).map_err(|e| anyhow::anyhow!("{e}"))?;
    w.run(&mut |_| {});
    let wall = started.elapsed().as_secs_f64();
    let r = w.result(&sc);
    Ok((wall, w.sender(0).stats.sent, w.events_processed, r.utilization))
}

/// Run `leocc bench sim`.
pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    let a = match cmd {
        BenchCmd::Sim(a) => a,
        BenchCmd::Emu(a) => return crate::cmd::emu::bench(a),
        BenchCmd::Kernel(a) => return crate::cmd::kernel::run_bench(a),
    };
    if a.rate <= 0.0 || a.duration <= 0.0 || a.long <= 0.0 {
        anyhow::bail!("--rate, --duration and --long must be positive");
    }
    let trace = Arc::new(constant_trace(a.rate, 20_000, 10_000_000, &[]));
    println!("simulator: one flow, constant {:.0} Mbit/s, 40 ms base RTT, 500-packet queue, {:.0} s", a.rate, a.duration);
    println!("{:<8} {:>8} {:>12} {:>14} {:>14} {:>6}", "cc", "wall_s", "sim_x_real", "packets/s", "events/s", "util");
    for cc in &a.cc {
        let (wall, pkts, events, util) = timed(&trace, cc, a.duration)?;
        println!(
            "{cc:<8} {wall:>8.2} {:>12.1} {:>14.0} {:>14.0} {util:>6.3}",
            a.duration / wall,
            pkts as f64 / wall,
            events as f64 / wall
        );
    }
    let short_rss = peak_rss_kb();
    let cc = a.cc.first().cloned().unwrap_or_else(|| "cubic".into());
    let (wall, _, _, _) = timed(&trace, &cc, a.long)?;
    let long_rss = peak_rss_kb();
    match (short_rss, long_rss) {
        (Some(s), Some(l)) => println!(
            "memory: peak RSS {s} kB after the {:.0} s runs, {l} kB after a {:.0} s {cc} run ({wall:.1} s wall)",
            a.duration, a.long
        ),
        _ => println!("memory: /proc/self/status has no VmHWM here"),
    }
    Ok(())
}
