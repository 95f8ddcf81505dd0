//! The requesting side of one hop, shared by the consumer and every mid-node: a backlog of
//! segments to request (BL of eq. 9), paced by the hop's congestion control; the requests in
//! flight on the hop, for hop RTT samples; and hole detection (in-network retransmission).
//!
//! Holes: a hop delivers a flow's segments in the order they were requested (the path is
//! FIFO), so when segment s arrives while an earlier-requested segment r < s of the same flow
//! is still in flight, r was lost on this hop or above it. The requester re-requests r
//! from its upstream neighbour, whose cache holds it if the loss was on this hop, and reports
//! the range so the caller (a mid-node) can send a Void Packet Header downstream. A range
//! covered by a VPH from upstream is being repaired further up: it is not reported again.
//!
//! The same reasoning covers the repairs themselves: a re-request travels the same FIFO hop,
//! so when the answer to a request sent *after* it arrives first, the re-request or its
//! answer was lost too, and it is sent again. Without this a twice-lost segment waits for
//! the consumer's end-to-end timer (at least 300 ms), which at a few per cent loss per hop is
//! most of the mean delay.
//!
//! Address validation (see `addrval`): the upstream node serves only interests carrying the
//! token it gave this requester. The first interests (and any after the token aged out or the
//! node restarted) are answered with a token packet instead; the requester keeps the token,
//! puts the refused segments back at the head of its queue and sends them again with it, so
//! the round trip is invisible to the caller.

use crate::counters::Counters;
use crate::hopcc::{HopCc, HopCcConfig};
use crate::packet::{Packet, FLAG_RETX, MAX_RANGE, TOKEN_LEN};
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

/// Most requests waiting for the hop: a bound on memory whatever downstream asks.
pub const MAX_BACKLOG: usize = 1 << 18;
/// Most requests in flight on the hop.
pub const MAX_IN_FLIGHT: usize = 1 << 18;
/// A request unanswered this many hop RTTs is forgotten by the hop (the consumer's timer
/// owns end-to-end reliability); it no longer counts as a hole candidate.
const STALE_RTTS: f64 = 8.0;
/// ... and never sooner than this, µs, so a short hop RTT does not forget requests that wait
/// behind an outage upstream.
const STALE_MIN_US: u64 = 2_000_000;
/// A request older than this many hop RTTs is overdue: a repeated request from downstream
/// is then forwarded again instead of waiting for it.
const OVERDUE_RTTS: f64 = 2.0;
/// Most segments inspected for holes per arriving segment: bounds the work of a far jump.
const MAX_HOLE_SCAN: u32 = 4096;
/// Most segments merged into one interest packet (pacing credit that accumulated while the
/// thread slept is spent in ranges, not in a burst of tiny packets).
const MAX_BATCH: u32 = 64;

#[derive(Debug, Clone, Copy)]
struct InFlight {
    sent_us: u64,
    /// Requested more than once (no RTT sample: Karn).
    retx: bool,
    /// Who repairs it, if it is known to be missing.
    repair: Repair,
}

/// Who is repairing a segment known to be missing (then it is no hole candidate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repair {
    /// Nobody: not known to be missing.
    No,
    /// A node upstream (its VPH said so): it retries, not this hop.
    Upstream,
    /// This hop, by re-requesting it: if the re-request is overtaken, it is sent again.
    Here,
}

/// One segment to request.
#[derive(Debug, Clone)]
pub struct Want {
    /// Content.
    pub name: Arc<str>,
    /// Segment.
    pub seg: u32,
    /// A repeated request (sent with `FLAG_RETX`).
    pub retx: bool,
}

/// What an arriving segment meant on this hop.
#[derive(Debug, Default)]
pub struct Arrival {
    /// It was in flight on this hop (else: late, duplicate, or unsolicited).
    pub expected: bool,
    /// Ranges `[start, end)` newly found missing and re-requested.
    pub holes: Vec<(u32, u32)>,
}

