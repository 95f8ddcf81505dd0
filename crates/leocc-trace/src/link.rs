//! The link model: one direction of a path as the simulator and the emulator query it.
//!
//! Mahimahi semantics. The capacity schedule is a sorted list of opportunity times t_i within
//! [0, P]; loop k offers an opportunity at k·P + t_i for every i (an opportunity at exactly P
//! and one at 0 both exist, as when mahimahi wraps its file). Each opportunity can deliver
//! [`OPPORTUNITY_BYTES`]; a larger packet consumes several. Delay and loss are looked up at
//! t mod P. An outage is on during a ground-truth outage or a run of at least
//! [`OUTAGE_MIN_US`] without an opportunity.
//!
//! Every query is a binary search over precomputed arrays (no allocation); the model is an
//! `Arc` bundle, so cloning it into a thread or an engine is cheap. A caller whose queries move
//! forward in time (the simulator's hop) keeps a [`Cursor`] and locates by a step from its last
//! position instead: at 100 Mbit/s a 120 s schedule has a million entries, and the binary
//! search's cache misses were a third of the simulator's time.

use std::sync::Arc;

use crate::model::{Capacity, DelaySeries, Loss, Span, OPPORTUNITY_BYTES};

/// A run without delivery opportunity at least this long counts as an outage: 20 ms (issue 2).
pub const OUTAGE_MIN_US: u64 = 20_000;

/// One direction of a path. See the module documentation.
#[derive(Debug, Clone)]
pub struct LinkModel {
    times: Arc<[u64]>,
    period: u64,
    /// How many opportunities sit at exactly `period` (the loop boundary).
    at_period: u64,
    delay: DelaySeries,
    loss: Loss,
    /// Outage spans folded into [0, P), sorted and merged, as [start, end).
    outages: Arc<[(u64, u64)]>,
}

impl LinkModel {
    /// Builds the model; `truth` are ground-truth outages, `resolution_us` the time step of
    /// the capacity data (an opportunity at t covers [t, t + resolution)).
    pub fn new(cap: &Capacity, delay: DelaySeries, loss: Loss, truth: &[Span], resolution_us: u64) -> LinkModel {
        let times = cap.shared_times();
        let period = cap.period_us();
        let at_period = times.iter().rev().take_while(|&&t| t == period).count() as u64;
        let outages = fold_outages(&times, period, truth, resolution_us).into();
        LinkModel { times, period, at_period, delay, loss, outages }
    }

    /// The opportunities at exactly `t_us` and the first one after it (`None` only for a
    /// schedule without any): one service slot of a hop. `cursor` is the caller's position from
    /// its previous query; any cursor gives the right answer, a recent one a fast one.
    #[inline]
    pub fn slot(&self, t_us: u64, cursor: &mut Cursor) -> (u64, Option<u64>) {
        if self.times.is_empty() {
            return (0, None);
        }
        let (mut base, mut idx) = self.locate_near(t_us, cursor.idx);
        let mut here = 0;
        loop {
            if idx == self.times.len() {
                base += self.period;
                idx = 0;
            }
            let t = base + self.times[idx];
            if t != t_us {
                cursor.idx = idx;
                return (here, Some(t));
            }
            here += 1;
            idx += 1;
        }
    }

    /// The first opportunity at or after `t_us`, located from `cursor` (see [`Self::slot`]).
    #[inline]
    pub fn next_opportunity_near(&self, t_us: u64, cursor: &mut Cursor) -> Option<u64> {
        if self.times.is_empty() {
            return None;
        }
        let (base, idx) = self.locate_near(t_us, cursor.idx);
        cursor.idx = idx;
        Some(match self.times.get(idx) {
            Some(&t) => base + t,
            None => base + self.period + self.times[0],
        })
    }

