//! A multi-hop emulated path: a chain of namespaces, one per node, joined by hops that each
//! replay their own trace. It is a composition of the emulator's parts, not a second engine:
//! every hop is two `engine::run` threads (one per direction) over a `stage::Stage` with the
//! hop's capacity, delay, loss and outages, between the TUN devices of two neighbouring
//! namespaces; so whatever makes the engine faster serves every hop.
//!
//! ```text
//!  node 0 (client)        node 1                 ...   node H (server)
//!  up0 10.15.0.1 ==hop 0==> dn0 10.15.0.2 | up0 ==hop 1==> ... ==hop H-1==> dn0 10.15.0.(H+1)
//! ```
//!
//! Node i has address 10.15.0.(i+1). Mid nodes forward IPv4 (ip_forward=1) with one host
//! route per other node, so kernel TCP crosses the whole chain end to end, and a program in a
//! mid node (a LEOTP mid-node) can talk to its neighbours. "Up" is towards the server.

use crate::clock::{self, EmuClock};
use crate::engine::{self, DirCounters, Direction, Io, Segment};
use crate::error::{EmuError, Result};
use crate::netns::{self, NetNs};
use crate::owned::{own_group, terminate_group};
use crate::pcap::{self, SharedPcap};
use crate::stage::{DelaySource, QueueLimit, Stage, StageConfig};
use leocc_trace::qdisc::Qdisc;
use crate::tun::Tun;
use leocc_trace::LinkModel;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Most hops: 16 hops are 32 engine threads, already more than a small machine spins well.
pub const MAX_HOPS: usize = 16;
/// The device towards the client.
pub const DOWN_DEV: &str = "dn0";
/// The device towards the server.
pub const UP_DEV: &str = "up0";
/// Seed offsets that keep every stage's loss generator independent.
const SEED_STRIDE: u64 = 0x1000_0000;

/// Address of node `i` (0 = client, hops = server).
pub fn node_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 15, 0, (i + 1) as u8)
}

/// One hop: the trace of each direction.
#[derive(Clone)]
pub struct HopConfig {
    /// Towards the server (client's uplink).
    pub up: LinkModel,
    /// Towards the client.
    pub down: LinkModel,
}

/// A chain.
#[derive(Clone)]
pub struct ChainConfig {
    /// The hops, client side first.
    pub hops: Vec<HopConfig>,
    /// Limit of every hop's queue.
    pub queue: QueueLimit,
    /// Discipline of every hop's queue (drop-tail by default).
    pub qdisc: Qdisc,
    /// Extra random loss on every hop, both directions.
    pub loss: f64,
    /// Seed of every loss decision.
    pub seed: u64,
    /// Spin margin of the engine threads, µs.
    pub spin_us: u64,
    /// Real-time priority for the 2 × hops engine threads (off by default: on a small
    /// machine that many SCHED_FIFO threads starve the endpoints).
    pub realtime: bool,
    /// Directory for `client.pcap` (every packet node 0 sends and receives, as the hop's
    /// engine reads or writes it) and `server.pcap` (node H's): both ends of the path on one
    /// clock, for one-way delays measured the same way whatever the protocol.
    pub pcap_dir: Option<PathBuf>,
    /// TUN offloads on every device (see `EmuConfig::offload`).
    pub offload: bool,
}

impl ChainConfig {
    /// Defaults around the hops.
    pub fn new(hops: Vec<HopConfig>) -> ChainConfig {
        ChainConfig { hops, queue: QueueLimit { packets: Some(crate::emulator::DEFAULT_QUEUE_PACKETS), bytes: None }, qdisc: Qdisc::DropTail, loss: 0.0, seed: 1, spin_us: clock::DEFAULT_SPIN_US, realtime: false, pcap_dir: None, offload: true }
    }

    fn stage(&self, m: &LinkModel, seed: u64) -> StageConfig {
        StageConfig { capacity: Some(m.clone()), delay: DelaySource::Model(m.clone()), loss_model: Some(m.clone()), extra_loss: self.loss, drop_in_outage: false, queue: self.queue, qdisc: self.qdisc, seed }
    }
}

struct Node {
    ns: NetNs,
    down: Option<Tun>,
    up: Option<Tun>,
}

