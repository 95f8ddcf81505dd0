//! `leocc emu ... -- CMD` (the emulator shell) and `leocc bench-emu` (its accuracy and speed).
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;

use leocc_emu::clock::DEFAULT_SPIN_US;
use leocc_emu::emulator::DEFAULT_QUEUE_PACKETS;
use leocc_emu::shell::{self, ShellSpec};
use leocc_emu::{EmuConfig, Qdisc, QueueLimit};
use leocc_trace::{Dir, Trace};

const US_PER_MS: f64 = 1000.0;

/// `leocc emu`: run CMD in a client namespace behind an emulated LEO path.
#[derive(Args)]
#[command(after_help = "CMD sees LEOCC_SERVER (the server's address), LEOCC_POP (the PoP's) and LEOCC_CLIENT.\n\
Example: leocc emu --trace t.trace --server-cmd 'iperf3 -s' -- sh -c 'iperf3 -c $LEOCC_SERVER -t 10'")]
pub struct EmuArgs {
    /// Trace of the satellite segment (our format, a mahimahi file, or a LeoReplayer directory).
    #[arg(long, value_name = "T", required_unless_present = "cleanup")]
    trace: Option<PathBuf>,
    /// A different trace for the uplink (its uplink direction is used).
    #[arg(long, value_name = "T2")]
    uplink_trace: Option<PathBuf>,
    /// Queue limit: packets (500), bytes (750kB) or time at the mean capacity of the
    /// trace's measured direction (150ms); 0 = unlimited [default: 500].
    #[arg(long, value_name = "Q")]
    queue: Option<String>,
    /// Queue limit in bytes (alone, replaces the packet limit).
    #[arg(long, value_name = "B")]
    queue_bytes: Option<usize>,
    /// Queue discipline of the satellite data lanes (and a terrestrial queue): droptail (an arriving packet that does not fit the limit is dropped),
    /// dropfront (packets are dropped from the head of the queue until the arriving one fits;
    /// Starlink is reported to do this) or codel (CoDel AQM, RFC 8289, target 5 ms, interval
    /// 100 ms: drops at dequeue when packets waited too long, with the limit as a hard drop-tail
    /// limit).
    #[arg(long, default_value = "droptail", value_name = "droptail|dropfront|codel")]
    qdisc: Qdisc,
    /// Extra random loss probability on the satellite segment, both directions (0..1).
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    loss: f64,
    /// One-way delay of the terrestrial segment (PoP <-> server), ms.
    #[arg(long, value_name = "MS")]
    terrestrial_delay: Option<f64>,
    /// Capacity (and delay, unless --terrestrial-delay) of the terrestrial segment.
    #[arg(long, value_name = "T3")]
    terrestrial_trace: Option<PathBuf>,
    /// mahimahi-format event logs of the satellite segment: FILE.up and FILE.down.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Directory for client.pcap and server.pcap (both sides of the emulated path).
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// Command line run with `sh -c` in the server namespace (e.g. 'iperf3 -s').
    #[arg(long, value_name = "CMD")]
    server_cmd: Option<String>,
    /// Seed of the random loss decisions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Busy-wait margin before each release time, µs (CPU for precision).
    #[arg(long, default_value_t = DEFAULT_SPIN_US)]
    spin_us: u64,
    /// Keep the engine threads at normal priority (default: SCHED_FIFO when permitted).
    #[arg(long)]
    no_realtime: bool,
    /// Read the devices packet by packet: no TUN offloads (default: the kernel hands over
    /// TCP/UDP super-packets, which the emulator cuts into packets).
    #[arg(long)]
    no_offload: bool,
    /// Remove namespaces left by leocc processes that no longer exist, and kill the processes
    /// still running in them, then exit.
    #[arg(long)]
    cleanup: bool,
    /// The command to run in the client namespace.
    #[arg(last = true, value_name = "CMD", required_unless_present = "cleanup")]
    cmd: Vec<String>,
}