    /// [`Self::locate`], trying a few entries from `hint` before the binary search.
    #[inline]
    fn locate_near(&self, t: u64, hint: usize) -> (u64, usize) {
        let (k, r) = (t / self.period, t % self.period);
        if r == 0 && k > 0 && self.at_period > 0 {
            return self.locate(t);
        }
        let times = &self.times[..];
        let start = hint.min(times.len());
        // Forward in time is the common case: step over what has passed.
        for i in (start..=times.len()).take(CURSOR_STEPS) {
            let after_prev = i == 0 || times[i - 1] < r;
            if !after_prev {
                break;
            }
            if i == times.len() || times[i] >= r {
                return (k * self.period, i);
            }
        }
        (k * self.period, times.partition_point(|&x| x < r))
    }

    /// Absolute times of the opportunities in [t, t+dt), looping past the period.
    pub fn opportunities(&self, t_us: u64, dt_us: u64) -> Opportunities<'_> {
        let (base, idx) = self.locate(t_us);
        Opportunities { times: &self.times, period: self.period, base, idx, end: t_us.saturating_add(dt_us) }
    }

    /// The first opportunity at or after `t_us`; `None` only for a schedule without any.
    pub fn next_opportunity(&self, t_us: u64) -> Option<u64> {
        if self.times.is_empty() {
            return None;
        }
        let (base, idx) = self.locate(t_us);
        Some(match self.times.get(idx) {
            Some(&t) => base + t,
            None => base + self.period + self.times[0],
        })
    }

    /// One-way base delay at `t_us`, µs.
    pub fn delay_us(&self, t_us: u64) -> u64 {
        self.delay.at(t_us % self.period)
    }

    /// Random loss probability at `t_us`.
    pub fn loss_prob(&self, t_us: u64) -> f64 {
        self.loss.at(t_us % self.period)
    }

    /// Whether an outage (ground truth, or no opportunity for >= 20 ms) covers `t_us`.
    pub fn in_outage(&self, t_us: u64) -> bool {
        let r = t_us % self.period;
        let i = self.outages.partition_point(|&(s, _)| s <= r);
        i > 0 && r < self.outages[i - 1].1
    }

    /// [`Self::delay_us`] with the span of time over which it holds.
    pub fn delay_held(&self, t_us: u64) -> Held<u64> {
        let d = &self.delay;
        let (base, r) = self.fold(t_us);
        let last = d.values_us.len().saturating_sub(1) as u64;
        let step = d.interval_us.max(1);
        let i = (r / step).min(last);
        let until = if i == last { self.period } else { (i + 1) * step };
        Held { from: base + i * step, until: base + until.min(self.period), value: d.at(r) }
    }

    /// [`Self::loss_prob`] with the span of time over which it holds.
    pub fn loss_held(&self, t_us: u64) -> Held<f64> {
        let (base, r) = self.fold(t_us);
        let (from, until) = match &self.loss {
            Loss::Constant(_) => (0, self.period),
            Loss::Series { interval_us, values } => {
                let last = values.len().saturating_sub(1) as u64;
                let step = (*interval_us).max(1);
                let i = (r / step).min(last);
                (i * step, if i == last { self.period } else { ((i + 1) * step).min(self.period) })
            }
        };
        Held { from: base + from, until: base + until, value: self.loss.at(r) }
    }

    /// [`Self::in_outage`] with the span of time over which it holds.
    pub fn outage_held(&self, t_us: u64) -> Held<bool> {
        let (base, r) = self.fold(t_us);
        let i = self.outages.partition_point(|&(s, _)| s <= r);
        let (from, until, value) = match i.checked_sub(1).map(|j| self.outages[j]) {
            Some((s, e)) if r < e => (s, e, true),
            prev => {
                let next = self.outages.get(i).map_or(self.period, |&(s, _)| s);
                (prev.map_or(0, |(_, e)| e), next, false)
            }
        };
        Held { from: base + from, until: base + until, value }
    }

    /// The start of `t_us`'s loop and `t_us` folded into it.
    fn fold(&self, t_us: u64) -> (u64, u64) {
        let r = t_us % self.period;
        (t_us - r, r)
    }

    /// Outage spans within one period, folded into [0, P), sorted, as (start, end) µs.
    pub fn outages_folded(&self) -> &[(u64, u64)] {
        &self.outages
    }

    /// The schedule loops after this many µs.
    pub fn period_us(&self) -> u64 {
        self.period
    }

    /// Mean capacity over [from, to) in bit/s (0 for an empty interval).
    pub fn mean_capacity_bps(&self, from_us: u64, to_us: u64) -> f64 {
        if to_us <= from_us {
            return 0.0;
        }
        let n = self.count_before(to_us) - self.count_before(from_us);
        n as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / ((to_us - from_us) as f64 / 1e6)
    }

    /// Number of opportunities strictly before `t_us` since time 0.
    pub fn count_before(&self, t_us: u64) -> u64 {
        let n = self.times.len() as u64;
        let (k, r) = (t_us / self.period, t_us % self.period);
        let boundary = if r == 0 && k > 0 { self.at_period } else { 0 };
        k * n - boundary + self.times.partition_point(|&x| x < r) as u64
    }

    /// Loop base and index of the first opportunity at or after `t`.
    fn locate(&self, t: u64) -> (u64, usize) {
        let (k, r) = (t / self.period, t % self.period);
        if r == 0 && k > 0 && self.at_period > 0 {
            // The previous loop's boundary opportunities fall exactly on t.
            return ((k - 1) * self.period, self.times.len() - self.at_period as usize);
        }
        (k * self.period, self.times.partition_point(|&x| x < r))
    }
}

