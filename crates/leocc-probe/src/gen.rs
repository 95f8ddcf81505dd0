//! A seeded, deterministic generator of probe-reply streams with ground truth, for tests and
//! benchmarks of the detector.
//!
//! A stream is what `ping -D` (or the daemon) sees: one line per valid reply with its
//! wall-clock receive time and RTT. The model, per probe `i`:
//! - **sends** every `spacing` ms plus timer jitter: Gaussian (`send_jitter_ms`) and, with
//!   probability `slip_prob`, a slip of 40–60 % of a spacing (a prober that misses its tick);
//! - **RTT** = base level + an AR(1) jitter term (coefficient `ar`, stationary sd `jitter_ms`),
//!   plus one-off spikes (probability `spike_prob`, exponential size of mean `spike_ms`) and
//!   one-off visits to an upper RTT band (`band_jump_prob`, `band_jump_ms`), plus
//!   congestion episodes that raise the base for seconds; replies keep FIFO order (a reply
//!   cannot overtake the previous one), which bunches replies after a spike as on real paths;
//! - **loss**: a Gilbert–Elliott channel (good/bad state, every probe lost in the bad state)
//!   with the given mean loss rate and mean burst length;
//! - **reconfigurations**: at each one the link stops for an outage; probes sent in its first
//!   part are lost, probes sent in the rest are held and delivered together when it ends
//!   (bent pipe: 0–25 % lost and the rest held, 45–140 ms; inter-satellite links: ~70 % lost then held,
//!   600–750 ms, as in the real ping-isl recording where ~500 ms of probes vanish and the
//!   closing reply is ~200 ms late); the base RTT jumps to a new level afterwards;
//! - **schedule**: Starlink's wall-clock seconds 12/27/42/57, OneWeb's ~11 s period, a 15 s
//!   grid whose phase jumps every couple of minutes, or none; plus aperiodic events (Poisson).
//!
//! The default jitter, spike and slip parameters are fitted to the real recordings (see
//! docs/detector.md, "Generated streams"): the ISL profile to `ping-isl`, the bent-pipe profile
//! to the two `ping-bentpipe` files. The recordings themselves are not part of the project.

use leocc_base::rng::Rng;

use crate::replay::PingLine;

const NS_PER_MS: f64 = 1e6;
const NS_PER_S: i64 = 1_000_000_000;
/// Wall-clock origin of generated streams: 2024-08-12 19:00:00 UTC, a whole minute, plus a
/// per-seed offset so that streams start at different points of the Starlink minute.
const WALL_ORIGIN_NS: i64 = 1_723_489_200 * NS_PER_S;
/// Starlink's reconfiguration seconds within each minute (seed §4.1.1).
const STARLINK_SLOTS_S: [i64; 4] = [12, 27, 42, 57];
/// Where a real outage starts relative to its slot second: the ping-isl outages start 13–39 ms
/// before the second (median −28 ms); we draw uniformly from −40..0 ms.
const SLOT_OFFSET_MS: (f64, f64) = (-40.0, 0.0);
/// Share of scheduled slots that actually show an outage (a few pass without one).
const SLOT_OCCUPANCY: f64 = 0.97;
/// Two true events are at least this far apart (the link cannot reconfigure mid-outage).
const MIN_EVENT_GAP_NS: i64 = 1_000_000_000;
/// A reply is never delivered less than this after the previous one (FIFO path), ns.
pub const FIFO_GAP_NS: i64 = 50_000;

/// The path type: sets outage shape and the jitter fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// Terminal → satellite → gateway: short outages, mostly held-back probes.
    BentPipe,
    /// Over inter-satellite links: long outages, mostly lost probes.
    Isl,
}

/// When reconfigurations happen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Grid {
    /// Seconds 12/27/42/57 of each wall-clock minute.
    Starlink,
    /// A fixed period (OneWeb: about 11 s) with a random phase, s.
    Period(f64),
    /// A 15 s grid whose phase jumps by a random 2–13 s every `shift_every_s`.
    Shifting {
        /// Seconds between phase jumps.
        shift_every_s: f64,
    },
    /// No periodic events; only aperiodic ones.
    None,
}

