//! One link stage in emulation time: queue -> delivery opportunities -> one-way delay.
//!
//! The model is mahimahi's link plus a delay line, run in *virtual* time: every packet carries
//! the microsecond it arrived, and `advance(now)` replays every delivery opportunity in
//! (last processed, now] in order. An opportunity at time o carries `OPPORTUNITY_BYTES`; it can
//! only serve packets that arrived at or before o; a packet larger than what is left needs
//! further opportunities, and bytes left over after a packet completes serve the next one in
//! the same opportunity (as mahimahi's `rationalize`). So the schedule decisions are exact
//! however late the emulator thread wakes: wall-clock lateness only affects when a packet is
//! finally written, which the engine measures as release error.
//!
//! A packet that completes at opportunity o leaves the stage at o + delay(o), but never before
//! the packet ahead of it (FIFO: a falling delay does not let packets overtake). Random loss
//! and, for the ICMP lanes, outage drops are decided on arrival, so a lost packet never uses
//! capacity and the log stays consistent (every `+` is followed by exactly one `-` or `d`).
//! A stage without a capacity schedule is a pure delay line (terrestrial delay, ICMP lanes).
//!
//! The queue's discipline ([`Qdisc`], the same rules as the simulator's hops): drop-tail drops
//! an arriving packet that does not fit the limit; drop-front drops packets from the head (not
//! the one being transmitted) until it fits, at its arrival time; CoDel
//! (`leocc_trace::qdisc::CoDel`, the simulator's state machine) drops at the opportunity where
//! a packet would start transmission, from the time it waited, under the drop-tail limit.
//! Discipline drops are queue drops (`dropped_queue`, a `d` line in the log at drop time).
//!
//! A stage asked to ([`Stage::count_flows`]) also counts its departures per flow
//! (`crate::flows`), at the same point as `departed_pkts`: the per-flow totals add up to it.

use crate::eventlog::EventLog;
use crate::flows::FlowTable;
use leocc_trace::qdisc::{CoDel, CoDelParams, CoDelQueue, Qdisc};
use leocc_trace::{LinkModel, OPPORTUNITY_BYTES};
use std::collections::VecDeque;

/// Queue limit of a stage's queue (what its discipline enforces). `None` fields mean unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueLimit {
    /// Maximum packets waiting (including the one in transmission).
    pub packets: Option<usize>,
    /// Maximum bytes waiting (including the one in transmission).
    pub bytes: Option<usize>,
}

/// Where a stage's one-way delay comes from.
#[derive(Clone)]
pub enum DelaySource {
    /// The trace's time-varying delay of this link.
    Model(LinkModel),
    /// A constant delay in µs.
    Constant(u64),
    /// The trace's delay less a fixed part, µs, that this lane's packets do not cross (the
    /// stretch beyond the PoP, for the PoP responder's lanes).
    ModelLess(LinkModel, u64),
}

/// How a stage is built.
#[derive(Clone)]
pub struct StageConfig {
    /// Capacity schedule; `None` = unlimited (a pure delay line).
    pub capacity: Option<LinkModel>,
    /// One-way delay.
    pub delay: DelaySource,
    /// Trace whose `loss_prob` and `in_outage` apply to arrivals, if any.
    pub loss_model: Option<LinkModel>,
    /// Extra random loss probability on top of the trace's (the `--loss` option).
    pub extra_loss: f64,
    /// Drop arrivals while the trace is in an outage (the ICMP lanes: Starlink loses pings
    /// during a reconfiguration; data instead waits in the queue for capacity to return).
    pub drop_in_outage: bool,
    /// Queue limit.
    pub queue: QueueLimit,
    /// Queue discipline (drop-tail unless asked otherwise).
    pub qdisc: Qdisc,
    /// Seed of the loss generator.
    pub seed: u64,
}

/// What happened to a packet offered to a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted into the queue (or the delay line).
    Accepted,
    /// Dropped: the queue was full (and, under drop-front, could not make room).
    QueueFull,
    /// Dropped: random loss.
    Lost,
    /// Dropped: the link was in an outage.
    Outage,
}

