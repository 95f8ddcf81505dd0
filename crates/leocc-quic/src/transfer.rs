//! `leocc quic serve` / `leocc quic get`: a bulk transfer over QUIC measured like iperf3.
//!
//! The server sends, with the congestion control it was started with (`--cc`), to each client
//! that connects; the client downloads. With `reverse` in the request (`leocc quic get -R`)
//! the client sends instead, with its own `--cc`, on a unidirectional stream after the
//! request, and the server counts what arrives (per interval, from the first byte) and
//! answers on the request stream with a [`ReceiverReport`]; the client's JSON then takes the
//! rates from the receiving side, as iperf3 does. Protocol (ALPN `leocc-quic-bulk/1`): the client opens
//! a bidirectional stream and writes one JSON request line (`duration_ms` or `bytes`,
//! `interval_ms`), then finishes its side; the server sends payload on that stream until the
//! duration or byte count is reached, finishes it, and then sends its sender-side report (one
//! JSON object, see [`SenderReport`]) on a unidirectional stream. The client merges it with
//! what it received into iperf3-like JSON ([`get`]'s output): `intervals[].streams[0]` with
//! `start`, `end`, `bytes`, `bits_per_second`, `rtt` (smoothed RTT, us), `snd_cwnd` (bytes),
//! `lost_packets`, `target_bps` (LeoCC's pacing rate, when it runs); `end.sum_sent` (bytes,
//! `retransmits` = lost packets, `wire_bytes` = delivered UDP datagrams with IP/UDP headers),
//! `end.sum_received` and `end.cpu` (process CPU seconds of both ends).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::cc::Cc;
use crate::controller::LeoccController;
use crate::events::EventSource;

/// Payload chunk written per stream write: large enough that the write path is not the
/// bottleneck at hundreds of Mbit/s, small enough to stop close to the requested byte count.
pub const CHUNK: usize = 64 * 1024;

/// IPv4 + UDP header bytes per datagram, to count what crosses the emulated link.
pub const IP_UDP_HEADER: u64 = 28;

/// Longest request line the server reads.
const MAX_REQUEST: usize = 4096;

/// Longest sender report the client reads: a 10 ms interval over an hour is 360 000 rows of
/// ~150 bytes; this bounds memory against a misbehaving peer.
const MAX_REPORT: usize = 64 << 20;

/// Idle timeout: an emulated outage (a LEO handover gap) is well under a second; 10 s
/// separates that from a peer that is gone.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Flow-control windows: QUIC's defaults (a few MB) cap throughput at window/RTT; 32 MB
/// covers several hundred Mbit/s at the RTT of a deep buffer (hundreds of ms).
const STREAM_WINDOW: u32 = 32 << 20;

/// The sender's buffer of written but unacknowledged data, as Linux's largest default TCP
/// send buffer (tcp_wmem max, 4 MiB) that iperf3 gets: above the BDP here (300 Mbit/s x
/// 60 ms = 2.25 MB), and what a timed transfer leaves buffered at its deadline drains in a
/// fraction of a second, as a TCP socket buffer does.
const SEND_WINDOW: u64 = 4 << 20;

/// Default of `--max-clients`, the transfers served at once. A transfer is a bulk sender that
/// fills its path; a lab server needs a few at once (the emulator runs one per QUIC flow, each
/// with its own server), and more than 8 on one single-threaded runtime would measure the
/// server's CPU rather than the congestion controls. Further clients are refused at once.
pub const DEFAULT_MAX_CLIENTS: usize = 8;

/// Default of `--max-duration`: the longest transfer served. 60 s covers the usual iperf3-like
/// runs (10-30 s) with room; a request above it is served for this long and the client is told
/// ([`SenderReport::limit_ms`]), so one client cannot hold the server for an hour.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(60);

/// How often the accept loop looks at the stop flag ([`ServeOptions::stop`]): a signal
/// handler can only set a flag, and a tenth of a second is an immediate exit to a person.
const STOP_POLL: Duration = Duration::from_millis(100);

