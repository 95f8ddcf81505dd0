//! The emulator: two namespaces, two TUN devices, two engine threads, and the summary.
//!
//! Topology (addresses in the shared address space 100.64.0.0/10, as Starlink's CGNAT):
//!
//! ```text
//!  client ns                       leocc (this process)                         server ns
//!  sat0 100.64.0.2 ==TUN==> [satellite: data lane | ICMP lane] -> PoP 100.64.0.1
//!                                  -> [terrestrial] ==TUN==> gnd0 100.100.0.2
//! ```
//!
//! Each namespace routes everything (default route) into its TUN device, so any address
//! reaches the emulator; the emulator forwards by direction, not by address, except for the
//! PoP's address, which it answers itself. Dropping an `Emulator` stops the threads, closes
//! the devices (a non-persistent TUN vanishes with its descriptor) and deletes the namespaces,
//! also when a test panics.

use crate::clock::{self, EmuClock};
use crate::engine::{self, DirCounters, Direction, Hist, Io, PopResponder, Segment};
use crate::error::{EmuError, Result};
use crate::eventlog::EventLog;
use crate::flows::{FlowCount, FlowKey};
use crate::netns::{self, NetNs};
use crate::pcap::{self, SharedPcap};
use crate::stage::{percentile, DelaySource, QueueLimit, Stage, StageConfig};
use crate::tun::Tun;
use leocc_trace::qdisc::Qdisc;
use leocc_trace::{LinkModel, OPPORTUNITY_BYTES};
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The client's address (the satellite user, behind the dish).
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 2);
/// The PoP's address (Starlink's gateway is commonly 100.64.0.1).
pub const POP_ADDR: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 1);
/// The server's address, on the far side of the terrestrial segment.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(100, 100, 0, 2);
/// Prefix length of both namespaces' addresses: all of 100.64.0.0/10 is on the TUN link.
const PREFIX_LEN: u8 = 10;
/// Name of the TUN device in the client namespace.
pub const CLIENT_DEV: &str = "sat0";
/// Name of the TUN device in the server namespace.
pub const SERVER_DEV: &str = "gnd0";
/// Default queue limit, packets: what the LeoCC authors replay their traces with.
pub const DEFAULT_QUEUE_PACKETS: usize = 500;

/// Everything that defines an emulation.
#[derive(Clone)]
pub struct EmuConfig {
    /// Satellite downlink (server -> client).
    pub down: LinkModel,
    /// Satellite uplink (client -> server).
    pub up: LinkModel,
    /// Terrestrial segment capacity/delay/loss (same model both ways), if any.
    pub terrestrial: Option<LinkModel>,
    /// Terrestrial one-way delay in µs; overrides the terrestrial model's delay.
    pub terrestrial_delay_us: Option<u64>,
    /// The part of each satellite direction's delay (up, down), µs, beyond the PoP: echo
    /// requests to the PoP and their replies skip it ([`leocc_trace::Trace::beyond_pop_us`]),
    /// the data path crosses it all.
    pub beyond_pop_us: (u64, u64),
    /// Limit of every capacity-limited queue.
    pub queue: QueueLimit,
    /// Discipline of every capacity-limited queue (the satellite data lanes and a terrestrial
    /// segment with capacity); drop-tail by default.
    pub qdisc: Qdisc,
    /// Extra random loss on the satellite segment, both directions.
    pub loss: f64,
    /// Seed of every random decision.
    pub seed: u64,
    /// mahimahi event log of the satellite uplink.
    pub uplink_log: Option<PathBuf>,
    /// mahimahi event log of the satellite downlink.
    pub downlink_log: Option<PathBuf>,
    /// Directory for client.pcap and server.pcap.
    pub pcap_dir: Option<PathBuf>,
    /// Spin margin before deadlines, µs.
    pub spin_us: u64,
    /// Run the engine threads at real-time priority (SCHED_FIFO) when permitted, except
    /// while one is saturated (`clock::Priority`).
    pub realtime: bool,
    /// TUN offloads (`offload`): the kernel hands over TCP/UDP super-packets, one read each,
    /// which the engine cuts into packets. On by default; off reads packet by packet.
    pub offload: bool,
    /// Trace name for log headers.
    pub label: String,
}