/// Counters and samples of one stage, for the exit summary.
#[derive(Debug, Clone, Default)]
pub struct StageStats {
    /// Packets and bytes offered to the stage.
    pub arrived_pkts: u64,
    /// Bytes offered to the stage.
    pub arrived_bytes: u64,
    /// Packets that left the queue (capacity used).
    pub departed_pkts: u64,
    /// Bytes that left the queue.
    pub departed_bytes: u64,
    /// Emulation time of the first and the last departure, µs (None before the first): the
    /// traffic period, over which a summary rates what was carried, setup time excluded.
    pub departures_us: Option<(u64, u64)>,
    /// `opportunities` at the first and the last departure: the capacity offered during the
    /// traffic period.
    pub departure_opportunities: Option<(u64, u64)>,
    /// Opportunities that passed while the stage ran (offered capacity = this x 1500 B).
    pub opportunities: u64,
    /// Opportunities that passed while a packet was waiting (capacity the traffic could use).
    pub backlogged_opportunities: u64,
    /// Drops by the queue: full on arrival, or dropped by the discipline (drop-front, CoDel).
    pub dropped_queue: u64,
    /// Drops by random loss.
    pub dropped_loss: u64,
    /// Drops because of an outage.
    pub dropped_outage: u64,
    /// Queueing delay (departure - arrival) of departed packets, µs: every packet until
    /// `MAX_DELAY_SAMPLES`, then a uniform systematic subsample (every 2^k-th packet).
    pub queue_delay_us: Vec<u32>,
    /// Log2 of the current sampling stride of `queue_delay_us`.
    delay_stride_log2: u32,
    /// Departures per flow, when the stage counts them ([`Stage::count_flows`]).
    pub flows: Option<FlowTable>,
}

/// What a stage carried and was offered, as rates over its traffic period (first to last
/// departure), so that neither the setup before the application started nor an idle tail
/// dilutes them: what the summaries of `leocc emu` and `leocc chain` print.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TrafficRates {
    /// Length of the traffic period, s (0 when fewer than two packets departed).
    pub traffic_s: f64,
    /// Bytes departed ÷ the period, Mbit/s (0 without a period). The first packet's own
    /// transmission counts too: one packet is not a rate.
    pub delivered_mbps: f64,
    /// Capacity the link offered during the period, Mbit/s; without a period, over the whole
    /// run (`run_s`).
    pub offered_mbps: f64,
}

impl StageStats {
    /// The rates over the traffic period; `run_s`, how long the stage ran, only rates the offered
    /// capacity when nothing (or one packet) passed.
    pub fn traffic_rates(&self, run_s: f64) -> TrafficRates {
        let bits = |bytes: u64, s: f64| bytes as f64 * 8.0 / s / 1e6;
        let offered_bytes = |opps: u64| opps * u64::from(leocc_trace::OPPORTUNITY_BYTES);
        match (self.departures_us, self.departure_opportunities) {
            (Some((a, b)), Some((oa, ob))) if b > a => {
                let s = (b - a) as f64 / 1e6;
                TrafficRates { traffic_s: s, delivered_mbps: bits(self.departed_bytes, s), offered_mbps: bits(offered_bytes(ob - oa), s) }
            }
            _ => TrafficRates { traffic_s: 0.0, delivered_mbps: 0.0, offered_mbps: bits(offered_bytes(self.opportunities), run_s.max(1e-6)) },
        }
    }
}

/// Queueing-delay samples kept for the percentiles (16 MB), so a long run's memory stays bounded.
const MAX_DELAY_SAMPLES: usize = 4 << 20;

impl StageStats {
    fn record_delay(&mut self, us: u32) {
        let stride = 1u64 << self.delay_stride_log2;
        if !self.departed_pkts.is_multiple_of(stride) {
            return;
        }
        if self.queue_delay_us.len() >= MAX_DELAY_SAMPLES {
            let kept: Vec<u32> = self.queue_delay_us.iter().step_by(2).copied().collect();
            self.queue_delay_us = kept;
            self.delay_stride_log2 += 1;
            if !self.departed_pkts.is_multiple_of(stride * 2) {
                return;
            }
        }
        self.queue_delay_us.push(us);
    }
}

struct Queued<P> {
    arrival_us: u64,
    pkt: P,
}