/// What the client asks for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// Send for this long (ms); ignored when `bytes` is set.
    pub duration_ms: u64,
    /// Send exactly this many bytes instead.
    pub bytes: Option<u64>,
    /// Reporting interval, ms.
    pub interval_ms: u64,
    /// The client sends and the server receives (`leocc quic get -R`): the client then writes
    /// the payload on a unidirectional stream with its own congestion control, and the server
    /// answers on the request stream with its [`ReceiverReport`]. Absent (false) from older
    /// clients.
    #[serde(default)]
    pub reverse: bool,
}

/// One receiver-side sample per interval (reverse transfers).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReceiverInterval {
    /// Seconds since the first payload byte arrived (interval start).
    pub start: f64,
    /// Interval end.
    pub end: f64,
    /// Payload bytes received in the interval.
    pub bytes: u64,
}

/// The server's account of a reverse transfer (it received).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReceiverReport {
    /// Payload bytes received.
    pub bytes: u64,
    /// Seconds from the first payload byte to the end of the stream.
    pub seconds: f64,
    /// Process CPU seconds the server used while receiving.
    pub cpu_s: f64,
    /// Per-interval counts.
    pub intervals: Vec<ReceiverInterval>,
    /// Set when the server's `--max-duration` (ms) stopped the upload.
    pub limit_ms: Option<u64>,
}

/// One sender-side sample per interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SenderInterval {
    /// Seconds since the transfer began (interval start).
    pub start: f64,
    /// Interval end.
    pub end: f64,
    /// Payload bytes the application wrote in the interval.
    pub bytes: u64,
    /// UDP payload bytes sent in the interval.
    pub udp_bytes: u64,
    /// Smoothed RTT at the end, us.
    pub rtt: u64,
    /// Congestion window at the end, bytes.
    pub snd_cwnd: u64,
    /// Packets declared lost in the interval.
    pub lost_packets: u64,
    /// LeoCC's pacing rate at the end, bit/s (absent for other controls).
    pub target_bps: Option<u64>,
}

/// The server's account of one transfer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SenderReport {
    /// Congestion control.
    pub cc: String,
    /// Payload bytes sent.
    pub bytes: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// UDP datagrams and their IP/UDP bytes.
    pub wire_bytes: u64,
    /// Seconds from the first to the last payload byte written.
    pub seconds: f64,
    /// Process CPU seconds (user + system) the server used during the transfer.
    pub cpu_s: f64,
    /// Minimum RTT, us.
    pub min_rtt: u64,
    /// Per-interval samples.
    pub intervals: Vec<SenderInterval>,
    /// Set when the server's `--max-duration` (this value, ms) cut the transfer short of what
    /// was asked: a longer duration, or bytes not sent in time. Absent from older servers.
    #[serde(default)]
    pub limit_ms: Option<u64>,
}

/// Options of `leocc quic serve`.
#[derive(Clone)]
pub struct ServeOptions {
    /// UDP address to listen on.
    pub listen: SocketAddr,
    /// Congestion control for every connection.
    pub cc: Cc,
    /// Where the self-signed certificate goes.
    pub cert: PathBuf,
    /// Serve one transfer, then exit (as `iperf3 -s -1`).
    pub once: bool,
    /// Detector events for LeoCC.
    pub events: Arc<dyn EventSource>,
    /// Transfers served at once ([`DEFAULT_MAX_CLIENTS`]); at least 1.
    pub max_clients: usize,
    /// Longest transfer ([`DEFAULT_MAX_DURATION`]).
    pub max_duration: Duration,
    /// Set (by a signal handler) to stop serving: the endpoint closes and [`serve`] returns.
    pub stop: Option<&'static AtomicBool>,
}

/// Options of `leocc quic get`.
#[derive(Clone)]
pub struct GetOptions {
    /// Server address.
    pub server: SocketAddr,
    /// The server's certificate (DER).
    pub cert: PathBuf,
    /// The request.
    pub request: Request,
    /// The client's congestion control, used when it sends (`request.reverse`).
    pub cc: Cc,
    /// Detector events for the client's LeoCC (`request.reverse`).
    pub events: Arc<dyn EventSource>,
}

