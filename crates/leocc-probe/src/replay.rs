//! Offline analysis: replaying a recording (`ping -D`, irtt JSON or CSV, see [`crate::input`])
//! through the detector, and scoring detections against a list of true reconfiguration times
//! (the ground truth of a generated stream, or the schedule's slots for real recordings).
//!
//! Offline we have no monotonic clock, so the monotonic time of a reply is its wall time
//! relative to the first reply (the recording had no clock jump we could know of).
//!
//! Scoring: each detection is matched to at most one true event and vice versa, greedily in
//! time order, when its outage-start estimate lies within ± tolerance of the true time.
//! Precision = matched detections / detections (a second detection of the same event counts
//! against precision); recall = matched true events / true events.

use serde::Serialize;

use crate::detect::{Detector, DetectorConfig, Output, ReconfigEvent, Reply};
use crate::schedule::Schedule;

pub use crate::input::{load_ping_d, parse_ping_d, PingLine, ReplayError};

/// Runs the detector over replayed replies; returns the events (confidence at or above the
/// detector's `min_confidence`) and every other output (weak candidates included).
pub fn run_detector(lines: &[PingLine], cfg: DetectorConfig) -> (Vec<ReconfigEvent>, Vec<Output>) {
    let mut d = Detector::new(cfg);
    let mut events = Vec::new();
    let mut others = Vec::new();
    feed(&mut d, lines, |o| match o {
        Output::Reconfig(e) => events.push(e),
        other => others.push(other),
    });
    (events, others)
}

/// Feeds `lines` to `d` as the daemon's loop would: every reply, and between replies a tick
/// (`Detector::on_tick`) at each time a probe would have left, one median spacing apart (a
/// recording holds the replies, not the sends). Wall time is the monotonic stand-in, never
/// running backwards.
fn feed(d: &mut Detector, lines: &[PingLine], mut each: impl FnMut(Output)) {
    let Some(first) = lines.first() else { return };
    let spacing = median_spacing_ns(lines).max(1);
    let mut last_mono: Option<u64> = None;
    for l in lines {
        let mono = ((l.wall_ns - first.wall_ns).max(0) as u64).max(last_mono.unwrap_or(0));
        if let Some(last) = last_mono {
            let mut tick = last + spacing;
            while tick < mono {
                for o in d.on_tick(tick) {
                    each(o);
                }
                tick += spacing;
            }
        }
        last_mono = Some(mono);
        for o in d.on_reply(Reply { seq: l.seq, recv_mono_ns: mono, recv_wall_ns: l.wall_ns, rtt_ns: Some(l.rtt_ns) }) {
            each(o);
        }
    }
}

/// The median interval between consecutive replies, ns (0 with fewer than two).
fn median_spacing_ns(lines: &[PingLine]) -> u64 {
    let mut gaps: Vec<u64> = lines.windows(2).map(|w| (w[1].wall_ns - w[0].wall_ns).max(0) as u64).collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied().unwrap_or(0)
}

/// Scores of detections against true event times.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Score {
    /// Number of true events considered.
    pub truth: usize,
    /// Number of detections considered.
    pub detections: usize,
    /// Detections matched one-to-one with a true event.
    pub matched: usize,
    /// matched / detections (1 when there are no detections).
    pub precision: f64,
    /// matched / truth (1 when there is no true event).
    pub recall: f64,
    /// Signed offsets (ns) of matched outage-start estimates from their true event.
    pub start_offsets_ns: Vec<i64>,
    /// Detection delays (ns): detection time − true event time, for matched events.
    pub delays_ns: Vec<i64>,
    /// True events with no detection (ns, same clock as the input).
    pub missed: Vec<i64>,
    /// Detections (outage-start estimate, ns) that matched nothing.
    pub false_positives: Vec<i64>,
}

/// Scores summed over several streams, traces or runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// True events.
    pub truth: usize,
    /// Detections.
    pub detections: usize,
    /// Detections matched one-to-one with a true event.
    pub matched: usize,
    /// Detection delays (ns) of every matched event.
    pub delays_ns: Vec<i64>,
}