/// A deterministic generator for loss decisions (SplitMix64, Steele et al. 2014).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One link stage; `P` is the packet (anything with a length).
pub struct Stage<P> {
    cfg: StageConfig,
    /// CoDel's state when the discipline is CoDel.
    codel: Option<CoDel>,
    queue: VecDeque<Queued<P>>,
    queued_bytes: usize,
    /// Bytes of the head packet still to transmit (0 = head not started).
    head_left: usize,
    /// Opportunities before this time have been processed.
    processed_until: u64,
    delay_line: VecDeque<(u64, P)>,
    last_release: u64,
    rng: Rng,
    scratch: Vec<u64>,
    log: Option<EventLog>,
    /// Counters, read at the end.
    pub stats: StageStats,
}

impl<P: AsRef<[u8]>> Stage<P> {
    /// A stage starting at emulation time 0.
    pub fn new(cfg: StageConfig) -> Stage<P> {
        let rng = Rng::new(cfg.seed);
        Stage {
            codel: (cfg.qdisc == Qdisc::CoDel && cfg.capacity.is_some()).then(|| CoDel::new(CoDelParams::default())),
            cfg,
            queue: VecDeque::new(),
            queued_bytes: 0,
            head_left: 0,
            processed_until: 0,
            delay_line: VecDeque::new(),
            last_release: 0,
            rng,
            scratch: Vec::new(),
            log: None,
            stats: StageStats::default(),
        }
    }

    /// Attaches a mahimahi event log.
    pub fn set_log(&mut self, log: EventLog) {
        self.log = Some(log);
    }

    /// Counts departures per flow from now on (the bottleneck's stage; the others need not pay
    /// for a lookup per packet).
    pub fn count_flows(&mut self) {
        self.stats.flows.get_or_insert_with(FlowTable::default);
    }

    /// Takes the log back (to flush it).
    pub fn take_log(&mut self) -> Option<EventLog> {
        self.log.take()
    }

    fn delay_at(&self, t_us: u64) -> u64 {
        match &self.cfg.delay {
            DelaySource::Model(m) => m.delay_us(t_us),
            DelaySource::Constant(d) => *d,
            DelaySource::ModelLess(m, less) => m.delay_us(t_us).saturating_sub(*less),
        }
    }

    fn lost_at_random(&mut self, t_us: u64) -> bool {
        let trace_p = self.cfg.loss_model.as_ref().map_or(0.0, |m| m.loss_prob(t_us));
        let p = 1.0 - (1.0 - trace_p) * (1.0 - self.cfg.extra_loss);
        p > 0.0 && self.rng.unit() < p
    }

    fn over_limit(&self, extra_bytes: usize) -> bool {
        let q = self.cfg.queue;
        q.packets.is_some_and(|n| self.queue.len() + 1 > n) || q.bytes.is_some_and(|b| self.queued_bytes + extra_bytes > b)
    }

    /// Offers a packet that arrived at `t_us`. Arrival times must not go backwards; a time
    /// before what was already processed is treated as "now".
    pub fn push(&mut self, t_us: u64, pkt: P) -> Verdict {
        let len = pkt.as_ref().len();
        let t = t_us.max(self.processed_until.saturating_sub(1));
        self.advance(t);
        self.stats.arrived_pkts += 1;
        self.stats.arrived_bytes += len as u64;
        if let Some(l) = self.log.as_mut() {
            l.arrival(t, len);
        }
        let verdict = if self.cfg.drop_in_outage && self.cfg.loss_model.as_ref().is_some_and(|m| m.in_outage(t)) {
            self.stats.dropped_outage += 1;
            Verdict::Outage
        } else if self.lost_at_random(t) {
            self.stats.dropped_loss += 1;
            Verdict::Lost
        } else if self.cfg.capacity.is_none() {
            let release = (t + self.delay_at(t)).max(self.last_release);
            self.emit(release, pkt);
            return Verdict::Accepted;
        } else if self.over_limit(len) && !(self.cfg.qdisc == Qdisc::DropFront && self.make_room_at_front(t, len)) {
            self.stats.dropped_queue += 1;
            Verdict::QueueFull
        } else {
            self.queued_bytes += len;
            self.queue.push_back(Queued { arrival_us: t, pkt });
            return Verdict::Accepted;
        };
        if let Some(l) = self.log.as_mut() {
            l.drop_packet(t, len);
        }
        verdict
    }

