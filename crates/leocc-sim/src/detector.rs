//! The reconfiguration detector in the simulator: the daemon's own detection core
//! ([`leocc_probe::detect`], the code `leocc probe` runs) fed with the probe stream the daemon
//! would see on the simulated path. There is no second detector: only the probe stream is
//! simulated here.
//!
//! The stream (paper §4.1.1, DESIGN.md's emulator topology): the satellite-side host sends an
//! ICMP echo to the PoP every 10 ms. Probes do not queue behind TCP data: the terminal and the
//! PoP answer ICMP on their own queue, so a probe sees only the satellite segment's propagation
//! delay in each direction (`LinkModel::delay_us`; on a drawn path only the part up to the PoP),
//! it is held at the satellite hop when it crosses the link during an outage and released when
//! the outage ends (lost in the outage's first share, which depends on the noise model, and
//! when the hold would last more than [`MAX_HOLD_US`]), and it is lost by the trace's random
//! loss. On top of that
//! comes the per-probe noise fitted to real recordings ([`leocc_probe::gen::ProbeNoise`],
//! [`ProbeNoiseModel`]): send-timer jitter and slips, RTT jitter (AR(1), spikes, upper-band
//! visits, congestion episodes) and Gilbert–Elliott background loss. Replies keep FIFO order,
//! as on the real path. The detector hears of every send (`on_send`, its self-stall check, then
//! `on_tick`, which may declare an outage from the silence so far) and of every reply with its
//! RTT (`on_reply`), exactly as the daemon's loop feeds it.
//!
//! What the detector reports is what the daemon publishes: a `Reconfig` output (confidence at
//! or above the core's `rcf_min_confidence`, 50) becomes the signal's next sequence number,
//! dated at its detection time, with its confidence; weak candidates are not published. Each
//! reply's RTT is the terminal-to-PoP RTT sample (for LeoCC's bottleneck discrimination, §4.3).
//! Detection happens when the first reply after an outage arrives: shortly after the outage
//! ends, never during it, as on a real host.

use std::collections::VecDeque;

use leocc_probe::detect::{self, DetectorConfig, Output, Reply};
use leocc_probe::gen::{GenConfig, Jitter, PathKind, ProbeNoise, FIFO_GAP_NS};
use leocc_probe::replay::{score, Detection, Score};
use leocc_trace::LinkModel;
use serde::Serialize;

use crate::rng::Rng;

/// The longest a probe is held at the satellite hop, µs: one that would wait longer is lost. A
/// terminal does not keep pings through a link that is gone for seconds (bent-pipe outages
/// hold probes 45-140 ms, docs/detector.md), and without a bound a trace with a long gap (a
/// sparse mahimahi file: one delivery a week) would hold every probe sent in it.
pub const MAX_HOLD_US: u64 = 2_000_000;
/// The seed's stream of the outages' lost shares (the noise uses streams 2 to 4).
const STREAM_OUTAGE_SHARE: u64 = 6;
/// Probe interval (paper §4.1.1: 10 ms).
pub const PROBE_INTERVAL_US: u64 = 10_000;
/// Δoutage: the detector's RI threshold (paper §4.1.1 and §5: 45 ms), the daemon's default.
pub const OUTAGE_THRESHOLD_US: u64 = detect::DEFAULT_THRESHOLD_NS / 1000;
/// Default warm-up of the detector before a run, µs: 5 minutes, long enough for its interval
/// statistics (half-life 4096 probes, ~41 s) to settle and for its schedule learner to have
/// seen a few tens of 15 s slots.
pub const DEFAULT_WARMUP_US: u64 = 300_000_000;
/// A detection matches a true reconfiguration when its outage-start estimate is within this
/// distance (µs): `leocc probe simulate`'s tolerance.
pub const MATCH_TOLERANCE_US: i64 = leocc_probe::replay::MATCH_TOLERANCE_US;
/// Wall-clock origin of the simulated host (only the optional schedule prior reads it):
/// 2024-08-12 19:00:00 UTC, a whole minute, as the probe-stream generator's.
const WALL_ORIGIN_NS: i64 = 1_723_489_200 * 1_000_000_000;

/// The per-probe noise on top of the simulated path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeNoiseModel {
    /// None: the probe sees exactly the trace's propagation delay, sends are exactly periodic
    /// and only outages and the trace's loss drop probes.
    None,
    /// The fit to the real bent-pipe recordings ([`Jitter::BENT_PIPE`]) with the generator's
    /// background loss (2 % in bursts of 2 probes): the default.
    #[default]
    BentPipe,
    /// The fit to the real inter-satellite-link recording ([`Jitter::ISL`]).
    Isl,
}