impl EmuConfig {
    /// A configuration with defaults around the two satellite directions.
    pub fn new(up: LinkModel, down: LinkModel) -> EmuConfig {
        EmuConfig {
            down,
            up,
            terrestrial: None,
            terrestrial_delay_us: None,
            beyond_pop_us: (0, 0),
            queue: QueueLimit { packets: Some(DEFAULT_QUEUE_PACKETS), bytes: None },
            qdisc: Qdisc::DropTail,
            loss: 0.0,
            seed: 1,
            uplink_log: None,
            downlink_log: None,
            pcap_dir: None,
            spin_us: clock::DEFAULT_SPIN_US,
            realtime: true,
            offload: true,
            label: String::new(),
        }
    }

    fn satellite_data(&self, m: &LinkModel, seed: u64) -> StageConfig {
        StageConfig {
            capacity: Some(m.clone()),
            delay: DelaySource::Model(m.clone()),
            loss_model: Some(m.clone()),
            extra_loss: self.loss,
            drop_in_outage: false,
            queue: self.queue,
            qdisc: self.qdisc,
            seed,
        }
    }

    fn satellite_icmp(&self, m: &LinkModel, seed: u64) -> StageConfig {
        StageConfig { capacity: None, drop_in_outage: true, queue: QueueLimit::default(), ..self.satellite_data(m, seed) }
    }

    /// A lane of the PoP responder: the satellite's ICMP lane without the stretch beyond the PoP.
    fn pop_lane(&self, m: &LinkModel, seed: u64, beyond_us: u64) -> StageConfig {
        StageConfig { delay: DelaySource::ModelLess(m.clone(), beyond_us), ..self.satellite_icmp(m, seed) }
    }

    fn terrestrial_stage(&self, seed: u64) -> StageConfig {
        let delay = match (self.terrestrial_delay_us, &self.terrestrial) {
            (Some(d), _) => DelaySource::Constant(d),
            (None, Some(m)) => DelaySource::Model(m.clone()),
            (None, None) => DelaySource::Constant(0),
        };
        StageConfig {
            capacity: self.terrestrial.clone(),
            delay,
            loss_model: self.terrestrial.clone(),
            extra_loss: 0.0,
            drop_in_outage: false,
            queue: self.queue,
            qdisc: self.qdisc,
            seed,
        }
    }
}

/// Seed offsets that keep the stages' loss generators independent.
const SEED_STRIDE: u64 = 0x1000_0000;

/// Which namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client (satellite user) namespace.
    Client,
    /// The server namespace.
    Server,
}

/// A running emulator. Drop it (or call `stop`) to tear everything down.
pub struct Emulator {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Direction>>,
    clock: EmuClock,
    pcaps: Vec<SharedPcap>,
    client_tun: Tun,
    server_tun: Tun,
    server_ns: NetNs,
    client_ns: NetNs,
}

