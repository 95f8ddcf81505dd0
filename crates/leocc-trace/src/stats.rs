//! Trace statistics and reconfiguration detection, shared by `leocc trace stat` and the
//! evaluation report.
//!
//! Capacity is summarised over 100 ms bins, one-way delay over its own intervals. Outages are
//! runs of at least 20 ms without a delivery opportunity. Reconfigurations are detected from
//! four signals, in order of trust:
//!  1. an outage of at least 45 ms (the paper's Δoutage: a reconfiguration interrupts the link
//!     for 45-130 ms), timed at the outage start;
//!  2. a spike of the one-way delay well above the median of the second before (the real
//!     series jump by 12-40 ms for a few tens of ms right after each reconfiguration);
//!  3. a level step in the one-way delay (each reconfiguration moves to a new base delay);
//!  4. a level step in capacity (each reconfiguration moves to a new capacity level).
//!
//! A step compares the medians of the windows before and after a point; medians ignore the
//! short spikes around an outage and the RTT-band jitter. A later signal only adds an event
//! when no event is already within [`MERGE_WINDOW_US`].
//!
//! Delay steps are not all reconfigurations: inside an interval the delay switches between a
//! few discrete bands (seed §4.1.2, "RTTs form discrete bands"), and a band that dwells for
//! seconds moves the median as much as a reconfiguration does. A delay step with no outage,
//! spike or capacity step near it is therefore a **band switch** when, within its interval
//! between such physical events, the level it moves to was already held before it, or the
//! level it leaves is held again after it (a band recurs; a new base delay does not). It is a
//! reconfiguration when it moves to a level the interval never held, for good. `stat` lists
//! outages, reconfigurations and band switches separately. The period is the grid spacing that
//! explains most reconfigurations (see [`detect_period_ms`]); extra events off the grid do not
//! hide it.

use serde::Serialize;

use crate::link::{empty_runs, LinkModel};
use leocc_base::metrics::{self, median_with};
use crate::model::{Dir, Trace};

/// Capacity statistics use bins of 100 ms (issue 2).
pub const CAPACITY_BIN_US: u64 = 100_000;
/// An outage at least this long is a reconfiguration: Δoutage = 45 ms (LeoCC §4.1.1).
pub const RECONFIG_OUTAGE_MIN_US: u64 = 45_000;
/// Events closer than this are one reconfiguration (outage, delay spike, level change).
pub const MERGE_WINDOW_US: u64 = 1_000_000;
/// Window on each side of a candidate step: 1 s (reconfigurations are >= several s apart).
pub const STEP_WINDOW_US: u64 = 1_000_000;
/// A delay spike rises at least this far above the median of the preceding second: 12 ms.
/// In the real series (site-A downlink, the uplink example) spikes at reconfigurations rise
/// 12-40 ms while the band jitter stays within ~6 ms.
pub const DELAY_SPIKE_MIN_US: f64 = 12_000.0;
/// ... and at least this fraction of that median (long, jittery ISL paths need more).
pub const DELAY_SPIKE_MIN_FRAC: f64 = 0.5;
/// A delay step must move the median base delay by at least this much: 4 ms, above the
/// 1-3 ms band jitter of the real uplink example.
pub const DELAY_STEP_MIN_US: f64 = 4_000.0;
/// ... and by at least this fraction of the lower level.
pub const DELAY_STEP_MIN_FRAC: f64 = 0.25;
/// A capacity step must change the median 100 ms capacity by at least this fraction of the
/// higher level (real 100 ms capacity varies by ±30 % within an interval).
pub const CAPACITY_STEP_MIN_FRAC: f64 = 0.5;
/// The delay right after a reconfiguration (its spike and settling) is not one of the new
/// interval's bands: band history starts this long after the event.
pub const BAND_SKIP_AFTER_EVENT_US: u64 = 500_000;
/// Period search range, ms: OneWeb (~11 s) and Starlink (15 s) fall well inside.
pub const PERIOD_MIN_MS: f64 = 2_000.0;
/// Upper end of the period search, ms.
pub const PERIOD_MAX_MS: f64 = 60_000.0;
/// Step of the period search, ms.
pub const PERIOD_STEP_MS: f64 = 2.0;
/// An event fits the grid when within this distance of a grid point, ms.
pub const PERIOD_TOLERANCE_MS: f64 = 50.0;

/// Mean and percentiles of a distribution.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// 5th percentile.
    pub p5: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
}

