//! CUBIC (RFC 9438; Linux net/ipv4/tcp_cubic.c).
//!
//! Window growth in congestion avoidance follows W(t) = C (t − K)³ + W_max with C = 0.4 and
//! K = ∛(W_max (1 − β) / C), t measured from the start of the epoch plus the minimum RTT
//! (as Linux does). The Reno-friendly estimate W_est = W_max β + 3(1 − β)/(1 + β) · t/RTT
//! (RFC 9438 §4.3) takes over when it is larger. Multiplicative decrease β = 0.7; fast
//! convergence (§4.7) lowers W_max when a flow releases bandwidth. Growth is at most 1.5×
//! per RTT (Linux caps the ACK count per increment at 2). HyStart as Linux runs it by
//! default (Ha & Rhee 2011; tcp_cubic.c `hystart_update`): once cwnd ≥ 16, slow start ends
//! (ssthresh = cwnd) when, within a round, ACKs spaced ≤ 2 ms keep coming for longer than
//! half the minimum delay (ACK train), or when the smallest of the round's first 8 RTT
//! samples exceeds the minimum delay by clamp(min/8, 4 ms, 16 ms) (delay increase).

use super::reno::RenoWindow;
use super::{AckSample, CcConfig, Controller};

/// Multiplicative decrease factor β (RFC 9438 §4.6).
pub(crate) const BETA: f64 = 0.7;
/// Cubic scaling constant C, packets/s³ (RFC 9438 §5.1).
pub(crate) const C: f64 = 0.4;
/// Floor of ssthresh, packets.
const MIN_SSTHRESH: u32 = 2;
/// HyStart acts only above this window (tcp_cubic.c hystart_low_window).
const HYSTART_LOW_WINDOW: u32 = 16;
/// ACKs closer than this form a train (hystart_ack_delta_us).
const HYSTART_ACK_DELTA_US: u64 = 2_000;
/// RTT samples per round for the delay test (HYSTART_MIN_SAMPLES).
const HYSTART_MIN_SAMPLES: u32 = 8;
/// Bounds of the delay-increase threshold (HYSTART_DELAY_MIN / HYSTART_DELAY_MAX).
const HYSTART_DELAY_MIN_US: u64 = 4_000;
/// Upper bound of the delay-increase threshold.
const HYSTART_DELAY_MAX_US: u64 = 16_000;

/// HyStart's per-round state (struct bictcp's hystart fields).
#[derive(Clone, Debug, Default)]
struct Hystart {
    found: bool,
    round_end: u64,
    round_start_us: u64,
    last_ack_us: u64,
    curr_rtt_us: u64,
    sample_cnt: u32,
    delay_min_us: u64,
}

impl Hystart {
    /// One ACK in slow start; true when slow start should end now.
    fn update(&mut self, s: &AckSample, cwnd: u32) -> bool {
        if self.found {
            return false;
        }
        let Some(delay) = s.rtt_us else { return false };
        if self.delay_min_us == 0 || delay < self.delay_min_us {
            self.delay_min_us = delay;
        }
        if s.prior_delivered >= self.round_end {
            self.round_end = s.delivered_total;
            self.round_start_us = s.now_us;
            self.last_ack_us = s.now_us;
            self.curr_rtt_us = u64::MAX;
            self.sample_cnt = 0;
        }
        if cwnd < HYSTART_LOW_WINDOW {
            return false;
        }
        if s.now_us - self.last_ack_us <= HYSTART_ACK_DELTA_US {
            self.last_ack_us = s.now_us;
            // Unpaced senders: a train longer than half the minimum RTT fills the pipe.
            if s.now_us - self.round_start_us > self.delay_min_us / 2 {
                self.found = true;
            }
        }
        self.curr_rtt_us = self.curr_rtt_us.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt_us > self.delay_min_us + (self.delay_min_us / 8).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US) {
            self.found = true;
        }
        self.found
    }
}

/// CUBIC's state; also the base of SaTCP.
#[derive(Clone, Debug)]
pub struct Cubic {
    pub(crate) w: RenoWindow,
    /// Fractional window (CUBIC grows in fractions of a packet per ACK).
    cwnd_f: f64,
    w_max: f64,
    k_s: f64,
    origin: f64,
    epoch_start_us: Option<u64>,
    w_est: f64,
    min_rtt_us: u64,
    hystart: Hystart,
    /// `cubic.beta`.
    beta: f64,
    /// `cubic.c`.
    c: f64,
}

impl Cubic {
    /// A CUBIC controller with `cfg`'s `cubic.NAME=VALUE` settings; a refused one is the
    /// error.
    pub fn new(cfg: &CcConfig) -> Result<Self, String> {
        let p = super::param::resolve("cubic", &cfg.params)?;
        Ok(Cubic::with(cfg, p.get("beta"), p.get("c")))
    }

    /// A CUBIC controller with these constants (SaTCP's: the defaults).
    pub(crate) fn with(cfg: &CcConfig, beta: f64, c: f64) -> Self {
        Cubic {
            beta,
            c,
            w: RenoWindow::new(cfg.init_cwnd),
            cwnd_f: cfg.init_cwnd as f64,
            w_max: 0.0,
            k_s: 0.0,
            origin: 0.0,
            epoch_start_us: None,
            w_est: 0.0,
            min_rtt_us: 0,
            hystart: Hystart::default(),
        }
    }

