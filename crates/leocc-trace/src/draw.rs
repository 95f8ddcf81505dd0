//! Paths drawn from wide ranges, for robustness benchmarks (`leocc bench robust`,
//! `leocc trace draw`): a second trace family beside [`crate::gen`], on purpose built from a
//! different model so that a control tuned to the generated profiles (and to the bundled
//! traces made from them) meets paths it was not tuned on.
//!
//! One `u64` seed gives one [`PathDraw`] (the path's parameters) and, for a length, one
//! [`Trace`] with the ground truth recorded (reconfiguration times and outages). Every random
//! choice comes from [`Rng`] streams derived from the seed, one per part of the model, so the
//! same seed gives the same trace, bit for bit.
//!
//! The model, and where it differs from `gen`:
//!  * **Capacity**: a path level log-uniform in 5-500 Mbit/s. At each reconfiguration the
//!    level jumps to the path level times a factor drawn log-uniformly from the path's spread
//!    (low end 0.3-1, high end 1-2). Inside an interval the capacity either moves in
//!    piecewise-constant steps (exponential dwell times, each step a factor log-uniform in
//!    [1/(1+d), 1+d]) or follows a reflected random walk of the log-rate per 10 ms; `gen`
//!    uses a smooth Ornstein-Uhlenbeck factor and log-normal levels instead. The capacity never
//!    falls below [`MIN_MBPS`] nor rises above [`MAX_MBPS`].
//!  * **Opportunities**: a virtual clock, one 1500-byte opportunity every 12000 / rate µs,
//!    rounded up to the next whole ms; with bursty grants (uplink-like), each opportunity
//!    waits for the next grant, grants 1 to `max_gap` ms apart.
//!  * **Delay**: a base RTT of 20-200 ms split into an uplink and a downlink one-way delay
//!    (uplink share 0.35-0.65). The data direction's delay moves by a per-interval shift and
//!    steps through 1-4 RTT bands 1-15 ms apart, a band walk to a neighbouring band after an
//!    exponential dwell time; the other direction stays at its one-way delay. No delay spike
//!    after an outage (`gen` has one).
//!  * **The PoP**: the base RTT is the whole path's; the terminal–PoP round trip (the
//!    satellite hop, what the reconfiguration detector's probes cross) is 20-40 ms of it
//!    (capped at the base RTT), as on the real bent-pipe ping recordings (median 26 ms) and the
//!    bundled Starlink traces; the rest lies beyond the PoP. Recorded as the trace's
//!    `pop_rtt_ms`; it does not change the data path.
//!  * **Reconfigurations**: Starlink-like (every 15 s at a random phase), OneWeb-like (a
//!    period of 10-12 s) or aperiodic (gaps of 1 s plus an exponential), periodic ones with
//!    aperiodic extras half of the time. Each opens an outage of 40-150 ms (per path a
//!    sub-range of it) without any opportunity.
//!  * **Loss** 0-1 % on the data direction (none on 30 % of the paths, else log-uniform from
//!    0.01 %), and a **buffer** of 0.5-3 BDP (BDP = the trace's mean capacity × base RTT),
//!    which the trace cannot hold: [`PathDraw::buffer_us`] gives it as a queue depth in time
//!    (`leocc sim --queue MSms` resolves that against the mean capacity).

use std::fmt;

use crate::mahimahi::LEOREPLAYER_INTERVAL_US;
use crate::model::{Capacity, DelaySeries, DirTrace, Loss, Measured, Meta, Span, Trace};
use leocc_base::rng::Rng;

