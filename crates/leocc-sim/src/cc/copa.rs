//! Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
//! Internet", NSDI 2018), default mode.
//!
//! Target rate λ_t = 1 / (δ · d_q) packets/s with δ = 0.5 and queueing delay
//! d_q = RTT_standing − RTT_min, where RTT_standing is the minimum RTT over the last srtt/2
//! and RTT_min the minimum over 10 s. On each ACKed packet: if the current rate
//! cwnd / RTT_standing ≤ λ_t, cwnd += v / (δ · cwnd), else cwnd −= v / (δ · cwnd).
//! Velocity v starts at 1 and doubles every RTT once cwnd has moved in the same direction
//! for 3 RTTs; it resets to 1 when the direction changes. Slow start doubles cwnd every RTT
//! until the rate first exceeds the target. Pacing at 2 · cwnd / RTT_standing. Copa's
//! default mode does not react to loss; after a timeout we restart from 2 packets. The
//! competitive (TCP-friendly) mode switch is not modelled.

use std::collections::VecDeque;

use super::{AckSample, CcConfig, Controller};

/// δ, the delay/throughput trade-off (paper §2: 0.5).
const DELTA: f64 = 0.5;
/// RTT_min window (paper §2.1: 10 s).
const MIN_RTT_WINDOW_US: u64 = 10_000_000;
/// Same-direction round trips before velocity starts doubling (paper §2.2: 3).
const VELOCITY_RTTS: u32 = 3;
/// Pacing gain over cwnd / RTT_standing (paper §2.1: 2).
const PACING_GAIN: f64 = 2.0;
/// Smallest window, packets.
const MIN_CWND: f64 = 2.0;
/// Cap on velocity, to keep one run of doubling from diverging (implementation bound).
const MAX_VELOCITY: f64 = 1024.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// Copa.
#[derive(Clone, Debug)]
pub struct Copa {
    mss: f64,
    cwnd: f64,
    slow_start: bool,
    velocity: f64,
    direction: Option<Direction>,
    same_dir_rtts: u32,
    rtt_window_start: u64,
    cwnd_at_window_start: f64,
    standing: VecDeque<(u64, u64)>,
    min_rtt: VecDeque<(u64, u64)>,
    rtt_standing_us: u64,
    rtt_min_us: u64,
    srtt_us: u64,
}

/// Push into a monotone deque that yields the minimum over a sliding time window.
fn window_min_push(q: &mut VecDeque<(u64, u64)>, now: u64, v: u64, window: u64) -> u64 {
    while q.back().is_some_and(|&(_, x)| x >= v) {
        q.pop_back();
    }
    q.push_back((now, v));
    while q.front().is_some_and(|&(t, _)| t + window < now) {
        q.pop_front();
    }
    q.front().map_or(v, |&(_, x)| x)
}

impl Copa {
    /// A Copa controller.
    pub fn new(cfg: &CcConfig) -> Self {
        Copa {
            mss: cfg.mss as f64,
            cwnd: cfg.init_cwnd as f64,
            slow_start: true,
            velocity: 1.0,
            direction: None,
            same_dir_rtts: 0,
            rtt_window_start: 0,
            cwnd_at_window_start: cfg.init_cwnd as f64,
            standing: VecDeque::new(),
            min_rtt: VecDeque::new(),
            rtt_standing_us: 0,
            rtt_min_us: 0,
            srtt_us: 0,
        }
    }

    /// Once per RTT: update the direction and the velocity (paper §2.2).
    fn update_velocity(&mut self, now: u64) {
        if self.srtt_us == 0 || now < self.rtt_window_start + self.srtt_us {
            return;
        }
        let dir = if self.cwnd > self.cwnd_at_window_start { Direction::Up } else { Direction::Down };
        if Some(dir) == self.direction {
            self.same_dir_rtts += 1;
            if self.same_dir_rtts >= VELOCITY_RTTS {
                self.velocity = (self.velocity * 2.0).min(MAX_VELOCITY);
            }
        } else {
            self.direction = Some(dir);
            self.same_dir_rtts = 0;
            self.velocity = 1.0;
        }
        self.rtt_window_start = now;
        self.cwnd_at_window_start = self.cwnd;
    }
}

impl Controller for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn on_ack(&mut self, s: &AckSample) {
        self.srtt_us = s.srtt_us;
        let Some(rtt) = s.rtt_us else { return };
        let now = s.now_us;
        self.rtt_min_us = window_min_push(&mut self.min_rtt, now, rtt, MIN_RTT_WINDOW_US);
        self.rtt_standing_us = window_min_push(&mut self.standing, now, rtt, (s.srtt_us / 2).max(1));
        if s.acked_sacked == 0 {
            return;
        }
        let dq_s = (self.rtt_standing_us - self.rtt_min_us.min(self.rtt_standing_us)) as f64 / 1e6;
        let standing_s = self.rtt_standing_us.max(1) as f64 / 1e6;
        let rate = self.cwnd / standing_s;
        let below_target = dq_s == 0.0 || rate <= 1.0 / (DELTA * dq_s);
        let acked = s.acked_sacked as f64;
        if self.slow_start {
            if below_target {
                self.cwnd += acked;
                return;
            }
            self.slow_start = false;
        }
        self.update_velocity(now);
        let step = acked * self.velocity / (DELTA * self.cwnd);
        if below_target {
            self.cwnd += step;
        } else {
            self.cwnd = (self.cwnd - step).max(MIN_CWND);
        }
    }

    fn on_rto(&mut self, _now_us: u64) {
        self.cwnd = MIN_CWND;
        self.velocity = 1.0;
    }

    fn cwnd(&self) -> u32 {
        self.cwnd.max(MIN_CWND) as u32
    }

    fn pacing_rate(&self) -> Option<f64> {
        (self.rtt_standing_us > 0).then(|| PACING_GAIN * self.cwnd * self.mss * 1e6 / self.rtt_standing_us as f64)
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("velocity", self.velocity),
            ("rtt_standing_ms", self.rtt_standing_us as f64 / 1e3),
            ("rtt_min_ms", self.rtt_min_us as f64 / 1e3),
        ]
    }
}
