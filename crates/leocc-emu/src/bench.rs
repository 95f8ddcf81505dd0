//! `leocc bench-emu`: the emulator's accuracy and speed, measured with a UDP flow between the
//! namespaces (sender thread in the client namespace, receiver thread in the server one).
//!
//! 1. Capacity fidelity: a trace whose capacity changes every 100 ms (24-240 Mbit/s) is
//!    saturated; packets received in a window are compared with the opportunities the trace
//!    offered in that window, shifted by the one-way delay (target >= 99 %).
//! 2. Release error: how late the engine wrote each packet relative to its exact release
//!    time, p50 and p99 (target p99 <= 100 µs).
//! 3. Highest sustained rate: constant traces at each rate; the sender paces at 90 % of the
//!    rate; a rate counts as sustained when unintended loss (sent - received - what the model
//!    dropped) stays under 0.1 %, and the model itself dropped under 0.1 % (at 90 % load a
//!    droptail drop means the arrivals came in bursts: a late engine or a preempted sender)
//!    (target >= 1.5 Gbit/s).
//! 4. CPU: both engine threads' CPU time at 100 Mbit/s, % of one core.
//! 5. The realistic path: kernel TCP (cubic, then bbr; iperf3) through a capacity trace
//!    varying ±20 % around 1.5 Gbit/s (`--tcp-mbps`), 10 ms one-way delay, 0.2 % random loss
//!    and a 500-packet queue: goodput ÷ offered capacity and the release error (target: bbr
//!    >= 90 %).
//!
//! With offloads on (the default) the UDP sender hands the kernel up to `GSO_SEGMENTS`
//! datagrams per send with UDP segmentation offload, as GSO-capable senders do (kernel TCP's
//! TSO does the same by itself); `--no-offload` measures the packet-by-packet path, sender
//! and engine both, so the two can be compared side by side.

use crate::clock;
use crate::emulator::{EmuConfig, Emulator, Side, Summary, SERVER_ADDR};
use crate::error::{EmuError, Result};
use crate::stage::QueueLimit;
use leocc_trace::{Capacity, DelaySeries, LinkModel, Loss, OPPORTUNITY_BYTES};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// UDP payload making 1500-byte IP packets (one opportunity each).
const PAYLOAD: usize = 1472;
/// Bits of one packet on the link.
const PKT_BITS: f64 = OPPORTUNITY_BYTES as f64 * 8.0;
/// Port of the benchmark receiver in the server namespace.
const PORT: u16 = 9372;
/// One-way delay of every benchmark trace, µs.
const BENCH_DELAY_US: u64 = 10_000;
/// Sender pacing as a share of the link rate in the loss-free-rate test.
const PACE_SHARE: f64 = 0.9;
/// Loss below which a rate counts as sustained (0.1 %).
const MAX_UNINTENDED_LOSS: f64 = 0.001;
/// Warm-up excluded from the capacity-fidelity window, µs.
const WARMUP_US: u64 = 500_000;
/// Queue for the benchmark runs, packets (deep enough that pacing bursts never overflow).
const BENCH_QUEUE: usize = 2000;
/// Datagrams per send with UDP GSO: 44 x 1472 bytes stays under a UDP datagram's 64 KB.
const GSO_SEGMENTS: u64 = 44;
/// The realistic path: random loss, droptail queue (packets), and its capacity steps (share
/// of the mean, 200 ms each).
const REAL_LOSS: f64 = 0.002;
const REAL_QUEUE: usize = 500;
const REAL_STEPS: [f64; 5] = [1.0, 1.2, 0.8, 1.1, 0.9];
/// Mean capacity of the realistic path unless told otherwise, Mbit/s.
pub const DEFAULT_TCP_MBPS: f64 = 1500.0;
/// iperf3 port of the realistic case.
const TCP_PORT: u16 = 9373;
/// TCP buffer ceiling in the benchmark namespaces, bytes: the default 6 MB would cap a flow
/// below the path's 3.75 MB bandwidth-delay product plus queue once the kernel's overhead
/// share is taken off.
const TCP_BUF_MAX: u32 = 64 << 20;
/// What mahimahi reached on this machine when the issue was written (delay + link shells).
const MAHIMAHI: &str = "mahimahi on this machine: cubic 0.54 Gbit/s, bbr 0.64 Gbit/s through delay + link shells; 1.94 Gbit/s with no delay shell";