impl ProbeNoiseModel {
    /// Names accepted by [`ProbeNoiseModel::parse`].
    pub const NAMES: &'static str = "none, bentpipe, isl";

    /// Parses `none`, `bentpipe` or `isl`.
    pub fn parse(s: &str) -> Result<ProbeNoiseModel, String> {
        match s {
            "none" => Ok(ProbeNoiseModel::None),
            "bentpipe" => Ok(ProbeNoiseModel::BentPipe),
            "isl" => Ok(ProbeNoiseModel::Isl),
            _ => Err(format!("unknown probe noise '{s}' ({})", Self::NAMES)),
        }
    }

    /// The name [`ProbeNoiseModel::parse`] takes (`leocc sim --probe-noise NAME`).
    pub fn name(self) -> &'static str {
        match self {
            ProbeNoiseModel::None => "none",
            ProbeNoiseModel::BentPipe => "bentpipe",
            ProbeNoiseModel::Isl => "isl",
        }
    }

    /// The range of an outage's share whose probes are lost, the rest being held: the
    /// generator's for the path kind ([`leocc_probe::gen::outage_lost_share`]); none lost
    /// without noise (the data path holds packets through an outage too).
    fn lost_share(self) -> (f64, f64) {
        self.path_kind().map_or((0.0, 0.0), leocc_probe::gen::outage_lost_share)
    }

    /// The generator's path kind whose fit this noise is (`None`: no noise).
    fn path_kind(self) -> Option<PathKind> {
        match self {
            ProbeNoiseModel::None => None,
            ProbeNoiseModel::BentPipe => Some(PathKind::BentPipe),
            ProbeNoiseModel::Isl => Some(PathKind::Isl),
        }
    }

    fn noise(self, interval_us: u64, seed: u64) -> Option<ProbeNoise> {
        let g = GenConfig::new(self.path_kind()?, seed);
        let jitter: Jitter = g.jitter;
        Some(ProbeNoise::new(jitter, interval_us as f64 / 1000.0, g.loss, g.burst_len, seed))
    }
}

/// What a reply produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DetectorOutput {
    /// A reconfiguration was published now: (sequence number, confidence 0..=100).
    pub event: Option<(u32, u8)>,
    /// A new terminal-to-PoP RTT sample, µs.
    pub rtt_us: Option<u64>,
}

/// Precision and recall of the detector in a run, against the trace's true reconfigurations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DetectionScore {
    /// What fed LeoCC: `detector` or `oracle` (the detector still runs and is scored).
    pub source: &'static str,
    /// The probe noise model.
    pub probe_noise: ProbeNoiseModel,
    /// True reconfigurations in the run (repeated every loop of the trace).
    pub truth: usize,
    /// Events published (injected false events included).
    pub detections: usize,
    /// Detections matched one-to-one with a true reconfiguration (± 500 ms).
    pub matched: usize,
    /// matched / detections (1 with no detection).
    pub precision: f64,
    /// matched / truth (1 with no truth).
    pub recall: f64,
    /// Median detection delay of the matched events (detection − true time), ms.
    pub delay_p50_ms: Option<f64>,
    /// Mean confidence of the published events (injected ones excluded).
    pub confidence_avg: Option<f64>,
}