/// Path capacity level, Mbit/s (log-uniform).
pub const CAPACITY_MBPS: (f64, f64) = (5.0, 500.0);
/// Base RTT, ms (uniform): the lowest band's RTT without the per-interval shift.
pub const BASE_RTT_MS: (f64, f64) = (20.0, 200.0);
/// Terminal–PoP round trip, ms (uniform, at most the base RTT).
pub const POP_RTT_MS: (f64, f64) = (20.0, 40.0);
/// Share of the base RTT on the uplink (uniform).
pub const UPLINK_SHARE: (f64, f64) = (0.35, 0.65);
/// Outage at a reconfiguration, ms: each path draws a sub-range of this.
pub const OUTAGE_MS: (f64, f64) = (40.0, 150.0);
/// Number of RTT bands (uniform over the integers).
pub const BANDS: (u32, u32) = (1, 4);
/// Spacing of the RTT bands, ms (uniform).
pub const BAND_SPACING_MS: (f64, f64) = (1.0, 15.0);
/// Mean dwell time in one band, ms (log-uniform).
pub const BAND_DWELL_MS: (f64, f64) = (20.0, 2000.0);
/// Largest per-interval shift of the data direction's delay, ms; at most a quarter of that
/// direction's one-way delay.
pub const MAX_SHIFT_MS: f64 = 8.0;
/// Low end of the per-interval level factor (uniform).
pub const SPREAD_LOW: (f64, f64) = (0.3, 1.0);
/// High end of the per-interval level factor (uniform).
pub const SPREAD_HIGH: (f64, f64) = (1.0, 2.0);
/// Random loss on the data direction (0, or log-uniform from the low end).
pub const LOSS: (f64, f64) = (1e-4, 1e-2);
/// Share of paths without random loss.
pub const LOSSLESS_SHARE: f64 = 0.3;
/// Buffer, in BDPs (uniform).
pub const BUFFER_BDP: (f64, f64) = (0.5, 3.0);
/// Largest gap between bursty grants, ms (uniform over the integers).
pub const GRANT_MAX_GAP_MS: (u64, u64) = (2, 6);
/// Capacity never falls below this, Mbit/s: an opportunity every 6 ms, so no stretch outside
/// an outage reaches the link model's 20 ms outage threshold.
pub const MIN_MBPS: f64 = 2.0;
/// Capacity never rises above this, Mbit/s.
pub const MAX_MBPS: f64 = 1000.0;
/// Longest trace drawn: 10 min (up to ~0.4 GB of opportunities at the top rate).
pub const MAX_DURATION_MS: u64 = 600_000;
/// Reconfigurations keep at least this far apart, ms.
const MIN_EVENT_GAP_MS: u64 = 1000;
/// No reconfiguration this close to the end (the longest outage and a margin), ms.
const END_MARGIN_MS: u64 = 300;
/// Time step of the random walk and of the delay series, ms.
const STEP_MS: u64 = LEOREPLAYER_INTERVAL_US / 1000;

/// Streams of the seed, one per part of the model.
const STREAM_PARAMS: u64 = 0;
const STREAM_EVENTS: u64 = 1;
const STREAM_OUTAGES: u64 = 2;
const STREAM_CAPACITY: u64 = 3;
const STREAM_BANDS: u64 = 4;
const STREAM_GRANTS: u64 = 5;
const STREAM_POP: u64 = 6;

/// When the path reconfigures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    /// Every `period_ms`, the first at `phase_ms`; plus, when `aperiodic_mean_s` is given,
    /// aperiodic ones with that mean gap.
    Periodic {
        /// Period, ms (15 000 Starlink-like, 10 000-12 000 OneWeb-like).
        period_ms: u64,
        /// First reconfiguration, ms after the trace start.
        phase_ms: u64,
        /// Mean gap of the aperiodic extras, s (none when `None`).
        aperiodic_mean_s: Option<f64>,
    },
    /// Only aperiodic reconfigurations: gaps of 1 s plus an exponential, `mean_gap_s` on average.
    Aperiodic {
        /// Mean gap, s (5-30).
        mean_gap_s: f64,
    },
}

/// How the capacity moves inside an interval between reconfigurations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variation {
    /// Piecewise-constant steps: a new factor log-uniform in [1/(1+depth), 1+depth] after
    /// exponential dwell times of `mean_dwell_ms`.
    Steps {
        /// Mean time between steps, ms (200-3000).
        mean_dwell_ms: f64,
        /// Step depth (0-0.5).
        depth: f64,
    },
    /// A random walk of the log-rate per 10 ms with `sd_per_sqrt_s` per √s, reflected at
    /// ±ln(1+bound) around the interval's level and restarted at a random point each interval.
    Walk {
        /// Standard deviation of the log-rate per √s (0.05-0.5).
        sd_per_sqrt_s: f64,
        /// Reflection bound (0.1-0.5).
        bound: f64,
    },
}

/// Bursty delivery, as an uplink's transmission grants: opportunities wait for the next grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grants {
    /// Grants are 1 to this many ms apart (uniform), 2-6.
    pub max_gap_ms: u64,
}

/// The parameters of one drawn path. See the module documentation for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct PathDraw {
    /// The seed it was drawn from.
    pub seed: u64,
    /// Data direction: `Up` (uplink-like) or `Down` (downlink-like).
    pub direction: Measured,
    /// Path capacity level, Mbit/s.
    pub capacity_mbps: f64,
    /// Base RTT, ms (lowest band, no shift).
    pub base_rtt_ms: f64,
    /// Share of the base RTT on the uplink's one-way delay.
    pub uplink_share: f64,
    /// Terminal–PoP round trip, ms (part of the base RTT).
    pub pop_rtt_ms: f64,
    /// Reconfiguration schedule.
    pub schedule: Schedule,
    /// Each outage lasts uniformly within this range, ms (inside [`OUTAGE_MS`]).
    pub outage_ms: (f64, f64),
    /// Number of RTT bands.
    pub bands: u32,
    /// Spacing of the bands, ms.
    pub band_spacing_ms: f64,
    /// Mean dwell time in a band, ms.
    pub band_dwell_ms: f64,
    /// Per-interval shift of the data direction's delay: uniform in ±this, ms.
    pub interval_shift_ms: f64,
    /// Range of the per-interval level factor (log-uniform within).
    pub level_spread: (f64, f64),
    /// Variation inside an interval.
    pub variation: Variation,
    /// Bursty grants, if any.
    pub grants: Option<Grants>,
    /// Random loss on the data direction.
    pub loss: f64,
    /// Buffer, in BDPs of the mean capacity × base RTT.
    pub buffer_bdp: f64,
}

