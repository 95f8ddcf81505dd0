//! The recorder (LeoReplayer's method, seed 000 §5.2): two concurrent flows between the
//! satellite client and a server. A saturating UDP flow measures capacity: every received
//! 1500-byte packet is one delivery opportunity at the time it left the bottleneck (arrival
//! minus the current one-way delay). A light ICMP ping every 10 ms measures base delay and
//! loss: Starlink queues ICMP apart from TCP/UDP (appendix B), so pings are not slowed by the
//! saturating flow; one-way delay = RTT / 2 for every 10 ms interval. Runs of two or more
//! consecutive lost pings (>= 20 ms) are outages; isolated losses are random loss, averaged
//! per second. The result is written in our trace format through `leocc_trace::Trace::save`.
//!
//! Control protocol (TCP, one line each way, then UDP): the client sends
//! `LEOCC-RECORD 1 dir=down|up duration_ms=D rate_bps=R udp_port=U`; the server answers `OK`.
//! Downlink: the server sends UDP datagrams of `UDP_PAYLOAD` bytes to the client's port U at
//! rate R for D ms. Uplink: the client sends them to the server's UDP port (same number as the
//! TCP port); afterwards the server sends `ARRIVALS N` and N lines of arrival times in µs
//! since its first arrival.

use crate::clock;
use crate::error::{EmuError, Result};
use crate::packet::checksum;
use leocc_trace::{Capacity, DelaySeries, Dir, DirTrace, Loss, Measured, Meta, Span, Trace};
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default TCP/UDP port of `leocc record-server`.
pub const DEFAULT_PORT: u16 = 9371;
/// UDP payload so that each datagram is one 1500-byte IP packet (20 IP + 8 UDP header).
pub const UDP_PAYLOAD: usize = 1472;
/// IP bytes of one recorder datagram: exactly one delivery opportunity.
const UDP_IP_BYTES: usize = UDP_PAYLOAD + 28;
/// Ping period: LeoReplayer and the detector both use 10 ms.
pub const PING_INTERVAL_US: u64 = 10_000;
/// Interval of the loss series written to the trace.
pub const LOSS_INTERVAL_US: u64 = 1_000_000;
/// Consecutive lost pings that make an outage rather than random loss.
const OUTAGE_MIN_LOST_PINGS: usize = 2;
/// Pacing tick of the UDP sender.
const PACE_TICK: Duration = Duration::from_millis(1);
/// Extra time after the flow's end for the last packets and ping replies to arrive.
const DRAIN_GRACE: Duration = Duration::from_millis(1000);
/// First bytes of every recorder datagram, to ignore stray traffic.
const MAGIC: &[u8; 8] = b"LEOCCREC";
/// ICMP echo payload length (as `ping`'s default).
const PING_PAYLOAD: usize = 56;
/// How often a receiver prints its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// Timeout on control-connection reads and writes.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// The record-server's address and port.
    pub server: SocketAddr,
    /// How long the saturating flow runs.
    pub duration: Duration,
    /// Which direction the saturating flow measures.
    pub dir: Dir,
    /// Sending rate of the saturating flow, bit/s; must exceed the link's capacity.
    pub rate_bps: u64,
    /// Whom to ping (default: the server's address).
    pub ping: Option<Ipv4Addr>,
    /// Trace name for the metadata.
    pub name: String,
}

/// A finished recording.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The trace (time zero = `origin_mono_ns`).
    pub trace: Trace,
    /// CLOCK_MONOTONIC ns of trace time zero.
    pub origin_mono_ns: u64,
    /// UDP datagrams received.
    pub packets: u64,
    /// Pings sent.
    pub pings_sent: u64,
    /// Pings answered.
    pub pings_answered: u64,
}

struct PingLog {
    sent_ns: Vec<u64>,
    rtt_ns: Vec<Option<u64>>,
}

