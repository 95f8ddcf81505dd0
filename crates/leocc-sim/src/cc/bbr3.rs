//! BBRv3 (Cardwell et al., draft-ietf-ccwg-bbr, and Google's Linux tcp_bbr.c v3 release),
//! without ECN.
//!
//! Same core model as v1 (max delivery rate, min RTT, pacing = gain × bw), plus bounds
//! learned from loss:
//! - inflight_hi (long-term): set when a bandwidth probe meets too much loss — a rate
//!   sample whose packet saw more than 2 % of its send-time inflight lost — to
//!   max(tx_in_flight, β · BDP) with β = 0.7; raised again while probing UP by 1, 2, 4, …
//!   packets per round (slope doubling each round).
//! - bw_lo / inflight_lo (short-term): in every round with loss outside bandwidth probing,
//!   set to max(latest, β × previous); reset when the next probe starts (REFILL).
//!
//! Modes: STARTUP (pacing gain 2.77 = 4 ln 2, cwnd gain 2) ends on a bandwidth plateau
//! (3 rounds < 25 % growth) or on high loss (≥ 6 lossy ACKs in a round with inflight too
//! high, setting inflight_hi = BDP); DRAIN (pacing 0.35) until inflight ≤ BDP; PROBE_BW as
//! DOWN (pacing 0.9) → CRUISE (1.0, inflight capped at inflight_hi·(1 − 0.15 headroom)) →
//! REFILL (1.0, one round) → UP (1.25, cwnd gain 2.25) → DOWN, the next probe after a random
//! 2–3 s or after min(BDP, 63) rounds (Reno coexistence); PROBE_RTT every 5 s for 200 ms at
//! half a BDP. The max-bw filter covers the last two probe cycles. In DOWN and UP cwnd is
//! capped at inflight_hi, in CRUISE at inflight_hi with headroom, and always at inflight_lo.

use super::{AckSample, CaState, CcConfig, Controller};
use crate::rng::Rng;

/// STARTUP pacing gain, 4 ln 2 (draft §5.1.1: BBRStartupPacingGain).
const STARTUP_PACING_GAIN: f64 = 2.77;
/// STARTUP and PROBE_BW cwnd gain (draft: BBRDefaultCwndGain).
const CWND_GAIN: f64 = 2.0;
/// DRAIN pacing gain (draft: BBRDrainPacingGain, v3 bbr_drain_gain 1000/2885).
const DRAIN_PACING_GAIN: f64 = 0.35;
/// PROBE_BW_DOWN pacing gain.
const DOWN_PACING_GAIN: f64 = 0.9;
/// PROBE_BW_UP pacing gain.
const UP_PACING_GAIN: f64 = 1.25;
/// PROBE_BW_UP cwnd gain.
const UP_CWND_GAIN: f64 = 2.25;
/// Loss rate that marks inflight as too high (draft: BBRLossThresh 2 %).
pub(crate) const LOSS_THRESH: f64 = 0.02;
/// Multiplicative decrease on loss (draft: BBRBeta 0.7).
pub(crate) const BETA: f64 = 0.7;
/// Headroom left below inflight_hi while cruising (draft: BBRHeadroom 0.15).
const HEADROOM: f64 = 0.15;
/// Lossy ACKs in a round that can end STARTUP (v3 bbr_full_loss_cnt).
const FULL_LOSS_CNT: u32 = 6;
/// Plateau detection as v1.
const FULL_BW_THRESH: f64 = 1.25;
/// Rounds without growth that mean the pipe is full (as v1).
const FULL_BW_CNT: u32 = 3;
/// Min RTT filter window (draft: MinRTTFilterLen 10 s).
const MIN_RTT_WIN_US: u64 = 10_000_000;
/// ProbeRTT interval (draft: ProbeRTTInterval 5 s).
pub(crate) const PROBE_RTT_INTERVAL_US: u64 = 5_000_000;
/// ProbeRTT duration (draft: ProbeRTTDuration 200 ms).
const PROBE_RTT_US: u64 = 200_000;
/// ProbeRTT cwnd, fraction of BDP (draft: BBRProbeRTTCwndGain 0.5).
const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Base wait before the next bandwidth probe, plus a random 0–1 s (draft §5.3.3.5).
const PROBE_WAIT_BASE_US: u64 = 2_000_000;
/// Random part of the wait before the next bandwidth probe.
const PROBE_WAIT_RAND_US: u64 = 1_000_000;
/// Reno-coexistence cap on rounds between probes.
const MAX_PROBE_ROUNDS: f64 = 63.0;
/// Smallest cwnd (draft: BBRMinPipeCwnd 4).
const MIN_CWND: f64 = 4.0;
/// Pacing margin (draft: BBRPacingMarginPercent 1 %).
const PACING_MARGIN: f64 = 0.01;
/// Send quantum budget, as v1 (3 quanta of ~1 ms at the pacing rate).
const QUANTUM_US: f64 = 1000.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Startup,
    Drain,
    Down,
    Cruise,
    Refill,
    Up,
    ProbeRtt,
}

