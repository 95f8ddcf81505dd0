//! TCP Reno / NewReno congestion avoidance (RFC 5681, RFC 6582; Linux tcp_reno_cong_avoid).
//!
//! Slow start: cwnd += acked (appropriate byte counting, RFC 3465) until ssthresh.
//! Congestion avoidance: +1 packet per cwnd packets ACKed. On entering fast recovery:
//! ssthresh = max(cwnd / 2, 2) and cwnd = ssthresh (loss recovery itself — SACK/RACK,
//! retransmissions — is the sender's). On a timeout: ssthresh as above and cwnd = 1.
//! The window does not grow while recovering (Linux `tcp_may_raise_cwnd`).

use super::{AckSample, CcConfig, Controller};

/// Multiplicative decrease factor (RFC 5681 §3.1: half the flight size).
const BETA: f64 = 0.5;
/// Floor of ssthresh in packets (RFC 5681 eq. 4: 2 SMSS).
const MIN_SSTHRESH: u32 = 2;

/// Reno's window arithmetic, reused by the controls built on it.
#[derive(Clone, Debug)]
pub(crate) struct RenoWindow {
    pub(crate) cwnd: u32,
    pub(crate) ssthresh: u32,
    cwnd_cnt: u32,
}

impl RenoWindow {
    pub(crate) fn new(init_cwnd: u32) -> Self {
        RenoWindow { cwnd: init_cwnd, ssthresh: u32::MAX, cwnd_cnt: 0 }
    }

    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Slow start: grow by `acked` up to ssthresh; returns the ACKed packets left over.
    pub(crate) fn slow_start(&mut self, acked: u32) -> u32 {
        let grown = (self.cwnd + acked).min(self.ssthresh.max(self.cwnd));
        let left = acked - (grown - self.cwnd).min(acked);
        self.cwnd = grown;
        left
    }

    /// Linux `tcp_reno_cong_avoid`: slow start up to ssthresh, then +1 packet per window
    /// with what is left of `acked`.
    pub(crate) fn grow(&mut self, mut acked: u32) {
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.cwnd;
        self.additive_increase(cwnd, acked);
    }

    /// Linux `tcp_cong_avoid_ai`: +1 packet for every `w` packets ACKed.
    pub(crate) fn additive_increase(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }

    pub(crate) fn halve(&mut self) {
        self.ssthresh = ((self.cwnd as f64 * BETA) as u32).max(MIN_SSTHRESH);
        self.cwnd = self.ssthresh;
        self.cwnd_cnt = 0;
    }
}

/// Reno.
#[derive(Clone, Debug)]
pub struct Reno {
    w: RenoWindow,
}

impl Reno {
    /// A Reno controller.
    pub fn new(cfg: &CcConfig) -> Self {
        Reno { w: RenoWindow::new(cfg.init_cwnd) }
    }
}

impl Controller for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, s: &AckSample) {
        if !s.ca_state.may_raise_cwnd() || s.acked_sacked == 0 || !s.is_cwnd_limited(self.w.cwnd, self.w.in_slow_start()) {
            return;
        }
        self.w.grow(s.acked_sacked);
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
        vec![("ssthresh", self.w.ssthresh.min(1 << 30) as f64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::ack;
    use crate::cc::CaState;

    #[test]
    fn slow_start_then_halving_then_linear_growth() {
        let mut r = Reno::new(&CcConfig { mss: 1448, init_cwnd: 10, seed: 0, params: Vec::new() });
        r.on_ack(&ack(0, 10, CaState::Open));
        assert_eq!(r.cwnd(), 20, "slow start: +1 per ACKed packet");
        r.on_congestion_event(1, 20);
        assert_eq!(r.cwnd(), 10, "halved on loss");
        r.on_ack(&ack(2, 5, CaState::Recovery));
        assert_eq!(r.cwnd(), 10, "no growth in recovery");
        for i in 0..10 {
            r.on_ack(&ack(3 + i, 1, CaState::Open));
        }
        assert_eq!(r.cwnd(), 11, "+1 per window in congestion avoidance");
        r.on_rto(100);
        assert_eq!(r.cwnd(), 1);
        r.on_ack(&ack(101, 2, CaState::Loss));
        assert_eq!(r.cwnd(), 3, "slow start retransmits the window lost at the timeout");
    }
}
