//! Robustness over drawn paths (`leocc bench robust`): a control in the simulator over many
//! paths drawn from wide ranges (`leocc_trace::draw`, a model the bundled traces were not made
//! with), in several settings, summarised by the worst case and the worst 10 % of each metric
//! with the draw seed of the worst path, so that a bad case can be rerun and looked at.
//!
//! Per drawn path (seed = base seed + index) and queue discipline ([`Plan::qdiscs`], drop-tail
//! by default), eight simulator runs over the path's trace, with the path's buffer (a queue
//! depth in time: the drawn number of BDPs × base RTT at the mean capacity) and the path's seed
//! as the simulator's seed ([`Setting`]):
//! * the control alone, BBRv1 alone, Cubic alone: utilisation, p95 RTT against BBRv1's;
//! * the control next to one Cubic flow, and next to one BBRv1 flow, both from 0 s: the
//!   control's share (its throughput over half the pair's) and the harm to the other flow
//!   (its throughput over the smaller of half the link's mean capacity and what it gets alone);
//! * the control next to a Cubic flow that leaves [`LEAVE_BEFORE_END_S`] before the end: the
//!   control's mean queueing delay over the [`POST_LEAVE_S`] after, and how long until a 1 s
//!   window's mean queueing delay is below [`QUEUE_OK_MS`];
//! * three flows of the control starting [`STAGGER_S`] apart: Jain's index over the time all
//!   three run;
//! * the control alone with a false reconfiguration event every [`FALSE_EVENT_INTERVAL_US`]:
//!   utilisation and p95 queueing delay against the event-free run.
//!
//! Runs shorter than 45 s scale the leave time, the window after it and the stagger down
//! (a third, a third and a ninth of the run at most), so tiny runs still measure every setting.
//! Every run is one `leocc sim` command ([`rerun_commands`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use leocc_sim::detector::ProbeNoiseModel;
use leocc_sim::{parse_flows, Qdisc, QueueLimit, RunResult, Scenario, TsRow};
use leocc_trace::draw::PathDraw;
use leocc_base::metrics;
use leocc_trace::{Dir, LinkModel, Trace};
use serde::Serialize;

/// Paths drawn by default.
pub const DEFAULT_PATHS: usize = 20;
/// Simulated seconds per run by default.
pub const DEFAULT_DURATION_S: f64 = 45.0;
/// The senders' send buffer by default: 64 MiB, the `tcp_wmem` max ESnet's host tuning guide
/// gives for long, fat paths. Linux's default 4 MiB holds less than one BDP of a 500 Mbit/s,
/// 200 ms path, where every control would measure the buffer, not itself.
pub const DEFAULT_SNDBUF_BYTES: u64 = 64 << 20;
/// Shortest run the bench accepts, s.
pub const MIN_DURATION_S: f64 = 3.0;
/// The competitor leaves this long before the end (at most a third of the run), s.
pub const LEAVE_BEFORE_END_S: f64 = 15.0;
/// Window after the competitor left over which the mean queueing delay is taken (at most a
/// third of the run), s.
pub const POST_LEAVE_S: f64 = 5.0;
/// Queueing delay under which the queue counts as drained, ms (mean over a 1 s window).
pub const QUEUE_OK_MS: f64 = 10.0;
/// The window that mean is taken over, s.
pub const QUEUE_WINDOW_S: f64 = 1.0;
/// Start offset between the three flows of the control (at most a ninth of the run), s.
pub const STAGGER_S: f64 = 5.0;
/// A false reconfiguration event every this many µs in the false-event setting.
pub const FALSE_EVENT_INTERVAL_US: u64 = 500_000;
/// The simulator seeds of one path are this far apart ([`sim_seed`]): the first is the draw
/// seed itself, so one seed per path is the bench as it always ran, and a path's later seeds
/// stay clear of the other paths' (a million paths apart).
pub const SIM_SEED_STRIDE: u64 = 1_000_000;
/// Most simulator seeds per path: 32 x 8 settings x the paths is already hours of runs.
pub const MAX_SIM_SEEDS: u64 = 32;

/// The simulator's seed of the `replicate`-th run (from 0) of every setting on the path drawn
/// with `draw_seed`.
pub fn sim_seed(draw_seed: u64, replicate: u64) -> u64 {
    draw_seed.wrapping_add(replicate.wrapping_mul(SIM_SEED_STRIDE))
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Number of drawn paths.
    pub paths: usize,
    /// Seed of the first path; path i has seed `base_seed + i`.
    pub base_seed: u64,
    /// Simulated seconds per run (also the drawn trace's length).
    pub duration_s: f64,
    /// The control under test.
    pub cc: String,
    /// Parameter settings (control, `NAME=VALUE`), applied to every flow of that control,
    /// the reference flows included (`leocc sim --param`).
    pub cc_params: Vec<(String, String)>,
    /// Random loss added on the data direction, on top of the path's own.
    pub loss: f64,
    /// Each sender's send buffer, bytes (`leocc sim --sndbuf`).
    pub sndbuf_bytes: u64,
    /// Queue disciplines of the bottleneck; every setting runs on every path under each.
    pub qdiscs: Vec<Qdisc>,
    /// Simulator seeds per path: every setting runs this many times on each path, and each
    /// metric of a path is its mean over them. One run moves a worst-10 % share by 0.1-0.2
    /// with the simulator's seed alone (which flow leaves Startup or an adaptation first
    /// decides the shares for a while); the mean over a few seeds is what a change must move.
    pub sim_seeds: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Noise on the PoP probe stream that the detector and LeoCC's path range read (`leocc
    /// sim --probe-noise`). The default, the fit to real bent-pipe pings, is drawn on the probe
    /// alone: the simulated data packets do not carry it (nor does the emulator's probe).
    pub probe_noise: ProbeNoiseModel,
}

impl Plan {
    /// A plan with the defaults for `cc`.
    pub fn new(cc: &str) -> Plan {
        Plan {
            paths: DEFAULT_PATHS,
            base_seed: 1,
            duration_s: DEFAULT_DURATION_S,
            cc: cc.to_string(),
            cc_params: Vec::new(),
            loss: 0.0,
            sndbuf_bytes: DEFAULT_SNDBUF_BYTES,
            qdiscs: vec![Qdisc::DropTail],
            sim_seeds: 1,
            jobs: 2,
            probe_noise: ProbeNoiseModel::default(),
        }
    }

    /// Checks the plan before any run: sizes, the control's name and its parameters.
    pub fn validate(&self) -> Result<(), String> {
        if self.paths == 0 {
            return Err("need at least one path".into());
        }
        if !(MIN_DURATION_S..=leocc_trace::draw::MAX_DURATION_MS as f64 / 1000.0)
            .contains(&self.duration_s)
        {
            return Err(format!(
                "duration {} s must be within {MIN_DURATION_S}..={} s",
                self.duration_s,
                leocc_trace::draw::MAX_DURATION_MS / 1000
            ));
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(format!("loss {} must be in [0, 1)", self.loss));
        }
        if self.qdiscs.is_empty() {
            return Err("need at least one queue discipline".into());
        }
        if !(1..=MAX_SIM_SEEDS).contains(&self.sim_seeds) {
            return Err(format!("simulator seeds per path {} must be within 1..={MAX_SIM_SEEDS}", self.sim_seeds));
        }
        if self
            .qdiscs
            .iter()
            .enumerate()
            .any(|(i, q)| self.qdiscs[..i].contains(q))
        {
            return Err("a queue discipline is listed twice".into());
        }
        if !leocc_sim::cc::known(&self.cc) {
            return Err(leocc_sim::cc::unknown_cc(&self.cc));
        }
        let mut by_cc: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (cc, p) in &self.cc_params {
            by_cc.entry(cc).or_default().push(p.clone());
        }
        for (cc, ps) in by_cc {
            leocc_sim::cc::check_params(cc, &ps)?;
        }
        self.seeds_checked().map(|_| ())
    }

