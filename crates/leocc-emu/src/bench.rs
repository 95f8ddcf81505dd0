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
//!    (target >= 1 Gbit/s).
//! 4. CPU: both engine threads' CPU time at 100 Mbit/s, % of one core.

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

/// Benchmark parameters.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Seconds per measurement.
    pub seconds: f64,
    /// Rates to try for the highest sustained rate, Mbit/s.
    pub rates_mbps: Vec<f64>,
    /// Spin margin, µs.
    pub spin_us: u64,
}

/// A constant-rate link model at `mbps`, with `BENCH_DELAY_US` delay.
pub fn constant_link(mbps: f64) -> Result<LinkModel> {
    let gap_us = PKT_BITS / mbps; // µs between opportunities
    let n = (1_000_000.0 / gap_us).round().max(1.0) as u64;
    let times: Vec<u64> = (1..=n).map(|i| ((i as f64 * gap_us).round() as u64).min(1_000_000)).collect();
    link_from(times, 1_000_000)
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

fn run_flow(up: LinkModel, rate_bps: f64, seconds: f64, spin_us: u64) -> Result<Flow> {
    let mut cfg = EmuConfig::new(up.clone(), up);
    cfg.queue = QueueLimit { packets: Some(BENCH_QUEUE), bytes: None };
    cfg.spin_us = spin_us;
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
        clock::tighten_timer_slack();
        // A preempted sender bursts, and the model rightly drops the burst: keep it on time.
        clock::try_realtime();
        let payload = [0u8; PAYLOAD];
        let start_us = clock.now_us();
        let t0 = Instant::now();
        let (mut sent, mut errors) = (0u64, 0u64);
        let total = Duration::from_secs_f64(seconds);
        while t0.elapsed() < total {
            let due = (rate_bps * t0.elapsed().as_secs_f64() / PKT_BITS) as u64;
            while sent + errors < due {
                match s.send(&payload) {
                    Ok(_) => sent += 1,
                    Err(_) => errors += 1,
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
}

/// Runs all measurements, printing as it goes.
pub fn run(o: &BenchOptions) -> Result<BenchReport> {
    crate::shell::check_privileges()?;
    let mut rep = BenchReport::default();

    println!("== capacity fidelity and release error (capacity stepping 24..240 Mbit/s every 100 ms, UDP at 300 Mbit/s)");
    let link = stepped_link()?;
    let f = run_flow(link.clone(), 300e6, o.seconds, o.spin_us)?;
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
        let f = run_flow(constant_link(mbps)?, mbps * 1e6 * PACE_SHARE, o.seconds, o.spin_us)?;
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
            "{mbps:7.0} Mbit/s link: sent {attempted} (send errors {}), received {received} ({goodput:.0} Mbit/s), receiver socket overflow {}, model drops {modelled}, unintended loss {:.3} % (TUN queue {}), engine cpu {:.0} % + {:.0} %, release p99 {} us -> {}",
            f.send_errors,
            f.rcvbuf_errors,
            loss * 100.0,
            up.unmodelled_drops,
            up.cpu_percent,
            f.summary.downlink.cpu_percent,
            up.release_error_us[1].unwrap_or(0),
            if ok { "sustained" } else { "NOT sustained" }
        );
        if ok {
            rep.max_rate_mbps = rep.max_rate_mbps.max(mbps);
        }
    }
    println!("highest sustained rate: {:.0} Mbit/s (target >= 1000)", rep.max_rate_mbps);

    println!("== CPU at 100 Mbit/s (120 Mbit/s link)");
    let f = run_flow(constant_link(120.0)?, 100e6, o.seconds, o.spin_us)?;
    rep.cpu_percent_100m = f.summary.uplink.cpu_percent + f.summary.downlink.cpu_percent;
    println!(
        "engine CPU {:.1} % of one core (uplink thread {:.1} %, downlink thread {:.1} %) with spin margin {} us",
        rep.cpu_percent_100m, f.summary.uplink.cpu_percent, f.summary.downlink.cpu_percent, o.spin_us
    );
    Ok(rep)
}

