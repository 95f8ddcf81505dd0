//! TCP Vegas (Brakmo & Peterson, IEEE JSAC 1995; Linux net/ipv4/tcp_vegas.c).
//!
//! Once per round trip: expected = cwnd / baseRTT, actual = cwnd / RTT (RTT = the minimum
//! sample of the last round), diff = (expected − actual) · baseRTT = cwnd (RTT − baseRTT) / RTT
//! packets queued. Congestion avoidance: diff < α (2) ⇒ cwnd + 1; diff > β (4) ⇒ cwnd − 1.
//! Slow start doubles every other round trip and ends when diff > γ (1), setting cwnd to
//! the target cwnd·baseRTT/RTT + 1. Losses fall back to Reno (halve). baseRTT is the
//! minimum RTT ever seen (Linux).

use super::reno::RenoWindow;
use super::{AckSample, CaState, CcConfig, Controller};

/// Lower bound of packets queued (Linux vegas alpha).
const ALPHA: f64 = 2.0;
/// Upper bound of packets queued (Linux vegas beta).
const BETA: f64 = 4.0;
/// Slow-start exit threshold (Linux vegas gamma).
const GAMMA: f64 = 1.0;
/// Smallest window Vegas sets, packets.
const MIN_CWND: u32 = 2;

/// Vegas.
#[derive(Clone, Debug)]
pub struct Vegas {
    w: RenoWindow,
    base_rtt_us: u64,
    round_min_rtt_us: u64,
    round_end: u64,
    rounds: u64,
}

impl Vegas {
    /// A Vegas controller.
    pub fn new(cfg: &CcConfig) -> Self {
        Vegas { w: RenoWindow::new(cfg.init_cwnd), base_rtt_us: u64::MAX, round_min_rtt_us: u64::MAX, round_end: 0, rounds: 0 }
    }

    fn end_of_round(&mut self) {
        let rtt = self.round_min_rtt_us as f64;
        let base = self.base_rtt_us as f64;
        let cwnd = self.w.cwnd as f64;
        let target = cwnd * base / rtt;
        let diff = cwnd * (rtt - base) / rtt;
        if self.w.in_slow_start() {
            if diff > GAMMA {
                self.w.cwnd = self.w.cwnd.min(target as u32 + 1);
                self.w.ssthresh = self.w.cwnd.saturating_sub(1).max(MIN_CWND);
            }
        } else if diff > BETA {
            self.w.cwnd -= 1;
        } else if diff < ALPHA {
            self.w.cwnd += 1;
        }
        self.w.cwnd = self.w.cwnd.max(MIN_CWND);
    }
}

impl Controller for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_ack(&mut self, s: &AckSample) {
        if let Some(r) = s.rtt_us {
            self.base_rtt_us = self.base_rtt_us.min(r);
            self.round_min_rtt_us = self.round_min_rtt_us.min(r);
        }
        if s.acked_sacked == 0 || !s.ca_state.may_raise_cwnd() {
            return;
        }
        if s.ca_state == CaState::Loss {
            // Linux turns Vegas off outside the Open state (tcp_vegas_state) and grows as Reno.
            if s.is_cwnd_limited(self.w.cwnd, self.w.in_slow_start()) {
                self.w.grow(s.acked_sacked);
            }
            return;
        }
        let round_ended = s.prior_delivered >= self.round_end;
        if round_ended {
            self.round_end = s.delivered_total;
            self.rounds += 1;
        }
        // Linux falls back to Reno when a round produced fewer than 3 RTT samples; we need at
        // least one sample in the round.
        if round_ended && self.round_min_rtt_us != u64::MAX && self.base_rtt_us != u64::MAX {
            self.end_of_round();
            self.round_min_rtt_us = u64::MAX;
        }
        if self.w.in_slow_start() && self.rounds.is_multiple_of(2) {
            // Vegas's slow start grows only every other round trip.
            self.w.slow_start(s.acked_sacked);
        }
    }

    fn on_congestion_event(&mut self, _now_us: u64, _in_flight: u32) {
        self.w.halve();
    }

    fn on_rto(&mut self, _now_us: u64) {
        self.w.halve();
        self.w.cwnd = 1;
    }

    fn cwnd(&self) -> u32 {
        self.w.cwnd.max(1)
    }

    fn pacing_rate(&self) -> Option<f64> {
        None
    }

    fn uses_prr(&self) -> bool {
        true
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let base = if self.base_rtt_us == u64::MAX { 0.0 } else { self.base_rtt_us as f64 / 1e3 };
        vec![("base_rtt_ms", base)]
    }
}