    /// The seeds of the paths, in order.
    pub fn seeds(&self) -> Vec<u64> {
        self.seeds_checked().unwrap_or_default()
    }

    fn seeds_checked(&self) -> Result<Vec<u64>, String> {
        (0..self.paths as u64)
            .map(|i| {
                self.base_seed
                    .checked_add(i)
                    .ok_or_else(|| "seed overflows u64".to_string())
            })
            .collect()
    }

    fn duration_ms(&self) -> u64 {
        (self.duration_s * 1000.0).round() as u64
    }

    /// When the competitor of [`Setting::Leave`] stops, s.
    pub fn leave_at_s(&self) -> f64 {
        let d = self.duration_ms() as f64 / 1000.0;
        d - LEAVE_BEFORE_END_S.min(d / 3.0)
    }

    /// The window after the competitor left, s.
    pub fn post_leave_s(&self) -> f64 {
        POST_LEAVE_S.min(self.duration_ms() as f64 / 1000.0 / 3.0)
    }

    /// Start offset of the staggered flows, s.
    pub fn stagger_s(&self) -> f64 {
        STAGGER_S.min(self.duration_ms() as f64 / 1000.0 / 9.0)
    }
}

/// One simulator setting run on every path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Setting {
    /// The control alone.
    Alone,
    /// BBRv1 alone (the reference for the p95 RTT).
    BbrAlone,
    /// Cubic alone (the reference for the harm to Cubic).
    CubicAlone,
    /// The control and one Cubic flow, both for the whole run.
    VsCubic,
    /// The control and one BBRv1 flow, both for the whole run.
    VsBbr,
    /// The control for the whole run, a Cubic flow that stops [`LEAVE_BEFORE_END_S`] before the end.
    Leave,
    /// Three flows of the control, [`STAGGER_S`] apart.
    Staggered,
    /// The control alone with a false event every [`FALSE_EVENT_INTERVAL_US`].
    FalseEvents,
}

impl Setting {
    /// Every setting, in the order runs are made.
    pub const ALL: [Setting; 8] = [
        Setting::Alone,
        Setting::BbrAlone,
        Setting::CubicAlone,
        Setting::VsCubic,
        Setting::VsBbr,
        Setting::Leave,
        Setting::Staggered,
        Setting::FalseEvents,
    ];

    /// Short name, as in progress lines.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Alone => "alone",
            Setting::BbrAlone => "bbr-alone",
            Setting::CubicAlone => "cubic-alone",
            Setting::VsCubic => "vs-cubic",
            Setting::VsBbr => "vs-bbr",
            Setting::Leave => "leave",
            Setting::Staggered => "staggered",
            Setting::FalseEvents => "false-events",
        }
    }

    /// The `leocc sim --flows` list of this setting.
    pub fn flows(self, plan: &Plan) -> String {
        let d = secs(plan.duration_ms() as f64 / 1000.0);
        let cc = &plan.cc;
        match self {
            Setting::Alone | Setting::FalseEvents => format!("{cc}@0-{d}"),
            Setting::BbrAlone => format!("bbr@0-{d}"),
            Setting::CubicAlone => format!("cubic@0-{d}"),
            Setting::VsCubic => format!("{cc}@0-{d},cubic@0-{d}"),
            Setting::VsBbr => format!("{cc}@0-{d},bbr@0-{d}"),
            Setting::Leave => format!("{cc}@0-{d},cubic@0-{}", secs(plan.leave_at_s())),
            Setting::Staggered => {
                let s = plan.stagger_s();
                format!("{cc}@0-{d},{cc}@{}-{d},{cc}@{}-{d}", secs(s), secs(2.0 * s))
            }
        }
    }

    fn timeseries(self) -> bool {
        matches!(self, Setting::Leave | Setting::Staggered)
    }
}

/// Seconds as the shortest text that parses back, to the ms (`us_as_ms` of a count of ms
/// writes it in seconds).
fn secs(s: f64) -> String {
    leocc_base::text::us_as_ms((s * 1000.0).round() as u64)
}

/// A drawn path and its trace.
#[derive(Clone, Debug)]
pub struct DrawnPath {
    /// The drawn parameters.
    pub draw: PathDraw,
    /// The trace of the plan's duration.
    pub trace: Arc<Trace>,
}

/// The command that draws the trace of `seed` for `plan` (the trace's recorded source).
pub fn draw_command(plan: &Plan, seed: u64) -> String {
    format!(
        "leocc trace draw --seed {seed} --duration {} -o draw-{seed}.trace",
        secs(plan.duration_ms() as f64 / 1000.0)
    )
}

/// Draws the path of `seed` and builds its trace for `plan`.
pub fn draw_path(plan: &Plan, seed: u64) -> Result<DrawnPath, String> {
    let (draw, trace) =
        leocc_trace::draw::trace(seed, plan.duration_ms(), &draw_command(plan, seed))?;
    Ok(DrawnPath {
        draw,
        trace: Arc::new(trace),
    })
}

/// The buffer of a drawn path.
pub fn queue_of(draw: &PathDraw) -> QueueLimit {
    QueueLimit::Time(draw.buffer_us())
}

/// The simulator scenario of one setting on one path under one queue discipline, for the
/// path's `replicate`-th simulator seed ([`sim_seed`]).
pub fn scenario(
    plan: &Plan,
    path: &DrawnPath,
    qdisc: Qdisc,
    setting: Setting,
    replicate: u64,
) -> Result<Scenario, String> {
    let dur = plan.duration_ms() * 1000;
    let name = format!("draw-{}", path.draw.seed);
    let mut sc = Scenario::new(path.trace.clone(), &name, &plan.cc, dur);
    sc.flows = parse_flows(&setting.flows(plan), "", dur)?;
    sc.seed = sim_seed(path.draw.seed, replicate);
    sc.queue = queue_of(&path.draw);
    sc.qdisc = qdisc;
    sc.loss = plan.loss;
    sc.sndbuf_bytes = plan.sndbuf_bytes;
    sc.data_dir = path.draw.data_dir();
    sc.cc_params = plan.cc_params.clone();
    sc.probe_noise = plan.probe_noise;
    sc.timeseries = setting.timeseries();
    if setting == Setting::FalseEvents {
        sc.false_event_interval_us = FALSE_EVENT_INTERVAL_US;
    }
    Ok(sc)
}

/// The `leocc sim` command line every run of the path `seed` under `qdisc` shares (trace,
/// buffer, discipline, seed, duration, added loss, parameters); [`setting_options`] completes it.
pub fn sim_command(plan: &Plan, seed: u64, qdisc: Qdisc) -> Result<String, String> {
    let d = draw_path(plan, seed)?;
    let mut common = format!(
        "leocc sim --trace draw-{seed}.trace --queue {} --seed {seed} --duration {}",
        queue_of(&d.draw),
        secs(plan.duration_ms() as f64 / 1000.0)
    );
    if qdisc != Qdisc::DropTail {
        common += &format!(" --qdisc {qdisc}");
    }
    if plan.loss > 0.0 {
        common += &format!(" --loss {}", plan.loss);
    }
    if plan.probe_noise != ProbeNoiseModel::default() {
        common += &format!(" --probe-noise {}", plan.probe_noise.name());
    }
    if plan.sndbuf_bytes != leocc_sim::tcp::SNDBUF_BYTES {
        let b = plan.sndbuf_bytes;
        common += &if b % (1 << 20) == 0 {
            format!(" --sndbuf {}MiB", b >> 20)
        } else {
            format!(" --sndbuf {b}")
        };
    }
    for (cc, p) in &plan.cc_params {
        common += &format!(" --param {cc}.{p}");
    }
    Ok(common)
}