/// A running chain; dropping it stops the threads and removes the namespaces.
pub struct Chain {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Direction>>,
    clock: EmuClock,
    nodes: Vec<Node>,
    pcaps: Vec<SharedPcap>,
}

/// Statistics of one hop direction.
#[derive(Debug, Clone)]
pub struct HopDirSummary {
    /// Hop index (0 = at the client).
    pub hop: usize,
    /// "up" or "down".
    pub dir: &'static str,
    /// Capacity offered, Mbit/s, over the traffic period (over the whole run when nothing
    /// passed): [`crate::stage::TrafficRates`].
    pub offered_mbps: f64,
    /// Traffic carried, Mbit/s, over the traffic period (first to last packet out of the hop),
    /// so that the time before the application started does not dilute it.
    pub delivered_mbps: f64,
    /// Length of the traffic period, s (0 when nothing passed).
    pub traffic_s: f64,
    /// Packets arrived at the hop's queue.
    pub arrived_pkts: u64,
    /// Drops by the full queue.
    pub dropped_queue: u64,
    /// Drops by random loss.
    pub dropped_loss: u64,
    /// CPU of the hop direction's thread, % of a core.
    pub cpu_percent: f64,
}

impl std::fmt::Display for HopDirSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "hop {} {:4}: offered {:7.2} Mbit/s, delivered {:7.2} Mbit/s over {:.1} s of traffic; {} pkts in, drops: queue {} loss {}; cpu {:.1} %",
            self.hop, self.dir, self.offered_mbps, self.delivered_mbps, self.traffic_s, self.arrived_pkts, self.dropped_queue, self.dropped_loss, self.cpu_percent
        )
    }
}

impl Chain {
    /// Creates the namespaces, devices and routes and starts 2 × hops engine threads. On an
    /// error everything created so far is removed again.
    pub fn start(cfg: &ChainConfig) -> Result<Chain> {
        let h = cfg.hops.len();
        if h == 0 || h > MAX_HOPS {
            return Err(EmuError::msg(format!("a chain has 1..={MAX_HOPS} hops, not {h}")));
        }
        let base = netns::unique_base();
        let mut nodes = Vec::new();
        for i in 0..=h {
            let ns = NetNs::create(&format!("{base}-n{i}"))?;
            let addr = format!("{}/32", node_addr(i));
            let (down, up) = if i == 0 {
                (None, Some(Tun::create_in(&ns, UP_DEV, &addr, cfg.offload)?))
            } else if i == h {
                (Some(Tun::create_in(&ns, DOWN_DEV, &addr, cfg.offload)?), None)
            } else {
                let d = Tun::create_unrouted_in(&ns, DOWN_DEV, &addr, cfg.offload)?;
                let u = Tun::create_unrouted_in(&ns, UP_DEV, "", cfg.offload)?;
                for j in (0..=h).filter(|&j| j != i) {
                    ns.ip(&["route", "add", &format!("{}/32", node_addr(j)), "dev", if j < i { DOWN_DEV } else { UP_DEV }])?;
                }
                enable_forwarding(&ns)?;
                (Some(d), Some(u))
            };
            nodes.push(Node { ns, down, up });
        }
        let (pcap_client, pcap_server) = match &cfg.pcap_dir {
            Some(dir) => (Some(pcap::create_shared(dir, "client.pcap")?), Some(pcap::create_shared(dir, "server.pcap")?)),
            None => (None, None),
        };
        let clock = EmuClock::start();
        let stop = Arc::new(AtomicBool::new(false));
        let pcaps = [&pcap_client, &pcap_server].into_iter().flatten().cloned().collect();
        let mut chain = Chain { stop: stop.clone(), threads: Vec::new(), clock, nodes, pcaps };
        for (i, hop) in cfg.hops.iter().enumerate() {
            let fd = |n: &Node, up: bool| if up { n.up.as_ref() } else { n.down.as_ref() }.map(|t| t.raw_fd()).expect("every hop end has its device");
            let (a, b) = (&chain.nodes[i], &chain.nodes[i + 1]);
            let seed = |k: u64| cfg.seed.wrapping_add((4 * i as u64 + k) * SEED_STRIDE);
            // The client's capture at hop 0, the server's at hop H-1 (the same hop if H = 1).
            let at_client = if i == 0 { pcap_client.clone() } else { None };
            let at_server = if i + 1 == h { pcap_server.clone() } else { None };
            let dirs = [
                ("up", hop_direction("up", cfg.stage(&hop.up, seed(1)), seed(2)), fd(a, true), fd(b, false), at_client.clone(), at_server.clone()),
                ("down", hop_direction("down", cfg.stage(&hop.down, seed(3)), seed(4)), fd(b, false), fd(a, true), at_server, at_client),
            ];
            for (name, dir, in_fd, out_fd, pcap_in, pcap_out) in dirs {
                let io = Io { in_fd, out_fd, pcap_in, pcap_out, pop_addr: Ipv4Addr::UNSPECIFIED, spin_us: cfg.spin_us, realtime: cfg.realtime, vnet: cfg.offload };
                let stop = stop.clone();
                let t = std::thread::Builder::new()
                    .name(format!("leocc-hop{i}-{name}"))
                    .spawn(move || engine::run(dir, io, clock, stop))
                    .map_err(|e| EmuError::io("spawn engine thread", e))?;
                chain.threads.push(t);
            }
        }
        Ok(chain)
    }