/// Detector state. The world calls `send_probe` at `next_send_us` and `advance` at reply
/// arrivals.
#[derive(Debug)]
pub struct Detector {
    up: LinkModel,
    down: LinkModel,
    interval_us: u64,
    core: detect::Detector,
    noise: Option<ProbeNoise>,
    noise_model: ProbeNoiseModel,
    /// Random draws of the trace's own loss.
    loss_rng: Rng,
    /// Random draws of each outage's lost share.
    share_rng: Rng,
    /// Range of the share of an outage whose probes are lost (the rest are held).
    lost_share: (f64, f64),
    /// The part of each direction's delay (up, down) that lies beyond the PoP, µs: the probe
    /// does not cross it ([`leocc_trace::Trace::beyond_pop_us`]).
    beyond_pop_us: (u64, u64),
    /// The outage each direction is in, if any: (start, lost until), µs.
    up_outage: Option<(u64, u64)>,
    down_outage: Option<(u64, u64)>,
    /// Replies on their way back, (arrival µs, send µs), in arrival order (FIFO path).
    in_flight: VecDeque<(u64, u64)>,
    last_arrival_us: Option<u64>,
    seq: u16,
    published: u32,
    /// Latest published event: (detection time µs, sequence number, confidence).
    pub latest: Option<(u64, u32, u8)>,
    /// Latest terminal-to-PoP RTT, µs (0 before the first reply).
    pub term_pop_rtt_us: u64,
    /// Detection times of every published event so far, µs.
    pub detections_us: Vec<u64>,
    /// Every published event: outage-start estimate and detection time, µs (for scoring).
    detections: Vec<Detection>,
    /// Confidence of every event the detector itself published (injected ones excluded).
    pub confidences: Vec<u8>,
    /// Candidates the detector judged weak (below `rcf_min_confidence`): not published, kept
    /// for diagnosis.
    pub weak: Vec<detect::ReconfigEvent>,
    /// Probes sent.
    pub probes_sent: u64,
    /// Replies received.
    pub replies: u64,
    /// Detector time − run time: the warm-up (`warm_up`).
    offset_us: u64,
    /// The stretch of the trace the warm-up loops: (start, length), µs of trace time
    /// (`with_warm_loop`).
    warm_loop: (u64, u64),
    next_send_us: u64,
    /// A false event every this many µs (0: none), to measure what a noisy detector costs.
    false_interval_us: u64,
    next_false_us: u64,
    /// False events injected so far (included in the published events and `detections_us`).
    pub false_events: u32,
}

/// Spacings of reconfigurations this close count as one schedule interval (generated and
/// drawn traces repeat theirs to the microsecond; a trace's detected ones to about a ms).
const SCHEDULE_TOLERANCE_US: u64 = 1_000;

/// The longest stretch of one trace loop made of whole schedule intervals: (start, length)
/// in µs. The interval is the spacing most consecutive reconfigurations share (at least two);
/// the stretch starts at the first reconfiguration that another one follows by that interval
/// (an unscheduled one does not) and holds as many intervals as fit before `period_us`.
/// None without such a spacing.
fn schedule_loop(once: &[u64], period_us: u64) -> Option<(u64, u64)> {
    let near = |a: u64, b: u64| a.abs_diff(b) <= SCHEDULE_TOLERANCE_US;
    let gaps: Vec<u64> = once.windows(2).map(|w| w[1] - w[0]).collect();
    let (count, interval) = gaps
        .iter()
        .map(|&g| (gaps.iter().filter(|&&h| near(g, h)).count(), g))
        .max_by_key(|&(count, g)| (count, std::cmp::Reverse(g)))?;
    if count < 2 || interval == 0 {
        return None;
    }
    let start = once.iter().copied().find(|&r| once.iter().any(|&q| near(q, r + interval)))?;
    let n = period_us.saturating_sub(start) / interval;
    (n >= 1).then_some((start, n * interval))
}

impl Detector {
    /// A detector on the satellite segment given by its two directions, probing every
    /// `interval_us`, with the daemon's detector configuration (`leocc probe`'s defaults, the
    /// given Δoutage) and `noise` on the probe stream, its draws from `seed`.
    pub fn new(up: LinkModel, down: LinkModel, interval_us: u64, threshold_us: u64, noise: ProbeNoiseModel, seed: u64) -> Detector {
        let cfg = DetectorConfig { threshold_ns: threshold_us * 1000, ..DetectorConfig::default() };
        Detector::with_config(up, down, interval_us, cfg, noise, seed)
    }

    /// [`Detector::new`] with the whole detector configuration given (`leocc probe simulate`'s
    /// options).
    pub fn with_config(up: LinkModel, down: LinkModel, interval_us: u64, cfg: DetectorConfig, noise: ProbeNoiseModel, seed: u64) -> Detector {
        Detector {
            up,
            down,
            interval_us,
            core: detect::Detector::new(cfg),
            noise: noise.noise(interval_us, seed),
            noise_model: noise,
            loss_rng: Rng::derive(seed, 1),
            share_rng: Rng::derive(seed, STREAM_OUTAGE_SHARE),
            lost_share: noise.lost_share(),
            beyond_pop_us: (0, 0),
            up_outage: None,
            down_outage: None,
            in_flight: VecDeque::new(),
            last_arrival_us: None,
            seq: 0,
            published: 0,
            latest: None,
            term_pop_rtt_us: 0,
            detections_us: Vec::new(),
            detections: Vec::new(),
            confidences: Vec::new(),
            weak: Vec::new(),
            probes_sent: 0,
            replies: 0,
            offset_us: 0,
            warm_loop: (0, 0),
            next_send_us: 0,
            false_interval_us: 0,
            next_false_us: 0,
            false_events: 0,
        }
    }