/// What each setting adds to [`sim_command`]: (settings, options); the three single-flow
/// references in one command.
pub fn setting_options(plan: &Plan) -> Vec<(String, String)> {
    let mut alone = vec![plan.cc.clone()];
    for r in ["bbr", "cubic"] {
        if !alone.iter().any(|c| c == r) {
            alone.push(r.to_string());
        }
    }
    let mut out = vec![(
        "alone, bbr-alone, cubic-alone".to_string(),
        format!("--cc {}", alone.join(",")),
    )];
    for s in [
        Setting::VsCubic,
        Setting::VsBbr,
        Setting::Leave,
        Setting::Staggered,
    ] {
        let ts = if s.timeseries() {
            format!(" --timeseries ts-{}.jsonl", s.name())
        } else {
            String::new()
        };
        out.push((
            s.name().to_string(),
            format!("--flows '{}'{ts}", s.flows(plan)),
        ));
    }
    out.push((
        Setting::FalseEvents.name().to_string(),
        format!(
            "--cc {} --false-events {}",
            plan.cc,
            FALSE_EVENT_INTERVAL_US / 1000
        ),
    ));
    out
}

/// `leocc` commands that redo the runs of the path `seed` under `qdisc`: the trace, then one
/// `leocc sim` per setting (the three single-flow references in one command).
pub fn rerun_commands(plan: &Plan, seed: u64, qdisc: Qdisc) -> Result<Vec<String>, String> {
    let common = sim_command(plan, seed, qdisc)?;
    let mut out = vec![draw_command(plan, seed)];
    out.extend(
        setting_options(plan)
            .into_iter()
            .map(|(_, o)| format!("{common} {o}")),
    );
    Ok(out)
}

/// What the bench keeps of one run: the result without its time series, and what the time
/// series gave (NaN where the setting has none).
#[derive(Clone, Debug)]
struct RunOut {
    result: RunResult,
    /// Leave: mean queueing delay of the control over the window after the competitor left, ms.
    post_qdelay_ms: f64,
    /// Leave: how long after the competitor left a 1 s window first had a mean queueing delay
    /// under [`QUEUE_OK_MS`] (from the window's start), s.
    recovery_s: Option<f64>,
    /// Staggered: Jain's index of the flows' goodput over the time all three run.
    jain_overlap: f64,
}

/// The base RTT of the path for a packet sent at `t_us`: propagation on every hop of the
/// data route, then of the ACK route, as the simulator counts it.
pub struct BaseRtt {
    data: Vec<LinkModel>,
    ack: Vec<LinkModel>,
}

impl BaseRtt {
    /// The routes of `trace` with data in `dir` (the terrestrial segment when it has one).
    pub fn new(trace: &Trace, dir: Dir, terrestrial: bool) -> BaseRtt {
        let up = trace.link(Dir::Up);
        let down = trace.link(Dir::Down);
        let terr: Vec<LinkModel> = if terrestrial {
            trace.terrestrial().into_iter().collect()
        } else {
            Vec::new()
        };
        let (data, ack) = match dir {
            Dir::Down => (
                terr.iter().cloned().chain([down]).collect(),
                std::iter::once(up).chain(terr).collect(),
            ),
            Dir::Up => (
                std::iter::once(up).chain(terr.iter().cloned()).collect(),
                terr.into_iter().chain([down]).collect(),
            ),
        };
        BaseRtt { data, ack }
    }

    /// The base RTT for a packet sent at `t_us`, µs.
    pub fn at(&self, t_us: u64) -> u64 {
        let mut at = t_us;
        for l in self.data.iter().chain(&self.ack) {
            at += l.delay_us(at);
        }
        at - t_us
    }

    /// Queueing delay of one time-series row, ms: its mean RTT less the mean base RTT of the
    /// packets its samples were sent at (the 100 ms before the row's end, less the RTT), at
    /// least 0; `None` when the row has no RTT sample.
    pub fn row_qdelay_ms(&self, row: &TsRow) -> Option<f64> {
        if row.rtt_ms <= 0.0 {
            return None;
        }
        let end = row.t_s * 1e6 - row.rtt_ms * 1000.0;
        let points = 11;
        let base: f64 = (0..points)
            .map(|k| {
                let t = end
                    - leocc_sim::sim::SAMPLE_INTERVAL_US as f64 * k as f64 / (points - 1) as f64;
                self.at(t.max(0.0) as u64) as f64
            })
            .sum::<f64>()
            / points as f64;
        Some((row.rtt_ms - base / 1000.0).max(0.0))
    }
}

/// Mean queueing delay of `flow` over rows ending in (from_s, to_s], and the first window start
/// (from `from_s` on, every 100 ms, whole windows inside the run) whose
/// [`QUEUE_WINDOW_S`] has a mean under [`QUEUE_OK_MS`], as seconds after `from_s`.
fn after_leave(
    ts: &[TsRow],
    base: &BaseRtt,
    flow: usize,
    from_s: f64,
    post_s: f64,
    end_s: f64,
) -> (f64, Option<f64>) {
    const EPS: f64 = 1e-6;
    let rows: Vec<(f64, f64)> = ts
        .iter()
        .filter(|r| r.flow == flow && r.t_s > from_s + EPS)
        .filter_map(|r| base.row_qdelay_ms(r).map(|q| (r.t_s, q)))
        .collect();
    let mean_in = |a: f64, b: f64| {
        let v: Vec<f64> = rows
            .iter()
            .filter(|(t, _)| *t > a + EPS && *t <= b + EPS)
            .map(|(_, q)| *q)
            .collect();
        metrics::mean(&v).unwrap_or(f64::NAN)
    };
    let post = mean_in(from_s, from_s + post_s);
    let step = leocc_sim::sim::SAMPLE_INTERVAL_US as f64 / 1e6;
    let mut k = 0u32;
    let recovery = loop {
        let start = from_s + k as f64 * step;
        if start + QUEUE_WINDOW_S > end_s + EPS {
            break None;
        }
        if mean_in(start, start + QUEUE_WINDOW_S) < QUEUE_OK_MS {
            // k steps of 100 ms, to the ms (no float residue in the files).
            break Some((k as f64 * step * 1e3).round() / 1e3);
        }
        k += 1;
    };
    (post, recovery)
}

/// Jain's index of the flows' summed per-row goodput over rows ending after `from_s`.
fn jain_after(ts: &[TsRow], flows: usize, from_s: f64) -> f64 {
    let mut sums = vec![0.0; flows];
    for r in ts
        .iter()
        .filter(|r| r.t_s > from_s + 1e-6 && r.flow < flows)
    {
        sums[r.flow] += r.throughput_mbps;
    }
    metrics::jain(&sums)
}

fn run_one(
    plan: &Plan,
    path: &DrawnPath,
    qdisc: Qdisc,
    setting: Setting,
    replicate: u64,
) -> Result<RunOut, String> {
    let sc = scenario(plan, path, qdisc, setting, replicate)?;
    let mut result = leocc_sim::run(&sc).map_err(|e| {
        format!("seed {} (simulator seed {}) {qdisc} {}: {e}", path.draw.seed, sc.seed, setting.name())
    })?;
    let ts = std::mem::take(&mut result.timeseries);
    let (mut post_qdelay_ms, mut recovery_s, mut jain_overlap) = (f64::NAN, None, f64::NAN);
    match setting {
        Setting::Leave => {
            let base = BaseRtt::new(&path.trace, sc.data_dir, sc.terrestrial);
            let end = sc.duration_us as f64 / 1e6;
            (post_qdelay_ms, recovery_s) =
                after_leave(&ts, &base, 0, plan.leave_at_s(), plan.post_leave_s(), end);
        }
        Setting::Staggered => jain_overlap = jain_after(&ts, 3, 2.0 * plan.stagger_s()),
        _ => {}
    }
    Ok(RunOut {
        result,
        post_qdelay_ms,
        recovery_s,
        jain_overlap,
    })
}

