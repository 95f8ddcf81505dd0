//! A TCP sender and receiver that give a congestion control what Linux gives it.
//!
//! Sender (one bulk flow, always data to send while active):
//! - Scoreboard: one entry per segment from `snd_una` to `snd_nxt` with Linux's per-skb
//!   state: transmit time, the rate-sampling snapshot taken at send (`tcp_rate_skb_sent`:
//!   `delivered`, `delivered_mstamp`, `first_tx_mstamp`, app-limited), and the SACKED / LOST /
//!   SACKED_RETRANS flags. In flight = packets_out - sacked_out - lost_out + retrans_out.
//! - Delivery-rate samples exactly as net/ipv4/tcp_rate.c: per delivered segment keep the
//!   most recently sent one's snapshot; interval = max(send interval, ACK interval); samples
//!   shorter than min_rtt are invalid; app-limited marking.
//! - SACK with RACK loss detection (RFC 8985, as net/ipv4/tcp_recovery.c): a segment is lost
//!   once a segment sent after it was delivered and `rack.rtt + reo_wnd` has passed since its
//!   transmission; the reordering window is min_rtt/4, or 0 once 3 segments were SACKed or
//!   during recovery unless reordering was seen. Transmissions are kept in send order
//!   (Linux's tsorted list), so detection stops at the first segment not yet due.
//! - Fast retransmit: lost segments are retransmitted first, in sequence order, within cwnd.
//!   For controls that leave the window alone during recovery (Reno, CUBIC, Vegas), the
//!   reduction to ssthresh is paced by Proportional Rate Reduction (RFC 6937, Linux
//!   `tcp_cwnd_reduction`): each ACK may release about ssthresh/prior_cwnd of what it
//!   delivered, plus slow-start-like catch-up when inflight falls below ssthresh.
//! - cwnd-limited tracking (`tcp_cwnd_validate`): whether cwnd stopped the last transmission,
//!   latched for a window of data, and the most packets outstanding; loss-based controls grow
//!   only while it allows (`AckSample::is_cwnd_limited`), so a flow held by its send buffer
//!   keeps the window it uses.
//! - RTO (RFC 6298, Linux bounds): srtt + max(4 rttvar, 200 ms), doubled per backoff, at
//!   most 120 s; on expiry every unSACKed segment is marked lost (`tcp_enter_loss`).
//! - Pacing: if the controller sets a rate, data leaves in TSO-sized skbs spaced at that rate:
//!   each skb holds about 1 ms of data at the rate (`tcp_tso_autosize`: 2 to 44 segments, at
//!   most half the window), its segments leave together, and the next skb is due its length
//!   at the rate later (Linux's earliest-departure-time model: next = max(now, next) + len /
//!   rate). If the controller sets no rate, the sender is purely ACK clocked, segment by
//!   segment.
//! - The send buffer: a bulk application (iperf3) writes into a socket whose memory is capped
//!   by `tcp_wmem[2]` (4 MiB by default; `tcp_sndbuf_expand` grows `sk_sndbuf` to 2-3 x cwnd x
//!   4.3 kB, so the cap is what binds). Everything from `snd_una` on counts, SACKed segments
//!   included: they stay in the retransmission queue until the cumulative ACK passes them.
//!   Memory is counted as Linux charges it: the payload plus an skb head (896 bytes) per skb,
//!   where unsent data sits in 45-segment skbs and sent data in the skbs each transmission cut
//!   off, split at SACK block edges and merged when SACKed (`Sender::wmem_queued`). The
//!   application is woken to write again only once the queue has fallen to 2/3 of the buffer
//!   (`sk_stream_is_writeable`), and then fills it; a write that finds nothing left to send
//!   and the window open marks the flow application-limited (`tcp_rate_check_app_limited`).
//!
//! Receiver: cumulative ACK plus up to 3 SACK blocks (the block holding the latest segment
//! first, as RFC 2018 asks); delayed ACKs every `delack_segs` in-order segments or after
//! `delack_timeout_us`; immediate ACKs for out-of-order, duplicate or hole-filling segments.
//! Behind GRO (`Receiver::with_gro`, the simulator's default) the segments that reach the host
//! in one instant are taken in as one burst and the ACK decision is taken once per burst, as
//! the kernel does with the bursts the emulator releases.

use std::collections::{BinaryHeap, VecDeque};
use std::cmp::Reverse;

use crate::cc::{AckSample, CaState, Controller, ReconfigEvent};
use crate::event::{Ev, EventQueue};

/// Payload bytes per data segment (Ethernet MTU 1500 minus IPv4, TCP and timestamp headers).
pub const MSS: u32 = 1448;
/// Bytes on the wire per data packet.
pub const DATA_PACKET_BYTES: u32 = 1500;
/// Bytes on the wire of a pure ACK with timestamps (IPv4 20 + TCP 20 + options 12 + padding).
pub const ACK_BASE_BYTES: u32 = 64;
/// Extra bytes per SACK block (RFC 2018: 8 bytes each; the 2-byte option header rounds in).
pub const SACK_BLOCK_BYTES: u32 = 8;
/// Maximum SACK blocks per ACK when timestamps are on (RFC 2018).
pub const MAX_SACK_BLOCKS: usize = 3;
/// Initial congestion window (RFC 6928, Linux TCP_INIT_CWND).
pub const INIT_CWND: u32 = 10;
/// Minimum RTO (Linux TCP_RTO_MIN).
const MIN_RTO_US: u64 = 200_000;
/// Maximum RTO (Linux TCP_RTO_MAX).
const MAX_RTO_US: u64 = 120_000_000;
/// RTO before the first RTT sample (RFC 6298 §2.1).
const INIT_RTO_US: u64 = 1_000_000;
/// Window of the min-RTT filter (Linux sysctl tcp_min_rtt_wlen, 300 s).
const MIN_RTT_WINDOW_US: u64 = 300_000_000;
/// SACKed segments that make RACK drop its reordering window (Linux TCP_FASTRETRANS_THRESH).
const DUPTHRESH: u32 = 3;
/// The send buffer's cap, bytes of skb memory (Linux sysctl tcp_wmem[2], default 4 MiB).
pub const SNDBUF_BYTES: u64 = 4 << 20;
/// Socket memory of one skb besides its payload (`SKB_TRUESIZE` of a TCP skb's head in Linux
/// 6.3 and later: the 640-byte small head, MAX_TCP_HEADER plus `skb_shared_info`, and the
/// 256-byte `struct sk_buff`); the payload sits in page fragments and counts byte for byte.
pub const SKB_HEAD_TRUESIZE: u64 = 896;
/// Segments per skb the application's writes are cut into (`tcp_xmit_size_goal`: a 64 KiB GSO
/// frame, 45 segments of 1448 bytes).
pub const APP_SKB_SEGS: u64 = 45;
/// Socket memory per segment of unsent data, in full 45-segment skbs: 1468 bytes. (Linux 6.18
/// under iperf3 through the emulator, `ss -tim` wmem_queued over queued payload: 1476-1481 on
/// the bundled uplink, where most of the buffer is unsent; 1497-1536 on drawn paths 1 and 14,
/// where much of it was sent in TSO-sized skbs and split at SACK boundaries.)
pub const SNDBUF_SEG_TRUESIZE: u64 = MSS as u64 + SKB_HEAD_TRUESIZE / APP_SKB_SEGS;
/// tcp_tso_autosize: segments per skb for a pacing rate (bytes/s): about 1 ms of data
/// (sk_pacing_shift 10), at least 2 (tcp_min_tso_segs; 1 below 1.2 Mbit/s as BBR asks), at most
/// a 64 kB GSO frame.
fn tso_autosize_segs(rate: f64) -> u32 {
    let min = if rate < 1_200_000.0 / 8.0 { 1.0 } else { 2.0 };
    ((rate / 1024.0).min(65_536.0) / MSS as f64).floor().clamp(min, 44.0) as u32
}
/// Segments a send buffer of `bytes` holds when none of it is sent yet (2857 for Linux's
/// default 4 MiB); sent data, in smaller skbs, takes more.
pub fn sndbuf_segs(bytes: u64) -> u64 {
    unsent_segs_in(bytes).max(1)
}

/// Unsent segments, in `APP_SKB_SEGS`-segment skbs, that fit in `bytes` of socket memory.
fn unsent_segs_in(bytes: u64) -> u64 {
    let skb = APP_SKB_SEGS * MSS as u64 + SKB_HEAD_TRUESIZE;
    let full = bytes / skb;
    let rest = (bytes % skb).saturating_sub(SKB_HEAD_TRUESIZE) / MSS as u64;
    full * APP_SKB_SEGS + rest.min(APP_SKB_SEGS - 1)
}

/// Socket memory of `n` unsent segments.
fn unsent_bytes(n: u64) -> u64 {
    n * MSS as u64 + n.div_ceil(APP_SKB_SEGS) * SKB_HEAD_TRUESIZE
}

/// Sets (`head`) or clears `SKB_HEAD` in `flags`; returns the change in the number of skbs.
fn set_skb_head(flags: &mut u8, head: bool) -> i64 {
    let was = *flags & SKB_HEAD != 0;
    if head {
        *flags |= SKB_HEAD;
    } else {
        *flags &= !SKB_HEAD;
    }
    head as i64 - was as i64
}