/// BBRv3.
#[derive(Clone, Debug)]
pub struct Bbr3 {
    mss: f64,
    init_cwnd: f64,
    mode: Mode,
    rng: Rng,
    bw_hi: [f64; 2],
    bw_lo: f64,
    bw_latest: f64,
    inflight_hi: f64,
    inflight_lo: f64,
    inflight_latest: f64,
    min_rtt_us: u64,
    min_rtt_stamp: u64,
    probe_rtt_min_us: u64,
    probe_rtt_min_stamp: u64,
    probe_rtt_done: Option<u64>,
    probe_rtt_round_done: bool,
    mode_before_probe_rtt: Mode,
    next_round_delivered: u64,
    round_start: bool,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_events_in_round: u32,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    cycle_stamp: u64,
    probe_wait_us: u64,
    rounds_since_probe: u64,
    probe_up_cnt: f64,
    probe_up_acks: f64,
    probe_up_rounds: u32,
    bw_probe_samples: bool,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing_rate: f64,
    cwnd: f64,
    prior_cwnd: f64,
    prev_ca_state: CaState,
    packet_conservation: bool,
    /// `bbr3.probe_rtt_interval_ms`, us.
    probe_rtt_interval_us: u64,
    /// `bbr3.loss_thresh`.
    loss_thresh: f64,
    /// `bbr3.beta`.
    beta: f64,
}

impl Bbr3 {
    /// A BBRv3 controller with `cfg`'s `bbr3.NAME=VALUE` settings; a refused one is the error.
    pub fn new(cfg: &CcConfig) -> Result<Self, String> {
        let mss = cfg.mss as f64;
        let p = super::param::resolve("bbr3", &cfg.params)?;
        Ok(Bbr3 {
            probe_rtt_interval_us: (p.get("probe_rtt_interval_ms") * 1000.0) as u64,
            loss_thresh: p.get("loss_thresh"),
            beta: p.get("beta"),
            mss,
            init_cwnd: cfg.init_cwnd as f64,
            mode: Mode::Startup,
            rng: Rng::new(cfg.seed),
            bw_hi: [0.0; 2],
            bw_lo: f64::INFINITY,
            bw_latest: 0.0,
            inflight_hi: f64::INFINITY,
            inflight_lo: f64::INFINITY,
            inflight_latest: 0.0,
            min_rtt_us: u64::MAX,
            min_rtt_stamp: 0,
            probe_rtt_min_us: u64::MAX,
            probe_rtt_min_stamp: 0,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            mode_before_probe_rtt: Mode::Startup,
            next_round_delivered: 0,
            round_start: false,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_in_round: false,
            loss_events_in_round: 0,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_stamp: 0,
            probe_wait_us: PROBE_WAIT_BASE_US,
            rounds_since_probe: 0,
            probe_up_cnt: f64::INFINITY,
            probe_up_acks: 0.0,
            probe_up_rounds: 0,
            bw_probe_samples: false,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: CWND_GAIN,
            pacing_rate: STARTUP_PACING_GAIN * cfg.init_cwnd as f64 * mss * 1e6 / 1000.0,
            cwnd: cfg.init_cwnd as f64,
            prior_cwnd: 0.0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
        })
    }

    fn max_bw(&self) -> f64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    fn bw(&self) -> f64 {
        self.max_bw().min(self.bw_lo)
    }

