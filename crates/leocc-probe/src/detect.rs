//! The detection core: a pure state machine fed with probe sends and validated replies.
//!
//! Model (seed §4.1.1). A reconfiguration of the satellite link causes a short outage (about
//! 45–120 ms on bent-pipe paths, longer over inter-satellite links) in which ICMP echoes to the
//! PoP are lost or held back. The detector therefore watches the *response interval* RI, the
//! time between two consecutive valid replies, and declares a reconfiguration when
//! RI > Δoutage (45 ms by default). The outage is estimated to have started when the last reply
//! before the gap arrived (reply time − RI). RI rather than RTT spikes, because an outage may
//! swallow every echo and leave no RTT sample at all.
//!
//! Two things can stretch RI without any outage, and both are filtered here:
//! - our own sending paused (the daemon was descheduled, or it backed off because the PoP was
//!   unreachable): if the probes that could have produced replies inside the gap were not sent
//!   regularly, the gap is *suppressed* unless what remains of it after removing our own pause
//!   still exceeds Δoutage (an outage that overlaps a short stall is still an event);
//! - a reply arriving twice, or late from the previous outage: callers pass only validated,
//!   first-time replies (see `icmp::Outstanding`), so the detector never sees them.
//!
//! The terminal–PoP RTT (seed §4.3, bottleneck discrimination) is tracked alongside: the latest
//! sample, an EWMA smoothed RTT with gain 1/8 (RFC 6298 srtt), and a windowed minimum that also
//! restarts at each detected reconfiguration, because the path (and so the base RTT) changes
//! there (seed §4.1.2).
//!
//! Time: every interval is computed from CLOCK_MONOTONIC nanoseconds. The wall clock is used
//! only by the optional schedule prior (Starlink reconfigures at seconds 12/27/42/57 of every
//! minute): each reply also carries its wall time, the detector tracks the wall−monotonic offset
//! and treats a sudden change of that offset as a wall-clock jump, after which slot accounting
//! restarts instead of reporting bogus misses (and a schedule seed is placed again).

use std::collections::VecDeque;

use serde::Serialize;

use crate::learn::ScheduleLearner;
use crate::schedule::Schedule;
use crate::tail::{LossRuns, TailHistogram};

/// Δoutage, the default RI threshold in ns: 45 ms (seed §4.1.1 and §5.1, the authors' value).
pub const DEFAULT_THRESHOLD_NS: u64 = 45_000_000;
/// Window of the minimum-RTT filter in ns: 10 s, as BBR's min_rtt filter.
pub const DEFAULT_RTT_MIN_WINDOW_NS: u64 = 10_000_000_000;
/// A change of the wall−monotonic offset larger than this (ns) is a wall-clock jump, not drift:
/// NTP slews at most 500 ppm, i.e. 0.5 ms per second, far below 100 ms between two replies.
pub const WALL_JUMP_NS: i64 = 100_000_000;
/// Sends kept for the self-stall check: 512 probes = 5 s at the 10 ms probe interval.
const SEND_HISTORY: usize = 512;
/// A gap between our own consecutive sends larger than this share of Δoutage means the probe
/// stream itself paused, so a long RI over that stretch is weaker evidence of an outage (see
/// `explained_by_stall`).
const SELF_STALL_FRACTION: (u64, u64) = (1, 2);
/// EWMA gain of the smoothed RTT as a shift: srtt += (rtt − srtt) / 8 (RFC 6298).
const SRTT_GAIN_SHIFT: u32 = 3;
/// The full confidence of an event (the core's LEOCC_CONF_FULL).
pub const CONF_FULL: u8 = 100;
/// Default of [`DetectorConfig::min_confidence`]: the core's `rcf_min_confidence`.
pub const DEFAULT_MIN_CONFIDENCE: u8 = 50;
/// Default of [`DetectorConfig::report_confidence`]: weaker candidates are not even logged.
pub const DEFAULT_REPORT_CONFIDENCE: u8 = 10;
/// Events at least this confident by their evidence alone (under the neutral prior) shape the
/// learned schedule: the events the core would act on without any schedule.
pub const LEARN_CONFIDENCE: u8 = 5;
/// Intervals both histograms must hold before they are trusted: 256 intervals (2.5–5 s).
const WARMUP_SAMPLES: f64 = 256.0;
/// Half-life of the interval statistics in intervals: 4096 (40–80 s of probing): long enough
/// for 10⁻³ tails to hold a few samples, short enough to follow a change of path or load.
const STATS_HALF_LIFE: u32 = 4096;
/// After an event, another outage within this long is improbable (the link just changed; the
/// TCP option applies the same 1 s limit): candidates get the off-grid prior.
const AFTERMATH_NS: u64 = 1_000_000_000;
/// EWMA gain of the send-spacing estimate as a shift (1/16).
const SPACING_GAIN_SHIFT: u32 = 4;
/// A send gap above this multiple of the spacing estimate is a loss, not a spacing sample.
const SPACING_OUTLIER: u64 = 2;
/// A send gap counts k lost probes from (k + 1 + 3/4) spacings on, not from k + 1/2: send
/// timers jitter (sd ~3 ms on the real ISL recording, slips of half a spacing on the bent-pipe
/// ones), and a late send must not pass for a lost probe.
const LOSS_FRACTION: f64 = 0.75;
/// Range of outage lengths, ns: 45 ms (bent pipe, the paper's Δoutage) to 800 ms (over
/// inter-satellite links: 600–750 ms). Under the outage hypothesis the gap is spread evenly
/// over it, so a gap measured to one probe spacing has likelihood spacing / range. That point
/// likelihood weighs a gap off the schedule; inside a predicted slot's window the gap is
/// weighed by its tail instead (`score`).
const OUTAGE_RANGE_NS: f64 = 755e6;
/// During warm-up (no statistics yet) only an RI above this multiple of the threshold is an
/// event: twice Δoutage is neither one lost probe nor the jitter of a normal path.
const WARMUP_THRESHOLD_FACTOR: u64 = 2;
/// Confidence of a warm-up candidate below that.
const WARMUP_WEAK_CONFIDENCE: u8 = 25;

/// How candidates (RI above the threshold) are judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scoring {
    /// The paper's rule: every candidate is an event with full confidence.
    Threshold,
    /// The whole signature of the gap against the stream's own statistics and learned schedule.
    Evidence,
}

/// Tunables of the detector.
#[derive(Clone, Debug)]
pub struct DetectorConfig {
    /// Δoutage in ns: an RI strictly above it is a candidate (with [`Scoring::Threshold`], a
    /// reconfiguration).
    pub threshold_ns: u64,
    /// How candidates are judged.
    pub scoring: Scoring,
    /// Candidates at least this confident (0..100) are reconfigurations; weaker ones are
    /// reported as [`Output::Weak`].
    pub min_confidence: u8,
    /// Candidates below this confidence are not reported at all.
    pub report_confidence: u8,
    /// Window of the minimum-RTT filter in ns.
    pub rtt_min_window_ns: u64,
    /// Detections closer than this (ns) to the previous detection are merged into it
    /// (0 = every outlier is an event, as in the paper).
    pub holdoff_ns: u64,
    /// Optional wall-clock schedule prior used to label events and flag missed slots.
    pub schedule: Option<Schedule>,
    /// Start the learned schedule from `schedule`'s grid instead of learning it from three
    /// confident events (the link is known to follow it; the learner drops it when its slots
    /// stay silent). Needs evenly spaced slots.
    pub seed_schedule: bool,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            threshold_ns: DEFAULT_THRESHOLD_NS,
            scoring: Scoring::Evidence,
            min_confidence: DEFAULT_MIN_CONFIDENCE,
            report_confidence: DEFAULT_REPORT_CONFIDENCE,
            rtt_min_window_ns: DEFAULT_RTT_MIN_WINDOW_NS,
            holdoff_ns: 0,
            schedule: None,
            seed_schedule: false,
        }
    }
}

