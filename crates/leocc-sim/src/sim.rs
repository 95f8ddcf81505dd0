//! The world: hops (queue + transmitter + delay line) on two routes, flows (sender, receiver,
//! statistics), the detector, and the event loop that ties them together.
//!
//! Topology (data downlink, the default): server —[terrestrial]— PoP —[satellite down]— client
//! for data, and client —[satellite up]— PoP —[terrestrial, delay only]— server for ACKs. With
//! `data_dir = Up` the roles swap. Each capacity hop is a FIFO served at the trace's
//! delivery opportunities (mahimahi: each opportunity carries up to 1500 bytes; a packet may
//! span opportunities, several small ones share one; an unused opportunity is lost), followed
//! by the trace's one-way delay at departure time, kept FIFO (a packet never overtakes one
//! that left earlier). Random loss (the trace's, plus `--loss` on the data direction) and
//! ground-truth outages drop packets as they leave the transmitter.
//!
//! The queue limit is enforced by the scenario's queue discipline ([`Qdisc`]): drop-tail drops
//! an arriving packet that does not fit; drop-front drops packets from the head (never the
//! one being transmitted) until it fits; CoDel (`leocc_trace::qdisc::CoDel`, shared with the
//! emulator) drops at dequeue from each packet's sojourn time, under the drop-tail limit.

use std::collections::VecDeque;

use leocc_trace::link::{Cursor, Held};
use leocc_base::metrics::jain;
use leocc_trace::qdisc::{CoDel, CoDelParams, CoDelQueue};
use leocc_trace::{Dir, LinkModel, OPPORTUNITY_BYTES};

use crate::cc::{new_controller, CcConfig, ReconfigEvent};
use crate::detector::{conf_through_option, Detector};
use leocc_probe::detect::DetectorConfig;
use crate::event::{Ev, EventQueue};
use crate::metrics::{mbps, FlowResult, FlowStats, RunResult, TsRow};
use leocc_base::record::RunRecord;
use crate::rng::Rng;
use crate::tcp::{ack_size, Body, Io, Packet, Receiver, Sender, DATA_PACKET_BYTES, INIT_CWND, MSS};
use crate::{Qdisc, QueueLimit, ResolvedQueue, Scenario, SimError};

/// Time-series interval (issue 4: per 100 ms).
pub const SAMPLE_INTERVAL_US: u64 = 100_000;
/// How long an endpoint's host takes to hand a packet that reached it to TCP, so that what TCP
/// sends in answer (an ACK; data the ACK let out) enters the path this much later. Without it a
/// receiver answered in the very microsecond a trace's delivery opportunity released the data
/// and its ACK caught the opportunity of that same instant on the way back, which no host does
/// (through the emulator the kernel's answer reaches the link tens of µs later, after the
/// release error of 35 µs (p50) and the stack): with traces in 1 ms bins that gave the
/// simulator's flows RTTs up to 2 ms below the kernel's, and BBR a smaller BDP.
pub const HOST_LATENCY_US: u64 = 50;
/// Resolution of the capacity integral when two bottlenecks are in series.
const CAPACITY_BIN_US: u64 = 10_000;
/// RNG stream of random loss (streams: see `Rng::derive`).
const STREAM_LOSS: u64 = 1;
/// RNG stream of the detector's probe phase.
const STREAM_PROBE_PHASE: u64 = 2;
/// RNG stream of the probe stream's noise and loss draws.
const STREAM_PROBE_NOISE: u64 = 3;
/// First RNG stream of the controls (flow i uses STREAM_CC + i).
const STREAM_CC: u64 = 100;

struct Hop {
    link: LinkModel,
    /// Serves at delivery opportunities (false: a pure delay line).
    capacity: bool,
    limit: QueueLimit,
    qdisc: Qdisc,
    /// CoDel's state, when the discipline is CoDel.
    codel: Option<CoDel>,
    /// Packets waiting, with the time each entered the queue (µs).
    queue: VecDeque<(u64, Packet)>,
    queued_bytes: u64,
    /// Packets the discipline dropped from the queue, to be counted (kept to save an
    /// allocation per drop).
    dropped: Vec<Packet>,
    head_sent: u32,
    service_at: Option<u64>,
    /// Where the hop is in its link's schedule (service times only move forward).
    cursor: Cursor,
    /// Packets leaving in the slot being served, kept to save an allocation per slot.
    departing: Vec<Packet>,
    line: VecDeque<(u64, Packet)>,
    last_arrival: u64,
    /// Extra random loss probability (the `--loss` option) on top of the trace's.
    extra_loss: f64,
    trace_loss: bool,
    outage_drop: bool,
    /// The link's delay, loss and outage state around the last packet (asked again only
    /// when time leaves their span).
    delay: Held<u64>,
    past_delay: Held<u64>,
    loss: Held<f64>,
    outage: Held<bool>,
}

impl Hop {
    fn new(link: LinkModel, capacity: bool, limit: QueueLimit, qdisc: Qdisc, extra_loss: f64, lossy: bool) -> Hop {
        Hop {
            link,
            capacity,
            limit,
            qdisc,
            codel: (qdisc == Qdisc::CoDel).then(|| CoDel::new(CoDelParams::default())),
            queue: VecDeque::new(),
            queued_bytes: 0,
            dropped: Vec::new(),
            head_sent: 0,
            service_at: None,
            cursor: Cursor::default(),
            departing: Vec::new(),
            line: VecDeque::new(),
            last_arrival: 0,
            extra_loss,
            trace_loss: lossy,
            outage_drop: lossy,
            delay: Held::default(),
            past_delay: Held::default(),
            loss: Held::default(),
            outage: Held::default(),
        }
    }