/// One drawn path: what was drawn, and every metric of the control on it.
#[derive(Clone, Debug, Serialize)]
pub struct PathRow {
    /// Draw seed (also the simulator's seed of the path's first replicate).
    pub seed: u64,
    /// The simulator's seed of this row's runs ([`sim_seed`]).
    pub sim_seed: u64,
    /// Queue discipline of the bottleneck.
    pub qdisc: Qdisc,
    /// `up` or `down`: the data direction.
    pub direction: String,
    /// Drawn capacity level, Mbit/s.
    pub capacity_mbps: f64,
    /// Mean capacity of the trace in the data direction, Mbit/s.
    pub mean_capacity_mbps: f64,
    /// Drawn base RTT, ms.
    pub base_rtt_ms: f64,
    /// Buffer, BDPs.
    pub buffer_bdp: f64,
    /// The buffer as given to the simulator (`--queue`).
    pub queue: String,
    /// The path's random loss (the added `--loss` not included).
    pub path_loss: f64,
    /// Ground-truth reconfigurations in the trace.
    pub reconfigurations: usize,
    /// The drawn parameters in one line.
    pub path: String,
    /// The control's throughput alone, Mbit/s.
    pub thr_alone_mbps: f64,
    /// The control's utilisation alone.
    pub util_alone: f64,
    /// The control's p95 RTT alone, ms.
    pub rtt_p95_ms: f64,
    /// BBRv1's p95 RTT alone, ms.
    pub bbr_rtt_p95_ms: f64,
    /// The control's p95 RTT over BBRv1's, both alone.
    pub p95_rtt_vs_bbr: f64,
    /// BBRv1's throughput alone, Mbit/s.
    pub bbr_alone_mbps: f64,
    /// Cubic's throughput alone, Mbit/s.
    pub cubic_alone_mbps: f64,
    /// The control's throughput over half the pair's, against Cubic.
    pub share_vs_cubic: f64,
    /// The control's throughput over half the pair's, against BBRv1.
    pub share_vs_bbr: f64,
    /// Cubic's throughput next to the control over min(half the mean capacity, Cubic alone).
    pub harm_cubic: f64,
    /// BBRv1's throughput next to the control over min(half the mean capacity, BBRv1 alone).
    pub harm_bbr: f64,
    /// Mean queueing delay of the control in the window after the competitor left, ms (NaN:
    /// no RTT sample in it, the control was stalled).
    pub leave_qdelay_ms: f64,
    /// Seconds after the competitor left until a 1 s window's mean queueing delay was under
    /// 10 ms (None: not before the end).
    pub leave_recovery_s: Option<f64>,
    /// Jain's index of the three staggered flows over the time all three run.
    pub jain3: f64,
    /// The three staggered flows' p95 RTT over the control's p95 RTT alone: what several
    /// flows of the control queue together (Jain's index alone would not show a change that
    /// keeps them fair at a longer queue).
    pub stagger_p95_vs_alone: f64,
    /// The control's p95 queueing delay alone, ms.
    pub qdelay_p95_ms: f64,
    /// The same with false events, ms.
    pub fe_qdelay_p95_ms: f64,
    /// Utilisation with false events over without.
    pub fe_util_ratio: f64,
    /// p95 queueing delay with false events over without.
    pub fe_qdelay_p95_ratio: f64,
    /// p95 queueing delay with false events minus without, ms.
    pub fe_qdelay_p95_diff_ms: f64,
    /// p95 queueing delay with false events above max(1.5 x, +10 ms) of without, ms (<= 0: within).
    pub fe_qdelay_p95_excess_ms: f64,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else if a == 0.0 {
        1.0
    } else {
        f64::INFINITY
    }
}

fn path_row(
    plan: &Plan,
    path: &DrawnPath,
    qdisc: Qdisc,
    replicate: u64,
    runs: &BTreeMap<Setting, RunOut>,
) -> PathRow {
    let r = |s: Setting| &runs[&s].result;
    let (alone, bbr, cubic, fe) = (
        r(Setting::Alone),
        r(Setting::BbrAlone),
        r(Setting::CubicAlone),
        r(Setting::FalseEvents),
    );
    let dir = path.draw.data_dir();
    let dur_us = plan.duration_ms() * 1000;
    let mean_cap = path.trace.link(dir).mean_capacity_bps(0, dur_us) / 1e6;
    let pair = |s: Setting| {
        let f = &r(s).flows;
        (f[0].throughput_mbps, f[1].throughput_mbps)
    };
    let (c_cub, o_cub) = pair(Setting::VsCubic);
    let (c_bbr, o_bbr) = pair(Setting::VsBbr);
    let share = |c: f64, o: f64| ratio(c, 0.5 * (c + o));
    let harm = |o: f64, alone: f64| ratio(o, (0.5 * mean_cap).min(alone));
    let leave = &runs[&Setting::Leave];
    let (q, qf) = (alone.qdelay_p95_ms, fe.qdelay_p95_ms);
    PathRow {
        seed: path.draw.seed,
        sim_seed: sim_seed(path.draw.seed, replicate),
        qdisc,
        direction: dir.as_str().to_string(),
        capacity_mbps: path.draw.capacity_mbps,
        mean_capacity_mbps: mean_cap,
        base_rtt_ms: path.draw.base_rtt_ms,
        buffer_bdp: path.draw.buffer_bdp,
        queue: queue_of(&path.draw).to_string(),
        path_loss: path.draw.loss,
        reconfigurations: path.trace.reconfigurations.len(),
        path: path.draw.summary(),
        thr_alone_mbps: alone.throughput_mbps,
        util_alone: alone.utilization,
        rtt_p95_ms: alone.rtt_p95_ms,
        bbr_rtt_p95_ms: bbr.rtt_p95_ms,
        p95_rtt_vs_bbr: ratio(alone.rtt_p95_ms, bbr.rtt_p95_ms),
        bbr_alone_mbps: bbr.throughput_mbps,
        cubic_alone_mbps: cubic.throughput_mbps,
        share_vs_cubic: share(c_cub, o_cub),
        share_vs_bbr: share(c_bbr, o_bbr),
        harm_cubic: harm(o_cub, cubic.throughput_mbps),
        harm_bbr: harm(o_bbr, bbr.throughput_mbps),
        leave_qdelay_ms: leave.post_qdelay_ms,
        leave_recovery_s: leave.recovery_s,
        jain3: runs[&Setting::Staggered].jain_overlap,
        stagger_p95_vs_alone: ratio(r(Setting::Staggered).rtt_p95_ms, alone.rtt_p95_ms),
        qdelay_p95_ms: q,
        fe_qdelay_p95_ms: qf,
        fe_util_ratio: ratio(fe.utilization, alone.utilization),
        fe_qdelay_p95_ratio: ratio(qf, q),
        fe_qdelay_p95_diff_ms: qf - q,
        fe_qdelay_p95_excess_ms: qf - (1.5 * q).max(q + 10.0),
    }
}

/// Where a run of [`run`] stands, for progress lines.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Runs finished so far.
    pub done: usize,
    /// Runs in all.
    pub total: usize,
    /// The path of the run that just finished.
    pub seed: u64,
    /// Its queue discipline.
    pub qdisc: Qdisc,
    /// Its setting.
    pub setting: Setting,
}