/// Records a trace; progress goes to stderr.
pub fn record(cfg: &RecordConfig) -> Result<Recording> {
    let ping_target = cfg.ping.or(match cfg.server.ip() {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(_) => None,
    });
    let ping_target = ping_target.ok_or_else(|| EmuError::msg("the recorder pings over IPv4: give an IPv4 server or --ping"))?;
    let mut ctl = TcpStream::connect_timeout(&cfg.server, Duration::from_secs(5)).map_err(|e| EmuError::io(format!("connect to record-server {}", cfg.server), e))?;
    ctl.set_read_timeout(Some(CONTROL_TIMEOUT)).and_then(|_| ctl.set_write_timeout(Some(CONTROL_TIMEOUT))).map_err(|e| EmuError::io("configure control connection", e))?;
    let udp = UdpSocket::bind("0.0.0.0:0").map_err(|e| EmuError::io("bind UDP socket", e))?;
    let udp_port = udp.local_addr().map_err(|e| EmuError::io("UDP socket address", e))?.port();

    let stop = Arc::new(AtomicBool::new(false));
    let pings = Arc::new(Mutex::new(PingLog { sent_ns: Vec::new(), rtt_ns: Vec::new() }));
    let pinger = {
        let (stop, pings) = (stop.clone(), pings.clone());
        let sock = IcmpSocket::open()?;
        std::thread::spawn(move || ping_loop(sock, ping_target, &stop, &pings))
    };
    let dur_ms = cfg.duration.as_millis() as u64;
    let req = format!("LEOCC-RECORD 1 dir={} duration_ms={dur_ms} rate_bps={} udp_port={udp_port}\n", cfg.dir.as_str(), cfg.rate_bps);
    let result = (|| -> Result<Vec<u64>> {
        ctl.write_all(req.as_bytes()).map_err(|e| EmuError::io("send request", e))?;
        let mut reader = BufReader::new(ctl.try_clone().map_err(|e| EmuError::io("control connection", e))?);
        let line = read_line(&mut reader)?;
        if line.trim() != "OK" {
            return Err(EmuError::msg(format!("record-server refused: {}", line.trim())));
        }
        eprintln!("leocc record: {} flow for {} s at {:.0} Mbit/s, pinging {ping_target} every 10 ms", cfg.dir.as_str(), dur_ms / 1000, cfg.rate_bps as f64 / 1e6);
        match cfg.dir {
            Dir::Down => receive_flow(&udp, cfg.duration + DRAIN_GRACE),
            Dir::Up => {
                let to = SocketAddr::new(cfg.server.ip(), cfg.server.port());
                let start_ns = clock::mono_ns();
                blast(&udp, to, cfg.rate_bps, cfg.duration);
                let arrivals = read_arrivals(&mut reader)?;
                // The server's clock is not ours: its first arrival is taken to be our first
                // send plus half the first measured RTT.
                let first_owd = pings.lock().ok().and_then(|l| l.rtt_ns.iter().flatten().next().copied()).unwrap_or(0) / 2;
                Ok(arrivals.into_iter().map(|us| start_ns + first_owd + us * 1000).collect())
            }
        }
    })();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let _ = pinger.join();
    let arrivals = result?;
    let pings = std::mem::replace(&mut *pings.lock().map_err(|_| EmuError::msg("ping log poisoned"))?, PingLog { sent_ns: vec![], rtt_ns: vec![] });
    build_trace(cfg, &arrivals, &pings)
}

fn read_line(r: &mut impl BufRead) -> Result<String> {
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| EmuError::io("read from record-server", e))?;
    if line.is_empty() {
        return Err(EmuError::msg("record-server closed the connection"));
    }
    Ok(line)
}

fn read_arrivals(r: &mut impl BufRead) -> Result<Vec<u64>> {
    let head = read_line(r)?;
    let n: usize = head
        .trim()
        .strip_prefix("ARRIVALS ")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| EmuError::msg(format!("record-server: expected `ARRIVALS N`, got {:?}", head.trim())))?;
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let l = read_line(r)?;
        v.push(l.trim().parse().map_err(|_| EmuError::msg(format!("record-server: arrival line {} is not a number: {:?}", i + 1, l.trim())))?);
    }
    Ok(v)
}

/// Receives recorder datagrams for `total`; returns their arrival times (monotonic ns).
fn receive_flow(udp: &UdpSocket, total: Duration) -> Result<Vec<u64>> {
    udp.set_read_timeout(Some(Duration::from_millis(50))).map_err(|e| EmuError::io("UDP timeout", e))?;
    let mut buf = [0u8; 2048];
    let mut arrivals = Vec::new();
    let start = Instant::now();
    let (mut last_report, mut reported) = (Instant::now(), 0usize);
    while start.elapsed() < total {
        if let Ok(n) = udp.recv(&mut buf) {
            if n == UDP_PAYLOAD && &buf[..MAGIC.len()] == MAGIC {
                arrivals.push(clock::mono_ns());
            }
        }
        if last_report.elapsed() >= PROGRESS_EVERY {
            let mbps = (arrivals.len() - reported) as f64 * UDP_IP_BYTES as f64 * 8.0 / last_report.elapsed().as_secs_f64() / 1e6;
            eprintln!("  {:5.0} s: {} packets, {mbps:.1} Mbit/s", start.elapsed().as_secs_f64(), arrivals.len());
            (last_report, reported) = (Instant::now(), arrivals.len());
        }
    }
    Ok(arrivals)
}

