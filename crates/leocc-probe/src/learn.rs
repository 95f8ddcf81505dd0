//! The schedule prior, learned from the stream's own confident events.
//!
//! LEO reconfigurations mostly follow a grid: Starlink's 15 s (seconds 12/27/42/57 of each
//! minute), OneWeb's ~11 s; the grid may shift, and some events fall off it (seed §4.1.1). We do
//! not assume which: the learner keeps the outage-start times (CLOCK_MONOTONIC) of the last
//! [`MEMORY`] confident events, and after each one looks for the period and phase that put the
//! most of them on one grid. Candidates are the distances between remembered events divided
//! by 1..4 (a missed slot doubles a distance), within [`MIN_PERIOD_NS`, `MAX_PERIOD_NS`]; each
//! is refined by least squares over the events it explains. The winner explains the most
//! events (at least [`MIN_ON_GRID`]); among equals the longest period (the fundamental that
//! predicts no slot the stream never showed), then the newest anchor.
//!
//! The prior is a probability per probe interval that an outage starts in it:
//! - no grid learned: one reconfiguration per [`BASE_EVENT_PERIOD_NS`] (15 s), spread evenly:
//!   π = spacing / 15 s;
//! - near a predicted slot (within its window ± w, w = 3 × the rms residual of the fit, kept in
//!   [`MIN_WINDOW_NS`, `MAX_WINDOW_NS`]) not yet used by an event: the slot's outage falls in
//!   one of the 2w/spacing intervals of its window with the grid's reliability ρ:
//!   π = ρ · spacing / 2w;
//! - elsewhere: the rest of the base rate, never below one per [`MIN_EVENT_PERIOD_NS`].
//!
//! The reliability ρ = (hits + 1) / (hits + misses + 2) counts predicted slots that did or did
//! not see an event or at least a candidate (an RI above the threshold, however weak) while
//! replies were flowing, with forgetting; [`MISSES_TO_FORGET`]
//! consecutive misses mean the grid moved: the events up to its last hit slot are forgotten,
//! and the new grid is learned from those after it (already off the old grid, perhaps on the
//! new one) and the next ones.
//!
//! A grid known in advance (the wall-clock schedule the user names, e.g. Starlink's) can
//! [`seed`](ScheduleLearner::seed) the learner: it is used from the first reply instead of
//! after three confident events, and judged like a learned grid (reliability from no hits,
//! forgotten after [`MISSES_TO_FORGET`] silent slots). While it holds, a fit through the
//! remembered events only refines it: three stray events must not replace a grid the user
//! named and the stream keeps confirming (on a real bent-pipe recording, two unscheduled
//! outages 2-4 s after a slot replaced the 15 s grid by a 38 s one and cost the next slot).
//!
//! Cost: the fit runs once per confident event (O(MEMORY² × 4) candidates); per reply the
//! learner only compares the time with the next predicted slot.

/// Confident events remembered for the fit.
pub const MEMORY: usize = 16;
/// Candidates (any RI above the threshold) remembered to tell silent predicted slots from
/// slots that showed something.
pub const CANDIDATE_MEMORY: usize = 64;
/// Events that must lie on one grid for it to be believed (the anchor and two more).
pub const MIN_ON_GRID: usize = 3;
/// Shortest period considered, ns: 5 s (no LEO system reconfigures faster on a schedule).
pub const MIN_PERIOD_NS: i64 = 5_000_000_000;
/// Longest period considered, ns: 60 s.
pub const MAX_PERIOD_NS: i64 = 60_000_000_000;
/// An event is on a candidate grid when within this of a predicted slot, ns: the outage-start
/// estimate is the last reply before the gap, off by up to a probe spacing plus RTT jitter.
const FIT_TOLERANCE_NS: i64 = 120_000_000;
/// Bounds of the prior's window around a predicted slot, ns.
pub const MIN_WINDOW_NS: i64 = 50_000_000;
/// See [`MIN_WINDOW_NS`].
pub const MAX_WINDOW_NS: i64 = 250_000_000;
/// Half-width of a seed's window, ns: the narrowest a learned grid gets. The schedule names
/// the slot to the second; the outage-start estimate (the last reply before the gap) lies
/// 1-50 ms before it on the real bent-pipe recordings, and the first fit through three events
/// re-centres the window on where this path's estimates fall.
pub const SEED_WINDOW_NS: i64 = MIN_WINDOW_NS;
/// Window half-width in rms residuals of the fit.
const WINDOW_RMS: f64 = 3.0;
/// Without a grid: one reconfiguration per 15 s (Starlink's period; OneWeb's 11 s is close).
pub const BASE_EVENT_PERIOD_NS: f64 = 15e9;
/// Off the grid: at least one aperiodic reconfiguration per 5 minutes is possible.
pub const MIN_EVENT_PERIOD_NS: f64 = 300e9;
/// Consecutive monitored misses after which the grid is taken to have moved.
pub const MISSES_TO_FORGET: u32 = 2;
/// Forgetting of the hit/miss counts per predicted slot (an effective memory of ~10 slots).
const RELIABILITY_DECAY: f64 = 0.9;
/// The prior never exceeds this: even a certain slot leaves room for the gap being jitter.
const MAX_PRIOR: f64 = 0.5;

