//! A mid-node (`leocc leotp mid`): one per hop of the path (ground station, satellite). It
//! answers interests from its cache, aggregates the rest in a pending-interest table and
//! requests them upstream at the hop's congestion-controlled rate (eq. 6–9), caches the data
//! that comes back and forwards it to whoever asked. Holes on its upstream hop are repaired
//! from the upstream neighbour's cache and announced downstream with a Void Packet Header.
//!
//! Interests are lost too, and a lost interest costs more than lost data: no node above the
//! loss ever asked for the range, so the hole seen downstream one round trip later must be
//! fetched from the producer, another round trip away. A requester asks for new segments in
//! order, so a mid-node that sees a downstream neighbour's new requests jump ahead knows the
//! range in between was asked for and lost on the way, and fetches it at once (interest-gap
//! recovery: our addition, not in the seed; part of in-network retransmission).
//!
//! A mid-node is a server to its downstream neighbours and obeys the same rules as the
//! producer: it serves (from its cache or by forwarding) only interests from addresses it has
//! validated (`addrval`), and interns a content name only for such an interest, in a table
//! whose idle names expire (`names`); when that table is full it says so (an error packet)
//! instead of never answering. Its upstream side does the token round trip like a consumer.
//!
//! Addressing is explicit next-hop configuration: the node listens on one address and knows
//! its upstream neighbour's; downstream neighbours are whoever sends interests. See
//! docs/leotp.md for why (and for TPROXY, which this kernel has built in).

use crate::addrval::{Admit, Validator};
use crate::cache::{Cache, Segment, DEFAULT_CACHE_BYTES};
use crate::counters::Counters;
use crate::hopcc::HopCcConfig;
use crate::net::{self, Mono, SplitMix};
use crate::names::{Names, NAME_IDLE_US};
use crate::packet::{self, ErrorCode, Kind, Packet, FLAG_RETX};
use crate::requester::{Requester, Want};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Most pending-interest entries (segments asked for and not yet answered).
pub const MAX_PIT: usize = 1 << 18;
/// Most downstream neighbours waiting for one segment.
const MAX_FACES: usize = 4;
/// A pending interest older than this is forgotten, µs: its requester has retransmitted or
/// given up long before.
const PIT_LIFETIME_US: u64 = 5_000_000;
/// Environment variable that turns on the periodic state print of mid-nodes and consumers.
pub const DEBUG_ENV: &str = "LEOTP_DEBUG";
/// Period of that print, µs.
const DEBUG_PERIOD_US: u64 = 1_000_000;
/// Longest sleep of the event loop, when nothing is scheduled.
const IDLE_POLL: Duration = Duration::from_millis(20);

/// How a mid-node runs.
#[derive(Debug, Clone)]
pub struct MidConfig {
    /// Address to listen on (downstream neighbours send here).
    pub listen: SocketAddr,
    /// The upstream neighbour (the next mid-node or the producer).
    pub upstream: SocketAddr,
    /// Cache bound, bytes.
    pub cache_bytes: usize,
    /// Hop-by-hop congestion control (off: interests are forwarded as they come).
    pub hop_cc: bool,
    /// In-network retransmission: hole detection, repair from upstream, VPH.
    pub innet_retx: bool,
    /// Parameters of eq. 8–9.
    pub cc: HopCcConfig,
    /// Drop this fraction of the data arriving from upstream (tests and demonstrations of
    /// repair without an emulator; the emulated path is the real lossy link).
    pub inject_loss: f64,
    /// Seed of the loss injector.
    pub seed: u64,
}

impl MidConfig {
    /// Defaults: both halves of the protocol on, a 64 MiB cache.
    pub fn new(listen: SocketAddr, upstream: SocketAddr) -> MidConfig {
        MidConfig { listen, upstream, cache_bytes: DEFAULT_CACHE_BYTES, hop_cc: true, innet_retx: true, cc: HopCcConfig::default(), inject_loss: 0.0, seed: 1 }
    }
}

struct PitEntry {
    /// Downstream neighbours waiting, with when each asked (for `hold_us`).
    faces: Vec<(SocketAddr, u64)>,
    created_us: u64,
}