    /// The detector of a run over `trace`, as `leocc sim` and `leocc probe simulate` both build
    /// it: its probe stops at the trace's PoP and its warm-up loops whole intervals of the
    /// trace's schedule. Then `warm_up` (for [`Detector::whole_loops`] of the trace).
    pub fn on_trace(trace: &leocc_trace::Trace, interval_us: u64, cfg: DetectorConfig, noise: ProbeNoiseModel, seed: u64) -> Detector {
        use leocc_trace::Dir;
        Detector::with_config(trace.link(Dir::Up), trace.link(Dir::Down), interval_us, cfg, noise, seed)
            .with_beyond_pop(trace.beyond_pop_us())
            .with_warm_loop(&truth_once(trace), trace.duration_us().max(1))
    }

    /// `warmup_us` rounded up to whole loops of `trace`, so that the run stays on the trace's
    /// timeline.
    pub fn whole_loops(warmup_us: u64, trace: &leocc_trace::Trace) -> u64 {
        let period = trace.duration_us().max(1);
        warmup_us.div_ceil(period) * period
    }

    /// The probe stops at the PoP: `beyond_us` (up, down) of the links' one-way delays lies
    /// beyond it ([`leocc_trace::Trace::beyond_pop_us`]).
    pub fn with_beyond_pop(mut self, beyond_us: (u64, u64)) -> Detector {
        self.beyond_pop_us = beyond_us;
        self
    }

    /// Judge candidates by `scoring` (the daemon's default is the evidence scoring).
    pub fn with_scoring(mut self, scoring: detect::Scoring) -> Detector {
        let cfg = DetectorConfig { scoring, ..self.core.config().clone() };
        self.core = detect::Detector::new(cfg);
        self
    }

    /// Also publish a false event (full confidence) at the first reply after every
    /// `interval_us` (0: never), as a detector fooled by jitter would: the first at
    /// `interval_us`.
    pub fn with_false_events(mut self, interval_us: u64) -> Detector {
        self.false_interval_us = interval_us;
        self.next_false_us = interval_us;
        self
    }

    /// The warm-up loops whole intervals of the trace's reconfiguration schedule
    /// ([`schedule_loop`]; `once`: the reconfiguration times within one loop of the trace,
    /// ascending; `period_us`: the trace's loop), so that every wrap falls on the schedule and
    /// the grid the learner sees runs on without a break into the run. Looping the whole
    /// 60 s trace moved `oneweb-60s`'s 11 s grid by 5 s at each wrap: no grid was learned
    /// there and two loss runs of the probe stream became events. Without a schedule the
    /// whole trace is looped.
    pub fn with_warm_loop(mut self, once: &[u64], period_us: u64) -> Detector {
        self.warm_loop = schedule_loop(once, period_us).unwrap_or((0, period_us));
        self
    }

    /// Trace time of detector time `t`: the run's own time from the run's start on; before
    /// it, the warm-up's loop (`with_warm_loop`), counted back from the run's start so that
    /// the loop's reconfigurations keep the run's phase.
    fn link_time(&self, t: u64) -> u64 {
        if t >= self.offset_us {
            return t - self.offset_us;
        }
        let (first, span) = self.warm_loop;
        if span == 0 {
            return t; // no loop given: the link's own loop
        }
        let before = (t as i128) - (self.offset_us as i128) - (first as i128);
        first + before.rem_euclid(span as i128) as u64
    }

    /// Runs the probe stream for `warmup_us` before the run's time zero, as a daemon that was
    /// already running when the flows started: the detector's statistics (spacing, loss runs,
    /// RTT steps) and learned schedule are those of a warm daemon. The warm-up plays the loop
    /// of `with_warm_loop`; the run plays the trace from its start. Nothing from the warm-up
    /// is published to the run (a reconfiguration from before a flow is not news to it, as in
    /// the kernel) or scored.
    /// `first_send_us` is the first send's time (the probe phase).
    pub fn warm_up(mut self, warmup_us: u64, first_send_us: u64) -> Detector {
        self.offset_us = warmup_us;
        let mut t = first_send_us;
        while t < warmup_us {
            self.deliver(t, false);
            let (_, next) = self.send_at(t);
            self.tick_at(t, false);
            t = next;
        }
        self.deliver(warmup_us, false);
        self.next_send_us = t - warmup_us;
        self.probes_sent = 0;
        self.replies = 0;
        self.next_false_us = self.false_interval_us;
        self
    }