/// Scoreboard flag: SACKed (Linux TCPCB_SACKED_ACKED).
const SACKED: u8 = 1;
/// Scoreboard flag: considered lost since its last transmission (Linux TCPCB_LOST).
const LOST: u8 = 2;
/// A retransmission of this segment is in flight (Linux TCPCB_SACKED_RETRANS).
const RETRANS_OUT: u8 = 4;
/// This segment was retransmitted at least once (Linux TCPCB_EVER_RETRANS).
const EVER_RETRANS: u8 = 8;
/// Sent while the sender was application-limited (Linux `tx.is_app_limited`).
const APP_LIMITED: u8 = 16;
/// The first segment of an skb in the retransmission queue (socket memory: one skb head each).
const SKB_HEAD: u8 = 32;

/// What travels in a data or ACK packet.
#[derive(Clone, Debug)]
pub enum Body {
    /// A data segment.
    Data {
        /// Sequence number, in segments.
        seq: u64,
        /// Which transmission of the flow this is (retransmissions get new numbers).
        tx_index: u64,
    },
    /// An acknowledgement.
    Ack(Box<AckInfo>),
}

/// The content of an ACK.
#[derive(Clone, Debug, Default)]
pub struct AckInfo {
    /// Next expected segment.
    pub cum: u64,
    /// SACK blocks [start, end) in segments, most recent first.
    pub sacks: [(u64, u64); MAX_SACK_BLOCKS],
    /// How many of `sacks` are used.
    pub nsacks: u8,
    /// Latest reconfiguration the receiver's host detected (0: none), carried like the
    /// sock_ops TCP option does when the satellite side is the receiver.
    pub reconfig_seq: u32,
    /// Detection time of that reconfiguration.
    pub reconfig_time_us: u64,
    /// The detector's confidence in it, 0..=100, as published (the option carries a grade:
    /// `detector::conf_through_option`).
    pub reconfig_conf: u8,
    /// Latest terminal-to-PoP RTT the receiver's host measured (0: none).
    pub term_pop_rtt_us: u64,
    /// Number of probe replies behind that RTT, so a repeated value still counts as fresh.
    pub term_pop_seq: u64,
}

/// A packet in the network.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Flow index.
    pub flow: u16,
    /// Bytes on the wire.
    pub size: u32,
    /// When the endpoint emitted it.
    pub sent_us: u64,
    /// Route (0 data, 1 ACK) and the hop it is on.
    pub route: u8,
    /// Index of the hop within the route.
    pub hop: u8,
    /// When the last capacity hop it crossed served it (the opportunity it used), µs; 0
    /// before that. Utilisation counts capacity over these times, not arrival times, which
    /// lag by the path delay.
    pub served_us: u64,
    /// Payload.
    pub body: Body,
}

#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    xmit_us: u64,
    first_tx_us: u64,
    delivered_us: u64,
    delivered: u64,
    tx_index: u64,
    /// Packets in flight when sent, this one included (v3's `tx.in_flight`).
    tx_in_flight: u32,
    /// `lost_total` when sent (v3's `tx.lost`).
    lost_at_send: u64,
    flags: u8,
}

/// At most this many disjoint ranges: a SACK block with the previous ACK's blocks cut out of
/// it (each cut splits at most one range in two), or one ACK's blocks.
const MAX_PIECES: usize = MAX_SACK_BLOCKS + 1;

/// Disjoint segment ranges [start, end) in a fixed array: SACK processing runs on every ACK
/// and allocated a vector per block before (a sixth of a lossy run's time).
#[derive(Clone, Copy, Debug, Default)]
struct Pieces {
    ranges: [(u64, u64); MAX_PIECES],
    len: usize,
}

impl Pieces {
    fn one(start: u64, end: u64) -> Pieces {
        Pieces::of(&[(start, end)])
    }

    /// `blocks` (at most [`MAX_PIECES`]; an ACK carries at most [`MAX_SACK_BLOCKS`]).
    fn of(blocks: &[(u64, u64)]) -> Pieces {
        let mut p = Pieces::default();
        for &b in blocks.iter().take(MAX_PIECES) {
            p.push(b);
        }
        p
    }

    fn blocks(&self) -> &[(u64, u64)] {
        &self.ranges[..self.len]
    }

    fn push(&mut self, r: (u64, u64)) {
        self.ranges[self.len] = r;
        self.len += 1;
    }

    /// These ranges with [cut_start, cut_end) removed, in the same order. A cut splits at most
    /// one range (they are disjoint), so one range cut by an ACK's blocks stays within bounds.
    fn without(&self, cut_start: u64, cut_end: u64) -> Pieces {
        let mut out = Pieces::default();
        for &(a, b) in self.blocks() {
            if cut_end <= a || cut_start >= b {
                out.push((a, b));
                continue;
            }
            if a < cut_start {
                out.push((a, cut_start));
            }
            if cut_end < b {
                out.push((cut_end, b));
            }
        }
        out
    }
}

/// RACK state (RFC 8985 §6.1).
#[derive(Clone, Copy, Debug, Default)]
struct Rack {
    xmit_us: u64,
    /// Transmission number of that packet. Linux orders by (transmit time, end_seq); in a
    /// simulator many packets leave in the same microsecond, so the transmission counter
    /// orders them exactly (a retransmission sent after new data is later, whatever its
    /// sequence number).
    tx_index: u64,
    rtt_us: u64,
    advanced: bool,
    reord_seen: bool,
}

/// Rate sample under construction (Linux `struct rate_sample`).
#[derive(Clone, Copy, Debug, Default)]
struct RateSample {
    has_prior: bool,
    prior_delivered: u64,
    prior_us: u64,
    interval_us: i64,
    last_tx_index: u64,
    app_limited: bool,
    is_retrans: bool,
    tx_in_flight: u32,
    lost_at_send: u64,
}

/// Proportional Rate Reduction state of one recovery episode (RFC 6937).
#[derive(Clone, Copy, Debug)]
struct Prr {
    prior_cwnd: u32,
    ssthresh: u32,
    delivered: u32,
    out: u32,
    /// The window PRR allows after the latest ACK.
    cwnd: u32,
}

impl Prr {
    /// Linux `tcp_cwnd_reduction`: the window after an ACK that delivered `newly`.
    fn on_ack(&mut self, newly: u32, in_flight: u32, una_advanced: bool, newly_lost: u32) {
        self.delivered += newly;
        let sndcnt = if in_flight > self.ssthresh {
            let allowed = (self.ssthresh as u64 * self.delivered as u64).div_ceil(self.prior_cwnd.max(1) as u64);
            allowed.saturating_sub(self.out as u64) as u32
        } else {
            let mut n = self.delivered.saturating_sub(self.out).max(newly);
            if una_advanced && newly_lost == 0 {
                n += 1;
            }
            n.min(self.ssthresh - in_flight)
        };
        // Always allow the fast retransmit itself.
        let sndcnt = sndcnt.max(u32::from(self.out == 0));
        self.cwnd = in_flight + sndcnt;
    }
}

/// What one ACK's processing accumulates before the rate sample is generated.
#[derive(Clone, Copy, Debug, Default)]
struct AckScratch {
    rs: RateSample,
    /// Packets newly delivered.
    newly: u32,
    /// Send time and transmission number of the most recently sent newly delivered packet
    /// (never retransmitted): Linux's `last_ackt`, the source of ca_rtt.
    newest: Option<(u64, u64)>,
    /// Earliest send time among newly cumulatively ACKed packets (Linux `first_ackt`).
    oldest_cum: Option<u64>,
    /// Earliest send time among newly SACKed packets (Linux `first_sackt`).
    oldest_sack: Option<u64>,
    /// Processing the cumulative ACK (after the SACK blocks).
    cumulative: bool,
    /// Highest SACKed sequence before this ACK, for reordering detection.
    highest_sacked_before: u64,
}

/// Counters a sender keeps for the run's results.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data packets transmitted, retransmissions included.
    pub sent: u64,
    /// Retransmissions.
    pub retrans: u64,
    /// Segments declared lost (RACK or RTO).
    pub marked_lost: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
}

/// What one ACK produced, for the metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckOutcome {
    /// RTT sample of this ACK.
    pub rtt_us: Option<u64>,
}


/// The sending side of one flow.
pub struct Sender {
    /// The send buffer's cap, bytes of skb memory (`tcp_wmem[2]`).
    sndbuf_bytes: u64,
    flow: u16,
    /// The congestion control.
    pub cc: Box<dyn Controller>,
    active: bool,
    snd_una: u64,
    snd_nxt: u64,
    segs: VecDeque<Seg>,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    delivered: u64,
    delivered_us: u64,
    first_tx_us: u64,
    app_limited: u64,
    lost_total: u64,
    tsorted: VecDeque<(u64, u64)>,
    retx: BinaryHeap<Reverse<u64>>,
    rack: Rack,
    highest_sacked: u64,
    sack_cache: Pieces,
    srtt_us: u64,
    rttvar_us: u64,
    min_rtt_us: u64,
    min_rtt_stamp: u64,
    backoff: u32,
    rto_deadline: Option<u64>,
    rto_event_at: Option<u64>,
    rack_deadline: Option<u64>,
    ca_state: CaState,
    high_seq: u64,
    prr: Option<Prr>,
    next_send_ns: u64,
    wake_at: Option<u64>,
    /// `tcp_cwnd_validate`'s state: cwnd stopped the last transmission (latched until
    /// `snd_una` reaches `cwnd_usage_seq`), and the most packets outstanding since.
    is_cwnd_limited: bool,
    max_packets_out: u64,
    cwnd_usage_seq: u64,
    /// End of the data the application has written into the socket (segment number): new
    /// segments go out only below it.
    written: u64,
    tx_counter: u64,
    last_reconfig_seq: u32,
    /// skbs in the retransmission queue (segments flagged `SKB_HEAD` in `segs`).
    sent_skbs: u64,
    /// Counters for the results.
    pub stats: SenderStats,
}