impl Summary {
    /// Summarises run-length encoded values (value, how many times): the same numbers as
    /// [`Summary::of`] on the expanded list, in memory proportional to the runs.
    pub fn of_runs(runs: &[(f64, u64)]) -> Summary {
        let n: u64 = runs.iter().map(|r| r.1).sum();
        if n == 0 {
            return Summary::of(&[]);
        }
        let mut v: Vec<(f64, u64)> = runs.iter().copied().filter(|r| r.1 > 0).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mean = v.iter().map(|&(x, c)| x * c as f64).sum::<f64>() / n as f64;
        // The k-th order statistic (0-based) of the expanded, sorted list.
        let nth = |k: u64| {
            let mut seen = 0;
            v.iter().find(|&&(_, c)| { seen += c; k < seen }).map_or(0.0, |r| r.0)
        };
        let pct = |q: f64| metrics::quantile_linear_by(n as usize, q / 100.0, |k| nth(k as u64));
        Summary { mean: round3(mean), p5: round3(pct(5.0)), p50: round3(pct(50.0)), p95: round3(pct(95.0)) }
    }

    /// Summarises `values` (linear interpolation between order statistics); zeros if empty.
    pub fn of(values: &[f64]) -> Summary {
        if values.is_empty() {
            return Summary { mean: 0.0, p5: 0.0, p50: 0.0, p95: 0.0 };
        }
        let v = metrics::sorted(values);
        let mean = metrics::mean(&v).unwrap_or(0.0);
        let pct = |p: f64| metrics::quantile_linear(&v, p / 100.0).unwrap_or(0.0);
        Summary { mean: round3(mean), p5: round3(pct(5.0)), p50: round3(pct(50.0)), p95: round3(pct(95.0)) }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// An outage in ms, as `stat --json` prints it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct OutageMs {
    /// First ms without an opportunity.
    pub start_ms: f64,
    /// Length in ms.
    pub len_ms: f64,
}

/// What `leocc trace stat` reports. Field names are the JSON contract of issue 2.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// Trace name.
    pub name: String,
    /// The direction described.
    pub direction: &'static str,
    /// Length of one loop of the trace, s.
    pub duration_s: f64,
    /// Capacity over 100 ms bins, Mbit/s.
    pub capacity_mbps: Summary,
    /// One-way base delay, ms.
    pub owd_ms: Summary,
    /// Mean random-loss probability.
    pub loss: f64,
    /// Runs of at least 20 ms without an opportunity.
    pub outages: Vec<OutageMs>,
    /// Detected reconfigurations, ms.
    pub reconfigurations_ms: Vec<f64>,
    /// Delay level steps inside an interval between a few recurring bands: RTT band
    /// switches, not reconfigurations, ms.
    pub band_switches_ms: Vec<f64>,
    /// Period of the reconfigurations, ms; `None` (null) when aperiodic.
    pub period_ms: Option<f64>,
    /// Ground-truth reconfigurations recorded in the trace, ms (empty when unknown).
    pub truth_reconfigurations_ms: Vec<f64>,
    /// Capacity of the terrestrial segment over 100 ms bins, Mbit/s (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terrestrial_capacity_mbps: Option<Summary>,
}

/// Computes the statistics of one direction of `trace`.
pub fn stats(trace: &Trace, dir: Dir) -> Stats {
    let link = trace.link(dir);
    let cap = trace.capacity(dir).expect("validated trace");
    let res = trace.meta.resolution_us;
    let outages: Vec<OutageMs> = outages_in_period(cap.times_us(), cap.period_us(), res)
        .into_iter()
        .map(|o| OutageMs { start_ms: us_to_ms(o.start_us), len_ms: us_to_ms(o.len_us) })
        .collect();
    // Summaries only: no samples kept, just the value counts.
    let bins = Runs::of(capacity_bins_mbps(&link).enumerate().map(|(b, v)| (b as u64 * CAPACITY_BIN_US, v)), 0);
    let delay = Runs::of(delay_samples_us(trace, dir).map(|(t, d)| (t, d as f64 / 1000.0)), 0);
    let found = classify(trace, dir);
    let events = found.reconfigurations;
    Stats {
        name: trace.meta.name.clone(),
        direction: dir.as_str(),
        duration_s: trace.duration_us() as f64 / 1e6,
        capacity_mbps: Summary::of_runs(&bins.runs),
        owd_ms: Summary::of_runs(&delay.runs),
        loss: round3(trace.dir(dir).loss.mean() * 1000.0) / 1000.0,
        outages,
        reconfigurations_ms: events.iter().map(|&t| us_to_ms(t)).collect(),
        band_switches_ms: found.band_switches.iter().map(|&t| us_to_ms(t)).collect(),
        period_ms: detect_period_ms(&events),
        truth_reconfigurations_ms: trace.reconfigurations.iter().map(|&t| us_to_ms(t)).collect(),
        terrestrial_capacity_mbps: trace
            .terrestrial()
            .map(|l| Summary::of_runs(&Runs::of(capacity_bins_mbps(&l).enumerate().map(|(b, v)| (b as u64, v)), 0).runs)),
    }
}

fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Runs without opportunity (see [`empty_runs`]) folded into one period: the run that wraps
/// from the last opportunity to the first of the next loop starts at or after the period when
/// the period ends on an opportunity (mahimahi), and is the same outage as at the trace start.
/// Without folding, `604799999` alone reported no outage while `1\n604799999` reported 7 days.
pub fn outages_in_period(times: &[u64], period: u64, res: u64) -> Vec<crate::model::Span> {
    let mut v: Vec<crate::model::Span> = empty_runs(times, period, res)
        .into_iter()
        .map(|o| crate::model::Span { start_us: o.start_us % period, len_us: o.len_us })
        .collect();
    v.sort_by_key(|o| o.start_us);
    v
}

/// Capacity per full 100 ms bin of one period, Mbit/s, computed lazily: a trace's period can
/// be days long with only a few opportunities, so callers must not collect this blindly (see
/// [`Runs`]).
pub fn capacity_bins_mbps(link: &LinkModel) -> impl Iterator<Item = f64> + '_ {
    let n = capacity_bin_count(link);
    (0..n).map(|b| link.mean_capacity_bps(b * CAPACITY_BIN_US, (b + 1) * CAPACITY_BIN_US) / 1e6)
}

/// How many items [`capacity_bins_mbps`] yields.
pub fn capacity_bin_count(link: &LinkModel) -> u64 {
    link.period_us() / CAPACITY_BIN_US
}

/// The delay of `dir` sampled at each interval start within one period: (time, delay) µs,
/// lazily (see [`capacity_bins_mbps`]). The count is [`delay_sample_count`].
pub fn delay_samples_us(trace: &Trace, dir: Dir) -> impl Iterator<Item = (u64, u64)> + '_ {
    let d = trace.delay(dir);
    (0..delay_sample_count(trace, dir)).map(move |i| (i * d.interval_us, d.at(i * d.interval_us)))
}

/// How many items [`delay_samples_us`] yields.
pub fn delay_sample_count(trace: &Trace, dir: Dir) -> u64 {
    let period = trace.capacity(dir).expect("validated trace").period_us();
    period.div_ceil(trace.delay(dir).interval_us.max(1)).max(1)
}

/// A regularly sampled series in memory bounded by its changes, not its length: a run of
/// equal values (an empty stretch of days, a delay held after the series ends) keeps only its
/// first and last `keep` samples with their true times. With `keep` at least twice a
/// detector's window, every window of the step and spike detectors, and their non-maximum
/// suppression over ±window, sees exactly what it would see in the full series (the dropped
/// middle holds windows of one value, which are never a step). `runs` keeps the exact value
/// counts for summaries.
struct Runs {
    times: Vec<u64>,
    values: Vec<f64>,
    runs: Vec<(f64, u64)>,
}

impl Runs {
    fn of(samples: impl Iterator<Item = (u64, f64)>, keep: usize) -> Runs {
        let mut r = Runs { times: Vec::new(), values: Vec::new(), runs: Vec::new() };
        let mut tail: std::collections::VecDeque<(u64, f64)> = std::collections::VecDeque::new();
        let flush = |r: &mut Runs, tail: &mut std::collections::VecDeque<(u64, f64)>| {
            for (t, v) in tail.drain(..) {
                r.times.push(t);
                r.values.push(v);
            }
        };
        for (t, v) in samples {
            match r.runs.last_mut() {
                Some(run) if run.0 == v => run.1 += 1,
                _ => {
                    flush(&mut r, &mut tail);
                    r.runs.push((v, 1));
                }
            }
            if r.runs.last().is_some_and(|run| run.1 as usize <= keep) {
                r.times.push(t);
                r.values.push(v);
            } else {
                tail.push_back((t, v));
                if tail.len() > keep {
                    tail.pop_front();
                }
            }
        }
        flush(&mut r, &mut tail);
        r
    }
}

/// Detected reconfiguration times (µs) of one direction, sorted. See the module docs.
pub fn detect_reconfigurations(trace: &Trace, dir: Dir) -> Vec<u64> {
    classify(trace, dir).reconfigurations
}

/// The events of one direction, separated (µs, sorted).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Classified {
    /// Reconfigurations: outages, delay spikes, capacity steps, delay steps to a new level.
    pub reconfigurations: Vec<u64>,
    /// Delay steps between recurring bands inside an interval.
    pub band_switches: Vec<u64>,
}