impl Emulator {
    /// Creates the namespaces and devices and starts the engine. On any error everything
    /// created so far is removed again.
    pub fn start(cfg: &EmuConfig) -> Result<Emulator> {
        let base = netns::unique_base();
        let client_ns = NetNs::create(&format!("{base}-c"))?;
        let server_ns = NetNs::create(&format!("{base}-s"))?;
        let client_tun = Tun::create_in(&client_ns, CLIENT_DEV, &format!("{CLIENT_ADDR}/{PREFIX_LEN}"), cfg.offload)?;
        let server_tun = Tun::create_in(&server_ns, SERVER_DEV, &format!("{SERVER_ADDR}/{PREFIX_LEN}"), cfg.offload)?;
        let (pcap_client, pcap_server) = match &cfg.pcap_dir {
            Some(dir) => (Some(pcap::create_shared(dir, "client.pcap")?), Some(pcap::create_shared(dir, "server.pcap")?)),
            None => (None, None),
        };
        let clock = EmuClock::start();
        let (mut up, mut down) = build_directions(cfg);
        attach_log(&mut up, &cfg.uplink_log, &format!("uplink [{}]", cfg.label), &clock)?;
        attach_log(&mut down, &cfg.downlink_log, &format!("downlink [{}]", cfg.label), &clock)?;
        let stop = Arc::new(AtomicBool::new(false));
        let pcaps: Vec<_> = [&pcap_client, &pcap_server].into_iter().flatten().cloned().collect();
        let up_io = Io { in_fd: client_tun.raw_fd(), out_fd: server_tun.raw_fd(), pcap_in: pcap_client.clone(), pcap_out: pcap_server.clone(), pop_addr: POP_ADDR, spin_us: cfg.spin_us, realtime: cfg.realtime, vnet: cfg.offload };
        let down_io = Io { in_fd: server_tun.raw_fd(), out_fd: client_tun.raw_fd(), pcap_in: pcap_server, pcap_out: pcap_client, pop_addr: POP_ADDR, spin_us: cfg.spin_us, realtime: cfg.realtime, vnet: cfg.offload };
        let mut threads = Vec::new();
        for (name, dir, io) in [("leocc-emu-up", up, up_io), ("leocc-emu-down", down, down_io)] {
            let (stop, clock) = (stop.clone(), clock);
            let h = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || engine::run(dir, io, clock, stop))
                .map_err(|e| EmuError::io("spawn engine thread", e))?;
            threads.push(h);
        }
        Ok(Emulator { stop, threads, clock, pcaps, client_tun, server_tun, server_ns, client_ns })
    }

    /// The emulation clock (time zero = trace time zero).
    pub fn clock(&self) -> EmuClock {
        self.clock
    }

    /// The namespace of one side.
    pub fn ns(&self, side: Side) -> &NetNs {
        match side {
            Side::Client => &self.client_ns,
            Side::Server => &self.server_ns,
        }
    }

    /// Names of the TUN devices (client, server).
    pub fn devices(&self) -> (&str, &str) {
        (self.client_tun.name(), self.server_tun.name())
    }

    /// A command that will run `program` inside the namespace of `side`, with LEOCC_SERVER,
    /// LEOCC_POP and LEOCC_CLIENT in its environment, and LEOCC_TRACE_T0_US: the wall clock
    /// (µs since the Unix epoch) at which the trace's time 0 was replayed, so that a program
    /// that knows the trace (a video player's oracle or schedule) can place itself on it.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("LEOCC_SERVER", SERVER_ADDR.to_string())
            .env("LEOCC_POP", POP_ADDR.to_string())
            .env("LEOCC_CLIENT", CLIENT_ADDR.to_string())
            .env("LEOCC_TRACE_T0_US", self.clock.unix_us_at(0).to_string());
        let fd = self.ns(side).raw_fd();
        // SAFETY: the closure runs in the forked child before exec and only calls setns(2),
        // which is async-signal-safe; `fd` stays open until exec (it is close-on-exec).
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

    /// Runs `f` on a new thread that has joined the namespace of `side` (for in-process
    /// traffic sources such as the recorder and the benchmark's blaster).
    pub fn spawn_in<T: Send + 'static>(&self, side: Side, name: &str, f: impl FnOnce() -> T + Send + 'static) -> Result<JoinHandle<Result<T>>> {
        let path = format!("{}/{}", netns::NETNS_RUN_DIR, self.ns(side).name());
        let file = std::fs::File::open(&path).map_err(|e| EmuError::io(format!("open {path}"), e))?;
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                use std::os::fd::AsRawFd;
                // SAFETY: setns on a namespace descriptor we hold; affects this thread only.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(EmuError::os(format!("setns into {path}")));
                }
                drop(file);
                Ok(f())
            })
            .map_err(|e| EmuError::io("spawn namespace thread", e))
    }

    /// Stops the engine, flushes logs and captures, removes namespaces and devices, and
    /// returns the statistics.
    pub fn stop(mut self) -> Summary {
        let dirs = self.join_threads();
        // The engine threads are joined, so these are the last references.
        pcap::finish_shared(std::mem::take(&mut self.pcaps), "leocc emu");
        let tun_drops = [(&self.client_ns, CLIENT_DEV), (&self.server_ns, SERVER_DEV)]
            .iter()
            .map(|(ns, dev)| device_tx_drops(ns, dev).unwrap_or(0))
            .collect::<Vec<_>>();
        let mut dirs: Vec<Direction> = dirs;
        for d in &mut dirs {
            for s in [&mut d.first.data, &mut d.second.data] {
                if let Some(l) = s.take_log() {
                    if let Err(e) = l.finish() {
                        eprintln!("leocc emu: warning: could not write the event log: {e}");
                    }
                }
            }
        }
        let summarize = |d: &Direction, kernel_drops: u64| DirSummary::from_direction(d, kernel_drops);
        Summary { uplink: summarize(&dirs[0], tun_drops[0]), downlink: summarize(&dirs[1], tun_drops[1]) }
    }

    fn join_threads(&mut self) -> Vec<Direction> {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).filter_map(|h| h.join().ok()).collect()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.join_threads();
    }
}