/// Draws the paths and runs every setting on each under every queue discipline, on
/// `plan.jobs` threads; `progress` after each run. Returns one row per path, discipline and
/// simulator seed, in seed order, the disciplines of a path in the plan's order and the
/// simulator seeds of a discipline in order. The first failing run stops the bench with its
/// error.
pub fn run(plan: &Plan, progress: &(dyn Fn(Progress) + Sync)) -> Result<Vec<PathRow>, String> {
    plan.validate()?;
    let seeds = plan.seeds();
    let (nq, reps) = (plan.qdiscs.len(), plan.sim_seeds as usize);
    let per_path = nq * reps * Setting::ALL.len();
    // Jobs in path, discipline, replicate, setting order; a row's cell is (path, discipline,
    // replicate).
    let jobs: Vec<(usize, usize, usize, Setting)> = (0..seeds.len())
        .flat_map(|p| {
            (0..nq).flat_map(move |q| (0..reps).flat_map(move |k| Setting::ALL.map(|s| (p, q, k, s))))
        })
        .collect();
    // A path's trace is drawn by the first run that needs it and dropped after its last.
    let traces: Vec<Mutex<Option<DrawnPath>>> = seeds.iter().map(|_| Mutex::new(None)).collect();
    let left: Vec<AtomicUsize> = seeds.iter().map(|_| AtomicUsize::new(per_path)).collect();
    let outs: Mutex<Vec<BTreeMap<Setting, RunOut>>> =
        Mutex::new(vec![BTreeMap::new(); seeds.len() * nq * reps]);
    let rows: Mutex<Vec<Option<PathRow>>> = Mutex::new(vec![None; seeds.len() * nq * reps]);
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let error: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..plan.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() || error.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
                    return;
                }
                let (p, q, k, setting) = jobs[i];
                let qdisc = plan.qdiscs[q];
                let path = {
                    let mut t = traces[p].lock().unwrap_or_else(|e| e.into_inner());
                    if t.is_none() {
                        match draw_path(plan, seeds[p]) {
                            Ok(d) => *t = Some(d),
                            Err(e) => {
                                *error.lock().unwrap_or_else(|e| e.into_inner()) =
                                    Some(format!("seed {}: {e}", seeds[p]));
                                return;
                            }
                        }
                    }
                    t.clone().expect("drawn above")
                };
                match run_one(plan, &path, qdisc, setting, k as u64) {
                    Ok(o) => {
                        let cell = (p * nq + q) * reps + k;
                        let finished = {
                            let mut all = outs.lock().unwrap_or_else(|e| e.into_inner());
                            all[cell].insert(setting, o);
                            (all[cell].len() == Setting::ALL.len())
                                .then(|| std::mem::take(&mut all[cell]))
                        };
                        if left[p].fetch_sub(1, Ordering::AcqRel) == 1 {
                            *traces[p].lock().unwrap_or_else(|e| e.into_inner()) = None;
                        }
                        if let Some(runs) = finished {
                            let row = path_row(plan, &path, qdisc, k as u64, &runs);
                            rows.lock().unwrap_or_else(|e| e.into_inner())[cell] = Some(row);
                        }
                        let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                        progress(Progress {
                            done: d,
                            total: jobs.len(),
                            seed: seeds[p],
                            qdisc,
                            setting,
                        });
                    }
                    Err(e) => *error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e),
                }
            });
        }
    });
    if let Some(e) = error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    Ok(rows
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every path ran all its settings"))
        .collect())
}

/// Which way a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Larger values are better: the worst is the smallest.
    Higher,
    /// Smaller values are better: the worst is the largest.
    Lower,
}

/// A target from the issue: met when the value is at least (`Higher`) or at most (`Lower`)
/// `threshold`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Target {
    /// The threshold.
    pub threshold: f64,
    /// As printed, e.g. `>= 0.8`.
    pub text: &'static str,
}

/// A metric of [`PathRow`] that the table summarises.
#[derive(Clone, Copy)]
pub struct Metric {
    /// Key (the column in the per-path files).
    pub key: &'static str,
    /// Label in the table.
    pub label: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Unit, for formatting: `""` (ratio), `"ms"` or `"s"`.
    pub unit: &'static str,
    /// The target, if the issue sets one.
    pub target: Option<Target>,
    /// The value of a path (never-recovered is +inf).
    pub get: fn(&PathRow) -> f64,
}

impl Metric {
    /// Whether `v` meets the target (`None` without one). NaN never does.
    pub fn meets(&self, v: f64) -> Option<bool> {
        self.target.map(|t| match self.better {
            Better::Higher => v >= t.threshold,
            Better::Lower => v <= t.threshold,
        })
    }
}

/// The metrics, in table order.
pub const METRICS: &[Metric] = &[
    Metric {
        key: "util_alone",
        label: "utilisation alone",
        better: Better::Higher,
        unit: "",
        target: Some(Target {
            threshold: 0.93,
            text: ">= 0.93",
        }),
        get: |r| r.util_alone,
    },
    Metric {
        key: "p95_rtt_vs_bbr",
        label: "p95 RTT / BBRv1's",
        better: Better::Lower,
        unit: "",
        target: Some(Target {
            threshold: 0.56,
            text: "<= 0.56",
        }),
        get: |r| r.p95_rtt_vs_bbr,
    },
    Metric {
        key: "share_vs_cubic",
        label: "share vs Cubic",
        better: Better::Higher,
        unit: "",
        target: Some(Target {
            threshold: 0.8,
            text: ">= 0.8",
        }),
        get: |r| r.share_vs_cubic,
    },
    Metric {
        key: "share_vs_bbr",
        label: "share vs BBRv1",
        better: Better::Higher,
        unit: "",
        target: Some(Target {
            threshold: 0.8,
            text: ">= 0.8",
        }),
        get: |r| r.share_vs_bbr,
    },
    Metric {
        key: "harm_cubic",
        label: "harm: Cubic keeps",
        better: Better::Higher,
        unit: "",
        target: Some(Target {
            threshold: 0.8,
            text: ">= 0.8",
        }),
        get: |r| r.harm_cubic,
    },
    Metric {
        key: "harm_bbr",
        label: "harm: BBRv1 keeps",
        better: Better::Higher,
        unit: "",
        target: Some(Target {
            threshold: 0.8,
            text: ">= 0.8",
        }),
        get: |r| r.harm_bbr,
    },
    Metric {
        key: "leave_qdelay_ms",
        label: "queue after Cubic left",
        better: Better::Lower,
        unit: "ms",
        target: None,
        get: |r| r.leave_qdelay_ms,
    },
    Metric {
        key: "leave_recovery_s",
        label: "queue < 10 ms after",
        better: Better::Lower,
        unit: "s",
        target: Some(Target {
            threshold: POST_LEAVE_S,
            text: "<= 5 s",
        }),
        get: |r| r.leave_recovery_s.unwrap_or(f64::INFINITY),
    },
    Metric {
        key: "jain3",
        label: "Jain, 3 staggered",
        better: Better::Higher,
        unit: "",
        target: Some(Target {
            threshold: 0.98,
            text: ">= 0.98",
        }),
        get: |r| r.jain3,
    },
    Metric {
        key: "stagger_p95_vs_alone",
        label: "3 staggered: p95 RTT x alone",
        better: Better::Lower,
        unit: "",
        target: None,
        get: |r| r.stagger_p95_vs_alone,
    },
    Metric {
        key: "fe_util_ratio",
        label: "false events: util x",
        better: Better::Higher,
        unit: "",
        target: Some(Target {
            threshold: 0.9,
            text: ">= 0.9",
        }),
        get: |r| r.fe_util_ratio,
    },
    Metric {
        key: "fe_qdelay_p95_ratio",
        label: "false events: p95 q x",
        better: Better::Lower,
        unit: "",
        target: None,
        get: |r| r.fe_qdelay_p95_ratio,
    },
    Metric {
        key: "fe_qdelay_p95_diff_ms",
        label: "false events: p95 q +",
        better: Better::Lower,
        unit: "ms",
        target: None,
        get: |r| r.fe_qdelay_p95_diff_ms,
    },
    Metric {
        key: "fe_qdelay_p95_excess_ms",
        label: "false ev.: p95 q over max(1.5x,+10ms)",
        better: Better::Lower,
        unit: "ms",
        target: Some(Target {
            threshold: 0.0,
            text: "<= 0 ms",
        }),
        get: |r| r.fe_qdelay_p95_excess_ms,
    },
];

/// `values` (value, seed) ordered worst first: NaN first (a broken measurement is the worst
/// case), then the smallest (`Higher`) or largest (`Lower`); ties keep their order.
pub fn worst_first(values: &[(f64, u64)], better: Better) -> Vec<(f64, u64)> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| match (a.0.is_nan(), b.0.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => match better {
            Better::Higher => a.0.total_cmp(&b.0),
            Better::Lower => b.0.total_cmp(&a.0),
        },
    });
    v
}