    /// When the next probe leaves (run time).
    pub fn next_send_us(&self) -> u64 {
        self.next_send_us
    }

    /// When the next reply arrives (run time), if one is on its way.
    pub fn next_arrival_us(&self) -> Option<u64> {
        self.in_flight.front().map(|p| p.0 - self.offset_us)
    }

    /// Send a probe at run time `now`. Returns when its reply arrives (to schedule), if it is
    /// not lost, and when the next probe leaves.
    /// The third value is what the detector declared right after the send: an outage it
    /// needs no closing reply to see (a silence already improbable enough).
    pub fn send_probe(&mut self, now: u64) -> (Option<u64>, u64, DetectorOutput) {
        let off = self.offset_us;
        let (at, next) = self.send_at(now + off);
        self.next_send_us = next - off;
        let out = self.tick_at(now + off, true);
        (at.map(|a| a - off), next - off, out)
    }

    /// A probe sent at detector time `t` (run time + warm-up).
    fn send_at(&mut self, t: u64) -> (Option<u64>, u64) {
        // The probe's whole flight is looked up on the trace's clock from its send time on.
        let lt = self.link_time(t);
        self.probes_sent += 1;
        self.core.on_send(t * 1000);
        let next = match self.noise.as_mut() {
            Some(n) => t + (n.next_send_step_ns() / 1000.0).round().max(1.0) as u64,
            None => t + self.interval_us,
        };
        let lost_noise = self.noise.as_mut().is_some_and(|n| n.lost());
        // An outage holds the probe at the satellite hop until it ends, unless it crossed in
        // the outage's lost share (module docs).
        let Some(leave) = Self::cross(&self.up, &mut self.up_outage, &mut self.share_rng, self.lost_share, lt) else {
            return (None, next);
        };
        if self.loss_rng.chance(self.up.loss_prob(lt)) {
            return (None, next);
        }
        let at_pop = leave + self.up.delay_us(leave).saturating_sub(self.beyond_pop_us.0);
        // The PoP answers at once, on its own queue.
        let Some(back) = Self::cross(&self.down, &mut self.down_outage, &mut self.share_rng, self.lost_share, at_pop) else {
            return (None, next);
        };
        if self.loss_rng.chance(self.down.loss_prob(at_pop)) || lost_noise {
            return (None, next);
        }
        let prop = back + self.down.delay_us(back).saturating_sub(self.beyond_pop_us.1) - lt;
        let rtt = match self.noise.as_mut() {
            Some(n) => {
                let ms = n.rtt_ms(t as i64 * 1000, prop as f64 / 1000.0).max(prop as f64 / 1000.0 * 0.3);
                (ms * 1000.0).round() as u64
            }
            None => prop,
        };
        // FIFO: a reply never overtakes the previous one (with noise, it follows it by the
        // generator's minimum gap, which bunches replies after a spike as on real paths).
        let fifo_gap = if self.noise.is_some() { (FIFO_GAP_NS / 1000) as u64 } else { 0 };
        let at = self.last_arrival_us.map_or(t + rtt, |l| (t + rtt).max(l + fifo_gap));
        self.last_arrival_us = Some(at);
        self.in_flight.push_back((at, t));
        (Some(at), next)
    }

    /// A probe (or reply) reaching the satellite hop of `link` at `t`: when it leaves the hop,
    /// or `None` when it is lost. Outside an outage it leaves at once; inside one it is held
    /// until the outage ends, except in the outage's first `lost_share` (drawn per outage),
    /// where it is lost. `cur` caches the current outage: (start, lost until).
    fn cross(link: &LinkModel, cur: &mut Option<(u64, u64)>, rng: &mut Rng, lost_share: (f64, f64), t: u64) -> Option<u64> {
        let o = link.outage_held(t);
        if !o.value {
            return Some(t);
        }
        let lost_until = match *cur {
            Some((from, until)) if from == o.from => until,
            _ => {
                let share = if lost_share.1 > lost_share.0 { rng.range(lost_share.0, lost_share.1) } else { lost_share.0 };
                let until = o.from + (share * (o.until - o.from) as f64) as u64;
                *cur = Some((o.from, until));
                until
            }
        };
        (t >= lost_until && o.until - t <= MAX_HOLD_US).then_some(o.until)
    }