fn build_directions(cfg: &EmuConfig) -> (Direction, Direction) {
    let s = |k: u64| cfg.seed.wrapping_add(k * SEED_STRIDE);
    let mut up = Direction {
        name: "uplink",
        first: Segment { data: Stage::new(cfg.satellite_data(&cfg.up, s(1))), icmp: Some(Stage::new(cfg.satellite_icmp(&cfg.up, s(2)))) },
        second: Segment { data: Stage::new(cfg.terrestrial_stage(s(3))), icmp: None },
        satellite_is_first: true,
        pop: Some(PopResponder::new(cfg.pop_lane(&cfg.up, s(4), cfg.beyond_pop_us.0), cfg.pop_lane(&cfg.down, s(5), cfg.beyond_pop_us.1))),
        counters: DirCounters::default(),
    };
    let mut down = Direction {
        name: "downlink",
        first: Segment { data: Stage::new(cfg.terrestrial_stage(s(6))), icmp: None },
        second: Segment { data: Stage::new(cfg.satellite_data(&cfg.down, s(7))), icmp: Some(Stage::new(cfg.satellite_icmp(&cfg.down, s(8)))) },
        satellite_is_first: false,
        pop: None,
        counters: DirCounters::default(),
    };
    // The satellite data lane is the bottleneck whose per-flow departures the summary reports.
    up.first.data.count_flows();
    down.second.data.count_flows();
    (up, down)
}

fn attach_log(d: &mut Direction, path: &Option<PathBuf>, title: &str, clock: &EmuClock) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    let log = EventLog::create(path, title, clock.unix_us_at(0) / 1000).map_err(|e| EmuError::io(format!("create {}", path.display()), e))?;
    let sat = if d.satellite_is_first { &mut d.first.data } else { &mut d.second.data };
    sat.set_log(log);
    Ok(())
}

/// Packets the kernel dropped because the TUN device's queue was full (unmodelled loss),
/// read from /proc/thread-self/net/dev on a thread inside the namespace.
fn device_tx_drops(ns: &NetNs, dev: &str) -> Option<u64> {
    std::thread::scope(|s| {
        s.spawn(|| {
            ns.enter_current_thread().ok()?;
            let text = std::fs::read_to_string("/proc/thread-self/net/dev").ok()?;
            let line = text.lines().find(|l| l.trim_start().starts_with(&format!("{dev}:")))?;
            let fields: Vec<u64> = line.split(':').nth(1)?.split_whitespace().filter_map(|f| f.parse().ok()).collect();
            // Receive has 8 columns, then transmit: bytes packets errs drop ...
            fields.get(11).copied()
        })
        .join()
        .ok()
        .flatten()
    })
}