/// The value at the worst `q` share of `sorted` (worst first), nearest rank: the
/// ceil(q·n)-th worst, at least the first. `q` = 0.1 is the worst 10 %'s best value (the
/// 10th percentile of a higher-is-better metric, the 90th of a lower-is-better one); 0.5 the
/// median. NaN for an empty list.
pub fn worst_share(sorted: &[(f64, u64)], q: f64) -> f64 {
    metrics::quantile_nearest_rank(sorted, q).map_or(f64::NAN, |x| x.0)
}

/// One metric over all paths under one queue discipline.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Queue discipline.
    pub qdisc: Qdisc,
    /// Metric key.
    pub key: &'static str,
    /// Label.
    pub label: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Worst value.
    pub worst: f64,
    /// Draw seed of the worst path (the first in seed order on a tie).
    pub worst_seed: u64,
    /// The worst 10 %'s best value ([`worst_share`] at 0.1).
    pub p10: f64,
    /// Median ([`worst_share`] at 0.5).
    pub median: f64,
    /// The target, if any.
    pub target: Option<Target>,
    /// Whether the worst 10 % value meets the target.
    pub p10_met: Option<bool>,
    /// Paths that meet the target.
    pub paths_met: Option<usize>,
    /// Paths.
    pub paths: usize,
    /// Median over the paths of the range (largest minus smallest) of the metric across a
    /// path's simulator seeds: how far one seed alone moves a path's value. NaN with one seed.
    pub seed_range: f64,
}

/// Summarises every metric of [`METRICS`] over the rows of `qdisc`: a path's value is its
/// mean over its simulator seeds (NaN if any of them is NaN, never-drained if any never did).
pub fn summarise(rows: &[PathRow], qdisc: Qdisc) -> Vec<Summary> {
    let mut paths: BTreeMap<u64, Vec<&PathRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.qdisc == qdisc) {
        paths.entry(r.seed).or_default().push(r);
    }
    METRICS
        .iter()
        .map(|m| {
            let mut vals: Vec<(f64, u64)> = Vec::with_capacity(paths.len());
            let mut ranges: Vec<f64> = Vec::new();
            for (&seed, rs) in &paths {
                let v: Vec<f64> = rs.iter().map(|r| (m.get)(r)).collect();
                vals.push((metrics::mean(&v).unwrap_or(f64::NAN), seed));
                if v.len() > 1 {
                    let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                    ranges.push(hi - lo);
                }
            }
            ranges.sort_by(|a, b| a.total_cmp(b));
            let seed_range = if ranges.is_empty() { f64::NAN } else { ranges[(ranges.len() - 1) / 2] };
            let sorted = worst_first(&vals, m.better);
            let p10 = worst_share(&sorted, 0.1);
            Summary {
                qdisc,
                key: m.key,
                label: m.label,
                better: m.better,
                worst: sorted.first().map_or(f64::NAN, |w| w.0),
                worst_seed: sorted.first().map_or(0, |w| w.1),
                p10,
                median: worst_share(&sorted, 0.5),
                target: m.target,
                p10_met: m.meets(p10),
                paths_met: m.target.map(|_| {
                    vals.iter()
                        .filter(|(v, _)| m.meets(*v) == Some(true))
                        .count()
                }),
                paths: paths.len(),
                seed_range,
            }
        })
        .collect()
}

fn fmt_value(v: f64, unit: &str) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if unit == "s" {
            "never".into()
        } else {
            "inf".into()
        };
    }
    match unit {
        "ms" => format!("{v:.1} ms"),
        "s" => format!("{v:.1} s"),
        _ => format!("{v:.3}"),
    }
}

/// The table `leocc bench robust` prints: per metric the worst value, the worst 10 %, the
/// median, the worst path's seed, the target and whether the worst 10 % meets it, how many
/// paths do, and with several simulator seeds per path the median range across them.
pub fn table(summaries: &[Summary]) -> String {
    let unit = |key: &str| METRICS.iter().find(|m| m.key == key).map_or("", |m| m.unit);
    let seeds = summaries.iter().any(|s| !s.seed_range.is_nan());
    let mut head = vec![
        "metric",
        "worst",
        "worst 10 %",
        "median",
        "worst seed",
        "target",
        "at worst 10 %",
        "paths met",
    ];
    if seeds {
        head.push("seed range");
    }
    let mut rows: Vec<Vec<String>> = vec![head.into_iter().map(String::from).collect()];
    for s in summaries {
        let u = unit(s.key);
        let mut row = vec![
            s.label.to_string(),
            fmt_value(s.worst, u),
            fmt_value(s.p10, u),
            fmt_value(s.median, u),
            s.worst_seed.to_string(),
            s.target.map_or("-".into(), |t| t.text.to_string()),
            s.p10_met.map_or(
                "-".into(),
                |m| if m { "met".into() } else { "missed".into() },
            ),
            s.paths_met
                .map_or("-".into(), |n| format!("{n}/{}", s.paths)),
        ];
        if seeds {
            row.push(fmt_value(s.seed_range, u));
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, x)| {
                if c == 0 || c == 5 {
                    format!("{x:<w$}", w = widths[c])
                } else {
                    format!("{x:>w$}", w = widths[c])
                }
            })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
        if i == 0 {
            out += &widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("  ");
            out.push('\n');
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns of `paths.csv`, in [`PathRow`]'s field order (the JSON object's keys).
pub const CSV_COLUMNS: &[&str] = &[
    "seed",
    "sim_seed",
    "qdisc",
    "direction",
    "capacity_mbps",
    "mean_capacity_mbps",
    "base_rtt_ms",
    "buffer_bdp",
    "queue",
    "path_loss",
    "reconfigurations",
    "thr_alone_mbps",
    "util_alone",
    "rtt_p95_ms",
    "bbr_rtt_p95_ms",
    "p95_rtt_vs_bbr",
    "bbr_alone_mbps",
    "cubic_alone_mbps",
    "share_vs_cubic",
    "share_vs_bbr",
    "harm_cubic",
    "harm_bbr",
    "leave_qdelay_ms",
    "leave_recovery_s",
    "jain3",
    "stagger_p95_vs_alone",
    "qdelay_p95_ms",
    "fe_qdelay_p95_ms",
    "fe_util_ratio",
    "fe_qdelay_p95_ratio",
    "fe_qdelay_p95_diff_ms",
    "fe_qdelay_p95_excess_ms",
    "path",
];

/// The rows as CSV: a header of [`CSV_COLUMNS`], one line per path and simulator seed (an empty cell for a
/// queue that never drained and for a non-finite number).
pub fn csv(rows: &[PathRow]) -> Result<String, String> {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        let v = serde_json::to_value(r).map_err(|e| e.to_string())?;
        let line: Vec<String> = CSV_COLUMNS
            .iter()
            .map(|k| match v.get(*k) {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(s)) => csv_field(s),
                Some(x) => x.to_string(),
            })
            .collect();
        out += &line.join(",");
        out.push('\n');
    }
    Ok(out)
}

