//! `leocc-ref`: the LeoCC authors' released kernel module (SpaceNetLab/LeoCC,
//! `leocc/live_network`), rebuilt from its facts as a baseline. It is not our core
//! (`leocc`, core/leocc.c): it is what the authors' code does, so that a report can show
//! the paper as we read it, the authors' code and BBR side by side. docs/algorithm.md,
//! "The authors' algorithm (leocc-ref)", says what it does and where we had to choose.
//!
//! BBRv1 underneath (as `bbr.rs`, Linux tcp_bbr.c): Startup 2.885, Drain 1/2.885, cwnd gain 2,
//! an 8-phase cycle [bco, dco, 1 × 6] with bco 1.25 and dco 0.75, a bandwidth max filter over
//! cycle + 2 = 10 round trips, 1 % pacing margin, ACK-aggregation allowance. What the authors
//! changed:
//! - the min-RTT window is 20 s, and ProbeRTT caps cwnd at 0.5 × maxBW × min_RTT (at least
//!   4 packets), not at 4 packets;
//! - two Kalman filters (process variance Q 4, measurement variance R 4, initial covariance
//!   25, estimates starting at 0): one of the bandwidth, fed once per round trip in cruise with
//!   the previous round's largest delivery-rate sample; one of the RTT, fed every RTT sample;
//! - the congestion test, in cruise only and not while an event is being handled:
//!   `Kalman RTT >= min_RTT + min_rtt_fluctuation + delta_rtt` with delta_rtt = 0. When it
//!   holds, pacing and cwnd use the Kalman bandwidth instead of the max filter and the probing
//!   phase's gain becomes 1.05 instead of 1.25;
//! - `min_rtt_fluctuation` is the spread (p95 − p5) of 100 terminal-PoP probe RTTs collected
//!   after each reconfiguration, starting one probe RTT after the event; before the first
//!   measurement it is `DEFAULT_FLUCTUATION_US` (their simulation variant's parameter); a
//!   measured spread of 0 switches the test off, as their `min_rtt_fluctuation > 0` guard does;
//! - on a reconfiguration event (per flow here; theirs is a module-global flag held 200 ms):
//!   from cruise, ProbeRTT (cwnd 0.5 × maxBW × min_RTT until 200 ms and one round after the
//!   window drained), then min_RTT := the current RTT sample, the bandwidth filter restarts
//!   from the rate seen when the RTT fell by more than 45 ms during ProbeRTT (else from 0),
//!   and Startup runs again. The event flag clears when Startup ends. An event during Startup
//!   or Drain is absorbed by the Startup under way, as in their code.
//!
//! Arithmetic is real-valued where theirs is 8-bit fixed point (their bandwidth Kalman gain
//! settles at 0.60, ours at 0.62).

use super::{AckSample, CaState, CcConfig, Controller, ReconfigEvent, WindowedMax};
use crate::rng::Rng;