/// Process CPU time (user + system), seconds.
pub fn process_cpu_s() -> f64 {
    // SAFETY: getrusage fills a valid rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn transport(cc: Option<(&Cc, Arc<dyn EventSource>)>) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(IDLE_TIMEOUT.try_into().expect("10 s is a valid idle timeout")));
    t.stream_receive_window(STREAM_WINDOW.into());
    t.receive_window(STREAM_WINDOW.into());
    t.send_window(SEND_WINDOW);
    if let Some((cc, events)) = cc {
        t.congestion_controller_factory(cc.factory(events));
    }
    t
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    // One thread: the tool measures one transfer, and CPU per MB is part of what it reports.
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the async runtime")
}

/// Runs the server until interrupted (or after one transfer with `once`). Progress on stderr.
pub fn serve(o: &ServeOptions) -> Result<()> {
    runtime()?.block_on(serve_async(o))
}

async fn serve_async(o: &ServeOptions) -> Result<()> {
    if o.max_clients == 0 {
        bail!("--max-clients must be at least 1");
    }
    if o.max_duration.is_zero() {
        bail!("--max-duration must be positive");
    }
    let cfg = crate::tls::make_server_config(&o.cert, transport(Some((&o.cc, o.events.clone()))))?;
    let ep = quinn::Endpoint::server(cfg, o.listen).with_context(|| format!("listening on UDP {}", o.listen))?;
    eprintln!(
        "leocc quic serve: {} on {}, certificate {}, up to {} clients at once, transfers up to {:.1} s",
        o.cc.name(),
        ep.local_addr()?,
        o.cert.display(),
        o.max_clients,
        o.max_duration.as_secs_f64()
    );
    let active = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let inc = tokio::select! {
            inc = ep.accept() => inc,
            _ = tokio::time::sleep(STOP_POLL) => {
                if o.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                    eprintln!("leocc quic serve: stopping");
                    ep.close(0u32.into(), b"server stopping");
                    break;
                }
                // Reap finished transfers so the set does not grow with the server's life.
                while tasks.try_join_next().is_some() {}
                continue;
            }
        };
        let Some(inc) = inc else { break };
        if active.load(Ordering::SeqCst) >= o.max_clients {
            eprintln!("leocc quic serve: {}: refused, {} clients already served (--max-clients)", inc.remote_address(), o.max_clients);
            inc.refuse();
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(active.clone());
        let (cc, max_duration) = (o.cc, o.max_duration);
        let task = async move {
            let _slot = slot;
            let conn = match inc.await {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("leocc quic serve: handshake failed: {e}");
                    return false;
                }
            };
            let peer = conn.remote_address();
            match serve_one(&conn, &cc, max_duration).await {
                Ok(what) => eprintln!("leocc quic serve: {peer}: {what}"),
                Err(e) => eprintln!("leocc quic serve: {peer}: {e:#}"),
            }
            true
        };
        if o.once {
            // One transfer, served here; a failed handshake does not count as it.
            if task.await {
                break;
            }
            continue;
        }
        tasks.spawn(task);
    }
    // Transfers under way finish (or fail at once when the endpoint was closed by a stop).
    while tasks.join_next().await.is_some() {}
    ep.wait_idle().await;
    Ok(())
}