/// The requesting side of a hop.
#[derive(Debug)]
pub struct Requester {
    /// The upstream neighbour.
    pub upstream: SocketAddr,
    /// The hop's controller.
    pub cc: HopCc,
    /// Hop-by-hop congestion control on; off, requests go out as soon as they are queued
    /// (the ablation's "no hop CC"; a consumer then still paces by its own controller).
    pub paced: bool,
    /// Hole detection and re-requests on (the ablation's "in-network retransmission").
    pub detect_holes: bool,
    backlog: VecDeque<Want>,
    /// What `backlog` holds, so a segment is queued once however often it is asked for.
    queued: HashSet<(Arc<str>, u32)>,
    in_flight: HashMap<(Arc<str>, u32), InFlight>,
    /// Re-requests sent on the hop, in sending order, with their sending time: the ones an
    /// answer to a later request overtakes were lost.
    repairs: VecDeque<(Arc<str>, u32, u64)>,
    highest: HashMap<Arc<str>, u32>,
    credit: f64,
    upstream_backlog: u32,
    last_pump_us: Option<u64>,
    last_sweep_us: u64,
    buf: Vec<u8>,
    /// The address token the upstream node gave us, echoed in every interest.
    token: Option<[u8; TOKEN_LEN]>,
}

impl Requester {
    /// A requester towards `upstream`.
    pub fn new(upstream: SocketAddr, cfg: HopCcConfig, paced: bool, detect_holes: bool) -> Requester {
        Requester {
            upstream,
            cc: HopCc::new(cfg),
            paced,
            detect_holes,
            backlog: VecDeque::new(),
            queued: HashSet::new(),
            in_flight: HashMap::new(),
            repairs: VecDeque::new(),
            highest: HashMap::new(),
            // The first round may send the initial window at once, as TCP does.
            credit: crate::hopcc::INITIAL_CWND,
            upstream_backlog: 0,
            last_pump_us: None,
            last_sweep_us: 0,
            buf: Vec::with_capacity(128),
            token: None,
        }
    }

    /// Queues a request (once: a segment already queued stays where it is); false when the
    /// backlog is full.
    pub fn want(&mut self, w: Want) -> bool {
        if self.backlog.len() >= MAX_BACKLOG {
            return false;
        }
        if !self.queued.insert((w.name.clone(), w.seg)) {
            return true;
        }
        if w.retx {
            // Repairs go first: they unblock the consumer's in-order delivery.
            self.backlog.push_front(w);
        } else {
            self.backlog.push_back(w);
        }
        true
    }