/// Sends recorder datagrams to `to` at `rate_bps` for `dur`, paced per millisecond.
fn blast(udp: &UdpSocket, to: SocketAddr, rate_bps: u64, dur: Duration) -> u64 {
    clock::tighten_timer_slack();
    let mut payload = [0u8; UDP_PAYLOAD];
    payload[..MAGIC.len()].copy_from_slice(MAGIC);
    let start = Instant::now();
    let mut sent: u64 = 0;
    while start.elapsed() < dur {
        let due = (rate_bps as f64 * start.elapsed().as_secs_f64() / (UDP_IP_BYTES as f64 * 8.0)) as u64;
        while sent < due {
            payload[8..16].copy_from_slice(&sent.to_be_bytes());
            let _ = udp.send_to(&payload, to);
            sent += 1;
        }
        std::thread::sleep(PACE_TICK);
    }
    sent
}

/// ICMP echo socket: raw when we may (root), else an unprivileged datagram socket.
struct IcmpSocket {
    fd: std::os::fd::OwnedFd,
    raw: bool,
}

impl IcmpSocket {
    fn open() -> Result<IcmpSocket> {
        use std::os::fd::FromRawFd;
        for (ty, raw) in [(libc::SOCK_RAW, true), (libc::SOCK_DGRAM, false)] {
            // SAFETY: socket(2) with constant arguments.
            let fd = unsafe { libc::socket(libc::AF_INET, ty | libc::SOCK_CLOEXEC, libc::IPPROTO_ICMP) };
            if fd >= 0 {
                // SAFETY: fd was just returned by socket(2) and is ours.
                return Ok(IcmpSocket { fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }, raw });
            }
        }
        Err(EmuError::os("open an ICMP socket (needs root or net.ipv4.ping_group_range)"))
    }

    fn send_echo(&self, to: Ipv4Addr, id: u16, seq: u16) {
        use std::os::fd::AsRawFd;
        let mut pkt = vec![0u8; 8 + PING_PAYLOAD];
        pkt[0] = 8;
        pkt[4..6].copy_from_slice(&id.to_be_bytes());
        pkt[6..8].copy_from_slice(&seq.to_be_bytes());
        let sum = checksum(&pkt);
        pkt[2..4].copy_from_slice(&sum.to_be_bytes());
        let addr = libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: 0, sin_addr: libc::in_addr { s_addr: u32::from(to).to_be() }, sin_zero: [0; 8] };
        // SAFETY: valid buffer and sockaddr_in of the right size.
        unsafe {
            libc::sendto(self.fd.as_raw_fd(), pkt.as_ptr().cast(), pkt.len(), 0, (&addr as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as u32);
        }
    }

    /// Receives one echo reply within `timeout_ms`; returns its sequence number.
    fn recv_reply(&self, id: u16, timeout_ms: i32) -> Option<u16> {
        use std::os::fd::AsRawFd;
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, timeout_ms) } <= 0 {
            return None;
        }
        let mut buf = [0u8; 1500];
        // SAFETY: valid buffer.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n <= 0 {
            return None;
        }
        let pkt = &buf[..n as usize];
        let icmp = if self.raw { pkt.get(usize::from(pkt.first()? & 0x0f) * 4..)? } else { pkt };
        if icmp.len() < 8 || icmp[0] != 0 {
            return None;
        }
        // Datagram sockets rewrite the id, and only deliver our own replies anyway.
        if self.raw && u16::from_be_bytes([icmp[4], icmp[5]]) != id {
            return None;
        }
        Some(u16::from_be_bytes([icmp[6], icmp[7]]))
    }
}

