//! The trace data model: what a LEO path does over one trace period.
//!
//! A trace holds, per direction, a capacity schedule (mahimahi delivery opportunities), a
//! one-way base delay series and a random-loss probability; for the whole path the ground-truth
//! reconfiguration times and outages when known; and optionally a terrestrial segment between
//! the PoP and the server with its own delay and capacity. A direction that was not measured
//! mirrors the other (as `mm-link T T` does with one file). Everything loops with the period.

use std::path::Path;
use std::sync::Arc;

use leocc_base::FileError;
use crate::link::LinkModel;
use leocc_base::text::{MAX_CAPACITY_BPS, MAX_DELAY_US, MAX_TIME_US};

/// Bytes one mahimahi delivery opportunity can carry.
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// A direction of the satellite path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Client (satellite user) to server.
    Up,
    /// Server to client.
    Down,
}

impl Dir {
    /// `"up"` or `"down"`, as written in files and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
        }
    }
}

/// Which directions a trace's data was measured for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// Only the uplink was measured (the downlink mirrors it).
    Up,
    /// Only the downlink was measured (the uplink mirrors it).
    Down,
    /// Both directions have their own data.
    Both,
}

impl Measured {
    /// The name used in files: `up`, `down` or `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            Measured::Up => "up",
            Measured::Down => "down",
            Measured::Both => "both",
        }
    }

    /// Parses `up`, `down` or `both`.
    pub fn parse(s: &str) -> Option<Measured> {
        match s {
            "up" => Some(Measured::Up),
            "down" => Some(Measured::Down),
            "both" => Some(Measured::Both),
            _ => None,
        }
    }

    /// The direction statistics and plots describe by default.
    pub fn primary(self) -> Dir {
        match self {
            Measured::Up => Dir::Up,
            Measured::Down | Measured::Both => Dir::Down,
        }
    }
}

/// Descriptive metadata; none of it changes how the trace replays.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// Short name, e.g. `starlink-down-60s`.
    pub name: String,
    /// Where it came from: a citation, or the exact command that generated it.
    pub source: String,
    /// Licence of the data (SPDX id where possible).
    pub licence: String,
    /// Which directions were measured.
    pub direction: Measured,
    /// Time resolution of the capacity data in µs (1000 for mahimahi files).
    pub resolution_us: u64,
    /// Free text, one line.
    pub notes: String,
    /// Round-trip propagation delay between the terminal and the PoP, µs, when the satellite
    /// segment's delays also hold the path beyond the PoP (drawn paths): a probe to the PoP
    /// (the reconfiguration detector's) crosses only this much of them. `None`: the delays
    /// are the terminal–PoP ones (measured and generated traces).
    pub pop_rtt_us: Option<u64>,
}

impl Default for Meta {
    fn default() -> Self {
        Meta {
            name: String::new(),
            source: String::new(),
            licence: String::new(),
            direction: Measured::Down,
            resolution_us: 1000,
            notes: String::new(),
            pop_rtt_us: None,
        }
    }
}

/// A capacity schedule: sorted delivery-opportunity times within one period, mahimahi style
/// (an opportunity at exactly `period_us` falls on the loop boundary, like the last line of a
/// mahimahi file).
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    times_us: Arc<[u64]>,
    period_us: u64,
}

impl Capacity {
    /// Builds a schedule from sorted times. `period_us` defaults to the last time (mahimahi).
    /// Errors name the index of the offending opportunity.
    pub fn new(times_us: Vec<u64>, period_us: Option<u64>) -> Result<Capacity, String> {
        let Some(&last) = times_us.last() else { return Err("capacity has no delivery opportunity".into()) };
        if let Some(i) = times_us.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!("opportunity times go backwards at opportunity {}", i + 2));
        }
        let period_us = period_us.unwrap_or(last);
        if period_us == 0 {
            return Err("capacity period is 0 (the last opportunity must be after time 0)".into());
        }
        if last > period_us {
            return Err(format!("opportunity at {last} µs lies after the period {period_us} µs"));
        }
        if period_us > MAX_TIME_US {
            return Err(format!("period {period_us} µs exceeds the limit of {MAX_TIME_US} µs"));
        }
        Ok(Capacity { times_us: times_us.into(), period_us })
    }

    /// Opportunity times in µs, sorted, within [0, period].
    pub fn times_us(&self) -> &[u64] {
        &self.times_us
    }

    /// The schedule loops after this many µs.
    pub fn period_us(&self) -> u64 {
        self.period_us
    }

    pub(crate) fn shared_times(&self) -> Arc<[u64]> {
        self.times_us.clone()
    }
}

/// A one-way delay series: value i holds for [i·interval, (i+1)·interval); the last value holds
/// to the end of the period.
#[derive(Debug, Clone, PartialEq)]
pub struct DelaySeries {
    /// Length of each interval in µs (LeoReplayer: 10 000).
    pub interval_us: u64,
    /// One-way delay per interval, µs.
    pub values_us: Arc<[u64]>,
}

impl DelaySeries {
    /// A delay that never changes.
    pub fn constant(us: u64) -> DelaySeries {
        DelaySeries { interval_us: 1_000_000, values_us: vec![us].into() }
    }