/// Where a sender puts what it does: events to schedule and packets to send.
pub struct Io<'a> {
    /// The event queue.
    pub ev: &'a mut EventQueue,
    /// Packets emitted, for the world to route.
    pub out: &'a mut Vec<Packet>,
}

impl Sender {
    /// A sender for flow `flow` driven by `cc`, idle until `start`.
    pub fn new(flow: u16, cc: Box<dyn Controller>) -> Sender {
        Sender::with_sndbuf(flow, cc, SNDBUF_BYTES)
    }

    /// A sender whose socket holds at most `sndbuf_bytes` of skb memory (`tcp_wmem[2]`).
    pub fn with_sndbuf(flow: u16, cc: Box<dyn Controller>, sndbuf_bytes: u64) -> Sender {
        Sender {
            sndbuf_bytes,
            flow,
            cc,
            active: false,
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered: 0,
            delivered_us: 0,
            first_tx_us: 0,
            app_limited: 0,
            lost_total: 0,
            tsorted: VecDeque::new(),
            retx: BinaryHeap::new(),
            rack: Rack::default(),
            highest_sacked: 0,
            sack_cache: Pieces::default(),
            srtt_us: 0,
            rttvar_us: 0,
            min_rtt_us: 0,
            min_rtt_stamp: 0,
            backoff: 0,
            rto_deadline: None,
            rto_event_at: None,
            rack_deadline: None,
            ca_state: CaState::Open,
            high_seq: 0,
            prr: None,
            next_send_ns: 0,
            wake_at: None,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            written: 0,
            tx_counter: 0,
            last_reconfig_seq: 0,
            sent_skbs: 0,
            stats: SenderStats::default(),
        }
    }

    /// Packets in flight (Linux `tcp_packets_in_flight`).
    pub fn in_flight(&self) -> u32 {
        (self.snd_nxt - self.snd_una) as u32 - self.sacked_out - self.lost_out + self.retrans_out
    }

    /// Whether the sender is transmitting.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Smoothed RTT (0 before the first sample).
    pub fn srtt_us(&self) -> u64 {
        self.srtt_us
    }

    /// Total segments delivered.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Loss-recovery state.
    pub fn ca_state(&self) -> CaState {
        self.ca_state
    }

    /// Start sending.
    pub fn start(&mut self, now: u64, io: &mut Io) {
        self.active = true;
        self.app_write();
        self.try_send(now, io);
    }

    /// The application's side of the send buffer: when the socket is writeable (the queued
    /// segments, SACKed ones included, take at most 2/3 of the buffer: sk_stream_is_writeable)
    /// a bulk writer fills it. A write that finds no unsent data while the window is open and
    /// every lost segment retransmitted marks the flow application-limited, as
    /// tcp_rate_check_app_limited does at each sendmsg.
    fn app_write(&mut self) {
        if 3 * self.wmem_queued() > 2 * self.sndbuf_bytes {
            return;
        }
        if self.written == self.snd_nxt
            && self.in_flight() < self.window()
            && self.lost_out <= self.retrans_out
            && self.snd_nxt > 0
        {
            self.app_limited = (self.delivered + self.in_flight() as u64).max(1);
        }
        let sent = (self.snd_nxt - self.snd_una) * MSS as u64 + self.sent_skbs * SKB_HEAD_TRUESIZE;
        let room = unsent_segs_in(self.sndbuf_bytes.saturating_sub(sent));
        self.written = self.written.max(self.snd_nxt + room).max(self.snd_una + 1);
    }

    /// Socket memory the queued data takes (Linux `sk_wmem_queued`): the payload, plus an skb
    /// head per skb. Unsent data sits in the application's 64 KiB skbs; each transmission cuts
    /// off an skb of its own (`tso_fragment`: the TSO-sized skbs the sender emits), SACK
    /// boundaries split skbs (`tcp_fragment`) and SACKed neighbours merge (`tcp_shift_skb_data`),
    /// so the same data takes more memory once sent, and more when SACKs cut it up.
    pub fn wmem_queued(&self) -> u64 {
        (self.snd_nxt - self.snd_una) * MSS as u64 + self.sent_skbs * SKB_HEAD_TRUESIZE + unsent_bytes(self.written - self.snd_nxt)
    }

    /// Segments queued in the socket (sent and unacknowledged, SACKed included, and unsent).
    pub fn queued_segs(&self) -> u64 {
        self.written - self.snd_una
    }

    /// Stop sending for good (the application closed); ACKs and timers are ignored after.
    pub fn stop(&mut self) {
        self.active = false;
    }

    fn rto_us(&self) -> u64 {
        let base = if self.srtt_us == 0 { INIT_RTO_US } else { self.srtt_us + (4 * self.rttvar_us).max(MIN_RTO_US) };
        (base << self.backoff.min(20)).min(MAX_RTO_US)
    }

    /// A reconfiguration event reached the sender.
    pub fn on_reconfig(&mut self, ev: ReconfigEvent) {
        if self.active && ev.seq > self.last_reconfig_seq {
            self.last_reconfig_seq = ev.seq;
            self.cc.on_reconfig(&ev);
        }
    }

    /// Process an ACK.
    pub fn on_ack(&mut self, now: u64, ack: &AckInfo, io: &mut Io) -> AckOutcome {
        if !self.active {
            return AckOutcome::default();
        }
        let prior_in_flight = self.in_flight();
        let prior_una = self.snd_una;
        let mut sc = AckScratch { highest_sacked_before: self.highest_sacked, ..AckScratch::default() };

        self.process_sacks(now, ack, &mut sc);
        let cum = ack.cum.min(self.snd_nxt);
        sc.cumulative = true;
        while self.snd_una < cum {
            let seq = self.snd_una;
            let seg = self.segs.pop_front().expect("scoreboard covers snd_una..snd_nxt");
            // The first segment always heads an skb: a partly ACKed skb keeps its head
            // (tcp_trim_head), a fully ACKed one is freed.
            match self.segs.front_mut() {
                Some(next) if next.flags & SKB_HEAD == 0 => next.flags |= SKB_HEAD,
                _ => self.sent_skbs -= 1,
            }
            if seg.flags & SACKED == 0 {
                self.deliver_one(now, seq, seg, &mut sc);
            } else {
                self.sacked_out -= 1;
            }
            if seg.flags & LOST != 0 && seg.flags & SACKED == 0 {
                self.lost_out -= 1;
            }
            if seg.flags & RETRANS_OUT != 0 && seg.flags & SACKED == 0 {
                self.retrans_out -= 1;
            }
            self.snd_una += 1;
        }
        // Linux: the estimators take the oldest newly delivered packet (cumulatively ACKed
        // first, else SACKed: seq_rtt / sack_rtt), min_rtt and the control the newest (ca_rtt).
        let ca_rtt = sc.newest.map(|(t, _)| now - t);
        if let Some(t) = sc.oldest_cum.or(sc.oldest_sack) {
            self.update_srtt(now - t);
        }
        if let Some(r) = ca_rtt {
            self.update_min_rtt(now, r);
        }
        let lost_before = self.lost_total;
        self.rack_mark_lost(now, io);
        let newly_lost = (self.lost_total - lost_before) as u32;
        self.advance_recovery_state(now, prior_in_flight);
        let in_flight = self.in_flight();
        if let Some(prr) = &mut self.prr {
            prr.on_ack(sc.newly, in_flight, self.snd_una > prior_una, newly_lost);
        }

        let sample = self.rate_gen(now, sc.newly, newly_lost, sc.rs, ca_rtt, prior_in_flight);
        self.cc.on_ack(&sample);
        if self.cc.marks_app_limited() {
            self.app_limited = (self.delivered + self.in_flight() as u64).max(1);
        }

        if self.snd_una > prior_una {
            self.backoff = 0;
            self.rearm_rto(now, io);
            self.app_write();
        }
        self.try_send(now, io);
        AckOutcome { rtt_us: ca_rtt }
    }

    fn process_sacks(&mut self, now: u64, ack: &AckInfo, sc: &mut AckScratch) {
        let blocks = &ack.sacks[..ack.nsacks as usize];
        for &(s, e) in blocks {
            let (s, e) = (s.max(self.snd_una).max(ack.cum), e.min(self.snd_nxt));
            if s >= e {
                continue;
            }
            // Parts already covered by the previous ACK's blocks were fully processed then.
            let mut pieces = Pieces::one(s, e);
            for &(cs, ce) in self.sack_cache.blocks() {
                pieces = pieces.without(cs, ce);
            }
            for &(a, b) in pieces.blocks() {
                for seq in a..b {
                    self.sack_one(now, seq, sc);
                }
            }
            self.highest_sacked = self.highest_sacked.max(e);
        }
        self.sack_cache = Pieces::of(blocks);
    }