fn load(path: &Path) -> anyhow::Result<Trace> {
    Ok(Trace::load(path)?)
}

/// Turns the options into an emulator configuration; fails on any bad input.
fn config(a: &EmuArgs) -> anyhow::Result<EmuConfig> {
    let path = a.trace.as_ref().context("--trace is required")?;
    let trace = load(path)?;
    let up = match &a.uplink_trace {
        Some(p) => load(p)?.link(Dir::Up),
        None => trace.link(Dir::Up),
    };
    let mut cfg = EmuConfig::new(up, trace.link(Dir::Down));
    cfg.beyond_pop_us = trace.beyond_pop_us();
    cfg.label = path.display().to_string();
    cfg.terrestrial = match &a.terrestrial_trace {
        Some(p) => {
            let t = load(p)?;
            Some(t.terrestrial().unwrap_or_else(|| t.link(Dir::Down)))
        }
        None => trace.terrestrial(),
    };
    if let Some(ms) = a.terrestrial_delay {
        if !(ms.is_finite() && ms >= 0.0) {
            bail!("--terrestrial-delay must be a non-negative number of ms, got {ms}");
        }
        cfg.terrestrial_delay_us = Some((ms * US_PER_MS).round() as u64);
    }
    if !(a.loss.is_finite() && (0.0..1.0).contains(&a.loss)) {
        bail!("--loss must be a probability in [0, 1), got {}", a.loss);
    }
    cfg.loss = a.loss;
    cfg.queue = match (&a.queue, a.queue_bytes) {
        (None, None) => QueueLimit { packets: Some(DEFAULT_QUEUE_PACKETS), bytes: None },
        (q, b) => {
            let mut lim = QueueLimit { packets: None, bytes: b.filter(|&n| n > 0) };
            if let Some(q) = q.as_deref().filter(|q| q.trim() != "0") {
                let given: leocc_sim::QueueLimit = q.parse().map_err(|e: String| anyhow::anyhow!("--queue: {e}"))?;
                // A time is sized by the mean capacity of the direction the trace measured
                // (down when it has both), as `leocc sim` and `leocc eval` size it.
                let data = if trace.meta.direction.primary() == Dir::Up { &cfg.up } else { &cfg.down };
                let r = given.resolve_at(data.mean_capacity_bps(0, data.period_us().max(1))).map_err(|e| anyhow::anyhow!("--queue: {e}"))?;
                if matches!(given, leocc_sim::QueueLimit::Time(_)) {
                    eprintln!("leocc emu: queue {given} = {} bytes at {:.1} Mbit/s mean capacity", r.bytes, r.mean_capacity_bps / 1e6);
                }
                match r.limit {
                    leocc_sim::QueueLimit::Packets(n) => lim.packets = Some(n as usize),
                    _ => lim.bytes = Some(lim.bytes.map_or(r.bytes as usize, |b| b.min(r.bytes as usize))),
                }
            }
            lim
        }
    };
    cfg.qdisc = a.qdisc;
    cfg.seed = a.seed;
    cfg.spin_us = a.spin_us;
    cfg.realtime = !a.no_realtime;
    cfg.offload = !a.no_offload;
    if let Some(base) = &a.log {
        cfg.uplink_log = Some(with_suffix(base, "up"));
        cfg.downlink_log = Some(with_suffix(base, "down"));
    }
    cfg.pcap_dir = a.pcap.clone();
    Ok(cfg)
}

fn with_suffix(base: &Path, s: &str) -> PathBuf {
    let mut p = base.as_os_str().to_owned();
    p.push(".");
    p.push(s);
    PathBuf::from(p)
}