    /// Requests waiting (BL).
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }

    /// Requests in flight on the hop.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether a request for `seg` of `name` is in flight on this hop and still young enough
    /// (less than `OVERDUE_RTTS` hop RTTs old) that its answer may yet come.
    pub fn awaiting(&self, name: &Arc<str>, seg: u32, now_us: u64) -> bool {
        self.in_flight.get(&(name.clone(), seg)).is_some_and(|f| (now_us.saturating_sub(f.sent_us) as f64) < OVERDUE_RTTS * self.cc.hop_rtt_us())
    }

    /// Sends as many queued requests as the pacing rate (eq. 9, with the upstream node's last
    /// reported backlog) allows; each sent segment is appended to `sent`. Queued requests
    /// whose content is no longer `live` (a mid-node's name expired) are dropped unsent, at
    /// no pacing cost: a flood of junk names must not hold real requests behind it.
    pub fn pump(&mut self, now_us: u64, sock: &UdpSocket, c: &mut Counters, sent: &mut Vec<Want>, live: impl Fn(&str) -> bool) {
        let last = self.last_pump_us.replace(now_us).unwrap_or(now_us);
        if self.paced {
            let rate = self.rate_sps();
            self.credit += rate * now_us.saturating_sub(last) as f64 / 1e6;
            // Idle time banks at most one batch (or 2 ms at the current rate, when that is
            // more): no burst after a pause.
            self.credit = self.credit.min(f64::from(MAX_BATCH).max(rate * 0.002));
        }
        while let Some(first) = self.backlog.front() {
            if !live(&first.name) {
                let w = self.backlog.pop_front().expect("front exists");
                self.queued.remove(&(w.name, w.seg));
                continue;
            }
            if self.paced && self.credit < 1.0 {
                break;
            }
            if self.in_flight.len() >= MAX_IN_FLIGHT {
                break;
            }
            let (name, start, retx) = (first.name.clone(), first.seg, first.retx);
            let room = if self.paced { (self.credit.floor() as u32).clamp(1, MAX_BATCH) } else { MAX_BATCH };
            let mut end = start;
            while end - start < room.min(MAX_RANGE) {
                match self.backlog.front() {
                    Some(w) if w.name == name && w.seg == end && w.retx == retx && end < u32::MAX => {
                        let w = self.backlog.pop_front().expect("front exists");
                        self.queued.remove(&(w.name.clone(), w.seg));
                        sent.push(w);
                        end += 1;
                    }
                    _ => break,
                }
            }
            for seg in start..end {
                let e = self.in_flight.entry((name.clone(), seg)).or_insert(InFlight { sent_us: now_us, retx: false, repair: Repair::No });
                e.retx |= retx || e.sent_us != now_us;
                e.sent_us = now_us;
                if retx && e.repair != Repair::Upstream && self.repairs.len() < MAX_IN_FLIGHT {
                    e.repair = Repair::Here;
                    self.repairs.push_back((name.clone(), seg, now_us));
                }
            }
            let mut p = Packet::interest(&name, start, end, if retx { FLAG_RETX } else { 0 }, now_us);
            if let Some(t) = &self.token {
                p.payload = t;
            }
            p.encode(&mut self.buf);
            match sock.send_to(&self.buf, self.upstream) {
                Ok(_) => c.tx_packets += 1,
                Err(_) => c.send_errors += 1,
            }
            if self.paced {
                self.credit -= f64::from(end - start);
            }
        }
        self.sweep(now_us);
    }

    /// The hop's request rate, segments/s: eq. 9 with Rate_nextHop the rate the upstream node
    /// delivers at and BL its reported request backlog.
    pub fn rate_sps(&self) -> f64 {
        let bp = self.cc.backpressure_sps(self.cc.throughput_sps(), self.upstream_backlog as usize);
        self.cc.rate_sps((self.cc.throughput_sps() > 0.0).then_some(bp))
    }

    /// The upstream node's last reported backlog, segments.
    pub fn upstream_backlog(&self) -> u32 {
        self.upstream_backlog
    }

    /// When the next request may go out, µs (None: nothing queued).
    pub fn next_send_us(&self, now_us: u64) -> Option<u64> {
        if self.backlog.is_empty() {
            return None;
        }
        if !self.paced || self.credit >= 1.0 {
            return Some(now_us);
        }
        let rate = self.rate_sps().max(1.0);
        Some(now_us + ((1.0 - self.credit) / rate * 1e6) as u64)
    }

    /// Data packet `p` (a segment of `name`) arrived from upstream. Its `hold_us` (how long
    /// the upstream node held the request) is not part of this hop's RTT; its `backlog` is
    /// the upstream node's BL for backpressure.
    pub fn on_data(&mut self, now_us: u64, name: &Arc<str>, p: &Packet, c: &mut Counters) -> Arrival {
        let (seg, hold_us) = (p.start, p.hold_us);
        self.upstream_backlog = p.backlog;
        let mut out = Arrival::default();
        let key = (name.clone(), seg);
        self.queued.remove(&key);
        let Some(f) = self.in_flight.remove(&key) else { return out };
        out.expected = true;
        self.cc.on_delivery(now_us, (!f.retx).then(|| now_us.saturating_sub(f.sent_us).saturating_sub(u64::from(hold_us))));
        if self.detect_holes {
            self.retry_overtaken_repairs(f.sent_us, c);
        }
        let highest = self.highest.get(name).copied();
        if let Some(h) = highest {
            if seg > h.saturating_add(1) && self.detect_holes {
                let from = (h + 1).max(seg.saturating_sub(MAX_HOLE_SCAN));
                for s in from..seg {
                    let hole = match self.in_flight.get_mut(&(name.clone(), s)) {
                        Some(e) if e.repair == Repair::No && e.sent_us <= f.sent_us => {
                            e.repair = Repair::Here;
                            true
                        }
                        _ => false,
                    };
                    if hole {
                        c.holes_detected += 1;
                        crate::packet::push_segment(&mut out.holes, s);
                    }
                }
                for &(a, b) in &out.holes {
                    for s in a..b {
                        c.innet_retx_requests += 1;
                        self.want(Want { name: name.clone(), seg: s, retx: true });
                    }
                }
            }
        }
        if highest.is_none_or(|h| seg > h) {
            if highest.is_none() && self.highest.len() >= crate::MAX_FLOWS {
                return out;
            }
            self.highest.insert(name.clone(), seg);
        }
        out
    }

    /// An answer to a request sent at `answered_sent_us` arrived: every re-request sent
    /// before it and still unanswered was lost (the hop is FIFO), and is queued again.
    fn retry_overtaken_repairs(&mut self, answered_sent_us: u64, c: &mut Counters) {
        while self.repairs.front().is_some_and(|r| r.2 < answered_sent_us) {
            let Some((name, seg, sent_us)) = self.repairs.pop_front() else { break };
            // Answered, re-sent since (a later entry stands for it), or taken over upstream:
            // nothing to do.
            let lost = self.in_flight.get(&(name.clone(), seg)).is_some_and(|e| e.repair == Repair::Here && e.sent_us == sent_us);
            if lost {
                c.repairs_lost += 1;
                self.want(Want { name, seg, retx: true });
            }
        }
    }

    /// A token packet from upstream: keep `token` for later interests, and queue again, at
    /// the head and in order, the segments of `[start, end)` of `name` still in flight (the
    /// upstream node did not serve them). Returns how many were queued again.
    pub fn on_token(&mut self, name: &Arc<str>, start: u32, end: u32, flags: u8, token: &[u8]) -> usize {
        if let Ok(t) = <[u8; TOKEN_LEN]>::try_from(token) {
            self.token = Some(t);
        }
        let mut n = 0;
        for seg in (start..end).rev() {
            let key = (name.clone(), seg);
            if self.in_flight.remove(&key).is_some() && self.backlog.len() < MAX_BACKLOG && self.queued.insert(key) {
                self.backlog.push_front(Want { name: name.clone(), seg, retx: flags & FLAG_RETX != 0 });
                n += 1;
            }
        }
        if self.paced {
            // They used no capacity of the hop: asking again costs no pacing credit, so the
            // round trip delays the start by one hop RTT and no more.
            self.credit += n as f64;
        }
        n
    }

    /// Whether the upstream node has given this requester an address token.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// An error packet from upstream refused `[start, end)` of `name`: those requests will
    /// not be answered, so they no longer count as in flight (nor as hole candidates).
    pub fn on_refused(&mut self, name: &Arc<str>, start: u32, end: u32) {
        for seg in start..end {
            self.in_flight.remove(&(name.clone(), seg));
        }
    }

    /// Drops the per-content state of `name` (its name expired at the mid-node).
    pub fn forget(&mut self, name: &str) {
        self.highest.remove(name);
    }

    /// A VPH from upstream: `[start, end)` of `name` is being repaired there.
    pub fn on_void(&mut self, name: &Arc<str>, start: u32, end: u32) {
        for s in start..end {
            if let Some(e) = self.in_flight.get_mut(&(name.clone(), s)) {
                e.repair = Repair::Upstream;
            }
        }
    }

    /// Forgets requests that will not be answered any more.
    fn sweep(&mut self, now_us: u64) {
        let horizon = ((self.cc.hop_rtt_us() * STALE_RTTS) as u64).max(STALE_MIN_US);
        if now_us.saturating_sub(self.last_sweep_us) < horizon / 4 {
            return;
        }
        self.last_sweep_us = now_us;
        self.in_flight.retain(|_, f| now_us.saturating_sub(f.sent_us) < horizon);
        self.repairs.retain(|r| now_us.saturating_sub(r.2) < horizon);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Kind, UNBOUNDED};

    /// An unpaced requester: every queued request goes out at the next pump. Its upstream
    /// (the discard port on loopback) never answers; the test plays the answers.
    fn hop() -> (Requester, UdpSocket, Arc<str>) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        (Requester::new("127.0.0.1:9".parse().unwrap(), HopCcConfig::default(), false, true), sock, Arc::from("bulk"))
    }

    fn ask(r: &mut Requester, sock: &UdpSocket, name: &Arc<str>, segs: std::ops::Range<u32>, now: u64, c: &mut Counters) {
        for seg in segs {
            assert!(r.want(Want { name: name.clone(), seg, retx: false }));
        }
        r.pump(now, sock, c, &mut Vec::new(), |_| true);
    }

    fn answer(r: &mut Requester, name: &Arc<str>, seg: u32, now: u64, c: &mut Counters) -> Arrival {
        let p = Packet { kind: Kind::Data, flags: 0, name, start: seg, end: UNBOUNDED, timestamp_us: 0, hold_us: 0, backlog: 0, payload: &[0u8; 10] };
        r.on_data(now, name, &p, c)
    }

    /// Segments 0..4 asked for at 0; 0 and 2 answered, so 1 is a hole, re-requested at
    /// 11 ms.
    fn with_a_re_requested_hole() -> (Requester, UdpSocket, Arc<str>, Counters) {
        let (mut r, sock, name) = hop();
        let mut c = Counters::default();
        ask(&mut r, &sock, &name, 0..4, 0, &mut c);
        answer(&mut r, &name, 0, 9_000, &mut c);
        let a = answer(&mut r, &name, 2, 10_000, &mut c);
        assert_eq!(a.holes, vec![(1, 2)], "2 arrived, 1 (asked before it) did not");
        r.pump(11_000, &sock, &mut c, &mut Vec::new(), |_| true); // the re-request of 1
        (r, sock, name, c)
    }

    #[test]
    fn a_hole_is_re_requested_and_a_lost_re_request_again() {
        let (mut r, sock, name, mut c) = with_a_re_requested_hole();
        ask(&mut r, &sock, &name, 4..8, 12_000, &mut c);
        // Answers to requests sent before the re-request say nothing about it.
        assert!(answer(&mut r, &name, 3, 20_000, &mut c).holes.is_empty());
        assert_eq!((c.repairs_lost, r.backlog()), (0, 0));
        // 4 was asked for after the re-request and came first: the re-request was lost too.
        assert!(answer(&mut r, &name, 4, 30_000, &mut c).holes.is_empty(), "no new VPH: downstream knows already");
        assert_eq!((c.repairs_lost, r.backlog()), (1, 1));
        r.pump(31_000, &sock, &mut c, &mut Vec::new(), |_| true);
        // Its answer ends the matter: later answers retry nothing.
        answer(&mut r, &name, 1, 40_000, &mut c);
        answer(&mut r, &name, 5, 41_000, &mut c);
        assert_eq!((c.repairs_lost, r.backlog(), c.holes_detected), (1, 0, 1));
    }

    #[test]
    fn a_range_repaired_upstream_is_left_to_upstream() {
        let (mut r, sock, name, mut c) = with_a_re_requested_hole();
        r.on_void(&name, 1, 2);
        ask(&mut r, &sock, &name, 4..8, 12_000, &mut c);
        answer(&mut r, &name, 3, 20_000, &mut c);
        answer(&mut r, &name, 4, 30_000, &mut c);
        assert_eq!((c.repairs_lost, r.backlog()), (0, 0), "upstream's VPH covers 1: it retries, not this hop");
        // Without hole detection (the ablation) nothing is re-requested at all.
        let mut off = Requester::new("127.0.0.1:9".parse().unwrap(), HopCcConfig::default(), false, false);
        ask(&mut off, &sock, &name, 0..4, 0, &mut c);
        answer(&mut off, &name, 0, 9_000, &mut c);
        assert!(answer(&mut off, &name, 3, 10_000, &mut c).holes.is_empty());
        assert_eq!(off.backlog(), 0);
    }

    #[test]
    fn a_token_packet_sends_the_refused_requests_again_with_the_token() {
        let (mut r, sock, name) = hop();
        let up = UdpSocket::bind("127.0.0.1:0").unwrap();
        up.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        r.upstream = up.local_addr().unwrap();
        let mut c = Counters::default();
        let mut buf = [0u8; 256];
        ask(&mut r, &sock, &name, 0..4, 0, &mut c);
        let n = up.recv(&mut buf).unwrap();
        let p = crate::packet::parse(&buf[..n]).unwrap();
        assert_eq!((p.start, p.end, p.payload.len()), (0, 4, 0), "no token yet");
        // Upstream did not serve 0..4: they go out again, first, with the token.
        ask(&mut r, &sock, &name, 4..6, 500, &mut c);
        up.recv(&mut buf).unwrap();
        let token = [7u8; TOKEN_LEN];
        assert_eq!(r.on_token(&name, 0, 4, 0, &token), 4);
        assert!(r.has_token());
        r.pump(1_000, &sock, &mut c, &mut Vec::new(), |_| true);
        let n = up.recv(&mut buf).unwrap();
        let p = crate::packet::parse(&buf[..n]).unwrap();
        assert_eq!((p.start, p.end, p.payload), (0, 4, &token[..]));
        assert_eq!(r.in_flight(), 6);
        // A refresh only replaces the token; a token for segments not in flight queues nothing.
        assert_eq!(r.on_token(&name, 0, 0, 0, &[8u8; TOKEN_LEN]), 0);
        assert_eq!(r.on_token(&name, 10, 12, 0, &[8u8; TOKEN_LEN]), 0);
        ask(&mut r, &sock, &name, 6..7, 2_000, &mut c);
        let n = up.recv(&mut buf).unwrap();
        assert_eq!(crate::packet::parse(&buf[..n]).unwrap().payload, &[8u8; TOKEN_LEN][..]);
        // A queued request whose content is no longer live is dropped unsent.
        assert!(r.want(Want { name: Arc::from("gone"), seg: 0, retx: false }));
        let mut sent = Vec::new();
        r.pump(3_000, &sock, &mut c, &mut sent, |n| n != "gone");
        assert!(sent.is_empty() && r.backlog() == 0);
    }
}