impl Grid {
    /// Parses `starlink`, `oneweb`, `shifting`, `none` or `period:S`.
    pub fn parse(s: &str) -> Result<Grid, String> {
        match s {
            "starlink" => Ok(Grid::Starlink),
            "oneweb" => Ok(Grid::Period(ONEWEB_PERIOD_S)),
            "shifting" => Ok(Grid::Shifting { shift_every_s: SHIFT_EVERY_S }),
            "none" => Ok(Grid::None),
            _ => match s.strip_prefix("period:").map(str::parse::<f64>) {
                Some(Ok(p)) if (2.0..=600.0).contains(&p) => Ok(Grid::Period(p)),
                _ => Err(format!("unknown grid '{s}' (starlink, oneweb, shifting, none, period:SECONDS with 2..600 s)")),
            },
        }
    }
}

/// OneWeb's reconfiguration period, s (seed §4.1.1: "~11 s").
pub const ONEWEB_PERIOD_S: f64 = 11.0;
/// How often the shifting grid jumps, s.
pub const SHIFT_EVERY_S: f64 = 120.0;
/// Period of the shifting grid, s.
const SHIFTING_PERIOD_S: f64 = 15.0;

/// Everything that defines a stream.
#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// Path type.
    pub path: PathKind,
    /// Reconfiguration schedule.
    pub grid: Grid,
    /// Mean rate of aperiodic reconfigurations, per second (0 = none).
    pub aperiodic_per_s: f64,
    /// Probe spacing, ms.
    pub spacing_ms: f64,
    /// Mean background loss rate (Gilbert–Elliott), 0..1.
    pub loss: f64,
    /// Mean length of a loss burst, probes (≥ 1).
    pub burst_len: f64,
    /// Length, s.
    pub duration_s: f64,
    /// Seed.
    pub seed: u64,
    /// Jitter model.
    pub jitter: Jitter,
}

/// The fitted jitter model (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jitter {
    /// Base RTT at the start, ms.
    pub base_ms: f64,
    /// Gaussian sd of the send timer, ms.
    pub send_jitter_ms: f64,
    /// Probability that a send slips by about half a spacing.
    pub slip_prob: f64,
    /// AR(1) coefficient of the RTT jitter.
    pub ar: f64,
    /// Stationary sd of the AR(1) jitter, ms.
    pub jitter_ms: f64,
    /// Probability of a one-off RTT spike per probe.
    pub spike_prob: f64,
    /// Mean spike size, ms (exponential).
    pub spike_ms: f64,
    /// Probability that a probe's RTT sits in the upper RTT band for that one probe.
    pub band_jump_prob: f64,
    /// Height of the upper band above the base, ms (± 3 ms).
    pub band_jump_ms: f64,
    /// Congestion episodes per second.
    pub episode_per_s: f64,
    /// Mean episode length, s.
    pub episode_s: f64,
    /// Extra base RTT during an episode, ms (uniform 0.25–1 × this).
    pub episode_ms: f64,
    /// Base-RTT jump at a reconfiguration, ms (uniform ±this).
    pub level_jump_ms: f64,
    /// RTT resolution, ms (ping prints 1 ms above 100 ms, 0.1 ms below).
    pub resolution_ms: f64,
}

impl Jitter {
    /// Fit to the real bent-pipe recordings (2 × 800 s, Victoria BC, away from the slots): RTT
    /// residual sd 6.9–8.1 ms, lag-1 autocorrelation 0.41–0.47, 99.9th percentile of the residual
    /// +38–48 ms, RTT steps between consecutive replies ≥ 30/40/50/60 ms in 0.5 %/0.13 %/0.05 %/
    /// 0.03 % of intervals (an exponential tail of scale ~11 ms), send gaps of ~10.5 ms with a
    /// third of them ~5 ms late, median RTT 26 ms with congested stretches.
    pub const BENT_PIPE: Jitter = Jitter {
        base_ms: 24.0,
        send_jitter_ms: 0.4,
        slip_prob: 0.33,
        ar: 0.45,
        jitter_ms: 5.5,
        spike_prob: 0.08,
        spike_ms: 11.0,
        band_jump_prob: 0.0,
        band_jump_ms: 0.0,
        episode_per_s: 1.0 / 150.0,
        episode_s: 8.0,
        episode_ms: 40.0,
        level_jump_ms: 8.0,
        resolution_ms: 0.1,
    };
    /// Fit to the real ping-isl recording (154 s, away from the slots): residual sd 5.6 ms,
    /// lag-1 autocorrelation 0.10, send gaps 15 ± 3 ms, median RTT 151 ms, 1 ms resolution;
    /// RTT steps between consecutive replies ≥ 20 ms in 1.1 % of intervals but ≥ 30 ms in only
    /// 0.07 % (largest 33 ms): single replies in a band ~24 ms up (e.g. 145 → 170 ms), not a
    /// long tail.
    pub const ISL: Jitter = Jitter {
        base_ms: 150.0,
        send_jitter_ms: 2.8,
        slip_prob: 0.0,
        ar: 0.10,
        jitter_ms: 4.5,
        spike_prob: 0.02,
        spike_ms: 4.0,
        band_jump_prob: 0.011,
        band_jump_ms: 24.0,
        episode_per_s: 1.0 / 300.0,
        episode_s: 5.0,
        episode_ms: 20.0,
        level_jump_ms: 20.0,
        resolution_ms: 1.0,
    };
}