/// A learned grid.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Grid {
    /// Period, ns.
    pub period_ns: i64,
    /// A slot time (monotonic ns); the others are anchor + n × period.
    pub anchor_ns: i64,
    /// Half-width of the prior's window around each slot, ns.
    pub window_ns: i64,
    /// Remembered events on the grid.
    pub on_grid: usize,
}

impl Grid {
    /// Signed distance from `t` to the nearest slot, ns, and that slot's index.
    pub fn offset(&self, t: i64) -> (i64, i64) {
        let n = ((t - self.anchor_ns) as f64 / self.period_ns as f64).round() as i64;
        (t - (self.anchor_ns + n * self.period_ns), n)
    }
}

/// The prior for one interval, and how it was chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prior {
    /// Probability that an outage starts in this probe interval.
    pub p: f64,
    /// Distance to the nearest learned slot, ns (None: no grid).
    pub slot_offset_ns: Option<i64>,
    /// Whether the interval lies in the window of an unused slot.
    pub in_window: bool,
}

/// The learner.
#[derive(Clone, Debug, Default)]
pub struct ScheduleLearner {
    events: Vec<i64>,
    /// Start times of every recent candidate, weak ones included: a predicted slot with none
    /// near it is evidence against a grid.
    candidates: std::collections::VecDeque<i64>,
    grid: Option<Grid>,
    hits: f64,
    misses: f64,
    misses_in_row: u32,
    /// Time of the last slot that an acted-on event used (one outage per slot), ns.
    used_slot: Option<i64>,
    /// Time of the next slot whose window has not been closed yet, ns.
    next_slot: Option<i64>,
    /// Time of the last predicted slot that was a hit, ns: when the grid moves, the events
    /// after it may already lie on the new grid.
    last_hit: Option<i64>,
    /// Whether the grid in use is (a refinement of) a seed that has not failed yet.
    seeded: bool,
}

impl ScheduleLearner {
    /// A learner with no events.
    pub fn new() -> Self {
        Self::default()
    }

    /// The grid in use, if any.
    pub fn grid(&self) -> Option<Grid> {
        self.grid
    }

    /// The grid's reliability ρ in (0, 1).
    pub fn reliability(&self) -> f64 {
        (self.hits + 1.0) / (self.hits + self.misses + 2.0)
    }

    /// The prior for an interval that started at `t` (monotonic ns) with probes `spacing_ns`
    /// apart.
    pub fn prior(&self, t: i64, spacing_ns: f64) -> Prior {
        let base = spacing_ns / BASE_EVENT_PERIOD_NS;
        let Some(g) = self.grid else {
            return Prior { p: base.min(MAX_PRIOR), slot_offset_ns: None, in_window: false };
        };
        let rho = self.reliability();
        let (off, _) = g.offset(t);
        if off.abs() <= g.window_ns && !self.is_used(&g, t - off) {
            let p = rho * spacing_ns / (2.0 * g.window_ns as f64);
            return Prior { p: p.max(base).min(MAX_PRIOR), slot_offset_ns: Some(off), in_window: true };
        }
        let rate = (1.0 / BASE_EVENT_PERIOD_NS - rho / g.period_ns as f64).max(1.0 / MIN_EVENT_PERIOD_NS);
        Prior { p: (rate * spacing_ns).min(MAX_PRIOR), slot_offset_ns: Some(off), in_window: false }
    }

