//! The emulator engine of `leocc eval`: the flows of one run as real kernel TCP (iperf3 with
//! `-C cc`) through `leocc-emu`'s trace-driven link, measured into the same JSON fields the
//! simulator reports.
//!
//! Topology and roles. Data goes in the trace's measured direction: for a downlink trace the
//! senders are in the server namespace and the receivers (iperf3 -s) in the client namespace
//! behind the satellite segment; for an uplink trace the other way round. For LeoCC flows the
//! LeoCC is (re)loaded from this binary before each run, so the kernel runs the build being
//! measured. The reconfiguration detector (`leocc probe`) runs in the client namespace against the emulated
//! PoP and publishes to the kernel's pinned signal map; both namespaces share one kernel, so
//! this is LeoCC with a detector on its host (the remote TCP-option path is measured apart).
//!
//! What is measured, and how it differs from the simulator (the report's sim/emu table reads
//! in this light):
//! - throughput: the bytes of the flow's data connection that departed the emulator's
//!   bottleneck (the satellite data queue of the data direction, counted per 5-tuple by
//!   `leocc_emu::flows`: a packet counts when its last byte is served by a delivery opportunity,
//!   after every queue, random-loss and outage drop was decided), IP packets on the wire as the
//!   trace's 1500-byte opportunities carry them, over the flow's configured time. This is what
//!   the simulator counts (every data packet that reached the receiver, retransmissions
//!   included, at 1500 bytes), except that the simulator divides by the time from the first
//!   to the last arrival, and the connection's few packets without data (handshake, FIN) ride
//!   along here. The data connection is the largest one to or from the flow's port:
//!   iperf3's control connection is not counted. A retransmission counts each time it crosses
//!   the bottleneck; one dropped again never does;
//! - utilisation: those bytes over what the trace offered from the connection's first to its
//!   last departure (both included), in emulation time, as the simulator's "served" span; so
//!   at most 1 up to one packet's carry-over at the span's start. The simulator counts only
//!   unique packets there; a run with spurious retransmissions shows higher here;
//! - goodput: what the receiver got (iperf3's `sum_received`, `leocc quic get`'s), over the
//!   flow's configured time;
//! - time: trace time, as the simulator's. A flow's data starts (`data_start_s`) one base RTT
//!   after its connection's first packet crossed the bottleneck (its SYN, or QUIC's first
//!   datagram), which is iperf3's time zero; the tools' setup (process start, iperf3's
//!   control connection) puts that later than the flow's configured start (0.85 s on a 128 ms
//!   path), and `leocc bench fidelity` starts the simulator's flows there;
//! - time series (`bottleneck_mbps`): the connection's departures per 100 ms bin over
//!   iperf3's intervals; `throughput_mbps` there stays iperf3's own interval rate;
//! - RTT: the sender's smoothed RTT (tcpi_rtt) every 100 ms from iperf3's intervals, not
//!   per-packet samples; percentiles are over those 100 ms samples;
//! - one-way delay: each RTT sample minus the trace's reverse-path base delay at that moment;
//! - queueing delay: RTT sample minus the trace's base RTT at that moment;
//! - loss: the emulator's drops (queue and random) over packets that entered the data
//!   direction; retransmissions: iperf3's retransmit count over segments sent;
//! - model state (`pacing_mbps`, `state`, LeoCC flows only): the kernel LeoCC's own view of
//!   the flow, read from its stats map every 50 ms (`kernel_state`), the last read at or
//!   before each row's time, with the simulator's names.

use crate::kernel_state;
use anyhow::{anyhow, bail, Context, Result};
use leocc_emu::flows::{FlowCount, FlowKey};
use leocc_emu::owned::die_with_parent;
use leocc_emu::{EmuConfig, Emulator, QueueLimit, Side};
use leocc_base::{metrics, signal};
use leocc_trace::{Dir, LinkModel, Trace};
use leocc_base::record::{FlowRecord, RunRecord};
use serde_json::Value;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// First iperf3 port; flow i uses BASE_PORT + i.
const BASE_PORT: u16 = 5301;
/// iperf3 reporting interval, s: one RTT and throughput sample per 100 ms, like the simulator.
const INTERVAL_S: f64 = 0.1;
/// Payload bytes per segment (1500-byte packets with timestamps), to turn iperf3's bytes into
/// segments.
const MSS_BYTES: f64 = 1448.0;
/// Grace for iperf3 to connect and exit around its own timing, s.
const SLACK_S: f64 = 15.0;