    fn sack_one(&mut self, now: u64, seq: u64, sc: &mut AckScratch) {
        let i = (seq - self.snd_una) as usize;
        let seg = self.segs[i];
        if seg.flags & SACKED != 0 {
            return;
        }
        let mut f = seg.flags | SACKED;
        self.sacked_out += 1;
        // skbs: a SACKed segment after a SACKed one is shifted into its skb
        // (tcp_shift_skb_data), one after data not SACKed is cut off into an skb of its own
        // (tcp_fragment at the SACK block's edge); so is the data after it.
        let after_sacked = i > 0 && self.segs[i - 1].flags & SACKED != 0;
        self.sent_skbs = self.sent_skbs.wrapping_add_signed(set_skb_head(&mut f, !after_sacked));
        if let Some(next) = self.segs.get_mut(i + 1) {
            let head = next.flags & SACKED == 0;
            self.sent_skbs = self.sent_skbs.wrapping_add_signed(set_skb_head(&mut next.flags, head));
        }
        if f & LOST != 0 {
            f &= !LOST;
            self.lost_out -= 1;
        }
        if f & RETRANS_OUT != 0 {
            f &= !RETRANS_OUT;
            self.retrans_out -= 1;
        }
        self.segs[i].flags = f;
        self.deliver_one(now, seq, seg, sc);
    }

    /// Account one newly delivered segment (`tcp_rate_skb_delivered` and RACK advance).
    fn deliver_one(&mut self, now: u64, seq: u64, seg: Seg, sc: &mut AckScratch) {
        self.delivered += 1;
        sc.newly += 1;
        let retransmitted = seg.flags & EVER_RETRANS != 0;
        let rs = &mut sc.rs;
        if !rs.has_prior || seg.tx_index > rs.last_tx_index {
            rs.has_prior = true;
            rs.prior_delivered = seg.delivered;
            rs.prior_us = seg.delivered_us;
            rs.app_limited = seg.flags & APP_LIMITED != 0;
            rs.is_retrans = retransmitted;
            rs.tx_in_flight = seg.tx_in_flight;
            rs.lost_at_send = seg.lost_at_send;
            rs.last_tx_index = seg.tx_index;
            self.first_tx_us = seg.xmit_us;
            rs.interval_us = seg.xmit_us as i64 - seg.first_tx_us as i64;
        }
        let rtt = now - seg.xmit_us;
        if !retransmitted {
            if sc.newest.is_none_or(|(_, tx)| seg.tx_index > tx) {
                sc.newest = Some((seg.xmit_us, seg.tx_index));
            }
            let oldest = if sc.cumulative { &mut sc.oldest_cum } else { &mut sc.oldest_sack };
            if oldest.is_none_or(|t| seg.xmit_us < t) {
                *oldest = Some(seg.xmit_us);
            }
            if seq < sc.highest_sacked_before {
                // Delivered below a SACKed segment without a retransmission: reordering.
                self.rack.reord_seen = true;
            }
        }
        self.rack_advance(seg.xmit_us, seg.tx_index, rtt, retransmitted);
        self.cc.on_packet_acked(now, seg.tx_index, rtt);
    }

    /// RFC 8985 §6.2 step 2 / Linux `tcp_rack_advance`.
    fn rack_advance(&mut self, xmit_us: u64, tx_index: u64, rtt_us: u64, retransmitted: bool) {
        if retransmitted && rtt_us < self.min_rtt_us {
            // Possibly the ACK of the original transmission: ambiguous, skip (Linux does).
            return;
        }
        self.rack.rtt_us = rtt_us;
        if tx_index > self.rack.tx_index {
            self.rack.xmit_us = xmit_us;
            self.rack.tx_index = tx_index;
        }
        self.rack.advanced = true;
    }

    /// RFC 6298 srtt and rttvar (Linux `tcp_rtt_estimator`, without its mdev_max twist).
    fn update_srtt(&mut self, rtt: u64) {
        if self.srtt_us == 0 {
            self.srtt_us = rtt.max(1);
            self.rttvar_us = rtt / 2;
        } else {
            let err = self.srtt_us.abs_diff(rtt);
            self.rttvar_us = (3 * self.rttvar_us + err) / 4;
            self.srtt_us = ((7 * self.srtt_us + rtt) / 8).max(1);
        }
    }

    /// Linux's windowed min RTT (`tcp_update_rtt_min`, window `tcp_min_rtt_wlen`).
    fn update_min_rtt(&mut self, now: u64, rtt: u64) {
        if self.min_rtt_us == 0 || rtt <= self.min_rtt_us || now - self.min_rtt_stamp > MIN_RTT_WINDOW_US {
            self.min_rtt_us = rtt.max(1);
            self.min_rtt_stamp = now;
        }
    }

    /// Linux `tcp_rack_reo_wnd`.
    fn reo_wnd_us(&self) -> u64 {
        if !self.rack.reord_seen && (self.ca_state != CaState::Open || self.sacked_out >= DUPTHRESH) {
            return 0;
        }
        (self.min_rtt_us / 4).min(self.srtt_us)
    }

    fn rack_mark_lost(&mut self, now: u64, io: &mut Io) {
        if !self.rack.advanced {
            return;
        }
        self.rack.advanced = false;
        self.rack_detect_loss(now, io);
    }

    /// RFC 8985 §6.2 step 5 / Linux `tcp_rack_detect_loss` over the send-ordered list.
    fn rack_detect_loss(&mut self, now: u64, io: &mut Io) {
        let reo_wnd = self.reo_wnd_us();
        let mut i = 0;
        while i < self.tsorted.len() {
            let (seq, txi) = self.tsorted[i];
            let idx = seq.wrapping_sub(self.snd_una) as usize;
            let live = seq >= self.snd_una
                && idx < self.segs.len()
                && self.segs[idx].tx_index == txi
                && self.segs[idx].flags & SACKED == 0
                && !(self.segs[idx].flags & LOST != 0 && self.segs[idx].flags & RETRANS_OUT == 0);
            if !live {
                if i == 0 {
                    self.tsorted.pop_front();
                } else {
                    i += 1;
                }
                continue;
            }
            let seg = self.segs[idx];
            if seg.tx_index >= self.rack.tx_index {
                // Not sent before the most recently sent delivered packet.
                break;
            }
            let due = seg.xmit_us + self.rack.rtt_us + reo_wnd;
            if due <= now {
                self.mark_lost(now, seq);
                if i == 0 {
                    self.tsorted.pop_front();
                } else {
                    i += 1;
                }
            } else {
                // Later entries were sent later still: none of them is due either.
                self.arm_rack_timer(due, io);
                return;
            }
        }
    }

    fn arm_rack_timer(&mut self, at: u64, io: &mut Io) {
        if self.rack_deadline != Some(at) {
            self.rack_deadline = Some(at);
            io.ev.push(at, Ev::Rack(self.flow));
        }
    }

    /// Linux `tcp_mark_skb_lost`.
    fn mark_lost(&mut self, now: u64, seq: u64) {
        let i = (seq - self.snd_una) as usize;
        let f = self.segs[i].flags;
        if f & RETRANS_OUT != 0 {
            self.retrans_out -= 1;
        }
        if f & LOST == 0 {
            self.lost_out += 1;
        }
        self.lost_total += 1;
        self.stats.marked_lost += 1;
        self.segs[i].flags = (f | LOST) & !RETRANS_OUT;
        self.retx.push(Reverse(seq));
        self.cc.on_packet_lost(now, self.segs[i].tx_index);
    }

    /// Linux `tcp_fastretrans_alert`'s state steps: recovery (or the loss state after a
    /// timeout) ends once everything outstanding at its start is ACKed; in the open state any
    /// segment still marked lost starts a recovery (`tcp_time_to_recover`: `lost_out != 0`),
    /// also on the ACK that ended the previous one, when segments sent during that recovery
    /// were marked lost and are not yet delivered. A control that sets its window on every ACK
    /// (BBR) then sees one recovery go on, without the exit's restore; the others reduce again.
    fn advance_recovery_state(&mut self, now: u64, prior_in_flight: u32) {
        if self.ca_state != CaState::Open && self.snd_una >= self.high_seq {
            self.ca_state = CaState::Open;
            self.prr = None;
            self.cc.on_recovery_exit(now);
        }
        if self.lost_out > 0 && self.ca_state == CaState::Open {
            self.ca_state = CaState::Recovery;
            self.high_seq = self.snd_nxt;
            let prior_cwnd = self.cc.cwnd();
            self.cc.on_congestion_event(now, prior_in_flight);
            if self.cc.uses_prr() {
                let ssthresh = self.cc.cwnd();
                self.prr = Some(Prr { prior_cwnd, ssthresh, delivered: 0, out: 0, cwnd: ssthresh });
            }
        }
    }