impl Totals {
    /// Adds one score.
    pub fn add(&mut self, s: &Score) {
        self.truth += s.truth;
        self.detections += s.detections;
        self.matched += s.matched;
        self.delays_ns.extend_from_slice(&s.delays_ns);
    }

    /// matched / detections, `None` without detections (a detector that never fires is not
    /// 100 % precise).
    pub fn precision(&self) -> Option<f64> {
        (self.detections > 0).then(|| self.matched as f64 / self.detections as f64)
    }

    /// matched / truth, `None` without true events.
    pub fn recall(&self) -> Option<f64> {
        (self.truth > 0).then(|| self.matched as f64 / self.truth as f64)
    }
}

/// One detection to score: outage-start estimate and detection time on the truth's clock.
#[derive(Debug, Clone, Copy)]
pub struct Detection {
    /// Estimated outage start, ns.
    pub start_ns: i64,
    /// Time the detector declared the event, ns.
    pub detect_ns: i64,
}

/// Matches detections to true times within ± `tolerance_ns` (both inputs in one clock).
pub fn score(detections: &[Detection], truth: &[i64], tolerance_ns: i64) -> Score {
    let mut dets: Vec<Detection> = detections.to_vec();
    dets.sort_by_key(|d| d.start_ns);
    let mut truth: Vec<i64> = truth.to_vec();
    truth.sort_unstable();
    let mut used = vec![false; truth.len()];
    let mut s = Score {
        truth: truth.len(),
        detections: dets.len(),
        matched: 0,
        precision: 1.0,
        recall: 1.0,
        start_offsets_ns: Vec::new(),
        delays_ns: Vec::new(),
        missed: Vec::new(),
        false_positives: Vec::new(),
    };
    for d in &dets {
        // The nearest unused true event within tolerance.
        let best = truth
            .iter()
            .enumerate()
            .filter(|&(i, &t)| !used[i] && (d.start_ns - t).abs() <= tolerance_ns)
            .min_by_key(|&(_, &t)| (d.start_ns - t).abs());
        match best {
            Some((i, &t)) => {
                used[i] = true;
                s.matched += 1;
                s.start_offsets_ns.push(d.start_ns - t);
                s.delays_ns.push(d.detect_ns - t);
            }
            None => s.false_positives.push(d.start_ns),
        }
    }
    s.missed = truth.iter().zip(&used).filter(|(_, &u)| !u).map(|(&t, _)| t).collect();
    if s.detections > 0 {
        s.precision = s.matched as f64 / s.detections as f64;
    }
    if s.truth > 0 {
        s.recall = s.matched as f64 / s.truth as f64;
    }
    s
}

/// The schedule slots fully inside [from, to] (Unix ns): a slot counts only if its whole
/// tolerance window was observed.
pub fn slots_between(s: &Schedule, from_ns: i64, to_ns: i64) -> Vec<i64> {
    let tol = s.tolerance_ns as i64;
    let mut out = Vec::new();
    let mut t = s.next_slot_at_or_after(from_ns + tol);
    while t + tol <= to_ns {
        out.push(t);
        t = s.next_slot_at_or_after(t + 1);
    }
    out
}

/// What one true event (or slot) got.
#[derive(Debug, Clone, Serialize)]
pub struct SlotResult {
    /// The true time (outage start, or slot), Unix ns.
    pub time_ns: i64,
    /// Sequence number of the event matched to it, if any.
    pub event_seq: Option<u64>,
    /// Its confidence.
    pub confidence: Option<u8>,
    /// Its outage-start estimate minus the true time, ns.
    pub offset_ns: Option<i64>,
    /// Detection time minus the true time, ns.
    pub delay_ns: Option<i64>,
}

