//! The reconfiguration detector in the simulator: the daemon's own detection core
//! ([`leocc_probe::detect`], the code `leocc probe` runs) fed with the probe stream the daemon
//! would see on the simulated path. There is no second detector: only the probe stream is
//! simulated here.
//!
//! The stream (paper §4.1.1, DESIGN.md's emulator topology): the satellite-side host sends an
//! ICMP echo to the PoP every 10 ms. Probes do not queue behind TCP data: the terminal and the
//! PoP answer ICMP on their own queue, so a probe sees only the satellite segment's propagation
//! delay in each direction (`LinkModel::delay_us`), and it is lost when it crosses the link
//! during an outage (`LinkModel::in_outage`) or by the trace's random loss. On top of that
//! comes the per-probe noise fitted to real recordings ([`leocc_probe::gen::ProbeNoise`],
//! [`ProbeNoiseModel`]): send-timer jitter and slips, RTT jitter (AR(1), spikes, upper-band
//! visits, congestion episodes) and Gilbert–Elliott background loss. Replies keep FIFO order,
//! as on the real path. The detector hears of every send (`on_send`, its self-stall check) and
//! of every reply with its RTT (`on_reply`), exactly as the daemon's loop feeds it.
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
pub const MATCH_TOLERANCE_US: i64 = leocc_probe::sim::MATCH_TOLERANCE_US;
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

    fn noise(self, interval_us: u64, seed: u64) -> Option<ProbeNoise> {
        let path = match self {
            ProbeNoiseModel::None => return None,
            ProbeNoiseModel::BentPipe => PathKind::BentPipe,
            ProbeNoiseModel::Isl => PathKind::Isl,
        };
        let g = GenConfig::new(path, seed);
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
    next_send_us: u64,
    /// A false event every this many µs (0: none), to measure what a noisy detector costs.
    false_interval_us: u64,
    next_false_us: u64,
    /// False events injected so far (included in the published events and `detections_us`).
    pub false_events: u32,
}

impl Detector {
    /// A detector on the satellite segment given by its two directions, probing every
    /// `interval_us`, with the daemon's detector configuration (`leocc probe`'s defaults, the
    /// given Δoutage) and `noise` on the probe stream, its draws from `seed`.
    pub fn new(up: LinkModel, down: LinkModel, interval_us: u64, threshold_us: u64, noise: ProbeNoiseModel, seed: u64) -> Detector {
        let cfg = DetectorConfig { threshold_ns: threshold_us * 1000, ..DetectorConfig::default() };
        Detector {
            up,
            down,
            interval_us,
            core: detect::Detector::new(cfg),
            noise: noise.noise(interval_us, seed),
            noise_model: noise,
            loss_rng: Rng::derive(seed, 1),
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
            next_send_us: 0,
            false_interval_us: 0,
            next_false_us: 0,
            false_events: 0,
        }
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

    /// Runs the probe stream for `warmup_us` before the run's time zero, as a daemon that was
    /// already running when the flows started: the detector's statistics (spacing, loss runs,
    /// RTT steps) and learned schedule are those of a warm daemon. The link is looked up at
    /// run time + `warmup_us` throughout, so give a whole number of the trace's loops to keep
    /// the run on the trace's own timeline. Nothing from the warm-up is published to the run
    /// (a reconfiguration from before a flow is not news to it, as in the kernel) or scored.
    /// `first_send_us` is the first send's time (the probe phase).
    pub fn warm_up(mut self, warmup_us: u64, first_send_us: u64) -> Detector {
        self.offset_us = warmup_us;
        let mut t = first_send_us;
        while t < warmup_us {
            self.deliver(t, false);
            let (_, next) = self.send_at(t);
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
    pub fn send_probe(&mut self, now: u64) -> (Option<u64>, u64) {
        let off = self.offset_us;
        let (at, next) = self.send_at(now + off);
        self.next_send_us = next - off;
        (at.map(|a| a - off), next - off)
    }

    /// A probe sent at detector time `t` (run time + warm-up).
    fn send_at(&mut self, t: u64) -> (Option<u64>, u64) {
        self.probes_sent += 1;
        self.core.on_send(t * 1000);
        let next = match self.noise.as_mut() {
            Some(n) => t + (n.next_send_step_ns() / 1000.0).round().max(1.0) as u64,
            None => t + self.interval_us,
        };
        let lost_noise = self.noise.as_mut().is_some_and(|n| n.lost());
        let lost_up = self.up.in_outage(t) || self.loss_rng.chance(self.up.loss_prob(t));
        if lost_up {
            return (None, next);
        }
        let at_pop = t + self.up.delay_us(t);
        // The PoP answers at once, on its own queue.
        if self.down.in_outage(at_pop) || self.loss_rng.chance(self.down.loss_prob(at_pop)) || lost_noise {
            return (None, next);
        }
        let prop = at_pop + self.down.delay_us(at_pop) - t;
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
                self.published += 1;
                self.latest = Some((at, self.published, confidence));
                self.detections_us.push(at);
                self.detections.push(Detection { start_ns: start as i64, detect_ns: at as i64 });
                out.event = Some((self.published, confidence));
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
            delay_p50_ms: leocc_trace::metrics::quantile_nearest_rank(&delays, 0.5).map(|d| d as f64 / 1000.0),
            confidence_avg: (!self.confidences.is_empty())
                .then(|| self.confidences.iter().map(|&c| f64::from(c)).sum::<f64>() / self.confidences.len() as f64),
        }
    }
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

    #[test]
    fn noise_names_parse() {
        assert_eq!(ProbeNoiseModel::parse("bentpipe"), Ok(ProbeNoiseModel::BentPipe));
        assert_eq!(ProbeNoiseModel::parse("none"), Ok(ProbeNoiseModel::None));
        assert!(ProbeNoiseModel::parse("x").unwrap_err().contains("bentpipe"));
    }
}