/// Outages, spikes and level steps of one direction, separated into reconfigurations and band
/// switches (module docs).
pub fn classify(trace: &Trace, dir: Dir) -> Classified {
    let cap = trace.capacity(dir).expect("validated trace");
    let link = trace.link(dir);
    let mut events: Vec<u64> = outages_in_period(cap.times_us(), cap.period_us(), trace.meta.resolution_us)
        .into_iter()
        .filter(|o| o.len_us >= RECONFIG_OUTAGE_MIN_US)
        .map(|o| o.start_us)
        .collect();
    let w = step_samples(trace.delay(dir).interval_us);
    let delay = Runs::of(delay_samples_us(trace, dir).map(|(t, d)| (t, d as f64)), 2 * w + 1);
    let (times, values) = (&delay.times, &delay.values);
    add_unless_near(&mut events, delay_spikes(times, values, w));
    let wc = step_samples(CAPACITY_BIN_US);
    let bins = Runs::of(capacity_bins_mbps(&link).enumerate().map(|(b, v)| (b as u64 * CAPACITY_BIN_US, v)), 2 * wc + 1);
    add_unless_near(&mut events, level_steps(&bins.times, &bins.values, wc, is_capacity_step));
    // Delay steps last, each judged within its interval between physical events.
    let primary = events.clone();
    let mut band_switches = Vec::new();
    for t in level_steps(times, values, w, is_delay_step) {
        let i = events.partition_point(|&e| e < t);
        let near = |j: usize| events.get(j).is_some_and(|&e| e.abs_diff(t) < MERGE_WINDOW_US);
        if near(i) || (i > 0 && near(i - 1)) {
            continue;
        }
        let k = primary.partition_point(|&e| e < t);
        let since = if k > 0 { primary[k - 1] } else { 0 };
        let until = primary.get(k).copied().unwrap_or(u64::MAX);
        if is_band_switch(times, values, (since, until), t, w) {
            band_switches.push(t);
        } else {
            events.insert(i, t);
        }
    }
    Classified { reconfigurations: events, band_switches }
}

/// Whether the delay step at `t` only switched bands inside the interval (since, until)
/// between physical events: the level it moves to was already held before it in the interval,
/// or the level it leaves is held again after it. A reconfiguration without outage or spike
/// moves to a level the interval never held and does not come back. (On run-compressed samples
/// a long constant stretch keeps its ends, enough to count as held.)
fn is_band_switch(times: &[u64], values: &[f64], (since, until): (u64, u64), t: u64, w: usize) -> bool {
    let from = times.partition_point(|&x| x < since.saturating_add(BAND_SKIP_AFTER_EVENT_US));
    let to = times.partition_point(|&x| x < until);
    let at = times.partition_point(|&x| x < t);
    if at < w || at + w > values.len() {
        return false;
    }
    let mut buf = Vec::new();
    let before = median_with(&values[at - w..at], &mut buf);
    let after = median_with(&values[at..at + w], &mut buf);
    let margin = DELAY_STEP_MIN_US / 2.0;
    // A band is held when at least a quarter of a step window sits at its level.
    let need = (w / 4).max(1);
    let held = |s: &[f64], level: f64| s.iter().filter(|&&v| (v - level).abs() <= margin).count() >= need;
    // Before the step's own window, after the step's own window.
    let earlier = if from + w <= at { &values[from..at - w] } else { &values[0..0] };
    let later = if at + w < to { &values[at + w..to] } else { &values[0..0] };
    held(earlier, after) || held(later, before)
}

fn step_samples(interval_us: u64) -> usize {
    (STEP_WINDOW_US / interval_us.max(1)).max(1) as usize
}

fn is_delay_step(before: f64, after: f64) -> bool {
    let diff = (after - before).abs();
    diff >= DELAY_STEP_MIN_US && diff >= DELAY_STEP_MIN_FRAC * before.min(after)
}

fn is_capacity_step(before: f64, after: f64) -> bool {
    (after - before).abs() >= CAPACITY_STEP_MIN_FRAC * before.max(after) && before.max(after) > 0.0
}

/// Adds `new` events to the sorted `events` unless one is within [`MERGE_WINDOW_US`].
fn add_unless_near(events: &mut Vec<u64>, new: Vec<u64>) {
    for t in new {
        let i = events.partition_point(|&e| e < t);
        let near = |j: usize| events.get(j).is_some_and(|&e| e.abs_diff(t) < MERGE_WINDOW_US);
        if !(near(i) || (i > 0 && near(i - 1))) {
            events.insert(i, t);
        }
    }
}