impl GenConfig {
    /// The defaults of a path type: its fitted jitter, Starlink grid, 2 % loss in bursts of 2,
    /// one aperiodic event per 2 minutes, 300 s.
    pub fn new(path: PathKind, seed: u64) -> GenConfig {
        GenConfig {
            path,
            grid: Grid::Starlink,
            aperiodic_per_s: 1.0 / 120.0,
            spacing_ms: match path {
                PathKind::BentPipe => 13.0,
                PathKind::Isl => 16.0,
            },
            loss: 0.02,
            burst_len: 2.0,
            duration_s: 300.0,
            seed,
            jitter: match path {
                PathKind::BentPipe => Jitter::BENT_PIPE,
                PathKind::Isl => Jitter::ISL,
            },
        }
    }

    /// Checks the ranges; an error names the field.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |what: &str| Err(format!("probe gen: {what}"));
        if !(self.spacing_ms >= 1.0 && self.spacing_ms <= 1000.0) {
            return bad("spacing must be 1..1000 ms");
        }
        if !(0.0..0.5).contains(&self.loss) {
            return bad("loss must be in [0, 0.5)");
        }
        if self.burst_len.is_nan() || self.burst_len < 1.0 {
            return bad("burst length must be >= 1 probe");
        }
        if !(self.duration_s > 0.0 && self.duration_s <= 86_400.0) {
            return bad("duration must be 0..86400 s");
        }
        if !(self.aperiodic_per_s >= 0.0 && self.aperiodic_per_s <= 1.0) {
            return bad("aperiodic rate must be 0..1 per second");
        }
        Ok(())
    }
}

/// One true reconfiguration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrueEvent {
    /// Outage start, Unix ns.
    pub start_wall_ns: i64,
    /// Outage length, ns.
    pub duration_ns: i64,
    /// Whether it came from the grid (false: aperiodic).
    pub on_grid: bool,
}

/// A generated stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Stream {
    /// The replies, in receive order.
    pub replies: Vec<PingLine>,
    /// Ground truth, in time order.
    pub truth: Vec<TrueEvent>,
    /// Probes sent.
    pub sent: u64,
}

/// Gilbert–Elliott loss: every probe in the bad state is lost.
#[derive(Clone, Debug)]
struct GilbertElliott {
    bad: bool,
    p_enter: f64,
    p_leave: f64,
}

impl GilbertElliott {
    /// Mean loss `rate` with bursts of mean length `burst`: leave the bad state with
    /// probability 1/burst; the stationary share of the bad state, p_enter/(p_enter+p_leave),
    /// equals `rate`.
    fn new(rate: f64, burst: f64) -> Self {
        let p_leave = 1.0 / burst;
        let p_enter = if rate <= 0.0 { 0.0 } else { rate * p_leave / (1.0 - rate) };
        GilbertElliott { bad: false, p_enter, p_leave }
    }

    fn lost(&mut self, rng: &mut Rng) -> bool {
        self.bad = if self.bad { !rng.chance(self.p_leave) } else { rng.chance(self.p_enter) };
        self.bad
    }
}