    fn bdp(&self, bw: f64, gain: f64) -> f64 {
        if self.min_rtt_us == u64::MAX {
            return self.init_cwnd;
        }
        (bw * self.min_rtt_us as f64 / 1e6 / self.mss * gain).ceil()
    }

    fn quanta(&self) -> f64 {
        3.0 * (self.pacing_rate * QUANTUM_US / 1e6 / self.mss).floor().clamp(2.0, 44.0)
    }

    fn target_inflight(&self) -> f64 {
        self.bdp(self.bw(), 1.0)
    }

    fn inflight_with_headroom(&self) -> f64 {
        if self.inflight_hi.is_infinite() {
            return f64::INFINITY;
        }
        (self.inflight_hi - (HEADROOM * self.inflight_hi).max(1.0)).max(MIN_CWND)
    }

    fn is_inflight_too_high(&self, s: &AckSample) -> bool {
        s.lost > 0 && s.tx_in_flight > 0 && s.lost as f64 > s.tx_in_flight as f64 * self.loss_thresh
    }

    fn is_probing_bw(&self) -> bool {
        matches!(self.mode, Mode::Startup | Mode::Refill | Mode::Up)
    }

    fn update_rounds_and_bw(&mut self, s: &AckSample) {
        self.round_start = false;
        self.loss_round_start = false;
        if s.delivered < 0 || s.interval_us <= 0 {
            return;
        }
        if s.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = s.delivered_total;
            self.round_start = true;
            self.rounds_since_probe += 1;
            self.packet_conservation = false;
        }
        let bw = s.delivered as f64 * self.mss * 1e6 / s.interval_us as f64;
        if !s.app_limited || bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(bw);
        }
        self.bw_latest = self.bw_latest.max(bw);
        self.inflight_latest = self.inflight_latest.max(s.delivered as f64);
        self.loss_in_round |= s.losses > 0;
        if s.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = s.delivered_total;
            self.loss_round_start = true;
            self.adapt_lower_bounds();
            self.loss_in_round = false;
        }
    }

    /// Short-term bounds from a lossy round (draft: BBRAdaptLowerBoundsFromCongestion).
    fn adapt_lower_bounds(&mut self) {
        if self.is_probing_bw() || !self.loss_in_round {
            return;
        }
        if self.bw_lo.is_infinite() {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo.is_infinite() {
            self.inflight_lo = self.cwnd;
        }
        self.bw_lo = self.bw_latest.max(self.beta * self.bw_lo);
        self.inflight_lo = self.inflight_latest.max(self.beta * self.inflight_lo);
    }

    fn check_startup_done(&mut self, s: &AckSample) {
        if self.full_bw_reached {
            return;
        }
        if s.losses > 0 {
            self.loss_events_in_round += 1;
        }
        if self.loss_round_start
            && s.ca_state == CaState::Recovery
            && self.loss_events_in_round >= FULL_LOSS_CNT
            && self.is_inflight_too_high(s)
        {
            self.full_bw_reached = true;
            self.inflight_hi = self.bdp(self.max_bw(), 1.0).max(self.inflight_latest);
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
        if !self.full_bw_reached && self.round_start && !s.app_limited {
            let bw = self.max_bw();
            if bw >= self.full_bw * FULL_BW_THRESH {
                self.full_bw = bw;
                self.full_bw_cnt = 0;
            } else {
                self.full_bw_cnt += 1;
                self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
            }
        }
        if self.full_bw_reached && self.mode == Mode::Startup {
            self.mode = Mode::Drain;
        }
    }

    fn start_down(&mut self, now: u64) {
        self.mode = Mode::Down;
        self.cycle_stamp = now;
        self.probe_up_cnt = f64::INFINITY;
        self.bw_probe_samples = false;
        self.rounds_since_probe = 0;
        self.probe_wait_us = PROBE_WAIT_BASE_US + self.rng.below(PROBE_WAIT_RAND_US);
        // A new cycle: the max-bw filter keeps this cycle and the previous one.
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0.0;
    }

    fn start_refill(&mut self, now: u64) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = f64::INFINITY;
        self.probe_up_rounds = 0;
        self.probe_up_acks = 0.0;
        self.mode = Mode::Refill;
        self.cycle_stamp = now;
    }

    fn start_up(&mut self, now: u64) {
        self.mode = Mode::Up;
        self.cycle_stamp = now;
        self.bw_probe_samples = true;
        self.raise_inflight_hi_slope();
    }

    fn raise_inflight_hi_slope(&mut self) {
        let growth = (1u64 << self.probe_up_rounds.min(30)) as f64;
        self.probe_up_rounds += 1;
        self.probe_up_cnt = (self.cwnd / growth).max(1.0);
    }

    fn probe_inflight_hi_upward(&mut self, s: &AckSample) {
        let cwnd_limited = s.prior_in_flight as f64 + 1.0 >= self.cwnd;
        if !cwnd_limited || self.cwnd < self.inflight_hi {
            return;
        }
        self.probe_up_acks += s.acked_sacked as f64;
        if self.probe_up_acks >= self.probe_up_cnt {
            let delta = (self.probe_up_acks / self.probe_up_cnt).floor();
            self.probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_hi += delta;
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    fn time_to_probe(&mut self, s: &AckSample) -> bool {
        let waited = s.now_us - self.cycle_stamp > self.probe_wait_us;
        let reno_rounds = self.rounds_since_probe as f64 >= self.target_inflight().min(MAX_PROBE_ROUNDS);
        if waited || reno_rounds {
            self.start_refill(s.now_us);
            return true;
        }
        false
    }

    /// Upper bounds and the PROBE_BW state machine (v3 bbr_update_cycle_phase).
    fn update_cycle_phase(&mut self, s: &AckSample) {
        if !self.full_bw_reached {
            return;
        }
        if self.is_inflight_too_high(s) {
            if self.bw_probe_samples {
                if !s.app_limited {
                    self.inflight_hi = (s.tx_in_flight as f64).max(self.target_inflight() * self.beta);
                }
                self.bw_probe_samples = false;
                if self.mode == Mode::Up {
                    self.start_down(s.now_us);
                    return;
                }
            }
        } else if self.inflight_hi.is_finite() {
            self.inflight_hi = self.inflight_hi.max(s.tx_in_flight as f64);
            if self.mode == Mode::Up {
                self.probe_inflight_hi_upward(s);
            }
        }
        let inflight = s.prior_in_flight as f64;
        let bw = self.max_bw();
        match self.mode {
            Mode::Drain => {
                if s.in_flight as f64 <= self.bdp(bw, 1.0) {
                    self.start_down(s.now_us);
                }
            }
            Mode::Cruise => {
                self.time_to_probe(s);
            }
            Mode::Refill => {
                if self.round_start {
                    self.start_up(s.now_us);
                }
            }
            Mode::Up => {
                let elapsed = s.now_us - self.cycle_stamp > self.min_rtt_us;
                if elapsed && inflight > self.bdp(bw, UP_PACING_GAIN) {
                    self.start_down(s.now_us);
                }
            }
            Mode::Down => {
                if !self.time_to_probe(s) && inflight <= self.inflight_with_headroom() && inflight <= self.bdp(bw, 1.0) {
                    self.mode = Mode::Cruise;
                }
            }
            Mode::Startup | Mode::ProbeRtt => {}
        }
    }

    fn update_min_rtt(&mut self, s: &AckSample) {
        let now = s.now_us;
        let probe_expired = now > self.probe_rtt_min_stamp + self.probe_rtt_interval_us;
        if let Some(rtt) = s.rtt_us {
            if rtt < self.probe_rtt_min_us || probe_expired {
                self.probe_rtt_min_us = rtt.max(1);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_expired = now > self.min_rtt_stamp + MIN_RTT_WIN_US;
        if self.probe_rtt_min_us <= self.min_rtt_us || min_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if probe_expired && self.mode != Mode::ProbeRtt && self.min_rtt_us != u64::MAX {
            self.mode_before_probe_rtt = self.mode;
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done = None;
        }
        if self.mode != Mode::ProbeRtt {
            return;
        }
        match self.probe_rtt_done {
            None if s.in_flight as f64 <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done = Some(now + PROBE_RTT_US);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = s.delivered_total;
            }
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.probe_rtt_min_stamp = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    if self.full_bw_reached {
                        self.start_down(now);
                        self.mode = Mode::Cruise;
                    } else {
                        self.mode = Mode::Startup;
                    }
                }
            }
            None => {}
        }
    }

    fn probe_rtt_cwnd(&self) -> f64 {
        self.bdp(self.bw(), PROBE_RTT_CWND_GAIN).max(MIN_CWND)
    }

    fn update_gains(&mut self) {
        let (p, c) = match self.mode {
            Mode::Startup => (STARTUP_PACING_GAIN, CWND_GAIN),
            Mode::Drain => (DRAIN_PACING_GAIN, CWND_GAIN),
            Mode::Down => (DOWN_PACING_GAIN, CWND_GAIN),
            Mode::Cruise | Mode::Refill => (1.0, CWND_GAIN),
            Mode::Up => (UP_PACING_GAIN, UP_CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.prev_ca_state == CaState::Open && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn set_cwnd(&mut self, s: &AckSample) {
        let acked = s.acked_sacked as f64;
        if acked > 0.0 {
            let mut cwnd = self.cwnd;
            if s.losses > 0 {
                cwnd = (cwnd - s.losses as f64).max(1.0);
            }
            let entering = s.ca_state == CaState::Recovery && self.prev_ca_state != CaState::Recovery;
            if entering {
                self.packet_conservation = true;
                self.next_round_delivered = s.delivered_total;
                cwnd = (s.in_flight as f64) + acked;
            } else if self.prev_ca_state != CaState::Open && s.ca_state == CaState::Open {
                cwnd = cwnd.max(self.prior_cwnd);
                self.packet_conservation = false;
            }
            self.prev_ca_state = s.ca_state;
            if self.packet_conservation {
                cwnd = cwnd.max(s.in_flight as f64 + acked);
            } else {
                let target = self.bdp(self.bw(), self.cwnd_gain) + self.quanta();
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || (s.delivered_total as f64) < self.init_cwnd {
                    cwnd += acked;
                }
                cwnd = cwnd.max(MIN_CWND);
            }
            self.cwnd = cwnd;
        }
        // Bound by the inflight model (v3 bbr_bound_cwnd_for_inflight_model).
        let mut cap = match self.mode {
            Mode::Down | Mode::Refill | Mode::Up => self.inflight_hi,
            Mode::Cruise | Mode::ProbeRtt => self.inflight_with_headroom(),
            _ => f64::INFINITY,
        };
        cap = cap.min(self.inflight_lo).max(MIN_CWND);
        self.cwnd = self.cwnd.min(cap);
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    fn set_pacing_rate(&mut self, s: &AckSample) {
        if self.min_rtt_us == u64::MAX {
            if let Some(r) = s.rtt_us {
                self.pacing_rate = STARTUP_PACING_GAIN * self.init_cwnd * self.mss * 1e6 / r.max(1) as f64;
            }
            return;
        }
        let rate = self.bw() * self.pacing_gain * (1.0 - PACING_MARGIN);
        if (self.full_bw_reached || rate > self.pacing_rate) && rate > 0.0 {
            self.pacing_rate = rate;
        }
    }
}

impl Controller for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    fn on_ack(&mut self, s: &AckSample) {
        self.update_rounds_and_bw(s);
        self.check_startup_done(s);
        self.update_cycle_phase(s);
        self.update_min_rtt(s);
        if self.loss_round_start {
            self.bw_latest = s.delivery_rate().unwrap_or(0.0);
            self.inflight_latest = s.delivered.max(0) as f64;
        }
        self.update_gains();
        self.set_pacing_rate(s);
        self.set_cwnd(s);
    }

    fn on_congestion_event(&mut self, _now_us: u64, _in_flight: u32) {
        self.save_cwnd();
    }

    fn on_rto(&mut self, _now_us: u64) {
        self.save_cwnd();
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.cwnd = 1.0;
    }

    fn cwnd(&self) -> u32 {
        self.cwnd.max(1.0) as u32
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate)
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let fin = |x: f64| if x.is_finite() { x } else { -1.0 };
        vec![
            ("mode", self.mode as u8 as f64),
            ("bw_mbps", self.bw() * 8.0 / 1e6),
            ("inflight_hi", fin(self.inflight_hi)),
            ("inflight_lo", fin(self.inflight_lo)),
            ("min_rtt_ms", if self.min_rtt_us == u64::MAX { 0.0 } else { self.min_rtt_us as f64 / 1e3 }),
        ]
    }
}