    fn is_used(&self, g: &Grid, slot: i64) -> bool {
        self.used_slot.is_some_and(|u| (u - slot).abs() <= g.window_ns)
    }

    /// Records an acted-on event whose outage started at `t`; `learn` when it is confident
    /// enough to shape the grid. The slot it falls in is used: one outage per slot.
    pub fn on_event(&mut self, t: i64, learn: bool) {
        if learn {
            self.learn(t);
        }
        if let Some(g) = self.grid {
            let (off, _) = g.offset(t);
            if off.abs() <= g.window_ns {
                self.used_slot = Some(t - off);
            }
        }
    }

    /// Adds the outage start `t` of a candidate that was not acted on but whose evidence alone
    /// makes it likely enough to shape the grid (it does not use a slot).
    pub fn learn(&mut self, t: i64) {
        if self.events.len() == MEMORY {
            self.events.remove(0);
        }
        self.events.push(t);
        if let Some(g) = self.grid.filter(|_| self.seeded) {
            // The seed's period is the schedule's; only where this path's outage-start
            // estimates fall around its slots is learned. A fit's period, off by 0.1 s, moved
            // the window off the slots within a minute on generated streams.
            self.grid = Some(recentre(g, &self.events));
            return;
        }
        let new = fit(&self.events, &self.candidates);
        match (self.grid, new) {
            (Some(o), Some(g)) if (o.period_ns - g.period_ns).abs() < FIT_TOLERANCE_NS && g.offset(o.anchor_ns).0.abs() < FIT_TOLERANCE_NS => self.grid = new,
            // Too few events on any grid: the grid in use stands until its slots fall silent
            // (`on_time`).
            (Some(_), None) => {}
            _ => {
                self.adopt(new, t);
                if new.is_some() {
                    self.last_hit = Some(t);
                }
            }
        }
    }

    /// Takes `grid` as a new grid at time `t`: its reliability starts from the events it
    /// explains, its slots from `t`.
    fn adopt(&mut self, grid: Option<Grid>, t: i64) {
        self.seeded = false;
        self.grid = grid;
        self.next_slot = grid.map(|g| t - g.offset(t).0);
        if let Some(g) = grid {
            self.hits = g.on_grid as f64;
            self.misses = 0.0;
            self.misses_in_row = 0;
        }
    }

    /// Starts from `grid`, known in advance, at time `t` (module docs): its reliability starts
    /// from no hits, and the events learned while it holds stay to learn its successor.
    pub fn seed(&mut self, grid: Grid, t: i64) {
        self.adopt(Some(grid), t);
        self.hits = 0.0;
        self.last_hit = Some(t);
        self.seeded = true;
    }

    /// Whether the grid in use is a seed that has not failed yet.
    pub fn is_seeded(&self) -> bool {
        self.seeded
    }

    /// Records the start of any candidate interval (RI above the threshold), however weak.
    pub fn on_candidate(&mut self, t: i64) {
        if self.candidates.len() == CANDIDATE_MEMORY {
            self.candidates.pop_front();
        }
        self.candidates.push_back(t);
    }

    /// Closes the windows of predicted slots that ended before `now`; `monitored_since` is the
    /// time replies have been flowing without a long silence (a slot is a miss only if its
    /// whole window was watched).
    pub fn on_time(&mut self, now: i64, monitored_since: i64) {
        let Some(g) = self.grid else { return };
        let mut slot = *self.next_slot.get_or_insert_with(|| now - g.offset(now).0);
        while slot + g.window_ns < now {
            let watched = monitored_since <= slot - g.window_ns;
            // A slot that showed any candidate (even one too weak to act on) is no miss: a
            // miss is a slot during which the stream stayed unremarkable.
            let hit = self.is_used(&g, slot) || self.candidates.iter().any(|&c| (c - slot).abs() <= g.window_ns.max(FIT_TOLERANCE_NS));
            self.hits *= RELIABILITY_DECAY;
            self.misses *= RELIABILITY_DECAY;
            if hit {
                self.hits += 1.0;
                self.misses_in_row = 0;
                self.last_hit = Some(slot);
            } else if watched {
                self.misses += 1.0;
                self.misses_in_row += 1;
            }
            slot += g.period_ns;
        }
        self.next_slot = Some(slot);
        if self.misses_in_row >= MISSES_TO_FORGET {
            // The grid moved (or was a coincidence): forget the events up to its last hit
            // slot and learn afresh from the rest and the next ones. The events since that
            // slot fell off the old grid, so they may already lie on the new one (a grid
            // whose phase jumped shows its new phase from the first event after the jump,
            // two slots before the misses reveal the jump).
            let keep_after = self.last_hit.map(|h| h + g.window_ns);
            self.events.retain(|&e| keep_after.is_some_and(|k| e > k));
            self.misses_in_row = 0;
            self.last_hit = None;
            self.adopt(fit(&self.events, &self.candidates), now);
        }
    }
}