/// One validated echo reply, as the I/O layer (or a replayed log) hands it to the detector.
#[derive(Clone, Copy, Debug)]
pub struct Reply {
    /// ICMP sequence number of the echo (for logs only; validation happened upstream).
    pub seq: u16,
    /// CLOCK_MONOTONIC ns at which the reply was received.
    pub recv_mono_ns: u64,
    /// Wall clock (Unix ns) at the same instant; used only for the schedule prior.
    pub recv_wall_ns: i64,
    /// Round-trip time of this echo in ns, if known.
    pub rtt_ns: Option<u64>,
}

/// How an event relates to the schedule prior.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Within the tolerance of a scheduled slot.
    Periodic,
    /// Outside every scheduled slot (e.g. a satellite handover).
    Aperiodic,
    /// No schedule prior configured.
    Unlabelled,
}

impl Kind {
    /// Lower-case name used in logs and state files.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Periodic => "periodic",
            Kind::Aperiodic => "aperiodic",
            Kind::Unlabelled => "unlabelled",
        }
    }
}

/// Posterior confidence (0..=100) from the prior probability of an outage in the interval and
/// the probability of so unusual a gap in a normal interval (module docs).
pub fn confidence(prior: f64, p_normal: f64) -> u8 {
    let prior = prior.clamp(0.0, 0.999_999);
    let odds = prior / (1.0 - prior) / p_normal.max(f64::MIN_POSITIVE);
    (100.0 * odds / (1.0 + odds)).floor().clamp(0.0, 100.0) as u8
}

/// Terminal–PoP RTT statistics in ns (0 = no sample yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RttStats {
    /// Latest RTT sample.
    pub latest_ns: u64,
    /// EWMA-smoothed RTT (gain 1/8).
    pub srtt_ns: u64,
    /// Minimum over the window, restarted at each reconfiguration.
    pub min_ns: u64,
}

/// A detected reconfiguration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ReconfigEvent {
    /// Event counter, 1 for the first event of this detector.
    pub seq: u64,
    /// Monotonic ns at which the event was detected (the reply that closed the gap).
    pub detect_mono_ns: u64,
    /// Monotonic ns of the estimated outage start (detection time − RI).
    pub start_mono_ns: u64,
    /// Wall clock (Unix ns) of the estimated outage start.
    pub start_wall_ns: i64,
    /// The response interval that triggered the event, ns.
    pub ri_ns: u64,
    /// Label from the schedule prior.
    pub kind: Kind,
    /// Signed distance in ns from the outage start to the nearest scheduled slot (if a schedule).
    pub slot_offset_ns: Option<i64>,
    /// ICMP sequence number of the reply that closed the gap.
    pub reply_seq: u16,
    /// RTT statistics right after the event (the minimum has been restarted, so it holds only
    /// the closing reply).
    pub rtt: RttStats,
    /// How sure the detector is, 0..=100 ([`CONF_FULL`]).
    pub confidence: u8,
    /// The send gap S across the interval, ns (one spacing plus the lost probes).
    pub send_gap_ns: u64,
    /// The RTT step Δ of the closing reply over the previous one, ns.
    pub rtt_step_ns: i64,
    /// Probability of a gap at least this unusual in a normal interval (1 without statistics).
    pub p_normal: f64,
    /// Prior probability that an outage started in this interval (0 without scoring).
    pub prior: f64,
    /// Period of the learned schedule, ns, if one is learned.
    pub grid_period_ns: Option<i64>,
    /// Distance of the outage start from the nearest learned slot, ns.
    pub grid_offset_ns: Option<i64>,
}

/// What the detector reports after a reply.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Output {
    /// A reconfiguration (confidence at or above `min_confidence`).
    Reconfig(ReconfigEvent),
    /// A candidate judged less likely to be a reconfiguration than `min_confidence`; not
    /// acted on, and its interval counts as a normal one.
    Weak(ReconfigEvent),
    /// A scheduled slot passed while replies were flowing, and no event was seen near it.
    MissedSlot {
        /// Wall clock (Unix ns) of the slot.
        slot_wall_ns: i64,
    },
    /// An RI above the threshold that our own send pauses explain; not an event.
    Suppressed {
        /// The response interval, ns.
        ri_ns: u64,
        /// The longest pause between our own sends that covered it, ns.
        send_gap_ns: u64,
    },
    /// The wall clock moved by this much (ns) relative to the monotonic clock.
    WallClockJump {
        /// Size of the jump, ns (positive = wall clock moved forward).
        jump_ns: i64,
    },
}

/// Counters for status displays.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Counters {
    /// Replies fed in.
    pub replies: u64,
    /// Reconfigurations declared.
    pub events: u64,
    /// Candidates reported as weak (below `min_confidence`).
    pub weak: u64,
    /// Outliers merged into the previous event by the hold-off.
    pub merged: u64,
    /// Outliers suppressed because our own sending paused.
    pub suppressed: u64,
    /// Scheduled slots with no event while replies flowed.
    pub missed_slots: u64,
    /// Wall-clock jumps seen.
    pub wall_jumps: u64,
}

/// The detector state machine.
#[derive(Debug)]
pub struct Detector {
    cfg: DetectorConfig,
    last_reply_mono: Option<u64>,
    last_event_detect_mono: Option<u64>,
    last_event_start_wall: Option<i64>,
    wall_offset: Option<i64>,
    sends: VecDeque<u64>,
    rtt: RttStats,
    rtt_min_filter: VecDeque<(u64, u64)>,
    covered_since_wall: Option<i64>,
    next_slot_wall: Option<i64>,
    counters: Counters,
    last_rtt: Option<u64>,
    /// Sequence number of the last reply (for the record of an event declared by `on_tick`).
    last_seq: u16,
    loss_runs: LossRuns,
    rtt_steps: TailHistogram,
    /// The last reply before a silence already declared an event by [`Detector::on_tick`]:
    /// the reply that ends the silence closes that event's outage.
    declared_silence: Option<u64>,
    spacing_ns: u64,
    learner: ScheduleLearner,
    monitored_since: u64,
}

/// How the stream statistics take an interval between two replies ([`Detector::on_reply`]).
enum Interval {
    /// A normal interval: learned as it is.
    Normal,
    /// A weak candidate whose evidence alone makes it a likely outage: learned with its RTT
    /// step censored.
    LikelyOutage,
    /// An outage (event, merge or our own stall): not learned.
    Outage,
}