    fn delay_us(&mut self, t: u64) -> u64 {
        self.delay.refresh(t, |t| self.link.delay_held(t))
    }

    /// The delay at a sampled packet's send time, an RTT ago (its own span: times lag now).
    fn past_delay_us(&mut self, t: u64) -> u64 {
        self.past_delay.refresh(t, |t| self.link.delay_held(t))
    }

    fn loss_prob(&mut self, t: u64) -> f64 {
        self.loss.refresh(t, |t| self.link.loss_held(t))
    }

    fn in_outage(&mut self, t: u64) -> bool {
        self.outage.refresh(t, |t| self.link.outage_held(t))
    }

    fn full_for(&self, size: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => self.queue.len() as u64 >= n,
            QueueLimit::Bytes(b) => self.queued_bytes + size as u64 > b,
            QueueLimit::Time(_) => unreachable!("World::new resolves a time limit to bytes"),
        }
    }

    /// Drop-front: drops packets from the head of the queue (not the one being transmitted)
    /// into `dropped` until a packet of `size` fits, and says whether it does. When it could
    /// not fit even into an otherwise empty queue, nothing is dropped and the answer is false.
    fn make_room_at_front(&mut self, size: u32) -> bool {
        let keep = usize::from(self.head_sent > 0);
        let kept_bytes = if keep == 1 { self.queue.front().map_or(0, |(_, p)| p.size as u64) } else { 0 };
        let possible = match self.limit {
            QueueLimit::Packets(n) => (keep as u64) < n,
            QueueLimit::Bytes(b) => kept_bytes + size as u64 <= b,
            QueueLimit::Time(_) => unreachable!("World::new resolves a time limit to bytes"),
        };
        if !possible {
            return false;
        }
        while self.full_for(size) {
            let (_, p) = self.queue.remove(keep).expect("a full queue holds a packet after the one in service");
            self.queued_bytes -= p.size as u64;
            self.dropped.push(p);
        }
        true
    }
}

/// The hop's queue as CoDel dequeues from it: the head leaves, drops go to `dropped`.
struct HopFifo<'a> {
    queue: &'a mut VecDeque<(u64, Packet)>,
    queued_bytes: &'a mut u64,
    dropped: &'a mut Vec<Packet>,
}

impl CoDelQueue for HopFifo<'_> {
    type Item = (u64, Packet);
    fn pop(&mut self) -> Option<((u64, Packet), u64)> {
        let (t, p) = self.queue.pop_front()?;
        *self.queued_bytes -= p.size as u64;
        Some(((t, p), t))
    }
    fn backlog_bytes(&self) -> u64 {
        *self.queued_bytes
    }
    fn discard(&mut self, (_, p): (u64, Packet)) {
        self.dropped.push(p);
    }
}

struct Flow {
    cc_name: String,
    start_us: u64,
    stop_us: u64,
    sender: Sender,
    receiver: Receiver,
    stats: FlowStats,
    /// Probe replies already passed to the control (`AckInfo::term_pop_seq`).
    last_path_seq: u64,
    /// The flow gets the trace's true reconfigurations, not the detector's events.
    oracle: bool,
    ts_bytes: u64,
    ts_rtt_sum: u64,
    ts_rtt_n: u64,
}

/// A scenario instantiated: everything the event loop touches.
pub struct World {
    ev: EventQueue,
    hops: Vec<Hop>,
    routes: [Vec<usize>; 2],
    flows: Vec<Flow>,
    detector: Detector,
    /// Time of the pending ProbeLeg event, if any (one pending at a time).
    probe_leg_at: Option<u64>,
    data_down: bool,
    oracle: Vec<u64>,
    /// True reconfiguration times (outage starts) over the run, to score the detector.
    truth: Vec<u64>,
    use_oracle: bool,
    any_oracle: bool,
    run_detector: bool,
    oracle_seq: u32,
    reconfigs: u64,
    rng: Rng,
    out: Vec<Packet>,
    end_us: u64,
    timeseries: bool,
    ts: Vec<TsRow>,
    /// Events processed (for the benchmark).
    pub events_processed: u64,
    /// The queue limit of every hop, as given and as resolved for this trace.
    pub queue: ResolvedQueue,
}