fn log_uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    (rng.range(lo.ln(), hi.ln())).exp()
}

fn int_between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// Draws a path's parameters from `seed`.
pub fn draw(seed: u64) -> PathDraw {
    let mut r = Rng::derive(seed, STREAM_PARAMS);
    let direction = if r.chance(0.4) { Measured::Up } else { Measured::Down };
    let capacity_mbps = log_uniform(&mut r, CAPACITY_MBPS.0, CAPACITY_MBPS.1);
    let base_rtt_ms = r.range(BASE_RTT_MS.0, BASE_RTT_MS.1);
    let uplink_share = r.range(UPLINK_SHARE.0, UPLINK_SHARE.1);
    let kind = r.unit();
    let extras = |r: &mut Rng| if r.chance(0.5) { Some(r.range(30.0, 120.0)) } else { None };
    let schedule = if kind < 0.45 {
        Schedule::Periodic { period_ms: 15_000, phase_ms: r.below(15_000), aperiodic_mean_s: extras(&mut r) }
    } else if kind < 0.75 {
        let period_ms = int_between(&mut r, 10_000, 12_000);
        Schedule::Periodic { period_ms, phase_ms: r.below(period_ms), aperiodic_mean_s: extras(&mut r) }
    } else {
        Schedule::Aperiodic { mean_gap_s: r.range(5.0, 30.0) }
    };
    let out_lo = r.range(OUTAGE_MS.0, 100.0);
    let outage_ms = (out_lo, r.range(out_lo, OUTAGE_MS.1));
    let bands = int_between(&mut r, BANDS.0 as u64, BANDS.1 as u64) as u32;
    let band_spacing_ms = r.range(BAND_SPACING_MS.0, BAND_SPACING_MS.1);
    let band_dwell_ms = log_uniform(&mut r, BAND_DWELL_MS.0, BAND_DWELL_MS.1);
    let data_share = if direction == Measured::Up { uplink_share } else { 1.0 - uplink_share };
    let interval_shift_ms = r.unit() * MAX_SHIFT_MS.min(0.25 * base_rtt_ms * data_share);
    let level_spread = (r.range(SPREAD_LOW.0, SPREAD_LOW.1), r.range(SPREAD_HIGH.0, SPREAD_HIGH.1));
    let variation = if r.chance(0.5) {
        Variation::Steps { mean_dwell_ms: r.range(200.0, 3000.0), depth: r.range(0.0, 0.5) }
    } else {
        Variation::Walk { sd_per_sqrt_s: r.range(0.05, 0.5), bound: r.range(0.1, 0.5) }
    };
    let bursty = r.chance(if direction == Measured::Up { 0.7 } else { 0.15 });
    let gap = int_between(&mut r, GRANT_MAX_GAP_MS.0, GRANT_MAX_GAP_MS.1);
    let grants = bursty.then_some(Grants { max_gap_ms: gap });
    let lossless = r.chance(LOSSLESS_SHARE);
    let loss_draw = log_uniform(&mut r, LOSS.0, LOSS.1);
    let loss = if lossless { 0.0 } else { loss_draw };
    let buffer_bdp = r.range(BUFFER_BDP.0, BUFFER_BDP.1);
    // Its own stream: the other parameters (and so the data path) are those drawn before it.
    let pop_rtt_ms = Rng::derive(seed, STREAM_POP).range(POP_RTT_MS.0, POP_RTT_MS.1).min(base_rtt_ms);
    PathDraw {
        seed,
        direction,
        capacity_mbps,
        base_rtt_ms,
        uplink_share,
        pop_rtt_ms,
        schedule,
        outage_ms,
        bands,
        band_spacing_ms,
        band_dwell_ms,
        interval_shift_ms,
        level_spread,
        variation,
        grants,
        loss,
        buffer_bdp,
    }
}

/// Draws a path from `seed` and builds its trace of `duration_ms`; `command` is recorded as
/// the trace's source.
pub fn trace(seed: u64, duration_ms: u64, command: &str) -> Result<(PathDraw, Trace), String> {
    let d = draw(seed);
    let t = d.build(duration_ms, command)?;
    Ok((d, t))
}

