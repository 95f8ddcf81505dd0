//! The consumer (`leocc leotp get`): requests a content's segments in order through its
//! first hop at the hop controller's rate, writes what arrives, and owns end-to-end
//! reliability: a segment unanswered for an RTO is requested again (the paper's
//! consumer-driven, timeout-based retransmission). A VPH from upstream restarts the timer of
//! the segments it covers, since a mid-node is already repairing them.
//!
//! The first hop answers the first interests with an address token (see `addrval`); the
//! requester echoes it and asks again, so a transfer starts one first-hop round trip later.
//! An error packet from the first hop (its name table is full, no producer serves the name)
//! ends the transfer with that reason, and so does a transfer in which nothing arrived: a
//! consumer never reports an empty success.

use crate::counters::Counters;
use crate::hopcc::HopCcConfig;
use crate::net::{self, Mono};
use crate::packet::{self, Kind, SEGMENT_BYTES, UNBOUNDED};
use crate::report::{Interval, Report};
use crate::requester::{Requester, Want};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Smallest retransmission timeout, µs: above a LEO path's RTT jitter (handovers add tens of
/// ms), so a delayed segment is not requested twice.
pub const RTO_MIN_US: u64 = 300_000;
/// Largest retransmission timeout, µs (after backoff).
pub const RTO_MAX_US: u64 = 4_000_000;
/// Most segments requested and not yet received: bounds the consumer's state (and the
/// reordering a file transfer must absorb) to 64 Ki × 1400 B = 88 MiB.
pub const MAX_OUTSTANDING: usize = 1 << 16;
/// Segments kept queued ahead of the pacer.
const QUEUE_AHEAD: usize = 256;
/// One-way delay samples kept for percentiles (enough for 25 s at 100 Mbit/s; the mean uses
/// every sample).
const MAX_OWD_SAMPLES: usize = 1 << 18;
/// Longest sleep of the event loop.
const IDLE_POLL: Duration = Duration::from_millis(10);
/// Without a single answer for this long, the transfer fails (producer down, wrong address).
pub const NO_ANSWER_TIMEOUT_US: u64 = 10_000_000;

/// What to fetch and how.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// The first hop (a mid-node or the producer).
    pub first_hop: SocketAddr,
    /// Content name (`bulk` for the endless source).
    pub name: String,
    /// Where to write the content (None: count only).
    pub output: Option<std::path::PathBuf>,
    /// Stop after this long (required for `bulk`; a file ends when complete).
    pub duration: Option<Duration>,
    /// Hop congestion control parameters for the first hop.
    pub cc: HopCcConfig,
    /// Detect holes on the first hop and repair them from the last mid-node's cache.
    pub innet_retx: bool,
    /// Report interval.
    pub interval: Duration,
    /// Print each interval on stderr as it ends.
    pub progress: bool,
}

struct Pending {
    sent_us: u64,
    deadline_us: u64,
    tries: u32,
}