/// The result of replaying a recording.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// Replies read.
    pub replies: usize,
    /// First and last reply, Unix ns.
    pub span_ns: (i64, i64),
    /// Highest sequence number minus lowest, + 1, minus replies: the lost probes (approximate
    /// when the sequence wrapped; 0 for formats without sequence numbers).
    pub lost: i64,
    /// Median gap between consecutive replies, ns (the effective probe spacing).
    pub median_spacing_ns: u64,
    /// What the detections are scored against: "truth" (from the file) or "slots".
    pub truth_source: &'static str,
    /// The detections (confidence at or above the detector's minimum).
    pub events: Vec<ReconfigEvent>,
    /// Weaker candidates, not acted on.
    pub weak: Vec<ReconfigEvent>,
    /// Period of the schedule the detector learned by the end, ns.
    pub learned_period_ns: Option<i64>,
    /// Per true event or slot: what matched it.
    pub slots: Vec<SlotResult>,
    /// Scores against the truth or the slots inside the span.
    pub score: Score,
}

/// Replays `lines` with `cfg` and scores them against `truth` (Unix ns, ± the schedule's
/// tolerance) when given, else against the schedule's slots inside the span. The schedule also
/// labels events (periodic/aperiodic).
pub fn replay_report(lines: &[PingLine], cfg: DetectorConfig, schedule: &Schedule, truth: Option<&[i64]>) -> ReplayReport {
    let mut d = Detector::new(DetectorConfig { schedule: Some(schedule.clone()), ..cfg });
    let first = lines.first().map_or(0, |l| l.wall_ns);
    let last = lines.last().map_or(0, |l| l.wall_ns);
    let (mut events, mut weak) = (Vec::new(), Vec::new());
    feed(&mut d, lines, |o| match o {
        Output::Reconfig(e) => events.push(e),
        Output::Weak(e) => weak.push(e),
        _ => {}
    });
    let (truth_times, truth_source) = match truth {
        Some(t) => (t.iter().copied().filter(|&x| x >= first && x <= last).collect(), "truth"),
        None => (slots_between(schedule, first, last), "slots"),
    };
    let tol = schedule.tolerance_ns as i64;
    let detection = |e: &ReconfigEvent| Detection { start_ns: e.start_wall_ns, detect_ns: e.start_wall_ns + e.ri_ns as i64 };
    let dets: Vec<Detection> = events.iter().map(detection).collect();
    let score = score(&dets, &truth_times, tol);
    let slots = per_slot(&events, &truth_times, tol);
    let seqs = lines.iter().map(|l| i64::from(l.seq));
    let span_seq = seqs.clone().max().unwrap_or(0) - seqs.min().unwrap_or(0) + 1;
    ReplayReport {
        replies: lines.len(),
        span_ns: (first, last),
        lost: (span_seq - lines.len() as i64).max(0),
        median_spacing_ns: median_spacing_ns(lines),
        truth_source,
        events,
        weak,
        learned_period_ns: d.learned_grid().map(|g| g.period_ns),
        slots,
        score,
    }
}

/// Per true time, the nearest event within tolerance (the same greedy matching as [`score`]).
fn per_slot(events: &[ReconfigEvent], truth: &[i64], tol: i64) -> Vec<SlotResult> {
    let mut used = vec![false; events.len()];
    truth
        .iter()
        .map(|&t| {
            let best = events
                .iter()
                .enumerate()
                .filter(|(i, e)| !used[*i] && (e.start_wall_ns - t).abs() <= tol)
                .min_by_key(|(_, e)| (e.start_wall_ns - t).abs());
            match best {
                Some((i, e)) => {
                    used[i] = true;
                    SlotResult {
                        time_ns: t,
                        event_seq: Some(e.seq),
                        confidence: Some(e.confidence),
                        offset_ns: Some(e.start_wall_ns - t),
                        delay_ns: Some(e.start_wall_ns + e.ri_ns as i64 - t),
                    }
                }
                None => SlotResult { time_ns: t, event_seq: None, confidence: None, offset_ns: None, delay_ns: None },
            }
        })
        .collect()
}

/// Scores the detector on a generated stream against its ground truth (outage starts,
/// ± the schedule tolerance).
pub fn score_generated(stream: &crate::gen::Stream, cfg: DetectorConfig) -> ReplayReport {
    let truth: Vec<i64> = stream.truth.iter().map(|e| e.start_wall_ns).collect();
    let sched = Schedule::starlink(crate::schedule::DEFAULT_TOLERANCE_NS);
    replay_report(&stream.replies, cfg, &sched, Some(&truth))
}