impl Detector {
    /// A detector with the given configuration.
    pub fn new(cfg: DetectorConfig) -> Self {
        Detector {
            cfg,
            last_reply_mono: None,
            last_event_detect_mono: None,
            last_event_start_wall: None,
            wall_offset: None,
            sends: VecDeque::with_capacity(SEND_HISTORY),
            rtt: RttStats::default(),
            rtt_min_filter: VecDeque::new(),
            covered_since_wall: None,
            next_slot_wall: None,
            counters: Counters::default(),
            last_rtt: None,
            last_seq: 0,
            loss_runs: LossRuns::new(STATS_HALF_LIFE),
            rtt_steps: TailHistogram::new(STATS_HALF_LIFE),
            declared_silence: None,
            spacing_ns: 0,
            learner: ScheduleLearner::new(),
            monitored_since: 0,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &DetectorConfig {
        &self.cfg
    }

    /// Current RTT statistics.
    pub fn rtt(&self) -> RttStats {
        self.rtt
    }

    /// Event and reply counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The schedule learned from the stream, if any.
    pub fn learned_grid(&self) -> Option<crate::learn::Grid> {
        self.learner.grid()
    }

    /// Whether the schedule in use is the configured one's seed, not yet disproved by silent
    /// slots (`DetectorConfig::seed_schedule`).
    pub fn schedule_seeded(&self) -> bool {
        self.learner.is_seeded()
    }

    /// The current estimate of the probe spacing, ns (0 before two replies).
    pub fn spacing_ns(&self) -> u64 {
        self.spacing_ns
    }

    /// Monotonic ns of the latest valid reply.
    pub fn last_reply_mono_ns(&self) -> Option<u64> {
        self.last_reply_mono
    }

    /// Records that a probe was sent at `t_mono_ns`. Optional: a detector that never hears of
    /// sends (offline replay) skips the self-stall check.
    pub fn on_send(&mut self, t_mono_ns: u64) {
        if self.sends.len() == SEND_HISTORY {
            self.sends.pop_front();
        }
        self.sends.push_back(t_mono_ns);
    }

    /// Forgets the reply history, e.g. when the PoP changed: the next reply starts afresh and
    /// the gap before it is not an RI of the new path.
    pub fn reset_path(&mut self) {
        self.last_reply_mono = None;
        self.declared_silence = None;
        self.last_rtt = None;
        self.covered_since_wall = None;
        self.rtt = RttStats::default();
        self.rtt_min_filter.clear();
    }

    /// Feeds one validated reply; returns what it revealed (usually nothing).
    pub fn on_reply(&mut self, r: Reply) -> Vec<Output> {
        let mut out = Vec::new();
        self.counters.replies += 1;
        self.track_wall_offset(&r, &mut out);
        let prev = self.last_reply_mono.replace(r.recv_mono_ns);
        if prev.is_none() {
            self.place_seed(&r);
        }
        let prev_rtt = std::mem::replace(&mut self.last_rtt, r.rtt_ns);
        self.last_seq = r.seq;
        self.update_rtt(&r);
        if let Some(prev) = prev {
            let ri = r.recv_mono_ns.saturating_sub(prev);
            // RI = S + Δ: the send gap and the RTT step (module docs).
            let step = match (r.rtt_ns, prev_rtt) {
                (Some(a), Some(b)) => a as i64 - b as i64,
                _ => 0,
            };
            let gap = (ri as i64 - step).max(0) as u64;
            let verdict = if self.declared_silence.take() == Some(prev) {
                self.close_declared_silence(&r, prev, ri, gap, step)
            } else if ri <= self.cfg.threshold_ns {
                Interval::Normal
            } else {
                self.judge_outlier(&r, prev, ri, gap, step, &mut out)
            };
            match verdict {
                Interval::Outage => {}
                Interval::Normal => self.learn_interval(gap, step),
                // Learned with its RTT step censored at the tail's threshold: it counts as a
                // large step, but its size (an outage's, if it was one) does not stretch the
                // tail that judges the next outages.
                Interval::LikelyOutage => self.learn_interval(gap, step.min(self.rtt_steps.tail_threshold() as i64)),
            }
            if ri > crate::daemon::DEFAULT_UNREACHABLE_AFTER_NS {
                // A silence this long is not monitoring: slots inside it are neither hits nor misses.
                self.monitored_since = r.recv_mono_ns;
            }
        } else {
            self.monitored_since = r.recv_mono_ns;
        }
        self.learner.on_time(r.recv_mono_ns as i64, self.monitored_since as i64);
        if self.covered_since_wall.is_none() {
            self.covered_since_wall = Some(r.recv_wall_ns);
        }
        self.check_slots(r.recv_wall_ns, &mut out);
        out
    }

    /// Probes lost in an interval whose send gap is `gap`: the gap is (k + 1) spacings.
    fn lost_probes(&self, gap: u64) -> u64 {
        if self.spacing_ns == 0 {
            return 0;
        }
        ((gap as f64 / self.spacing_ns as f64 + 1.0 - LOSS_FRACTION).floor() as u64).saturating_sub(1)
    }

    /// Adds a normal interval to the statistics (lost probes, RTT step, spacing).
    fn learn_interval(&mut self, gap: u64, step: i64) {
        self.loss_runs.add(self.lost_probes(gap));
        self.rtt_steps.add(step.max(0) as u64);
        if self.spacing_ns == 0 {
            self.spacing_ns = gap.max(1);
        } else if gap < self.spacing_ns * SPACING_OUTLIER {
            let s = self.spacing_ns as i64;
            self.spacing_ns = (s + ((gap as i64 - s) >> SPACING_GAIN_SHIFT)).max(1) as u64;
        }
    }

    /// Confidence (0..=100) that the candidate interval is an outage, with its evidence:
    /// (confidence, P(normal), prior, confidence under the neutral prior). See the module docs.
    fn score(&self, start_mono: u64, ri: u64, gap: u64, step: i64) -> (u8, f64, f64, u8) {
        if self.cfg.scoring == Scoring::Threshold {
            return (CONF_FULL, 1.0, 0.0, CONF_FULL);
        }
        let pd = self.rtt_steps.tail(step.max(0) as u64);
        let Some(pd) = pd.filter(|_| self.rtt_steps.weight() >= WARMUP_SAMPLES) else {
            let c = if ri > self.cfg.threshold_ns * WARMUP_THRESHOLD_FACTOR { DEFAULT_MIN_CONFIDENCE } else { WARMUP_WEAK_CONFIDENCE };
            return (c, 1.0, 0.0, 0);
        };
        let p_normal = self.p_normal(self.lost_probes(gap), pd);
        let (confidence_now, prior) = self.judge(start_mono, p_normal);
        // Learning keeps the point likelihood: the schedule must not confirm itself.
        let neutral = self.spacing_ns.max(1) as f64 / crate::learn::BASE_EVENT_PERIOD_NS;
        (confidence_now, p_normal, prior, confidence(neutral, p_normal / self.point_likelihood()))
    }

    /// The confidence that a gap opened at `start_mono` with P(normal) `p_normal` is an outage,
    /// and the prior it was judged with. Off the schedule the gap is weighed by its point
    /// likelihood under "outage": P(normal) is a p-value, and against the thousands of normal
    /// intervals a minute only that keeps false events rare. Inside a predicted slot's window
    /// the question is which of its few intervals holds the slot's outage, and an outage makes
    /// a gap at least this unusual: the tail under "outage" is 1. Weighed by the point
    /// likelihood there, short bent-pipe holds (P(normal) 0.002-0.02) stayed weak in the window
    /// (docs/detector.md).
    fn judge(&self, start_mono: u64, p_normal: f64) -> (u8, f64) {
        let (prior, in_window) = self.prior_at(start_mono);
        let likelihood = if in_window { 1.0 } else { self.point_likelihood() };
        (confidence(prior, p_normal / likelihood), prior)
    }

    /// Likelihood of a gap measured to one probe spacing under "outage": spacing over the
    /// 45-800 ms range of outage lengths ([`OUTAGE_RANGE_NS`]).
    fn point_likelihood(&self) -> f64 {
        (self.spacing_ns.max(1) as f64 / OUTAGE_RANGE_NS).min(1.0)
    }

    /// P(normal) of a gap with `lost` probes lost and an RTT step whose tail is `pd`. Two tests
    /// of one gap: the product test (both components moderately unusual) and the stronger
    /// single component with a Bonferroni factor of 2 (the other normal).
    fn p_normal(&self, lost: u64, pd: f64) -> f64 {
        let ps = self.loss_runs.tail(lost);
        let t = (ps * pd).clamp(f64::MIN_POSITIVE, 1.0);
        (t * (1.0 - t.ln())).min(2.0 * ps.min(pd)).min(1.0)
    }

    /// P(normal) of a silence of `silence` ns since the last reply, whatever the reply that
    /// ends it shows: the largest P(normal) of any split of the silence into lost probes and a
    /// held one (j probes lost, the next one held for the rest). `None` during warm-up.
    fn silence_p_normal(&self, silence: u64) -> Option<f64> {
        if self.rtt_steps.weight() < WARMUP_SAMPLES || self.spacing_ns == 0 {
            return None;
        }
        let most_lost = self.lost_probes(silence);
        let mut p = 0.0f64;
        for lost in 0..=most_lost {
            let held = silence.saturating_sub((lost + 1) * self.spacing_ns);
            p = p.max(self.p_normal(lost, self.rtt_steps.tail(held)?));
        }
        Some(p)
    }

    /// The prior of an outage starting in the probe interval from `start_mono`, and whether
    /// it lies in a predicted slot's window.
    fn prior_at(&self, start_mono: u64) -> (f64, bool) {
        let spacing = self.spacing_ns.max(1) as f64;
        if self.in_aftermath(start_mono) {
            return (spacing / crate::learn::MIN_EVENT_PERIOD_NS, false);
        }
        let pr = self.learner.prior(start_mono as i64, spacing);
        (pr.p, pr.in_window)
    }

    /// Judges the silence since the last reply at `now` (the daemon calls it after every probe
    /// it sends). An outage is a silence before the reply that ends it: a bent pipe holds the
    /// probes for 45-140 ms, an inter-satellite path loses them for 600-750 ms. When the
    /// silence is already an event however the reply that ends it splits it into lost probes
    /// and a held one (its largest P(normal) judged as [`Detector::on_reply`] would), it is an
    /// event now, not at that reply: on an inter-satellite path most of a second earlier. The
    /// reply that ends it closes the event (no second judgement). Nothing during warm-up,
    /// under the threshold scoring, within `--holdoff-ms` of the last event, or while our own
    /// sends paused.
    pub fn on_tick(&mut self, now: u64) -> Vec<Output> {
        let mut out = Vec::new();
        let Some(prev) = self.last_reply_mono else { return out };
        let silence = now.saturating_sub(prev);
        if self.cfg.scoring != Scoring::Evidence
            || silence <= self.cfg.threshold_ns
            || self.declared_silence == Some(prev)
            || self.last_event_detect_mono.is_some_and(|d| now.saturating_sub(d) < self.cfg.holdoff_ns)
            || self.same_outage_other_direction(prev)
            || self.explained_by_stall(silence, self.longest_send_gap(prev, now))
        {
            return out;
        }
        let Some(p_normal) = self.silence_p_normal(silence) else { return out };
        let (conf, prior) = self.judge(prev, p_normal);
        if conf < self.cfg.min_confidence {
            return out;
        }
        let last = Reply { seq: self.last_seq, recv_mono_ns: now, recv_wall_ns: now as i64 + self.wall_offset.unwrap_or(0), rtt_ns: self.last_rtt };
        self.counters.events += 1;
        let ev = self.event(&last, prev, silence, conf, silence, 0, p_normal, prior);
        self.last_event_detect_mono = Some(now);
        self.last_event_start_wall = Some(ev.start_wall_ns);
        self.declared_silence = Some(prev);
        // A candidate (for the fit's busy slots) whose slot is used now; whether the event
        // shapes the schedule waits for the whole gap.
        self.learner.on_candidate(prev as i64);
        self.learner.on_event(prev as i64, false);
        out.push(Output::Reconfig(ev));
        out
    }

    /// The reply that ends a silence [`Detector::on_tick`] declared: the event's outage is
    /// over. As at an event judged from its closing reply, the path's minimum RTT restarts here,
    /// the event's other direction and aftermath count from here, and the whole gap, now
    /// known, shapes the schedule if its evidence alone is confident (the silence's own,
    /// judged before its end, is weaker).
    fn close_declared_silence(&mut self, r: &Reply, prev: u64, ri: u64, gap: u64, step: i64) -> Interval {
        let (_, _, _, evidence_confidence) = self.score(prev, ri, gap, step);
        if evidence_confidence >= LEARN_CONFIDENCE {
            self.learner.learn(prev as i64);
        }
        self.rtt_min_filter.clear();
        if let Some(rtt) = r.rtt_ns {
            self.rtt_min_filter.push_back((r.recv_mono_ns, rtt));
            self.rtt.min_ns = rtt;
        }
        self.last_event_detect_mono = Some(r.recv_mono_ns);
        Interval::Outage
    }

    /// Whether a gap that opened at `start_mono` lies in the aftermath of the latest event
    /// (within [`AFTERMATH_NS`] of its detection).
    fn in_aftermath(&self, start_mono: u64) -> bool {
        self.last_event_detect_mono.is_some_and(|d| start_mono < d + AFTERMATH_NS)
    }

    /// Decides what a long RI is: an event, a weak candidate, a merge into the previous event,
    /// or our own stall; returns how the stream statistics take it.
    fn judge_outlier(&mut self, r: &Reply, prev: u64, ri: u64, gap: u64, step: i64, out: &mut Vec<Output>) -> Interval {
        let stall = self.longest_send_gap(prev, r.recv_mono_ns);
        if self.explained_by_stall(ri, stall) {
            self.counters.suppressed += 1;
            // The gap is not monitored: slots inside it are neither hits nor misses.
            self.covered_since_wall = Some(r.recv_wall_ns);
            self.monitored_since = r.recv_mono_ns;
            out.push(Output::Suppressed { ri_ns: ri, send_gap_ns: stall });
            return Interval::Outage;
        }
        if self.same_outage_other_direction(prev) {
            self.counters.merged += 1;
            return Interval::Outage;
        }
        let (confidence, p_normal, prior, evidence_confidence) = self.score(prev, ri, gap, step);
        if self.cfg.scoring == Scoring::Evidence {
            self.learner.on_candidate(prev as i64);
        }
        if confidence < self.cfg.min_confidence {
            // The record shows the schedule the candidate was judged with, before it is learned.
            if confidence >= self.cfg.report_confidence {
                self.counters.weak += 1;
                let ev = self.event(r, prev, ri, confidence, gap, step, p_normal, prior);
                out.push(Output::Weak(ev));
            }
            if evidence_confidence >= LEARN_CONFIDENCE && self.cfg.scoring == Scoring::Evidence {
                // One reconfiguration is one time in the schedule: a candidate in the aftermath
                // of an event (the link settling after it) is not another one, and learning it
                // would pull the grid off the event's slot.
                if !self.in_aftermath(prev) {
                    self.learner.learn(prev as i64);
                }
                return Interval::LikelyOutage;
            }
            return Interval::Normal;
        }
        if let Some(last) = self.last_event_detect_mono {
            if r.recv_mono_ns.saturating_sub(last) < self.cfg.holdoff_ns {
                self.counters.merged += 1;
                return Interval::Outage;
            }
        }
        // The path changed: the old minimum no longer bounds the new base RTT.
        self.rtt_min_filter.clear();
        if let Some(rtt) = r.rtt_ns {
            self.rtt_min_filter.push_back((r.recv_mono_ns, rtt));
            self.rtt.min_ns = rtt;
        }
        self.counters.events += 1;
        let ev = self.event(r, prev, ri, confidence, gap, step, p_normal, prior);
        self.last_event_detect_mono = Some(r.recv_mono_ns);
        self.last_event_start_wall = Some(ev.start_wall_ns);
        // Only the evidence may shape the schedule (judged under the neutral prior): an event
        // made confident by the schedule itself would only reinforce it.
        self.learner.on_event(prev as i64, evidence_confidence >= LEARN_CONFIDENCE && self.cfg.scoring == Scoring::Evidence);
        out.push(Output::Reconfig(ev));
        Interval::Outage
    }

    /// Whether a gap that opened at `prev` is the event's own outage seen a second time. An
    /// outage interrupts both directions: replies on their way back during it are lost or held,
    /// and so are the probes sent during it, whose replies were due one RTT later. When the RTT
    /// exceeds the outage the two interruptions reach us as two gaps, the second opening within
    /// one RTT of the reply that closed the first (with RTT up + down and outage D, after up − D).
    /// That second gap is neither a new reconfiguration nor a normal interval (learning it as one
    /// would teach the stream statistics that outage-sized gaps are normal): it is merged into
    /// the event. Only under the evidence scoring (the paper's rule declares every outlier).
    fn same_outage_other_direction(&self, prev: u64) -> bool {
        self.cfg.scoring == Scoring::Evidence
            && self.last_event_detect_mono.is_some_and(|d| prev >= d && prev < d + self.rtt.srtt_ns)
    }

    /// The event record of a candidate whose outage started at `prev` (the last reply before
    /// the gap).
    #[allow(clippy::too_many_arguments)]
    fn event(&self, r: &Reply, prev: u64, ri: u64, confidence: u8, gap: u64, step: i64, p_normal: f64, prior: f64) -> ReconfigEvent {
        let offset = self.wall_offset.unwrap_or(0);
        let start_mono = prev;
        let start_wall = start_mono as i64 + offset;
        let grid = self.learner.grid();
        let (kind, slot_offset_ns) = match (&self.cfg.schedule, grid) {
            (Some(s), _) => {
                let d = s.offset_to_nearest_slot(start_wall);
                let kind = if d.unsigned_abs() <= s.tolerance_ns { Kind::Periodic } else { Kind::Aperiodic };
                (kind, Some(d))
            }
            (None, Some(g)) => {
                let d = g.offset(start_mono as i64).0;
                (if d.abs() <= g.window_ns { Kind::Periodic } else { Kind::Aperiodic }, None)
            }
            (None, None) => (Kind::Unlabelled, None),
        };
        ReconfigEvent {
            seq: self.counters.events + self.counters.weak,
            detect_mono_ns: r.recv_mono_ns,
            start_mono_ns: start_mono,
            start_wall_ns: start_wall,
            ri_ns: ri,
            kind,
            slot_offset_ns,
            reply_seq: r.seq,
            rtt: self.rtt,
            confidence,
            send_gap_ns: gap,
            rtt_step_ns: step,
            p_normal,
            prior,
            grid_period_ns: grid.map(|g| g.period_ns),
            grid_offset_ns: grid.map(|g| g.offset(start_mono as i64).0),
        }
    }

    /// Whether our own send pause `stall` explains the long interval `ri`. A short pause
    /// (at most Δoutage/2) explains nothing: that is the normal probe spacing. A pause longer
    /// than Δoutage makes the stream too sparse to tell an outage from silence. In between (the
    /// daemon was descheduled for a few tens of ms), the interval counts only if what remains
    /// after removing the pause still exceeds Δoutage, so an outage that overlaps a short
    /// stall is still detected.
    fn explained_by_stall(&self, ri: u64, stall: u64) -> bool {
        let t = self.cfg.threshold_ns;
        let normal = t * SELF_STALL_FRACTION.0 / SELF_STALL_FRACTION.1;
        if stall <= normal {
            return false;
        }
        stall > t || ri.saturating_sub(stall) <= t
    }

    /// Longest pause of our own probe stream that could explain the gap (prev, now], in ns.
    /// Replies in the gap would have come from probes sent between (prev − srtt) and
    /// (now − min RTT); the window edges count as boundaries so that "no send at all" is a
    /// pause too. Zero when sends are not being recorded (offline replay).
    fn longest_send_gap(&self, prev: u64, now: u64) -> u64 {
        if self.sends.is_empty() {
            return 0;
        }
        let from = prev.saturating_sub(self.rtt.srtt_ns);
        let to = now.saturating_sub(self.rtt.min_ns).max(from);
        let mut last = from;
        let mut worst = 0;
        for &t in self.sends.iter().filter(|&&t| t > from && t <= to) {
            worst = worst.max(t - last);
            last = t;
        }
        worst.max(to - last)
    }

    fn update_rtt(&mut self, r: &Reply) {
        let Some(rtt) = r.rtt_ns else { return };
        self.rtt.latest_ns = rtt;
        self.rtt.srtt_ns = if self.rtt.srtt_ns == 0 {
            rtt
        } else {
            let s = self.rtt.srtt_ns as i64;
            (s + ((rtt as i64 - s) >> SRTT_GAIN_SHIFT)) as u64
        };
        let now = r.recv_mono_ns;
        while self.rtt_min_filter.back().is_some_and(|&(_, v)| v >= rtt) {
            self.rtt_min_filter.pop_back();
        }
        self.rtt_min_filter.push_back((now, rtt));
        let horizon = now.saturating_sub(self.cfg.rtt_min_window_ns);
        while self.rtt_min_filter.front().is_some_and(|&(t, _)| t < horizon) {
            self.rtt_min_filter.pop_front();
        }
        self.rtt.min_ns = self.rtt_min_filter.front().map_or(rtt, |&(_, v)| v);
    }

    /// Keeps the wall−monotonic offset and detects jumps of the wall clock.
    fn track_wall_offset(&mut self, r: &Reply, out: &mut Vec<Output>) {
        let offset = r.recv_wall_ns - r.recv_mono_ns as i64;
        if let Some(old) = self.wall_offset {
            let jump = offset - old;
            if jump.abs() > WALL_JUMP_NS {
                self.counters.wall_jumps += 1;
                // Slot accounting restarts on the new wall clock.
                self.covered_since_wall = None;
                self.next_slot_wall = None;
                if let Some(w) = self.last_event_start_wall.as_mut() {
                    *w += jump;
                }
                // A seed placed with the old wall clock is off by the jump.
                if self.learner.is_seeded() {
                    self.place_seed(r);
                }
                out.push(Output::WallClockJump { jump_ns: jump });
            }
        }
        self.wall_offset = Some(offset);
    }

    /// Seeds the learner with the configured schedule's grid, placed on the monotonic clock
    /// through the reply's wall−monotonic offset (when `seed_schedule` asks for it).
    fn place_seed(&mut self, r: &Reply) {
        let Some(s) = self.cfg.schedule.as_ref().filter(|_| self.cfg.seed_schedule && self.cfg.scoring == Scoring::Evidence) else { return };
        let Some(period_ns) = s.slot_period_ns() else { return };
        let to_mono = r.recv_mono_ns as i64 - r.recv_wall_ns;
        let next = s.next_slot_at_or_after(r.recv_wall_ns) + to_mono;
        let grid = crate::learn::Grid { period_ns, anchor_ns: next, window_ns: crate::learn::SEED_WINDOW_NS, on_grid: 0 };
        self.learner.seed(grid, r.recv_mono_ns as i64);
    }

    /// Closes every scheduled slot whose window has ended by `now_wall`, flagging the ones
    /// that passed unseen while replies were flowing.
    fn check_slots(&mut self, now_wall: i64, out: &mut Vec<Output>) {
        let Some(s) = self.cfg.schedule.clone() else { return };
        let tol = s.tolerance_ns as i64;
        let mut slot = match self.next_slot_wall {
            Some(t) => t,
            None => s.next_slot_at_or_after(now_wall - tol),
        };
        while slot + tol < now_wall {
            let covered = self.covered_since_wall.is_some_and(|c| c <= slot - tol);
            let hit = self.last_event_start_wall.is_some_and(|e| (e - slot).abs() <= tol);
            if covered && !hit {
                self.counters.missed_slots += 1;
                out.push(Output::MissedSlot { slot_wall_ns: slot });
            }
            slot = s.next_slot_at_or_after(slot + 1);
        }
        self.next_slot_wall = Some(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    /// An arbitrary wall-clock origin: 2024-08-12 19:00:00 UTC, a whole minute.
    const WALL0: i64 = 1_723_489_200 * 1_000_000_000;

    /// The paper's rule: these tests are about the RI mechanics (threshold, stall, hold-off,
    /// labels), which the evidence scoring shares.
    fn plain() -> DetectorConfig {
        DetectorConfig { scoring: Scoring::Threshold, ..DetectorConfig::default() }
    }

    fn reply(seq: u16, t_ms: u64) -> Reply {
        Reply { seq, recv_mono_ns: t_ms * MS, recv_wall_ns: WALL0 + (t_ms * MS) as i64, rtt_ns: Some(30 * MS) }
    }

    fn events(out: &[Output]) -> Vec<ReconfigEvent> {
        out.iter().filter_map(|o| if let Output::Reconfig(e) = o { Some(*e) } else { None }).collect()
    }

    /// Feeds replies at the given ms times (and sends 10 ms apart covering them if `sends`).
    fn run(d: &mut Detector, times: &[u64]) -> Vec<Output> {
        let mut out = Vec::new();
        for (i, &t) in times.iter().enumerate() {
            out.extend(d.on_reply(reply(i as u16, t)));
        }
        out
    }

    fn steady(from_ms: u64, to_ms: u64, step: u64) -> Vec<u64> {
        (from_ms..to_ms).step_by(step as usize).collect()
    }

    #[test]
    fn ri_above_threshold_is_an_event_with_start_estimate() {
        let mut d = Detector::new(plain());
        let mut t = steady(0, 1000, 10);
        t.extend(steady(1080, 2000, 10)); // gap 990 -> 1080: RI 90 ms
        let ev = events(&run(&mut d, &t));
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].ri_ns, 90 * MS);
        assert_eq!(ev[0].start_mono_ns, 990 * MS);
        assert_eq!(ev[0].detect_mono_ns, 1080 * MS);
        assert_eq!(ev[0].kind, Kind::Unlabelled);
    }

    #[test]
    fn threshold_is_strict_and_configurable() {
        let mut d = Detector::new(plain());
        let ev = events(&run(&mut d, &[0, 10, 55, 65]));
        assert!(ev.is_empty(), "RI of exactly 45 ms is not above the threshold");
        let mut d = Detector::new(plain());
        assert_eq!(events(&run(&mut d, &[0, 10, 56, 66])).len(), 1);
        let cfg = DetectorConfig { threshold_ns: 60 * MS, ..plain() };
        let mut d = Detector::new(cfg);
        assert!(events(&run(&mut d, &[0, 10, 66, 76])).is_empty());
    }

    #[test]
    fn one_lost_reply_or_one_late_reply_is_not_an_event() {
        let mut d = Detector::new(plain());
        // 10 ms probes, reply at 40 lost: RI 20 ms.
        let ev = events(&run(&mut d, &[0, 10, 20, 30, 50, 60]));
        assert!(ev.is_empty());
        // A reply 30 ms late, overtaken by nothing: RI 40 then 0 -- below threshold.
        let mut d = Detector::new(plain());
        assert!(events(&run(&mut d, &[0, 10, 20, 60, 60, 60, 70])).is_empty());
    }

    #[test]
    fn ri_across_several_lost_replies_is_an_event() {
        let mut d = Detector::new(plain());
        // Replies 40..90 lost (all pings lost in the outage): RI 70 ms though no RTT spike.
        let ev = events(&run(&mut d, &[0, 10, 20, 30, 100, 110]));
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].ri_ns, 70 * MS);
    }