/// Statistics of one direction.
#[derive(Debug, Clone)]
pub struct DirSummary {
    /// "uplink" or "downlink".
    pub name: &'static str,
    /// Seconds the emulator ran.
    pub duration_s: f64,
    /// Seconds from the first to the last packet out of the satellite segment (0 when fewer
    /// than two passed): the period the rates below are over, setup time excluded.
    pub traffic_s: f64,
    /// Capacity the trace offered on the satellite segment during the traffic period, Mbit/s
    /// (over the whole run when nothing passed).
    pub offered_mbps: f64,
    /// Traffic that crossed the satellite segment, Mbit/s over the traffic period.
    pub delivered_mbps: f64,
    /// Delivered bytes ÷ capacity offered while packets were waiting (1.0 = none wasted).
    pub backlogged_utilisation: Option<f64>,
    /// Packets that arrived at the satellite data queue.
    pub arrived_pkts: u64,
    /// Packets that departed the satellite data queue (`crate::flows` says when a packet
    /// counts as departed).
    pub departed_pkts: u64,
    /// Their bytes.
    pub departed_bytes: u64,
    /// The departures per flow, most bytes first; they add up to `departed_pkts` and
    /// `departed_bytes`.
    pub flows: Vec<(FlowKey, FlowCount)>,
    /// Whether every flow's 100 ms bins reach its last departure (`FlowTable::bins_complete`).
    pub flow_bins_complete: bool,
    /// Queue drops (satellite and terrestrial): a full queue, or the discipline's (drop-front,
    /// CoDel).
    pub dropped_queue: u64,
    /// The queues' discipline.
    pub qdisc: Qdisc,
    /// Drops by random loss (trace and --loss).
    pub dropped_loss: u64,
    /// ICMP drops during outages.
    pub dropped_outage: u64,
    /// Packets lost without the model deciding so (device queue overflow, refused writes).
    pub unmodelled_drops: u64,
    /// Satellite queueing delay p50, p95, p99, ms.
    pub queue_delay_ms: [Option<f64>; 3],
    /// Release error p50 and p99, µs.
    pub release_error_us: [Option<u64>; 2],
    /// Release error histogram.
    pub release_error: Hist,
    /// Echo replies from the PoP (uplink only).
    pub pop_replies: u64,
    /// Packets written to the receiving device.
    pub written_pkts: u64,
    /// CPU use of the direction's thread, % of one core.
    pub cpu_percent: f64,
    /// Packets per read from the input device (above 1 when offloads hand over super-packets).
    pub packets_per_read: f64,
    /// Packets per write to the output device (above 1 when segments were merged).
    pub packets_per_write: f64,
}