/// A running mid-node's state.
pub struct Mid {
    cfg: MidConfig,
    sock: UdpSocket,
    req: Requester,
    cache: Cache,
    pit: HashMap<(Arc<str>, u32), PitEntry>,
    names: Names,
    /// Per content and downstream neighbour (at most `MAX_FACES`), the segment its next new
    /// request should start at. Keyed by content first so an expired name drops its entries
    /// at once.
    next_new: HashMap<Arc<str>, Vec<(SocketAddr, u32)>>,
    validator: Validator,
    /// What happened so far.
    pub counters: Counters,
    /// Data bytes forwarded downstream (payload), from cache or upstream.
    pub forwarded_bytes: u64,
    /// CPU time the node's thread spent in `run`, µs.
    pub cpu_us: u64,
    rng: SplitMix,
    last_pit_sweep: u64,
    last_name_sweep: u64,
    expired: Vec<Arc<str>>,
    out: Vec<u8>,
    sent: Vec<Want>,
    /// Print the hop's state every `DEBUG_PERIOD_US` on stderr (env LEOTP_DEBUG set).
    debug: bool,
    last_debug_us: u64,
}

impl Mid {
    /// Binds the listening socket.
    pub fn bind(cfg: MidConfig) -> Result<Mid, String> {
        let sock = net::bind(cfg.listen).map_err(|e| format!("bind {}: {e}", cfg.listen))?;
        Ok(Mid {
            req: Requester::new(cfg.upstream, cfg.cc, cfg.hop_cc, cfg.innet_retx),
            cache: Cache::new(cfg.cache_bytes),
            rng: SplitMix::new(cfg.seed),
            cfg,
            sock,
            pit: HashMap::new(),
            names: Names::new(crate::MAX_FLOWS),
            next_new: HashMap::new(),
            validator: Validator::new()?,
            counters: Counters::default(),
            forwarded_bytes: 0,
            cpu_us: 0,
            last_pit_sweep: 0,
            last_name_sweep: 0,
            expired: Vec::new(),
            out: Vec::with_capacity(packet::MAX_PACKET),
            sent: Vec::new(),
            debug: std::env::var_os(DEBUG_ENV).is_some(),
            last_debug_us: 0,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("bound socket has an address")
    }

    /// Cache statistics: (bytes held, evictions).
    pub fn cache_stats(&self) -> (usize, u64) {
        (self.cache.bytes(), self.cache.evictions)
    }

    /// Forwards until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) {
        let mono = Mono::start();
        let cpu0 = net::thread_cpu_us();
        let mut buf = vec![0u8; packet::MAX_PACKET + 1];
        while !stop.load(Ordering::Relaxed) {
            let now = mono.now_us();
            let wait = self.req.next_send_us(now).map_or(IDLE_POLL, |t| Duration::from_micros(t.saturating_sub(now)).min(IDLE_POLL));
            if !wait.is_zero() {
                net::wait_readable(&self.sock, wait);
            }
            for _ in 0..net::RX_BATCH {
                let Ok((n, from)) = self.sock.recv_from(&mut buf) else { break };
                self.counters.rx_packets += 1;
                let now = mono.now_us();
                self.handle(now, &buf[..n], from);
            }
            let now = mono.now_us();
            self.tick(now);
        }
        self.cpu_us += net::thread_cpu_us().saturating_sub(cpu0);
    }

    /// The node's state as JSON, for the program's exit report.
    pub fn summary_json(&self) -> serde_json::Value {
        serde_json::json!({
            "listen": self.local_addr().to_string(),
            "upstream": self.cfg.upstream.to_string(),
            "forwarded_bytes": self.forwarded_bytes,
            "cpu_s": self.cpu_us as f64 / 1e6,
            "cache": { "bytes": self.cache.bytes(), "limit": self.cfg.cache_bytes, "evictions": self.cache.evictions },
            "names": { "held": self.names.len(), "limit": crate::MAX_FLOWS },
            "upstream_hop": { "cwnd_segments": self.req.cc.cwnd(), "rtt_min_ms": self.req.cc.hop_rtt_min_us().map(|r| r as f64 / 1000.0), "backlog": self.req.backlog() },
            "counters": self.counters,
        })
    }

    fn tick(&mut self, now: u64) {
        self.sent.clear();
        let names = &self.names;
        self.req.pump(now, &self.sock, &mut self.counters, &mut self.sent, |n| names.contains(n));
        if self.debug && now.saturating_sub(self.last_debug_us) >= DEBUG_PERIOD_US {
            self.last_debug_us = now;
            let cc = &self.req.cc;
            eprintln!(
                "leotp mid debug: t {:.1} s cwnd {:.1} srtt {:.1} ms min {:?} thr {:.0}/s rate {:.0}/s backlog {} upstream-backlog {} in-flight {} pit {} names {} expired {} fwd {} B",
                now as f64 / 1e6, cc.cwnd(), cc.hop_rtt_us() / 1000.0, cc.hop_rtt_min_us(), cc.throughput_sps(), self.req.rate_sps(), self.req.backlog(), self.req.upstream_backlog(), self.req.in_flight(), self.pit.len(), self.names.len(), self.counters.names_expired, self.forwarded_bytes
            );
        }
        if now.saturating_sub(self.last_pit_sweep) > PIT_LIFETIME_US / 4 {
            self.last_pit_sweep = now;
            self.pit.retain(|_, e| now.saturating_sub(e.created_us) < PIT_LIFETIME_US);
        }
        if now.saturating_sub(self.last_name_sweep) > NAME_IDLE_US / 4 {
            self.last_name_sweep = now;
            let mut expired = std::mem::take(&mut self.expired);
            self.names.expire(now, &mut expired);
            self.forget(&mut expired);
            self.expired = expired;
        }
    }

    /// Drops the per-content state of expired names (and empties `expired`).
    fn forget(&mut self, expired: &mut Vec<Arc<str>>) {
        self.counters.names_expired += expired.len() as u64;
        for n in expired.drain(..) {
            self.req.forget(&n);
            self.next_new.remove(&n);
        }
    }

    /// The interned name of a validated interest; None (and the requester told) when the
    /// table is full of names in use.
    fn intern(&mut self, now: u64, p: &Packet, from: SocketAddr) -> Option<Arc<str>> {
        let mut expired = std::mem::take(&mut self.expired);
        let name = self.names.intern(p.name, now, &mut expired);
        self.forget(&mut expired);
        self.expired = expired;
        if name.is_none() {
            self.counters.state_full += 1;
            Packet::error(p.name, p.start, p.end, ErrorCode::TableFull).encode(&mut self.out);
            self.counters.errors_sent += 1;
            send(&self.sock, &self.out, from, &mut self.counters);
        }
        name
    }

    /// Handles one datagram (public for the benchmark, which drives a node without sockets'
    /// timing noise).
    pub fn handle(&mut self, now: u64, dgram: &[u8], from: SocketAddr) {
        let p = match packet::parse(dgram) {
            Ok(p) => p,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        // Names are interned only after every check has passed: the kind, the source (the
        // upstream neighbour for what comes from upstream, a validated address for
        // interests). Anything else must not take a slot.
        if p.kind == Kind::Interest {
            if self.validator.admit(&p, dgram.len(), from, &self.sock, &mut self.out, &mut self.counters) == Admit::Drop {
                return;
            }
            if let Some(name) = self.intern(now, &p, from) {
                self.on_interest(now, &name, &p, from);
            }
            return;
        }
        if from != self.cfg.upstream {
            self.counters.spoofed += 1;
            return;
        }
        if p.kind == Kind::Token {
            self.counters.tokens_received += 1;
            // A name this node no longer holds: keep the token, there is nothing to resend.
            let (start, end) = if self.names.contains(p.name) { (p.start, p.end) } else { (0, 0) };
            let name = self.names.get(p.name, now).unwrap_or_else(|| Arc::from(""));
            self.req.on_token(&name, start, end, p.flags, p.payload);
            return;
        }
        // Data, void or an error for a content this node holds no name for (never asked for,
        // or expired): nobody here waits for it. An error does not count as use of the name.
        let name = if p.kind == Kind::Error { self.names.peek(p.name) } else { self.names.get(p.name, now) };
        let Some(name) = name else {
            self.counters.unsolicited += 1;
            return;
        };
        match p.kind {
            Kind::Data => self.on_data(now, &name, &p, dgram),
            Kind::Void => {
                self.counters.void_received += 1;
                self.req.on_void(&name, p.start, p.end);
                self.send_voids(&name, &[(p.start, p.end)]);
            }
            Kind::Error => self.on_error(&name, &p),
            Kind::Interest | Kind::Token => {}
        }
    }

    /// Upstream refused `[start, end)` of `name`: relay the error to every downstream
    /// neighbour waiting for part of it, who would otherwise wait for its timer (or, for a
    /// full table further up, never learn why nothing comes).
    fn on_error(&mut self, name: &Arc<str>, p: &Packet) {
        self.counters.errors_received += 1;
        self.req.on_refused(name, p.start, p.end);
        let mut faces: Vec<SocketAddr> = Vec::new();
        for s in p.start..p.end {
            if let Some(e) = self.pit.remove(&(name.clone(), s)) {
                for (f, _) in e.faces {
                    if !faces.contains(&f) {
                        faces.push(f);
                    }
                }
            }
        }
        let Some(code) = p.error_code() else { return };
        Packet::error(name, p.start, p.end, code).encode(&mut self.out);
        for f in faces {
            self.counters.errors_sent += 1;
            send(&self.sock, &self.out, f, &mut self.counters);
        }
        // Nobody serves it: its slot is free at once (junk names are exactly this), and its
        // requests still queued go unsent.
        if code == ErrorCode::UnknownContent && self.names.remove(name) {
            self.counters.names_expired += 1;
            self.req.forget(name);
            self.next_new.remove(name);
        }
    }

    /// The range a downstream neighbour asked for in interests that never arrived: the gap
    /// between where its new requests should have continued and where this one starts.
    fn interest_gap(&mut self, name: &Arc<str>, from: SocketAddr, start: u32, end: u32) -> std::ops::Range<u32> {
        // Bounded: one entry per interned name (expired with it), at most MAX_FACES
        // neighbours each.
        let faces = self.next_new.entry(name.clone()).or_default();
        let expected = match faces.iter().position(|f| f.0 == from) {
            Some(i) => {
                let e = faces[i].1;
                faces[i].1 = e.max(end);
                Some(e)
            }
            None if faces.len() < MAX_FACES => {
                faces.push((from, end));
                None
            }
            None => return 0..0,
        };
        match expected {
            // Bounded like any one request: a spoofed jump cannot make the node fetch more.
            Some(e) if start > e => e.max(start.saturating_sub(packet::MAX_RANGE))..start,
            _ => 0..0,
        }
    }

    fn on_interest(&mut self, now: u64, name: &Arc<str>, p: &Packet, from: SocketAddr) {
        let retx = p.flags & FLAG_RETX != 0;
        let gap = if retx || !self.cfg.innet_retx { 0..0 } else { self.interest_gap(name, from, p.start, p.end) };
        self.counters.interest_gaps += u64::from(gap.end - gap.start);
        // Repeated requests this node cannot answer from its cache: the requester is told
        // (a VPH) that the segments are being fetched further up, so it does not take the
        // slower answer for a lost re-request and ask again (see requester.rs).
        let mut fetching: Vec<(u32, u32)> = Vec::new();
        for seg in gap.chain(p.start..p.end) {
            if let Some(s) = self.cache.get(name, seg) {
                let d = Packet { kind: Kind::Data, flags: 0, name, start: seg, end: s.total, timestamp_us: s.timestamp_us, hold_us: 0, backlog: self.req.backlog() as u32, payload: &s.payload };
                d.encode(&mut self.out);
                self.counters.cache_hits += 1;
                self.forwarded_bytes += s.payload.len() as u64;
                send(&self.sock, &self.out, from, &mut self.counters);
                continue;
            }
            if retx && self.cfg.innet_retx {
                packet::push_segment(&mut fetching, seg);
            }
            let key = (name.clone(), seg);
            let pit_full = self.pit.len() >= MAX_PIT;
            let forward = match self.pit.get_mut(&key) {
                Some(e) => {
                    if !e.faces.iter().any(|f| f.0 == from) && e.faces.len() < MAX_FACES {
                        e.faces.push((from, now));
                    }
                    // A repeated request means the earlier one (or its answer) was lost,
                    // unless ours upstream is recent enough to still be answered.
                    retx && !self.req.awaiting(name, seg, now)
                }
                None if pit_full => {
                    self.counters.state_full += 1;
                    false
                }
                None => {
                    self.pit.insert(key, PitEntry { faces: vec![(from, now)], created_us: now });
                    true
                }
            };
            if forward && !self.req.want(Want { name: name.clone(), seg, retx }) {
                self.counters.state_full += 1;
            }
        }
        for (a, b) in fetching {
            self.send_void(name, a, b, &[from]);
        }
        if !self.cfg.hop_cc {
            self.tick(now);
        }
    }

    fn on_data(&mut self, now: u64, name: &Arc<str>, p: &Packet, dgram: &[u8]) {
        if self.cfg.inject_loss > 0.0 && self.rng.next_f64() < self.cfg.inject_loss {
            self.counters.injected_losses += 1;
            return;
        }
        let arrival = self.req.on_data(now, name, p, &mut self.counters);
        let Some(entry) = self.pit.remove(&(name.clone(), p.start)) else {
            if arrival.expected {
                // Asked for, but every requester has been answered from the cache meanwhile.
                self.counters.duplicates += 1;
            } else {
                self.counters.unsolicited += 1;
            }
            self.send_voids(name, &arrival.holes);
            return;
        };
        self.cache.insert(name, p.start, Segment { total: p.end, timestamp_us: p.timestamp_us, payload: p.payload.into() });
        // The VPH goes first: the segment that revealed the hole must not reach the next node
        // before it, or that node would see the same hole and re-request it too.
        self.send_voids(name, &arrival.holes);
        self.out.clear();
        self.out.extend_from_slice(dgram);
        for &(f, asked) in &entry.faces {
            self.forwarded_bytes += p.payload.len() as u64;
            packet::set_hold(&mut self.out, now.saturating_sub(asked).min(u64::from(u32::MAX)) as u32, self.req.backlog() as u32);
            send(&self.sock, &self.out, f, &mut self.counters);
        }
    }

    /// Tells each downstream neighbour waiting for part of `ranges` that it is being repaired.
    fn send_voids(&mut self, name: &Arc<str>, ranges: &[(u32, u32)]) {
        for &(a, b) in ranges {
            let mut faces: Vec<SocketAddr> = Vec::new();
            for s in a..b {
                if let Some(e) = self.pit.get(&(name.clone(), s)) {
                    for &(f, _) in &e.faces {
                        if !faces.contains(&f) {
                            faces.push(f);
                        }
                    }
                }
            }
            self.send_void(name, a, b, &faces);
        }
    }

    /// Sends one VPH for `[a, b)` of `name` to each of `faces`.
    fn send_void(&mut self, name: &Arc<str>, a: u32, b: u32, faces: &[SocketAddr]) {
        Packet::void(name, a, b).encode(&mut self.out);
        for &f in faces {
            self.counters.void_sent += 1;
            send(&self.sock, &self.out, f, &mut self.counters);
        }
    }
}

fn send(sock: &UdpSocket, buf: &[u8], to: SocketAddr, c: &mut Counters) {
    match sock.send_to(buf, to) {
        Ok(_) => c.tx_packets += 1,
        Err(_) => c.send_errors += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(innet_retx: bool) -> Mid {
        // The upstream address is never sent to: requests are only queued here.
        let mut cfg = MidConfig::new("127.0.0.1:0".parse().unwrap(), "127.0.0.1:9".parse().unwrap());
        cfg.innet_retx = innet_retx;
        Mid::bind(cfg).unwrap()
    }

    /// An interest for `bulk` from `from`, with the token `m` gave that address.
    fn interest(m: &Mid, from: SocketAddr, start: u32, end: u32, flags: u8) -> Vec<u8> {
        named(m, from, "bulk", start, end, flags)
    }

    fn named(m: &Mid, from: SocketAddr, name: &str, start: u32, end: u32, flags: u8) -> Vec<u8> {
        let t = m.validator.token(from);
        let mut b = Vec::new();
        Packet { payload: &t, ..Packet::interest(name, start, end, flags, 0) }.encode(&mut b);
        b
    }

    #[test]
    fn a_jump_in_new_requests_fetches_what_the_lost_interests_asked_for() {
        let mut m = node(true);
        let (a, b): (SocketAddr, SocketAddr) = ("10.0.0.1:5301".parse().unwrap(), "10.0.0.2:5301".parse().unwrap());
        m.handle(0, &interest(&m, a, 0, 4, 0), a);
        m.handle(1, &interest(&m, a, 8, 12, 0), a);
        assert_eq!(m.counters.interest_gaps, 4, "4..8 were asked for and lost");
        assert_eq!(m.req.backlog(), 12);
        // A repeated request says nothing about order; another neighbour keeps its own place;
        // an overlapping or older new request is no gap.
        m.handle(2, &interest(&m, a, 20, 22, FLAG_RETX), a);
        m.handle(3, &interest(&m, b, 30, 32, 0), b);
        m.handle(4, &interest(&m, a, 10, 14, 0), a);
        assert_eq!(m.counters.interest_gaps, 4);
        // A far jump fetches at most one request's worth.
        m.handle(5, &interest(&m, a, 100_000, 100_001, 0), a);
        assert_eq!(m.counters.interest_gaps, 4 + u64::from(packet::MAX_RANGE));
        // Without in-network retransmission (the ablation), nothing is inferred.
        let mut off = node(false);
        off.handle(0, &interest(&off, a, 0, 4, 0), a);
        off.handle(1, &interest(&off, a, 8, 12, 0), a);
        assert_eq!((off.counters.interest_gaps, off.req.backlog()), (0, 8));
    }

    #[test]
    fn a_repeated_request_it_cannot_answer_is_met_with_a_void() {
        let mut m = node(true);
        let requester: SocketAddr = "127.0.0.1:9".parse().unwrap();
        m.handle(0, &interest(&m, requester, 0, 4, 0), requester);
        assert_eq!(m.counters.void_sent, 0);
        m.handle(1, &interest(&m, requester, 1, 3, FLAG_RETX), requester);
        assert_eq!(m.counters.void_sent, 1, "one VPH for the range 1..3, which is fetched upstream");
        let mut off = node(false);
        off.handle(0, &interest(&off, requester, 0, 4, FLAG_RETX), requester);
        assert_eq!(off.counters.void_sent, 0, "no VPH without in-network retransmission");
    }

    /// Issue 34 item 4: junk must not take name slots. Interests from unvalidated sources,
    /// and data, voids and errors from anyone but the upstream neighbour, never reach the
    /// table, however many names they carry.
    #[test]
    fn junk_from_unvalidated_or_spoofed_sources_takes_no_name() {
        let mut m = node(true);
        // Not the node's upstream (127.0.0.1:9).
        let evil: SocketAddr = "127.0.0.1:11".parse().unwrap();
        let mut b = Vec::new();
        let forged = [0x55u8; packet::TOKEN_LEN];
        for i in 0..20_000u32 {
            let name = format!("junk-{i}");
            let p = match i % 5 {
                0 => Packet::interest(&name, 0, 1, 0, 0),
                1 => Packet { payload: &forged, ..Packet::interest(&name, 0, 1, 0, 0) },
                2 => Packet { kind: Kind::Data, flags: 0, name: &name, start: 0, end: 1, timestamp_us: 0, hold_us: 0, backlog: 0, payload: b"x" },
                3 => Packet::void(&name, 0, 1),
                _ => Packet::error(&name, 0, 1, ErrorCode::TableFull),
            };
            p.encode(&mut b);
            m.handle(u64::from(i), &b, evil);
        }
        assert_eq!(m.names.len(), 0);
        assert_eq!((m.pit.len(), m.req.backlog()), (0, 0));
        assert_eq!((m.counters.unvalidated, m.counters.tokens_sent, m.counters.spoofed), (8_000, 8_000, 12_000));
        // A validated requester's content still gets in.
        let good: SocketAddr = "127.0.0.1:7".parse().unwrap();
        m.handle(30_000, &named(&m, good, "real", 0, 4, 0), good);
        assert_eq!((m.names.len(), m.req.backlog()), (1, 4));
    }

    /// A validated requester can still fill the table: then a new name is refused with an
    /// error packet until names expire, and the expired names' queued requests are dropped
    /// so they do not hold real ones behind them.
    #[test]
    fn a_full_table_refuses_new_names_with_an_error_until_they_expire() {
        let mut m = node(true);
        let client: SocketAddr = "127.0.0.1:7".parse().unwrap();
        for i in 0..crate::MAX_FLOWS as u64 {
            m.handle(i, &named(&m, client, &format!("junk-{i}"), 0, 1, 0), client);
        }
        assert_eq!(m.names.len(), crate::MAX_FLOWS);
        assert_eq!(m.counters.errors_sent, 0);
        let t = crate::MAX_FLOWS as u64;
        m.handle(t, &named(&m, client, "real", 0, 4, 0), client);
        assert_eq!((m.counters.errors_sent, m.counters.state_full), (1, 1), "refused, and told");
        assert!(!m.names.contains("real"));
        // Once the junk is idle for NAME_IDLE_US it expires; the real name gets in, and the
        // junk's requests, still queued (the upstream is not answering), go unsent.
        let later = t + NAME_IDLE_US;
        m.handle(later, &named(&m, client, "real", 0, 4, 0), client);
        assert!(m.names.contains("real"));
        assert_eq!(m.counters.names_expired, crate::MAX_FLOWS as u64);
        let mut sent = Vec::new();
        let names = &m.names;
        m.req.pump(later, &m.sock, &mut m.counters, &mut sent, |n| names.contains(n));
        assert!(sent.iter().all(|w| &*w.name == "real"), "only the live content is requested");
        assert!(!sent.is_empty());
    }
}