/// Samples that rise above the median of the `w` samples before them by a spike (see
/// [`DELAY_SPIKE_MIN_US`]); one event per spike (the first sample), later samples of the
/// same spike are merged by the caller's window.
fn delay_spikes(times: &[u64], values: &[f64], w: usize) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let mut buf = Vec::with_capacity(w);
    for i in w..values.len() {
        if out.last().is_some_and(|&e| times[i] - e < MERGE_WINDOW_US) {
            continue;
        }
        let base = median_with(&values[i - w..i], &mut buf);
        if values[i] - base >= DELAY_SPIKE_MIN_US.max(DELAY_SPIKE_MIN_FRAC * base) {
            out.push(times[i]);
        }
    }
    out
}

/// Points where the median of the `w` samples after differs from the median of the `w`
/// samples before by a step that `is_step` accepts; of neighbouring candidates the one
/// with the largest change of the means wins (non-maximum suppression over ±w samples).
fn level_steps(times: &[u64], values: &[f64], w: usize, is_step: fn(f64, f64) -> bool) -> Vec<u64> {
    if values.len() < 2 * w + 1 {
        return Vec::new();
    }
    let mut change = vec![0.0f64; values.len()];
    let mut buf = Vec::with_capacity(w);
    for i in w..=values.len() - w {
        let before = median_with(&values[i - w..i], &mut buf);
        let after = median_with(&values[i..i + w], &mut buf);
        if is_step(before, after) {
            // Medians decide whether there is a step, means locate it: the median change is
            // flat over a whole window, the mean change peaks at the step itself.
            let mean = |s: &[f64]| metrics::mean(s).unwrap_or(f64::NAN);
            change[i] = (mean(&values[i..i + w]) - mean(&values[i - w..i])).abs() + f64::MIN_POSITIVE;
        }
    }
    (0..values.len())
        .filter(|&i| change[i] > 0.0)
        .filter(|&i| {
            let (lo, hi) = (i.saturating_sub(w), (i + w).min(values.len() - 1));
            // Strictly larger than earlier neighbours, at least as large as later ones.
            (lo..i).all(|j| change[j] < change[i]) && (i + 1..=hi).all(|j| change[j] <= change[i])
        })
        .map(|i| times[i])
        .collect()
}

/// The period (ms) of the reconfiguration times `events_us`, or `None` when aperiodic.
///
/// For each candidate period P the events' phases (t mod P) are clustered; the best cluster
/// counts the events within ±[`PERIOD_TOLERANCE_MS`] of one grid. A candidate qualifies when
/// at least 3 events and a third of all events fit (extra, aperiodic events may outnumber the
/// periodic ones two to one), and the grid points between the first and the last fitting
/// event are at least 60 % occupied; when fewer than half fit, at least 4 must, on a grid at
/// least 75 % occupied. Among qualifying candidates the most
/// fitting events win, then the fullest grid (this rules out P/2, P/3, ...), then the tightest
/// phase cluster. The winner is refined by a least-squares fit of the fitting events against
/// their grid index.
pub fn detect_period_ms(events_us: &[u64]) -> Option<f64> {
    if events_us.len() < 3 {
        return None;
    }
    let ev: Vec<f64> = events_us.iter().map(|&t| t as f64 / 1000.0).collect();
    // Best = most fitting events, then the fullest grid, then the tightest phase cluster.
    let mut best: Option<(GridFit, f64)> = None;
    let mut p = PERIOD_MIN_MS;
    while p <= PERIOD_MAX_MS {
        if let Some(fit) = grid_fit(&ev, p) {
            if best.as_ref().is_none_or(|(b, _)| fit.better_than(b)) {
                best = Some((fit, p));
            }
        }
        p += PERIOD_STEP_MS;
    }
    let (_, p) = best?;
    refine_period(&ev, p).map(|x| (x * 10.0).round() / 10.0)
}

/// How well a grid explains the events.
struct GridFit {
    /// Events within tolerance of the grid.
    count: usize,
    /// Fraction of grid points between the first and last fitting event that hold one.
    coverage: f64,
    /// Spread of the fitting events' phases, ms.
    spread: f64,
}

impl GridFit {
    fn better_than(&self, o: &GridFit) -> bool {
        const SAME: f64 = 1e-9;
        if self.count != o.count {
            return self.count > o.count;
        }
        if (self.coverage - o.coverage).abs() > SAME {
            return self.coverage > o.coverage;
        }
        self.spread < o.spread
    }
}