/// Draws the true events over [t0, t0 + duration).
fn draw_events(cfg: &GenConfig, t0: i64, rng: &mut Rng) -> Vec<TrueEvent> {
    let end = t0 + (cfg.duration_s * 1e9) as i64;
    let (dur_lo, dur_hi) = match cfg.path {
        PathKind::BentPipe => (45.0, 140.0),
        PathKind::Isl => (600.0, 750.0),
    };
    let mut grid_times: Vec<i64> = Vec::new();
    let off = |rng: &mut Rng| (rng.range(SLOT_OFFSET_MS.0, SLOT_OFFSET_MS.1) * NS_PER_MS) as i64;
    match cfg.grid {
        Grid::Starlink => {
            let mut minute = t0.div_euclid(60 * NS_PER_S) * 60 * NS_PER_S;
            while minute < end {
                for s in STARLINK_SLOTS_S {
                    grid_times.push(minute + s * NS_PER_S);
                }
                minute += 60 * NS_PER_S;
            }
        }
        Grid::Period(p) => {
            let period = (p * 1e9) as i64;
            let mut t = t0 + (rng.unit() * period as f64) as i64;
            while t < end {
                grid_times.push(t);
                t += period;
            }
        }
        Grid::Shifting { shift_every_s } => {
            let period = (SHIFTING_PERIOD_S * 1e9) as i64;
            let every = (shift_every_s * 1e9) as i64;
            let mut t = t0 + (rng.unit() * period as f64) as i64;
            let mut next_shift = t0 + every;
            while t < end {
                grid_times.push(t);
                t += period;
                if t >= next_shift {
                    t += (rng.range(2.0, 13.0) * 1e9) as i64;
                    next_shift += every;
                }
            }
        }
        Grid::None => {}
    }
    let mut ev: Vec<TrueEvent> = grid_times
        .into_iter()
        .filter(|&t| t >= t0 && t < end)
        .filter_map(|t| {
            let keep = rng.chance(SLOT_OCCUPANCY);
            let start = t + off(rng);
            let d = (rng.range(dur_lo, dur_hi) * NS_PER_MS) as i64;
            keep.then_some(TrueEvent { start_wall_ns: start, duration_ns: d, on_grid: true })
        })
        .collect();
    if cfg.aperiodic_per_s > 0.0 {
        let mut t = t0 as f64 + rng.exp(1.0 / cfg.aperiodic_per_s) * 1e9;
        while (t as i64) < end {
            let start = t as i64;
            let d = (rng.range(dur_lo, dur_hi) * NS_PER_MS) as i64;
            if ev.iter().all(|e| (e.start_wall_ns - start).abs() >= MIN_EVENT_GAP_NS) {
                ev.push(TrueEvent { start_wall_ns: start, duration_ns: d, on_grid: false });
            }
            t += rng.exp(1.0 / cfg.aperiodic_per_s) * 1e9;
        }
    }
    ev.sort_by_key(|e| e.start_wall_ns);
    // The first second carries no event: the detector needs a reply before a gap.
    ev.retain(|e| e.start_wall_ns >= t0 + NS_PER_S && e.start_wall_ns + e.duration_ns < end);
    ev
}

/// Share of an outage whose probes are lost (the rest are held and delivered at its end).
fn lost_share(path: PathKind, rng: &mut Rng) -> f64 {
    let (lo, hi) = outage_lost_share(path);
    rng.range(lo, hi)
}

/// The range of the share of an outage, from its start, whose probes are lost; the rest are
/// held at the satellite hop and released when the outage ends (uniform within the range per
/// outage). The real bent-pipe outages hold nearly every probe: at the slots of both recordings
/// the closing reply's send gap is 10–35 ms (0–2 probes lost) while its RTT is 50–150 ms above
/// the previous one. Over inter-satellite links ~500 ms of sends vanish and the closing reply
/// is ~200 ms late. The simulator's probe stream (`leocc-sim`) uses the same ranges.
pub fn outage_lost_share(path: PathKind) -> (f64, f64) {
    match path {
        PathKind::BentPipe => (0.0, 0.25),
        PathKind::Isl => (0.65, 0.8),
    }
}