impl World {
    /// Build the world for `sc`.
    pub fn new(sc: &Scenario) -> Result<World, SimError> {
        let trace = &sc.trace;
        let (data_dir, ack_dir) = match sc.data_dir {
            Dir::Down => (Dir::Down, Dir::Up),
            Dir::Up => (Dir::Up, Dir::Down),
        };
        let sat_data = trace.link(data_dir);
        let sat_ack = trace.link(ack_dir);
        let terr = if sc.terrestrial { trace.terrestrial() } else { None };
        let queue = sc.queue.resolve(trace, data_dir).map_err(SimError::Config)?;
        let limit = queue.limit;
        let qdisc = sc.qdisc;
        let mut hops = Vec::new();
        let mut data_route = Vec::new();
        let mut ack_route = Vec::new();
        let data_down = data_dir == Dir::Down;
        // The server sits behind the terrestrial segment: first on the data path when data
        // flows down, last when it flows up.
        let push = |hops: &mut Vec<Hop>, h: Hop| {
            hops.push(h);
            hops.len() - 1
        };
        if data_down {
            if let Some(t) = &terr {
                data_route.push(push(&mut hops, Hop::new(t.clone(), true, limit, qdisc, 0.0, true)));
            }
            data_route.push(push(&mut hops, Hop::new(sat_data, true, limit, qdisc, sc.loss, true)));
            ack_route.push(push(&mut hops, Hop::new(sat_ack, true, limit, qdisc, 0.0, true)));
            if let Some(t) = &terr {
                ack_route.push(push(&mut hops, Hop::new(t.clone(), false, limit, qdisc, 0.0, false)));
            }
        } else {
            data_route.push(push(&mut hops, Hop::new(sat_data, true, limit, qdisc, sc.loss, true)));
            if let Some(t) = &terr {
                data_route.push(push(&mut hops, Hop::new(t.clone(), true, limit, qdisc, 0.0, true)));
                ack_route.push(push(&mut hops, Hop::new(t.clone(), false, limit, qdisc, 0.0, false)));
            }
            ack_route.push(push(&mut hops, Hop::new(sat_ack, true, limit, qdisc, 0.0, true)));
        }
        let mut flows = Vec::new();
        for (i, f) in sc.flows.iter().enumerate() {
            // leocc-oracle is LeoCC with LeoCC's settings.
            let params_of = if crate::cc::fed_by_oracle(&f.cc) { "leocc" } else { f.cc.as_str() };
            let cfg = CcConfig { mss: MSS, init_cwnd: INIT_CWND, seed: Rng::derive(sc.seed, STREAM_CC + i as u64).next_u64(),
                params: sc.cc_params.iter().filter(|(cc, _)| cc == params_of).map(|(_, p)| p.clone()).collect(),
            };
            // Builds the controller with its settings; a refused setting is the error.
            let cc = new_controller(&f.cc, &cfg).map_err(SimError::Config)?;
            flows.push(Flow {
                cc_name: f.cc.clone(),
                oracle: sc.oracle_reconfig || crate::cc::fed_by_oracle(&f.cc),
                start_us: f.start_us,
                stop_us: f.stop_us.min(sc.duration_us),
                sender: Sender::with_sndbuf(i as u16, cc, sc.sndbuf_bytes),
                receiver: Receiver::new(i as u16, sc.delack_segs, sc.delack_timeout_us).with_gro(sc.gro_segs),
                stats: FlowStats::default(),
                last_path_seq: 0,
                ts_bytes: 0,
                ts_rtt_sum: 0,
                ts_rtt_n: 0,
            });
        }
        let noise_seed = Rng::derive(sc.seed, STREAM_PROBE_NOISE).next_u64();
        let phase = Rng::derive(sc.seed, STREAM_PROBE_PHASE).below(sc.probe_interval_us.max(1));
        let warmup = if sc.detector { Detector::whole_loops(sc.detector_warmup_us, trace) } else { 0 };
        let cfg = DetectorConfig { threshold_ns: sc.outage_threshold_us * 1000, scoring: sc.detector_scoring, ..DetectorConfig::default() };
        let detector = Detector::on_trace(trace, sc.probe_interval_us, cfg, sc.probe_noise, noise_seed)
            .with_false_events(sc.false_event_interval_us)
            .warm_up(warmup, phase);
        let oracle = oracle_times(trace, sc.duration_us);
        let truth = truth_times(trace, sc.duration_us);
        let mut w = World {
            ev: EventQueue::default(),
            hops,
            routes: [data_route, ack_route],
            flows,
            detector,
            probe_leg_at: None,
            data_down,
            oracle,
            truth,
            // Oracle events are scheduled when any flow takes them; the run reports the oracle as
            // its source when every flow does.
            use_oracle: sc.oracle_reconfig || sc.flows.iter().all(|f| crate::cc::fed_by_oracle(&f.cc)),
            any_oracle: sc.oracle_reconfig || sc.flows.iter().any(|f| crate::cc::fed_by_oracle(&f.cc)),
            run_detector: sc.detector,
            oracle_seq: 0,
            reconfigs: 0,
            rng: Rng::derive(sc.seed, STREAM_LOSS),
            out: Vec::new(),
            end_us: sc.duration_us,
            timeseries: sc.timeseries,
            ts: Vec::new(),
            events_processed: 0,
            queue,
        };
        for (i, f) in w.flows.iter().enumerate() {
            w.ev.push(f.start_us, Ev::FlowStart(i as u16));
            w.ev.push(f.stop_us, Ev::FlowStop(i as u16));
        }
        if sc.detector {
            w.ev.push(w.detector.next_send_us(), Ev::ProbeSend);
            if let Some(at) = w.detector.next_arrival_us() {
                w.schedule_probe_leg(at);
            }
        }
        if w.any_oracle {
            for (i, &t) in w.oracle.iter().enumerate() {
                w.ev.push(t, Ev::Oracle(i as u32));
            }
        }
        // Every 100 ms: the senders' smoothed RTT (what the emulator reads from the kernel), and
        // the time series when asked for.
        w.ev.push(SAMPLE_INTERVAL_US, Ev::Sample);
        Ok(w)
    }

    /// Run until the end, calling `progress` with the simulated time about once per second.
    pub fn run(&mut self, progress: &mut dyn FnMut(u64)) {
        let mut next_progress = 1_000_000;
        while let Some(t) = self.ev.peek_time() {
            if t > self.end_us {
                break;
            }
            let (now, ev) = self.ev.pop().expect("peeked");
            self.events_processed += 1;
            if now >= next_progress {
                progress(now);
                next_progress = now + 1_000_000;
            }
            self.handle(now, ev);
        }
    }