    /// The delay at folded time `t_us` (already reduced modulo the period). Total even on a
    /// series that `Trace::validate` would reject: no value means 0, a 0 interval means 1 µs.
    pub fn at(&self, t_us: u64) -> u64 {
        let i = (t_us / self.interval_us.max(1)) as usize;
        self.values_us.get(i.min(self.values_us.len().saturating_sub(1))).copied().unwrap_or(0)
    }
}

/// Random loss probability over time.
#[derive(Debug, Clone, PartialEq)]
pub enum Loss {
    /// The same probability all the time.
    Constant(f64),
    /// Value i holds for [i·interval, (i+1)·interval); the last holds to the end of the period.
    Series {
        /// Length of each interval in µs.
        interval_us: u64,
        /// Loss probability per interval, in [0, 1].
        values: Arc<[f64]>,
    },
}

impl Loss {
    /// The probability at folded time `t_us` (total, like [`DelaySeries::at`]).
    pub fn at(&self, t_us: u64) -> f64 {
        match self {
            Loss::Constant(p) => *p,
            Loss::Series { interval_us, values } => {
                let i = (t_us / (*interval_us).max(1)) as usize;
                values.get(i.min(values.len().saturating_sub(1))).copied().unwrap_or(0.0)
            }
        }
    }

    /// Time-average over the series (or the constant).
    pub fn mean(&self) -> f64 {
        match self {
            Loss::Constant(p) => *p,
            Loss::Series { values, .. } => leocc_base::metrics::mean(values).unwrap_or(0.0),
        }
    }
}

/// A span of time, e.g. an outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Start, µs since the trace start.
    pub start_us: u64,
    /// Length, µs.
    pub len_us: u64,
}

impl Span {
    /// First µs after the span.
    pub fn end_us(&self) -> u64 {
        self.start_us + self.len_us
    }
}

/// Data of one direction of the satellite segment. `None` fields mirror the other direction.
#[derive(Debug, Clone, PartialEq)]
pub struct DirTrace {
    /// Capacity schedule, or `None` to use the other direction's.
    pub capacity: Option<Capacity>,
    /// One-way delay, or `None` to use the other direction's (zero if neither has one).
    pub delay: Option<DelaySeries>,
    /// Random loss probability.
    pub loss: Loss,
}

impl Default for DirTrace {
    fn default() -> Self {
        DirTrace { capacity: None, delay: None, loss: Loss::Constant(0.0) }
    }
}

/// The terrestrial segment between the PoP and the server (same in both directions).
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Its capacity schedule.
    pub capacity: Capacity,
    /// Its one-way delay.
    pub delay: DelaySeries,
    /// Its random loss.
    pub loss: Loss,
}

/// A LEO path trace. See the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Descriptive metadata.
    pub meta: Meta,
    /// Uplink data.
    pub up: DirTrace,
    /// Downlink data.
    pub down: DirTrace,
    /// Ground-truth reconfiguration times in µs, sorted (may be empty).
    pub reconfigurations: Vec<u64>,
    /// Ground-truth outages, sorted and disjoint (may be empty). They apply to both directions.
    pub outages: Vec<Span>,
    /// Optional terrestrial segment (bottleneck-shift traces).
    pub terrestrial: Option<Segment>,
}

impl Trace {
    /// Loads our format, a mahimahi capacity file, or a directory of mahimahi/LeoReplayer files.
    pub fn load(path: &Path) -> Result<Trace, FileError> {
        if path.is_dir() {
            return crate::mahimahi::load_dir(path);
        }
        let data = std::fs::read(path).map_err(|e| FileError::io(path, &e))?;
        if crate::format::is_ours(&data) {
            crate::format::parse(path, &data)
        } else {
            crate::mahimahi::trace_from_capacity_file(path, &data)
        }
    }