    fn congestion_avoidance(&mut self, now: u64, acked: u32) {
        let cwnd = self.cwnd_f;
        if self.epoch_start_us.is_none() {
            self.epoch_start_us = Some(now);
            if cwnd < self.w_max {
                self.k_s = ((self.w_max - cwnd) / self.c).cbrt();
                self.origin = self.w_max;
            } else {
                self.k_s = 0.0;
                self.origin = cwnd;
            }
            self.w_est = cwnd;
        }
        let t = (now - self.epoch_start_us.unwrap_or(now) + self.min_rtt_us) as f64 / 1e6;
        let target = self.origin + self.c * (t - self.k_s).powi(3);
        // ACKs needed per +1 packet, as Linux's `cnt`.
        let mut cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100.0 * cwnd };
        // Reno-friendly region (RFC 9438 §4.3), per ACK.
        let alpha = 3.0 * (1.0 - self.beta) / (1.0 + self.beta);
        self.w_est += alpha * acked as f64 / cwnd;
        if self.w_est > cwnd {
            cnt = cnt.min(cwnd / (self.w_est - cwnd));
        }
        let cnt = cnt.max(2.0);
        self.cwnd_f += acked as f64 / cnt;
    }

    /// Reduce for a loss (RFC 9438 §4.6, §4.7).
    pub(crate) fn reduce(&mut self) {
        let cwnd = self.cwnd_f;
        self.epoch_start_us = None;
        self.w_max = if cwnd < self.w_max { cwnd * (1.0 + self.beta) / 2.0 } else { cwnd };
        self.w.ssthresh = ((cwnd * self.beta) as u32).max(MIN_SSTHRESH);
        self.cwnd_f = self.w.ssthresh as f64;
        self.w.cwnd = self.w.ssthresh;
    }

    pub(crate) fn timeout(&mut self) {
        // Linux resets CUBIC (and HyStart) on entering the Loss state.
        self.hystart = Hystart::default();
        self.reduce();
        self.cwnd_f = 1.0;
        self.w.cwnd = 1;
    }

    pub(crate) fn restore(&mut self, saved: &Cubic) {
        *self = saved.clone();
    }
}

impl Controller for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, s: &AckSample) {
        if s.min_rtt_us > 0 {
            self.min_rtt_us = s.min_rtt_us;
        }
        if !s.ca_state.may_raise_cwnd() || s.acked_sacked == 0 {
            return;
        }
        if self.w.in_slow_start() && self.hystart.update(s, self.w.cwnd) {
            self.w.ssthresh = self.w.cwnd;
        }
        // HyStart runs on every ACK (cubictcp_acked), the window's growth only while cwnd
        // limits the flow (cubictcp_cong_avoid).
        if !s.is_cwnd_limited(self.w.cwnd, self.w.in_slow_start()) {
            return;
        }
        let mut acked = s.acked_sacked;
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked);
            self.cwnd_f = self.w.cwnd as f64;
            if acked == 0 {
                return;
            }
        }
        self.congestion_avoidance(s.now_us, acked);
        self.w.cwnd = self.cwnd_f as u32;
    }

    fn on_congestion_event(&mut self, _now_us: u64, _in_flight: u32) {
        self.reduce();
    }

    fn on_rto(&mut self, _now_us: u64) {
        self.timeout();
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
        vec![("ssthresh", self.w.ssthresh.min(1 << 30) as f64), ("w_max", self.w_max), ("k_s", self.k_s)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::ack;
    use crate::cc::CaState;

    fn cubic() -> Cubic {
        Cubic::new(&CcConfig { mss: 1448, init_cwnd: 10, seed: 0, params: Vec::new() }).unwrap()
    }

    #[test]
    fn reduces_by_beta_and_regrows_toward_w_max() {
        let mut c = cubic();
        c.on_ack(&ack(0, 90, CaState::Open));
        assert_eq!(c.cwnd(), 100);
        c.on_congestion_event(1_000, 100);
        assert_eq!(c.cwnd(), 70, "beta = 0.7");
        // Concave growth back toward W_max = 100 over K = cbrt(30 / 0.4) ≈ 4.2 s.
        let mut t = 1_000;
        for _ in 0..2000 {
            t += 2_000;
            c.on_ack(&ack(t, 1, CaState::Open));
        }
        let w = c.cwnd();
        assert!(w > 85 && w <= 101, "after 4 s cwnd {w} should approach W_max 100");
    }

    #[test]
    fn hystart_ends_slow_start_when_delay_rises() {
        let mut c = cubic();
        let mut delivered = 0;
        let send = |c: &mut Cubic, now: u64, rtt: u64, round_start: bool, delivered: &mut u64| {
            let mut s = ack(now, 2, CaState::Open);
            s.rtt_us = Some(rtt);
            s.prior_delivered = if round_start { *delivered } else { 0 };
            *delivered += 2;
            s.delivered_total = *delivered;
            c.on_ack(&s);
        };
        // ACKs 5 ms apart (no ACK train) at the base RTT: slow start goes on past 16.
        send(&mut c, 0, 20_000, true, &mut delivered);
        for i in 1..10 {
            send(&mut c, i * 5_000, 20_000, false, &mut delivered);
        }
        assert!(c.w.in_slow_start() && c.cwnd() == 30);
        // Next round: the queue builds, RTT 30 ms > 20 + max(20/8, 4) ms.
        send(&mut c, 60_000, 30_000, true, &mut delivered);
        for i in 1..9 {
            send(&mut c, 60_000 + i * 5_000, 30_000, false, &mut delivered);
        }
        assert!(!c.w.in_slow_start(), "HyStart did not fire (cwnd {})", c.cwnd());
        assert!(c.w.ssthresh >= 30 && c.w.ssthresh < 60);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = cubic();
        c.on_ack(&ack(0, 90, CaState::Open));
        c.on_congestion_event(1, 100);
        // A second loss below the previous W_max: W_max = cwnd (1 + beta) / 2.
        c.on_congestion_event(2, 70);
        assert!((c.w_max - 70.0 * 1.7 / 2.0).abs() < 1e-9);
        assert_eq!(c.cwnd(), 49);
    }
}