impl PathDraw {
    /// The data direction as a [`crate::Dir`].
    pub fn data_dir(&self) -> crate::Dir {
        self.direction.primary()
    }

    /// One-way delays (uplink, downlink) of the base RTT, ms.
    pub fn one_way_ms(&self) -> (f64, f64) {
        (self.base_rtt_ms * self.uplink_share, self.base_rtt_ms * (1.0 - self.uplink_share))
    }

    /// The buffer as a queue depth in time, µs: `buffer_bdp` × base RTT. At the trace's mean
    /// capacity that is `buffer_bdp` BDPs (the simulator's `--queue MSms` resolves a time
    /// against the mean capacity of the data direction).
    pub fn buffer_us(&self) -> u64 {
        (self.buffer_bdp * self.base_rtt_ms * 1000.0).round().max(1.0) as u64
    }

    /// One line of the parameters, for the trace's notes.
    pub fn summary(&self) -> String {
        format!(
            "drawn path {}: {}, {:.1} Mbit/s, base RTT {:.1} ms (PoP {:.1} ms), {}, outages {:.0}-{:.0} ms, {} band(s) {:.1} ms apart, {}, {}, loss {:.4} %, buffer {:.2} BDP",
            self.seed,
            if self.direction == Measured::Up { "uplink-like" } else { "downlink-like" },
            self.capacity_mbps,
            self.base_rtt_ms,
            self.pop_rtt_ms,
            schedule_text(&self.schedule),
            self.outage_ms.0,
            self.outage_ms.1,
            self.bands,
            self.band_spacing_ms,
            variation_text(&self.variation),
            self.grants.map_or("smooth delivery".to_string(), |g| format!("grants 1-{} ms apart", g.max_gap_ms)),
            self.loss * 100.0,
            self.buffer_bdp
        )
    }

    /// Builds the trace of `duration_ms` (1 s to [`MAX_DURATION_MS`]); `command` is recorded
    /// as its source.
    pub fn build(&self, duration_ms: u64, command: &str) -> Result<Trace, String> {
        if duration_ms < 1000 {
            return Err("duration must be at least 1 s".into());
        }
        if duration_ms > MAX_DURATION_MS {
            return Err(format!("duration must be at most {} s", MAX_DURATION_MS / 1000));
        }
        let events = self.events(duration_ms);
        let mut ro = Rng::derive(self.seed, STREAM_OUTAGES);
        let outages: Vec<Span> = events
            .iter()
            .map(|&e| Span { start_us: e * 1000, len_us: ro.range(self.outage_ms.0, self.outage_ms.1).round() as u64 * 1000 })
            .collect();
        // Intervals between reconfigurations: [bounds[i], bounds[i+1]) ms.
        let mut bounds: Vec<u64> = std::iter::once(0).chain(events.iter().copied()).collect();
        bounds.push(duration_ms);
        let rate = self.rates(&bounds);
        let capacity = self.opportunities(&rate, &outages, duration_ms)?;
        let data = self.data_delay(&bounds, duration_ms);
        let (up_ms, down_ms) = self.one_way_ms();
        let other = DelaySeries::constant(round_100us(if self.direction == Measured::Up { down_ms } else { up_ms }));
        let data_dir = DirTrace { capacity: Some(capacity), delay: Some(data), loss: Loss::Constant(self.loss) };
        let other_dir = DirTrace { capacity: None, delay: Some(other), loss: Loss::Constant(0.0) };
        let (up, down) = if self.direction == Measured::Up { (data_dir, other_dir) } else { (other_dir, data_dir) };
        let t = Trace {
            meta: Meta {
                name: format!("draw-{}-{}s", self.seed, duration_ms / 1000),
                source: command.to_string(),
                licence: "MIT".into(),
                direction: self.direction,
                resolution_us: 1000,
                notes: self.summary(),
                pop_rtt_us: Some((self.pop_rtt_ms * 10.0).round() as u64 * 100),
            },
            up,
            down,
            reconfigurations: events.iter().map(|e| e * 1000).collect(),
            outages,
            terrestrial: None,
        };
        t.validate()?;
        Ok(t)
    }