/// Entries [`LinkModel::locate_near`] steps forward before it falls back to a binary search:
/// a hop's next query is almost always within a few opportunities of its last.
const CURSOR_STEPS: usize = 8;

/// A value of a link (delay, loss, outage) and the span [from, until) of absolute time over
/// which it holds. The simulator asks per packet; keeping the span and asking again only when
/// time leaves it saves the two divisions of a lookup, 7 % of a run at 100 Mbit/s.
#[derive(Debug, Clone, Copy, Default)]
pub struct Held<T> {
    /// First µs of the span.
    pub from: u64,
    /// First µs after the span.
    pub until: u64,
    /// The value over the span.
    pub value: T,
}

impl<T: Copy> Held<T> {
    /// The value at `t_us`, if `t_us` is inside the span (never for a default one).
    pub fn at(&self, t_us: u64) -> Option<T> {
        (self.from <= t_us && t_us < self.until).then_some(self.value)
    }

    /// The value at `t_us`, from the span if it covers `t_us`, else from `ask` (which becomes
    /// the new span).
    pub fn refresh(&mut self, t_us: u64, ask: impl FnOnce(u64) -> Held<T>) -> T {
        if let Some(v) = self.at(t_us) {
            return v;
        }
        *self = ask(t_us);
        self.value
    }
}

/// A caller's position in a [`LinkModel`]'s schedule; see [`LinkModel::slot`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor {
    idx: usize,
}

/// Iterator over absolute opportunity times; see [`LinkModel::opportunities`].
pub struct Opportunities<'a> {
    times: &'a [u64],
    period: u64,
    base: u64,
    idx: usize,
    end: u64,
}

impl Iterator for Opportunities<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.times.is_empty() {
            return None;
        }
        if self.idx == self.times.len() {
            self.base += self.period;
            self.idx = 0;
        }
        let t = self.base + self.times[self.idx];
        if t >= self.end {
            return None;
        }
        self.idx += 1;
        Some(t)
    }
}