/// One emulator run, as `leocc emu-run` receives it.
pub struct EmuRun {
    pub trace: PathBuf,
    pub flows: String,
    pub duration_s: f64,
    pub seed: u64,
    /// Queue limit (packets, bytes or time at the data direction's mean capacity); None =
    /// the emulator's default, 500 packets.
    pub queue: Option<leocc_sim::QueueLimit>,
    /// Discipline of the emulator's queues.
    pub qdisc: leocc_sim::Qdisc,
    pub loss: Option<f64>,
    pub timeseries: Option<PathBuf>,
    /// The `leocc` binary, run inside the namespaces (the detector daemon, QUIC endpoints);
    /// LeoCC itself is loaded into the kernel through `leocc_kernel`, this build's object.
    pub leocc_exe: PathBuf,
    /// `leocc.NAME=VALUE` settings for this run's LeoCC flows (a sweep's); the kernel's other
    /// controls take none.
    pub params: Vec<String>,
    /// The senders' send buffer, bytes: `net.ipv4.tcp_wmem`'s max in the sending namespace
    /// (per network namespace since Linux 4.15); None keeps the kernel's default (4 MiB).
    pub sndbuf_bytes: Option<u64>,
}

/// Sets `tcp_wmem`'s max (the send buffer a bulk sender grows to) in `side`'s namespace,
/// keeping the kernel's minimum and default.
fn set_sndbuf(emu: &Emulator, side: Side, bytes: u64) -> Result<()> {
    let st = emu
        .command(side, "sysctl")
        .args(["-qw", &format!("net.ipv4.tcp_wmem=4096 16384 {bytes}")])
        .status()
        .context("running sysctl")?;
    if !st.success() {
        bail!("sysctl net.ipv4.tcp_wmem in the sender's namespace failed ({st})");
    }
    Ok(())
}

/// Checks what any emulator run needs of this host, without changing anything: root and
/// iperf3. `leocc eval --dry-run --engine emu` runs it after checking the controls
/// ([`check_ccs`](crate::matrix::check_ccs)); every run's [`preflight`] runs both.
pub fn check_host() -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the emulator engine needs root (network namespaces and TUN)");
    }
    which("iperf3").context("iperf3 not found (scripts/setup.sh installs it)")?;
    Ok(())
}

/// Checks what the run needs before any namespace exists (the host, and that each control runs
/// in the kernel or is a QUIC control); loads this build's LeoCC into the kernel when a control
/// needs it.
pub(crate) fn preflight(ccs: &[String]) -> Result<()> {
    check_host()?;
    crate::matrix::check_ccs(crate::matrix::Engine::Emu, ccs).map_err(|e| anyhow!(e))?;
    if ccs.iter().any(|c| c == "leocc") {
        // Always this build's LeoCC: a leocc left loaded by another build would be measured
        // under this build's name otherwise. Unloading with live flows is safe.
        if leocc_kernel::loader::is_registered() {
            leocc_kernel::unload()
                .map_err(|e| anyhow!("unloading the registered leocc before loading this build's: {e}"))?;
        }
        leocc_kernel::load(&leocc_kernel::LoadOptions::default())
            .map_err(|e| anyhow!("loading LeoCC into the kernel: {e}"))?;
    }
    Ok(())
}