    /// Linux `tcp_rate_gen`, then the AckSample handed to the controller.
    fn rate_gen(
        &mut self,
        now: u64,
        newly: u32,
        newly_lost: u32,
        rs: RateSample,
        rtt: Option<u64>,
        prior_in_flight: u32,
    ) -> AckSample {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if newly > 0 {
            self.delivered_us = now;
        }
        let (delivered, interval) = if !rs.has_prior {
            (-1, -1)
        } else {
            let d = (self.delivered - rs.prior_delivered) as i64;
            let ack_us = now as i64 - rs.prior_us as i64;
            let iv = rs.interval_us.max(ack_us);
            if iv < self.min_rtt_us as i64 {
                (d, -1)
            } else {
                (d, iv)
            }
        };
        AckSample {
            now_us: now,
            acked_sacked: newly,
            losses: newly_lost,
            delivered,
            interval_us: interval,
            prior_delivered: rs.prior_delivered,
            rtt_us: rtt,
            prior_in_flight,
            in_flight: self.in_flight(),
            app_limited: rs.app_limited,
            is_retrans: rs.is_retrans,
            tx_in_flight: rs.tx_in_flight,
            lost: if rs.has_prior { self.lost_total - rs.lost_at_send } else { 0 },
            ca_state: self.ca_state,
            delivered_total: self.delivered,
            lost_total: self.lost_total,
            min_rtt_us: self.min_rtt_us,
            srtt_us: self.srtt_us,
            mss: MSS,
            cwnd_limited: self.is_cwnd_limited,
            max_packets_out: self.max_packets_out.min(u64::from(u32::MAX)) as u32,
        }
    }

    fn rearm_rto(&mut self, now: u64, io: &mut Io) {
        if self.snd_nxt == self.snd_una {
            self.rto_deadline = None;
            return;
        }
        let at = now + self.rto_us();
        self.rto_deadline = Some(at);
        // The timer is lazy: an earlier pending event re-schedules itself to the deadline.
        if self.rto_event_at.is_none_or(|t| t > at) {
            self.rto_event_at = Some(at);
            io.ev.push(at, Ev::Rto(self.flow));
        }
    }

    /// The RTO timer event.
    pub fn on_rto_timer(&mut self, now: u64, io: &mut Io) {
        if self.rto_event_at != Some(now) {
            return;
        }
        self.rto_event_at = None;
        if !self.active {
            return;
        }
        let Some(deadline) = self.rto_deadline else { return };
        if deadline > now {
            self.rto_event_at = Some(deadline);
            io.ev.push(deadline, Ev::Rto(self.flow));
            return;
        }
        self.stats.rtos += 1;
        self.enter_loss(now);
        self.cc.on_rto(now);
        self.backoff += 1;
        self.rto_deadline = None;
        self.rearm_rto(now, io);
        self.try_send(now, io);
    }

    /// Linux `tcp_enter_loss`: everything not SACKed is lost.
    fn enter_loss(&mut self, now: u64) {
        self.retx.clear();
        self.tsorted.clear();
        for seq in self.snd_una..self.snd_nxt {
            let i = (seq - self.snd_una) as usize;
            if self.segs[i].flags & SACKED == 0 {
                let f = self.segs[i].flags;
                if f & RETRANS_OUT != 0 {
                    self.retrans_out -= 1;
                }
                if f & LOST == 0 {
                    self.lost_out += 1;
                    self.lost_total += 1;
                    self.stats.marked_lost += 1;
                    self.cc.on_packet_lost(now, self.segs[i].tx_index);
                }
                self.segs[i].flags = (f | LOST) & !RETRANS_OUT;
                self.retx.push(Reverse(seq));
            }
        }
        self.ca_state = CaState::Loss;
        self.high_seq = self.snd_nxt;
        self.prr = None;
        self.rack.advanced = false;
    }

    /// RACK's reordering timer event (Linux `tcp_rack_reo_timeout`).
    pub fn on_rack_timer(&mut self, now: u64, io: &mut Io) {
        if self.rack_deadline != Some(now) || !self.active {
            return;
        }
        self.rack_deadline = None;
        let lost_before = self.lost_total;
        let prior_in_flight = self.in_flight();
        self.rack_detect_loss(now, io);
        let newly_lost = (self.lost_total - lost_before) as u32;
        if newly_lost > 0 {
            let was_open = self.ca_state == CaState::Open;
            self.advance_recovery_state(now, prior_in_flight);
            let in_flight = self.in_flight();
            if let (true, Some(prr)) = (was_open, &mut self.prr) {
                // As Linux on entering recovery from this timer: one delivery's worth.
                prr.on_ack(1, in_flight, false, newly_lost);
            }
            self.try_send(now, io);
        }
    }

    /// The pacing timer event.
    pub fn on_wake(&mut self, now: u64, io: &mut Io) {
        if self.wake_at == Some(now) {
            self.wake_at = None;
            self.try_send(now, io);
        }
    }

    fn next_retransmission(&mut self) -> Option<u64> {
        while let Some(&Reverse(seq)) = self.retx.peek() {
            self.retx.pop();
            if seq >= self.snd_una {
                let f = self.segs[(seq - self.snd_una) as usize].flags;
                if f & LOST != 0 && f & (RETRANS_OUT | SACKED) == 0 {
                    return Some(seq);
                }
            }
        }
        None
    }

    /// The window in force: PRR's during fast recovery, else the control's.
    fn window(&self) -> u32 {
        self.prr.map_or(self.cc.cwnd(), |p| p.cwnd).max(1)
    }

    /// Segments of an skb an unpaced flow sends (tcp_tso_autosize at the rate Linux computes
    /// for it, tcp_update_pacing_rate: 1.2 cwnd / srtt; 2 before the first RTT sample).
    fn unpaced_skb_segs(&self) -> u32 {
        if self.srtt_us == 0 {
            return 2;
        }
        tso_autosize_segs(1.2 * self.cc.cwnd() as f64 * MSS as f64 * 1e6 / self.srtt_us as f64)
    }

    /// Send what cwnd and pacing allow, then note whether cwnd was what stopped the flow
    /// (the tail of Linux `tcp_write_xmit`).
    pub fn try_send(&mut self, now: u64, io: &mut Io) {
        let sent_before = self.stats.sent;
        self.fill_window(now, io);
        let cwnd_limited = self.in_flight() >= self.window();
        if self.stats.sent > sent_before || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
    }

    /// Linux `tcp_cwnd_validate`'s tracking: cwnd-limited is latched for a window of data
    /// (until `snd_una` passes what was sent when it was set), and while it is not, the most
    /// packets outstanding in the window is kept. (Linux's RFC 2861 decay of an idle window,
    /// `tcp_cwnd_application_limited`, does not apply to a bulk sender: it is skipped while the
    /// writer waits for send-buffer space, which is what holds such a flow.)
    fn cwnd_validate(&mut self, cwnd_limited: bool) {
        let packets_out = self.snd_nxt - self.snd_una;
        if self.snd_una >= self.cwnd_usage_seq || cwnd_limited || (!self.is_cwnd_limited && packets_out > self.max_packets_out) {
            self.is_cwnd_limited = cwnd_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Transmit what cwnd, pacing and the written data allow now.
    fn fill_window(&mut self, now: u64, io: &mut Io) {
        // New data leaves in skbs of its own (tso_fragment cuts them off the application's
        // 64 KiB ones): a paced flow's each TSO burst; an unpaced flow's what the window lets
        // out now, in pieces of unpaced_skb_segs.
        let mut skb_left = 0u32;
        while self.active && self.in_flight() < self.window() {
            let rate = self.cc.pacing_rate().filter(|r| *r > 0.0);
            if rate.is_some() && now * 1000 < self.next_send_ns {
                let at = self.next_send_ns.div_ceil(1000);
                if self.wake_at.is_none_or(|t| t > at || t < now) {
                    self.wake_at = Some(at);
                    io.ev.push(at, Ev::SenderWake(self.flow));
                }
                return;
            }
            // One skb: paced flows send TSO-sized bursts (tcp_tso_autosize), within half the
            // window (tcp_cwnd_test); unpaced flows one segment at a time (ACK clocked anyway).
            let window = self.window();
            let goal = rate.map_or(1, tso_autosize_segs);
            let quota = (window - self.in_flight()).min((window / 2).max(1)).min(goal);
            if rate.is_some() {
                skb_left = 0;
            }
            let mut sent = 0u32;
            while sent < quota {
                let seq = match self.next_retransmission() {
                    Some(s) => s,
                    None if self.snd_nxt >= self.written => break,
                    None => {
                        let mut seg = Seg::default();
                        if skb_left == 0 {
                            seg.flags = SKB_HEAD;
                            self.sent_skbs += 1;
                            skb_left = if rate.is_some() { quota } else { self.unpaced_skb_segs() };
                        }
                        skb_left -= 1;
                        self.segs.push_back(seg);
                        self.snd_nxt += 1;
                        self.snd_nxt - 1
                    }
                };
                self.transmit(now, seq, io);
                sent += 1;
            }
            if sent == 0 {
                return;
            }
            if let Some(r) = rate {
                // tcp_update_skb_after_send: the next skb leaves this one's time at the pacing
                // rate later. (Linux also takes back up to half of that as credit for how late
                // the skb left; not modelled: docs/simulator.md, "Against the real kernel".)
                let len_ns = (sent as f64 * MSS as f64 * 1e9 / r) as u64;
                self.next_send_ns = self.next_send_ns.max(now * 1000).saturating_add(len_ns.max(1));
            }
        }
    }

    fn transmit(&mut self, now: u64, seq: u64, io: &mut Io) {
        let new = seq + 1 == self.snd_nxt && self.segs.back().is_some_and(|s| s.tx_index == 0);
        let packets_out_before = self.snd_nxt - self.snd_una - u64::from(new);
        if packets_out_before == 0 {
            // Nothing outstanding: a new sampling window starts (tcp_rate_skb_sent).
            self.first_tx_us = now;
            self.delivered_us = now;
        }
        self.tx_counter += 1;
        let i = (seq - self.snd_una) as usize;
        let seg = &mut self.segs[i];
        seg.xmit_us = now;
        seg.first_tx_us = self.first_tx_us;
        seg.delivered_us = self.delivered_us;
        seg.delivered = self.delivered;
        seg.tx_index = self.tx_counter;
        seg.lost_at_send = self.lost_total;
        seg.flags &= !APP_LIMITED;
        if self.app_limited != 0 {
            seg.flags |= APP_LIMITED;
        }
        if !new {
            seg.flags |= RETRANS_OUT | EVER_RETRANS;
            self.retrans_out += 1;
            self.stats.retrans += 1;
        }
        self.stats.sent += 1;
        if let Some(prr) = &mut self.prr {
            prr.out += 1;
        }
        let in_flight = self.in_flight();
        self.segs[i].tx_in_flight = in_flight;
        self.tsorted.push_back((seq, self.tx_counter));
        io.out.push(Packet {
            flow: self.flow,
            size: DATA_PACKET_BYTES,
            sent_us: now,
            route: 0,
            hop: 0,
            served_us: 0,
            body: Body::Data { seq, tx_index: self.tx_counter },
        });
        if self.rto_deadline.is_none() {
            self.rearm_rto(now, io);
        }
        self.cc.on_packet_sent(now, self.tx_counter, in_flight);
    }
}

/// The receiving side of one flow.
pub struct Receiver {
    flow: u16,
    rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    recent: Vec<(u64, u64)>,
    pending: u32,
    delack_at: Option<u64>,
    /// Time of the pending DelAck event (lazy timer: it re-arms itself to `delack_at`).
    delack_event_at: Option<u64>,
    delack_segs: u32,
    delack_timeout_us: u64,
    /// Most in-order segments one skb holds (GRO; 1: none).
    gro_segs: u32,
    /// The burst being taken in: segments that reached the host in one instant, as (that
    /// instant, segments in it, whether one of them wants an ACK at once).
    skb: Option<(u64, u32, bool)>,
}

/// Most segments Linux's GRO merges into one skb: 64 KiB (`gro_max_size`), 45 segments of
/// 1448 bytes, the limit of the emulator's output coalescer too (one IPv4 packet of at most
/// 65,535 bytes, `leocc_emu::offload::Coalescer`).
pub const GRO_MAX_SEGS: u32 = 45;

/// What the receiver decided about one arriving segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxOutcome {
    /// The segment was new (not a duplicate).
    pub new: bool,
    /// An ACK should go out now.
    pub ack_now: bool,
}

impl Receiver {
    /// A receiver that ACKs every `delack_segs` in-order segments or after `delack_timeout_us`.
    pub fn new(flow: u16, delack_segs: u32, delack_timeout_us: u64) -> Receiver {
        Receiver {
            flow,
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            pending: 0,
            delack_at: None,
            delack_event_at: None,
            delack_segs: delack_segs.max(1),
            delack_timeout_us,
            gro_segs: 1,
            skb: None,
        }
    }