/// Outage spans within one period: runs of at least [`OUTAGE_MIN_US`] without opportunity
/// (including the wrap from the last opportunity to the first of the next loop) plus the
/// ground-truth outages, folded into [0, P) and merged.
fn fold_outages(times: &[u64], period: u64, truth: &[Span], res: u64) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    let mut push = |s: u64, e: u64| {
        // Split a span that crosses the loop boundary.
        let (s, e) = (s % period, s % period + (e - s));
        if e <= period {
            spans.push((s, e));
        } else {
            spans.push((s, period));
            spans.push((0, e - period));
        }
    };
    for gap in empty_runs(times, period, res) {
        push(gap.start_us, gap.end_us());
    }
    for o in truth {
        if o.len_us > 0 {
            push(o.start_us, o.end_us().min(o.start_us + period));
        }
    }
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Runs of at least [`OUTAGE_MIN_US`] without an opportunity, as spans starting at the first
/// empty resolution step after an opportunity (unfolded: a wrap run may end past `period`).
pub fn empty_runs(times: &[u64], period: u64, res: u64) -> Vec<Span> {
    let mut out = Vec::new();
    let Some(&first) = times.first() else { return out };
    let next_loop_first = std::iter::once(period + first);
    for (a, b) in times.iter().copied().zip(times.iter().copied().skip(1).chain(next_loop_first)) {
        let start = a + res;
        if b > start && b - start >= OUTAGE_MIN_US {
            out.push(Span { start_us: start, len_us: b - start });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(times_ms: &[u64]) -> LinkModel {
        let cap = Capacity::new(times_ms.iter().map(|t| t * 1000).collect(), None).unwrap();
        LinkModel::new(&cap, DelaySeries::constant(5000), Loss::Constant(0.01), &[], 1000)
    }

    #[test]
    fn opportunities_follow_mahimahi_looping() {
        let m = model(&[1, 1, 3, 10]);
        let got: Vec<u64> = m.opportunities(0, 25_000).collect();
        // Loop 0: 1,1,3,10 ms; loop 1 starts at 10 ms: 11,11,13,20; loop 2: 21,21,23.
        let want: Vec<u64> = [1, 1, 3, 10, 11, 11, 13, 20, 21, 21, 23].iter().map(|t| t * 1000).collect();
        assert_eq!(got, want);
        // A window starting exactly on the boundary sees the boundary opportunity.
        assert_eq!(m.opportunities(20_000, 1_500).collect::<Vec<_>>(), vec![20_000, 21_000, 21_000]);
        assert_eq!(m.next_opportunity(20_000), Some(20_000));
        assert_eq!(m.next_opportunity(20_001), Some(21_000));
        assert_eq!(m.next_opportunity(4_000), Some(10_000));
    }

    #[test]
    fn slot_with_any_cursor_agrees_with_the_binary_search() {
        // Boundary opportunities at 0 and at the period, repeats, a gap, the wrap.
        for times in [&[0u64, 1, 1, 3, 10][..], &[1, 1, 3, 10], &[2, 2, 2], &[0, 40]] {
            let m = model(times);
            let mut rng = leocc_base::rng::Rng::new(9);
            let mut forward = Cursor::default();
            let mut t = 0;
            for step in 0..2_000u64 {
                // Mostly forward in small steps (as a hop moves), sometimes a jump back.
                t = if step % 97 == 0 { rng.below(60_000) } else { t + rng.below(3) * 1000 + rng.below(2) };
                let want = (m.opportunities(t, 1).count() as u64, m.next_opportunity(t + 1));
                assert_eq!(m.slot(t, &mut forward), want, "times {times:?} t {t}");
                let mut stale = Cursor { idx: rng.below(times.len() as u64 + 1) as usize };
                assert_eq!(m.slot(t, &mut stale), want, "times {times:?} t {t} stale cursor");
                let mut c = Cursor { idx: rng.below(times.len() as u64 + 1) as usize };
                assert_eq!(m.next_opportunity_near(t, &mut c), m.next_opportunity(t), "times {times:?} t {t}");
            }
        }
    }

    #[test]
    fn held_values_agree_with_lookups_over_their_whole_span() {
        // A 60 ms schedule with gaps of 33 and 25 ms (outages, around the opportunity at 35 ms), a delay and a loss series whose last
        // value holds to the period's end, looped several times.
        let cap = Capacity::new(vec![1_000, 2_000, 35_000, 60_000], None).unwrap();
        let delay = DelaySeries { interval_us: 7_000, values_us: vec![5_000, 6_000, 9_000].into() };
        let loss = Loss::Series { interval_us: 25_000, values: vec![0.0, 0.5].into() };
        let truth = [Span { start_us: 40_000, len_us: 5_000 }];
        let m = LinkModel::new(&cap, delay, loss, &truth, 1000);
        for t in (0..200_000u64).step_by(250).chain([59_999, 60_000, 60_001, 119_999, 120_000]) {
            let d = m.delay_held(t);
            let l = m.loss_held(t);
            let o = m.outage_held(t);
            for h in [d.from, d.until - 1, t] {
                assert_eq!(d.at(h), Some(m.delay_us(h)), "delay at {h} (asked at {t}: {d:?})");
            }
            for h in [l.from, l.until - 1, t] {
                assert_eq!(l.at(h), Some(m.loss_prob(h)), "loss at {h} (asked at {t}: {l:?})");
            }
            for h in [o.from, o.until - 1, t] {
                assert_eq!(o.at(h), Some(m.in_outage(h)), "outage at {h} (asked at {t}: {o:?})");
            }
            assert_eq!(d.at(d.until), None);
        }
        assert!(m.outage_held(20_000).value && !m.outage_held(35_500).value && m.outage_held(41_000).value);
    }

    #[test]
    fn counts_agree_with_iteration() {
        let m = model(&[1, 1, 3, 10]);
        for from in [0u64, 999, 1000, 10_000, 10_001, 20_000, 33_333] {
            for to in [from, from + 1, from + 9_999, from + 10_000, from + 57_000] {
                let n = m.opportunities(from, to - from).count() as u64;
                assert_eq!(m.count_before(to) - m.count_before(from), n, "[{from}, {to})");
            }
        }
        let bps = m.mean_capacity_bps(0, 100_000);
        // Ten loops of 4, minus the boundary opportunity at exactly 100 ms.
        assert!((bps - 39.0 * 12_000.0 / 0.1).abs() < 1e-6, "{bps}");
    }

    #[test]
    fn gaps_of_20ms_are_outages_and_wrap() {
        // Opportunities at 5 ms and 40 ms, period 40 ms: empty 6..40 (34 ms) and the wrap
        // run from 40 to 45 is only 4 ms, not an outage.
        let m = model(&[5, 40]);
        assert!(!m.in_outage(5_500));
        assert!(m.in_outage(6_000));
        assert!(m.in_outage(39_999));
        assert!(m.in_outage(46_000));
        assert!(!m.in_outage(40_000 + 5_000));
        // A 19 ms hole is not an outage.
        let m = model(&[1, 21, 22]);
        assert!(!m.in_outage(10_000));
    }

    #[test]
    fn delay_and_loss_loop_with_the_period() {
        let cap = Capacity::new(vec![1000, 30_000], None).unwrap();
        let d = DelaySeries { interval_us: 10_000, values_us: vec![1, 2, 3].into() };
        let m = LinkModel::new(&cap, d, Loss::Constant(0.5), &[], 1000);
        assert_eq!(m.delay_us(0), 1);
        assert_eq!(m.delay_us(25_000), 3);
        assert_eq!(m.delay_us(30_000 + 15_000), 2);
        assert_eq!(m.loss_prob(123_456), 0.5);
    }

    #[test]
    fn ground_truth_outages_apply() {
        let cap = Capacity::new((1..=100).map(|t| t * 1000).collect(), None).unwrap();
        let truth = [Span { start_us: 50_000, len_us: 10_000 }];
        let m = LinkModel::new(&cap, DelaySeries::constant(0), Loss::Constant(0.0), &truth, 1000);
        assert!(m.in_outage(55_000));
        assert!(m.in_outage(155_000));
        assert!(!m.in_outage(60_000));
    }

    fn assert_send_clone<T: Send + Sync + Clone>() {}

    #[test]
    fn link_model_is_send_and_clone() {
        assert_send_clone::<LinkModel>();
    }
}