    /// Deliver every reply that arrived by run time `now`; returns what happened and the next
    /// arrival (run time).
    pub fn advance(&mut self, now: u64) -> (DetectorOutput, Option<u64>) {
        let out = self.deliver(now + self.offset_us, true);
        (out, self.next_arrival_us())
    }

    /// Feeds the core every reply that arrived by detector time `t`; `publish` false during the
    /// warm-up.
    fn deliver(&mut self, t: u64, publish: bool) -> DetectorOutput {
        let mut out = DetectorOutput::default();
        let off = self.offset_us;
        while let Some(&(at, sent)) = self.in_flight.front().filter(|p| p.0 <= t) {
            self.in_flight.pop_front();
            self.replies += 1;
            let rtt = at - sent;
            self.term_pop_rtt_us = rtt;
            out.rtt_us = Some(rtt);
            self.seq = self.seq.wrapping_add(1);
            let reply = Reply { seq: self.seq, recv_mono_ns: at * 1000, recv_wall_ns: WALL_ORIGIN_NS + (at * 1000) as i64, rtt_ns: Some(rtt * 1000) };
            let mut event = None;
            for o in self.core.on_reply(reply) {
                match o {
                    Output::Reconfig(e) => event = Some(((e.start_mono_ns / 1000).saturating_sub(off), e.confidence)),
                    Output::Weak(e) if publish => self.weak.push(e),
                    _ => {}
                }
            }
            if !publish {
                continue;
            }
            let at = at - off;
            if let Some(c) = event.map(|e| e.1) {
                self.confidences.push(c);
            }
            if self.false_interval_us > 0 && at >= self.next_false_us {
                self.next_false_us = at + self.false_interval_us;
                if event.is_none() {
                    self.false_events += 1;
                    event = Some((at, detect::CONF_FULL));
                }
            }
            if let Some((start, confidence)) = event {
                self.publish(at, start, confidence, &mut out);
            }
        }
        out
    }

    /// Publishes an event detected at run time `at` whose outage started at `start`.
    fn publish(&mut self, at: u64, start: u64, confidence: u8, out: &mut DetectorOutput) {
        self.published += 1;
        self.latest = Some((at, self.published, confidence));
        self.detections_us.push(at);
        self.detections.push(Detection { start_ns: start as i64, detect_ns: at as i64 });
        out.event = Some((self.published, confidence));
    }

    /// The core judges the silence since the last reply at detector time `t`, right after a
    /// send, as the daemon's loop has it do (`detect::Detector::on_tick`); `publish` false
    /// during the warm-up.
    fn tick_at(&mut self, t: u64, publish: bool) -> DetectorOutput {
        let mut out = DetectorOutput::default();
        let off = self.offset_us;
        for o in self.core.on_tick(t * 1000) {
            if let (Output::Reconfig(e), true) = (o, publish) {
                self.confidences.push(e.confidence);
                self.publish(t - off, (e.start_mono_ns / 1000).saturating_sub(off), e.confidence, &mut out);
            }
        }
        out
    }

    /// Events published so far.
    pub fn events(&self) -> u32 {
        self.published
    }

    /// Probe interval (the mean send spacing).
    pub fn interval_us(&self) -> u64 {
        self.interval_us
    }

    /// The detection core (its counters: weak candidates, suppressed gaps).
    pub fn core(&self) -> &detect::Detector {
        &self.core
    }

    /// The detections scored against true reconfiguration times (µs, the run's clock):
    /// `leocc probe simulate`'s matching (± [`MATCH_TOLERANCE_US`] of the outage start).
    pub fn score(&self, truth_us: &[u64]) -> Score {
        let truth: Vec<i64> = truth_us.iter().map(|&t| t as i64).collect();
        score(&self.detections, &truth, MATCH_TOLERANCE_US)
    }

    /// [`Detector::score`] as a run reports it.
    pub fn detection_score(&self, truth_us: &[u64], oracle: bool) -> DetectionScore {
        let s = self.score(truth_us);
        let mut delays: Vec<i64> = s.delays_ns.clone();
        delays.sort_unstable();
        DetectionScore {
            source: if oracle { "oracle" } else { "detector" },
            probe_noise: self.noise_model,
            truth: s.truth,
            detections: s.detections,
            matched: s.matched,
            precision: s.precision,
            recall: s.recall,
            delay_p50_ms: leocc_base::metrics::quantile_nearest_rank(&delays, 0.5).map(|d| d as f64 / 1000.0),
            confidence_avg: (!self.confidences.is_empty())
                .then(|| self.confidences.iter().map(|&c| f64::from(c)).sum::<f64>() / self.confidences.len() as f64),
        }
    }
}