impl DirSummary {
    fn from_direction(d: &Direction, kernel_drops: u64) -> DirSummary {
        let sat = &d.satellite().data.stats;
        let icmp = d.satellite().icmp.as_ref().map(|i| i.stats.clone()).unwrap_or_default();
        let terr = if d.satellite_is_first { &d.second.data.stats } else { &d.first.data.stats };
        let duration_s = (d.counters.end_us as f64 / 1e6).max(1e-6);
        let rates = sat.traffic_rates(duration_s);
        let mut qd = sat.queue_delay_us.clone();
        let ms = |v: Option<u32>| v.map(|x| f64::from(x) / 1000.0);
        let q = [ms(percentile(&mut qd, 50.0)), ms(percentile(&mut qd, 95.0)), ms(percentile(&mut qd, 99.0))];
        let pop = d.pop.as_ref();
        DirSummary {
            name: d.name,
            duration_s,
            traffic_s: rates.traffic_s,
            offered_mbps: rates.offered_mbps,
            delivered_mbps: rates.delivered_mbps,
            backlogged_utilisation: (sat.backlogged_opportunities > 0)
                .then(|| sat.departed_bytes as f64 / (sat.backlogged_opportunities * u64::from(OPPORTUNITY_BYTES)) as f64),
            arrived_pkts: sat.arrived_pkts,
            departed_pkts: sat.departed_pkts,
            departed_bytes: sat.departed_bytes,
            flows: sat.flows.as_ref().map(|f| f.sorted()).unwrap_or_default(),
            flow_bins_complete: sat.flows.as_ref().is_none_or(|f| f.bins_complete()),
            dropped_queue: sat.dropped_queue + terr.dropped_queue,
            qdisc: d.satellite().data.qdisc(),
            dropped_loss: sat.dropped_loss + terr.dropped_loss + icmp.dropped_loss,
            dropped_outage: icmp.dropped_outage + pop.map_or(0, |p| p.request.stats.dropped_outage + p.reply.stats.dropped_outage),
            unmodelled_drops: kernel_drops + d.counters.write_errors,
            queue_delay_ms: q,
            release_error_us: [d.counters.release_error.percentile_us(50.0), d.counters.release_error.percentile_us(99.0)],
            release_error: d.counters.release_error.clone(),
            pop_replies: pop.map_or(0, |p| p.answered),
            written_pkts: d.counters.written_pkts,
            cpu_percent: d.counters.cpu_us as f64 / 1e6 / duration_s * 100.0,
            packets_per_read: d.counters.read_pkts as f64 / d.counters.read_calls.max(1) as f64,
            packets_per_write: d.counters.written_pkts as f64 / d.counters.write_calls.max(1) as f64,
        }
    }
}

/// Flows the printed summary names per direction (the API has all of them).
const SUMMARY_FLOWS: usize = 3;

/// `12.34 MB`, `5.6 kB`, `40 B`: a control connection's bytes stay visible beside a bulk flow's.
fn human_bytes(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} B"),
        1_000..1_000_000 => format!("{:.1} kB", b as f64 / 1e3),
        _ => format!("{:.2} MB", b as f64 / 1e6),
    }
}

/// Statistics of a whole run.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Client -> server.
    pub uplink: DirSummary,
    /// Server -> client.
    pub downlink: DirSummary,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
        let optu = |v: Option<u64>| v.map_or("-".to_string(), |x| x.to_string());
        for d in [&self.uplink, &self.downlink] {
            writeln!(
                f,
                "{:8}: offered {:.2} Mbit/s, delivered {:.2} Mbit/s over {:.1} s of traffic{}; {} pkts in, drops: queue{} {} loss {} outage {} unmodelled {}",
                d.name,
                d.offered_mbps,
                d.delivered_mbps,
                d.traffic_s,
                d.backlogged_utilisation.map_or(String::new(), |u| format!(" ({:.1} % of capacity while backlogged)", u * 100.0)),
                d.arrived_pkts,
                if d.qdisc.is_default() { String::new() } else { format!(" ({})", d.qdisc) },
                d.dropped_queue,
                d.dropped_loss,
                d.dropped_outage,
                d.unmodelled_drops
            )?;
            writeln!(
                f,
                "{:8}  queueing delay p50/p95/p99 {}/{}/{} ms; release error p50/p99 {}/{} us; cpu {:.1} %{}",
                "",
                opt(d.queue_delay_ms[0]),
                opt(d.queue_delay_ms[1]),
                opt(d.queue_delay_ms[2]),
                optu(d.release_error_us[0]),
                optu(d.release_error_us[1]),
                d.cpu_percent,
                if d.pop_replies > 0 { format!("; PoP echo replies {}", d.pop_replies) } else { String::new() }
            )?;
            if !d.flows.is_empty() {
                let top: Vec<String> = d.flows.iter().take(SUMMARY_FLOWS).map(|(k, c)| format!("{k} {}", human_bytes(c.bytes))).collect();
                let rest = d.flows.len().saturating_sub(SUMMARY_FLOWS);
                writeln!(f, "{:8}  departed per flow: {}{}", "", top.join(", "), if rest > 0 { format!(" (+{rest} more)") } else { String::new() })?;
            }
        }
        Ok(())
    }
}