/// STARTUP gain, 2/ln 2.
const HIGH_GAIN: f64 = 2.885;
/// DRAIN pacing gain.
const DRAIN_GAIN: f64 = 1.0 / 2.885;
/// Cruise cwnd gain.
const CWND_GAIN: f64 = 2.0;
/// Phases of the cruise cycle.
const CYCLE_LEN: usize = 8;
/// First phase's gain (bco) normally, and when congested.
const BCO: f64 = 1.25;
const BCO_CONGESTED: f64 = 1.05;
/// Second phase's gain (dco).
const DCO: f64 = 0.75;
/// Bandwidth filter window in round trips: cycle + 2.
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Min RTT filter window (the authors' 20 s; BBR's is 10 s).
const MIN_RTT_WIN_US: u64 = 20_000_000;
/// Time spent in PROBE_RTT.
const PROBE_RTT_US: u64 = 200_000;
/// cwnd gain of PROBE_RTT (over maxBW × min_RTT).
const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Smallest cwnd.
const MIN_CWND: u32 = 4;
/// Startup ends after FULL_BW_CNT rounds without FULL_BW_THRESH growth.
const FULL_BW_THRESH: f64 = 1.25;
const FULL_BW_CNT: u32 = 3;
/// Pace this much below the estimate.
const PACING_MARGIN: f64 = 0.01;
/// Below this pacing rate one segment per send quantum, else two (bytes/s).
const MIN_TSO_RATE: f64 = 1_200_000.0 / 8.0;
/// Linux sk_pacing_shift.
const PACING_SHIFT: u32 = 10;
/// ACK-aggregation filter: rounds per window, largest allowance, epoch reset.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const EXTRA_ACKED_MAX_US: f64 = 100_000.0;
const ACK_EPOCH_RESET_PKTS: f64 = (1u64 << 20) as f64;
/// GSO size limit for a send quantum, bytes.
const GSO_MAX_BYTES: f64 = 65_536.0;
/// Kalman process and measurement variances and initial covariance (both filters).
const KALMAN_Q: f64 = 4.0;
const KALMAN_R: f64 = 4.0;
const KALMAN_P0: f64 = 25.0;
/// Δ_RTT of the congestion test (their `delta_rtt`, 0).
const DELTA_RTT_US: f64 = 0.0;
/// `min_rtt_fluctuation` before any probe spread was measured (their simulation variant's
/// parameter default, 10 ms; its suggested range is 5–20 ms).
pub const DEFAULT_FLUCTUATION_US: u64 = 10_000;
/// Probe RTTs per spread measurement, and the percentiles of the spread.
const SPREAD_SAMPLES: usize = 100;
const SPREAD_LOW_PCT: usize = 5;
const SPREAD_HIGH_PCT: usize = 95;
/// During PROBE_RTT, an RTT sample this far below the Kalman RTT marks the new path: the
/// bandwidth seen then seeds the filter after the event (their `delta_thresh`).
const NEW_PATH_RTT_DROP_US: f64 = 45_000.0;

/// Mode, numbered as in their module (for time series).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Startup = 0,
    Drain = 1,
    Cruise = 2,
    ProbeRtt = 3,
}

/// A scalar Kalman filter with a constant state model.
#[derive(Clone, Copy, Debug)]
struct Kalman {
    x: f64,
    p: f64,
}

impl Kalman {
    fn new() -> Self {
        Kalman { x: 0.0, p: KALMAN_P0 }
    }

    fn update(&mut self, z: f64) {
        self.p += KALMAN_Q;
        let k = self.p / (self.p + KALMAN_R);
        self.x += k * (z - self.x);
        self.p *= 1.0 - k;
    }
}

/// The probe-spread measurement after a reconfiguration.
#[derive(Clone, Debug, Default)]
struct Spread {
    /// An event happened and no sample has placed the collection window yet.
    armed: bool,
    /// Samples at or after this time are collected.
    start_us: Option<u64>,
    samples: Vec<u64>,
}