    #[test]
    fn rtt_stats_smooth_and_restart_min_at_event() {
        let mut d = Detector::new(plain());
        let mk = |t: u64, rtt: u64| Reply { seq: 0, recv_mono_ns: t * MS, recv_wall_ns: WALL0, rtt_ns: Some(rtt * MS) };
        d.on_reply(mk(0, 40));
        d.on_reply(mk(10, 20));
        assert_eq!(d.rtt().srtt_ns, 40 * MS - 20 * MS / 8);
        assert_eq!(d.rtt().min_ns, 20 * MS);
        d.on_reply(mk(20, 30));
        assert_eq!(d.rtt().min_ns, 20 * MS);
        let out = d.on_reply(mk(200, 50));
        assert_eq!(events(&out).len(), 1);
        assert_eq!(d.rtt().min_ns, 50 * MS, "minimum restarts after a reconfiguration");
        // The window expires old minima.
        let mut d = Detector::new(DetectorConfig { rtt_min_window_ns: 100 * MS, ..plain() });
        d.on_reply(mk(0, 10));
        for t in (10..=200).step_by(10) {
            d.on_reply(mk(t, 30));
        }
        assert_eq!(d.rtt().min_ns, 30 * MS);
    }

    #[test]
    fn own_send_pause_suppresses_the_event() {
        let mut d = Detector::new(plain());
        let mut out = Vec::new();
        for i in 0..20u64 {
            d.on_send(i * 10 * MS);
            out.extend(d.on_reply(reply(i as u16, i * 10 + 5)));
        }
        // The process stalled: no send between 190 and 400 ms, so no reply either.
        d.on_send(400 * MS);
        out.extend(d.on_reply(reply(20, 405)));
        assert!(events(&out).is_empty());
        assert!(out.iter().any(|o| matches!(o, Output::Suppressed { .. })));
        // With regular sends the same kind of gap is an outage.
        for i in 41..50u64 {
            d.on_send(i * 10 * MS);
            assert!(events(&d.on_reply(reply(i as u16, i * 10 + 5))).is_empty());
        }
        for i in 50..60u64 {
            d.on_send(i * 10 * MS);
        }
        out = d.on_reply(reply(60, 605));
        assert_eq!(events(&out).len(), 1, "{out:?}");
    }