/// One of the `max_clients` places, given back when the transfer's task ends in any way.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves one transfer; returns the line the server logs about it.
async fn serve_one(conn: &quinn::Connection, cc: &Cc, max_duration: Duration) -> Result<String> {
    let (mut send, mut recv) = conn.accept_bi().await.context("waiting for the request stream")?;
    let raw = recv.read_to_end(MAX_REQUEST).await.context("reading the request")?;
    let req: Request = serde_json::from_slice(&raw).map_err(|e| anyhow!("bad request: {e}"))?;
    if req.interval_ms == 0 {
        bail!("bad request: interval_ms is 0");
    }
    let mbps = |bytes: u64, s: f64| bytes as f64 * 8.0 / s.max(1e-9) / 1e6;
    if req.reverse {
        let mut data = conn.accept_uni().await.context("waiting for the client's data stream (-R)")?;
        let r = receive_bulk(&mut data, Duration::from_millis(req.interval_ms), max_duration).await?;
        if let Some(l) = r.limit_ms {
            eprintln!("leocc quic serve: {}: upload stopped after {:.1} s (--max-duration)", conn.remote_address(), l as f64 / 1e3);
        }
        send.write_all(&serde_json::to_vec(&r)?).await.context("sending the report")?;
        send.finish().context("finishing the report")?;
        conn.closed().await;
        return Ok(format!("received {} bytes in {:.2} s ({:.1} Mbit/s, the client sent: -R)", r.bytes, r.seconds, mbps(r.bytes, r.seconds)));
    }
    // Timed transfers are clamped to the server's limit, and byte counts are sent only for
    // that long: either way no client holds a place longer than --max-duration.
    let asked = Duration::from_millis(req.duration_ms);
    if req.bytes.is_none() && asked > max_duration {
        eprintln!(
            "leocc quic serve: {}: asked for {:.1} s, serving {:.1} s (--max-duration)",
            conn.remote_address(),
            asked.as_secs_f64(),
            max_duration.as_secs_f64()
        );
    }
    let report = send_bulk(conn, &mut send, cc, &req, max_duration, "leocc quic serve").await?;
    let mut uni = conn.open_uni().await.context("opening the report stream")?;
    uni.write_all(&serde_json::to_vec(&report)?).await.context("sending the report")?;
    uni.finish().context("finishing the report")?;
    // Wait for the client to close (it does after reading the report), bounded by the idle timeout.
    conn.closed().await;
    Ok(format!("sent {} bytes in {:.2} s ({:.1} Mbit/s), {} lost packets", report.bytes, report.seconds, mbps(report.bytes, report.seconds), report.lost_packets))
}