/// How the events fit the best phase of grid `p`, if the grid qualifies.
fn grid_fit(ev: &[f64], p: f64) -> Option<GridFit> {
    let fit = fitting_events(ev, p);
    if fit.len() < 3 || fit.len() * 3 < ev.len() {
        return None;
    }
    let (first, last) = (fit[0], fit[fit.len() - 1]);
    let slots = ((last - first) / p).round() as usize + 1;
    let coverage = fit.len() as f64 / slots as f64;
    if coverage < 0.6 {
        return None;
    }
    // Outnumbered by extra events, a grid must be better supported: three chance alignments
    // among many random events are common, four on a nearly full grid are not.
    if fit.len() * 2 < ev.len() && (fit.len() < 4 || coverage < 0.75) {
        return None;
    }
    let phases: Vec<f64> = fit.iter().map(|t| (t - first) - p * ((t - first) / p).round()).collect();
    let spread = phases.iter().cloned().fold(f64::MIN, f64::max) - phases.iter().cloned().fold(f64::MAX, f64::min);
    Some(GridFit { count: fit.len(), coverage, spread })
}

/// The events within ±tolerance of the most populated phase of grid `p`.
fn fitting_events(ev: &[f64], p: f64) -> Vec<f64> {
    let mut ph: Vec<(f64, f64)> = ev.iter().map(|&t| (t.rem_euclid(p), t)).collect();
    ph.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = ph.len();
    let width = 2.0 * PERIOD_TOLERANCE_MS;
    let (mut best_i, mut best_n) = (0, 0);
    let mut j = 0;
    // Circular sliding window over the sorted phases.
    for i in 0..n {
        if j < i {
            j = i;
        }
        while j + 1 < i + n && {
            let (a, b) = (ph[i].0, ph[(j + 1) % n].0 + if j + 1 >= n { p } else { 0.0 });
            b - a <= width
        } {
            j += 1;
        }
        if j - i + 1 > best_n {
            best_n = j - i + 1;
            best_i = i;
        }
    }
    let mut out: Vec<f64> = (best_i..best_i + best_n).map(|k| ph[k % n].1).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// Least-squares slope of the fitting events of grid `p` against their grid index.
fn refine_period(ev: &[f64], p: f64) -> Option<f64> {
    let fit = fitting_events(ev, p);
    let first = *fit.first()?;
    let pts: Vec<(f64, f64)> = fit.iter().map(|&t| (((t - first) / p).round(), t)).collect();
    let n = pts.len() as f64;
    let (mx, my) = (pts.iter().map(|q| q.0).sum::<f64>() / n, pts.iter().map(|q| q.1).sum::<f64>() / n);
    let sxx: f64 = pts.iter().map(|q| (q.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|q| (q.0 - mx) * (q.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_of_a_clean_grid_with_noise_events() {
        let mut ev: Vec<u64> = (0..8).map(|k| 8_688_000 + k * 15_001_000 + (k % 3) * 3000).collect();
        ev.push(31_000_000); // an aperiodic one
        ev.sort();
        let p = detect_period_ms(&ev).unwrap();
        assert!((p - 15_001.0).abs() < 5.0, "{p}");
    }

    #[test]
    fn three_events_prefer_the_full_grid_over_its_half() {
        let p = detect_period_ms(&[14_825_000, 29_825_000, 44_825_000]).unwrap();
        assert!((p - 15_000.0).abs() < 1.0, "{p}");
    }

    #[test]
    fn random_events_are_aperiodic() {
        let ev = [1_000_000, 4_300_000, 11_000_000, 12_500_000, 30_100_000, 31_000_000, 47_700_000];
        assert_eq!(detect_period_ms(&ev), None);
        assert_eq!(detect_period_ms(&[1, 2]), None);
    }

    #[test]
    fn json_keys_are_the_contract() {
        let t = crate::gen::generate(crate::gen::Profile::StarlinkDown, 30_000, 2, "x").unwrap();
        let v = serde_json::to_value(stats(&t, Dir::Down)).unwrap();
        for k in ["duration_s", "capacity_mbps", "owd_ms", "outages", "reconfigurations_ms", "period_ms"] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        for k in ["mean", "p5", "p50", "p95"] {
            assert!(v["capacity_mbps"][k].is_f64() && v["owd_ms"][k].is_f64(), "{k}");
        }
        let o = &v["outages"][0];
        assert!(o["start_ms"].is_f64() && o["len_ms"].is_f64());
        assert_eq!(v["duration_s"], 30.0);
        let aperiodic = crate::gen::generate(crate::gen::Profile::Geo, 5_000, 1, "x").unwrap();
        assert!(serde_json::to_value(stats(&aperiodic, Dir::Down)).unwrap()["period_ms"].is_null());
    }

    #[test]
    fn steps_in_delay_and_capacity_without_outages_are_detected() {
        use crate::model::{Capacity, DelaySeries, DirTrace, Loss, Measured, Meta};
        // 30 s at 12 Mbit/s (one opportunity per ms), 24 Mbit/s from 20 s on; delay 10 ms,
        // 25 ms from 10 s on. No outage anywhere.
        let times: Vec<u64> = (1..=30_000u64).flat_map(|ms| std::iter::repeat_n(ms * 1000, if ms >= 20_000 { 2 } else { 1 })).collect();
        let delay: Vec<u64> = (0..3000).map(|i| if i < 1000 { 10_000 } else { 25_000 } + (i % 3) * 1000).collect();
        let t = Trace {
            meta: Meta { name: "steps".into(), direction: Measured::Down, ..Meta::default() },
            down: DirTrace {
                capacity: Some(Capacity::new(times, None).unwrap()),
                delay: Some(DelaySeries { interval_us: 10_000, values_us: delay.into() }),
                loss: Loss::Constant(0.0),
            },
            up: DirTrace::default(),
            reconfigurations: vec![],
            outages: vec![],
            terrestrial: None,
        };
        let ev = detect_reconfigurations(&t, Dir::Down);
        assert_eq!(ev.len(), 2, "{ev:?}");
        assert!(ev[0].abs_diff(10_000_000) <= 20_000, "{ev:?}");
        assert!(ev[1].abs_diff(20_000_000) <= 100_000, "{ev:?}");
    }

    #[test]
    fn delay_spikes_are_found_once_and_jitter_is_not_a_spike() {
        let times: Vec<u64> = (0..1000).map(|i| i * 10_000).collect();
        let mut v: Vec<f64> = (0..1000).map(|i| 10_000.0 + (i % 4) as f64 * 1500.0).collect();
        for (i, x) in v.iter_mut().enumerate().skip(500).take(4) {
            *x += 25_000.0 - (i - 500) as f64 * 5000.0;
        }
        assert_eq!(delay_spikes(&times, &v, 100), vec![5_000_000]);
    }

    /// 60 s at 12 Mbit/s with reconfigurations (60 ms outages) every 15 s from 5 s on, each to a
    /// new base delay, and inside each interval the delay switching between three bands
    /// (+0/+8/+16 ms) with dwell times of 1.2-2.6 s.
    fn banded_trace() -> Trace {
        use crate::model::{Capacity, DelaySeries, DirTrace, Loss, Measured, Meta};
        let reconf_ms = [5_000u64, 20_000, 35_000, 50_000];
        let times: Vec<u64> = (1..=60_000u64).filter(|ms| !reconf_ms.iter().any(|&r| *ms >= r && *ms < r + 60)).map(|ms| ms * 1000).collect();
        let bases = [30_000u64, 42_000, 26_000, 38_000, 33_000];
        let dwell = [120usize, 260, 150, 200, 130, 240, 170];
        let mut delay = Vec::with_capacity(6000);
        let (mut band, mut left, mut k) = (0u64, dwell[0], 0usize);
        for i in 0..6000u64 {
            let base = bases[reconf_ms.iter().filter(|&&r| i * 10 >= r).count()];
            if left == 0 {
                band = (band + 1 + (k as u64 % 2)) % 3;
                k += 1;
                left = dwell[k % dwell.len()];
            }
            left -= 1;
            delay.push(base + band * 8_000 + (i % 3) * 300);
        }
        Trace {
            meta: Meta { name: "banded".into(), direction: Measured::Down, ..Meta::default() },
            down: DirTrace {
                capacity: Some(Capacity::new(times, None).unwrap()),
                delay: Some(DelaySeries { interval_us: 10_000, values_us: delay.into() }),
                loss: Loss::Constant(0.0),
            },
            up: DirTrace::default(),
            reconfigurations: reconf_ms.iter().map(|r| r * 1000).collect(),
            outages: vec![],
            terrestrial: None,
        }
    }

    #[test]
    fn band_switches_are_not_reconfigurations_and_the_period_survives_them() {
        let t = banded_trace();
        let c = classify(&t, Dir::Down);
        assert!(c.band_switches.len() >= 5, "the bands dwell long enough to move the median: {c:?}");
        let truth = &t.reconfigurations;
        let false_ones: Vec<u64> = c.reconfigurations.iter().copied().filter(|r| !truth.iter().any(|x| x.abs_diff(*r) <= 100_000)).collect();
        assert!(false_ones.len() * 10 <= c.reconfigurations.len(), "band switches listed as reconfigurations: {false_ones:?} of {c:?}");
        for x in truth {
            assert!(c.reconfigurations.iter().any(|r| r.abs_diff(*x) <= 100_000), "missed {x}: {c:?}");
        }
        let s = stats(&t, Dir::Down);
        assert_eq!(s.band_switches_ms.len(), c.band_switches.len());
        let p = s.period_ms.expect("periodic");
        assert!((p - 15_000.0).abs() < 5.0, "{p}");
        // Extra events off the grid (twice as many as on it) do not hide the period.
        let mut ev: Vec<u64> = truth.clone();
        ev.extend([7_300_000, 11_100_000, 24_700_000, 29_900_000, 41_200_000, 44_400_000, 53_800_000, 57_100_000]);
        ev.sort();
        let p = detect_period_ms(&ev).expect("periodic despite extras");
        assert!((p - 15_000.0).abs() < 5.0, "{p}");
    }

    #[test]
    fn summary_percentiles() {
        let v: Vec<f64> = (0..=100).map(f64::from).collect();
        let s = Summary::of(&v);
        assert_eq!((s.mean, s.p5, s.p50, s.p95), (50.0, 5.0, 50.0, 95.0));
    }

    #[test]
    fn level_steps_find_one_step_and_ignore_noise() {
        let times: Vec<u64> = (0..600).map(|i| i * 10_000).collect();
        let values: Vec<f64> = (0..600).map(|i| if i < 300 { 20_000.0 } else { 40_000.0 } + (i % 3) as f64 * 1000.0).collect();
        assert_eq!(level_steps(&times, &values, 100, is_delay_step), vec![3_000_000]);
        let flat: Vec<f64> = (0..600).map(|i| 20_000.0 + (i % 7) as f64 * 500.0).collect();
        assert!(level_steps(&times, &flat, 100, is_delay_step).is_empty());
    }

    /// Compressing long runs changes no detection: steps and spikes on both sides of long
    /// constant stretches come out the same as on the full series.
    #[test]
    fn compressed_runs_detect_the_same_steps_and_spikes() {
        let mut values = Vec::new();
        for (v, n) in [(0.0, 500), (50.0, 3000), (0.0, 40), (50.0, 25), (0.0, 9000), (80.0, 12), (30.0, 700)] {
            values.extend(std::iter::repeat_n(v, n));
        }
        let times: Vec<u64> = (0..values.len() as u64).map(|i| i * CAPACITY_BIN_US).collect();
        let w = step_samples(CAPACITY_BIN_US);
        let r = Runs::of(times.iter().copied().zip(values.iter().copied()), 2 * w + 1);
        assert!(r.values.len() < values.len() / 5, "{} of {}", r.values.len(), values.len());
        assert_eq!(level_steps(&r.times, &r.values, w, is_capacity_step), level_steps(&times, &values, w, is_capacity_step));
        let delay: Vec<f64> = values.iter().map(|v| 20_000.0 + v * 1000.0).collect();
        let r = Runs::of(times.iter().copied().zip(delay.iter().copied()), 2 * w + 1);
        assert_eq!(delay_spikes(&r.times, &r.values, w), delay_spikes(&times, &delay, w));
        assert_eq!(level_steps(&r.times, &r.values, w, is_delay_step), level_steps(&times, &delay, w, is_delay_step));
        let dense = Summary::of(&values);
        assert_eq!(Summary::of_runs(&r.runs).p50, Summary::of(&delay).p50);
        assert_eq!(Summary::of_runs(&Runs::of(times.iter().copied().zip(values.iter().copied()), 0).runs), dense);
    }

    #[global_allocator]
    static ALLOC: leocc_base::alloc_count::Counting = leocc_base::alloc_count::Counting;

    /// The 11-byte `1\n604799999\n` spans 7 days with two opportunities: statistics, detection
    /// and the plot must take memory for its content, not its span (was 179 MB), and the one-line
    /// form (the same link looped) must report the same week-long outage.
    #[test]
    fn week_long_sparse_trace_is_cheap_and_both_forms_agree_on_outages() {
        let load = |s: &str| crate::mahimahi::trace_from_capacity_file(std::path::Path::new("t"), s.as_bytes()).unwrap();
        let (two, one) = (load("1\n604799999\n"), load("604799999\n"));
        let (mut s1, mut s2) = (None, None);
        let used = leocc_base::alloc_count::peak_during(|| {
            s2 = Some(stats(&two, Dir::Down));
            s1 = Some(stats(&one, Dir::Down));
            crate::plot::figure(&two)
        });
        assert!(used < 4 << 20, "peak {used} bytes");
        let (s1, s2) = (s1.unwrap(), s2.unwrap());
        assert_eq!(s2.outages.len(), 1, "{:?}", s2.outages);
        assert_eq!(s1.outages.len(), 1, "{:?}", s1.outages);
        assert!(s1.outages[0].len_ms > 604_000_000.0 && s2.outages[0].len_ms > 604_000_000.0);
    }
}