/// The per-probe noise of the fitted model, without the path's own level and outages: the
/// send timer (Gaussian jitter and slips), the RTT's jitter above the path's level (congestion
/// episodes, AR(1) term, spikes, upper-band visits) and the Gilbert–Elliott background loss.
/// [`generate`] adds it to its drawn base RTT; the simulator (`leocc-sim`) adds it to the
/// probe's propagation delay through the simulated path, so both draw the same noise.
#[derive(Clone, Debug)]
pub struct ProbeNoise {
    jitter: Jitter,
    spacing_ms: f64,
    innov_sd: f64,
    x: f64,
    episode_until: i64,
    episode_extra: f64,
    ge: GilbertElliott,
    rng_send: Rng,
    rng_rtt: Rng,
    rng_loss: Rng,
}

impl ProbeNoise {
    /// The noise of `jitter` for probes `spacing_ms` apart with background loss `loss` in
    /// bursts of mean `burst_len` probes, drawn from `seed`'s streams 2 (send), 3 (RTT) and
    /// 4 (loss).
    pub fn new(jitter: Jitter, spacing_ms: f64, loss: f64, burst_len: f64, seed: u64) -> ProbeNoise {
        ProbeNoise {
            jitter,
            spacing_ms,
            innov_sd: jitter.jitter_ms * (1.0 - jitter.ar * jitter.ar).sqrt(),
            x: 0.0,
            episode_until: i64::MIN,
            episode_extra: 0.0,
            ge: GilbertElliott::new(loss, burst_len),
            rng_send: Rng::derive(seed, 2),
            rng_rtt: Rng::derive(seed, 3),
            rng_loss: Rng::derive(seed, 4),
        }
    }

    /// The RTT of a probe sent at `t_ns` on a path whose level is `level_ms`, ms, unclamped
    /// (the AR(1) term is centred on zero, so it may fall below the level).
    pub fn rtt_ms(&mut self, t_ns: i64, level_ms: f64) -> f64 {
        let j = &self.jitter;
        let rng = &mut self.rng_rtt;
        if t_ns >= self.episode_until && rng.chance(j.episode_per_s * self.spacing_ms / 1000.0) {
            self.episode_until = t_ns + (rng.exp(j.episode_s) * 1e9) as i64;
            self.episode_extra = rng.range(0.25, 1.0) * j.episode_ms;
        }
        let extra = if t_ns < self.episode_until { self.episode_extra } else { 0.0 };
        self.x = j.ar * self.x + self.innov_sd * rng.normal();
        let mut spike = if rng.chance(j.spike_prob) { rng.exp(j.spike_ms) } else { 0.0 };
        if rng.chance(j.band_jump_prob) {
            spike += j.band_jump_ms + rng.range(-3.0, 3.0);
        }
        level_ms + extra + self.x + spike
    }

    /// Whether the background channel loses this probe.
    pub fn lost(&mut self) -> bool {
        self.ge.lost(&mut self.rng_loss)
    }

    /// Time to the next send, ns: the spacing plus timer jitter and occasional slips.
    pub fn next_send_step_ns(&mut self) -> f64 {
        let j = &self.jitter;
        let spacing = self.spacing_ms * NS_PER_MS;
        let slip = if self.rng_send.chance(j.slip_prob) { self.rng_send.range(0.4, 0.6) * spacing } else { 0.0 };
        (spacing + j.send_jitter_ms * NS_PER_MS * self.rng_send.normal() + slip).max(spacing * 0.3)
    }

    /// The jitter model.
    pub fn jitter(&self) -> &Jitter {
        &self.jitter
    }
}