/// Fetches one content; returns the iperf3-like report.
pub fn run(cfg: &ConsumerConfig, stop: &AtomicBool) -> Result<Report, String> {
    if !packet::valid_name(cfg.name.as_bytes()) {
        return Err(format!("content name {:?}: must be 1..={} printable ASCII characters without spaces", cfg.name, packet::MAX_NAME_LEN));
    }
    if crate::producer::is_bulk(&cfg.name) && cfg.duration.is_none() {
        return Err(format!("`{}` never ends: give a duration", cfg.name));
    }
    let bind: SocketAddr = if cfg.first_hop.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("literal address");
    let sock = net::bind(bind).map_err(|e| format!("bind: {e}"))?;
    let out = match &cfg.output {
        Some(p) => Some(File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let mut c = Consumer::new(cfg, sock, out);
    c.run(stop)?;
    Ok(c.finish())
}

struct Consumer<'a> {
    cfg: &'a ConsumerConfig,
    sock: UdpSocket,
    out: Option<File>,
    name: Arc<str>,
    req: Requester,
    counters: Counters,
    mono: Mono,
    total: Option<u32>,
    next_new: u32,
    pending: HashMap<u32, Pending>,
    timers: VecDeque<(u64, u32)>,
    received_segments: u64,
    bytes: u64,
    srtt_us: Option<f64>,
    rttvar_us: f64,
    timeouts: u64,
    owd_sum_us: f64,
    owd_n: u64,
    owd: Vec<u32>,
    intervals: Vec<Interval>,
    interval_start_us: u64,
    interval_bytes: u64,
    last_answer_us: u64,
    end_us: u64,
}

impl<'a> Consumer<'a> {
    fn new(cfg: &'a ConsumerConfig, sock: UdpSocket, out: Option<File>) -> Consumer<'a> {
        Consumer {
            cfg,
            sock,
            out,
            name: Arc::from(cfg.name.as_str()),
            req: Requester::new(cfg.first_hop, cfg.cc, true, cfg.innet_retx),
            counters: Counters::default(),
            mono: Mono::start(),
            total: None,
            next_new: 0,
            pending: HashMap::new(),
            timers: VecDeque::new(),
            received_segments: 0,
            bytes: 0,
            srtt_us: None,
            rttvar_us: 0.0,
            timeouts: 0,
            owd_sum_us: 0.0,
            owd_n: 0,
            owd: Vec::new(),
            intervals: Vec::new(),
            interval_start_us: 0,
            interval_bytes: 0,
            last_answer_us: 0,
            end_us: 0,
        }
    }

    fn rto_us(&self, tries: u32) -> u64 {
        let base = self.srtt_us.map_or(RTO_MIN_US as f64, |s| s + 4.0 * self.rttvar_us) as u64;
        (base.max(RTO_MIN_US) << tries.saturating_sub(1).min(4)).min(RTO_MAX_US)
    }

    fn done(&self) -> bool {
        self.total.is_some_and(|t| u64::from(t) == self.received_segments)
    }

    fn run(&mut self, stop: &AtomicBool) -> Result<(), String> {
        let mut buf = vec![0u8; packet::MAX_PACKET + 1];
        let mut sent = Vec::new();
        let limit_us = self.cfg.duration.map(|d| d.as_micros() as u64);
        loop {
            let now = self.mono.now_us();
            if stop.load(Ordering::Relaxed) || self.done() || limit_us.is_some_and(|l| now >= l) {
                break;
            }
            if now.saturating_sub(self.last_answer_us) > NO_ANSWER_TIMEOUT_US {
                return Err(format!("no answer from {} for {} s (is a producer serving {:?} there?)", self.cfg.first_hop, NO_ANSWER_TIMEOUT_US / 1_000_000, self.cfg.name));
            }
            self.fill(now);
            sent.clear();
            self.req.pump(now, &self.sock, &mut self.counters, &mut sent, |_| true);
            for w in &sent {
                let tries = self.pending.get(&w.seg).map_or(1, |p| p.tries);
                let deadline = now + self.rto_us(tries);
                if let Some(p) = self.pending.get_mut(&w.seg) {
                    p.sent_us = now;
                    p.deadline_us = deadline;
                    self.timers.push_back((deadline, w.seg));
                }
            }
            let wake = [self.req.next_send_us(now), self.timers.front().map(|t| t.0)].into_iter().flatten().min();
            let wait = wake.map_or(IDLE_POLL, |t| Duration::from_micros(t.saturating_sub(now)).min(IDLE_POLL));
            if !wait.is_zero() {
                net::wait_readable(&self.sock, wait);
            }
            for _ in 0..net::RX_BATCH {
                let Ok((n, from)) = self.sock.recv_from(&mut buf) else { break };
                self.counters.rx_packets += 1;
                let now = self.mono.now_us();
                self.handle(now, &buf[..n], from)?;
            }
            let now = self.mono.now_us();
            self.expire(now);
            self.roll_interval(now, false);
        }
        self.end_us = self.mono.now_us();
        self.roll_interval(self.end_us, true);
        if self.total.is_none() && !stop.load(Ordering::Relaxed) {
            return Err(format!(
                "nothing arrived from {} in {:.1} s ({})",
                self.cfg.first_hop,
                self.end_us as f64 / 1e6,
                if self.req.has_token() { "it validated this address but sent no data" } else { "no answer at all" }
            ));
        }
        Ok(())
    }

    /// Keeps the pacer's queue stocked with new segments.
    fn fill(&mut self, now: u64) {
        while self.req.backlog() < QUEUE_AHEAD && self.pending.len() < MAX_OUTSTANDING {
            let limit = self.total.unwrap_or(if self.next_new == 0 { 1 } else { self.next_new });
            if self.next_new >= limit || self.next_new == UNBOUNDED {
                break;
            }
            let seg = self.next_new;
            self.next_new += 1;
            self.pending.insert(seg, Pending { sent_us: now, deadline_us: u64::MAX, tries: 1 });
            self.req.want(Want { name: self.name.clone(), seg, retx: false });
        }
    }

    fn handle(&mut self, now: u64, dgram: &[u8], from: SocketAddr) -> Result<(), String> {
        let p = match packet::parse(dgram) {
            Ok(p) => p,
            Err(_) => {
                self.counters.malformed += 1;
                return Ok(());
            }
        };
        if from != self.cfg.first_hop {
            self.counters.spoofed += 1;
            return Ok(());
        }
        if p.kind == Kind::Token {
            // A token is for this address whatever content it names; the range is only ours
            // to ask again if it names our content.
            self.counters.tokens_received += 1;
            let (start, end) = if p.name == &*self.name { (p.start, p.end) } else { (0, 0) };
            self.req.on_token(&self.name, start, end, p.flags, p.payload);
            return Ok(());
        }
        if p.name != &*self.name || p.kind == Kind::Interest {
            self.counters.unsolicited += 1;
            return Ok(());
        }
        if let Some(code) = p.error_code() {
            self.counters.errors_received += 1;
            return Err(format!("{} refused {:?}: {code}", self.cfg.first_hop, self.cfg.name));
        }
        if p.kind == Kind::Void {
            self.counters.void_received += 1;
            self.req.on_void(&self.name, p.start, p.end);
            for seg in p.start..p.end {
                let rto = self.rto_us(1);
                if let Some(e) = self.pending.get_mut(&seg) {
                    e.deadline_us = now + rto;
                    self.timers.push_back((now + rto, seg));
                }
            }
            return Ok(());
        }
        self.last_answer_us = now;
        match self.total {
            None => {
                self.total = Some(p.end);
                if p.end != UNBOUNDED && self.cfg.output.is_some() {
                    if let Some(f) = &self.out {
                        f.set_len(0).map_err(|e| format!("output: {e}"))?;
                    }
                }
            }
            Some(t) if t != p.end => {
                self.counters.unsolicited += 1;
                return Ok(());
            }
            Some(_) => {}
        }
        if p.end != UNBOUNDED && p.start + 1 < p.end && p.payload.len() != SEGMENT_BYTES {
            // Only the last segment of a file may be short.
            self.counters.malformed += 1;
            return Ok(());
        }
        let arrival = self.req.on_data(now, &self.name, &p, &mut self.counters);
        let Some(pend) = self.pending.remove(&p.start) else {
            self.counters.duplicates += 1;
            return Ok(());
        };
        let _ = arrival;
        if pend.tries == 1 && pend.deadline_us != u64::MAX {
            let r = now.saturating_sub(pend.sent_us) as f64;
            match self.srtt_us {
                None => {
                    self.srtt_us = Some(r);
                    self.rttvar_us = r / 2.0;
                }
                Some(s) => {
                    self.rttvar_us += ((s - r).abs() - self.rttvar_us) / 4.0;
                    self.srtt_us = Some(s + (r - s) / 8.0);
                }
            }
        }
        if let Some(f) = &self.out {
            f.write_all_at(p.payload, u64::from(p.start) * SEGMENT_BYTES as u64).map_err(|e| format!("write output: {e}"))?;
        }
        self.received_segments += 1;
        self.bytes += p.payload.len() as u64;
        self.interval_bytes += p.payload.len() as u64;
        let owd = net::wall_us().saturating_sub(p.timestamp_us);
        self.owd_sum_us += owd as f64;
        self.owd_n += 1;
        if self.owd.len() < MAX_OWD_SAMPLES {
            self.owd.push(owd.min(u64::from(u32::MAX)) as u32);
        }
        Ok(())
    }

    /// Requests again what timed out.
    fn expire(&mut self, now: u64) {
        while let Some(&(deadline, seg)) = self.timers.front() {
            if deadline > now {
                break;
            }
            self.timers.pop_front();
            let Some(p) = self.pending.get_mut(&seg) else { continue };
            if p.deadline_us != deadline {
                continue;
            }
            p.tries += 1;
            p.deadline_us = u64::MAX;
            self.timeouts += 1;
            self.req.want(Want { name: self.name.clone(), seg, retx: true });
        }
        // Timers are pushed in deadline order except after a VPH restart; sort lazily when
        // the front is far behind the rest (rare), so an expired timer is never stuck.
        if self.timers.len() > 1 && self.timers.front().is_some_and(|f| f.0 == u64::MAX) {
            self.timers.make_contiguous().sort_unstable();
        }
    }

    fn roll_interval(&mut self, now: u64, last: bool) {
        let len = now.saturating_sub(self.interval_start_us);
        if len < self.cfg.interval.as_micros() as u64 && !(last && len > 0) {
            return;
        }
        let iv = Interval::new(self.interval_start_us, now, self.interval_bytes);
        if std::env::var_os(crate::mid::DEBUG_ENV).is_some() {
            eprintln!("leotp get debug: cwnd {:.1} srtt {:.0} rttmin {:?} thr {:.0} rate {:.0} upstream-backlog {} backlog {} inflight {} pending {} timers {} timeouts {} e2e srtt {:?} next_new {}", self.req.cc.cwnd(), self.req.cc.hop_rtt_us(), self.req.cc.hop_rtt_min_us(), self.req.cc.throughput_sps(), self.req.rate_sps(), self.req.upstream_backlog(), self.req.backlog(), self.req.in_flight(), self.pending.len(), self.timers.len(), self.timeouts, self.srtt_us, self.next_new);
        }
        if self.cfg.progress {
            eprintln!("leotp get: {:6.2}-{:6.2} s  {:8.2} Mbit/s", iv.start, iv.end, iv.bits_per_second / 1e6);
        }
        self.intervals.push(iv);
        self.interval_start_us = now;
        self.interval_bytes = 0;
    }

    fn finish(mut self) -> Report {
        self.owd.sort_unstable();
        let pct = |q: f64| -> Option<f64> {
            if self.owd.is_empty() {
                return None;
            }
            let i = ((self.owd.len() - 1) as f64 * q).round() as usize;
            Some(f64::from(self.owd[i]) / 1000.0)
        };
        Report {
            protocol: "LEOTP",
            first_hop: self.cfg.first_hop.to_string(),
            name: self.cfg.name.clone(),
            seconds: self.end_us as f64 / 1e6,
            bytes: self.bytes,
            complete: (self.total != Some(UNBOUNDED)).then(|| self.done()),
            endless: self.total == Some(UNBOUNDED),
            total_segments: self.total.filter(|&t| t != UNBOUNDED),
            intervals: std::mem::take(&mut self.intervals),
            owd_mean_ms: (self.owd_n > 0).then(|| self.owd_sum_us / self.owd_n as f64 / 1000.0),
            owd_p50_ms: pct(0.5),
            owd_p95_ms: pct(0.95),
            owd_p99_ms: pct(0.99),
            timeouts: self.timeouts,
            hop_rtt_min_ms: self.req.cc.hop_rtt_min_us().map(|r| r as f64 / 1000.0),
            final_cwnd: self.req.cc.cwnd(),
            counters: self.counters,
        }
    }
}
