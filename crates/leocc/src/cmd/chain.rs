//! `leocc chain`: run commands on a multi-hop emulated path (crates/leocc-emu/src/chain.rs),
//! each hop with its own trace: generated ISL-chain hops (`--hops`) or trace files
//! (`--hop-trace`, one per hop).
use anyhow::anyhow;
use clap::Args;
use leocc_emu::chain::{self, ChainConfig, ChainShellSpec, HopConfig};
use leocc_emu::{Qdisc, QueueLimit};
use leocc_trace::isl::{self, ChainSpec};
use leocc_trace::{Dir, Trace};
use std::path::PathBuf;

/// Options of `leocc chain`.
#[derive(Args, Debug)]
#[command(after_help = "Nodes are 10.15.0.1 (client, node 0) .. 10.15.0.(H+1) (server, node H). Every command \
gets LEOCC_HOPS, LEOCC_NODE, LEOCC_ADDR, LEOCC_UPSTREAM, LEOCC_DOWNSTREAM, LEOCC_CLIENT, LEOCC_SERVER and \
LEOCC_NODE_0..LEOCC_NODE_H.\n\nExamples:\n  leocc chain --hops 6 --loss 0.01 --server-cmd 'iperf3 -s' -- sh -c 'iperf3 -c $LEOCC_SERVER -R -t 20'\n  \
leocc chain --hops 6 --server-cmd 'leocc leotp serve' --node-cmd 'leocc leotp mid --upstream $LEOCC_UPSTREAM' \\\n      -- sh -c 'leocc leotp get $LEOCC_UPSTREAM -t 20'")]
pub struct ChainArgs {
    /// Generate an ISL chain of this many hops (terminal-satellite, ISLs, satellite-ground station).
    #[arg(long, conflicts_with = "hop_trace")]
    pub hops: Option<usize>,
    /// Median capacity of every generated hop, Mbit/s (each fluctuates around it independently).
    #[arg(long, default_value_t = 40.0)]
    pub mbps: f64,
    /// Length of the generated hop traces, s (they loop).
    #[arg(long, default_value_t = 120)]
    pub trace_seconds: u64,
    /// Seed of the generated hops.
    #[arg(long, default_value_t = 1)]
    pub trace_seed: u64,
    /// A trace file per hop, client side first (repeat the option once per hop).
    #[arg(long)]
    pub hop_trace: Vec<PathBuf>,
    /// Extra random loss on every hop, both directions.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Limit of every hop's queue, packets (0 = unlimited).
    #[arg(long, default_value_t = 500)]
    pub queue: usize,
    /// Queue discipline of every hop's queue: droptail (an arriving packet that does not fit the limit is dropped),
    /// dropfront (packets are dropped from the head of the queue until the arriving one fits;
    /// Starlink is reported to do this) or codel (CoDel AQM, RFC 8289, target 5 ms, interval
    /// 100 ms: drops at dequeue when packets waited too long, with the limit as a hard drop-tail
    /// limit).
    #[arg(long, default_value = "droptail", value_name = "droptail|dropfront|codel")]
    pub qdisc: Qdisc,
    /// Seed of the emulator's loss decisions.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Shell command run in every mid node (1..H-1), e.g. a LEOTP mid-node.
    #[arg(long, value_name = "CMD")]
    pub node_cmd: Option<String>,
    /// Shell command run in the server node.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// Run the engine threads at real-time priority.
    #[arg(long)]
    pub realtime: bool,
    /// Read the devices packet by packet: no TUN offloads.
    #[arg(long)]
    pub no_offload: bool,
    /// Capture both ends of the path into DIR/client.pcap and DIR/server.pcap (one clock).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// The command run in the client node.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// Builds the hops from the options.
pub fn hops_of(a: &ChainArgs) -> anyhow::Result<Vec<HopConfig>> {
    let traces: Vec<Trace> = match (a.hops, a.hop_trace.is_empty()) {
        (Some(h), true) => isl::chain(&ChainSpec { hops: h, duration_ms: a.trace_seconds.saturating_mul(1000), median_mbps: a.mbps, loss: 0.0, seed: a.trace_seed }).map_err(|e| anyhow!("--hops: {e}"))?,
        (None, false) => a.hop_trace.iter().map(|p| Trace::load(p).map_err(|e| anyhow!("{e}"))).collect::<anyhow::Result<_>>()?,
        _ => return Err(anyhow!("give --hops N (generated ISL chain) or one --hop-trace per hop")),
    };
    if traces.len() > chain::MAX_HOPS {
        return Err(anyhow!("{} hops: at most {}", traces.len(), chain::MAX_HOPS));
    }
    Ok(traces.iter().map(|t| HopConfig { up: t.link(Dir::Up), down: t.link(Dir::Down) }).collect())
}

/// Runs `leocc chain`.
pub fn run(a: ChainArgs) -> anyhow::Result<()> {
    if !(0.0..1.0).contains(&a.loss) {
        return Err(anyhow!("--loss {}: must be in [0, 1)", a.loss));
    }
    let mut cfg = ChainConfig::new(hops_of(&a)?);
    cfg.loss = a.loss;
    cfg.seed = a.seed;
    cfg.realtime = a.realtime;
    cfg.pcap_dir = a.pcap.clone();
    cfg.offload = !a.no_offload;
    cfg.queue = QueueLimit { packets: (a.queue > 0).then_some(a.queue), bytes: None };
    cfg.qdisc = a.qdisc;
    let spec = ChainShellSpec { cmd: a.cmd.clone(), server_cmd: a.server_cmd.clone(), node_cmd: a.node_cmd.clone() };
    let (code, summary) = chain::run(&cfg, &spec).map_err(|e| anyhow!("{e}"))?;
    eprintln!("leocc chain: {} hops", cfg.hops.len());
    for s in &summary {
        eprintln!("  {s}");
    }
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}