    /// The same receiver behind GRO: the segments that reach its host in the same instant
    /// (released by one delivery opportunity), up to `segs` of them, are taken in as one burst
    /// and the ACK decision is taken once, at its end ([`Self::end_skb`]): an ACK if a segment
    /// of it was a duplicate, out of order or filled a hole, or if more than one segment came
    /// in order since the last ACK; else the delayed-ACK timer. That is what the kernel does
    /// with what the emulator hands it (segments released together, written as GRO
    /// super-packets back to back): it acknowledges in-order data per skb and, while the
    /// application has not read it, only once the window edge moves (`__tcp_ack_snd_check`);
    /// SACKs for out-of-order data it compresses to one per ms after the first three
    /// (`tcp_comp_sack_delay_ns`). Measured on the bundled uplink: 14.7 segments per ACK for
    /// BBRv1, 12-14 for LeoCC, where this receiver without GRO sent one ACK per 1.5 segments.
    /// `segs` <= 1 decides per segment, as before.
    pub fn with_gro(mut self, segs: u32) -> Receiver {
        self.gro_segs = segs.max(1);
        self
    }

    /// Whether a segment arriving at `now` cannot join the burst being taken in (it is from
    /// another instant, or the burst is full): that burst is then complete, and
    /// [`Self::end_skb`] must be called before the segment is handed over.
    pub fn ends_skb(&self, now: u64) -> bool {
        self.skb.is_some_and(|(t, n, _)| t != now || n >= self.gro_segs)
    }

    /// Completes the burst being taken in, if any: whether an ACK is due for it now.
    pub fn end_skb(&mut self) -> bool {
        self.skb.take().is_some_and(|(_, _, urgent)| urgent || self.pending >= self.delack_segs)
    }

    /// Next expected segment.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// A data segment arrived.
    pub fn on_data(&mut self, now: u64, seq: u64, ev: &mut EventQueue) -> RxOutcome {
        // Duplicate, out-of-order and hole-filling segments want an ACK at once (RFC 5681 4.2).
        let (new, at_once) = if seq < self.rcv_nxt || self.ooo.iter().any(|&(s, e)| s <= seq && seq < e) {
            (false, true)
        } else if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            let filled_hole = !self.ooo.is_empty();
            if self.ooo.first().is_some_and(|&(s, _)| s == self.rcv_nxt) {
                self.rcv_nxt = self.ooo.remove(0).1;
            }
            let nxt = self.rcv_nxt;
            self.recent.retain(|&(_, e)| e > nxt);
            if !filled_hole {
                self.pending += 1;
            }
            (true, filled_hole)
        } else {
            let block = self.insert_ooo(seq);
            self.recent.retain(|&(s, e)| e < block.0 || s > block.1);
            self.recent.insert(0, block);
            (true, true)
        };
        if self.gro_segs > 1 {
            // Behind GRO the decision waits for the end of the burst this segment joins.
            let (n, urgent) = self.skb.filter(|&(t, _, _)| t == now).map_or((0, false), |(_, n, u)| (n, u));
            self.skb = Some((now, n + 1, urgent || at_once));
        } else if at_once || self.pending >= self.delack_segs {
            return RxOutcome { new, ack_now: true };
        }
        if !at_once && self.delack_at.is_none() {
            let at = now + self.delack_timeout_us;
            self.delack_at = Some(at);
            if self.delack_event_at.is_none() {
                self.delack_event_at = Some(at);
                ev.push(at, Ev::DelAck(self.flow));
            }
        }
        RxOutcome { new, ack_now: false }
    }

    /// Insert an out-of-order segment; returns the merged block that holds it.
    fn insert_ooo(&mut self, seq: u64) -> (u64, u64) {
        let pos = self.ooo.partition_point(|&(s, _)| s <= seq);
        self.ooo.insert(pos, (seq, seq + 1));
        let mut i = pos;
        if i > 0 && self.ooo[i - 1].1 == seq {
            self.ooo[i - 1].1 = seq + 1;
            self.ooo.remove(i);
            i -= 1;
        }
        if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == self.ooo[i].1 {
            self.ooo[i].1 = self.ooo[i + 1].1;
            self.ooo.remove(i + 1);
        }
        self.ooo[i]
    }

    /// The delayed-ACK timer fired: whether an ACK is due now.
    pub fn on_delack_timer(&mut self, now: u64, ev: &mut EventQueue) -> bool {
        if self.delack_event_at != Some(now) {
            return false;
        }
        self.delack_event_at = None;
        match self.delack_at {
            Some(at) if at <= now => {
                self.delack_at = None;
                self.pending > 0
            }
            Some(at) => {
                self.delack_event_at = Some(at);
                ev.push(at, Ev::DelAck(self.flow));
                false
            }
            None => false,
        }
    }

    /// Build the ACK to send now and reset the delayed-ACK state.
    pub fn make_ack(&mut self) -> AckInfo {
        self.pending = 0;
        self.delack_at = None;
        self.skb = None;
        let mut a = AckInfo { cum: self.rcv_nxt, ..AckInfo::default() };
        // Keep the remembered blocks current: each recent entry is refreshed to the merged
        // range that now contains it.
        let ooo = &self.ooo;
        let mut blocks: Vec<(u64, u64)> = Vec::with_capacity(MAX_SACK_BLOCKS);
        for &(s, _) in &self.recent {
            if let Some(&b) = ooo.iter().find(|&&(bs, be)| bs <= s && s < be) {
                if !blocks.contains(&b) {
                    blocks.push(b);
                }
            }
            if blocks.len() == MAX_SACK_BLOCKS {
                break;
            }
        }
        self.recent.truncate(8);
        for (i, b) in blocks.iter().enumerate() {
            a.sacks[i] = *b;
        }
        a.nsacks = blocks.len() as u8;
        a
    }
}