fn ping_loop(sock: IcmpSocket, to: Ipv4Addr, stop: &AtomicBool, log: &Mutex<PingLog>) {
    clock::tighten_timer_slack();
    let id = (std::process::id() as u16) ^ 0x4c43;
    let start = clock::mono_ns();
    let mut next_send = start;
    while !stop.load(Ordering::Relaxed) {
        let now = clock::mono_ns();
        if now >= next_send {
            let Ok(mut l) = log.lock() else { return };
            let seq = l.sent_ns.len();
            sock.send_echo(to, id, seq as u16);
            l.sent_ns.push(clock::mono_ns());
            l.rtt_ns.push(None);
            next_send += PING_INTERVAL_US * 1000;
            continue;
        }
        let wait_ms = ((next_send - now) / 1_000_000).max(1) as i32;
        if let Some(seq) = sock.recv_reply(id, wait_ms) {
            let t = clock::mono_ns();
            let Ok(mut l) = log.lock() else { return };
            // Sequence numbers wrap at 65536 pings (11 minutes); take the latest match.
            let n = l.sent_ns.len();
            if let Some(i) = (0..n).rev().find(|&i| i as u16 == seq) {
                if l.rtt_ns[i].is_none() {
                    l.rtt_ns[i] = Some(t - l.sent_ns[i]);
                }
            }
        }
    }
}

/// Turns arrival times and pings into a trace.
fn build_trace(cfg: &RecordConfig, arrivals_ns: &[u64], pings: &PingLog) -> Result<Recording> {
    if arrivals_ns.is_empty() {
        return Err(EmuError::msg("no datagram of the saturating flow arrived: is the record-server reachable and the path up?"));
    }
    let answered: Vec<(u64, u64)> = pings.sent_ns.iter().zip(&pings.rtt_ns).filter_map(|(&s, r)| r.map(|r| (s, r))).collect();
    if answered.is_empty() {
        return Err(EmuError::msg("no ping was answered: cannot measure the base delay"));
    }
    // One-way delay when a packet arrives at `t`: half the RTT of the latest ping sent by then.
    let owd_at = |t: u64| -> u64 {
        let i = answered.partition_point(|&(s, _)| s <= t);
        answered[i.saturating_sub(1)].1 / 2
    };
    let mut opp_ns: Vec<u64> = arrivals_ns.iter().map(|&a| a.saturating_sub(owd_at(a))).collect();
    opp_ns.sort_unstable();
    let origin = opp_ns[0] - opp_ns[0] % 1_000_000;
    let times_us: Vec<u64> = opp_ns.iter().map(|&t| (t - origin) / 1_000_000 * 1000).collect();
    let dur_us = (cfg.duration.as_micros() as u64).max(times_us.last().copied().unwrap_or(0) + 1000);
    let last_ms = times_us.last().copied().unwrap_or(0);
    let period = dur_us.max(last_ms).max(1000) / 1000 * 1000;
    let times_us: Vec<u64> = times_us.into_iter().filter(|&t| t <= period).collect();
    let capacity = Capacity::new(times_us, Some(period)).map_err(|e| EmuError::msg(format!("recorded capacity: {e}")))?;

    let (delay, loss, outages) = delay_and_loss(pings, origin, period);
    let dir = DirTrace { capacity: Some(capacity), delay: Some(delay), loss };
    let (up, down) = match cfg.dir {
        Dir::Up => (dir, DirTrace::default()),
        Dir::Down => (DirTrace::default(), dir),
    };
    let meta = Meta {
        name: cfg.name.clone(),
        source: format!("leocc record --server {} --duration {} ({} flow)", cfg.server, cfg.duration.as_secs(), cfg.dir.as_str()),
        direction: match cfg.dir {
            Dir::Up => Measured::Up,
            Dir::Down => Measured::Down,
        },
        resolution_us: 1000,
        notes: "one-way delay = ping RTT / 2, applied to both directions".into(),
        ..Meta::default()
    };
    let trace = Trace { meta, up, down, reconfigurations: vec![], outages, terrestrial: None };
    trace.validate().map_err(|e| EmuError::msg(format!("recorded trace is invalid: {e}")))?;
    Ok(Recording {
        trace,
        origin_mono_ns: origin,
        packets: arrivals_ns.len() as u64,
        pings_sent: pings.sent_ns.len() as u64,
        pings_answered: answered.len() as u64,
    })
}