    /// Reconfiguration times, ms, sorted, at least [`MIN_EVENT_GAP_MS`] apart, none at 0 and
    /// none within [`END_MARGIN_MS`] of the end.
    fn events(&self, duration_ms: u64) -> Vec<u64> {
        let mut r = Rng::derive(self.seed, STREAM_EVENTS);
        let mut ev: Vec<u64> = Vec::new();
        let poisson = |r: &mut Rng, ev: &mut Vec<u64>, mean_ms: f64| {
            let mut t = 0.0;
            loop {
                t += MIN_EVENT_GAP_MS as f64 + r.exp((mean_ms - MIN_EVENT_GAP_MS as f64).max(1.0));
                if t >= duration_ms as f64 {
                    break;
                }
                let c = t.round() as u64;
                if ev.iter().all(|&e| e.abs_diff(c) >= MIN_EVENT_GAP_MS) {
                    ev.push(c);
                }
            }
        };
        match self.schedule {
            Schedule::Periodic { period_ms, phase_ms, aperiodic_mean_s } => {
                ev.extend((0..).map(|k| phase_ms + k * period_ms).take_while(|&t| t < duration_ms));
                if let Some(m) = aperiodic_mean_s {
                    poisson(&mut r, &mut ev, m * 1000.0);
                }
            }
            Schedule::Aperiodic { mean_gap_s } => poisson(&mut r, &mut ev, mean_gap_s * 1000.0),
        }
        ev.sort_unstable();
        ev.retain(|&e| e > 0 && e + END_MARGIN_MS <= duration_ms);
        ev
    }

    /// Capacity per ms, Mbit/s, over the intervals `bounds`.
    fn rates(&self, bounds: &[u64]) -> Vec<f64> {
        let mut r = Rng::derive(self.seed, STREAM_CAPACITY);
        let n = *bounds.last().unwrap_or(&0) as usize;
        let mut rate = vec![0.0; n];
        for w in bounds.windows(2) {
            let (a, b) = (w[0] as usize, w[1] as usize);
            let level = self.capacity_mbps * log_uniform(&mut r, self.level_spread.0, self.level_spread.1);
            match self.variation {
                Variation::Steps { mean_dwell_ms, depth } => {
                    let mut t = a;
                    while t < b {
                        let f = log_uniform(&mut r, 1.0 / (1.0 + depth), 1.0 + depth);
                        let len = (r.exp(mean_dwell_ms).round() as usize).max(1);
                        for x in rate.iter_mut().take(b.min(t + len)).skip(t) {
                            *x = (level * f).clamp(MIN_MBPS, MAX_MBPS);
                        }
                        t += len;
                    }
                }
                Variation::Walk { sd_per_sqrt_s, bound } => {
                    let lim = (1.0 + bound).ln();
                    let kick = sd_per_sqrt_s * (STEP_MS as f64 / 1000.0).sqrt();
                    let mut x = r.range(-lim, lim);
                    let mut t = a;
                    while t < b {
                        for v in rate.iter_mut().take(b.min(t + STEP_MS as usize)).skip(t) {
                            *v = (level * x.exp()).clamp(MIN_MBPS, MAX_MBPS);
                        }
                        x += kick * r.normal();
                        // Reflect into [-lim, lim] (a kick is far smaller than the range).
                        if x > lim {
                            x = (2.0 * lim - x).max(-lim);
                        } else if x < -lim {
                            x = (-2.0 * lim - x).min(lim);
                        }
                        t += STEP_MS as usize;
                    }
                }
            }
        }
        rate
    }

    /// Opportunity times from the per-ms rate: a virtual clock, whole ms, none in an outage,
    /// grants applied; the last one at the period so the mahimahi export loops there.
    fn opportunities(&self, rate: &[f64], outages: &[Span], duration_ms: u64) -> Result<Capacity, String> {
        let period = duration_ms * 1000;
        let mut times: Vec<u64> = Vec::new();
        let mut t = 0.0f64;
        let mut out = OutageCursor { outages, k: 0 };
        loop {
            if let Some(o) = out.at(t as u64) {
                t = o.end_us() as f64;
            }
            let ms = (t / 1000.0) as usize;
            let Some(&r) = rate.get(ms) else { break };
            t += 12_000.0 / r.max(MIN_MBPS);
            let at = (t / 1000.0).ceil() as u64 * 1000;
            if at > period {
                break;
            }
            if out.at(at).is_none() {
                times.push(at);
            }
        }
        if let Some(g) = self.grants {
            let mut rg = Rng::derive(self.seed, STREAM_GRANTS);
            let mut grants: Vec<u64> = Vec::new();
            let mut g_ms = int_between(&mut rg, 1, g.max_gap_ms);
            let mut out = OutageCursor { outages, k: 0 };
            while g_ms <= duration_ms {
                if out.at(g_ms * 1000).is_none() {
                    grants.push(g_ms * 1000);
                }
                g_ms += int_between(&mut rg, 1, g.max_gap_ms);
            }
            let mut k = 0;
            let mut granted = Vec::with_capacity(times.len());
            for &x in &times {
                while k < grants.len() && grants[k] < x {
                    k += 1;
                }
                match grants.get(k) {
                    Some(&gt) => granted.push(gt),
                    None => break,
                }
            }
            times = granted;
        }
        if times.last() != Some(&period) {
            times.push(period);
        }
        Capacity::new(times, Some(period))
    }