/// Benchmark parameters.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Seconds per measurement.
    pub seconds: f64,
    /// Rates to try for the highest sustained rate, Mbit/s.
    pub rates_mbps: Vec<f64>,
    /// Spin margin, µs.
    pub spin_us: u64,
    /// TUN offloads in the emulator, and UDP GSO in the benchmark's sender.
    pub offload: bool,
    /// Run the realistic-path case (kernel TCP through iperf3).
    pub tcp: bool,
    /// Mean capacity of the realistic path, Mbit/s.
    pub tcp_mbps: f64,
}

/// A constant-rate link model at `mbps`, with `BENCH_DELAY_US` delay.
pub fn constant_link(mbps: f64) -> Result<LinkModel> {
    let gap_us = PKT_BITS / mbps; // µs between opportunities
    let n = (1_000_000.0 / gap_us).round().max(1.0) as u64;
    let times: Vec<u64> = (1..=n).map(|i| ((i as f64 * gap_us).round() as u64).min(1_000_000)).collect();
    link_from(times, 1_000_000)
}

/// The realistic path's capacity: `REAL_STEPS` of `mean_mbps`, 200 ms each (a 1 s period).
fn realistic_link(mean_mbps: f64) -> Result<LinkModel> {
    const STEP_US: u64 = 200_000;
    let mut times = Vec::new();
    for (k, r) in REAL_STEPS.iter().enumerate() {
        let gap = PKT_BITS / (r * mean_mbps);
        let n = (STEP_US as f64 / gap) as u64;
        times.extend((1..=n).map(|i| k as u64 * STEP_US + (i as f64 * gap) as u64));
    }
    let cap = Capacity::new(times, Some(1_000_000)).map_err(EmuError::msg)?;
    Ok(LinkModel::new(&cap, DelaySeries::constant(BENCH_DELAY_US), Loss::Constant(0.0), &[], 1000))
}

/// A link whose capacity steps every 100 ms through 24..240 Mbit/s (a 1 s period).
fn stepped_link() -> Result<LinkModel> {
    const STEP_US: u64 = 100_000;
    const RATES_MBPS: [f64; 10] = [48.0, 120.0, 24.0, 240.0, 96.0, 180.0, 36.0, 144.0, 72.0, 204.0];
    let mut times = Vec::new();
    for (k, r) in RATES_MBPS.iter().enumerate() {
        let gap = PKT_BITS / r;
        let n = (STEP_US as f64 / gap) as u64;
        times.extend((1..=n).map(|i| k as u64 * STEP_US + (i as f64 * gap) as u64));
    }
    link_from(times, 1_000_000)
}

fn link_from(times: Vec<u64>, period: u64) -> Result<LinkModel> {
    let cap = Capacity::new(times, Some(period)).map_err(EmuError::msg)?;
    Ok(LinkModel::new(&cap, DelaySeries::constant(BENCH_DELAY_US), Loss::Constant(0.0), &[], 1000))
}

/// Result of one UDP flow through the emulator.
struct Flow {
    sent: u64,
    send_errors: u64,
    /// Emulation time (µs) of each received packet.
    arrivals_us: Vec<u64>,
    /// Datagrams the receiving socket dropped (the harness, not the emulator).
    rcvbuf_errors: u64,
    start_us: u64,
    end_us: u64,
    summary: Summary,
}