/// Ground truth of a trace, µs, and where it came from: its reconfiguration times, or those
/// the trace crate detects from its outages and level steps when it lists none. What the
/// detector is scored against and what its warm-up loops.
pub fn truth_of(trace: &leocc_trace::Trace) -> (Vec<u64>, &'static str) {
    if !trace.reconfigurations_us().is_empty() {
        return (trace.reconfigurations_us().to_vec(), "trace");
    }
    let dir = match trace.meta.direction {
        leocc_trace::Measured::Up => leocc_trace::Dir::Up,
        _ => leocc_trace::Dir::Down,
    };
    (leocc_trace::stats::detect_reconfigurations(trace, dir), "detected from the trace")
}

/// The trace's true reconfigurations within one loop, ascending.
pub fn truth_once(trace: &leocc_trace::Trace) -> Vec<u64> {
    let period = trace.duration_us().max(1);
    let (once, _) = truth_of(trace);
    once.into_iter().filter(|&t| t < period).collect()
}

/// The confidence a sender's core receives for an event the receiver's host carried in the
/// TCP option: the option holds a 3-bit grade, confidence → grade rounds down
/// ([`leocc_core_sys::conf_grade`], as bpf/leocc_option.h), so 0..=100 arrives as one of 0, 16,
/// 33, 50, 66, 83, 100.
pub fn conf_through_option(confidence: u8) -> u32 {
    leocc_core_sys::conf_of_grade(leocc_core_sys::conf_grade(u32::from(confidence)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_grades_round_down_and_keep_the_threshold() {
        assert_eq!(conf_through_option(100), 100);
        assert_eq!(conf_through_option(99), 83);
        assert_eq!(conf_through_option(50), 50);
        assert_eq!(conf_through_option(49), 33);
        assert_eq!(conf_through_option(0), 0);
        assert_eq!(conf_through_option(255), 100);
    }

    /// An outage holds the probes crossing the satellite hop and releases them when it ends
    /// (none lost without noise, as the data path's packets): one gap whose closing reply
    /// carries the hold as its RTT step, then the held replies in a burst.
    #[test]
    fn an_outage_holds_the_probes_and_releases_them_at_its_end() {
        use leocc_trace::model::{Capacity, DelaySeries, Loss, Span};
        let cap = Capacity::new((1..=10_000).map(|ms| ms * 1000).collect(), Some(10_000_000)).unwrap();
        let outage = [Span { start_us: 5_000_000, len_us: 100_000 }];
        let link = || LinkModel::new(&cap, DelaySeries::constant(15_000), Loss::Constant(0.0), &outage, 1000);
        let mut d = Detector::new(link(), link(), PROBE_INTERVAL_US, OUTAGE_THRESHOLD_US, ProbeNoiseModel::None, 1);
        let mut arrivals = Vec::new();
        let mut now = 0;
        while now < 6_000_000 {
            let (at, next, _) = d.send_probe(now);
            arrivals.push((now, at.expect("no probe is lost")));
            now = next;
        }
        let (mut ri_max, mut closing) = (0, (0, 0));
        for w in arrivals.windows(2) {
            if w[1].1 - w[0].1 > ri_max {
                ri_max = w[1].1 - w[0].1;
                closing = w[1];
            }
        }
        // The last reply before the gap crossed the hop at 4.995 s (back at 5.01 s); the next
        // one is held there until 5.1 s (back at 5.115 s): RI 105 ms.
        assert!((100_000..=120_000).contains(&ri_max), "RI {ri_max}");
        let rtt = closing.1 - closing.0;
        assert!(rtt >= 100_000 && closing.1 >= 5_100_000 + 15_000, "closing reply {closing:?}");
        // Held on the way back (crossing from 5.005 s) or on the way out (sent from 5.0 s):
        // back at 5.115 and 5.13 s.
        let burst = arrivals.iter().filter(|a| (closing.1..=closing.1 + 20_000).contains(&a.1)).count();
        assert!(burst >= 10, "the held probes arrive together: {burst}");
    }

    /// The warm-up's loop is whole intervals of the schedule, starting on it: the 11 s grid of
    /// a 60 s OneWeb-like trace (five intervals, not the 60 s that moved it by 5 s a wrap), and
    /// on a Starlink-like trace with an unscheduled event neither that event nor its spacing.
    #[test]
    fn the_warm_up_loops_whole_schedule_intervals() {
        assert_eq!(schedule_loop(&[1_825_000, 12_825_000, 23_825_000, 34_825_000, 45_825_000, 56_825_000], 60_000_000), Some((1_825_000, 55_000_000)));
        assert_eq!(schedule_loop(&[7_738_000, 22_738_000, 37_738_000, 52_738_000, 55_689_000], 60_000_000), Some((7_738_000, 45_000_000)));
        assert_eq!(schedule_loop(&[11_845_000, 17_380_000, 26_845_000, 41_845_000, 56_845_000], 60_000_000), Some((11_845_000, 45_000_000)));
        // No spacing that recurs (or a single event): the whole trace loops, as before.
        assert_eq!(schedule_loop(&[3_000_000, 10_000_000, 24_000_000], 60_000_000), None);
        assert_eq!(schedule_loop(&[3_000_000], 60_000_000), None);
        // Warm-up time maps back from the run's start onto the loop, keeping the grid's phase:
        // 11 s and 22 s before the run's first event are events of the loop too.
        let link = || {
            use leocc_trace::model::{Capacity, DelaySeries, Loss};
            let cap = Capacity::new((1..=60_000).map(|ms| ms * 1000).collect(), Some(60_000_000)).unwrap();
            LinkModel::new(&cap, DelaySeries::constant(15_000), Loss::Constant(0.0), &[], 1000)
        };
        let once = [1_825_000, 12_825_000, 23_825_000, 34_825_000, 45_825_000, 56_825_000];
        let mut d = Detector::new(link(), link(), PROBE_INTERVAL_US, OUTAGE_THRESHOLD_US, ProbeNoiseModel::None, 1)
            .with_warm_loop(&once, 60_000_000);
        d.offset_us = 120_000_000;
        for back in [11_000_000u64, 22_000_000, 55_000_000, 66_000_000] {
            let t = d.offset_us + 1_825_000 - back;
            assert!(once.contains(&d.link_time(t)), "{back} µs before the run's first event: trace time {}", d.link_time(t));
        }
        assert_eq!(d.link_time(d.offset_us + 5), 5, "the run plays the trace from its start");
    }

    /// A drawn path's probe stops at the PoP: its RTT is the trace's `pop_rtt_ms`, not the
    /// path's base RTT.
    #[test]
    fn the_probe_of_a_drawn_path_crosses_only_the_terminal_pop_segment() {
        use leocc_trace::Dir;
        let (p, t) = leocc_trace::draw::trace(14, 10_000, "test").unwrap();
        let pop = t.meta.pop_rtt_us.expect("drawn paths record the PoP RTT");
        assert!((20_000..=40_000).contains(&pop) && (pop as f64) < p.base_rtt_ms * 1000.0);
        let (bu, bd) = t.beyond_pop_us();
        let min = |d: Dir| t.delay(d).values_us.iter().copied().min().unwrap();
        assert_eq!(min(Dir::Up) - bu + min(Dir::Down) - bd, pop);
        let mut d = Detector::new(t.link(Dir::Up), t.link(Dir::Down), PROBE_INTERVAL_US, OUTAGE_THRESHOLD_US, ProbeNoiseModel::None, 1)
            .with_beyond_pop((bu, bd));
        let (at, _, _) = d.send_probe(0);
        let rtt = at.unwrap();
        assert!(rtt < 60_000, "probe RTT {rtt} µs, base RTT {} ms", p.base_rtt_ms);
        // Measured and generated traces have no PoP RTT: the probe crosses the whole segment.
        let mut g = t.clone();
        g.meta.pop_rtt_us = None;
        assert_eq!(g.beyond_pop_us(), (0, 0));
    }

    #[test]
    fn noise_names_parse() {
        assert_eq!(ProbeNoiseModel::parse("bentpipe"), Ok(ProbeNoiseModel::BentPipe));
        assert_eq!(ProbeNoiseModel::parse("none"), Ok(ProbeNoiseModel::None));
        assert!(ProbeNoiseModel::parse("x").unwrap_err().contains("bentpipe"));
    }

    #[test]
    fn every_noise_model_parses_back_from_its_name() {
        for m in [ProbeNoiseModel::None, ProbeNoiseModel::BentPipe, ProbeNoiseModel::Isl] {
            assert_eq!(ProbeNoiseModel::parse(m.name()), Ok(m));
            assert!(ProbeNoiseModel::NAMES.contains(m.name()));
        }
    }
}