/// `g` moved to the mean residual of the events within [`FIT_TOLERANCE_NS`] of its slots, its
/// window [`WINDOW_RMS`] times their rms residual around it (period unchanged); `g` itself when
/// fewer than [`MIN_ON_GRID`] events lie on it.
fn recentre(g: Grid, events: &[i64]) -> Grid {
    let r: Vec<f64> = events.iter().map(|&t| g.offset(t).0 as f64).filter(|r| r.abs() <= FIT_TOLERANCE_NS as f64).collect();
    if r.len() < MIN_ON_GRID {
        return g;
    }
    let n = r.len() as f64;
    let mean = r.iter().sum::<f64>() / n;
    let rms = (r.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
    let window = ((WINDOW_RMS * rms) as i64).clamp(MIN_WINDOW_NS, MAX_WINDOW_NS);
    Grid { anchor_ns: g.anchor_ns + mean as i64, window_ns: window, on_grid: r.len(), ..g }
}

/// Over the slots that (anchor, period) predicts between the first and last remembered event:
/// the number near which some candidate was seen minus the number with none.
fn slot_balance(events: &[i64], candidates: &std::collections::VecDeque<i64>, anchor: i64, period: f64) -> i64 {
    let (Some(&lo), Some(&hi)) = (events.iter().min(), events.iter().max()) else { return 0 };
    let first = ((lo - anchor) as f64 / period).round() as i64;
    let last = ((hi - anchor) as f64 / period).round() as i64;
    let mut balance = 0;
    for n in first..=last {
        let slot = anchor as f64 + n as f64 * period;
        let busy = candidates.iter().chain(events.iter()).any(|&c| (c as f64 - slot).abs() <= FIT_TOLERANCE_NS as f64);
        balance += if busy { 1 } else { -1 };
    }
    balance
}

/// Residual of `t` on the grid (anchor, period), ns.
fn residual(t: i64, anchor: i64, period: f64) -> (f64, f64) {
    let k = ((t - anchor) as f64 / period).round();
    ((t - anchor) as f64 - k * period, k)
}

/// The best grid through the remembered events (see the module docs).
pub fn fit(events: &[i64], candidates: &std::collections::VecDeque<i64>) -> Option<Grid> {
    if events.len() < MIN_ON_GRID {
        return None;
    }
    let mut best: Option<(i64, f64, usize, f64, i64)> = None; // (merit, period, count, rms, anchor)
    // Anchors: the newest few events (the grid may have shifted since the older ones).
    for ai in (events.len().saturating_sub(3)..events.len()).rev() {
        let a = events[ai];
        for &o in events.iter() {
            let d = (o - a).abs();
            if d == 0 {
                continue;
            }
            for div in 1..=4i64 {
                let mut period = d as f64 / div as f64;
                if period < MIN_PERIOD_NS as f64 || period > MAX_PERIOD_NS as f64 {
                    continue;
                }
                // Refine by least squares over the events within tolerance: slot index k
                // against time, slope = period, intercept = phase (so that a stray anchor
                // does not set the phase).
                let mut anchor = a as f64;
                let mut count = 0;
                let mut rms = 0.0;
                for _ in 0..3 {
                    let (mut n, mut sk, mut st, mut skk, mut skt) = (0.0, 0.0, 0.0, 0.0, 0.0);
                    for &t in events {
                        let (r, k) = residual(t, anchor as i64, period);
                        if r.abs() <= FIT_TOLERANCE_NS as f64 {
                            let x = (t - a) as f64;
                            n += 1.0;
                            sk += k;
                            st += x;
                            skk += k * k;
                            skt += k * x;
                        }
                    }
                    count = n as usize;
                    let var = n * skk - sk * sk;
                    if n >= 2.0 && var > 0.0 {
                        period = (n * skt - sk * st) / var;
                        anchor = a as f64 + (st - period * sk) / n;
                    }
                    let ss: f64 = events
                        .iter()
                        .map(|&t| residual(t, anchor as i64, period).0)
                        .filter(|r| r.abs() <= FIT_TOLERANCE_NS as f64)
                        .map(|r| r * r)
                        .sum();
                    rms = (ss / n.max(1.0)).sqrt();
                }
                let a = anchor as i64;
                if !(MIN_PERIOD_NS as f64..=MAX_PERIOD_NS as f64).contains(&period) {
                    continue;
                }
                // Merit: the events on the grid, plus each slot it predicts between the first
                // and last event that showed some candidate, minus each that showed nothing.
                // Half the true period explains a stray event but predicts a silent slot for
                // each real one; a multiple of it explains the events but fewer busy slots.
                let merit = count as i64 + slot_balance(events, candidates, a, period);
                let better = match best {
                    None => true,
                    Some((m, p, _, r, _)) => {
                        merit > m || (merit == m && (period > p + FIT_TOLERANCE_NS as f64 || ((period - p).abs() <= FIT_TOLERANCE_NS as f64 && rms < r)))
                    }
                };
                if better && count >= MIN_ON_GRID {
                    best = Some((merit, period, count, rms, a));
                }
            }
        }
    }
    let (_, period, count, rms, anchor) = best?;
    let window = ((WINDOW_RMS * rms) as i64).clamp(MIN_WINDOW_NS, MAX_WINDOW_NS);
    Some(Grid { period_ns: period.round() as i64, anchor_ns: anchor, window_ns: window, on_grid: count })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const MS: i64 = 1_000_000;

    #[test]
    fn learns_starlink_and_oneweb_periods_despite_a_miss_and_an_extra() {
        // 15 s grid from 12 s, jitter of ±30 ms, slot 3 missed, one aperiodic event at 50 s.
        let ev = [12 * S + 10 * MS, 27 * S - 20 * MS, 50 * S, 57 * S + 5 * MS, 72 * S - 30 * MS, 87 * S];
        let g = fit(&ev, &Default::default()).unwrap();
        assert!((g.period_ns - 15 * S).abs() < 20 * MS, "{g:?}");
        assert_eq!(g.on_grid, 5);
        assert!(g.offset(102 * S).0.abs() < 50 * MS);
        let ev: Vec<i64> = (0..6).map(|i| 3 * S + i * 11_020 * MS).collect();
        let g = fit(&ev, &Default::default()).unwrap();
        assert!((g.period_ns - 11_020 * MS).abs() < 5 * MS, "{g:?}");
    }

    #[test]
    fn no_grid_from_random_events() {
        assert!(fit(&[S, 8 * S + 300 * MS], &Default::default()).is_none(), "too few");
        let ev = [3 * S, 10 * S + 700 * MS, 29 * S + 100 * MS, 47 * S + 900 * MS];
        if let Some(g) = fit(&ev, &Default::default()) {
            assert!(g.on_grid >= MIN_ON_GRID);
        }
    }

    #[test]
    fn prior_is_high_in_a_slot_window_low_elsewhere_and_a_slot_serves_once() {
        let mut l = ScheduleLearner::new();
        let spacing = 13e6;
        let neutral = l.prior(0, spacing).p;
        assert!((neutral - spacing / 15e9).abs() < 1e-12);
        for i in 0..4 {
            l.on_event(12 * S + i * 15 * S, true);
            l.on_time(12 * S + i * 15 * S + 300 * MS, 0);
        }
        let g = l.grid().unwrap();
        assert_eq!(g.period_ns, 15 * S);
        let at_slot = l.prior(72 * S, spacing);
        let off = l.prior(65 * S, spacing);
        assert!(at_slot.in_window && at_slot.p > 50.0 * neutral, "{at_slot:?}");
        assert!(!off.in_window && off.p < neutral, "{off:?}");
        l.on_event(72 * S, false);
        assert!(!l.prior(72 * S + 10 * MS, spacing).in_window, "the slot is used");
    }

    #[test]
    fn misses_forget_a_moved_grid() {
        let mut l = ScheduleLearner::new();
        for i in 0..4 {
            l.on_event(12 * S + i * 15 * S, true);
        }
        assert!(l.grid().is_some());
        // Replies flow but slots at 72 and 87 pass with nothing.
        l.on_time(90 * S, 0);
        assert!(l.grid().is_none(), "two misses in a row: the grid moved");
        // Unwatched slots are no misses.
        let mut l = ScheduleLearner::new();
        for i in 0..4 {
            l.on_event(12 * S + i * 15 * S, true);
        }
        l.on_time(90 * S, 89 * S);
        assert!(l.grid().is_some());
    }

    #[test]
    fn a_grid_whose_phase_jumped_is_relearned_from_the_events_since_its_last_hit() {
        // An 11 s grid from 1 s (slots 1, 12, 23, 34 s) whose phase jumps by +4.5 s after
        // 34 s, as when a 45 s path loops: events at 46, 57, 68, 79 s... The old grid's slots
        // at 45 and 56 s pass silent (two misses, at 56 s + window the grid is forgotten);
        // the events at 46 and 57 s, after its last hit (34 s), are kept, so the third one
        // on the new phase (68 s) gives the new grid at once, predicting 79 s.
        let mut l = ScheduleLearner::new();
        let old = [S, 12 * S, 23 * S, 34 * S];
        let new = [46 * S, 57 * S, 68 * S];
        let mut t = 0;
        let mut step_to = |l: &mut ScheduleLearner, until: i64| {
            while t < until {
                t += 10 * MS;
                l.on_time(t, 0);
            }
        };
        for &e in old.iter().chain(new.iter()) {
            step_to(&mut l, e);
            l.on_candidate(e);
            l.on_event(e, true);
        }
        step_to(&mut l, 70 * S);
        let g = l.grid().expect("the new phase is learned from 46, 57 and 68 s");
        assert!((g.period_ns - 11 * S).abs() < 20 * MS, "{g:?}");
        assert!(g.offset(79 * S).0.abs() < 50 * MS, "predicts 79 s: {g:?}");
    }

    fn seed_at_12_s() -> Grid {
        Grid { period_ns: 15 * S, anchor_ns: 12 * S, window_ns: SEED_WINDOW_NS, on_grid: 0 }
    }

    #[test]
    fn a_seed_gives_the_slot_prior_before_any_event_and_stray_events_do_not_replace_it() {
        let mut l = ScheduleLearner::new();
        let spacing = 13e6;
        l.seed(seed_at_12_s(), 0);
        let at_slot = l.prior(27 * S - 10 * MS, spacing);
        assert!(at_slot.in_window && at_slot.p > 30.0 * spacing / 15e9, "{at_slot:?}");
        // The first slot's event, then two unscheduled outages 8 and 16 s later, confident
        // enough to learn: three events on an 8 s grid, which would have replaced a learned
        // grid after one silent slot (27 s); the seed stands and keeps predicting 42 s.
        for e in [12 * S - 20 * MS, 20 * S, 28 * S] {
            l.on_time(e, 0);
            l.on_candidate(e);
            l.on_event(e, true);
        }
        l.on_time(30 * S, 0);
        let g = l.grid().expect("the seed stands");
        assert_eq!((g.period_ns, g.offset(42 * S).0), (15 * S, 0), "{g:?}");
        assert!(l.is_seeded());
    }

    #[test]
    fn a_wrong_seed_is_dropped_after_two_silent_slots_and_the_true_grid_learned() {
        // The stream follows an 11 s grid from 5 s (OneWeb-like); the seed predicts 12, 27 s.
        let mut l = ScheduleLearner::new();
        l.seed(seed_at_12_s(), 0);
        let mut t = 0;
        for e in [5 * S, 16 * S, 27 * S + 400 * MS, 38 * S, 49 * S] {
            while t < e {
                t += 10 * MS;
                l.on_time(t, 0);
            }
            l.on_candidate(e);
            l.on_event(e, true);
        }
        while t < 50 * S {
            t += 10 * MS;
            l.on_time(t, 0);
        }
        assert!(!l.is_seeded(), "12 and 27 s passed with nothing within 120 ms");
        let g = l.grid().expect("the 11 s grid, from the events learned while the seed held");
        assert!((g.period_ns - 11 * S).abs() < 50 * MS, "{g:?}");
        assert!(g.offset(60 * S).0.abs() < 50 * MS, "{g:?}");
    }
}