    /// Number of hops.
    pub fn hops(&self) -> usize {
        self.nodes.len() - 1
    }

    /// The emulation clock.
    pub fn clock(&self) -> EmuClock {
        self.clock
    }

    /// The namespace of node `i`.
    pub fn ns(&self, i: usize) -> &NetNs {
        &self.nodes[i].ns
    }

    /// A command running `program` in node `i`, with the chain's environment: LEOCC_HOPS,
    /// LEOCC_NODE (this node's index), LEOCC_ADDR (its address), LEOCC_UPSTREAM and
    /// LEOCC_DOWNSTREAM (its neighbours' addresses towards the server and the client; empty
    /// at the ends), LEOCC_CLIENT, LEOCC_SERVER and LEOCC_NODE_0 .. LEOCC_NODE_H.
    pub fn command(&self, i: usize, program: &str) -> Command {
        let h = self.hops();
        let mut c = Command::new(program);
        c.env("LEOCC_HOPS", h.to_string())
            .env("LEOCC_NODE", i.to_string())
            .env("LEOCC_ADDR", node_addr(i).to_string())
            .env("LEOCC_UPSTREAM", if i < h { node_addr(i + 1).to_string() } else { String::new() })
            .env("LEOCC_DOWNSTREAM", if i > 0 { node_addr(i - 1).to_string() } else { String::new() })
            .env("LEOCC_CLIENT", node_addr(0).to_string())
            .env("LEOCC_SERVER", node_addr(h).to_string());
        for j in 0..=h {
            c.env(format!("LEOCC_NODE_{j}"), node_addr(j).to_string());
        }
        let fd = self.nodes[i].ns.raw_fd();
        // SAFETY: runs in the forked child before exec; setns(2) is async-signal-safe and
        // `fd` stays open until exec.
        unsafe {
            c.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c
    }

    /// Stops the threads, completes the captures, removes namespaces and devices, returns
    /// per-hop statistics.
    pub fn stop(mut self) -> Vec<HopDirSummary> {
        let dirs = self.join();
        dirs.iter()
            .enumerate()
            .map(|(k, d)| {
                let s = &d.first.data.stats;
                let secs = (d.counters.end_us as f64 / 1e6).max(1e-6);
                let rates = s.traffic_rates(secs);
                HopDirSummary {
                    hop: k / 2,
                    dir: d.name,
                    offered_mbps: rates.offered_mbps,
                    delivered_mbps: rates.delivered_mbps,
                    traffic_s: rates.traffic_s,
                    arrived_pkts: s.arrived_pkts,
                    dropped_queue: s.dropped_queue,
                    dropped_loss: s.dropped_loss,
                    cpu_percent: d.counters.cpu_us as f64 / 1e6 / secs * 100.0,
                }
            })
            .collect()
    }

    fn join(&mut self) -> Vec<Direction> {
        self.stop.store(true, Ordering::Relaxed);
        let dirs = self.threads.drain(..).filter_map(|h| h.join().ok()).collect();
        // The engine threads are joined, so these are the last references.
        pcap::finish_shared(std::mem::take(&mut self.pcaps), "leocc chain");
        dirs
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        self.join();
    }
}

fn hop_direction(name: &'static str, stage: StageConfig, seed: u64) -> Direction {
    // The engine's second segment is a zero-delay pass-through: a hop is one stage.
    let pass = StageConfig { capacity: None, delay: DelaySource::Constant(0), loss_model: None, extra_loss: 0.0, drop_in_outage: false, queue: QueueLimit::default(), qdisc: Qdisc::DropTail, seed };
    Direction {
        name,
        first: Segment { data: Stage::new(stage), icmp: None },
        second: Segment { data: Stage::new(pass), icmp: None },
        satellite_is_first: true,
        pop: None,
        counters: DirCounters::default(),
    }
}

/// ip_forward on, reverse-path filtering off (packets of one flow enter and leave through
/// different devices), in `ns`. Net sysctls belong to the namespace of the opening thread.
fn enable_forwarding(ns: &NetNs) -> Result<()> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<()> {
            ns.enter_current_thread()?;
            let set = |p: &str, v: &str| std::fs::write(p, v).map_err(|e| EmuError::io(format!("write {p} in {}", ns.name()), e));
            set("/proc/sys/net/ipv4/ip_forward", "1")?;
            for dev in ["all", "default", DOWN_DEV, UP_DEV] {
                let _ = set(&format!("/proc/sys/net/ipv4/conf/{dev}/rp_filter"), "0");
            }
            Ok(())
        })
        .join()
        .map_err(|_| EmuError::msg("forwarding setup thread panicked"))?
    })
}