/// Generates the stream of `cfg` (deterministic in `cfg`, seed included).
pub fn generate(cfg: &GenConfig) -> Result<Stream, String> {
    cfg.validate()?;
    let j = cfg.jitter;
    let mut rng_ev = Rng::derive(cfg.seed, 1);
    let mut noise = ProbeNoise::new(j, cfg.spacing_ms, cfg.loss, cfg.burst_len, cfg.seed);
    let t0 = WALL_ORIGIN_NS + (Rng::derive(cfg.seed, 5).unit() * 60.0 * 1e9) as i64;
    let end = t0 + (cfg.duration_s * 1e9) as i64;
    let truth = draw_events(cfg, t0, &mut rng_ev);
    let shares: Vec<f64> = truth.iter().map(|_| lost_share(cfg.path, &mut rng_ev)).collect();
    let jumps: Vec<f64> = truth.iter().map(|_| rng_ev.range(-j.level_jump_ms, j.level_jump_ms)).collect();
    let mut base = j.base_ms;
    let mut next_ev = 0usize;
    let mut replies = Vec::new();
    let (mut t, mut seq, mut sent, mut last_recv) = (t0, 0u64, 0u64, i64::MIN);
    while t < end {
        sent += 1;
        seq += 1;
        // Level jumps of the reconfigurations whose outage ended before this send.
        while next_ev < truth.len() && truth[next_ev].start_wall_ns + truth[next_ev].duration_ns <= t {
            base = (base + jumps[next_ev]).max(j.base_ms * 0.5);
            next_ev += 1;
        }
        let rtt_ms = noise.rtt_ms(t, base).max(j.base_ms * 0.3);
        let mut recv = t + (rtt_ms * NS_PER_MS) as i64;
        let lost_by_channel = noise.lost();
        let mut lost = lost_by_channel;
        if let Some((i, e)) = truth.iter().enumerate().find(|(_, e)| t >= e.start_wall_ns && t < e.start_wall_ns + e.duration_ns) {
            let lost_until = e.start_wall_ns + (shares[i] * e.duration_ns as f64) as i64;
            if t < lost_until {
                lost = true;
            } else {
                // Held at the satellite hop, released when the outage ends.
                recv = e.start_wall_ns + e.duration_ns + (rtt_ms * NS_PER_MS) as i64;
            }
        }
        if !lost {
            recv = recv.max(last_recv + FIFO_GAP_NS);
            last_recv = recv;
            let rtt_ns = quantize((recv - t) as f64, j.resolution_ms * NS_PER_MS);
            replies.push(PingLine { wall_ns: recv, seq: seq as u16, rtt_ns });
        }
        t += noise.next_send_step_ns() as i64;
    }
    replies.sort_by_key(|r| r.wall_ns);
    Ok(Stream { replies, truth, sent })
}

fn quantize(ns: f64, unit: f64) -> u64 {
    if unit <= 0.0 {
        return ns.max(0.0) as u64;
    }
    ((ns / unit).round() * unit).max(0.0) as u64
}

/// Writes a stream as CSV (`timestamp_ns,rtt_ms`, the format `leocc probe replay` reads) with
/// the command and the ground truth as `#` comment lines: `# truth START_NS DURATION_MS`.
pub fn to_csv(s: &Stream, command: &str) -> String {
    let mut out = String::with_capacity(s.replies.len() * 28 + 256);
    out.push_str(&format!("# {command}\n"));
    out.push_str(&format!("# probes sent {}, replies {}\n", s.sent, s.replies.len()));
    for e in &s.truth {
        out.push_str(&format!("# truth {} {:.3}{}\n", e.start_wall_ns, e.duration_ns as f64 / NS_PER_MS, if e.on_grid { "" } else { " aperiodic" }));
    }
    out.push_str("timestamp_ns,rtt_ms\n");
    for r in &s.replies {
        out.push_str(&format!("{},{}\n", r.wall_ns, fmt_ms(r.rtt_ns)));
    }
    out
}

fn fmt_ms(ns: u64) -> String {
    let s = format!("{:.3}", ns as f64 / NS_PER_MS);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Summary statistics of a reply stream: what the jitter fit is made from. The same function
/// runs on real recordings (`leocc probe replay --stats`) and on generated streams.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct StreamStats {
    /// Replies.
    pub replies: usize,
    /// Median gap between consecutive sends (receive time − RTT), ms.
    pub spacing_ms: f64,
    /// Percentiles 1/10/50/90/99 of that send gap, ms.
    pub send_gap_pct_ms: [f64; 5],
    /// sd of the RTT around its running median (±25 replies), ms.
    pub residual_sd_ms: f64,
    /// Lag-1 autocorrelation of that residual.
    pub residual_ac1: f64,
    /// Percentiles 1/50/99/99.9 of the residual, ms.
    pub residual_pct_ms: [f64; 4],
    /// Median RTT, ms.
    pub rtt_median_ms: f64,
    /// Percentiles 50/90/99/99.9 of the response interval, ms.
    pub ri_pct_ms: [f64; 4],
}

