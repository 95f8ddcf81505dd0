//! PCC Vivace (Dong et al., "PCC Vivace: Online-Learning Congestion Control", NSDI 2018).
//!
//! Rate-based. Time is cut into monitor intervals (MIs) of about one smoothed RTT; each MI
//! sends at one rate x and, once all its packets are ACKed or lost, scores it with the
//! latency-aware utility (paper §3, eq. 1 with the published constants):
//!     u(x) = x^t − b · x · dRTT/dT − c · x · L,   t = 0.9, b = 900, c = 11.35, x in Mbit/s,
//! where dRTT/dT is the slope of a least-squares fit of the RTT samples of packets sent in
//! the MI (one per ACK, the newest packet's, which excludes the receiver's delayed-ACK wait)
//! against their send times, and L its loss rate. As the authors' implementation does
//! (PCC-Uspace, pcc_vivace_ucalc.cpp), RTT inflation below 0.02 — and so any decrease —
//! counts as 0: draining the queue a previous trial built is not rewarded.
//! Starting phase: double the rate every MI while the utility grows; at the first decrease
//! go back to the previous rate and start online learning. Online learning (§4): two trial
//! MIs at r(1 + ε) and r(1 − ε), ε = 0.05, in random order; gradient γ = (u₊ − u₋) / (2εr);
//! step Δr = m · θ · γ with the confidence amplifier m (1, 2, 3, … while the direction stays
//! the same, back to 1 when it flips) and θ = 1 Mbit/s per utility unit; the step is bounded
//! to ω · r, ω = 0.05 growing by 0.1 each consecutive time the bound binds (dynamic change
//! boundary), reset otherwise. Our simplification: trials and result collection are
//! sequential (no MI pipelining), so a decision takes about three RTTs.

use std::collections::VecDeque;

use super::{AckSample, CcConfig, Controller};
use crate::rng::Rng;

/// Utility exponent t (paper §3).
const T_EXP: f64 = 0.9;
/// RTT-gradient penalty b (paper §3).
const B_LATENCY: f64 = 900.0;
/// Loss penalty c (paper §3).
const C_LOSS: f64 = 11.35;
/// Probing step ε (paper §4.1).
const EPSILON: f64 = 0.05;
/// Conversion θ from gradient to rate change, Mbit/s per utility unit (our choice).
const THETA: f64 = 1.0;
/// Initial dynamic change boundary ω₀ (paper §4.2).
const OMEGA0: f64 = 0.05;
/// Increment δ of the change boundary (paper §4.2).
const OMEGA_STEP: f64 = 0.1;
/// RTT inflation below this (and any deflation) is noise (PCC-Uspace kRTTFilter).
const GRADIENT_FILTER: f64 = 0.02;
/// Slowest rate, Mbit/s.
const MIN_RATE_MBPS: f64 = 0.5;
/// MI length when no RTT is known yet.
const DEFAULT_MI_US: u64 = 100_000;
/// Fewest packets an MI carries: at low rates the MI stretches beyond one RTT so that its
/// RTT regression has enough points (PCC's implementations likewise floor the MI's packets).
const MIN_MI_PACKETS: f64 = 10.0;
/// An MI whose packets are not all resolved this many RTTs after its end is scored as is.
const MI_TIMEOUT_RTTS: u64 = 4;