    fn handle(&mut self, now: u64, ev: Ev) {
        match ev {
            Ev::HopService(h) => self.serve(now, h as usize),
            Ev::HopArrive(h) => self.arrive(now, h as usize),
            Ev::FlowStart(f) => {
                let mut io = Io { ev: &mut self.ev, out: &mut self.out };
                self.flows[f as usize].sender.start(now, &mut io);
                self.flush(now);
            }
            Ev::FlowStop(f) => self.flows[f as usize].sender.stop(),
            Ev::SenderWake(f) => {
                let mut io = Io { ev: &mut self.ev, out: &mut self.out };
                self.flows[f as usize].sender.on_wake(now, &mut io);
                self.flush(now);
            }
            Ev::Rto(f) => {
                let mut io = Io { ev: &mut self.ev, out: &mut self.out };
                self.flows[f as usize].sender.on_rto_timer(now, &mut io);
                self.flush(now);
            }
            Ev::Rack(f) => {
                let mut io = Io { ev: &mut self.ev, out: &mut self.out };
                self.flows[f as usize].sender.on_rack_timer(now, &mut io);
                self.flush(now);
            }
            Ev::DelAck(f) => {
                if self.flows[f as usize].receiver.on_delack_timer(now, &mut self.ev) {
                    self.send_ack(now, f as usize);
                }
            }
            Ev::ProbeSend => {
                let (reply_at, next, out) = self.detector.send_probe(now);
                if let Some(at) = reply_at {
                    self.schedule_probe_leg(at);
                }
                self.ev.push(next, Ev::ProbeSend);
                self.on_detector_output(now, out);
            }
            Ev::ProbeLeg => {
                if self.probe_leg_at == Some(now) {
                    self.probe_leg_at = None;
                    self.probe_arrival(now);
                }
            }
            Ev::Oracle(i) => {
                self.oracle_seq += 1;
                if self.use_oracle {
                    self.reconfigs += 1;
                }
                let e = ReconfigEvent { time_us: self.oracle[i as usize], seq: self.oracle_seq, now_us: now, confidence: leocc_core_sys::CONF_FULL };
                for f in self.flows.iter_mut().filter(|f| f.oracle) {
                    f.sender.on_reconfig(e);
                }
            }
            Ev::Sample => self.sample(now),
        }
    }

    fn schedule_probe_leg(&mut self, at: u64) {
        if self.probe_leg_at.is_none_or(|t| at < t) {
            self.probe_leg_at = Some(at);
            self.ev.push(at, Ev::ProbeLeg);
        }
    }

    fn probe_arrival(&mut self, now: u64) {
        let (out, next) = self.detector.advance(now);
        if let Some(at) = next {
            self.schedule_probe_leg(at.max(now + 1));
        }
        self.on_detector_output(now, out);
    }

    /// Hands what the detector published at `now` to the flows: an event (to the senders on
    /// the satellite side, as the signal map does) and a probe RTT sample.
    fn on_detector_output(&mut self, now: u64, out: crate::detector::DetectorOutput) {
        if let Some((seq, confidence)) = out.event {
            if !self.use_oracle {
                self.reconfigs += 1;
                if !self.data_down {
                    // The sender is on the satellite side: the daemon hands it over directly,
                    // through the signal map, confidence and all.
                    let e = ReconfigEvent { time_us: now, seq, now_us: now, confidence: u32::from(confidence) };
                    for f in self.flows.iter_mut().filter(|f| !f.oracle) {
                        f.sender.on_reconfig(e);
                    }
                }
            }
        }
        if let (Some(rtt), false) = (out.rtt_us, self.data_down) {
            for f in &mut self.flows {
                if f.sender.is_active() {
                    f.sender.cc.on_path(now, rtt);
                }
            }
        }
    }

    /// Route packets the senders emitted.
    fn flush(&mut self, now: u64) {
        let mut out = std::mem::take(&mut self.out);
        for p in out.drain(..) {
            let h = self.routes[p.route as usize][0];
            self.enter(now, h, p);
        }
        self.out = out;
    }

    fn count_drop(&mut self, p: &Packet, kind: DropKind) {
        let s = &mut self.flows[p.flow as usize].stats;
        match (&p.body, kind) {
            (Body::Ack(_), _) => s.acks_dropped += 1,
            (Body::Data { .. }, DropKind::Queue) => s.dropped_queue += 1,
            (Body::Data { .. }, DropKind::Random) => s.dropped_random += 1,
            (Body::Data { .. }, DropKind::Outage) => s.dropped_outage += 1,
        }
    }

    fn enter(&mut self, now: u64, h: usize, p: Packet) {
        let hop = &mut self.hops[h];
        if !hop.capacity {
            self.propagate(now, h, p);
            return;
        }
        if hop.full_for(p.size) {
            if hop.qdisc != Qdisc::DropFront || !hop.make_room_at_front(p.size) {
                self.count_drop(&p, DropKind::Queue);
                return;
            }
            self.count_discipline_drops(h);
        }
        let hop = &mut self.hops[h];
        hop.queued_bytes += p.size as u64;
        hop.queue.push_back((now, p));
        if hop.service_at.is_none() {
            if let Some(t) = hop.link.next_opportunity_near(now, &mut hop.cursor) {
                hop.service_at = Some(t);
                self.ev.push(t, Ev::HopService(h as u16));
            }
        }
    }