    /// Feeds probes sent at `sends` (ms) whose replies come back after `rtt(send)` ms (None:
    /// lost), in time order; returns every output.
    fn probe_run(d: &mut Detector, sends: &[u64], rtt: impl Fn(u64) -> Option<u64>) -> Vec<Output> {
        let mut ev: Vec<(u64, Option<u64>)> = sends.iter().map(|&s| (s, None)).collect();
        ev.extend(sends.iter().filter_map(|&s| rtt(s).map(|r| (s + r, Some(r)))));
        ev.sort_by_key(|&(t, r)| (t, r.is_some()));
        let mut out = Vec::new();
        for (i, (t, r)) in ev.into_iter().enumerate() {
            match r {
                None => d.on_send(t * MS),
                Some(rtt) => out.extend(d.on_reply(Reply {
                    seq: i as u16,
                    recv_mono_ns: t * MS,
                    recv_wall_ns: WALL0 + (t * MS) as i64,
                    rtt_ns: Some(rtt * MS),
                })),
            }
        }
        out
    }

    /// A path whose RTT (200 ms: 110 out, 90 back) exceeds the outage (100 ms): the outage
    /// loses the replies on their way back (probes sent 110 ms before it) and the probes sent
    /// during it, so two gaps reach us 110 ms apart. One reconfiguration, one event; the second
    /// gap is merged, not learned as a normal interval. An outage a few seconds later is still
    /// an event. (Drawn path 14 in the simulator, `--probe-noise none`, had 11 events for 6.)
    #[test]
    fn both_directions_of_one_outage_are_one_event() {
        let lost = |s: u64, t: u64| (t - 110..t - 10).contains(&s) || (t..t + 100).contains(&s);
        let sends = steady(0, 40_000, 10);
        let mut d = Detector::new(DetectorConfig::default());
        let out = probe_run(&mut d, &sends, |s| if lost(s, 20_000) || lost(s, 30_000) { None } else { Some(200) });
        let ev = events(&out);
        assert_eq!(ev.len(), 2, "{out:?}");
        assert_eq!(d.counters().merged, 2);
        for (e, t) in ev.iter().zip([20_000u64, 30_000]) {
            // The first gap: the last reply before it left the PoP as the outage began.
            assert_eq!(e.start_mono_ns, (t + 80) * MS, "{e:?}");
        }
        // The paper's rule declares both gaps.
        let mut d = Detector::new(plain());
        let out = probe_run(&mut d, &sends, |s| if lost(s, 20_000) { None } else { Some(200) });
        assert_eq!(events(&out).len(), 2);
    }