/// The authors' LeoCC.
#[derive(Clone, Debug)]
pub struct LeoccRef {
    mss: f64,
    init_cwnd: u32,
    mode: Mode,
    bw: WindowedMax,
    min_rtt_us: u64,
    min_rtt_stamp: u64,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    round_max_bw: f64,
    latest_bw: f64,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    cycle_stamp: u64,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing_rate: f64,
    cwnd: u32,
    prior_cwnd: u32,
    packet_conservation: bool,
    prev_ca_state: CaState,
    probe_rtt_done: Option<u64>,
    probe_rtt_round_done: bool,
    rng: Rng,
    has_rtt: bool,
    extra_acked: [f64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    ack_epoch_us: u64,
    ack_epoch_acked: f64,
    bw_kalman: Kalman,
    rtt_kalman: Kalman,
    /// The probing phase's gain: BCO, or BCO_CONGESTED after a congested ACK.
    bco: f64,
    congested: bool,
    /// A reconfiguration is being handled (their `reconfiguration_trigger`, per flow).
    trigger: bool,
    reconfig_max_bw: f64,
    fluctuation_us: u64,
    spread: Spread,
    reconfigs: u64,
    spreads_measured: u64,
}

impl LeoccRef {
    /// A controller as the authors' module starts one.
    pub fn new(cfg: &CcConfig) -> Self {
        let mss = cfg.mss as f64;
        LeoccRef {
            mss,
            init_cwnd: cfg.init_cwnd,
            mode: Mode::Startup,
            bw: WindowedMax::new(BW_RTTS),
            min_rtt_us: u64::MAX,
            min_rtt_stamp: 0,
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            round_max_bw: 0.0,
            latest_bw: 0.0,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: HIGH_GAIN * cfg.init_cwnd as f64 * mss * 1e6 / 1000.0,
            cwnd: cfg.init_cwnd,
            prior_cwnd: 0,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            rng: Rng::new(cfg.seed),
            has_rtt: false,
            extra_acked: [0.0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            ack_epoch_us: 0,
            ack_epoch_acked: 0.0,
            bw_kalman: Kalman::new(),
            rtt_kalman: Kalman::new(),
            bco: BCO,
            congested: false,
            trigger: false,
            reconfig_max_bw: 0.0,
            fluctuation_us: DEFAULT_FLUCTUATION_US,
            spread: Spread::default(),
            reconfigs: 0,
            spreads_measured: 0,
        }
    }

    fn max_bw(&self) -> f64 {
        self.bw.get()
    }

    fn phase_gain(&self, idx: usize) -> f64 {
        match idx {
            0 => self.bco,
            1 => DCO,
            _ => 1.0,
        }
    }

    fn bdp(&self, bw: f64, gain: f64) -> f64 {
        if self.min_rtt_us == u64::MAX {
            return self.init_cwnd as f64;
        }
        (bw * self.min_rtt_us as f64 / 1e6 / self.mss * gain).ceil()
    }

    fn tso_segs_goal(&self) -> f64 {
        let min_segs = if self.pacing_rate < MIN_TSO_RATE { 1.0 } else { 2.0 };
        let bytes = (self.pacing_rate / (1u64 << PACING_SHIFT) as f64).min(GSO_MAX_BYTES);
        (bytes / self.mss).floor().max(min_segs)
    }

    fn quantization_budget(&self, w: f64) -> f64 {
        let mut w = w + 3.0 * self.tso_segs_goal();
        w = (w / 2.0).ceil() * 2.0;
        if self.mode == Mode::Cruise && self.cycle_idx == 0 {
            w += 2.0;
        }
        w
    }

    fn inflight(&self, bw: f64, gain: f64) -> f64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    fn probe_rtt_cwnd(&self) -> u32 {
        (self.bdp(self.max_bw(), PROBE_RTT_CWND_GAIN) as u32).max(MIN_CWND)
    }

    fn update_ack_aggregation(&mut self, s: &AckSample) {
        if s.acked_sacked == 0 || s.delivered < 0 || s.interval_us <= 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts += 1;
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0.0;
            }
        }
        let epoch_us = s.now_us.saturating_sub(self.ack_epoch_us) as f64;
        let mut expected = self.max_bw() * epoch_us / 1e6 / self.mss;
        let acked = s.acked_sacked as f64;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + acked >= ACK_EPOCH_RESET_PKTS {
            self.ack_epoch_acked = 0.0;
            self.ack_epoch_us = s.now_us;
            expected = 0.0;
        }
        self.ack_epoch_acked += acked;
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd as f64);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = slot.max(extra);
    }

    fn aggregation_cwnd(&self, bw: f64) -> f64 {
        if !self.full_bw_reached {
            return 0.0;
        }
        let max_aggr = bw * EXTRA_ACKED_MAX_US / 1e6 / self.mss;
        self.extra_acked[0].max(self.extra_acked[1]).min(max_aggr)
    }

    fn update_bw(&mut self, s: &AckSample) {
        self.round_start = false;
        if s.delivered < 0 || s.interval_us <= 0 {
            return;
        }
        if s.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = s.delivered_total;
            self.rtt_cnt += 1;
            self.round_max_bw = 0.0;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = s.delivered as f64 * self.mss * 1e6 / s.interval_us as f64;
        self.round_max_bw = self.round_max_bw.max(bw);
        if self.mode == Mode::ProbeRtt {
            if let Some(rtt) = s.rtt_us {
                if self.rtt_kalman.x > rtt as f64 + NEW_PATH_RTT_DROP_US {
                    self.reconfig_max_bw = self.latest_bw;
                }
            }
        }
        if !s.app_limited || bw >= self.max_bw() {
            self.bw.update(self.rtt_cnt, bw);
        }
        self.latest_bw = bw;
    }

    fn advance_cycle_phase(&mut self, now: u64) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = now;
    }

    fn update_cycle_phase(&mut self, s: &AckSample) {
        if self.mode != Mode::Cruise {
            return;
        }
        let full_length = s.now_us.saturating_sub(self.cycle_stamp) > self.min_rtt_us;
        let gain = self.pacing_gain;
        let inflight = s.prior_in_flight as f64;
        let next = if gain == 1.0 {
            full_length
        } else if gain > 1.0 {
            full_length && (s.losses > 0 || inflight >= self.inflight(self.max_bw(), gain))
        } else {
            full_length || inflight <= self.inflight(self.max_bw(), 1.0)
        };
        if next {
            self.advance_cycle_phase(s.now_us);
        }
    }

    fn enter_cruise(&mut self, now: u64) {
        self.mode = Mode::Cruise;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_LEN as u64 - 1) as usize;
        self.advance_cycle_phase(now);
    }

    fn enter_startup(&mut self) {
        self.full_bw_reached = false;
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        self.mode = Mode::Startup;
    }

    fn check_full_bw_reached(&mut self, s: &AckSample) {
        if self.full_bw_reached || !self.round_start || s.app_limited {
            return;
        }
        let bw = self.max_bw();
        if bw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = bw;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, s: &AckSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            // The event (if any) has been handled: a new Startup found the new path's rate.
            self.reconfig_max_bw = 0.0;
            self.trigger = false;
            self.mode = Mode::Drain;
        }
        if self.mode == Mode::Drain && s.in_flight as f64 <= self.inflight(self.max_bw(), 1.0) {
            self.enter_cruise(s.now_us);
        }
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.prev_ca_state == CaState::Open && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn check_probe_rtt_done(&mut self, now: u64) {
        if self.probe_rtt_done.is_none_or(|d| now <= d) {
            return;
        }
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        if !self.full_bw_reached || self.trigger {
            self.enter_startup();
        } else {
            self.enter_cruise(now);
        }
        if self.trigger {
            self.bw = WindowedMax::new(BW_RTTS);
            self.bw.update(self.rtt_cnt, self.reconfig_max_bw);
        }
    }

    fn update_min_rtt(&mut self, s: &AckSample) {
        let now = s.now_us;
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN_US;
        if let Some(rtt) = s.rtt_us {
            if rtt < self.min_rtt_us || expired {
                self.min_rtt_us = rtt.max(1);
                self.min_rtt_stamp = now;
                self.has_rtt = true;
            }
        }
        if self.mode == Mode::Cruise && ((expired && self.has_rtt) || self.trigger) {
            self.mode = Mode::ProbeRtt;
            self.probe_rtt_done = None;
            self.save_cwnd();
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done {
                None => {
                    if s.in_flight <= self.probe_rtt_cwnd() {
                        self.probe_rtt_done = Some(now + PROBE_RTT_US);
                        self.probe_rtt_round_done = false;
                        self.next_rtt_delivered = s.delivered_total;
                    }
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done {
                        if now > done {
                            // The authors reset min_RTT to the sample at hand.
                            if let Some(rtt) = s.rtt_us {
                                self.min_rtt_us = rtt.max(1);
                            }
                            self.min_rtt_stamp = now;
                        }
                        self.check_probe_rtt_done(now);
                    }
                }
            }
        }
    }

    fn update_gains(&mut self) {
        let (p, c) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::Cruise => (self.phase_gain(self.cycle_idx), CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let rate = bw * gain * (1.0 - PACING_MARGIN);
        if (self.full_bw_reached || rate > self.pacing_rate) && rate > 0.0 {
            self.pacing_rate = rate;
        }
    }

    fn recover_or_restore(&mut self, s: &AckSample) -> Option<u32> {
        let mut cwnd = self.cwnd;
        if s.losses > 0 {
            cwnd = cwnd.saturating_sub(s.losses).max(1);
        }
        let entering = s.ca_state == CaState::Recovery && self.prev_ca_state != CaState::Recovery;
        if entering {
            self.packet_conservation = true;
            self.next_rtt_delivered = s.delivered_total;
            cwnd = s.in_flight + s.acked_sacked;
        } else if self.prev_ca_state != CaState::Open && s.ca_state == CaState::Open {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = s.ca_state;
        if self.packet_conservation {
            return Some(cwnd.max(s.in_flight + s.acked_sacked));
        }
        self.cwnd = cwnd;
        None
    }

    fn set_cwnd(&mut self, s: &AckSample, bw: f64) {
        if s.acked_sacked > 0 {
            if let Some(c) = self.recover_or_restore(s) {
                self.cwnd = c;
            } else {
                let target = self.quantization_budget(self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd(bw)) as u32;
                if self.full_bw_reached {
                    self.cwnd = (self.cwnd + s.acked_sacked).min(target);
                } else if self.cwnd < target || s.delivered_total < self.init_cwnd as u64 {
                    self.cwnd += s.acked_sacked;
                }
                self.cwnd = self.cwnd.max(MIN_CWND);
            }
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// The spread of a full set of probe RTTs: sorted[95 %] − sorted[5 %].
    fn spread_of(samples: &mut [u64]) -> u64 {
        samples.sort_unstable();
        let n = samples.len();
        samples[n * SPREAD_HIGH_PCT / 100] - samples[n * SPREAD_LOW_PCT / 100]
    }

    /// `min_rtt_fluctuation` now, µs.
    pub fn fluctuation_us(&self) -> u64 {
        self.fluctuation_us
    }
}

impl Controller for LeoccRef {
    fn name(&self) -> &'static str {
        "leocc-ref"
    }

    fn on_ack(&mut self, s: &AckSample) {
        if !self.has_rtt {
            if let Some(r) = s.rtt_us {
                self.pacing_rate = HIGH_GAIN * self.init_cwnd as f64 * self.mss * 1e6 / r.max(1) as f64;
            }
        }
        // The bandwidth Kalman filter takes the round just completed, once per round, in cruise.
        let valid = s.delivered >= 0 && s.interval_us > 0;
        if self.mode == Mode::Cruise && valid && s.prior_delivered >= self.next_rtt_delivered {
            self.bw_kalman.update(self.round_max_bw);
        }
        self.update_bw(s);
        self.update_ack_aggregation(s);
        self.update_cycle_phase(s);
        self.check_full_bw_reached(s);
        self.check_drain(s);
        self.update_min_rtt(s);
        self.update_gains();
        if let Some(rtt) = s.rtt_us {
            self.rtt_kalman.update(rtt as f64);
        }
        let mut bw = self.max_bw();
        self.congested = self.fluctuation_us > 0
            && self.min_rtt_us != u64::MAX
            && self.rtt_kalman.x >= DELTA_RTT_US + (self.min_rtt_us + self.fluctuation_us) as f64
            && !self.trigger
            && self.mode == Mode::Cruise;
        if self.congested {
            bw = self.bw_kalman.x;
            self.bco = BCO_CONGESTED;
        } else {
            self.bco = BCO;
        }
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(s, bw);
    }

    fn on_congestion_event(&mut self, _now_us: u64, _in_flight: u32) {
        self.save_cwnd();
    }

    fn on_rto(&mut self, _now_us: u64) {
        self.save_cwnd();
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        self.cwnd = 1;
    }

    fn on_reconfig(&mut self, _ev: &ReconfigEvent) {
        self.reconfigs += 1;
        self.trigger = true;
        self.spread = Spread { armed: true, start_us: None, samples: Vec::with_capacity(SPREAD_SAMPLES) };
    }

    fn on_path(&mut self, now_us: u64, term_pop_rtt_us: u64) {
        let sp = &mut self.spread;
        if sp.armed {
            // The first reply after the event: collection starts one probe RTT later.
            sp.armed = false;
            sp.start_us = Some(now_us + term_pop_rtt_us);
            return;
        }
        let Some(start) = sp.start_us else { return };
        if now_us < start {
            return;
        }
        sp.samples.push(term_pop_rtt_us);
        if sp.samples.len() >= SPREAD_SAMPLES {
            self.fluctuation_us = Self::spread_of(&mut sp.samples);
            self.spreads_measured += 1;
            self.spread = Spread::default();
        }
    }

    fn cwnd(&self) -> u32 {
        self.cwnd.max(1)
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate)
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let mbps = |b: f64| b * 8.0 / 1e6;
        vec![
            ("mode", self.mode as u8 as f64),
            ("congested", self.congested as u8 as f64),
            ("bw_max_mbps", mbps(self.max_bw())),
            ("bw_kalman_mbps", mbps(self.bw_kalman.x)),
            ("rtt_kalman_ms", self.rtt_kalman.x / 1e3),
            ("min_rtt_ms", if self.min_rtt_us == u64::MAX { 0.0 } else { self.min_rtt_us as f64 / 1e3 }),
            ("fluctuation_ms", self.fluctuation_us as f64 / 1e3),
            ("reconfig_pending", self.trigger as u8 as f64),
            ("reconfigs", self.reconfigs as f64),
            ("spreads_measured", self.spreads_measured as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::ack;

    const RATE_PPS: f64 = 10e6 / 8.0 / 1448.0;

    /// Feeds `n` ACKs 5 ms apart on a 10 Mbit/s path with the given RTT; returns the time after.
    fn drive(c: &mut LeoccRef, start_us: u64, n: u64, rtt_us: u64, delivered: &mut u64) -> u64 {
        let mut now = start_us;
        for _ in 0..n {
            now += 5_000;
            let mut s = ack(now, 6, CaState::Open);
            *delivered += 6;
            s.delivered = (RATE_PPS * 0.02) as i64;
            s.interval_us = 20_000;
            s.prior_delivered = delivered.saturating_sub(30);
            s.delivered_total = *delivered;
            s.rtt_us = Some(rtt_us);
            let inflight = c.cwnd().min(12);
            s.prior_in_flight = inflight;
            s.in_flight = inflight;
            c.on_ack(&s);
        }
        now
    }

    fn cfg() -> CcConfig {
        CcConfig { mss: 1448, init_cwnd: 10, seed: 5, params: Vec::new() }
    }

    #[test]
    fn reaches_cruise_and_paces_near_the_rate() {
        let mut c = LeoccRef::new(&cfg());
        let mut d = 0;
        drive(&mut c, 0, 600, 20_000, &mut d);
        assert_eq!(c.mode, Mode::Cruise, "{c:?}");
        let pacing = c.pacing_rate().unwrap() * 8.0 / 1e6;
        assert!(pacing > 7.0 && pacing < 13.0, "pacing {pacing} Mbit/s");
        assert!((c.bw_kalman.x * 8.0 / 1e6 - 10.0).abs() < 0.5, "kalman bw {}", c.bw_kalman.x * 8.0 / 1e6);
        assert!((c.rtt_kalman.x - 20_000.0).abs() < 1.0);
        assert!(!c.congested);
    }

    #[test]
    fn an_event_caps_the_window_then_starts_up_again() {
        let mut c = LeoccRef::new(&cfg());
        let mut d = 0;
        let mut now = drive(&mut c, 0, 600, 20_000, &mut d);
        assert_eq!(c.mode, Mode::Cruise);
        c.on_reconfig(&ReconfigEvent { time_us: now, seq: 1, now_us: now, confidence: 100 });
        now = drive(&mut c, now, 1, 20_000, &mut d);
        assert_eq!(c.mode, Mode::ProbeRtt);
        // 0.5 × 10 Mbit/s × 20 ms = 8.6 packets.
        let cap = c.cwnd();
        assert!((8..=10).contains(&cap), "cwnd {cap}");
        // Still capped 150 ms later; after 200 ms and a round, Startup with min RTT reset.
        now = drive(&mut c, now, 30, 30_000, &mut d);
        assert_eq!(c.mode, Mode::ProbeRtt);
        assert!(c.cwnd() <= 10);
        drive(&mut c, now, 20, 30_000, &mut d);
        assert!(matches!(c.mode, Mode::Startup | Mode::Drain | Mode::Cruise), "{:?}", c.mode);
        assert_eq!(c.min_rtt_us, 30_000, "min RTT reset to the new path's");
        let mut c2 = c.clone();
        drive(&mut c2, now, 600, 30_000, &mut d);
        assert_eq!(c2.mode, Mode::Cruise, "Startup finished on the new path");
        assert!(!c2.trigger, "the event is handled");
    }

    #[test]
    fn congestion_test_uses_the_probe_spread() {
        let mut c = LeoccRef::new(&cfg());
        let mut d = 0;
        let mut now = drive(&mut c, 0, 600, 20_000, &mut d);
        // 8 ms above min RTT: below the 10 ms default, not congested.
        now = drive(&mut c, now, 10, 28_000, &mut d);
        assert!(!c.congested);
        // A reconfiguration, then probe RTTs spread over 30–33 ms (p95 − p5 ≈ 3 ms).
        c.on_reconfig(&ReconfigEvent { time_us: now, seq: 1, now_us: now, confidence: 100 });
        let mut t = now;
        c.on_path(t, 30_000);
        for i in 0..120u64 {
            t += 10_000;
            c.on_path(t, 30_000 + (i * 37 % 100) * 33);
        }
        let f = c.fluctuation_us();
        assert!((2_500..=3_300).contains(&f), "spread {f}");
        // Let the event's ProbeRTT and Startup finish on the same path.
        now = drive(&mut c, now, 800, 20_000, &mut d);
        assert_eq!(c.mode, Mode::Cruise);
        assert!(!c.trigger);
        // Now 8 ms above min RTT is more than min RTT + 3 ms: congested, Kalman bandwidth, 1.05.
        drive(&mut c, now, 10, 28_000, &mut d);
        assert!(c.congested);
        assert_eq!(c.bco, BCO_CONGESTED);
    }

    #[test]
    fn a_zero_spread_switches_the_test_off() {
        let mut c = LeoccRef::new(&cfg());
        c.on_reconfig(&ReconfigEvent { time_us: 0, seq: 1, now_us: 0, confidence: 100 });
        for i in 0..120u64 {
            c.on_path(i * 10_000, 25_000);
        }
        assert_eq!(c.fluctuation_us(), 0);
        let mut d = 0;
        let now = drive(&mut c, 0, 800, 20_000, &mut d);
        drive(&mut c, now, 10, 60_000, &mut d);
        assert!(!c.congested);
    }

    #[test]
    fn in_the_simulator_each_detected_outage_sends_it_through_probe_rtt_and_startup() {
        use crate::{constant_trace, run, Scenario};
        let outages = [(6_000_000, 80_000), (13_000_000, 80_000)];
        let t = std::sync::Arc::new(constant_trace(20.0, 15_000, 20_000_000, &outages));
        let mut sc = Scenario::new(t, "outages", "leocc-ref", 20_000_000);
        sc.timeseries = true;
        let r = run(&sc).unwrap();
        assert_eq!(r.reconfigs_detected, 2);
        assert!(r.utilization > 0.85, "utilisation {}", r.utilization);
        let st = |row: &crate::TsRow, k: &str| row.state.iter().find(|(n, _)| n == k).map(|&(_, v)| v).unwrap();
        let last = r.timeseries.last().unwrap();
        assert_eq!(st(last, "reconfigs"), 2.0);
        assert_eq!(st(last, "reconfig_pending"), 0.0, "both events handled");
        // A constant path: the probes' spread is 0, which switches the congestion test off.
        assert_eq!(st(last, "spreads_measured"), 2.0);
        assert_eq!(st(last, "fluctuation_ms"), 0.0);
        for &(start, len) in &outages {
            let after = |row: &&crate::TsRow| {
                let t = (row.t_s * 1e6) as u64;
                t > start + len && t < start + len + 1_000_000
            };
            let modes: Vec<f64> = r.timeseries.iter().filter(after).map(|row| st(row, "mode")).collect();
            assert!(modes.contains(&(Mode::ProbeRtt as u8 as f64)), "no ProbeRTT after the outage at {start}: {modes:?}");
            assert!(modes.contains(&(Mode::Startup as u8 as f64)), "no Startup after the outage at {start}: {modes:?}");
        }
    }

    #[test]
    fn kalman_settles_to_a_constant_input() {
        let mut k = Kalman::new();
        for _ in 0..50 {
            k.update(100.0);
        }
        assert!((k.x - 100.0).abs() < 1e-6);
        // Steady-state covariance solves P² + 4P − 16 = 0.
        assert!((k.p - (-2.0 + 20f64.sqrt())).abs() < 1e-6, "{}", k.p);
    }
}