/// Sets `settings` (`leocc.NAME=VALUE`, parsed as `leocc kernel params --set` parses them) for
/// the new LeoCC flows of this run; the guard returns the kernel to the defaults when the run
/// ends, on an error as well (and the next run's preflight reloads LeoCC, which resets them in
/// any case).
fn kernel_params(
    settings: &[String],
    ccs: &[String],
) -> Result<Option<leocc_kernel::params::ParamsGuard>> {
    if settings.is_empty() {
        return Ok(None);
    }
    if !ccs.iter().any(|c| c == "leocc") {
        bail!(
            "parameters {} given, but no LeoCC flow runs",
            settings.join(" ")
        );
    }
    let p = leocc_kernel::params::apply_settings(leocc_kernel::params::Params::default(), settings)
        .map_err(|e| anyhow!("--param {e}"))?;
    Ok(Some(leocc_kernel::params::ParamsGuard::set(&p)?))
}

/// Set by SIGINT/SIGTERM/SIGHUP: the run stops its flows, removes its namespaces and fails,
/// instead of dying with the namespaces left behind.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

fn install_interrupt_handler() {
    // The handler only stores into an atomic, which is async-signal-safe.
    signal::install(
        &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP],
        signal::Handler::Plain(on_interrupt),
        true,
    );
}

fn which(program: &str) -> Result<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| anyhow!("{program} not in PATH"))
}

struct Flow {
    cc: String,
    start_s: f64,
    stop_s: f64,
    port: u16,
}