    #[test]
    fn outage_overlapping_a_short_stall_is_still_detected() {
        // Sends every 10 ms, a 30 ms stall after 190, and the link drops the probes sent from
        // 220 to 270: RI 90 ms, of which our stall explains 30.
        let mut sends = steady(0, 200, 10);
        sends.extend(steady(220, 400, 10));
        let mut d = Detector::new(plain());
        let out = probe_run(&mut d, &sends, |s| if (220..280).contains(&s) { None } else { Some(30) });
        let ev = events(&out);
        assert_eq!(ev.len(), 1, "{out:?}");
        assert_eq!(ev[0].ri_ns, 90 * MS);
        // A 35 ms stall and no outage, with RTT jitter: RI 52 ms, explained by the stall.
        let mut sends = steady(0, 200, 10);
        sends.extend(steady(225, 400, 10));
        let mut d = Detector::new(plain());
        let out = probe_run(&mut d, &sends, |s| Some(if (225..240).contains(&s) { 47 } else { 30 }));
        assert!(events(&out).is_empty(), "{out:?}");
        assert!(matches!(out[..], [Output::Suppressed { ri_ns, send_gap_ns }] if ri_ns == 52 * MS && send_gap_ns == 35 * MS), "{out:?}");
    }

    #[test]
    fn holdoff_merges_close_outliers() {
        let cfg = DetectorConfig { holdoff_ns: 500 * MS, ..plain() };
        let mut d = Detector::new(cfg);
        let ev = events(&run(&mut d, &[0, 10, 100, 110, 300, 310, 1000, 1010]));
        assert_eq!(ev.len(), 2, "the 190 ms-later outlier is merged, the 1000 ms one is not");
        assert_eq!(d.counters().merged, 1);
    }