/// Writes `DIR/paths.csv`, `DIR/paths.jsonl` (one object per path, discipline and simulator seed; non-finite
/// numbers as null) and `DIR/summary.json` (the plan and the summaries of every discipline),
/// each atomically; creates DIR.
pub fn write_out(
    dir: &Path,
    plan: &Plan,
    rows: &[PathRow],
    summaries: &[Summary],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, data: &[u8]| {
        leocc_base::write_atomic(&dir.join(name), data).map_err(|e| e.to_string())
    };
    write("paths.csv", csv(rows)?.as_bytes())?;
    let mut jsonl = String::new();
    for r in rows {
        jsonl += &serde_json::to_string(r).map_err(|e| e.to_string())?;
        jsonl.push('\n');
    }
    write("paths.jsonl", jsonl.as_bytes())?;
    let summary = serde_json::json!({
        "cc": plan.cc,
        "paths": plan.paths,
        "base_seed": plan.base_seed,
        "duration_s": plan.duration_s,
        "loss": plan.loss,
        "sndbuf_bytes": plan.sndbuf_bytes,
        "sim_seeds": plan.sim_seeds,
        "probe_noise": plan.probe_noise.name(),
        "cc_params": plan.cc_params.iter().map(|(c, p)| format!("{c}.{p}")).collect::<Vec<_>>(),
        "qdiscs": plan.qdiscs,
        "metrics": summaries,
    });
    write(
        "summary.json",
        serde_json::to_string_pretty(&summary)
            .map_err(|e| e.to_string())?
            .as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_first_and_shares() {
        let v: Vec<(f64, u64)> = (1..=20).map(|i| (i as f64, 100 + i)).collect();
        let hi = worst_first(&v, Better::Higher);
        assert_eq!(hi[0], (1.0, 101));
        // 20 paths: the worst 10 % are the two worst, the 2nd worst is their best; median the 10th.
        assert_eq!(worst_share(&hi, 0.1), 2.0);
        assert_eq!(worst_share(&hi, 0.5), 10.0);
        let lo = worst_first(&v, Better::Lower);
        assert_eq!(lo[0], (20.0, 120));
        assert_eq!(worst_share(&lo, 0.1), 19.0);
        assert_eq!(worst_share(&lo, 0.5), 11.0);
        // Small lists: the worst 10 % of 2 or 5 paths is the worst one.
        assert_eq!(worst_share(&hi[..2], 0.1), 1.0);
        assert_eq!(worst_share(&worst_first(&v[..5], Better::Higher), 0.1), 1.0);
        assert_eq!(
            worst_share(&worst_first(&v[..11], Better::Higher), 0.1),
            2.0
        );
        assert!(worst_share(&[], 0.1).is_nan());
        // NaN is the worst either way; +inf is the worst of a lower-is-better metric.
        let odd = [(0.5, 1), (f64::NAN, 2), (f64::INFINITY, 3)];
        assert_eq!(worst_first(&odd, Better::Lower)[0].1, 2);
        assert_eq!(worst_first(&odd, Better::Lower)[1].1, 3);
        assert_eq!(worst_first(&odd, Better::Higher)[1].1, 1);
        // Ties keep seed order.
        assert_eq!(worst_first(&[(1.0, 7), (1.0, 3)], Better::Higher)[0].1, 7);
    }

    #[test]
    fn targets() {
        let m = |k: &str| METRICS.iter().find(|m| m.key == k).unwrap();
        assert_eq!(m("share_vs_cubic").meets(0.8), Some(true));
        assert_eq!(m("share_vs_cubic").meets(0.79), Some(false));
        assert_eq!(m("p95_rtt_vs_bbr").meets(0.56), Some(true));
        assert_eq!(m("p95_rtt_vs_bbr").meets(f64::NAN), Some(false));
        assert_eq!(m("leave_recovery_s").meets(f64::INFINITY), Some(false));
        assert_eq!(m("fe_qdelay_p95_ratio").meets(9.0), None);
        // 30 ms alone: false events may reach 45 ms; 4 ms alone: 14 ms.
        let excess = |q: f64, qf: f64| qf - (1.5 * q).max(q + 10.0);
        assert!(excess(30.0, 45.0) <= 0.0 && excess(30.0, 45.1) > 0.0);
        assert!(excess(4.0, 14.0) <= 0.0 && excess(4.0, 14.1) > 0.0);
    }

    #[test]
    fn settings_scale_with_short_runs() {
        let mut p = Plan::new("leocc");
        assert_eq!(p.leave_at_s(), 30.0);
        assert_eq!(p.post_leave_s(), 5.0);
        assert_eq!(
            Setting::Staggered.flows(&p),
            "leocc@0-45,leocc@5-45,leocc@10-45"
        );
        assert_eq!(Setting::Leave.flows(&p), "leocc@0-45,cubic@0-30");
        p.duration_s = 6.0;
        assert_eq!(p.leave_at_s(), 4.0);
        assert_eq!(
            Setting::Staggered.flows(&p),
            "leocc@0-6,leocc@0.667-6,leocc@1.333-6"
        );
        for s in Setting::ALL {
            parse_flows(&s.flows(&p), "", 6_000_000).unwrap();
        }
        p.cc = "nope".into();
        assert!(p
            .validate()
            .unwrap_err()
            .contains("unknown congestion control"));
        p.cc = "leocc".into();
        p.cc_params = vec![("leocc".into(), "no_such_param=1".into())];
        assert!(p.validate().is_err());
        p.cc_params.clear();
        p.duration_s = 1.0;
        assert!(p.validate().is_err());
    }

    #[test]
    fn the_queue_drains_after_the_competitor_leaves() {
        // A constant path with 20 ms one way each way: 40 ms base RTT.
        let t = leocc_sim::constant_trace(20.0, 20_000, 30_000_000, &[]);
        let base = BaseRtt::new(&t, Dir::Down, true);
        assert_eq!(base.at(123_456), 40_000);
        let row = |t_s: f64, rtt_ms: f64| TsRow {
            t_s,
            flow: 0,
            throughput_mbps: 1.0,
            rtt_ms,
            cwnd: 10,
            pacing_mbps: 0.0,
            inflight: 1,
            state: vec![],
        };
        // 60 ms of queue until 12.0 s, then 5 ms; the competitor left at 10 s.
        let ts: Vec<TsRow> = (1..=300)
            .map(|k| row(k as f64 / 10.0, if k <= 120 { 100.0 } else { 45.0 }))
            .collect();
        assert!((base.row_qdelay_ms(&ts[50]).unwrap() - 60.0).abs() < 1e-9);
        assert_eq!(base.row_qdelay_ms(&row(1.0, 0.0)), None);
        let (post, rec) = after_leave(&ts, &base, 0, 10.0, 5.0, 30.0);
        // 20 rows at 60 ms and 30 at 5 ms in (10, 15].
        assert!(
            (post - (20.0 * 60.0 + 30.0 * 5.0) / 50.0).abs() < 1e-9,
            "{post}"
        );
        // The window (11.9, 12.9] holds one row at 60 and nine at 5: 10.5; (12.0, 13.0] is all 5.
        assert_eq!(rec, Some(2.0));
        // Never under 10 ms: no recovery.
        let high: Vec<TsRow> = (1..=300).map(|k| row(k as f64 / 10.0, 100.0)).collect();
        assert_eq!(after_leave(&high, &base, 0, 10.0, 5.0, 30.0).1, None);
        // Jain over the rows after 2 s: flows 0 and 1 equal, flow 2 half.
        let mut three = Vec::new();
        for k in 1..=40 {
            for (f, thr) in [(0, 10.0), (1, 10.0), (2, 5.0)] {
                three.push(TsRow {
                    flow: f,
                    throughput_mbps: if k <= 20 && f == 2 { 0.0 } else { thr },
                    ..row(k as f64 / 10.0, 50.0)
                });
            }
        }
        let want = metrics::jain(&[200.0, 200.0, 100.0]);
        assert!((jain_after(&three, 3, 2.0) - want).abs() < 1e-12);
    }

    #[test]
    fn the_probe_noise_reaches_every_run_and_the_rerun_command() {
        let plan = Plan { probe_noise: ProbeNoiseModel::None, ..Plan::new("leocc") };
        let cmd = sim_command(&plan, 3, Qdisc::DropTail).unwrap();
        assert!(cmd.contains(" --probe-noise none"), "{cmd}");
        let default = sim_command(&Plan::new("leocc"), 3, Qdisc::DropTail).unwrap();
        assert!(!default.contains("--probe-noise"), "{default}");
        let path = draw_path(&plan, 3).unwrap();
        for setting in Setting::ALL {
            let sc = scenario(&plan, &path, Qdisc::DropTail, setting, 0).unwrap();
            assert_eq!(sc.probe_noise, ProbeNoiseModel::None, "{}", setting.name());
        }
    }

    #[test]
    fn every_setting_runs_under_every_queue_discipline() {
        let plan = Plan {
            paths: 1,
            base_seed: 2,
            duration_s: 3.0,
            qdiscs: vec![Qdisc::DropTail, Qdisc::CoDel],
            ..Plan::new("reno")
        };
        let n = std::sync::atomic::AtomicUsize::new(0);
        let rows = run(&plan, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(n.into_inner(), 16);
        assert_eq!(
            rows.iter().map(|r| r.qdisc).collect::<Vec<_>>(),
            vec![Qdisc::DropTail, Qdisc::CoDel]
        );
        // The same path: CoDel keeps reno's standing queue far below drop-tail's.
        assert_eq!(rows[0].queue, rows[1].queue);
        assert!(rows[1].qdelay_p95_ms < rows[0].qdelay_p95_ms, "{rows:?}");
        assert_eq!(summarise(&rows, Qdisc::CoDel)[0].paths, 1);
        let mut twice = plan.clone();
        twice.qdiscs = vec![Qdisc::CoDel, Qdisc::CoDel];
        assert!(twice.validate().is_err());
    }

    #[test]
    fn several_simulator_seeds_average_a_path_and_report_their_range() {
        let plan = Plan { paths: 1, base_seed: 5, duration_s: 4.0, sim_seeds: 2, ..Plan::new("reno") };
        let rows = run(&plan, &|_| {}).unwrap();
        assert_eq!(rows.iter().map(|r| (r.seed, r.sim_seed)).collect::<Vec<_>>(), vec![(5, 5), (5, 5 + SIM_SEED_STRIDE)]);
        // The first replicate is the single-seed bench's run, bit for bit.
        let single = run(&Plan { sim_seeds: 1, ..plan.clone() }, &|_| {}).unwrap();
        assert_eq!(single[0].util_alone.to_bits(), rows[0].util_alone.to_bits());
        let sums = summarise(&rows, Qdisc::DropTail);
        let util = sums.iter().find(|s| s.key == "util_alone").unwrap();
        let (a, b) = (rows[0].util_alone, rows[1].util_alone);
        assert_eq!(util.paths, 1);
        assert!((util.worst - (a + b) / 2.0).abs() < 1e-12, "{} vs {a} and {b}", util.worst);
        assert!((util.seed_range - (a - b).abs()).abs() < 1e-12);
        assert!(table(&sums).contains("seed range"));
        assert!(!table(&summarise(&single, Qdisc::DropTail)).contains("seed range"));
        assert!(Plan { sim_seeds: 0, ..plan.clone() }.validate().is_err());
        assert!(Plan { sim_seeds: MAX_SIM_SEEDS + 1, ..plan }.validate().is_err());
    }

    #[test]
    fn a_tiny_bench_gives_every_metric_and_the_worst_seed() {
        let plan = Plan {
            paths: 2,
            base_seed: 5,
            duration_s: 5.0,
            cc: "reno".into(),
            ..Plan::new("reno")
        };
        let seen = Mutex::new(Vec::new());
        let rows = run(&plan, &|p| {
            seen.lock()
                .unwrap()
                .push((p.done, p.total, p.seed, p.setting))
        })
        .unwrap();
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 16);
        assert!(seen.iter().all(|s| s.1 == 16) && seen.last().unwrap().0 == 16);
        assert_eq!(
            rows.iter().map(|r| (r.seed, r.qdisc)).collect::<Vec<_>>(),
            vec![(5, Qdisc::DropTail), (6, Qdisc::DropTail)]
        );
        for r in &rows {
            assert!(r.util_alone > 0.0 && r.util_alone <= 1.0 + 1e-9, "{r:?}");
            for v in [
                r.p95_rtt_vs_bbr,
                r.share_vs_cubic,
                r.share_vs_bbr,
                r.harm_cubic,
                r.harm_bbr,
                r.jain3,
                r.fe_util_ratio,
            ] {
                assert!(v.is_finite() && v >= 0.0, "{r:?}");
            }
            // No RTT sample after the competitor left (reno stalled after a timeout on seed 5's
            // deep buffer in so short a run) reads NaN, and the queue never counts as drained.
            assert!(
                r.leave_qdelay_ms >= 0.0
                    || (r.leave_qdelay_ms.is_nan() && r.leave_recovery_s.is_none()),
                "{r:?}"
            );
            assert!(
                r.share_vs_cubic <= 2.0 && r.jain3 <= 1.0 + 1e-9 && r.jain3 >= 1.0 / 3.0 - 1e-9,
                "{r:?}"
            );
            assert_eq!(
                r.direction,
                draw_path(&plan, r.seed).unwrap().draw.data_dir().as_str()
            );
        }
        let sums = summarise(&rows, Qdisc::DropTail);
        assert_eq!(sums.len(), METRICS.len());
        assert!(summarise(&rows, Qdisc::CoDel)
            .iter()
            .all(|s| s.paths == 0 && s.worst.is_nan()));
        for s in &sums {
            let vals: Vec<f64> = rows
                .iter()
                .map(|r| (METRICS.iter().find(|m| m.key == s.key).unwrap().get)(r))
                .collect();
            let worst_row = rows.iter().find(|r| r.seed == s.worst_seed).unwrap();
            let w = (METRICS.iter().find(|m| m.key == s.key).unwrap().get)(worst_row);
            assert!(
                w == s.worst || (w.is_nan() && s.worst.is_nan()),
                "{}: {w} vs {}",
                s.key,
                s.worst
            );
            // NaN (no measurement) is the worst of all; otherwise nothing is worse than the worst.
            let ok = s.worst.is_nan()
                || match s.better {
                    Better::Higher => vals.iter().all(|&v| v >= s.worst || v.is_nan()),
                    Better::Lower => vals.iter().all(|&v| v <= s.worst || v.is_nan()),
                };
            assert!(ok, "{}: worst {} of {vals:?}", s.key, s.worst);
            // Two paths: the worst 10 % is the worst path.
            assert!(s.p10 == s.worst || (s.p10.is_nan() && s.worst.is_nan()));
        }
        let t = table(&sums);
        assert!(
            t.contains("utilisation alone")
                && t.contains(">= 0.93")
                && t.contains("Jain, 3 staggered"),
            "{t}"
        );
        // The per-path files, written atomically into a fresh folder.
        let dir = std::env::temp_dir().join(format!("leocc-robust-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_out(&dir, &plan, &rows, &sums).unwrap();
        let obj = serde_json::to_value(&rows[0]).unwrap();
        let mut keys: Vec<&str> = obj
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut cols = CSV_COLUMNS.to_vec();
        keys.sort_unstable();
        cols.sort_unstable();
        assert_eq!(keys, cols, "CSV_COLUMNS lists every field of PathRow");
        let csv = std::fs::read_to_string(dir.join("paths.csv")).unwrap();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().next().unwrap().contains("share_vs_cubic"));
        let jsonl = std::fs::read_to_string(dir.join("paths.jsonl")).unwrap();
        let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
        assert_eq!(first["seed"], 5);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["metrics"].as_array().unwrap().len(), METRICS.len());
        assert_eq!(summary["probe_noise"], "bentpipe", "the plan's conditions are recorded");
        assert_eq!(summary["sim_seeds"], 1);
        let _ = std::fs::remove_dir_all(&dir);
        // The rerun commands name the path's trace and buffer.
        let cmds = rerun_commands(&plan, 6, Qdisc::DropTail).unwrap();
        assert!(!cmds[1].contains("--qdisc"));
        assert!(rerun_commands(&plan, 6, Qdisc::CoDel).unwrap()[1].contains(" --qdisc codel "));
        assert!(
            cmds[0].starts_with("leocc trace draw --seed 6 --duration 5"),
            "{cmds:?}"
        );
        assert!(
            cmds[1].contains("--queue ") && cmds[1].contains("--cc reno,bbr,cubic"),
            "{cmds:?}"
        );
        assert!(cmds.iter().any(|c| c.contains("--false-events 500")));
    }
}