/// Computes [`StreamStats`] (O(n log n); an offline tool, not for the daemon).
pub fn stream_stats(replies: &[PingLine]) -> Option<StreamStats> {
    const HALF_WINDOW: usize = 25;
    if replies.len() < 4 * HALF_WINDOW {
        return None;
    }
    let ms = |ns: f64| ns / NS_PER_MS;
    let sends: Vec<f64> = replies.iter().map(|r| r.wall_ns as f64 - r.rtt_ns as f64).collect();
    let mut gaps: Vec<f64> = sends.windows(2).map(|w| ms(w[1] - w[0])).collect();
    gaps.sort_by(f64::total_cmp);
    // At the rounded position; every list here has at least 99 values.
    let pct = |v: &[f64], p: f64| leocc_base::metrics::quantile_rounded(v, p / 100.0).unwrap_or(f64::NAN);
    let rtts: Vec<f64> = replies.iter().map(|r| ms(r.rtt_ns as f64)).collect();
    let mut res = Vec::with_capacity(rtts.len());
    for i in HALF_WINDOW..rtts.len() - HALF_WINDOW {
        let mut w = rtts[i - HALF_WINDOW..=i + HALF_WINDOW].to_vec();
        w.sort_by(f64::total_cmp);
        res.push(rtts[i] - w[HALF_WINDOW]);
    }
    let mean = leocc_base::metrics::mean(&res).unwrap_or(f64::NAN);
    let var = res.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / res.len() as f64;
    let ac1 = res.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum::<f64>() / (res.len() - 1) as f64 / var.max(1e-12);
    let mut sorted_res = res.clone();
    sorted_res.sort_by(f64::total_cmp);
    let mut sorted_rtt = rtts.clone();
    sorted_rtt.sort_by(f64::total_cmp);
    let mut ri: Vec<f64> = replies.windows(2).map(|w| ms((w[1].wall_ns - w[0].wall_ns) as f64)).collect();
    ri.sort_by(f64::total_cmp);
    Some(StreamStats {
        replies: replies.len(),
        spacing_ms: pct(&gaps, 50.0),
        send_gap_pct_ms: [pct(&gaps, 1.0), pct(&gaps, 10.0), pct(&gaps, 50.0), pct(&gaps, 90.0), pct(&gaps, 99.0)],
        residual_sd_ms: var.sqrt(),
        residual_ac1: ac1,
        residual_pct_ms: [pct(&sorted_res, 1.0), pct(&sorted_res, 50.0), pct(&sorted_res, 99.0), pct(&sorted_res, 99.9)],
        rtt_median_ms: pct(&sorted_rtt, 50.0),
        ri_pct_ms: [pct(&ri, 50.0), pct(&ri, 90.0), pct(&ri, 99.0), pct(&ri, 99.9)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(path: PathKind, seed: u64) -> GenConfig {
        GenConfig { duration_s: 120.0, ..GenConfig::new(path, seed) }
    }

    #[test]
    fn same_seed_same_stream_other_seed_other_stream() {
        let a = generate(&cfg(PathKind::BentPipe, 3)).unwrap();
        let b = generate(&cfg(PathKind::BentPipe, 3)).unwrap();
        assert_eq!(a, b);
        let c = generate(&cfg(PathKind::BentPipe, 4)).unwrap();
        assert_ne!(a.replies, c.replies);
        assert_eq!(to_csv(&a, "x"), to_csv(&b, "x"));
    }

    #[test]
    fn starlink_truth_sits_on_the_slot_seconds() {
        let s = generate(&GenConfig { aperiodic_per_s: 0.0, ..cfg(PathKind::Isl, 1) }).unwrap();
        assert!(s.truth.len() >= 6, "{} events in 120 s", s.truth.len());
        for e in &s.truth {
            let sec_ms = (e.start_wall_ns.rem_euclid(60 * NS_PER_S)) as f64 / 1e6;
            let d = STARLINK_SLOTS_S.iter().map(|&x| (sec_ms - x as f64 * 1000.0).abs()).fold(f64::MAX, f64::min);
            assert!(d <= 40.0, "start at second {sec_ms} ms");
            assert!((600..=750).contains(&(e.duration_ns / 1_000_000)));
        }
    }

    #[test]
    fn loss_rate_and_burstiness_follow_the_channel() {
        let mut rng = Rng::new(9);
        let mut ge = GilbertElliott::new(0.03, 3.0);
        let draws: Vec<bool> = (0..400_000).map(|_| ge.lost(&mut rng)).collect();
        let rate = draws.iter().filter(|&&l| l).count() as f64 / draws.len() as f64;
        assert!((rate - 0.03).abs() < 0.003, "rate {rate}");
        let bursts = draws.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let mean_burst = draws.iter().filter(|&&l| l).count() as f64 / bursts;
        assert!((mean_burst - 3.0).abs() < 0.2, "mean burst {mean_burst}");
    }

    #[test]
    fn stream_statistics_match_the_fit() {
        // No outages, no loss: the jitter statistics alone.
        let c = GenConfig { grid: Grid::None, aperiodic_per_s: 0.0, loss: 0.0, ..cfg(PathKind::BentPipe, 2) };
        let st = stream_stats(&generate(&c).unwrap().replies).unwrap();
        // Send gaps: 13 ms, a third ~6 ms late.
        assert!((12.5..14.5).contains(&st.spacing_ms), "{st:?}");
        // The residual sd and its right tail are those of the fitted recordings (6.9–8.1 ms,
        // 99.9th percentile +38–48 ms), give or take the episodes and the FIFO bunching.
        assert!((5.0..9.5).contains(&st.residual_sd_ms), "{st:?}");
        assert!((25.0..60.0).contains(&st.residual_pct_ms[3]), "{st:?}");
        assert!((0.25..0.6).contains(&st.residual_ac1), "{st:?}");
        let c = GenConfig { grid: Grid::None, aperiodic_per_s: 0.0, loss: 0.0, ..cfg(PathKind::Isl, 2) };
        let st = stream_stats(&generate(&c).unwrap().replies).unwrap();
        assert!((14.0..18.0).contains(&st.spacing_ms), "{st:?}");
        assert!((4.0..7.5).contains(&st.residual_sd_ms), "{st:?}");
        assert!((140.0..160.0).contains(&st.rtt_median_ms), "{st:?}");
    }

    #[test]
    fn outages_show_as_gaps_and_held_replies() {
        let c = GenConfig { aperiodic_per_s: 0.0, loss: 0.0, ..cfg(PathKind::BentPipe, 5) };
        let s = generate(&c).unwrap();
        for e in &s.truth {
            // Replies already in flight still arrive, then nothing until the held probes come
            // out: a response interval of about the outage's length, starting within an RTT.
            let near: Vec<&PingLine> = s.replies.iter().filter(|r| r.wall_ns >= e.start_wall_ns && r.wall_ns <= e.start_wall_ns + e.duration_ns + 400_000_000).collect();
            let longest = near.windows(2).map(|w| w[1].wall_ns - w[0].wall_ns).max().unwrap();
            assert!(longest as f64 >= 0.7 * e.duration_ns as f64, "{e:?}: longest RI {longest}");
            // Held probes come out with an RTT raised by up to the outage's length.
            let peak = near.iter().map(|r| r.rtt_ns).max().unwrap();
            assert!(peak as f64 >= 24e6 + 0.4 * e.duration_ns as f64, "{e:?}: peak RTT {peak}");
        }
    }

    #[test]
    fn grids_parse_and_shift() {
        assert_eq!(Grid::parse("oneweb").unwrap(), Grid::Period(ONEWEB_PERIOD_S));
        assert_eq!(Grid::parse("period:9.5").unwrap(), Grid::Period(9.5));
        assert!(Grid::parse("weekly").is_err());
        let c = GenConfig { grid: Grid::Shifting { shift_every_s: 60.0 }, aperiodic_per_s: 0.0, duration_s: 300.0, ..GenConfig::new(PathKind::Isl, 7) };
        let s = generate(&c).unwrap();
        let gaps: Vec<i64> = s.truth.windows(2).map(|w| (w[1].start_wall_ns - w[0].start_wall_ns) / 1_000_000).collect();
        assert!(gaps.iter().any(|&g| g > 16_500), "the phase jumps at least once: {gaps:?}");
        assert!(gaps.iter().filter(|&&g| (14_950..15_050).contains(&g)).count() >= 10, "{gaps:?}");
    }
}