    /// Drop-front: drops packets from the head (not the one being transmitted) at `t` until
    /// `len` more bytes fit, and says whether they do. When they could not fit even into an
    /// otherwise empty queue, nothing is dropped and the answer is false.
    fn make_room_at_front(&mut self, t: u64, len: usize) -> bool {
        let keep = usize::from(self.head_left > 0);
        let kept_bytes = if keep == 1 { self.queue.front().map_or(0, |q| q.pkt.as_ref().len()) } else { 0 };
        let q = self.cfg.queue;
        if q.packets.is_some_and(|n| keep + 1 > n) || q.bytes.is_some_and(|b| kept_bytes + len > b) {
            return false;
        }
        while self.over_limit(len) {
            let old = self.queue.remove(keep).expect("a full queue holds a packet after the one in service");
            let old_len = old.pkt.as_ref().len();
            self.queued_bytes -= old_len;
            self.stats.dropped_queue += 1;
            if let Some(l) = self.log.as_mut() {
                l.drop_packet(t, old_len);
            }
        }
        true
    }

    fn emit(&mut self, release: u64, pkt: P) {
        self.last_release = release;
        self.delay_line.push_back((release, pkt));
    }

    /// Replays every delivery opportunity up to and including `now_us`.
    pub fn advance(&mut self, now_us: u64) {
        let Some(cap) = self.cfg.capacity.clone() else {
            self.processed_until = self.processed_until.max(now_us + 1);
            return;
        };
        if now_us < self.processed_until {
            return;
        }
        let mut opps = std::mem::take(&mut self.scratch);
        opps.clear();
        opps.extend(cap.opportunities(self.processed_until, now_us + 1 - self.processed_until));
        self.processed_until = now_us + 1;
        for &o in &opps {
            self.use_opportunity(o);
        }
        self.scratch = opps;
    }

    fn use_opportunity(&mut self, o: u64) {
        self.stats.opportunities += 1;
        if let Some(l) = self.log.as_mut() {
            l.opportunity(o);
        }
        let mut budget = OPPORTUNITY_BYTES as usize;
        if self.queue.front().is_some_and(|q| q.arrival_us <= o) {
            self.stats.backlogged_opportunities += 1;
        }
        while budget > 0 {
            if let (Some(codel), 0) = (self.codel.as_mut(), self.head_left) {
                // The head is about to start transmission: CoDel drops or lets it go.
                let mut fifo = StageFifo { queue: &mut self.queue, queued_bytes: &mut self.queued_bytes, now: o, stats: &mut self.stats, log: &mut self.log };
                let Some(q) = codel.dequeue(o, &mut fifo) else { break };
                self.queued_bytes += q.pkt.as_ref().len();
                self.queue.push_front(q);
            }
            let Some(head) = self.queue.front() else { break };
            if head.arrival_us > o {
                break;
            }
            let len = head.pkt.as_ref().len();
            if self.head_left == 0 {
                self.head_left = len.max(1);
            }
            let used = budget.min(self.head_left);
            budget -= used;
            self.head_left -= used;
            if self.head_left > 0 {
                break;
            }
            let q = self.queue.pop_front().expect("head exists");
            self.queued_bytes -= len;
            self.depart(o, q);
        }
    }

    /// The discipline of this stage.
    pub fn qdisc(&self) -> Qdisc {
        self.cfg.qdisc
    }

    fn depart(&mut self, o: u64, q: Queued<P>) {
        let len = q.pkt.as_ref().len();
        self.stats.record_delay((o - q.arrival_us).min(u64::from(u32::MAX)) as u32);
        self.stats.departed_pkts += 1;
        self.stats.departed_bytes += len as u64;
        let first = self.stats.departures_us.map_or(o, |(f, _)| f);
        self.stats.departures_us = Some((first, o));
        let now = self.stats.opportunities;
        let first = self.stats.departure_opportunities.map_or(now, |(f, _)| f);
        self.stats.departure_opportunities = Some((first, now));
        if let Some(f) = self.stats.flows.as_mut() {
            f.record_packet(o, q.pkt.as_ref());
        }
        if let Some(l) = self.log.as_mut() {
            l.departure(o, len, q.arrival_us);
        }
        let release = (o + self.delay_at(o)).max(self.last_release);
        self.emit(release, q.pkt);
    }