    /// Serve the opportunities at `now` (mahimahi semantics).
    fn serve(&mut self, now: u64, h: usize) {
        let hop = &mut self.hops[h];
        if hop.service_at != Some(now) {
            return;
        }
        hop.service_at = None;
        let (here, next) = hop.link.slot(now, &mut hop.cursor);
        let mut budget = here * OPPORTUNITY_BYTES as u64;
        let mut departed = std::mem::take(&mut hop.departing);
        while budget > 0 {
            if let (Some(codel), 0) = (hop.codel.as_mut(), hop.head_sent) {
                // The head is about to start transmission: CoDel drops or lets it go.
                let mut fifo = HopFifo { queue: &mut hop.queue, queued_bytes: &mut hop.queued_bytes, dropped: &mut hop.dropped };
                let Some((t, p)) = codel.dequeue(now, &mut fifo) else { break };
                hop.queued_bytes += p.size as u64;
                hop.queue.push_front((t, p));
            }
            let Some((_, head)) = hop.queue.front() else { break };
            let need = (head.size - hop.head_sent) as u64;
            let take = need.min(budget);
            budget -= take;
            hop.head_sent += take as u32;
            if hop.head_sent == head.size {
                let (_, mut p) = hop.queue.pop_front().expect("head exists");
                p.served_us = now;
                hop.queued_bytes -= p.size as u64;
                hop.head_sent = 0;
                departed.push(p);
            }
        }
        if !hop.queue.is_empty() {
            if let Some(t) = next {
                hop.service_at = Some(t);
                self.ev.push(t, Ev::HopService(h as u16));
            }
        } else if let Some(codel) = hop.codel.as_mut() {
            codel.on_empty();
        }
        if !self.hops[h].dropped.is_empty() {
            self.count_discipline_drops(h);
        }
        for p in departed.drain(..) {
            self.depart(now, h, p);
        }
        self.hops[h].departing = departed;
    }

    /// Counts the packets hop `h`'s discipline dropped from its queue (queue drops).
    fn count_discipline_drops(&mut self, h: usize) {
        let mut dropped = std::mem::take(&mut self.hops[h].dropped);
        for p in dropped.drain(..) {
            self.count_drop(&p, DropKind::Queue);
        }
        self.hops[h].dropped = dropped;
    }

    fn depart(&mut self, now: u64, h: usize, p: Packet) {
        let hop = &mut self.hops[h];
        if hop.outage_drop && hop.in_outage(now) {
            // A ground-truth outage with opportunities left in the schedule still loses packets.
            self.count_drop(&p, DropKind::Outage);
            return;
        }
        let trace_p = if hop.trace_loss { hop.loss_prob(now) } else { 0.0 };
        let extra = if matches!(p.body, Body::Data { .. }) { hop.extra_loss } else { 0.0 };
        let prob = 1.0 - (1.0 - trace_p) * (1.0 - extra);
        if prob > 0.0 && self.rng.chance(prob) {
            self.count_drop(&p, DropKind::Random);
            return;
        }
        self.propagate(now, h, p);
    }

    fn propagate(&mut self, now: u64, h: usize, p: Packet) {
        // The last hop hands the packet to its host, which answers HOST_LATENCY_US later.
        let host_us = if p.hop as usize + 1 == self.routes[p.route as usize].len() { HOST_LATENCY_US } else { 0 };
        let hop = &mut self.hops[h];
        let at = (now + hop.delay_us(now) + host_us).max(hop.last_arrival);
        hop.last_arrival = at;
        let was_empty = hop.line.is_empty();
        hop.line.push_back((at, p));
        if was_empty {
            self.ev.push(at, Ev::HopArrive(h as u16));
        }
    }

    fn arrive(&mut self, now: u64, h: usize) {
        while let Some(&(at, _)) = self.hops[h].line.front() {
            if at > now {
                self.ev.push(at, Ev::HopArrive(h as u16));
                break;
            }
            let (_, mut p) = self.hops[h].line.pop_front().expect("front exists");
            p.hop += 1;
            let route = &self.routes[p.route as usize];
            if (p.hop as usize) < route.len() {
                let next = route[p.hop as usize];
                self.enter(now, next, p);
            } else if p.route == 0 {
                self.deliver_data(now, p);
            } else {
                self.deliver_ack(now, p);
            }
        }
        if self.routes[0].last() == Some(&h) {
            // Everything that reached the receiving host in this instant has been handed over:
            // the skbs GRO built from it are complete.
            for f in 0..self.flows.len() {
                if self.flows[f].receiver.end_skb() {
                    self.send_ack(now, f);
                }
            }
        }
    }

    fn deliver_data(&mut self, now: u64, p: Packet) {
        let Body::Data { seq, .. } = p.body else { return };
        let r = &mut self.flows[p.flow as usize].receiver;
        if r.ends_skb(now) && r.end_skb() {
            self.send_ack(now, p.flow as usize);
        }
        let f = &mut self.flows[p.flow as usize];
        f.stats.arrived += 1;
        f.stats.owd.add(now - p.sent_us);
        f.stats.first_arrival_us.get_or_insert(now);
        f.stats.last_arrival_us = now;
        let r = f.receiver.on_data(now, seq, &mut self.ev);
        if r.new {
            f.stats.arrived_unique += 1;
            let (a, b) = f.stats.served_us.unwrap_or((p.served_us, p.served_us));
            f.stats.served_us = Some((a.min(p.served_us), b.max(p.served_us)));
            f.ts_bytes += MSS as u64;
        }
        if r.ack_now {
            self.send_ack(now, p.flow as usize);
        }
    }