/// Sends what `req` asks for on `send`, the sending end of either side (the server, or the
/// client with -R), for at most `max_duration` (the server's --max-duration), sampling `conn`
/// every interval; finishes the stream and waits until the peer has all of it. `who` starts
/// the messages. A peer that stops the stream (a server's --max-duration during an upload)
/// ends the transfer early, which the report's `limit_ms` does not claim: the peer says so.
async fn send_bulk(conn: &quinn::Connection, send: &mut quinn::SendStream, cc: &Cc, req: &Request, max_duration: Duration, who: &str) -> Result<SenderReport> {
    let interval = Duration::from_millis(req.interval_ms);
    let asked = Duration::from_millis(req.duration_ms);
    let clamped = req.bytes.is_none() && asked > max_duration;
    let limit_time = asked.min(max_duration);
    let (mut cut, mut stopped) = (false, false);
    let buf = vec![0x5au8; CHUNK];
    let cpu0 = process_cpu_s();
    let t0 = Instant::now();
    let s0 = conn.stats();
    let mut next = t0 + interval;
    let (mut sent, mut iv_bytes) = (0u64, 0u64);
    let mut prev = s0;
    let mut intervals = Vec::new();
    let sample = |now: Instant, iv_bytes: &mut u64, prev: &mut quinn::ConnectionStats, intervals: &mut Vec<SenderInterval>| {
        let s = conn.stats();
        let start = intervals.last().map_or(0.0, |l: &SenderInterval| l.end);
        intervals.push(SenderInterval {
            start,
            end: now.duration_since(t0).as_secs_f64(),
            bytes: *iv_bytes,
            udp_bytes: s.udp_tx.bytes - prev.udp_tx.bytes,
            rtt: s.path.rtt.as_micros() as u64,
            snd_cwnd: s.path.cwnd,
            lost_packets: s.path.lost_packets - prev.path.lost_packets,
            target_bps: leocc_rate(conn, cc),
        });
        *iv_bytes = 0;
        *prev = s;
    };
    loop {
        let want = match req.bytes {
            Some(total) if sent < total && t0.elapsed() >= max_duration => {
                eprintln!("{who}: {}: {sent} of {total} bytes sent in --max-duration {:.1} s; stopping", conn.remote_address(), max_duration.as_secs_f64());
                cut = true;
                0
            }
            Some(total) => (total - sent).min(CHUNK as u64) as usize,
            None if t0.elapsed() >= limit_time => 0,
            None => CHUNK,
        };
        if want == 0 {
            break;
        }
        // Sample on time even while the write waits for flow or congestion control.
        let wait = next.saturating_duration_since(Instant::now());
        tokio::select! {
            r = send.write(&buf[..want]) => match r {
                Ok(n) => {
                    sent += n as u64;
                    iv_bytes += n as u64;
                }
                Err(quinn::WriteError::Stopped(_)) => {
                    stopped = true;
                    break;
                }
                Err(e) => return Err(e).context("sending"),
            },
            _ = tokio::time::sleep(wait) => {}
        }
        let now = Instant::now();
        if now >= next {
            sample(now, &mut iv_bytes, &mut prev, &mut intervals);
            next += interval;
            if next < now {
                next = now + interval;
            }
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    if !stopped {
        send.finish().context("finishing the data stream")?;
        // The report follows once the peer has everything: the stream's end is acknowledged.
        let _ = send.stopped().await;
    }
    sample(Instant::now(), &mut iv_bytes, &mut prev, &mut intervals);
    let s = conn.stats();
    Ok(SenderReport {
        cc: cc.name().to_string(),
        bytes: sent,
        lost_packets: s.path.lost_packets - s0.path.lost_packets,
        sent_packets: s.path.sent_packets - s0.path.sent_packets,
        wire_bytes: delivered_wire_bytes(&s0, &s),
        seconds,
        cpu_s: process_cpu_s() - cpu0,
        min_rtt: s.path.min_rtt.as_micros() as u64,
        intervals,
        limit_ms: (clamped || cut).then_some(max_duration.as_millis() as u64),
    })
}

/// Receives a stream to its end, counting payload bytes from the first one, per `interval`;
/// stops it once it has run `max_duration` (the server's --max-duration).
async fn receive_bulk(recv: &mut quinn::RecvStream, interval: Duration, max_duration: Duration) -> Result<ReceiverReport> {
    let cpu0 = process_cpu_s();
    let (mut first, mut next): (Option<Instant>, Option<Instant>) = (None, None);
    let (mut bytes, mut iv_bytes) = (0u64, 0u64);
    let mut intervals: Vec<ReceiverInterval> = Vec::new();
    let mut limit_ms = None;
    let push = |intervals: &mut Vec<ReceiverInterval>, t0: Instant, now: Instant, iv_bytes: &mut u64| {
        let start = intervals.last().map_or(0.0, |l| l.end);
        intervals.push(ReceiverInterval { start, end: now.duration_since(t0).as_secs_f64(), bytes: *iv_bytes });
        *iv_bytes = 0;
    };
    loop {
        let wait = next.map_or(STOP_POLL, |n| n.saturating_duration_since(Instant::now()));
        tokio::select! {
            r = recv.read_chunk(CHUNK, true) => match r.context("receiving")? {
                Some(c) => {
                    let now = Instant::now();
                    let t0 = *first.get_or_insert(now);
                    next.get_or_insert(t0 + interval);
                    bytes += c.bytes.len() as u64;
                    iv_bytes += c.bytes.len() as u64;
                }
                None => break,
            },
            _ = tokio::time::sleep(wait) => {}
        }
        let now = Instant::now();
        if let (Some(t0), Some(n)) = (first, next.as_mut()) {
            if now >= *n {
                push(&mut intervals, t0, now, &mut iv_bytes);
                *n += interval;
                if *n < now {
                    *n = now + interval;
                }
            }
            if now.duration_since(t0) >= max_duration {
                let _ = recv.stop(0u32.into());
                limit_ms = Some(max_duration.as_millis() as u64);
                break;
            }
        }
    }
    let seconds = first.map_or(0.0, |f| f.elapsed().as_secs_f64());
    if let Some(t0) = first {
        if iv_bytes > 0 || intervals.is_empty() {
            push(&mut intervals, t0, Instant::now(), &mut iv_bytes);
        }
    }
    Ok(ReceiverReport { bytes, seconds, cpu_s: process_cpu_s() - cpu0, intervals, limit_ms })
}

/// Bytes that crossed the path: the datagrams sent minus those declared lost, at the mean
/// datagram size with IP/UDP headers (what the emulator's link carried for the flow).
fn delivered_wire_bytes(s0: &quinn::ConnectionStats, s: &quinn::ConnectionStats) -> u64 {
    let datagrams = s.udp_tx.datagrams - s0.udp_tx.datagrams;
    if datagrams == 0 {
        return 0;
    }
    let wire = (s.udp_tx.bytes - s0.udp_tx.bytes) + IP_UDP_HEADER * datagrams;
    let lost = (s.path.lost_packets - s0.path.lost_packets).min(datagrams);
    // Packets, not datagrams, are declared lost; with one packet per datagram in bulk sending
    // (coalescing happens only in the handshake) the two counts agree.
    wire / datagrams * (datagrams - lost)
}

/// LeoCC's current pacing rate in bit/s, when the connection runs LeoCC.
fn leocc_rate(conn: &quinn::Connection, cc: &Cc) -> Option<u64> {
    if *cc != Cc::Leocc {
        return None;
    }
    let c = conn.congestion_state().into_any().downcast::<LeoccController>().ok()?;
    Some(c.pacing_rate().saturating_mul(8))
}

/// Downloads from a server and returns iperf3-like JSON.
pub fn get(o: &GetOptions) -> Result<Value> {
    runtime()?.block_on(get_async(o))
}

async fn get_async(o: &GetOptions) -> Result<Value> {
    if o.request.interval_ms == 0 {
        bail!("--interval must be positive");
    }
    let bind: SocketAddr = if o.server.is_ipv6() { "[::]:0".parse()? } else { "0.0.0.0:0".parse()? };
    let mut ep = quinn::Endpoint::client(bind).context("opening a UDP socket")?;
    // The client's congestion control matters only when it sends (-R).
    let cc = o.request.reverse.then(|| (&o.cc, o.events.clone()));
    ep.set_default_client_config(crate::tls::make_client_config(&o.cert, transport(cc))?);
    let conn = ep
        .connect(o.server, crate::tls::SERVER_NAME)?
        .await
        .with_context(|| format!("connecting to {} (is `leocc quic serve` running there?)", o.server))?;
    let cpu0 = process_cpu_s();
    let (mut send, mut recv) = conn.open_bi().await.context("opening the request stream")?;
    send.write_all(&serde_json::to_vec(&o.request)?).await.context("sending the request")?;
    send.finish().context("finishing the request")?;
    if o.request.reverse {
        let mut data = conn.open_uni().await.context("opening the data stream")?;
        let rep = send_bulk(&conn, &mut data, &o.cc, &o.request, Duration::MAX, "leocc quic get").await?;
        let raw = recv.read_to_end(MAX_REPORT).await.context("reading the server's report")?;
        let r: ReceiverReport = serde_json::from_slice(&raw)
            .map_err(|e| anyhow!("bad report from the server: {e} (-R needs a server as new as this client: an older one sends instead of receiving)"))?;
        if let Some(l) = r.limit_ms {
            eprintln!("leocc quic get: the server limits transfers to {:.1} s (its --max-duration) and stopped this upload there", l as f64 / 1e3);
        }
        conn.close(0u32.into(), b"done");
        ep.wait_idle().await;
        let received = Received { bytes: r.bytes, seconds: r.seconds, cpu_s: r.cpu_s, intervals: Some(&r.intervals), limit_ms: r.limit_ms };
        return Ok(to_json(o, &rep, &received));
    }
    let mut first: Option<Instant> = None;
    let mut received = 0u64;
    while let Some(chunk) = recv.read_chunk(CHUNK, true).await.context("receiving")? {
        first.get_or_insert_with(Instant::now);
        received += chunk.bytes.len() as u64;
    }
    let seconds = first.map_or(0.0, |f| f.elapsed().as_secs_f64());
    let cpu = process_cpu_s() - cpu0;
    let mut uni = conn.accept_uni().await.context("waiting for the server's report")?;
    let raw = uni.read_to_end(MAX_REPORT).await.context("reading the server's report")?;
    let rep: SenderReport = serde_json::from_slice(&raw).map_err(|e| anyhow!("bad report from the server: {e}"))?;
    if let Some(l) = rep.limit_ms {
        eprintln!("leocc quic get: the server limits transfers to {:.1} s (its --max-duration); this one was cut short of the request", l as f64 / 1e3);
    }
    conn.close(0u32.into(), b"done");
    ep.wait_idle().await;
    Ok(to_json(o, &rep, &Received { bytes: received, seconds, cpu_s: cpu, intervals: None, limit_ms: rep.limit_ms }))
}

/// What the receiving end counted: the client by default, the server with -R (then with its
/// own intervals).
struct Received<'a> {
    bytes: u64,
    seconds: f64,
    cpu_s: f64,
    intervals: Option<&'a [ReceiverInterval]>,
    limit_ms: Option<u64>,
}

/// The iperf3-like JSON of a transfer. The interval rows carry the sender's samples (RTT,
/// cwnd, lost packets, LeoCC's rate); their bytes and rates are the receiver's when it counted
/// per interval (-R: the server), else what the sender wrote. Totals: `sum_sent` the sender's,
/// `sum_received` the receiver's.
fn to_json(o: &GetOptions, rep: &SenderReport, recv: &Received) -> Value {
    let n = recv.intervals.map_or(rep.intervals.len(), <[ReceiverInterval]>::len);
    let intervals: Vec<Value> = (0..n)
        .map(|k| {
            let snd = rep.intervals.get(k);
            let (start, end, bytes) = match recv.intervals {
                Some(r) => (r[k].start, r[k].end, r[k].bytes),
                None => {
                    let iv = snd.expect("k < the sender's intervals");
                    (iv.start, iv.end, iv.bytes)
                }
            };
            let dt = (end - start).max(1e-9);
            let mut s = json!({
                "start": start, "end": end, "seconds": dt, "bytes": bytes,
                "bits_per_second": bytes as f64 * 8.0 / dt,
            });
            if let Some(iv) = snd {
                let sdt = (iv.end - iv.start).max(1e-9);
                s["udp_bits_per_second"] = json!(iv.udp_bytes as f64 * 8.0 / sdt);
                s["rtt"] = iv.rtt.into();
                s["snd_cwnd"] = iv.snd_cwnd.into();
                s["lost_packets"] = iv.lost_packets.into();
                if let Some(t) = iv.target_bps {
                    s["target_bps"] = t.into();
                }
            }
            json!({ "streams": [s] })
        })
        .collect();
    let rtts: Vec<u64> = rep.intervals.iter().map(|i| i.rtt).filter(|&r| r > 0).collect();
    let mb = recv.bytes as f64 / 1e6;
    let reverse = o.request.reverse;
    let (sender_cpu, receiver_cpu) = (rep.cpu_s, recv.cpu_s);
    json!({
        "start": {
            "connected": [{ "remote_host": o.server.ip().to_string(), "remote_port": o.server.port() }],
            "test_start": { "protocol": "QUIC", "cc": rep.cc, "duration_ms": o.request.duration_ms, "bytes": o.request.bytes, "interval_ms": o.request.interval_ms,
                            "reverse": reverse, "sender": if reverse { "client" } else { "server" } },
        },
        "intervals": intervals,
        "end": {
            "sum_sent": { "bytes": rep.bytes, "seconds": rep.seconds, "bits_per_second": rep.bytes as f64 * 8.0 / rep.seconds.max(1e-9),
                           "retransmits": rep.lost_packets, "sent_packets": rep.sent_packets, "wire_bytes": rep.wire_bytes },
            "sum_received": { "bytes": recv.bytes, "seconds": recv.seconds, "bits_per_second": recv.bytes as f64 * 8.0 / recv.seconds.max(1e-9) },
            "rtt_samples_us": rtts,
            "min_rtt": rep.min_rtt,
            "cpu": { "sender_s": sender_cpu, "receiver_s": receiver_cpu,
                     "sender_s_per_mb": if mb > 0.0 { sender_cpu / mb } else { 0.0 } },
            "sender_tcp_congestion": rep.cc,
            "server_limit_ms": recv.limit_ms,
        }
    })
}