    fn starlink() -> Option<Schedule> {
        Some(Schedule::starlink(500 * MS))
    }

    #[test]
    fn schedule_labels_periodic_and_aperiodic() {
        let mut d = Detector::new(DetectorConfig { schedule: starlink(), ..plain() });
        let mut t = steady(0, 11_991, 10);
        t.extend(steady(12_100, 20_000, 10)); // outage from 11.99 s: slot 12 s
        t.extend(steady(20_090, 26_000, 10)); // outage from 19.99 s: no slot
        let ev = events(&run(&mut d, &t));
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].kind, Kind::Periodic);
        assert_eq!(ev[0].slot_offset_ns, Some(-10 * MS as i64));
        assert_eq!(ev[1].kind, Kind::Aperiodic);
    }

    #[test]
    fn missed_slot_is_flagged_only_while_replies_flow() {
        let mut d = Detector::new(DetectorConfig { schedule: starlink(), ..plain() });
        // Replies flow 0..30 s with an outage at 12 s but none at 27 s.
        let mut t = steady(0, 11_990, 10);
        t.extend(steady(12_090, 30_000, 10));
        let out = run(&mut d, &t);
        let missed: Vec<i64> =
            out.iter().filter_map(|o| if let Output::MissedSlot { slot_wall_ns } = o { Some(*slot_wall_ns) } else { None }).collect();
        assert_eq!(missed, vec![WALL0 + 27_000 * MS as i64]);
        // Monitoring starts at 26.8 s: slot 27 is not covered from before its window.
        let mut d = Detector::new(DetectorConfig { schedule: starlink(), ..plain() });
        let out = run(&mut d, &steady(26_800, 30_000, 10));
        assert!(!out.iter().any(|o| matches!(o, Output::MissedSlot { .. })));
    }

    #[test]
    fn wall_clock_jump_does_not_fake_events_or_misses() {
        let mut d = Detector::new(DetectorConfig { schedule: starlink(), ..plain() });
        let mut out = Vec::new();
        // 0..5 s steady; then the wall clock jumps forward by 30 s (mono continues).
        for (i, t) in steady(0, 5_000, 10).into_iter().enumerate() {
            out.extend(d.on_reply(reply(i as u16, t)));
        }
        for (i, t) in steady(5_000, 10_000, 10).into_iter().enumerate() {
            let mut r = reply(i as u16, t);
            r.recv_wall_ns += 30_000 * MS as i64;
            out.extend(d.on_reply(r));
        }
        assert!(events(&out).is_empty(), "intervals use the monotonic clock");
        assert!(out.iter().any(|o| matches!(o, Output::WallClockJump { jump_ns } if *jump_ns == 30_000 * MS as i64)));
        // Slots 12 and 27 were jumped over: not reported as missed.
        assert!(!out.iter().any(|o| matches!(o, Output::MissedSlot { .. })), "{out:?}");
        assert_eq!(d.counters().wall_jumps, 1);
    }

    /// A 15 s grid of outages (a 140 ms hold) on a jittered 10 ms stream with some background
    /// loss; after each event from the third on, the link settles with a few lost probes and
    /// small RTT steps 150-650 ms later (as on the bent-pipe recording victoria_4 after its slot
    /// at second 57). Those are weak candidates in the event's aftermath: they must not be
    /// learned as reconfigurations of their own, which pulls the fitted grid off the slots
    /// (on victoria_4: to periods of 30 and 41 s, then a false event at second 2.29 and the
    /// next slot missed).
    #[test]
    fn candidates_in_an_events_aftermath_do_not_move_the_grid() {
        let mut d = Detector::new(DetectorConfig { report_confidence: 0, ..DetectorConfig::default() });
        let (mut t, mut i) = (0u64, 0u64);
        let mut weak_after = 0;
        let mut events = Vec::new();
        // A reply after `lost` lost probes and a hold of `hold` ms; jitter 0-7 ms.
        let feed = |d: &mut Detector, t: &mut u64, i: &mut u64, lost: u64, hold: u64| {
            *t += 10 * (1 + lost) + hold;
            let h = (*i * 2_654_435_761) >> 11;
            let rtt = 30 + h % 8 + hold;
            *i += 1;
            let r = Reply { seq: *i as u16, recv_mono_ns: *t * MS, recv_wall_ns: WALL0 + (*t * MS) as i64, rtt_ns: Some(rtt * MS) };
            d.on_reply(r)
        };
        // Background loss: 1-3 probes now and then.
        let background = |i: u64| {
            let h = (i * 2_246_822_519) >> 9;
            if h % 40 == 0 { 1 + (h / 40) % 3 } else { 0 }
        };
        for k in 0..12u64 {
            let slot = 5_000 + k * 15_000;
            while t + 40 < slot {
                let lost = background(i);
                feed(&mut d, &mut t, &mut i, lost, 0);
            }
            for o in feed(&mut d, &mut t, &mut i, 0, 140) {
                if let Output::Reconfig(e) = o {
                    events.push(e.start_mono_ns / MS);
                }
            }
            if k >= 2 {
                // The aftermath: 3-5 probes lost and a 15-25 ms step, 150-650 ms after the event.
                for (after, lost, hold) in [(150, 3, 15), (400, 4, 20), (650, 5, 25)] {
                    while t < slot + after {
                        feed(&mut d, &mut t, &mut i, 0, 0);
                    }
                    for o in feed(&mut d, &mut t, &mut i, lost, hold) {
                        match o {
                            Output::Weak(_) => weak_after += 1,
                            Output::Reconfig(e) => panic!("aftermath candidate published: {e:?}"),
                            _ => {}
                        }
                    }
                }
            }
        }
        assert!(weak_after >= 4, "the aftermath holds are weak candidates: {weak_after}");
        // Without the rule the aftermath candidates (two per slot, learned as likely outages)
        // outnumber the slots in the learner's memory by the 8th slot, and the grid moves to
        // their phase, 695 ms after the slots.
        let g = d.learned_grid().expect("a grid");
        assert!((g.period_ns - 15_000 * MS as i64).abs() < 50 * MS as i64, "{g:?}");
        let next_slot = ((5_000 + 12 * 15_000) * MS) as i64 - 40 * MS as i64;
        assert!(g.offset(next_slot).0.abs() <= g.window_ns, "the grid predicts the slots: {g:?}");
        assert_eq!(events.len(), 12, "every slot's outage is an event: {events:?}");
    }

    /// Weak candidates that are likely outages by their evidence (here every candidate is
    /// weak: nothing reaches the minimum confidence) still count as normal intervals, but with
    /// their RTT step censored at the tail's threshold. Otherwise each missed outage would
    /// teach the statistics that outage-sized steps are normal, and the next outage would look
    /// more normal still (without the censoring this fails from the 5th hold on: the steps of
    /// the first four already stretch the tail).
    #[test]
    fn missed_outages_do_not_stretch_the_rtt_step_tail() {
        let cfg = DetectorConfig { min_confidence: 101, report_confidence: 0, ..DetectorConfig::default() };
        let mut d = Detector::new(cfg);
        let mut weak = Vec::new();
        let mut t = 0u64;
        for i in 0..4_100u64 {
            // Spacing 10 ms, RTT 30 ms plus 0-9 ms of jitter; every 100th reply closes a gap
            // of one spacing plus a 100 ms hold (an RTT step of ~100 ms, a normal send gap).
            let held = i % 100 == 99;
            t += if held { 110 } else { 10 };
            let rtt = 30 + (i * 7_919) % 10 + if held { 100 } else { 0 };
            let r = Reply { seq: i as u16, recv_mono_ns: t * MS, recv_wall_ns: WALL0 + (t * MS) as i64, rtt_ns: Some(rtt * MS) };
            for o in d.on_reply(r) {
                if let Output::Weak(e) = o {
                    weak.push(e);
                }
            }
        }
        assert_eq!(weak.len(), 41, "every hold is a weak candidate");
        let (early, late) = (weak[4].p_normal, weak[40].p_normal);
        assert!(early < 1e-5, "{early}");
        assert!(late < 1e-5, "the 41st outage is as unusual as the 5th: {early} then {late}");
    }

    /// A moderate hold (one spacing plus a 45 ms RTT step, about as rare as 1 in 250 intervals
    /// of this stream's jitter, as a short bent-pipe outage) is an event inside a slot's window
    /// of the seeded Starlink schedule and only a weak candidate 8 s after the slot: in the
    /// window the gap is weighed by its tail under "outage", elsewhere by its point likelihood.
    #[test]
    fn a_moderate_hold_is_an_event_in_a_slot_window_and_weak_elsewhere() {
        let cfg = DetectorConfig { schedule: starlink(), seed_schedule: true, report_confidence: 0, ..DetectorConfig::default() };
        let mut d = Detector::new(cfg);
        let (mut events, mut weak) = (Vec::new(), Vec::new());
        // 130 s from a whole minute, a probe sent every 10 ms, RTT 30 ms plus 0-9 ms of jitter
        // and a 20-44 ms excursion on every 50th probe, replies in FIFO order; one probe held
        // 45 ms longer (P(normal) about 0.004) 40 ms before every slot (12, 27, ... 117 s) and
        // 8 s later (off the slots).
        let slots: Vec<u64> = (0..8).map(|k| 12_000 + 15_000 * k).collect();
        let holds_ms: Vec<u64> = slots.iter().flat_map(|s| [s - 40, s + 8_000 - 40]).collect();
        let mut last_recv_us = 0u64;
        for i in 0..13_000u64 {
            let sent_ms = 10 * i;
            let jitter = (i * 7_919) % 10 + if i % 50 == 49 { 20 + (i / 50) % 25 } else { 0 };
            let rtt_ms = 30 + jitter + if holds_ms.contains(&sent_ms) { 45 } else { 0 };
            let recv_us = ((sent_ms + rtt_ms) * 1_000).max(last_recv_us + 100);
            last_recv_us = recv_us;
            let r = Reply { seq: i as u16, recv_mono_ns: recv_us * 1_000, recv_wall_ns: WALL0 + (recv_us * 1_000) as i64, rtt_ns: Some(recv_us * 1_000 - sent_ms * MS) };
            for o in d.on_reply(r) {
                match o {
                    Output::Reconfig(e) => events.push(e),
                    Output::Weak(e) => weak.push(e),
                    _ => {}
                }
            }
        }
        let near = |v: &[ReconfigEvent], s: i64| v.iter().any(|e| (e.start_wall_ns - WALL0 - s * 1_000 * MS as i64).abs() < 200 * MS as i64);
        for &slot in &slots {
            let (on, off) = (slot as i64 / 1_000, slot as i64 / 1_000 + 8);
            assert!(near(&events, on), "the hold at the slot {on} s is an event: {events:?}");
            assert!(!near(&events, off) && near(&weak, off), "the hold at {off} s is weak: {events:?} {weak:?}");
        }
        assert_eq!(events.len(), slots.len(), "no excursion is an event: {events:?}");
    }

    /// A seed is placed on the monotonic clock through the wall clock; when the wall clock
    /// jumps (an NTP step after boot), the seed is placed again so that it predicts the slots
    /// of the corrected wall clock.
    #[test]
    fn a_wall_clock_jump_places_the_seed_again() {
        let cfg = DetectorConfig { schedule: starlink(), seed_schedule: true, ..DetectorConfig::default() };
        let mut d = Detector::new(cfg);
        let slot_mono = |d: &Detector| {
            let g = d.learned_grid().expect("seeded");
            (g.anchor_ns.rem_euclid(g.period_ns), g.period_ns)
        };
        let (mut t, jump_ms) = (0u64, 7_000i64);
        while t < 1_000 {
            t += 10;
            d.on_reply(Reply { seq: t as u16, recv_mono_ns: t * MS, recv_wall_ns: WALL0 + (t * MS) as i64, rtt_ns: Some(30 * MS) });
        }
        // Wall = mono + WALL0 (a whole minute): slots at mono 12 s + k·15 s.
        assert_eq!(slot_mono(&d), (12_000 * MS as i64, 15_000 * MS as i64));
        while t < 2_000 {
            t += 10;
            let wall = WALL0 + (t * MS) as i64 + jump_ms * MS as i64;
            d.on_reply(Reply { seq: t as u16, recv_mono_ns: t * MS, recv_wall_ns: wall, rtt_ns: Some(30 * MS) });
        }
        // The wall clock is now 7 s ahead: its second 12 comes 7 s earlier on the monotonic clock.
        assert_eq!(slot_mono(&d), (5_000 * MS as i64, 15_000 * MS as i64));
    }

    /// Feeds 75 s of probes sent every 10 ms (RTT 30 ms plus 0-7 ms of jitter, 1-3 probes lost
    /// now and then), with ticks after each send and every probe lost in `outages` (ms);
    /// returns the events with the time (ms) they were declared.
    fn with_silences(cfg: DetectorConfig, outages: &[std::ops::Range<u64>]) -> Vec<(ReconfigEvent, u64)> {
        let mut d = Detector::new(cfg);
        let mut events = Vec::new();
        let (mut t, mut i) = (0u64, 0u64);
        while t < 75_000 {
            t += 10;
            let h = (i * 2_654_435_761) >> 11;
            i += 1;
            let ticked = d.on_tick(t * MS);
            let background_loss = (i * 2_246_822_519 >> 9) % 40 == 0;
            let replied = if outages.iter().any(|o| o.contains(&t)) || background_loss {
                Vec::new()
            } else {
                d.on_reply(Reply { seq: i as u16, recv_mono_ns: t * MS, recv_wall_ns: WALL0 + (t * MS) as i64, rtt_ns: Some((30 + h % 8) * MS) })
            };
            for o in ticked.into_iter().chain(replied) {
                if let Output::Reconfig(e) = o {
                    events.push((e, t));
                }
            }
        }
        events
    }

    /// An inter-satellite outage loses every probe for 700 ms: the silence is declared an event
    /// at a tick (after a probe send) long before the reply that ends it, and that reply closes
    /// the event instead of making a second one. Over a minute of the same stream without an
    /// outage no tick declares anything.
    #[test]
    fn a_long_silence_is_an_event_before_the_reply_that_ends_it() {
        let outage = 70_000..70_700u64;
        let events = with_silences(DetectorConfig::default(), &[outage.clone()]);
        assert_eq!(events.len(), 1, "one event, no false one, no second one at the closing reply: {events:?}");
        let (e, at) = &events[0];
        assert!(e.start_mono_ns / MS < outage.start && e.start_mono_ns / MS >= outage.start - 20, "{e:?}");
        assert!(*at < outage.start + 200, "declared {} ms into a 700 ms silence", at - outage.start);
    }

    /// `--holdoff-ms` merges a silence that follows an event closely, as it merges a gap.
    #[test]
    fn a_silence_within_the_holdoff_is_no_event() {
        let outages = [60_000..60_700u64, 62_000..62_700];
        assert_eq!(with_silences(DetectorConfig::default(), &outages).len(), 2);
        let held_off = with_silences(DetectorConfig { holdoff_ns: 5_000 * MS, ..DetectorConfig::default() }, &outages);
        assert_eq!(held_off.len(), 1, "{held_off:?}");
    }
}