/// Delay per 10 ms interval (RTT / 2, gaps filled from the neighbours), loss per second
/// (isolated losses only), and outages (runs of lost pings), all relative to `origin`.
fn delay_and_loss(p: &PingLog, origin: u64, period: u64) -> (DelaySeries, Loss, Vec<Span>) {
    let n_int = period.div_ceil(PING_INTERVAL_US).max(1) as usize;
    let mut delay: Vec<Option<u64>> = vec![None; n_int];
    let n_loss = period.div_ceil(LOSS_INTERVAL_US).max(1) as usize;
    let (mut sent, mut lost) = (vec![0u32; n_loss], vec![0u32; n_loss]);
    let mut outages: Vec<Span> = Vec::new();
    let mut run: Vec<u64> = Vec::new();
    let close_run = |run: &mut Vec<u64>, lost: &mut Vec<u32>, outages: &mut Vec<Span>| {
        if run.len() >= OUTAGE_MIN_LOST_PINGS {
            let start = run[0];
            let end = run[run.len() - 1] + PING_INTERVAL_US;
            match outages.last_mut() {
                Some(o) if o.end_us() >= start => o.len_us = end - o.start_us,
                _ => outages.push(Span { start_us: start, len_us: end - start }),
            }
        } else {
            for &t in run.iter() {
                lost[(t / LOSS_INTERVAL_US) as usize] += 1;
            }
        }
        run.clear();
    };
    for (&s, r) in p.sent_ns.iter().zip(&p.rtt_ns) {
        if s < origin {
            continue;
        }
        let t = (s - origin) / 1000;
        if t >= period {
            break;
        }
        sent[(t / LOSS_INTERVAL_US) as usize] += 1;
        match r {
            Some(rtt) => {
                close_run(&mut run, &mut lost, &mut outages);
                let i = (t / PING_INTERVAL_US) as usize;
                delay[i] = Some(rtt / 2 / 1000);
            }
            None => run.push(t),
        }
    }
    close_run(&mut run, &mut lost, &mut outages);
    let values = fill_gaps(&delay);
    let loss = sent.iter().zip(&lost).map(|(&s, &l)| if s == 0 { 0.0 } else { f64::from(l) / f64::from(s) }).collect::<Vec<f64>>();
    (DelaySeries { interval_us: PING_INTERVAL_US, values_us: values.into() }, Loss::Series { interval_us: LOSS_INTERVAL_US, values: loss.into() }, outages)
}

/// Replaces missing values by the previous known one (the next one at the start).
fn fill_gaps(v: &[Option<u64>]) -> Vec<u64> {
    let first = v.iter().flatten().next().copied().unwrap_or(0);
    let mut last = first;
    v.iter()
        .map(|x| {
            if let Some(x) = x {
                last = *x;
            }
            last
        })
        .collect()
}

/// `leocc record-server`: serves recording sessions one after another until `stop` is set
/// (checked every `ACCEPT_POLL`) or, with `once`, after one session.
pub fn serve(port: u16, once: bool, stop: &AtomicBool) -> Result<()> {
    const ACCEPT_POLL: Duration = Duration::from_millis(100);
    let listener = TcpListener::bind(("0.0.0.0", port)).map_err(|e| EmuError::io(format!("listen on TCP port {port}"), e))?;
    let udp = UdpSocket::bind(("0.0.0.0", port)).map_err(|e| EmuError::io(format!("bind UDP port {port}"), e))?;
    listener.set_nonblocking(true).map_err(|e| EmuError::io("configure listener", e))?;
    eprintln!("leocc record-server: listening on TCP and UDP port {port}");
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, peer)) => {
                let _ = conn.set_nonblocking(false);
                if let Err(e) = session(conn, peer, &udp) {
                    eprintln!("leocc record-server: session with {peer}: {e}");
                }
                if once {
                    return Ok(());
                }
            }
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
    Ok(())
}

struct Request {
    dir: Dir,
    duration: Duration,
    rate_bps: u64,
    udp_port: u16,
}

fn parse_request(line: &str) -> std::result::Result<Request, String> {
    let mut words = line.split_whitespace();
    if words.next() != Some("LEOCC-RECORD") || words.next() != Some("1") {
        return Err(format!("not a recorder request: {:?}", line.trim()));
    }
    let (mut dir, mut dur, mut rate, mut port) = (None, None, None, None);
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("bad field {w:?}"))?;
        match k {
            "dir" => dir = Some(match v { "up" => Dir::Up, "down" => Dir::Down, _ => return Err(format!("bad dir {v:?}")) }),
            "duration_ms" => dur = v.parse::<u64>().ok().filter(|&d| d > 0 && d <= MAX_SESSION_MS),
            "rate_bps" => rate = v.parse::<u64>().ok().filter(|&r| r > 0 && r <= MAX_RATE_BPS),
            "udp_port" => port = v.parse::<u16>().ok(),
            _ => return Err(format!("unknown field {k:?}")),
        }
    }
    match (dir, dur, rate, port) {
        (Some(dir), Some(d), Some(rate_bps), Some(udp_port)) => Ok(Request { dir, duration: Duration::from_millis(d), rate_bps, udp_port }),
        _ => Err(format!("missing or out-of-range field in {:?}", line.trim())),
    }
}