    /// The data direction's one-way delay per 10 ms: its share of the base RTT, the interval's
    /// shift and the current band.
    fn data_delay(&self, bounds: &[u64], duration_ms: u64) -> DelaySeries {
        let mut r = Rng::derive(self.seed, STREAM_BANDS);
        let (up_ms, down_ms) = self.one_way_ms();
        let base = if self.direction == Measured::Up { up_ms } else { down_ms };
        let ticks = duration_ms.div_ceil(STEP_MS) as usize;
        let mut values = Vec::with_capacity(ticks);
        let mut interval = 0;
        let (mut shift, mut band, mut next_switch) = (0.0, 0u32, 0.0);
        for i in 0..ticks {
            let t_ms = i as u64 * STEP_MS;
            if interval == 0 || (interval < bounds.len() - 1 && t_ms >= bounds[interval]) {
                // A new interval (the first included): new shift, random band.
                while interval < bounds.len() - 1 && t_ms >= bounds[interval] {
                    interval += 1;
                }
                shift = r.range(-self.interval_shift_ms, self.interval_shift_ms);
                band = r.below(self.bands as u64) as u32;
                next_switch = t_ms as f64 + r.exp(self.band_dwell_ms);
            }
            while t_ms as f64 >= next_switch {
                if self.bands > 1 {
                    band = if band == 0 || (band + 1 < self.bands && r.chance(0.5)) { band + 1 } else { band - 1 };
                }
                next_switch += r.exp(self.band_dwell_ms).max(1.0);
            }
            values.push(round_100us(base + shift + band as f64 * self.band_spacing_ms));
        }
        DelaySeries { interval_us: LEOREPLAYER_INTERVAL_US, values_us: values.into() }
    }
}

/// The outage (if any) at times asked in increasing order.
struct OutageCursor<'a> {
    outages: &'a [Span],
    k: usize,
}

impl OutageCursor<'_> {
    fn at(&mut self, t: u64) -> Option<Span> {
        while self.k < self.outages.len() && self.outages[self.k].end_us() <= t {
            self.k += 1;
        }
        self.outages.get(self.k).copied().filter(|o| t >= o.start_us)
    }
}

/// ms to µs, rounded to 100 µs, at least 1 ms.
fn round_100us(ms: f64) -> u64 {
    ((ms * 10.0).round().max(10.0) as u64) * 100
}

fn schedule_text(s: &Schedule) -> String {
    match *s {
        Schedule::Periodic { period_ms, phase_ms, aperiodic_mean_s } => format!(
            "reconfiguration every {:.3} s from {:.3} s{}",
            period_ms as f64 / 1000.0,
            phase_ms as f64 / 1000.0,
            aperiodic_mean_s.map_or(String::new(), |m| format!(" plus aperiodic ones ~{m:.0} s apart"))
        ),
        Schedule::Aperiodic { mean_gap_s } => format!("aperiodic reconfigurations ~{mean_gap_s:.1} s apart"),
    }
}

fn variation_text(v: &Variation) -> String {
    match *v {
        Variation::Steps { mean_dwell_ms, depth } => format!("capacity steps ~{mean_dwell_ms:.0} ms long, depth {depth:.2}"),
        Variation::Walk { sd_per_sqrt_s, bound } => format!("capacity random walk sd {sd_per_sqrt_s:.2}/sqrt(s) within +/-{:.0} %", bound * 100.0),
    }
}