/// Wire size of an ACK with `nsacks` SACK blocks.
pub fn ack_size(nsacks: u8) -> u32 {
    ACK_BASE_BYTES + SACK_BLOCK_BYTES * nsacks as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_delays_acks_and_sacks_holes() {
        let mut ev = EventQueue::default();
        let mut r = Receiver::new(0, 2, 40_000);
        assert_eq!(r.on_data(0, 0, &mut ev), RxOutcome { new: true, ack_now: false });
        assert_eq!(ev.len(), 1, "delayed-ACK timer armed");
        assert_eq!(r.on_data(1, 1, &mut ev), RxOutcome { new: true, ack_now: true });
        let a = r.make_ack();
        assert_eq!((a.cum, a.nsacks), (2, 0));
        // Segment 2 lost; 3 and 4 arrive out of order, then 6.
        assert!(r.on_data(2, 3, &mut ev).ack_now);
        assert!(r.on_data(3, 4, &mut ev).ack_now);
        assert!(r.on_data(4, 6, &mut ev).ack_now);
        let a = r.make_ack();
        assert_eq!(a.cum, 2);
        assert_eq!(&a.sacks[..a.nsacks as usize], &[(6, 7), (3, 5)]);
        // The retransmission of 2 fills the hole.
        assert_eq!(r.on_data(5, 2, &mut ev), RxOutcome { new: true, ack_now: true });
        let a = r.make_ack();
        assert_eq!(a.cum, 5);
        assert_eq!(&a.sacks[..a.nsacks as usize], &[(6, 7)]);
        assert_eq!(r.on_data(6, 3, &mut ev), RxOutcome { new: false, ack_now: true });
    }

    /// Behind GRO, the segments that arrive in the same instant are taken in as one burst
    /// and get one ACK at its end (the kernel receiver's one ACK per burst the emulator
    /// releases), at most `GRO_MAX_SEGS` to a burst; a lone in-order segment waits for the
    /// next one or the timer, as without GRO; a burst with out-of-order data is ACKed at its
    /// end whatever its size.
    #[test]
    fn receiver_behind_gro_acks_once_per_burst() {
        let mut ev = EventQueue::default();
        let mut r = Receiver::new(0, 2, 40_000).with_gro(GRO_MAX_SEGS);
        // Hands one segment over as the world does; returns whether an ACK went out before it
        // (for the burst it completed) and whether one goes out for it alone.
        let mut deliver = |r: &mut Receiver, now: u64, seq: u64| {
            let before = r.ends_skb(now) && r.end_skb();
            if before {
                r.make_ack();
            }
            let now_ack = r.on_data(now, seq, &mut ev).ack_now;
            (before, now_ack)
        };
        // A burst of 24 segments released by one opportunity: no ACK until the burst ends ...
        for seq in 0..24 {
            assert_eq!(deliver(&mut r, 1000, seq), (false, false), "segment {seq}");
        }
        // ... then one, for all 24.
        assert!(r.end_skb());
        assert_eq!(r.make_ack().cum, 24);
        assert!(!r.end_skb(), "nothing left to end");
        // 50 segments in one instant: a burst of 45, then one of 5.
        let acks: usize = (24..74).map(|seq| usize::from(deliver(&mut r, 2000, seq).0)).sum();
        assert_eq!(acks, 1, "the 46th segment completes the first burst");
        assert!(r.end_skb());
        assert_eq!(r.make_ack().cum, 74);
        // A lone segment is not ACKed at its burst's end (delayed ACK); the next, a little
        // later, makes two since the last ACK and is.
        deliver(&mut r, 3000, 74);
        assert!(!r.end_skb());
        assert_eq!(deliver(&mut r, 3100, 75), (false, false));
        assert!(r.end_skb());
        assert_eq!(r.make_ack().cum, 76);
        // Segment 78 is lost: 76, 77, 79 and 80 arrive together and get one ACK, with the SACK.
        for seq in [76, 77, 79, 80] {
            assert_eq!(deliver(&mut r, 4000, seq), (false, false));
        }
        assert!(r.end_skb());
        let a = r.make_ack();
        assert_eq!((a.cum, &a.sacks[..a.nsacks as usize]), (78, &[(79, 81)][..]));
        // A lone out-of-order segment, and the retransmission that fills the hole: each ACKed
        // at the end of its burst, however small.
        deliver(&mut r, 5000, 82);
        assert!(r.end_skb());
        r.make_ack();
        deliver(&mut r, 6000, 78);
        assert!(r.end_skb());
        assert_eq!(r.make_ack().cum, 81);
        // Without GRO: every second segment, as before.
        let mut plain = Receiver::new(0, 2, 40_000);
        let acks = (0..24).filter(|&seq| plain.on_data(1000, seq, &mut ev).ack_now && plain.make_ack().cum > 0).count();
        assert_eq!(acks, 12);
    }

    /// A controller with a fixed window that records what it is told.
    struct Probe {
        cwnd: u32,
        /// ACKs on which the control asks for the app-limited mark (the first ones).
        mark_acks: u32,
        mark_now: bool,
        samples: std::sync::Arc<std::sync::Mutex<Vec<AckSample>>>,
        events: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
    }

    impl Controller for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }
        fn on_ack(&mut self, s: &AckSample) {
            self.samples.lock().unwrap().push(*s);
            self.mark_now = self.mark_acks > 0;
            self.mark_acks = self.mark_acks.saturating_sub(1);
        }
        fn marks_app_limited(&self) -> bool {
            self.mark_now
        }
        fn on_congestion_event(&mut self, _: u64, _: u32) {
            self.events.lock().unwrap().push("congestion");
        }
        fn on_recovery_exit(&mut self, _: u64) {
            self.events.lock().unwrap().push("exit");
        }
        fn on_rto(&mut self, _: u64) {
            self.events.lock().unwrap().push("rto");
        }
        fn cwnd(&self) -> u32 {
            self.cwnd
        }
        fn pacing_rate(&self) -> Option<f64> {
            None
        }
    }

    type Log<T> = std::sync::Arc<std::sync::Mutex<Vec<T>>>;

    fn sender(cwnd: u32) -> (Sender, Log<AckSample>, Log<&'static str>) {
        marking_sender(cwnd, 0)
    }

    /// A sender whose control asks for the app-limited mark on its first `mark_acks` ACKs.
    fn marking_sender(cwnd: u32, mark_acks: u32) -> (Sender, Log<AckSample>, Log<&'static str>) {
        let samples = Log::default();
        let events = Log::default();
        let cc = Probe { cwnd, mark_acks, mark_now: false, samples: samples.clone(), events: events.clone() };
        (Sender::new(0, Box::new(cc)), samples, events)
    }

    fn seqs(out: &[Packet]) -> Vec<u64> {
        out.iter()
            .map(|p| match p.body {
                Body::Data { seq, .. } => seq,
                Body::Ack(_) => panic!("sender emitted an ACK"),
            })
            .collect()
    }

    fn ack(cum: u64, sacks: &[(u64, u64)]) -> AckInfo {
        let mut a = AckInfo { cum, ..AckInfo::default() };
        for (i, b) in sacks.iter().enumerate() {
            a.sacks[i] = *b;
        }
        a.nsacks = sacks.len() as u8;
        a
    }

    #[test]
    fn rate_sample_is_delivered_over_the_longer_of_send_and_ack_intervals() {
        let (mut s, samples, _) = sender(10);
        let (mut ev, mut out) = (EventQueue::default(), Vec::new());
        s.start(0, &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(seqs(&out), (0..10).collect::<Vec<_>>(), "cwnd 10 sends 10 segments");
        out.clear();
        // Everything sent at t=0 is ACKed in two halves, at 50 and 100 ms.
        s.on_ack(50_000, &ack(5, &[]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(seqs(&out), (10..15).collect::<Vec<_>>(), "the ACK releases 5 new segments");
        s.on_ack(100_000, &ack(10, &[]), &mut Io { ev: &mut ev, out: &mut out });
        let v = samples.lock().unwrap();
        assert_eq!((v[0].delivered, v[0].interval_us, v[0].acked_sacked), (5, 50_000, 5));
        assert_eq!(v[0].rtt_us, Some(50_000));
        // Second ACK: the newest packet sampled was sent at 0 with delivered = 0 then.
        assert_eq!((v[1].delivered, v[1].interval_us), (10, 100_000));
        assert_eq!(v[1].delivered_total, 10);
        assert_eq!((v[1].prior_in_flight, v[1].in_flight), (10, 5));
    }

    #[test]
    fn a_control_that_marks_app_limited_makes_the_next_round_app_limited() {
        // As BBR in PROBE_RTT: the mark taken on an ACK (delivered + in flight) flags what is
        // sent from then on, until that much is delivered; a bulk sender never marks itself.
        for (mark_acks, expect) in [(0, [false, false, false]), (1, [false, true, false])] {
            let (mut s, samples, _) = marking_sender(10, mark_acks);
            let (mut ev, mut out) = (EventQueue::default(), Vec::new());
            s.start(0, &mut Io { ev: &mut ev, out: &mut out });
            // ACK 1 (marks: delivered 5 + in flight 5 = 10) releases 10..15, flagged.
            s.on_ack(50_000, &ack(5, &[]), &mut Io { ev: &mut ev, out: &mut out });
            s.on_ack(100_000, &ack(10, &[]), &mut Io { ev: &mut ev, out: &mut out });
            // Delivering 10..15 passes the mark (delivered 15 > 10): cleared, and their sample
            // is app-limited; 15..25, sent after, are not.
            s.on_ack(150_000, &ack(15, &[]), &mut Io { ev: &mut ev, out: &mut out });
            s.on_ack(200_000, &ack(25, &[]), &mut Io { ev: &mut ev, out: &mut out });
            let v = samples.lock().unwrap();
            let got = [v[0].app_limited, v[2].app_limited, v[3].app_limited];
            assert_eq!(got, expect, "mark on {mark_acks} ACK(s)");
        }
    }

    #[test]
    fn rack_marks_the_hole_lost_and_retransmits_it_once() {
        let (mut s, _, events) = sender(10);
        let (mut ev, mut out) = (EventQueue::default(), Vec::new());
        s.start(0, &mut Io { ev: &mut ev, out: &mut out });
        out.clear();
        // Segment 0 was lost; 1..10 arrive and are SACKed at 40 ms.
        s.on_ack(40_000, &ack(0, &[(1, 10)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert_eq!(s.stats.marked_lost, 1);
        // In flight: 10 sent - 9 SACKed - 1 lost, so cwnd 10 lets 9 more go: the
        // retransmission first, then new data.
        assert_eq!(seqs(&out)[0], 0);
        assert_eq!(s.stats.retrans, 1);
        assert_eq!(*events.lock().unwrap(), vec!["congestion"]);
        out.clear();
        s.on_ack(80_000, &ack(10, &[]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.ca_state(), CaState::Open);
        assert_eq!(*events.lock().unwrap(), vec!["congestion", "exit"]);
        assert_eq!(s.stats.retrans, 1, "nothing else was retransmitted");
    }

    #[test]
    fn a_loss_still_outstanding_when_recovery_ends_starts_the_next_recovery_at_once() {
        // Linux tcp_fastretrans_alert: on the ACK that ends a recovery, a segment still marked
        // lost (tcp_time_to_recover: lost_out != 0) enters recovery again, with no ACK in the
        // open state between (BBR keeps its recovery window; Reno and CUBIC reduce again).
        let (mut s, samples, events) = sender(10);
        let (mut ev, mut out) = (EventQueue::default(), Vec::new());
        s.start(0, &mut Io { ev: &mut ev, out: &mut out });
        out.clear();
        // Segment 0 lost: recovery until 10 (high_seq) is ACKed; 0 goes again, then 10..19.
        s.on_ack(40_000, &ack(0, &[(1, 10)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(seqs(&out), vec![0, 10, 11, 12, 13, 14, 15, 16, 17, 18]);
        out.clear();
        // 11..19 arrive, 10 (new data sent during the recovery) and the retransmission of 0
        // do not: both marked lost within the recovery, and sent again (0, then 10).
        s.on_ack(60_000, &ack(0, &[(11, 19)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.stats.marked_lost, 3);
        assert_eq!(seqs(&out)[..2], [0, 10]);
        assert_eq!(*events.lock().unwrap(), vec!["congestion"]);
        // The second retransmission of 0 arrives: the recovery is over, nothing new is lost,
        // but 10 still is (its retransmission is on the way).
        s.on_ack(80_000, &ack(10, &[(11, 19)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.stats.marked_lost, 3);
        assert_eq!(*events.lock().unwrap(), vec!["congestion", "exit", "congestion"]);
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert_eq!(samples.lock().unwrap().last().unwrap().ca_state, CaState::Recovery);
    }

    #[test]
    fn the_send_buffer_charges_an_skb_head_per_skb_so_sent_data_takes_more_than_unsent() {
        // Linux charges sk_wmem_queued an skb's head per skb: unsent data in the application's
        // 45-segment skbs, sent data in the skbs each transmission cuts off (tso_fragment), cut
        // again at SACK block edges (tcp_fragment) and merged when SACKed (tcp_shift_skb_data).
        let heads = |s: &Sender| s.segs.iter().filter(|g| g.flags & SKB_HEAD != 0).count() as u64;
        let (mut s, _, _) = sender(10);
        let (mut ev, mut out) = (EventQueue::default(), Vec::new());
        s.start(0, &mut Io { ev: &mut ev, out: &mut out });
        // Unpaced and no RTT yet: the window leaves in skbs of 2 segments (tcp_min_tso_segs).
        assert_eq!((s.sent_skbs, heads(&s)), (5, 5));
        let unsent = s.written - s.snd_nxt;
        assert_eq!(unsent + 10, sndbuf_segs(SNDBUF_BYTES), "the application filled the buffer");
        assert_eq!(s.wmem_queued(), 10 * 1448 + 5 * SKB_HEAD_TRUESIZE + unsent_bytes(unsent));
        assert!(s.wmem_queued() > unsent_bytes(unsent + 10), "sent, the same data takes more");
        // Segment 1 SACKed, 0 not: the first skb is cut in two; the ACK lets one new segment
        // out, in an skb of its own.
        s.on_ack(40_000, &ack(0, &[(1, 2)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.snd_nxt, 11);
        assert_eq!((s.sent_skbs, heads(&s)), (7, 7));
        // 2..11 SACKed as well: they merge into the skb that holds 1.
        s.on_ack(41_000, &ack(0, &[(1, 11)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.segs.iter().take(11).filter(|g| g.flags & SKB_HEAD != 0).count(), 2);
        assert_eq!(s.sent_skbs, heads(&s));
        // Everything ACKed: no sent skb is left.
        let nxt = s.snd_nxt;
        s.on_ack(80_000, &ack(nxt, &[]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.sent_skbs, heads(&s));
        assert_eq!(s.wmem_queued(), (s.snd_nxt - s.snd_una) * 1448 + s.sent_skbs * SKB_HEAD_TRUESIZE + unsent_bytes(s.written - s.snd_nxt));
    }

    #[test]
    fn rack_waits_a_reordering_window_and_learns_reordering() {
        let (mut s, _, events) = sender(10);
        let (mut ev, mut out) = (EventQueue::default(), Vec::new());
        s.start(0, &mut Io { ev: &mut ev, out: &mut out });
        out.clear();
        // Segment 1 arrives before segment 0: one SACKed segment is not enough to call 0
        // lost before min_rtt/4 = 10 ms past its RTT; a timer is armed instead.
        s.on_ack(40_000, &ack(0, &[(1, 2)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.stats.marked_lost, 0);
        assert_eq!(s.rack_deadline, Some(50_000));
        // Segment 0 shows up late: reordering, not loss.
        s.on_ack(45_000, &ack(2, &[]), &mut Io { ev: &mut ev, out: &mut out });
        assert!(s.rack.reord_seen);
        s.on_rack_timer(50_000, &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!((s.stats.marked_lost, s.stats.retrans), (0, 0));
        assert!(events.lock().unwrap().is_empty(), "no recovery for a reordered segment");
    }

    #[test]
    fn rto_marks_everything_lost_and_backs_off() {
        let (mut s, _, events) = sender(4);
        let (mut ev, mut out) = (EventQueue::default(), Vec::new());
        s.start(0, &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(out.len(), 4);
        out.clear();
        // Initial RTO: 1 s (RFC 6298).
        let (t, e) = ev.pop().unwrap();
        assert_eq!((t, e), (INIT_RTO_US, Ev::Rto(0)));
        s.on_rto_timer(t, &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(*events.lock().unwrap(), vec!["rto"]);
        assert_eq!(s.ca_state(), CaState::Loss);
        assert_eq!(s.stats.marked_lost, 4);
        assert_eq!(seqs(&out), vec![0, 1, 2, 3], "all four retransmitted, in order");
        // The next timeout is twice as far out.
        let (t2, _) = ev.pop().unwrap();
        assert_eq!(t2, t + 2 * INIT_RTO_US);
    }

    #[test]
    fn prr_spreads_the_reduction_over_the_recovery_round() {
        let mut p = Prr { prior_cwnd: 20, ssthresh: 10, delivered: 0, out: 0, cwnd: 10 };
        // 19 in flight after the loss was marked: far above ssthresh.
        p.on_ack(1, 19, false, 1);
        assert_eq!(p.cwnd, 20, "the fast retransmit goes out at once");
        p.out += 1;
        // Each further delivery releases ssthresh/prior_cwnd = half a packet.
        let mut sent = 0;
        let mut in_flight = 19;
        for _ in 0..8 {
            in_flight -= 1;
            p.on_ack(1, in_flight, false, 0);
            let can = p.cwnd.saturating_sub(in_flight);
            p.out += can;
            in_flight += can;
            sent += can;
        }
        assert_eq!(sent, 4, "8 deliveries release 4 packets");
        // Below ssthresh the window grows back toward it.
        p.on_ack(2, 6, true, 0);
        assert!(p.cwnd > 6 && p.cwnd <= 10, "cwnd {}", p.cwnd);
    }

    #[test]
    fn a_retransmission_sent_in_the_same_microsecond_after_new_data_is_not_declared_lost() {
        let (mut s, _, _) = sender(10);
        let (mut ev, mut out) = (EventQueue::default(), Vec::new());
        s.start(0, &mut Io { ev: &mut ev, out: &mut out });
        out.clear();
        // Two ACKs in the same microsecond: the first (one SACKed segment) frees room for new
        // segment 10; the second (three SACKed) makes RACK declare 0 lost, and its
        // retransmission leaves after segment 10 although its sequence number is lower.
        s.on_ack(40_000, &ack(0, &[(1, 2)]), &mut Io { ev: &mut ev, out: &mut out });
        s.on_ack(40_000, &ack(0, &[(1, 4)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(seqs(&out)[..2], [10, 0]);
        out.clear();
        // Segment 10 is SACKed 60 ms later while the retransmission, sent after it, is still
        // on its way (FIFO: it cannot have been lost before 10 arrived): not lost.
        s.on_ack(100_000, &ack(0, &[(1, 11)]), &mut Io { ev: &mut ev, out: &mut out });
        assert_eq!(s.stats.marked_lost, 1, "the retransmission was wrongly declared lost");
        assert_eq!(s.stats.retrans, 1);
    }
}