    /// Writes the trace in our format, atomically (temporary file, then rename).
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        self.validate().map_err(|p| FileError::whole(path, p))?;
        leocc_base::write_atomic(path, crate::format::render(self).as_bytes())
    }

    /// Length of one loop of the trace in µs (the longer of the two directions' periods).
    pub fn duration_us(&self) -> u64 {
        [Dir::Up, Dir::Down].iter().filter_map(|&d| self.capacity(d)).map(|c| c.period_us()).max().unwrap_or(0)
    }

    /// Ground-truth reconfiguration times in µs (empty when unknown).
    pub fn reconfigurations_us(&self) -> &[u64] {
        &self.reconfigurations
    }

    /// The link model of one direction of the satellite segment.
    pub fn link(&self, dir: Dir) -> LinkModel {
        let cap = self.capacity(dir).expect("a validated trace has capacity in at least one direction");
        let delay = self.delay(dir);
        LinkModel::new(cap, delay, self.dir(dir).loss.clone(), &self.outages, self.meta.resolution_us)
    }

    /// The part of each direction's one-way delay (up, down), µs, that lies beyond the PoP,
    /// which a probe to the PoP does not cross: none unless the trace gives its terminal–PoP
    /// round trip (`pop_rtt_ms`, drawn paths), else the lowest round trip of the satellite
    /// segment's delay series minus that round trip, split between the directions in
    /// proportion to their lowest delays. Both engines' probe lanes skip it (the simulator's
    /// detector stream and the emulator's PoP responder), so a probe measures what it would on
    /// a real terminal.
    pub fn beyond_pop_us(&self) -> (u64, u64) {
        let Some(pop) = self.meta.pop_rtt_us else { return (0, 0) };
        let min = |d: Dir| self.delay(d).values_us.iter().copied().min().unwrap_or(0);
        let (up, down) = (min(Dir::Up), min(Dir::Down));
        let total = up + down;
        if total == 0 {
            return (0, 0);
        }
        let beyond = total.saturating_sub(pop);
        let b_up = (beyond as u128 * up as u128 / total as u128) as u64;
        (b_up, beyond - b_up)
    }

    /// The link model of the terrestrial segment, if the trace has one.
    pub fn terrestrial(&self) -> Option<LinkModel> {
        self.terrestrial
            .as_ref()
            .map(|s| LinkModel::new(&s.capacity, s.delay.clone(), s.loss.clone(), &[], self.meta.resolution_us))
    }

    /// The data of one direction as stored (fields may be `None` = mirrored).
    pub fn dir(&self, dir: Dir) -> &DirTrace {
        match dir {
            Dir::Up => &self.up,
            Dir::Down => &self.down,
        }
    }

    fn other(dir: Dir) -> Dir {
        match dir {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
        }
    }

    /// The effective capacity of a direction (its own or the mirrored one).
    pub fn capacity(&self, dir: Dir) -> Option<&Capacity> {
        self.dir(dir).capacity.as_ref().or(self.dir(Self::other(dir)).capacity.as_ref())
    }

    /// The effective one-way delay of a direction (its own, the mirrored one, or zero).
    pub fn delay(&self, dir: Dir) -> DelaySeries {
        self.dir(dir)
            .delay
            .clone()
            .or_else(|| self.dir(Self::other(dir)).delay.clone())
            .unwrap_or_else(|| DelaySeries::constant(0))
    }

    /// Checks the invariants every parser and the generator must guarantee.
    pub fn validate(&self) -> Result<(), String> {
        if self.up.capacity.is_none() && self.down.capacity.is_none() {
            return Err("the trace has no capacity in either direction".into());
        }
        if self.meta.resolution_us == 0 {
            return Err("resolution_us must be positive".into());
        }
        for d in [&self.up, &self.down] {
            if let Some(c) = &d.capacity {
                check_capacity(c)?;
            }
            if let Some(s) = &d.delay {
                check_delay(s)?;
            }
            check_loss(&d.loss)?;
        }
        if let Some(t) = &self.terrestrial {
            check_capacity(&t.capacity)?;
            check_delay(&t.delay)?;
            check_loss(&t.loss)?;
        }
        if self.reconfigurations.windows(2).any(|w| w[1] <= w[0]) {
            return Err("reconfiguration times must be strictly increasing".into());
        }
        if self.outages.windows(2).any(|w| w[1].start_us < w[0].end_us()) {
            return Err("outages must be sorted and must not overlap".into());
        }
        Ok(())
    }
}

/// Most opportunities any 1 ms may hold: [`MAX_CAPACITY_BPS`] for 1 ms.
pub(crate) fn max_opportunities_per_ms() -> u64 {
    (MAX_CAPACITY_BPS / 1000.0 / (OPPORTUNITY_BYTES as f64 * 8.0)).ceil() as u64
}

/// Rejects a schedule that delivers more than [`MAX_CAPACITY_BPS`] within any 1 ms.
pub(crate) fn check_capacity(c: &Capacity) -> Result<(), String> {
    let max_per_ms = max_opportunities_per_ms() as usize;
    let t = c.times_us();
    let mut lo = 0;
    for hi in 0..t.len() {
        while t[hi] - t[lo] >= 1000 {
            lo += 1;
        }
        if hi - lo + 1 > max_per_ms {
            return Err(format!(
                "absurd capacity: more than {max_per_ms} opportunities within 1 ms at {} µs (over 100 Gbit/s)",
                t[lo]
            ));
        }
    }
    Ok(())
}

fn check_delay(s: &DelaySeries) -> Result<(), String> {
    if s.interval_us == 0 || s.values_us.is_empty() {
        return Err("a delay series needs a positive interval and at least one value".into());
    }
    match s.values_us.iter().find(|&&v| v > MAX_DELAY_US) {
        Some(v) => Err(format!("absurd one-way delay {v} µs (limit {MAX_DELAY_US} µs)")),
        None => Ok(()),
    }
}

fn check_loss(l: &Loss) -> Result<(), String> {
    let ok = |p: f64| p.is_finite() && (0.0..=1.0).contains(&p);
    match l {
        Loss::Constant(p) if !ok(*p) => Err(format!("loss probability {p} outside [0, 1]")),
        Loss::Series { interval_us, values } if *interval_us == 0 || values.is_empty() || !values.iter().all(|&p| ok(p)) => {
            Err("a loss series needs a positive interval and values within [0, 1]".into())
        }
        _ => Ok(()),
    }
}