impl fmt::Display for PathDraw {
    /// The parameters, one per line (`leocc trace draw` prints this).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (up, down) = self.one_way_ms();
        writeln!(f, "seed:               {}", self.seed)?;
        writeln!(f, "direction:          {}", if self.direction == Measured::Up { "up (uplink-like)" } else { "down (downlink-like)" })?;
        writeln!(f, "capacity:           {:.2} Mbit/s, per interval x{:.2}-{:.2}", self.capacity_mbps, self.level_spread.0, self.level_spread.1)?;
        writeln!(f, "inside an interval: {}", variation_text(&self.variation))?;
        writeln!(f, "base RTT:           {:.2} ms (up {up:.2} + down {down:.2}), data direction shifted +/-{:.2} ms per interval", self.base_rtt_ms, self.interval_shift_ms)?;
        writeln!(f, "PoP RTT:            {:.2} ms (terminal to PoP, the rest beyond it)", self.pop_rtt_ms)?;
        writeln!(f, "RTT bands:          {} x {:.2} ms apart, mean dwell {:.0} ms", self.bands, self.band_spacing_ms, self.band_dwell_ms)?;
        writeln!(f, "reconfigurations:   {}", schedule_text(&self.schedule))?;
        writeln!(f, "outages:            {:.0}-{:.0} ms", self.outage_ms.0, self.outage_ms.1)?;
        writeln!(f, "delivery:           {}", self.grants.map_or("smooth".to_string(), |g| format!("bursty grants 1-{} ms apart", g.max_gap_ms)))?;
        writeln!(f, "random loss:        {:.4} %", self.loss * 100.0)?;
        write!(f, "buffer:             {:.2} BDP = {} of mean capacity", self.buffer_bdp, leocc_base::text::us_as_ms(self.buffer_us()) + "ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::empty_runs;
    use crate::model::Dir;

    fn within(x: f64, (lo, hi): (f64, f64)) -> bool {
        x >= lo && x <= hi
    }

    #[test]
    fn same_seed_same_trace_other_seed_other_trace() {
        let (da, a) = trace(11, 20_000, "x").unwrap();
        let (db, b) = trace(11, 20_000, "x").unwrap();
        let (_, c) = trace(12, 20_000, "x").unwrap();
        assert_eq!(da, db);
        assert_eq!(a, b);
        assert_ne!(a, c);
        // The same bytes on disk, too.
        assert_eq!(crate::format::render(&a), crate::format::render(&b));
    }

    #[test]
    fn parameters_fall_in_their_ranges() {
        let (mut up, mut periodic, mut aperiodic, mut steps, mut bursty, mut lossless) = (0, 0, 0, 0, 0, 0);
        let mut bands_seen = [false; 5];
        let n = 2000;
        for seed in 0..n {
            let d = draw(seed);
            assert_eq!(d.seed, seed);
            assert!(within(d.capacity_mbps, CAPACITY_MBPS), "{d:?}");
            assert!(within(d.base_rtt_ms, BASE_RTT_MS), "{d:?}");
            assert!(within(d.uplink_share, UPLINK_SHARE), "{d:?}");
            assert!(OUTAGE_MS.0 <= d.outage_ms.0 && d.outage_ms.0 <= d.outage_ms.1 && d.outage_ms.1 <= OUTAGE_MS.1, "{d:?}");
            assert!((BANDS.0..=BANDS.1).contains(&d.bands), "{d:?}");
            bands_seen[d.bands as usize] = true;
            assert!(within(d.band_spacing_ms, BAND_SPACING_MS) && within(d.band_dwell_ms, BAND_DWELL_MS), "{d:?}");
            assert!(d.interval_shift_ms >= 0.0 && d.interval_shift_ms <= MAX_SHIFT_MS, "{d:?}");
            assert!(within(d.level_spread.0, SPREAD_LOW) && within(d.level_spread.1, SPREAD_HIGH), "{d:?}");
            assert!(d.loss == 0.0 || within(d.loss, LOSS), "{d:?}");
            assert!(within(d.buffer_bdp, BUFFER_BDP), "{d:?}");
            match d.schedule {
                Schedule::Periodic { period_ms, phase_ms, aperiodic_mean_s } => {
                    periodic += 1;
                    assert!(period_ms == 15_000 || (10_000..=12_000).contains(&period_ms), "{d:?}");
                    assert!(phase_ms < period_ms);
                    assert!(aperiodic_mean_s.is_none_or(|m| within(m, (30.0, 120.0))));
                }
                Schedule::Aperiodic { mean_gap_s } => {
                    aperiodic += 1;
                    assert!(within(mean_gap_s, (5.0, 30.0)));
                }
            }
            match d.variation {
                Variation::Steps { mean_dwell_ms, depth } => {
                    steps += 1;
                    assert!(within(mean_dwell_ms, (200.0, 3000.0)) && within(depth, (0.0, 0.5)));
                }
                Variation::Walk { sd_per_sqrt_s, bound } => assert!(within(sd_per_sqrt_s, (0.05, 0.5)) && within(bound, (0.1, 0.5))),
            }
            if let Some(g) = d.grants {
                bursty += 1;
                assert!((GRANT_MAX_GAP_MS.0..=GRANT_MAX_GAP_MS.1).contains(&g.max_gap_ms));
            }
            up += (d.direction == Measured::Up) as u32;
            lossless += (d.loss == 0.0) as u32;
            let b = d.buffer_us() as f64 / 1000.0 / d.base_rtt_ms;
            assert!((b - d.buffer_bdp).abs() < 1e-3, "{d:?}");
        }
        // Every kind of path turns up, and the ranges are covered to their ends.
        let share = |k: u32| k as f64 / n as f64;
        assert!(within(share(up), (0.35, 0.45)) && within(share(lossless), (0.25, 0.35)), "{up} {lossless}");
        assert!(periodic > 0 && aperiodic > 0 && steps > 0 && steps < n as u32 && bursty > 0);
        assert!(bands_seen[1..].iter().all(|&s| s));
        let caps: Vec<f64> = (0..n).map(|s| draw(s).capacity_mbps).collect();
        assert!(caps.iter().any(|&c| c < 7.0) && caps.iter().any(|&c| c > 400.0));
        // Log-uniform: about half below the geometric middle (50 Mbit/s).
        assert!(within(share(caps.iter().filter(|&&c| c < 50.0).count() as u32), (0.45, 0.55)));
    }

    #[test]
    fn traces_keep_the_drawn_parameters() {
        for seed in 0..24 {
            let duration_ms = 40_000;
            let (d, t) = trace(seed, duration_ms, "test").unwrap();
            let dir = d.data_dir();
            assert_eq!(t.meta.direction.primary(), dir);
            assert_eq!(t.duration_us(), duration_ms * 1000);
            assert!(t.meta.notes.starts_with(&format!("drawn path {seed}:")));
            // Ground truth: one outage per reconfiguration, in range, no opportunity inside.
            assert_eq!(t.reconfigurations.len(), t.outages.len());
            let link = t.link(dir);
            for (r, o) in t.reconfigurations.iter().zip(&t.outages) {
                assert_eq!(*r, o.start_us);
                assert!(within(o.len_us as f64 / 1000.0, (d.outage_ms.0.floor(), d.outage_ms.1.ceil())), "seed {seed}: {o:?} {d:?}");
                assert_eq!(link.opportunities(o.start_us, o.len_us).count(), 0, "seed {seed}");
                assert!(o.end_us() + 100_000 <= duration_ms * 1000);
            }
            if let Schedule::Periodic { period_ms, phase_ms, .. } = d.schedule {
                let slots = (0..).map(|k| (phase_ms + k * period_ms) * 1000).take_while(|&s| s < (duration_ms - END_MARGIN_MS) * 1000);
                for s in slots.filter(|&s| s > 0) {
                    assert!(t.reconfigurations.contains(&s), "seed {seed}: slot {s} missing: {:?}", t.reconfigurations);
                }
            }
            // No stretch without capacity outside the outages (it would read as one).
            let cap = t.capacity(dir).unwrap();
            for run in empty_runs(cap.times_us(), cap.period_us(), 1000) {
                assert!(t.outages.iter().any(|o| run.start_us < o.end_us() + 1000 && o.start_us < run.end_us()), "seed {seed}: empty {run:?}");
            }
            // Capacity: the mean within the level range the spread allows.
            let mean = link.mean_capacity_bps(0, duration_ms * 1000) / 1e6;
            let lo = (d.capacity_mbps * d.level_spread.0 / 1.5 * 0.8).max(MIN_MBPS * 0.8);
            let hi = (d.capacity_mbps * d.level_spread.1 * 1.5).min(MAX_MBPS);
            assert!(within(mean, (lo, hi)), "seed {seed}: mean {mean} not in {lo}-{hi}: {d:?}");
            // RTT: the lowest band less the shift, up to the highest band plus the shift.
            let other = match dir {
                Dir::Up => Dir::Down,
                Dir::Down => Dir::Up,
            };
            let back = t.link(other).delay_us(0) as f64 / 1000.0;
            let top = d.base_rtt_ms + d.interval_shift_ms + (d.bands - 1) as f64 * d.band_spacing_ms + 0.15;
            for ms in (0..duration_ms).step_by(10) {
                let rtt = link.delay_us(ms * 1000) as f64 / 1000.0 + back;
                assert!(within(rtt, (d.base_rtt_ms - d.interval_shift_ms - 0.15, top)), "seed {seed} at {ms} ms: {rtt} {d:?}");
            }
            assert_eq!(t.dir(dir).loss, Loss::Constant(d.loss));
            // It saves and loads back unchanged.
            let back = crate::format::parse(std::path::Path::new("x"), crate::format::render(&t).as_bytes()).unwrap();
            assert_eq!(back, t);
        }
    }

    #[test]
    fn bursty_grants_deliver_in_bursts() {
        let seed = (0..200).find(|&s| draw(s).grants.is_some_and(|g| g.max_gap_ms >= 4)).unwrap();
        let (d, t) = trace(seed, 10_000, "x").unwrap();
        let times = t.capacity(d.data_dir()).unwrap().times_us().to_vec();
        let mut distinct = times.clone();
        distinct.dedup();
        let gaps: Vec<u64> = distinct.windows(2).map(|w| w[1] - w[0]).collect();
        let mean_gap = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64 / 1000.0;
        // Grants average (1 + max) / 2 ms apart; at 2 Mbit/s and up a grant never goes empty
        // for long, so delivery times sit about that far apart.
        assert!(mean_gap > 1.4, "seed {seed}: mean gap {mean_gap} ms: {d:?}");
    }

    #[test]
    fn bad_durations_are_refused() {
        assert!(trace(1, 999, "x").is_err());
        assert!(trace(1, MAX_DURATION_MS + 1, "x").is_err());
    }
}