/// Runs `leocc emu`; exits the process with CMD's exit code.
pub fn run(a: EmuArgs) -> anyhow::Result<()> {
    if a.cleanup {
        for ns in leocc_emu::netns::leftover_namespaces() {
            leocc_emu::netns::remove(&ns)?;
            eprintln!("removed {ns} and the processes left in it");
        }
        return Ok(());
    }
    let cfg = config(&a)?;
    let spec = ShellSpec { cmd: a.cmd.clone(), server_cmd: a.server_cmd.clone() };
    let (code, summary) = shell::run(&cfg, &spec)?;
    eprint!("leocc emu summary:\n{summary}");
    if let Some(base) = &a.log {
        eprintln!("event logs: {} {}", with_suffix(base, "up").display(), with_suffix(base, "down").display());
    }
    std::process::exit(code);
}

/// `leocc bench-emu`: measures the emulator's accuracy and speed and prints the numbers.
#[derive(Args)]
pub struct BenchEmuArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Constant rates to try for the highest loss-free rate, Mbit/s, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "500,1000,1500,2000,3000")]
    rates: Vec<f64>,
    /// Busy-wait margin before each release time, µs.
    #[arg(long, default_value_t = DEFAULT_SPIN_US)]
    spin_us: u64,
    /// Measure the packet-by-packet path: no TUN offloads, no UDP GSO in the sender.
    #[arg(long)]
    no_offload: bool,
    /// Skip the realistic-path case (kernel TCP through iperf3).
    #[arg(long)]
    no_tcp: bool,
    /// Mean capacity of the realistic path, Mbit/s.
    #[arg(long, default_value_t = leocc_emu::bench::DEFAULT_TCP_MBPS)]
    tcp_mbps: f64,
}

/// Runs the benchmark.
pub fn bench(a: BenchEmuArgs) -> anyhow::Result<()> {
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        bail!("--seconds must be positive");
    }
    if !(a.tcp_mbps.is_finite() && (1.0..=100_000.0).contains(&a.tcp_mbps)) {
        bail!("--tcp-mbps {}: must be in 1..=100000", a.tcp_mbps);
    }
    let opts = leocc_emu::bench::BenchOptions { seconds: a.seconds, rates_mbps: a.rates, spin_us: a.spin_us, offload: !a.no_offload, tcp: !a.no_tcp, tcp_mbps: a.tcp_mbps };
    leocc_emu::bench::run(&opts)?;
    Ok(())
}


#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        emu: EmuArgs,
    }

    fn config_of(trace: &Path, queue: &[&str]) -> anyhow::Result<EmuConfig> {
        let mut argv = vec!["leocc-emu", "--trace", trace.to_str().unwrap()];
        argv.extend_from_slice(queue);
        argv.extend_from_slice(&["--", "true"]);
        config(&Cli::try_parse_from(argv)?.emu)
    }

    #[test]
    fn queue_takes_packets_bytes_or_time_at_the_mean_capacity() {
        let dir = std::env::temp_dir().join(format!("leocc-emu-queue-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("const24.trace");
        // 24 Mbit/s both ways: 3000 bytes per ms.
        leocc_sim::constant_trace(24.0, 10_000, 1_000_000, &[]).save(&path).unwrap();
        let q = |args: &[&str]| config_of(&path, args).map(|c| (c.queue.packets, c.queue.bytes));
        assert_eq!(q(&[]).unwrap(), (Some(DEFAULT_QUEUE_PACKETS), None));
        assert_eq!(q(&["--queue", "100"]).unwrap(), (Some(100), None));
        assert_eq!(q(&["--queue", "150ms"]).unwrap(), (None, Some(450_000)));
        assert_eq!(q(&["--queue", "750kB"]).unwrap(), (None, Some(750_000)));
        assert_eq!(q(&["--queue", "150ms", "--queue-bytes", "300000"]).unwrap(), (None, Some(300_000)));
        assert_eq!(q(&["--queue", "0"]).unwrap(), (None, None));
        assert!(q(&["--queue", "0ms"]).unwrap_err().to_string().contains("--queue"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