    fn send_ack(&mut self, now: u64, f: usize) {
        let mut info = self.flows[f].receiver.make_ack();
        if self.data_down {
            // The receiver's host (satellite side) carries the detector's output to the
            // sender in a TCP option, as the sock_ops carrier does.
            if let (false, Some((t, seq, confidence))) = (self.flows[f].oracle, self.detector.latest) {
                info.reconfig_seq = seq;
                info.reconfig_time_us = t;
                info.reconfig_conf = confidence;
            }
            info.term_pop_rtt_us = self.detector.term_pop_rtt_us;
            info.term_pop_seq = self.detector.replies;
        }
        self.flows[f].stats.acks_sent += 1;
        let p = Packet { flow: f as u16, size: ack_size(info.nsacks), sent_us: now, route: 1, hop: 0, served_us: 0, body: Body::Ack(Box::new(info)) };
        let h = self.routes[1][0];
        self.enter(now, h, p);
    }

    fn deliver_ack(&mut self, now: u64, p: Packet) {
        let Body::Ack(info) = p.body else { return };
        let fi = p.flow as usize;
        {
            let f = &mut self.flows[fi];
            if info.reconfig_seq > 0 {
                // The option carries the confidence as a 3-bit grade.
                let confidence = conf_through_option(info.reconfig_conf);
                f.sender.on_reconfig(ReconfigEvent { time_us: info.reconfig_time_us, seq: info.reconfig_seq, now_us: now, confidence });
            }
            if info.term_pop_rtt_us > 0 && info.term_pop_seq > f.last_path_seq && f.sender.is_active() {
                f.last_path_seq = info.term_pop_seq;
                f.sender.cc.on_path(now, info.term_pop_rtt_us);
            }
        }
        let mut io = Io { ev: &mut self.ev, out: &mut self.out };
        let outcome = self.flows[fi].sender.on_ack(now, &info, &mut io);
        if let Some(rtt) = outcome.rtt_us {
            let base = self.base_rtt_us(now.saturating_sub(rtt));
            let f = &mut self.flows[fi];
            f.stats.rtt.add(rtt);
            f.stats.qdelay.add(rtt.saturating_sub(base));
            f.ts_rtt_sum += rtt;
            f.ts_rtt_n += 1;
        }
        self.flush(now);
    }

    /// The trace's base RTT for a packet sent at `t`: propagation on every hop of the data
    /// route, then of the ACK route.
    fn base_rtt_us(&mut self, t: u64) -> u64 {
        let mut at = t;
        for r in &self.routes {
            for &h in r {
                at += self.hops[h].past_delay_us(at);
            }
        }
        at - t
    }

    /// Bits the data route's bottleneck(s) offered over the service window `served` (first
    /// and last opportunity used, both included: counting over [first, last) would leave out
    /// the opportunity the last packet used, and report 2.0 for two packets on two opportunities).
    fn offered_bits_served(&self, served: Option<(u64, u64)>) -> f64 {
        served.map_or(0.0, |(a, b)| self.offered_bits(a, b + 1))
    }

    /// Bits the data route's bottleneck(s) offered over [a, b).
    fn offered_bits(&self, a: u64, b: u64) -> f64 {
        let caps: Vec<&LinkModel> = self.routes[0].iter().filter(|&&h| self.hops[h].capacity).map(|&h| &self.hops[h].link).collect();
        if b <= a {
            return 0.0;
        }
        if caps.len() == 1 {
            return caps[0].mean_capacity_bps(a, b) * (b - a) as f64 / 1e6;
        }
        let mut bits = 0.0;
        let mut t = a;
        while t < b {
            let e = (t + CAPACITY_BIN_US).min(b);
            let m = caps.iter().map(|c| c.mean_capacity_bps(t, e)).fold(f64::INFINITY, f64::min);
            bits += m * (e - t) as f64 / 1e6;
            t = e;
        }
        bits
    }

    fn sample(&mut self, now: u64) {
        let base = self.base_rtt_us(now);
        for f in &mut self.flows {
            let srtt = f.sender.srtt_us();
            if now > f.start_us && now <= f.stop_us && srtt > 0 {
                f.stats.srtt.add(srtt);
                f.stats.srtt_qdelay.add(srtt.saturating_sub(base));
            }
        }
        if !self.timeseries {
            self.ev.push(now + SAMPLE_INTERVAL_US, Ev::Sample);
            return;
        }
        for (i, f) in self.flows.iter_mut().enumerate() {
            if now <= f.start_us || now > f.stop_us + SAMPLE_INTERVAL_US {
                continue;
            }
            let cc = &f.sender.cc;
            self.ts.push(TsRow {
                t_s: now as f64 / 1e6,
                flow: i,
                throughput_mbps: mbps(f.ts_bytes as f64, SAMPLE_INTERVAL_US),
                rtt_ms: if f.ts_rtt_n == 0 { 0.0 } else { f.ts_rtt_sum as f64 / f.ts_rtt_n as f64 / 1000.0 },
                cwnd: cc.cwnd(),
                pacing_mbps: cc.pacing_rate().map_or(0.0, |r| r * 8.0 / 1e6),
                inflight: f.sender.in_flight(),
                state: cc.state().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            });
            f.ts_bytes = 0;
            f.ts_rtt_sum = 0;
            f.ts_rtt_n = 0;
        }
        self.ev.push(now + SAMPLE_INTERVAL_US, Ev::Sample);
    }

    /// Data packets of flow `f` still in the network (queued or propagating).
    pub fn in_network(&self, f: usize) -> u64 {
        self.hops
            .iter()
            .map(|h| {
                h.queue.iter().chain(h.line.iter()).map(|(_, p)| p).filter(|p| p.flow as usize == f && p.route == 0).count() as u64
            })
            .sum()
    }

    /// Conservation check of flow `f`: (sent, arrived, dropped, in network).
    pub fn packet_balance(&self, f: usize) -> (u64, u64, u64, u64) {
        let s = &self.flows[f].stats;
        (
            self.flows[f].sender.stats.sent,
            s.arrived,
            s.dropped_queue + s.dropped_random + s.dropped_outage,
            self.in_network(f),
        )
    }