    /// When this stage next needs attention: the head of the delay line, or the next
    /// opportunity while packets wait.
    pub fn next_event(&self) -> Option<u64> {
        let release = self.delay_line.front().map(|d| d.0);
        let opp = match (&self.cfg.capacity, self.queue.is_empty()) {
            (Some(cap), false) => cap.next_opportunity(self.processed_until),
            _ => None,
        };
        match (release, opp) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Release time of the next packet to leave, if any.
    pub fn peek_release(&self) -> Option<u64> {
        self.delay_line.front().map(|d| d.0)
    }

    /// Removes the next packet if it is due by `now_us`; returns its release time.
    pub fn pop_due(&mut self, now_us: u64) -> Option<(u64, P)> {
        if self.delay_line.front().is_some_and(|d| d.0 <= now_us) {
            self.delay_line.pop_front()
        } else {
            None
        }
    }

    /// Packets waiting in the queue.
    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    /// Packets in flight in the delay line.
    pub fn in_flight(&self) -> usize {
        self.delay_line.len()
    }
}

/// A stage's queue as CoDel dequeues from it at opportunity `now`: only packets that arrived
/// by then may leave; drops are counted and logged.
struct StageFifo<'a, P> {
    queue: &'a mut VecDeque<Queued<P>>,
    queued_bytes: &'a mut usize,
    now: u64,
    stats: &'a mut StageStats,
    log: &'a mut Option<EventLog>,
}

impl<P: AsRef<[u8]>> CoDelQueue for StageFifo<'_, P> {
    type Item = Queued<P>;
    fn pop(&mut self) -> Option<(Queued<P>, u64)> {
        if self.queue.front()?.arrival_us > self.now {
            return None;
        }
        let q = self.queue.pop_front()?;
        *self.queued_bytes -= q.pkt.as_ref().len();
        let t = q.arrival_us;
        Some((q, t))
    }
    fn backlog_bytes(&self) -> u64 {
        *self.queued_bytes as u64
    }
    fn discard(&mut self, q: Queued<P>) {
        self.stats.dropped_queue += 1;
        if let Some(l) = self.log.as_mut() {
            l.drop_packet(self.now, q.pkt.as_ref().len());
        }
    }
}