/// What runs where.
#[derive(Debug, Clone, Default)]
pub struct ChainShellSpec {
    /// CMD and its arguments, in the client node.
    pub cmd: Vec<String>,
    /// `sh -c` line in the server node.
    pub server_cmd: Option<String>,
    /// `sh -c` line in every mid node (1..H−1), e.g. a LEOTP mid-node.
    pub node_cmd: Option<String>,
}

/// Runs the commands on a chain, like `shell::run`: node commands and the server command
/// start first (each waited for until it has a socket), then CMD; when CMD exits everything
/// is terminated and the chain removed. Returns CMD's exit code and the hop statistics.
pub fn run(cfg: &ChainConfig, spec: &ChainShellSpec) -> Result<(i32, Vec<HopDirSummary>)> {
    crate::shell::check(&crate::shell::ShellSpec { cmd: spec.cmd.clone(), server_cmd: spec.server_cmd.clone() })?;
    if let Some(nc) = &spec.node_cmd {
        let word = nc.split_whitespace().next().ok_or_else(|| EmuError::msg("--node-cmd is empty"))?;
        crate::shell::resolve_program(word).map_err(|e| EmuError::msg(format!("--node-cmd: {e}")))?;
    }
    crate::shell::install_signal_handlers();
    let chain = Chain::start(cfg)?;
    let mut background: Vec<crate::shell::Background> = Vec::new();
    let mut spawn_sh = |node: usize, line: &str, what: &str| -> Result<()> {
        let mut c = chain.command(node, "sh");
        own_group(c.arg("-c").arg(line));
        let b = crate::shell::Background::spawn(c, format!("{what} {line:?} in node {node}"))?;
        // Kept before the wait, so that a failed one is terminated with the others.
        background.push(b);
        background.last_mut().expect("just pushed").wait_until_listening()
    };
    let started = (|| -> Result<()> {
        if let Some(sc) = &spec.server_cmd {
            spawn_sh(chain.hops(), sc, "--server-cmd")?;
        }
        if let Some(nc) = &spec.node_cmd {
            for i in (1..chain.hops()).rev() {
                spawn_sh(i, nc, "--node-cmd")?;
            }
        }
        Ok(())
    })();
    let code = started.and_then(|()| {
        let mut c = chain.command(0, &spec.cmd[0]);
        own_group(c.args(&spec.cmd[1..]));
        let mut child = c.spawn().map_err(|e| EmuError::io(format!("start {}", spec.cmd[0]), e))?;
        let code = crate::shell::supervise(&mut child, &mut background);
        terminate_group(&mut child);
        Ok(code)
    });
    for b in background.iter_mut() {
        terminate_group(&mut b.child);
    }
    let summary = chain.stop();
    Ok((code?, summary))
}