/// Longest session the server accepts (1 hour).
const MAX_SESSION_MS: u64 = 3_600_000;
/// Highest rate the server sends at (10 Gbit/s).
const MAX_RATE_BPS: u64 = 10_000_000_000;

fn session(mut conn: TcpStream, peer: SocketAddr, udp: &UdpSocket) -> Result<()> {
    conn.set_read_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| EmuError::io("configure", e))?;
    let mut reader = BufReader::new(conn.try_clone().map_err(|e| EmuError::io("control connection", e))?);
    let line = read_line(&mut reader)?;
    let req = match parse_request(&line) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(conn, "ERR {e}");
            return Err(EmuError::msg(e));
        }
    };
    writeln!(conn, "OK").map_err(|e| EmuError::io("answer", e))?;
    eprintln!("leocc record-server: {} flow for {} ms at {} bit/s with {peer}", req.dir.as_str(), req.duration.as_millis(), req.rate_bps);
    match req.dir {
        Dir::Down => {
            let out = UdpSocket::bind("0.0.0.0:0").map_err(|e| EmuError::io("bind UDP", e))?;
            blast(&out, SocketAddr::new(peer.ip(), req.udp_port), req.rate_bps, req.duration);
        }
        Dir::Up => {
            let arrivals = receive_flow(udp, req.duration + DRAIN_GRACE)?;
            let first = arrivals.first().copied().unwrap_or(0);
            let mut text = format!("ARRIVALS {}\n", arrivals.len());
            for a in &arrivals {
                text.push_str(&format!("{}\n", (a - first) / 1000));
            }
            conn.write_all(text.as_bytes()).map_err(|e| EmuError::io("send arrivals", e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_bad_ones_are_rejected() {
        let r = parse_request("LEOCC-RECORD 1 dir=down duration_ms=5000 rate_bps=100000000 udp_port=4000\n").unwrap();
        assert_eq!((r.dir, r.duration.as_millis(), r.rate_bps, r.udp_port), (Dir::Down, 5000, 100_000_000, 4000));
        assert!(parse_request("GET / HTTP/1.1").is_err());
        assert!(parse_request("LEOCC-RECORD 1 dir=sideways duration_ms=1 rate_bps=1 udp_port=1").is_err());
        assert!(parse_request("LEOCC-RECORD 1 dir=up duration_ms=0 rate_bps=1 udp_port=1").is_err());
        assert!(parse_request("LEOCC-RECORD 1 dir=up rate_bps=1 udp_port=1").is_err());
    }

    #[test]
    fn pings_become_delay_loss_and_outages() {
        let origin = 1_000_000_000;
        let ms = 1_000_000;
        // 300 pings: RTT 40 ms, then 60 ms from ping 100; ping 50 lost alone, 200..=204 lost.
        let sent_ns: Vec<u64> = (0..300).map(|i| origin + i * 10 * ms).collect();
        let rtt_ns = (0..300u64)
            .map(|i| match i {
                50 | 200..=204 => None,
                i if i >= 100 => Some(60 * ms),
                _ => Some(40 * ms),
            })
            .collect();
        let log = PingLog { sent_ns, rtt_ns };
        // A period that is not a whole number of ping intervals must not overflow the series.
        let (odd, _, _) = delay_and_loss(&log, origin, 2_995_000);
        assert_eq!(odd.values_us.len(), 300);
        let (delay, loss, outages) = delay_and_loss(&log, origin, 3_000_000);
        assert_eq!(delay.at(0), 20_000);
        assert_eq!(delay.at(500_000), 20_000, "an isolated loss is filled from before");
        assert_eq!(delay.at(1_500_000), 30_000);
        assert_eq!(outages, vec![Span { start_us: 2_000_000, len_us: 50_000 }]);
        assert!((loss.at(0) - 0.01).abs() < 1e-9, "one isolated loss in 100 pings");
        assert_eq!(loss.at(2_500_000), 0.0, "outage losses are not random loss");
    }
}