#[derive(Clone, Debug)]
struct Mi {
    rate_mbps: f64,
    start_us: u64,
    end_us: u64,
    first_tx: u64,
    last_tx: u64,
    sent: u32,
    acked: u32,
    lost: u32,
    // Least-squares sums of (send time s, rtt s).
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl Mi {
    fn new(rate_mbps: f64, now: u64, len: u64) -> Mi {
        Mi { rate_mbps, start_us: now, end_us: now + len, first_tx: u64::MAX, last_tx: 0, sent: 0, acked: 0, lost: 0, n: 0.0, sx: 0.0, sy: 0.0, sxx: 0.0, sxy: 0.0 }
    }

    fn covers(&self, tx: u64) -> bool {
        self.sent > 0 && tx >= self.first_tx && tx <= self.last_tx
    }

    fn utility(&self) -> f64 {
        let x = self.rate_mbps;
        let resolved = (self.acked + self.lost).max(1) as f64;
        let loss = self.lost as f64 / resolved;
        let denom = self.n * self.sxx - self.sx * self.sx;
        let mut grad = if self.n >= 2.0 && denom.abs() > 1e-18 { (self.n * self.sxy - self.sx * self.sy) / denom } else { 0.0 };
        if grad < GRADIENT_FILTER {
            grad = 0.0;
        }
        x.powf(T_EXP) - B_LATENCY * x * grad - C_LOSS * x * loss
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// Doubling; the best (rate, utility) so far.
    Starting { prev: Option<(f64, f64)> },
    /// Two trial MIs at these rates are sent, in this order.
    Trials,
}

/// PCC Vivace.
#[derive(Clone, Debug)]
pub struct Vivace {
    mss: f64,
    rate_mbps: f64,
    phase: Phase,
    mis: VecDeque<Mi>,
    planned: VecDeque<f64>,
    results: Vec<(f64, f64)>,
    amplifier: f64,
    last_dir: f64,
    omega: f64,
    srtt_us: u64,
    rng: Rng,
    utility: f64,
    send_rate_mbps: f64,
}

impl Vivace {
    /// A Vivace controller.
    pub fn new(cfg: &CcConfig) -> Self {
        let mss = cfg.mss as f64;
        Vivace {
            mss,
            rate_mbps: cfg.init_cwnd as f64 * mss * 8.0 / DEFAULT_MI_US as f64,
            phase: Phase::Starting { prev: None },
            mis: VecDeque::new(),
            planned: VecDeque::new(),
            results: Vec::new(),
            amplifier: 1.0,
            last_dir: 0.0,
            omega: OMEGA0,
            srtt_us: 0,
            rng: Rng::new(cfg.seed),
            utility: 0.0,
            send_rate_mbps: cfg.init_cwnd as f64 * mss * 8.0 / DEFAULT_MI_US as f64,
        }
    }

    fn mi_len(&self) -> u64 {
        self.mi_len_at(self.rate_mbps)
    }

    fn mi_len_at(&self, rate_mbps: f64) -> u64 {
        let rtt = if self.srtt_us == 0 { DEFAULT_MI_US } else { self.srtt_us };
        let min_len = (MIN_MI_PACKETS * self.mss * 8.0 / rate_mbps.max(MIN_RATE_MBPS)) as u64;
        rtt.max(min_len)
    }

    /// The rate for the next MI, or None to hold the current rate unmonitored.
    fn next_mi_rate(&mut self) -> Option<f64> {
        match self.phase {
            Phase::Starting { .. } => {
                if self.mis.is_empty() { Some(self.rate_mbps) } else { None }
            }
            Phase::Trials => self.planned.pop_front(),
        }
    }

    fn open_mi_if_due(&mut self, now: u64) {
        let current_open = self.mis.back().is_some_and(|m| now < m.end_us);
        if current_open {
            return;
        }
        if let Some(r) = self.next_mi_rate() {
            let r = r.max(MIN_RATE_MBPS);
            let len = self.mi_len_at(r);
            self.mis.push_back(Mi::new(r, now, len));
        }
    }

    /// Close finished MIs, open the next one if due, and pick the rate to send at now.
    fn refresh(&mut self, now: u64) {
        self.finish_ready_mis(now);
        self.open_mi_if_due(now);
        self.send_rate_mbps = match self.mis.back() {
            Some(m) if now < m.end_us => m.rate_mbps,
            _ => self.rate_mbps,
        };
    }

    fn finish_ready_mis(&mut self, now: u64) {
        while let Some(m) = self.mis.front() {
            let closed = now >= m.end_us;
            let resolved = m.acked + m.lost >= m.sent;
            let timed_out = now > m.end_us + MI_TIMEOUT_RTTS * self.mi_len();
            if !(closed && (resolved || timed_out)) {
                break;
            }
            let m = self.mis.pop_front().expect("front exists");
            if m.sent == 0 {
                continue;
            }
            let u = m.utility();
            self.utility = u;
            self.on_result(m.rate_mbps, u);
        }
    }

    fn start_trials(&mut self) {
        self.phase = Phase::Trials;
        self.results.clear();
        let up = self.rate_mbps * (1.0 + EPSILON);
        let down = self.rate_mbps * (1.0 - EPSILON);
        self.planned.clear();
        if self.rng.chance(0.5) {
            self.planned.extend([up, down]);
        } else {
            self.planned.extend([down, up]);
        }
    }

    fn on_result(&mut self, rate: f64, u: f64) {
        match self.phase.clone() {
            Phase::Starting { prev } => match prev {
                Some((prev_rate, prev_u)) if u < prev_u => {
                    self.rate_mbps = prev_rate;
                    self.start_trials();
                }
                _ => {
                    self.phase = Phase::Starting { prev: Some((rate, u)) };
                    self.rate_mbps = rate * 2.0;
                }
            },
            Phase::Trials => {
                self.results.push((rate, u));
                if self.results.len() == 2 {
                    self.gradient_step();
                    self.start_trials();
                }
            }
        }
    }

    fn gradient_step(&mut self) {
        let r = self.rate_mbps;
        let (mut hi, mut lo) = (self.results[0], self.results[1]);
        if hi.0 < lo.0 {
            std::mem::swap(&mut hi, &mut lo);
        }
        let gamma = (hi.1 - lo.1) / (2.0 * EPSILON * r);
        let dir = gamma.signum();
        if dir == self.last_dir && dir != 0.0 {
            self.amplifier += 1.0;
        } else {
            self.amplifier = 1.0;
            self.omega = OMEGA0;
        }
        self.last_dir = dir;
        let mut step = self.amplifier * THETA * gamma;
        let bound = self.omega * r;
        if step.abs() > bound {
            step = bound * dir;
            self.omega += OMEGA_STEP;
        } else {
            self.omega = OMEGA0;
        }
        self.rate_mbps = (r + step).max(MIN_RATE_MBPS);
    }

    fn mi_of(&mut self, tx: u64) -> Option<&mut Mi> {
        self.mis.iter_mut().find(|m| m.covers(tx))
    }
}

impl Controller for Vivace {
    fn name(&self) -> &'static str {
        "vivace"
    }

    fn on_ack(&mut self, s: &AckSample) {
        if s.srtt_us > 0 {
            self.srtt_us = s.srtt_us;
        }
        if let Some(rtt) = s.rtt_us {
            let sent = s.now_us - rtt;
            if let Some(m) = self.mis.iter_mut().find(|m| sent >= m.start_us && sent < m.end_us) {
                let (x, y) = (sent as f64 / 1e6, rtt as f64 / 1e6);
                m.n += 1.0;
                m.sx += x;
                m.sy += y;
                m.sxx += x * x;
                m.sxy += x * y;
            }
        }
        self.refresh(s.now_us);
    }

    fn on_packet_sent(&mut self, now_us: u64, tx_index: u64, _in_flight: u32) {
        self.refresh(now_us);
        if let Some(m) = self.mis.back_mut() {
            if now_us < m.end_us {
                m.first_tx = m.first_tx.min(tx_index);
                m.last_tx = tx_index;
                m.sent += 1;
            }
        }
    }

    fn on_packet_acked(&mut self, _now_us: u64, tx_index: u64, _rtt_us: u64) {
        if let Some(m) = self.mi_of(tx_index) {
            m.acked += 1;
        }
    }

    fn on_packet_lost(&mut self, _now_us: u64, tx_index: u64) {
        if let Some(m) = self.mi_of(tx_index) {
            m.lost += 1;
        }
    }

    fn cwnd(&self) -> u32 {
        // Rate-based: the window only bounds inflight at twice the rate's BDP.
        let rtt = if self.srtt_us == 0 { DEFAULT_MI_US } else { self.srtt_us } as f64 / 1e6;
        let bdp = self.rate_mbps.max(self.send_rate_mbps) * 1e6 / 8.0 * rtt / self.mss;
        (2.0 * bdp + 4.0) as u32
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.send_rate_mbps * 1e6 / 8.0)
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![("rate_mbps", self.rate_mbps), ("utility", self.utility), ("amplifier", self.amplifier), ("omega", self.omega)]
    }
}