/// Runs the flows and returns the run's JSON record (the simulator's fields).
pub fn run(r: &EmuRun) -> Result<RunRecord> {
    let trace = Trace::load(&r.trace).map_err(|e| anyhow!("{e}"))?;
    let specs = crate::emu_quic::parse_flows(&r.flows, "cubic", (r.duration_s * 1e6) as u64)
        .map_err(|e| anyhow!(e))?;
    let flows: Vec<Flow> = specs
        .iter()
        .enumerate()
        .map(|(i, f)| Flow {
            cc: f.cc.clone(),
            start_s: f.start_us as f64 / 1e6,
            stop_s: f.stop_us as f64 / 1e6,
            port: BASE_PORT + i as u16,
        })
        .collect();
    let ccs: Vec<String> = flows.iter().map(|f| f.cc.clone()).collect();
    // Kernel tests load and unload the global "leocc"; a LeoCC run holds their lock so that it
    // is not unloaded under its flows.
    let _kernel_lock = if ccs.iter().any(|c| c == "leocc") {
        Some(leocc_kernel::lab::GlobalLock::acquire().context("taking the kernel lab lock")?)
    } else {
        None
    };
    preflight(&ccs)?;
    let _params = kernel_params(&r.params, &ccs)?;

    let data_dir = trace.meta.direction.primary();
    let (fwd, back) = (
        trace.link(data_dir),
        trace.link(if data_dir == Dir::Up {
            Dir::Down
        } else {
            Dir::Up
        }),
    );
    let mut cfg = EmuConfig::new(trace.link(Dir::Up), trace.link(Dir::Down));
    cfg.beyond_pop_us = trace.beyond_pop_us();
    cfg.terrestrial = trace.terrestrial();
    cfg.seed = r.seed;
    cfg.loss = r.loss.unwrap_or(0.0);
    let queue = r
        .queue
        .unwrap_or(leocc_sim::QueueLimit::Packets(
            leocc_emu::emulator::DEFAULT_QUEUE_PACKETS as u64,
        ))
        .resolve_at(fwd.mean_capacity_bps(0, fwd.period_us().max(1)))
        .map_err(|e| anyhow!(e))?;
    cfg.queue = emu_queue(&queue);
    cfg.qdisc = r.qdisc;
    cfg.label = trace.meta.name.clone();
    let (send_side, recv_side, recv_addr) = match data_dir {
        Dir::Down => (Side::Server, Side::Client, leocc_emu::CLIENT_ADDR),
        Dir::Up => (Side::Client, Side::Server, leocc_emu::SERVER_ADDR),
    };
    // QUIC flows: the sender is the server; its certificate and the detector's subscription
    // socket live in a directory of this run.
    let send_addr = if recv_addr == leocc_emu::CLIENT_ADDR {
        leocc_emu::SERVER_ADDR
    } else {
        leocc_emu::CLIENT_ADDR
    };
    let quic_dir = std::env::temp_dir().join(format!("leocc-emu-quic-{}", std::process::id()));
    let any_quic = ccs.iter().any(|c| crate::emu_quic::quic_name(c).is_some());
    if any_quic {
        std::fs::create_dir_all(&quic_dir)
            .with_context(|| format!("creating {}", quic_dir.display()))?;
    }
    let events_socket = quic_dir.join(leocc_probe::subscribe::SOCKET_NAME);

    // A run killed outright (SIGKILL, or Ctrl-C on the whole eval) cannot remove its
    // namespaces; the next run does.
    for ns in leocc_emu::netns::leftover_namespaces() {
        if leocc_emu::netns::remove(&ns).is_ok() {
            eprintln!("emu-run: removed {ns}, left by a run that was killed");
        }
    }
    install_interrupt_handler();
    let emu = Emulator::start(&cfg).map_err(|e| anyhow!("{e}"))?;
    if let Some(b) = r.sndbuf_bytes {
        set_sndbuf(&emu, send_side, b)?;
    }
    let mut children: Vec<Child> = Vec::new();
    let kernel_leocc = ccs.iter().any(|c| c == "leocc");
    let mut sampler = None;
    let result = (|| -> Result<Vec<Value>> {
        for f in &flows {
            if crate::emu_quic::quic_name(&f.cc).is_some() {
                let mut cmd = emu.command(send_side, &r.leocc_exe.to_string_lossy());
                let cert = quic_dir.join(format!("{}.der", f.port));
                crate::emu_quic::serve_args(
                    &mut cmd,
                    &f.cc,
                    &format!("{send_addr}:{}", f.port),
                    &cert,
                    &events_socket,
                    f.stop_s - f.start_s,
                );
                let c = die_with_parent(&mut cmd)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .context("starting leocc quic serve")?;
                children.push(c);
                continue;
            }
            let c = die_with_parent(&mut emu.command(recv_side, "iperf3"))
                .args(["-s", "-1", "-p", &f.port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting iperf3 -s")?;
            children.push(c);
        }
        let quic_leocc = ccs.iter().any(|c| c == "quic:leocc");
        if kernel_leocc || quic_leocc {
            let mut cmd = emu.command(Side::Client, &r.leocc_exe.to_string_lossy());
            if quic_leocc {
                // A private run directory: its events.sock is what the QUIC server subscribes to.
                cmd.arg("probe").arg("--run-dir").arg(&quic_dir);
                if !kernel_leocc {
                    cmd.arg("--no-kernel");
                }
            } else {
                cmd.arg("probe");
            }
            let c = die_with_parent(&mut cmd)
                .args([
                    "--pop",
                    &leocc_emu::POP_ADDR.to_string(),
                    "--duration",
                    &format!("{}", r.duration_s + 2.0),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting leocc probe")?;
            children.push(c);
        }
        std::thread::sleep(Duration::from_millis(300));
        if kernel_leocc {
            let ports = flows.iter().filter(|f| f.cc == "leocc").map(|f| f.port).collect();
            sampler = Some(kernel_state::Sampler::start(emu.clock(), recv_addr, ports));
        }
        let t0 = Instant::now();
        let handles: Vec<_> = flows
            .iter()
            .map(|f| {
                let quic = crate::emu_quic::quic_name(&f.cc).is_some();
                let mut cmd = if quic {
                    emu.command(recv_side, &r.leocc_exe.to_string_lossy())
                } else {
                    emu.command(send_side, "iperf3")
                };
                // Spawned on the thread below, which waits for it: the death signal holds.
                die_with_parent(&mut cmd);
                if quic {
                    let cert = quic_dir.join(format!("{}.der", f.port));
                    crate::emu_quic::get_args(
                        &mut cmd,
                        &format!("{send_addr}:{}", f.port),
                        &cert,
                        f.stop_s - f.start_s,
                        INTERVAL_S,
                    );
                } else {
                    cmd.args([
                        "-c",
                        &recv_addr.to_string(),
                        "-p",
                        &f.port.to_string(),
                        "-C",
                        &f.cc,
                        "-t",
                        &format!("{}", f.stop_s - f.start_s),
                        "-i",
                        &INTERVAL_S.to_string(),
                        "-J",
                    ]);
                }
                let start = f.start_s;
                std::thread::spawn(move || -> Result<Value> {
                    let wait = Duration::from_secs_f64(start).saturating_sub(t0.elapsed());
                    std::thread::sleep(wait);
                    let out = cmd
                        .stderr(Stdio::piped())
                        .output()
                        .context("running iperf3 -c")?;
                    let v: Value = serde_json::from_slice(&out.stdout).with_context(|| {
                        format!(
                            "parsing the flow's JSON output ({})",
                            String::from_utf8_lossy(&out.stderr)
                                .lines()
                                .last()
                                .unwrap_or("")
                        )
                    })?;
                    if let Some(e) = v.get("error").and_then(Value::as_str) {
                        bail!("iperf3: {e}");
                    }
                    Ok(v)
                })
            })
            .collect();
        let deadline = r.duration_s + SLACK_S;
        let mut outs = Vec::new();
        for h in handles {
            while !h.is_finished() {
                if INTERRUPTED.load(Ordering::Relaxed) {
                    bail!("interrupted");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            outs.push(h.join().map_err(|_| anyhow!("iperf3 thread panicked"))??);
        }
        if t0.elapsed().as_secs_f64() > deadline {
            eprintln!(
                "emu-run: flows took {:.1} s for a {:.1} s run",
                t0.elapsed().as_secs_f64(),
                r.duration_s
            );
        }
        Ok(outs)
    })();
    let states = sampler.map(kernel_state::Sampler::finish).unwrap_or_default();
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    // iperf3 clients still running (an interrupted run) lose their path with the emulator and
    // exit on their own; the namespaces go with `stop`.
    let summary = emu.stop();
    if any_quic {
        let _ = std::fs::remove_dir_all(&quic_dir);
    }
    let outs = result?;

    let data = match data_dir {
        Dir::Down => &summary.downlink,
        Dir::Up => &summary.uplink,
    };
    let loss_rate = if data.arrived_pkts > 0 {
        (data.dropped_queue + data.dropped_loss) as f64 / data.arrived_pkts as f64
    } else {
        0.0
    };
    if !data.flow_bins_complete {
        eprintln!("emu-run: the bottleneck's per-flow bins ran out; bottleneck_mbps is left empty where they stop");
    }
    let bneck = Bottleneck {
        send: send_addr,
        recv: recv_addr,
        flows: &data.flows,
    };
    if kernel_leocc && states.is_empty() {
        eprintln!("emu-run: no LeoCC state could be read from the kernel's stats map ({} failed reads); the time series' state column stays empty", states.failed_reads);
    }
    let link = Link {
        fwd: &fwd,
        back: &back,
        queue: &queue,
        loss_rate,
        bottleneck: &bneck,
        departed_bytes: data.departed_bytes,
    };
    measure(&flows, &outs, &link, r, &states)
}

/// What the emulator measured of the data direction's bottleneck.
struct Link<'a> {
    fwd: &'a LinkModel,
    back: &'a LinkModel,
    queue: &'a leocc_sim::ResolvedQueue,
    /// Drops / arrivals at the bottleneck.
    loss_rate: f64,
    bottleneck: &'a Bottleneck<'a>,
    /// Everything that left the bottleneck in the data direction, the flows' connections and
    /// whatever else crossed (iperf3's control connections): what the flows' counts add up to.
    departed_bytes: u64,
}

/// The emulator's form of a resolved queue limit: packets stay packets, the rest is bytes.
pub fn emu_queue(q: &leocc_sim::ResolvedQueue) -> QueueLimit {
    match q.limit {
        leocc_sim::QueueLimit::Packets(n) => QueueLimit {
            packets: Some(n as usize),
            bytes: None,
        },
        _ => QueueLimit {
            packets: None,
            bytes: Some(q.bytes as usize),
        },
    }
}

/// What left the data direction's bottleneck, per flow, and the addresses of the run's two ends.
struct Bottleneck<'a> {
    send: Ipv4Addr,
    recv: Ipv4Addr,
    flows: &'a [(FlowKey, FlowCount)],
}

impl Bottleneck<'_> {
    /// The data connection of the flow on `port`: the 5-tuple from the sender to the receiver
    /// with that port (iperf3's server port, or the QUIC server's) that got the most bytes
    /// through, which leaves out iperf3's control connection to the same port.
    fn connection(&self, port: u16) -> Option<&FlowCount> {
        // The table comes sorted by bytes, most first.
        self.flows.iter().find_map(|(k, c)| match *k {
            FlowKey::Ipv4 { src, dst, .. }
                if src == self.send && dst == self.recv && k.has_port(port) =>
            {
                Some(c)
            }
            _ => None,
        })
    }
}

/// Bits the link offered over the span of departures [first_us, last_us], both included.
fn offered_bits(link: &LinkModel, first_us: u64, last_us: u64) -> f64 {
    let end = last_us + 1;
    link.mean_capacity_bps(first_us, end) * (end - first_us) as f64 / 1e6
}

/// Turns the iperf3 outputs and the bottleneck's counts into the record and writes the time
/// series.
fn measure(
    flows: &[Flow],
    outs: &[Value],
    link: &Link,
    r: &EmuRun,
    states: &kernel_state::States,
) -> Result<RunRecord> {
    let Link {
        fwd,
        back,
        queue,
        loss_rate,
        bottleneck: bneck,
        departed_bytes,
    } = *link;
    let mut all_rtt = Vec::new();
    let mut all_owd = Vec::new();
    let mut all_q = Vec::new();
    let mut flow_recs = Vec::new();
    let mut ts = String::from("t_s,flow,flow_cc,throughput_mbps,rtt_ms,cwnd,bottleneck_mbps,pacing_mbps,state\n");
    let (mut sent_segs, mut retrans, mut total_bytes, mut total_goodput_bytes) =
        (0.0, 0.0, 0.0, 0.0);
    let mut served: Option<(u64, u64)> = None;
    for (i, (f, out)) in flows.iter().zip(outs).enumerate() {
        let conn = bneck.connection(f.port).ok_or_else(|| {
            anyhow!(
                "flow {i} ({}, port {}): no packet of it left the bottleneck ({} flows counted there)",
                f.cc,
                f.port,
                bneck.flows.len()
            )
        })?;
        let end = &out["end"];
        // iperf3's time zero, in trace time: the handshake's base RTT after the connection's
        // first packet crossed the bottleneck (see "time" in the module doc).
        let data_start_us = conn.first_us + fwd.delay_us(conn.first_us) + back.delay_us(conn.first_us);
        let recv_bytes = end["sum_received"]["bytes"].as_f64().unwrap_or(0.0);
        let sent_bytes = end["sum_sent"]["bytes"].as_f64().unwrap_or(0.0);
        let rtx = end["sum_sent"]["retransmits"].as_f64().unwrap_or(0.0);
        let (mut rtts, mut owds, mut qs) = (Vec::new(), Vec::new(), Vec::new());
        for iv in out["intervals"].as_array().map_or(&[][..], Vec::as_slice) {
            let Some(s) = iv["streams"].get(0) else {
                continue;
            };
            let t_start = s["start"].as_f64().unwrap_or(0.0);
            let iv_end = s["end"].as_f64().unwrap_or(0.0);
            let t_end = data_start_us as f64 / 1e6 + iv_end;
            let rtt_ms = s["rtt"].as_f64().unwrap_or(0.0) / 1000.0;
            let mbps = s["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6;
            let (a, b) = (
                data_start_us + (t_start * 1e6) as u64,
                data_start_us + (iv_end * 1e6) as u64,
            );
            let bneck_mbps = match conn.bytes_between(a, b) {
                Some(bytes) if b > a => format!("{:.3}", bytes * 8.0 / (b - a) as f64),
                _ => String::new(),
            };
            let (pacing, state) = states
                .at(f.port, (t_end * 1e6) as u64)
                .map(kernel_state::cells)
                .unwrap_or_default();
            let _ = std::fmt::Write::write_fmt(
                &mut ts,
                format_args!(
                    "{t_end:.3},{i},{},{mbps:.3},{rtt_ms:.3},{},{bneck_mbps},{pacing},{state}\n",
                    f.cc,
                    s["snd_cwnd"].as_f64().unwrap_or(0.0) / MSS_BYTES
                ),
            );
            if rtt_ms > 0.0 {
                let t_us = (t_end * 1e6) as u64;
                let base_back = back.delay_us(t_us) as f64 / 1000.0;
                let base_rtt = base_back + fwd.delay_us(t_us) as f64 / 1000.0;
                rtts.push(rtt_ms);
                owds.push((rtt_ms - base_back).max(0.0));
                qs.push((rtt_ms - base_rtt).max(0.0));
            }
        }
        let active_s = f.stop_s - f.start_s;
        let wire_bytes = conn.bytes as f64;
        let sent_pkts = crate::emu_quic::sent_packets(out).unwrap_or(sent_bytes / MSS_BYTES);
        let thr = wire_bytes * 8.0 / active_s / 1e6;
        let offered = offered_bits(fwd, conn.first_us, conn.last_us);
        flow_recs.push(FlowRecord {
            flow: i,
            cc: f.cc.clone(),
            start_s: f.start_s,
            stop_s: f.stop_s,
            data_start_s: Some(data_start_us as f64 / 1e6),
            throughput_mbps: thr,
            goodput_mbps: recv_bytes * 8.0 / active_s / 1e6,
            utilization: if offered > 0.0 { wire_bytes * 8.0 / offered } else { 0.0 },
            bottleneck_bytes: Some(conn.bytes),
            bottleneck_pkts: Some(conn.pkts),
            rtt_avg_ms: mean(&rtts),
            rtt_p50_ms: pct(&rtts, 0.5),
            rtt_p95_ms: pct(&rtts, 0.95),
            rtt_p99_ms: pct(&rtts, 0.99),
            owd_p95_ms: pct(&owds, 0.95),
            qdelay_avg_ms: mean(&qs),
            qdelay_p95_ms: pct(&qs, 0.95),
            loss_rate: None,
            retrans_rate: if sent_pkts > 0.0 { rtx / sent_pkts } else { 0.0 },
            packets_sent: None,
            rtos: None,
            cpu_s_per_mb: crate::emu_quic::cpu_s_per_mb(out),
        });
        sent_segs += sent_pkts;
        retrans += rtx;
        total_bytes += wire_bytes;
        total_goodput_bytes += recv_bytes;
        served = Some(served.map_or((conn.first_us, conn.last_us), |(x, y)| {
            (x.min(conn.first_us), y.max(conn.last_us))
        }));
        all_rtt.extend(rtts);
        all_owd.extend(owds);
        all_q.extend(qs);
    }
    let span_s = flows.iter().map(|f| f.stop_s).fold(0.0, f64::max)
        - flows.iter().map(|f| f.start_s).fold(f64::MAX, f64::min);
    let thr = total_bytes * 8.0 / span_s / 1e6;
    let offered = served.map_or(0.0, |(a, b)| offered_bits(fwd, a, b));
    let per: Vec<f64> = flow_recs.iter().map(|f| f.throughput_mbps).collect();
    if let Some(p) = &r.timeseries {
        leocc_base::write_atomic(p, ts.as_bytes())?;
    }
    let cc: Vec<&str> = flows.iter().map(|f| f.cc.as_str()).collect();
    Ok(RunRecord {
        engine: "emu".into(),
        cc: cc.join("+"),
        trace: r.trace.display().to_string(),
        seed: r.seed,
        duration_s: r.duration_s,
        throughput_mbps: thr,
        goodput_mbps: total_goodput_bytes * 8.0 / span_s / 1e6,
        utilization: if offered > 0.0 { total_bytes * 8.0 / offered } else { 0.0 },
        rtt_avg_ms: mean(&all_rtt),
        rtt_p50_ms: pct(&all_rtt, 0.5),
        rtt_p95_ms: pct(&all_rtt, 0.95),
        rtt_p99_ms: pct(&all_rtt, 0.99),
        owd_p95_ms: pct(&all_owd, 0.95),
        qdelay_avg_ms: mean(&all_q),
        qdelay_p95_ms: pct(&all_q, 0.95),
        srtt_p95_ms: None,
        srtt_qdelay_avg_ms: None,
        loss_rate,
        retrans_rate: if sent_segs > 0.0 { retrans / sent_segs } else { 0.0 },
        jain: metrics::jain(&per),
        reconfigs_detected: None,
        detection: None,
        queue: queue.given.to_string(),
        queue_bytes: queue.bytes,
        queue_ms: queue.ms,
        qdisc: r.qdisc.to_string(),
        sndbuf_bytes: r.sndbuf_bytes.unwrap_or(leocc_sim::tcp::SNDBUF_BYTES),
        bottleneck_departed_bytes: Some(departed_bytes),
        flows: flow_recs,
    })
}

/// [`metrics::mean`], 0 when empty (the record's convention).
fn mean(v: &[f64]) -> f64 {
    metrics::mean(v).unwrap_or(0.0)
}

/// [`metrics::quantile_nearest_rank`] of unsorted `v`, 0 when empty.
fn pct(v: &[f64], q: f64) -> f64 {
    metrics::quantile_nearest_rank(&metrics::sorted(v), q).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(proto: u8, src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16) -> FlowKey {
        FlowKey::Ipv4 {
            proto,
            src,
            dst,
            sport,
            dport,
        }
    }

    fn count(bytes: u64) -> FlowCount {
        FlowCount {
            bytes,
            ..FlowCount::default()
        }
    }

    #[test]
    fn a_flow_is_its_largest_connection_from_sender_to_receiver_on_its_port() {
        let (snd, rcv) = (leocc_emu::CLIENT_ADDR, leocc_emu::SERVER_ADDR);
        // Sorted by bytes, as the emulator's summary gives them.
        let flows = vec![
            (key(6, rcv, 5301, snd, 40001), count(9_000_000)), // the reverse direction
            (key(6, snd, 40001, rcv, 5301), count(5_000_000)), // iperf3's data connection
            (key(17, snd, 5302, rcv, 50000), count(4_000_000)), // a QUIC server's flow
            (key(6, snd, 40002, rcv, 5303), count(3_000)),
            (key(6, snd, 40000, rcv, 5301), count(2_000)), // iperf3's control connection
            (FlowKey::Unparsed, count(10)),
        ];
        let b = Bottleneck {
            send: snd,
            recv: rcv,
            flows: &flows,
        };
        assert_eq!(b.connection(5301).unwrap().bytes, 5_000_000);
        assert_eq!(b.connection(5302).unwrap().bytes, 4_000_000);
        assert_eq!(b.connection(5303).unwrap().bytes, 3_000);
        assert!(b.connection(5304).is_none());
    }

    #[test]
    fn offered_bits_count_both_ends_of_the_span() {
        // One 1500-byte opportunity per ms.
        let cap = leocc_trace::Capacity::new(vec![1000], Some(1000)).unwrap();
        let link = LinkModel::new(
            &cap,
            leocc_trace::DelaySeries::constant(0),
            leocc_trace::Loss::Constant(0.0),
            &[],
            1000,
        );
        assert_eq!(offered_bits(&link, 1000, 1000), 12_000.0);
        assert_eq!(offered_bits(&link, 1000, 10_000), 10.0 * 12_000.0);
        assert_eq!(offered_bits(&link, 1001, 1999), 0.0);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(pct(&v, 0.95), 95.0);
        assert_eq!(pct(&v, 0.5), 50.0);
        assert_eq!(pct(&[], 0.5), 0.0);
        assert_eq!(mean(&[1.0, 3.0]), 2.0);
    }
}