    /// The detector (tests look at its detections).
    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    /// Raw measurements of flow `f`.
    pub fn stats(&self, f: usize) -> &FlowStats {
        &self.flows[f].stats
    }

    /// The sender of flow `f` (tests and benchmarks look at its state).
    pub fn sender(&self, f: usize) -> &Sender {
        &self.flows[f].sender
    }

    /// Summarise the run.
    pub fn result(&mut self, sc: &Scenario) -> RunResult {
        let mut flows = Vec::new();
        let mut all = FlowStats::default();
        let (mut sent, mut retrans, mut drops) = (0u64, 0u64, 0u64);
        let (mut first, mut last) = (u64::MAX, 0u64);
        let mut served: Option<(u64, u64)> = None;
        let mut arrived_bytes = 0.0;
        let mut unique = 0u64;
        for (i, f) in self.flows.iter().enumerate() {
            let s = &f.stats;
            let a = s.first_arrival_us.unwrap_or(0);
            let b = s.last_arrival_us.max(a);
            let fd = s.dropped_queue + s.dropped_random + s.dropped_outage;
            let st = &f.sender.stats;
            flows.push(FlowResult {
                flow: i,
                cc: f.cc_name.clone(),
                start_s: f.start_us as f64 / 1e6,
                stop_s: f.stop_us as f64 / 1e6,
                data_start_s: None,
                throughput_mbps: mbps((s.arrived * DATA_PACKET_BYTES as u64) as f64, b - a),
                goodput_mbps: mbps((s.arrived_unique * MSS as u64) as f64, b - a),
                utilization: ratio((s.arrived_unique * DATA_PACKET_BYTES as u64 * 8) as f64, self.offered_bits_served(s.served_us)),
                bottleneck_bytes: None,
                bottleneck_pkts: None,
                rtt_avg_ms: s.rtt.mean() / 1000.0,
                rtt_p50_ms: s.rtt.quantile(0.5) / 1000.0,
                rtt_p95_ms: s.rtt.quantile(0.95) / 1000.0,
                rtt_p99_ms: s.rtt.quantile(0.99) / 1000.0,
                owd_p95_ms: s.owd.quantile(0.95) / 1000.0,
                qdelay_avg_ms: s.qdelay.mean() / 1000.0,
                qdelay_p95_ms: s.qdelay.quantile(0.95) / 1000.0,
                loss_rate: Some(ratio(fd as f64, st.sent as f64)),
                retrans_rate: ratio(st.retrans as f64, st.sent as f64),
                packets_sent: Some(st.sent),
                rtos: Some(st.rtos),
                cpu_s_per_mb: None,
            });
            all.rtt.merge(&s.rtt);
            all.owd.merge(&s.owd);
            all.qdelay.merge(&s.qdelay);
            all.srtt.merge(&s.srtt);
            all.srtt_qdelay.merge(&s.srtt_qdelay);
            sent += st.sent;
            retrans += st.retrans;
            drops += fd;
            if s.first_arrival_us.is_some() {
                first = first.min(a);
                last = last.max(b);
            }
            if let Some((sa, sb)) = s.served_us {
                served = Some(served.map_or((sa, sb), |(x, y)| (x.min(sa), y.max(sb))));
            }
            arrived_bytes += (s.arrived * DATA_PACKET_BYTES as u64) as f64;
            unique += s.arrived_unique;
        }
        if first == u64::MAX {
            first = 0;
        }
        let cc = {
            let mut names: Vec<&str> = Vec::new();
            for f in &self.flows {
                if !names.contains(&f.cc_name.as_str()) {
                    names.push(&f.cc_name);
                }
            }
            names.join("+")
        };
        let record = RunRecord {
            engine: "sim".into(),
            cc,
            trace: sc.trace_name.clone(),
            seed: sc.seed,
            duration_s: sc.duration_us as f64 / 1e6,
            throughput_mbps: mbps(arrived_bytes, last - first),
            goodput_mbps: mbps((unique * MSS as u64) as f64, last - first),
            utilization: ratio((unique * DATA_PACKET_BYTES as u64 * 8) as f64, self.offered_bits_served(served)),
            rtt_avg_ms: all.rtt.mean() / 1000.0,
            rtt_p50_ms: all.rtt.quantile(0.5) / 1000.0,
            rtt_p95_ms: all.rtt.quantile(0.95) / 1000.0,
            rtt_p99_ms: all.rtt.quantile(0.99) / 1000.0,
            owd_p95_ms: all.owd.quantile(0.95) / 1000.0,
            qdelay_avg_ms: all.qdelay.mean() / 1000.0,
            qdelay_p95_ms: all.qdelay.quantile(0.95) / 1000.0,
            srtt_p95_ms: Some(all.srtt.quantile(0.95) / 1000.0),
            srtt_qdelay_avg_ms: Some(all.srtt_qdelay.mean() / 1000.0),
            loss_rate: ratio(drops as f64, sent as f64),
            retrans_rate: ratio(retrans as f64, sent as f64),
            jain: jain(&flows.iter().map(|f| f.throughput_mbps).collect::<Vec<_>>()),
            reconfigs_detected: Some(self.reconfigs),
            detection: self.run_detector.then(|| self.detector.detection_score(&self.truth, self.use_oracle)),
            queue: self.queue.given.to_string(),
            queue_bytes: self.queue.bytes,
            queue_ms: self.queue.ms,
            qdisc: sc.qdisc.name().to_string(),
            sndbuf_bytes: sc.sndbuf_bytes,
            bottleneck_departed_bytes: None,
            flows,
        };
        RunResult { record, timeseries: std::mem::take(&mut self.ts) }
    }
}