fn run_flow(up: LinkModel, rate_bps: f64, seconds: f64, o: &BenchOptions) -> Result<Flow> {
    let mut cfg = EmuConfig::new(up.clone(), up);
    cfg.queue = QueueLimit { packets: Some(BENCH_QUEUE), bytes: None };
    cfg.spin_us = o.spin_us;
    cfg.offload = o.offload;
    let gso = o.offload;
    let emu = Emulator::start(&cfg)?;
    let clock = emu.clock();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = {
        let stop = stop.clone();
        emu.spawn_in(Side::Server, "bench-rx", move || -> std::io::Result<(Vec<u64>, u64)> {
            let s = UdpSocket::bind(("0.0.0.0", PORT))?;
            force_rcvbuf(&s);
            s.set_read_timeout(Some(Duration::from_millis(20)))?;
            let mut buf = [0u8; 2048];
            let mut arrivals = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(n) = s.recv(&mut buf) {
                    if n == PAYLOAD {
                        arrivals.push(clock.now_us());
                    }
                }
            }
            Ok((arrivals, udp_rcvbuf_errors()))
        })?
    };
    std::thread::sleep(Duration::from_millis(100));
    let tx = emu.spawn_in(Side::Client, "bench-tx", move || -> std::io::Result<(u64, u64, u64, u64)> {
        let s = UdpSocket::bind("0.0.0.0:0")?;
        s.connect(SocketAddr::new(SERVER_ADDR.into(), PORT))?;
        if gso {
            set_udp_segment(&s)?;
        }
        let per_send = if gso { GSO_SEGMENTS } else { 1 };
        clock::tighten_timer_slack();
        // A preempted sender bursts, and the model rightly drops the burst: keep it on time.
        clock::try_realtime();
        let payload = vec![0u8; PAYLOAD * per_send as usize];
        let start_us = clock.now_us();
        let t0 = Instant::now();
        let (mut sent, mut errors) = (0u64, 0u64);
        let total = Duration::from_secs_f64(seconds);
        while t0.elapsed() < total {
            let due = (rate_bps * t0.elapsed().as_secs_f64() / PKT_BITS) as u64;
            while sent + errors < due {
                let k = (due - sent - errors).min(per_send);
                match s.send(&payload[..PAYLOAD * k as usize]) {
                    Ok(_) => sent += k,
                    Err(_) => errors += k,
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok((sent, errors, start_us, clock.now_us()))
    })?;
    let (sent, send_errors, start_us, end_us) = join(tx)?;
    // Let the queue drain: everything queued leaves within the queue's size at the lowest rate.
    std::thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::Relaxed);
    let (arrivals_us, rcvbuf_errors) = join(rx)?;
    let summary = emu.stop();
    Ok(Flow { sent, send_errors, arrivals_us, rcvbuf_errors, start_us, end_us, summary })
}

/// Makes every send on `s` larger than one datagram leave as `PAYLOAD`-byte datagrams, cut
/// by the kernel (UDP GSO) or, with offloads, by the emulator.
fn set_udp_segment(s: &UdpSocket) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = PAYLOAD as libc::c_int;
    // SAFETY: setsockopt with a valid int option value.
    let r = unsafe { libc::setsockopt(s.as_raw_fd(), libc::SOL_UDP, libc::UDP_SEGMENT, (&size as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as u32) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Receive buffer of the benchmark receiver, bytes: 100 ms at 2.5 Gbit/s, so that a
/// preempted receiver thread does not lose datagrams and blame the emulator for it.
const RCVBUF_BYTES: libc::c_int = 32 << 20;

fn force_rcvbuf(s: &UdpSocket) {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt with a valid int option value.
    unsafe {
        libc::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&RCVBUF_BYTES as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as u32);
    }
}

/// The namespace's UDP RcvbufErrors counter (/proc/thread-self/net/snmp, "Udp:" lines).
fn udp_rcvbuf_errors() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else { return 0 };
    names.split_whitespace().zip(values.split_whitespace()).find(|(n, _)| *n == "RcvbufErrors").and_then(|(_, v)| v.parse().ok()).unwrap_or(0)
}

fn join<T>(h: std::thread::JoinHandle<Result<std::io::Result<T>>>) -> Result<T> {
    h.join().map_err(|_| EmuError::msg("benchmark thread panicked"))?.and_then(|r| r.map_err(|e| EmuError::io("benchmark traffic", e)))
}

/// Numbers the benchmark prints.
#[derive(Debug, Clone, Default)]
pub struct BenchReport {
    /// Received ÷ offered over the saturated window.
    pub capacity_fidelity: f64,
    /// Release error p50 and p99, µs (saturated stepped trace).
    pub release_error_us: (u64, u64),
    /// Highest rate sustained, Mbit/s (0 if none).
    pub max_rate_mbps: f64,
    /// Engine CPU at 100 Mbit/s, % of one core (both threads).
    pub cpu_percent_100m: f64,
    /// Realistic path: (congestion control, goodput ÷ offered capacity, release p99 µs).
    pub tcp: Vec<(String, f64, u64)>,
}

/// Runs all measurements, printing as it goes.
pub fn run(o: &BenchOptions) -> Result<BenchReport> {
    crate::shell::check_privileges()?;
    let mut rep = BenchReport::default();

    println!("== capacity fidelity and release error (capacity stepping 24..240 Mbit/s every 100 ms, UDP at 300 Mbit/s)");
    let link = stepped_link()?;
    println!("offloads {} (sender {})", if o.offload { "on" } else { "off" }, if o.offload { "UDP GSO" } else { "one datagram per send" });
    let f = run_flow(link.clone(), 300e6, o.seconds, o)?;
    let (a, b) = (f.start_us + WARMUP_US, f.end_us);
    let offered = link.count_before(b) - link.count_before(a);
    let received = f.arrivals_us.iter().filter(|&&t| t >= a + BENCH_DELAY_US && t < b + BENCH_DELAY_US).count() as u64;
    rep.capacity_fidelity = received as f64 / offered.max(1) as f64;
    if f.rcvbuf_errors > 0 {
        println!("note: the receiver's socket dropped {} datagrams (harness, not emulator)", f.rcvbuf_errors);
    }
    let up = &f.summary.uplink;
    rep.release_error_us = (up.release_error_us[0].unwrap_or(0), up.release_error_us[1].unwrap_or(0));
    println!("delivered vs opportunities: {received} / {offered} packets = {:.2} % (target >= 99 %)", rep.capacity_fidelity * 100.0);
    println!(
        "release error: p50 {} us, p99 {} us over {} packets (target p99 <= 100 us); queue drops {} (intended: the flow oversubscribes)",
        rep.release_error_us.0,
        rep.release_error_us.1,
        up.release_error.count(),
        up.dropped_queue
    );

    println!("== highest constant rate with < 0.1 % unintended loss (sender paced at 90 % of the rate)");
    for &mbps in &o.rates_mbps {
        let f = run_flow(constant_link(mbps)?, mbps * 1e6 * PACE_SHARE, o.seconds, o)?;
        let up = &f.summary.uplink;
        let modelled = up.dropped_queue + up.dropped_loss;
        let attempted = f.sent + f.send_errors;
        let received = f.arrivals_us.len() as u64;
        let lost = attempted.saturating_sub(received + modelled + f.rcvbuf_errors);
        let loss = lost as f64 / attempted.max(1) as f64;
        let goodput = received as f64 * PKT_BITS / ((f.end_us - f.start_us) as f64);
        let model_share = modelled as f64 / attempted.max(1) as f64;
        let ok = loss < MAX_UNINTENDED_LOSS && model_share < MAX_UNINTENDED_LOSS;
        println!(
            "{mbps:7.0} Mbit/s link: sent {attempted} (send errors {}), received {received} ({goodput:.0} Mbit/s), receiver socket overflow {}, model drops {modelled}, unintended loss {:.3} % (TUN queue {}), engine cpu {:.0} % + {:.0} % ({:.0} % per Gbit/s), {:.1} packets per read, {:.1} per write, release p99 {} us -> {}",
            f.send_errors,
            f.rcvbuf_errors,
            loss * 100.0,
            up.unmodelled_drops,
            up.cpu_percent,
            f.summary.downlink.cpu_percent,
            up.cpu_percent / (goodput / 1000.0).max(1e-9),
            up.packets_per_read,
            up.packets_per_write,
            up.release_error_us[1].unwrap_or(0),
            if ok { "sustained" } else { "NOT sustained" }
        );
        if ok {
            rep.max_rate_mbps = rep.max_rate_mbps.max(mbps);
        }
    }
    println!("highest sustained rate: {:.0} Mbit/s (target >= 1500)", rep.max_rate_mbps);

    println!("== CPU at 100 Mbit/s (120 Mbit/s link)");
    let f = run_flow(constant_link(120.0)?, 100e6, o.seconds, o)?;
    rep.cpu_percent_100m = f.summary.uplink.cpu_percent + f.summary.downlink.cpu_percent;
    println!(
        "engine CPU {:.1} % of one core (uplink thread {:.1} %, downlink thread {:.1} %) with spin margin {} us",
        rep.cpu_percent_100m, f.summary.uplink.cpu_percent, f.summary.downlink.cpu_percent, o.spin_us
    );

    if o.tcp {
        let mean = o.tcp_mbps;
        println!(
            "== realistic path: kernel TCP (iperf3) through {mean:.0} Mbit/s mean capacity ({:.0}..{:.0} in 200 ms steps), {} ms one-way delay, {} % loss, {REAL_QUEUE}-packet queue",
            REAL_STEPS.iter().cloned().fold(f64::INFINITY, f64::min) * mean,
            REAL_STEPS.iter().cloned().fold(0.0, f64::max) * mean,
            BENCH_DELAY_US / 1000,
            REAL_LOSS * 100.0
        );
        for cc in ["cubic", "bbr"] {
            match tcp_case(cc, o) {
                Ok((goodput_mbps, f)) => {
                    let up = &f.uplink;
                    let share = goodput_mbps / mean;
                    println!(
                        "{cc:>5}: goodput {goodput_mbps:.0} Mbit/s = {:.1} % of the offered capacity (payload ceiling 96.5 %); model drops {} (queue) + {} (loss); unintended {}; engine cpu {:.0} % + {:.0} %, {:.1} packets per read, {:.1} per write; release p99 {} us{}",
                        share * 100.0,
                        up.dropped_queue,
                        up.dropped_loss,
                        up.unmodelled_drops,
                        up.cpu_percent,
                        f.downlink.cpu_percent,
                        up.packets_per_read,
                        up.packets_per_write,
                        up.release_error_us[1].unwrap_or(0),
                        if cc == "bbr" { " (target: bbr >= 90 %)" } else { "" }
                    );
                    rep.tcp.push((cc.to_string(), share, up.release_error_us[1].unwrap_or(0)));
                }
                Err(e) => println!("{cc:>5}: not measured: {e}"),
            }
        }
        println!("({MAHIMAHI})");
    }
    Ok(rep)
}

/// One kernel TCP flow, client to server, through the realistic path for `o.seconds`:
/// iperf3's goodput (Mbit/s) and the emulator's summary.
fn tcp_case(cc: &str, o: &BenchOptions) -> Result<(f64, Summary)> {
    let link = realistic_link(o.tcp_mbps)?;
    let mut cfg = EmuConfig::new(link.clone(), link);
    cfg.queue = QueueLimit { packets: Some(REAL_QUEUE), bytes: None };
    cfg.loss = REAL_LOSS;
    cfg.spin_us = o.spin_us;
    cfg.offload = o.offload;
    let emu = Emulator::start(&cfg)?;
    for side in [Side::Client, Side::Server] {
        let buf = format!("4096 131072 {TCP_BUF_MAX}");
        join(emu.spawn_in(side, "bench-sysctl", move || -> std::io::Result<()> {
            std::fs::write("/proc/sys/net/ipv4/tcp_rmem", &buf)?;
            std::fs::write("/proc/sys/net/ipv4/tcp_wmem", &buf)
        })?)?;
    }
    let mut server = emu.command(Side::Server, "iperf3");
    crate::owned::own_group(crate::owned::die_with_parent(server.args(["-s", "-1", "-p", &TCP_PORT.to_string()]))).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut server = server.spawn().map_err(|e| EmuError::io("start iperf3 -s", e))?;
    crate::shell::wait_until_listening(server.id());
    let secs = format!("{}", o.seconds.ceil().max(2.0));
    let out = crate::owned::die_with_parent(emu.command(Side::Client, "iperf3").args(["-c", &SERVER_ADDR.to_string(), "-p", &TCP_PORT.to_string(), "-t", &secs, "-C", cc, "-J"]))
        .output()
        .map_err(|e| EmuError::io("run iperf3 -c", e));
    crate::owned::terminate_group(&mut server);
    let summary = emu.stop();
    let v: serde_json::Value = serde_json::from_slice(&out?.stdout).map_err(|e| EmuError::msg(format!("iperf3 output: {e}")))?;
    if let Some(err) = v["error"].as_str() {
        return Err(EmuError::msg(format!("iperf3: {err}")));
    }
    let bps = v["end"]["sum_received"]["bits_per_second"].as_f64().ok_or_else(|| EmuError::msg("iperf3 reported no received rate"))?;
    Ok((bps / 1e6, summary))
}