/// The p-th percentile (0..=100) of `v` by nearest rank
/// ([`leocc_base::metrics::quantile_nearest_rank`]), or None when empty.
pub fn percentile(v: &[i64], p: f64) -> Option<i64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    leocc_base::metrics::quantile_nearest_rank(&s, p / 100.0)
}

/// A detection matches a true reconfiguration when its outage-start estimate lies within this
/// distance (µs): the estimate trails the truth by up to one RTT plus one probe interval, and
/// true reconfigurations are seconds apart.
pub const MATCH_TOLERANCE_US: i64 = 500_000;

/// Scores a daemon's JSON-lines event log (`--log`) against a trace's truth, given the
/// CLOCK_MONOTONIC ns at which the emulator's trace time zero fell. Only `reconfig` lines count;
/// truth after `end_us` (the part of the trace the run did not cover) is ignored.
pub fn score_log(log_text: &str, t0_mono_ns: u64, truth_us: &[u64], end_us: u64) -> Result<Score, String> {
    let mut dets = Vec::new();
    for (i, line) in log_text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("log line {}: {e}", i + 1))?;
        if v["type"] != "reconfig" {
            continue;
        }
        let field = |k: &str| v[k].as_f64().ok_or_else(|| format!("log line {}: no numeric {k}", i + 1));
        let to_trace_us = |ms: f64| (ms * 1000.0) as i64 - (t0_mono_ns / 1000) as i64;
        dets.push(Detection { start_ns: to_trace_us(field("t_mono_ms")?), detect_ns: to_trace_us(field("detect_mono_ms")?) });
    }
    let truth: Vec<i64> = truth_us.iter().filter(|&&t| t < end_us).map(|&t| t as i64).collect();
    Ok(score(&dets, &truth, MATCH_TOLERANCE_US))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Kind;

    const MS: i64 = 1_000_000;

    /// A synthetic `ping -D` log: 16 ms spacing from a whole minute, replies missing inside
    /// the given outages [from_ms, to_ms), a banner and a statistics footer.
    fn synthetic(outages: &[(i64, i64)], until_ms: i64) -> String {
        let mut s = String::from("PING 100.64.0.1 (100.64.0.1) 56(84) bytes of data.\n");
        let t0 = 1_723_489_200_000i64;
        let mut seq = 1;
        let mut t = 0;
        while t < until_ms {
            if !outages.iter().any(|&(a, b)| t >= a && t < b) {
                let w = t0 + t;
                s += &format!("[{}.{:03}000] 64 bytes from 100.64.0.1: icmp_seq={} ttl=63 time=31.{} ms\n", w / 1000, w % 1000, seq, seq % 10);
            }
            seq += 1;
            t += 16;
        }
        s += "\n--- 100.64.0.1 ping statistics ---\n";
        s
    }

    #[test]
    fn synthetic_ping_log_scores_slots() {
        // Outages at the 12 s and 27 s slots (100 ms each), one aperiodic at 20 s; slot 42
        // has no outage: a miss.
        let text = synthetic(&[(11_990, 12_090), (20_000, 20_100), (26_995, 27_095)], 45_000);
        let lines = parse_ping_d(&text, "synthetic").unwrap();
        assert_eq!(lines[0].rtt_ns, 31_100_000);
        let sched = Schedule::starlink(500 * MS as u64);
        // The paper's rule: this test is about parsing and slot scoring.
        let plain = DetectorConfig { scoring: crate::detect::Scoring::Threshold, ..DetectorConfig::default() };
        let r = replay_report(&lines, plain, &sched, None);
        assert_eq!(r.events.len(), 3);
        assert_eq!(r.events.iter().map(|e| e.kind).collect::<Vec<_>>(), vec![Kind::Periodic, Kind::Aperiodic, Kind::Periodic]);
        assert_eq!(r.score.truth, 3, "slots 12, 27 and 42 lie inside 0..45 s");
        assert_eq!(r.score.matched, 2);
        assert!((r.score.precision - 2.0 / 3.0).abs() < 1e-9);
        assert!((r.score.recall - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.score.missed, vec![1_723_489_242_000 * MS]);
        assert_eq!(r.median_spacing_ns, 16 * MS as u64);
        assert!(r.lost > 0);
    }

    #[test]
    fn duplicates_are_dropped_and_timestamps_exact() {
        let text = "[1723489200.167948] 64 bytes from a: icmp_seq=1 ttl=63 time=144 ms\n[1723489200.168000] 64 bytes from a: icmp_seq=1 ttl=63 time=144 ms (DUP!)\n";
        let l = parse_ping_d(text, "d").unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].wall_ns, 1_723_489_200_167_948_000);
    }

    #[test]
    fn score_is_one_to_one() {
        let d = |s: i64| Detection { start_ns: s, detect_ns: s + 50 };
        let s = score(&[d(100), d(130), d(1000)], &[110, 5000], 50);
        assert_eq!(s.matched, 1);
        assert_eq!(s.false_positives, vec![130, 1000]);
        assert_eq!(s.missed, vec![5000]);
        assert_eq!(s.delays_ns, vec![40]);
        assert_eq!(percentile(&[5, 1, 3, 2, 4], 50.0), Some(3));
        assert_eq!(percentile(&[5, 1, 3, 2, 4], 95.0), Some(5));
    }

    #[test]
    fn daemon_log_is_scored_on_trace_time() {
        let log = concat!(
            r#"{"type":"pop_unreachable","t_mono_ms":1.0}"#, "\n",
            r#"{"type":"reconfig","t_mono_ms":11990.0,"detect_mono_ms":12130.0}"#, "\n",
            r#"{"type":"reconfig","t_mono_ms":20000.0,"detect_mono_ms":20100.0}"#, "\n",
        );
        // Trace time zero at monotonic 10 s: events at trace 1.99 s and 10 s; truth 2 s, 17 s.
        let s = score_log(log, 10_000_000_000, &[2_000_000, 17_000_000, 99_000_000], 30_000_000).unwrap();
        assert_eq!((s.truth, s.detections, s.matched), (2, 2, 1));
        assert_eq!(s.delays_ns, vec![130_000]);
        assert_eq!(s.missed, vec![17_000_000]);
        assert!(score_log("{not json", 0, &[], 1).unwrap_err().contains("log line 1"));
    }

    /// Told the link follows Starlink's slots (the daemon's `--schedule starlink`), the
    /// detector finds the first minute's outages, which it cannot judge by their evidence alone
    /// before it has learned the schedule; told it of a OneWeb-like 11 s grid's stream, it loses
    /// nothing once the seed's slots stay silent.
    #[test]
    fn a_starlink_seed_finds_the_first_minutes_outages_and_a_wrong_one_costs_little() {
        use crate::gen::{generate, GenConfig, Grid, PathKind, ONEWEB_PERIOD_S};
        let score = |grid, seed_schedule| {
            let mut t = Totals::default();
            for seed in 1..=6 {
                let c = GenConfig { grid, duration_s: 60.0, ..GenConfig::new(PathKind::BentPipe, seed) };
                let stream = generate(&c).unwrap();
                t.add(&score_generated(&stream, DetectorConfig { seed_schedule, ..DetectorConfig::default() }).score);
            }
            t
        };
        let (learned, seeded) = (score(Grid::Starlink, false), score(Grid::Starlink, true));
        let (r0, r1) = (learned.recall().unwrap(), seeded.recall().unwrap());
        assert!(r1 >= r0 + 0.2, "first minute recall: learned {r0:.2}, seeded {r1:.2}");
        assert!(seeded.precision().unwrap() >= 0.9, "{seeded:?}");
        let (learned, seeded) = (score(Grid::Period(ONEWEB_PERIOD_S), false), score(Grid::Period(ONEWEB_PERIOD_S), true));
        assert!(seeded.matched + 1 >= learned.matched, "a wrong seed: learned {learned:?}, seeded {seeded:?}");
        assert!(seeded.detections <= learned.detections + 1, "a wrong seed adds no false events: {learned:?} {seeded:?}");
    }
}