/// Ground-truth reconfiguration times as LeoCC's core wants them: when the new path began,
/// i.e. the end of the outage a reconfiguration opens (its own time if it opens none),
/// repeated every loop of the trace, up to `end_us`.
fn oracle_times(trace: &leocc_trace::Trace, end_us: u64) -> Vec<u64> {
    let begins: Vec<u64> = trace
        .reconfigurations_us()
        .iter()
        .map(|&t| trace.outages.iter().find(|o| o.start_us <= t && t < o.end_us()).map_or(t, |o| o.end_us()))
        .collect();
    every_loop(&begins, trace.duration_us().max(1), end_us.saturating_add(1))
}

/// True reconfiguration times as the detector is scored against them: the outage starts (the
/// trace's reconfigurations, or those `leocc probe simulate` finds in its outages and level
/// steps when it lists none), repeated every loop of the trace, up to `end_us`.
fn truth_times(trace: &leocc_trace::Trace, end_us: u64) -> Vec<u64> {
    every_loop(&crate::detector::truth_once(trace), trace.duration_us().max(1), end_us)
}

/// `once` (times within one loop of the trace, ascending) repeated every `period`, the times
/// before `until_us`.
fn every_loop(once: &[u64], period: u64, until_us: u64) -> Vec<u64> {
    let mut out = Vec::new();
    if once.is_empty() {
        return out;
    }
    for k in 0.. {
        for &t in once {
            let at = k * period + t;
            if at >= until_us {
                return out;
            }
            out.push(at);
        }
    }
    out
}

#[derive(Clone, Copy)]
enum DropKind {
    Queue,
    Random,
    Outage,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{constant_trace, run, Scenario};

    fn utilization(mahimahi: &str, duration_us: u64) -> (f64, Vec<f64>) {
        let t = leocc_trace::mahimahi::trace_from_capacity_file(std::path::Path::new("t"), mahimahi.as_bytes()).unwrap();
        let r = run(&Scenario::new(Arc::new(t), "t", "cubic", duration_us)).unwrap();
        (r.utilization, r.flows.iter().map(|f| f.utilization).collect())
    }

    fn data(seq: u64, size: u32) -> Packet {
        Packet { flow: 0, size, sent_us: seq, route: 0, hop: 0, served_us: 0, body: Body::Data { seq, tx_index: seq } }
    }

    fn queued(hop: &Hop) -> Vec<u64> {
        hop.queue.iter().map(|(_, p)| p.sent_us).collect()
    }

    fn dropped(hop: &mut Hop) -> Vec<u64> {
        hop.dropped.drain(..).map(|p| p.sent_us).collect()
    }

    fn hop(limit: QueueLimit) -> Hop {
        let link = constant_trace(12.0, 1000, 1_000_000, &[]).link(leocc_trace::Dir::Down);
        Hop::new(link, true, limit, Qdisc::DropFront, 0.0, false)
    }

    fn push(hop: &mut Hop, p: Packet) {
        hop.queued_bytes += p.size as u64;
        hop.queue.push_back((0, p));
    }

    /// Drop-front drops the oldest waiting packets so that the newest one is queued.
    #[test]
    fn drop_front_drops_the_head_and_keeps_the_newest() {
        let mut h = hop(QueueLimit::Packets(3));
        for seq in 0..3 {
            push(&mut h, data(seq, 1500));
        }
        assert!(h.full_for(1500));
        assert!(h.make_room_at_front(1500));
        push(&mut h, data(3, 1500));
        assert_eq!((queued(&h), dropped(&mut h)), (vec![1, 2, 3], vec![0]));
        // The packet being transmitted stays; the next oldest goes.
        h.head_sent = 700;
        assert!(h.make_room_at_front(1500));
        push(&mut h, data(4, 1500));
        assert_eq!((queued(&h), dropped(&mut h)), (vec![1, 3, 4], vec![2]));
        // In bytes: as many from the front as the arrival needs.
        let mut h = hop(QueueLimit::Bytes(3000));
        for seq in 0..3 {
            push(&mut h, data(seq, 1000));
        }
        assert!(h.make_room_at_front(1500));
        push(&mut h, data(3, 1500));
        assert_eq!((queued(&h), dropped(&mut h)), (vec![2, 3], vec![0, 1]));
        // A packet that could never fit (the one in service is in the way) drops nothing.
        let mut h = hop(QueueLimit::Bytes(2000));
        push(&mut h, data(0, 1500));
        h.head_sent = 1;
        assert!(!h.make_room_at_front(1500));
        assert_eq!((queued(&h), dropped(&mut h)), (vec![0], vec![]));
    }

    /// Two packets on the two opportunities of `1\n500` used all the capacity: 1.0, not 2.0
    /// (the last opportunity was left out of the window) nor above 1.
    #[test]
    fn utilisation_counts_the_last_opportunity_and_never_exceeds_one() {
        let (all, flows) = utilization("1\n500\n", 500_000);
        assert!((all - 1.0).abs() < 1e-9, "{all}");
        assert!((flows[0] - 1.0).abs() < 1e-9, "{flows:?}");
        let dense: String = (1..=200).map(|ms| format!("{ms}\n")).collect();
        let (all, _) = utilization(&dense, 3_000_000);
        assert!(all > 0.5 && all <= 1.0 + 1e-9, "{all}");
    }
}