/// p-th percentile (0..=100) of `v` (sorted in place) at the rounded position
/// ([`leocc_base::metrics::quantile_rounded`]); `None` if empty.
pub fn percentile(v: &mut [u32], p: f64) -> Option<u32> {
    v.sort_unstable();
    leocc_base::metrics::quantile_rounded(v, p / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leocc_trace::{Capacity, DelaySeries, Loss, Span};

    /// A link with opportunities at `times` (µs, one period), constant delay and loss.
    fn link(times: Vec<u64>, period: u64, delay_us: u64, loss: f64, outages: &[Span]) -> LinkModel {
        let cap = Capacity::new(times, Some(period)).unwrap();
        LinkModel::new(&cap, DelaySeries::constant(delay_us), Loss::Constant(loss), outages, 1000)
    }

    fn data_stage(m: &LinkModel, queue: QueueLimit) -> Stage<Vec<u8>> {
        Stage::new(StageConfig {
            capacity: Some(m.clone()),
            delay: DelaySource::Model(m.clone()),
            loss_model: Some(m.clone()),
            extra_loss: 0.0,
            drop_in_outage: false,
            queue,
            qdisc: Qdisc::DropTail,
            seed: 7,
        })
    }

    fn drain(s: &mut Stage<Vec<u8>>, until: u64) -> Vec<(u64, usize)> {
        s.advance(until);
        let mut out = Vec::new();
        while let Some((t, p)) = s.pop_due(until) {
            out.push((t, p.len()));
        }
        out
    }

    #[test]
    fn full_packets_take_one_opportunity_each_and_wait_for_it() {
        // One opportunity per ms (12 Mbit/s), 5 ms delay.
        let m = link(vec![1000], 1000, 5000, 0.0, &[]);
        let mut s = data_stage(&m, QueueLimit::default());
        for _ in 0..3 {
            s.push(200, vec![0; 1500]);
        }
        let out = drain(&mut s, 100_000);
        assert_eq!(out, vec![(6000, 1500), (7000, 1500), (8000, 1500)]);
        assert_eq!(s.stats.queue_delay_us, vec![800, 1800, 2800]);
    }

    #[test]
    fn small_packets_share_an_opportunity_and_big_ones_span_several() {
        let m = link(vec![1000], 1000, 0, 0.0, &[]);
        let mut s = data_stage(&m, QueueLimit::default());
        for _ in 0..20 {
            s.push(0, vec![0; 75]); // 20 x 75 = 1500 B: all leave at the first opportunity
        }
        s.push(0, vec![0; 2000]); // needs the rest of nothing + two more opportunities
        let out = drain(&mut s, 10_000);
        assert!(out[..20].iter().all(|&(t, _)| t == 1000));
        assert_eq!(out[20], (3000, 2000));
    }

    #[test]
    fn a_packet_cannot_use_an_opportunity_before_it_arrived() {
        let m = link(vec![1000], 1000, 0, 0.0, &[]);
        let mut s = data_stage(&m, QueueLimit::default());
        s.advance(1500);
        s.push(1500, vec![0; 100]);
        assert_eq!(drain(&mut s, 5000), vec![(2000, 100)]);
    }

    #[test]
    fn schedule_loops_and_counts_offered_capacity() {
        // Two opportunities in a 10 ms period.
        let m = link(vec![2000, 4000], 10_000, 0, 0.0, &[]);
        let mut s = data_stage(&m, QueueLimit::default());
        s.advance(30_000 - 1);
        assert_eq!(s.stats.opportunities, 6);
        s.push(30_000, vec![0; 1500]);
        assert_eq!(drain(&mut s, 40_000), vec![(32_000, 1500)]);
    }

    /// 10 s of setup (the link idles), then 1 s of a saturating flow, then 9 s idle: the
    /// summary's rates are the link's 12 Mbit/s, not 12 / 20; with no traffic, offered is over
    /// the run and delivered is 0.
    #[test]
    fn traffic_rates_are_over_the_traffic_period_not_the_run() {
        let m = link(vec![1000], 1000, 0, 0.0, &[]); // 1500 B per ms: 12 Mbit/s
        let mut s = data_stage(&m, QueueLimit::default());
        s.advance(10_000_000 - 1);
        let idle = s.stats.traffic_rates(10.0);
        assert!(idle.traffic_s == 0.0 && idle.delivered_mbps == 0.0 && (idle.offered_mbps - 12.0).abs() < 0.01, "{idle:?}");
        for _ in 0..1001 {
            s.push(10_000_000, vec![0; 1500]);
        }
        drain(&mut s, 20_000_000);
        let r = s.stats.traffic_rates(20.0);
        assert!((r.traffic_s - 1.0).abs() < 1e-9, "{r:?}");
        // 1001 packets over the 1000 ms between the first and the last departure.
        assert!((r.delivered_mbps - 12.012).abs() < 1e-9, "{r:?}");
        assert!((r.offered_mbps - 12.0).abs() < 1e-9, "{r:?}");
        // The whole run's average would have said 0.6 Mbit/s.
        assert!((s.stats.departed_bytes as f64 * 8.0 / 20.0 / 1e6 - 0.6006).abs() < 1e-9);
    }

    #[test]
    fn delay_never_lets_a_packet_overtake() {
        // Delay 50 ms for the first 10 ms of the trace, then 10 ms.
        let cap = Capacity::new((1..=40).map(|i| i * 1000).collect(), Some(40_000)).unwrap();
        let delay = DelaySeries { interval_us: 10_000, values_us: vec![50_000, 10_000, 10_000, 10_000].into() };
        let m = LinkModel::new(&cap, delay, Loss::Constant(0.0), &[], 1000);
        let mut s = data_stage(&m, QueueLimit::default());
        s.push(8000, vec![0; 1500]); // leaves at 9 ms, release 59 ms
        s.push(8000, vec![0; 1500]); // leaves at 10 ms, release would be 20 ms: held to 59
        let out = drain(&mut s, 100_000);
        assert_eq!(out, vec![(59_000, 1500), (59_000, 1500)]);
    }

    #[test]
    fn delay_samples_stay_bounded_and_uniform() {
        let mut st = StageStats::default();
        for i in 0..(MAX_DELAY_SAMPLES as u64 * 3) {
            st.record_delay((i % 100) as u32);
            st.departed_pkts += 1;
        }
        assert!(st.queue_delay_us.len() <= MAX_DELAY_SAMPLES);
        assert!(st.queue_delay_us.len() >= MAX_DELAY_SAMPLES / 2);
        let mut v = st.queue_delay_us.clone();
        let median = percentile(&mut v, 50.0).unwrap();
        assert!((45..=55).contains(&median), "median {median} of a uniform 0..99 sequence");
    }

    #[test]
    fn droptail_limits_packets_and_bytes() {
        let m = link(vec![1000], 1000, 0, 0.0, &[]);
        let mut s = data_stage(&m, QueueLimit { packets: Some(2), bytes: None });
        let v: Vec<_> = (0..3).map(|_| s.push(0, vec![0; 100])).collect();
        assert_eq!(v, vec![Verdict::Accepted, Verdict::Accepted, Verdict::QueueFull]);
        let mut s = data_stage(&m, QueueLimit { packets: None, bytes: Some(1000) });
        assert_eq!(s.push(0, vec![0; 600]), Verdict::Accepted);
        assert_eq!(s.push(0, vec![0; 600]), Verdict::QueueFull);
        assert_eq!(s.push(0, vec![0; 400]), Verdict::Accepted);
        assert_eq!(s.stats.dropped_queue, 1);
    }

    #[test]
    fn drop_front_drops_the_head_and_keeps_the_newest() {
        let m = link(vec![1000], 1000, 0, 0.0, &[]);
        let front = |queue| Stage::new(StageConfig { qdisc: Qdisc::DropFront, ..data_stage(&m, queue).cfg });
        let mut s: Stage<Vec<u8>> = front(QueueLimit { packets: Some(2), bytes: None });
        let v: Vec<_> = [100, 200, 300].into_iter().map(|n| s.push(0, vec![0; n])).collect();
        assert_eq!(v, vec![Verdict::Accepted; 3]);
        assert_eq!(s.stats.dropped_queue, 1);
        assert_eq!(drain(&mut s, 10_000), vec![(1000, 200), (1000, 300)]);
        // In bytes: as many from the front as the newcomer needs.
        let mut s: Stage<Vec<u8>> = front(QueueLimit { packets: None, bytes: Some(1000) });
        for n in [400, 300, 300] {
            assert_eq!(s.push(0, vec![0; n]), Verdict::Accepted);
        }
        assert_eq!(s.push(0, vec![0; 600]), Verdict::Accepted);
        assert_eq!(s.stats.dropped_queue, 2);
        assert_eq!(drain(&mut s, 10_000), vec![(1000, 300), (1000, 600)]);
        // The packet in transmission stays: a 3000-byte packet spans two opportunities.
        let mut s: Stage<Vec<u8>> = front(QueueLimit { packets: Some(2), bytes: None });
        s.push(0, vec![0; 3000]);
        s.push(0, vec![0; 100]);
        s.advance(1000); // half of the big one is out
        assert_eq!(s.push(1500, vec![0; 200]), Verdict::Accepted);
        assert_eq!(drain(&mut s, 10_000), vec![(2000, 3000), (3000, 200)]);
        // What could not fit even into an empty queue drops nothing else.
        let mut s: Stage<Vec<u8>> = front(QueueLimit { packets: None, bytes: Some(1000) });
        s.push(0, vec![0; 500]);
        assert_eq!(s.push(0, vec![0; 1200]), Verdict::QueueFull);
        assert_eq!(drain(&mut s, 10_000), vec![(1000, 500)]);
    }

    #[test]
    fn codel_drops_at_dequeue_after_an_interval_above_target() {
        // 1 opportunity per ms, a packet every 0.5 ms: the head dequeued at 1000 j waited
        // 500 j + 500 µs, 5 ms (the target) from j = 9; the first drop is one interval later.
        let m = link(vec![1000], 1000, 0, 0.0, &[]);
        let mut s: Stage<Vec<u8>> = Stage::new(StageConfig { qdisc: Qdisc::CoDel, ..data_stage(&m, QueueLimit::default()).cfg });
        let mut t = 0;
        while t < 108_999 {
            s.push(t, vec![0; 1500]);
            t += 500;
        }
        s.advance(108_999);
        assert_eq!(s.stats.dropped_queue, 0);
        s.advance(109_000);
        assert_eq!(s.stats.dropped_queue, 1);
        // The limit stays a drop-tail limit under CoDel.
        let mut s: Stage<Vec<u8>> = Stage::new(StageConfig { qdisc: Qdisc::CoDel, ..data_stage(&m, QueueLimit { packets: Some(1), bytes: None }).cfg });
        assert_eq!(s.push(0, vec![0; 100]), Verdict::Accepted);
        assert_eq!(s.push(0, vec![0; 100]), Verdict::QueueFull);
    }

    /// An IPv4/UDP packet of `len` bytes from source port `sport`.
    fn udp(sport: u16, len: usize) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&9u16.to_be_bytes());
        p.resize(len, 0);
        p
    }

    #[test]
    fn flow_counts_are_the_departures_and_skip_every_drop() {
        // 12 Mbit/s, 10 % random loss, a 20-packet queue overrun by bursts of 40.
        let m = link(vec![1000], 1000, 5000, 0.1, &[]);
        let mut s = data_stage(&m, QueueLimit { packets: Some(20), bytes: None });
        s.count_flows();
        let mut offered = std::collections::HashMap::new();
        for burst in 0..50u64 {
            for i in 0..40u64 {
                let flow = i % 3;
                let pkt = if i % 7 == 0 { vec![0x60; 1200] } else { udp(1000 + flow as u16, 1500 - 100 * flow as usize) };
                *offered.entry(crate::flows::flow_key(&pkt)).or_insert(0u64) += 1;
                s.push(burst * 50_000 + i, pkt);
            }
        }
        s.advance(10_000_000);
        let st = &s.stats;
        assert!(st.dropped_loss > 0 && st.dropped_queue > 0, "both kinds of drop happen: {} {}", st.dropped_loss, st.dropped_queue);
        assert_eq!(st.arrived_pkts, st.departed_pkts + st.dropped_loss + st.dropped_queue);
        let flows = st.flows.as_ref().unwrap().sorted();
        let (pkts, bytes) = flows.iter().fold((0, 0), |(p, b), (_, c)| (p + c.pkts, b + c.bytes));
        assert_eq!((pkts, bytes), (st.departed_pkts, st.departed_bytes), "every departure in exactly one flow");
        assert!(flows.iter().any(|(k, c)| *k == crate::flows::FlowKey::Unparsed && c.pkts > 0), "the IPv6 packets");
        for (k, c) in &flows {
            let binned: u64 = c.bins.iter().sum();
            assert_eq!(binned, c.bytes, "{k}: bins add up to the total");
            assert!(c.last_us <= 10_000_000 && c.first_us <= c.last_us);
        }
        // Drops happen before departure: every flow lost some of what it offered.
        assert_eq!(flows.len(), offered.len());
        for (k, c) in &flows {
            assert!(c.pkts < offered[k], "{k}: {} departed of {} offered", c.pkts, offered[k]);
        }
    }

    #[test]
    fn random_loss_matches_its_probability_and_is_seeded() {
        let m = link(vec![1], 1, 0, 0.1, &[]);
        let run = |seed| {
            let mut s: Stage<Vec<u8>> = Stage::new(StageConfig { seed, extra_loss: 0.1, ..data_stage(&m, QueueLimit::default()).cfg });
            (0..20_000).map(|i| s.push(i, vec![0; 10]) == Verdict::Lost).collect::<Vec<_>>()
        };
        let a = run(1);
        assert_eq!(a, run(1), "same seed, same losses");
        assert_ne!(a, run(2));
        let rate = a.iter().filter(|&&l| l).count() as f64 / a.len() as f64;
        // 1 - 0.9 * 0.9 = 0.19
        assert!((rate - 0.19).abs() < 0.01, "loss rate {rate}");
    }

    #[test]
    fn icmp_lane_has_no_queue_and_drops_in_outages() {
        let m = link((1..=1000).map(|i| i * 1000).collect(), 1_000_000, 20_000, 0.0, &[Span { start_us: 100_000, len_us: 50_000 }]);
        let mut s: Stage<Vec<u8>> = Stage::new(StageConfig {
            capacity: None,
            delay: DelaySource::Model(m.clone()),
            loss_model: Some(m.clone()),
            extra_loss: 0.0,
            drop_in_outage: true,
            queue: QueueLimit::default(),
            qdisc: Qdisc::CoDel,
            seed: 1,
        });
        assert_eq!(s.push(10_000, vec![0; 84]), Verdict::Accepted);
        assert_eq!(s.push(120_000, vec![0; 84]), Verdict::Outage);
        assert_eq!(s.push(160_000, vec![0; 84]), Verdict::Accepted);
        assert_eq!(drain(&mut s, 1_000_000), vec![(30_000, 84), (180_000, 84)]);
    }
}
