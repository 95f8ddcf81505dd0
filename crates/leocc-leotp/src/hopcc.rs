//! Hop-by-hop congestion control (the seed's eq. 6–9). Every node that requests data over a
//! hop (the consumer, and each mid-node towards its upstream) runs one instance for that hop.
//! It is requester-driven: the rate it computes is the rate of *requested segments*, and data
//! comes back at that rate.
//!
//! Once per hop RTT ("round"):
//!
//! * BDP = throughput × hopRTT_min (6), QueueLen = throughput × (hopRTT − hopRTT_min) (7);
//! * cwnd = 2·cwnd in slow start (left when QueueLen > M); else cwnd + 1 while
//!   QueueLen ≤ M; else k × BDP (8);
//! * Rate_bp = Rate_nextHop + (BL_tar − BL) / hopRTT and Rate = min(cwnd / hopRTT, Rate_bp)
//!   (9). This transport is requester-driven: requests flow upstream, so the "next hop" whose
//!   congestion must hold this one back is the upstream node. Rate_nextHop is the rate it
//!   delivers at (this hop's throughput) and BL its backlog of requests waiting for *its*
//!   upstream hop, which it reports in every data packet. A backlog above the target means
//!   the path beyond it is the bottleneck: ask for less than it delivers until the backlog
//!   drains. (The seed writes BL − BL_tar for the data-pushing view, where BL is the sender's
//!   own buffer; the requester's view flips the sign.)
//!
//! M is the larger of `DEFAULT_M_SEGMENTS` and `M_TIME_US` of throughput: a fixed few
//! segments are less than a millisecond of queue at tens of Mbit/s, below the scheduling
//! jitter of a shared machine, and cwnd would then be cut every round.
//!
//! Throughput is the delivery rate of the round, max-filtered over `THR_WINDOW_ROUNDS` rounds
//! (a round spent rate-limited below capacity must not shrink the estimate of what the hop can
//! carry). hopRTT is a smoothed sample (gain 1/8, as TCP's SRTT) and hopRTT_min a minimum that
//! ages out after `RTT_MIN_WINDOW_US`, because a LEO hop's propagation delay changes with
//! every handover.

use std::collections::VecDeque;

/// M of eq. 8, segments: the queue a hop may hold before cwnd is cut to k × BDP. A few
/// segments, so a hop keeps its link busy without building delay.
pub const DEFAULT_M_SEGMENTS: f64 = 4.0;
/// k of eq. 8. A k above 1 keeps a standing queue of (k − 1) × BDP, which exceeds M on any
/// hop with a BDP above M / (k − 1) and so never lets the +1 probing start; k = 1 drains the
/// queue to empty, then probes one segment per round until the queue passes M again.
pub const DEFAULT_K: f64 = 1.2;
/// BL_tar of eq. 9, segments: the upstream node keeps this many requests waiting so that its
/// own hop never idles, and no more (each waiting request is delay for the consumer).
pub const DEFAULT_BL_TARGET: f64 = 8.0;
/// Initial cwnd, segments (as TCP's IW10).
pub const INITIAL_CWND: f64 = 10.0;
/// Smallest cwnd, segments: below this a hop cannot measure its throughput.
pub const MIN_CWND: f64 = 2.0;
/// Largest cwnd, segments: 2^16 × 1400 B is 92 MB in flight, far above any LEO hop's BDP.
pub const MAX_CWND: f64 = 65536.0;
/// Rounds of the throughput max filter.
pub const THR_WINDOW_ROUNDS: usize = 8;
/// Age after which hopRTT_min is re-learned, µs (a handover may raise the base delay).
pub const RTT_MIN_WINDOW_US: u64 = 10_000_000;
/// hopRTT assumed before the first sample, µs: only sets the first round's pacing.
pub const INITIAL_RTT_US: f64 = 100_000.0;
/// The time part of M, µs (see the module documentation).
pub const M_TIME_US: f64 = 10_000.0;
/// Lowest rate Rate_bp may ask for, segments/s: never stall a hop completely on a backlog
/// estimate; one segment per 10 ms keeps RTT samples coming.
pub const MIN_RATE_SPS: f64 = 100.0;

/// Parameters of eq. 8–9.
#[derive(Debug, Clone, Copy)]
pub struct HopCcConfig {
    /// M, segments.
    pub m_segments: f64,
    /// k.
    pub k: f64,
    /// BL_tar, segments.
    pub bl_target: f64,
}

impl Default for HopCcConfig {
    fn default() -> Self {
        HopCcConfig { m_segments: DEFAULT_M_SEGMENTS, k: DEFAULT_K, bl_target: DEFAULT_BL_TARGET }
    }
}

/// The controller of one hop.
#[derive(Debug, Clone)]
pub struct HopCc {
    cfg: HopCcConfig,
    slow_start: bool,
    cwnd: f64,
    srtt_us: Option<f64>,
    rtt_min_us: Option<u64>,
    rtt_min_at_us: u64,
    round_start_us: Option<u64>,
    round_delivered: u64,
    round_rtt_min_us: Option<u64>,
    thr: VecDeque<f64>,
}

impl HopCc {
    /// A controller in slow start.
    pub fn new(cfg: HopCcConfig) -> HopCc {
        HopCc { cfg, slow_start: true, cwnd: INITIAL_CWND, srtt_us: None, rtt_min_us: None, rtt_min_at_us: 0, round_start_us: None, round_delivered: 0, round_rtt_min_us: None, thr: VecDeque::new() }
    }

    /// Congestion window, segments.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Whether still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// Smoothed hop RTT, µs (the initial assumption before any sample).
    pub fn hop_rtt_us(&self) -> f64 {
        self.srtt_us.unwrap_or(INITIAL_RTT_US)
    }

    /// Minimum hop RTT, µs, once sampled.
    pub fn hop_rtt_min_us(&self) -> Option<u64> {
        self.rtt_min_us
    }

    /// Max-filtered hop throughput, segments/s.
    pub fn throughput_sps(&self) -> f64 {
        self.thr.iter().copied().fold(0.0, f64::max)
    }

    /// One segment arrived over this hop at `now_us`; `rtt_us` is its request→data time if it
    /// was requested once (Karn: a re-requested segment's sample is ambiguous).
    pub fn on_delivery(&mut self, now_us: u64, rtt_us: Option<u64>) {
        if let Some(r) = rtt_us {
            let r = r.max(1);
            self.round_rtt_min_us = Some(self.round_rtt_min_us.map_or(r, |m| m.min(r)));
            self.srtt_us = Some(match self.srtt_us {
                Some(s) => s + (r as f64 - s) / 8.0,
                None => r as f64,
            });
            let stale = now_us.saturating_sub(self.rtt_min_at_us) > RTT_MIN_WINDOW_US;
            if self.rtt_min_us.is_none_or(|m| r <= m || stale) {
                self.rtt_min_us = Some(r);
                self.rtt_min_at_us = now_us;
            }
        }
        let start = *self.round_start_us.get_or_insert(now_us);
        self.round_delivered += 1;
        let elapsed = now_us.saturating_sub(start);
        if (elapsed as f64) < self.hop_rtt_us() || elapsed == 0 {
            return;
        }
        self.end_round(self.round_delivered as f64 / (elapsed as f64 / 1e6));
        self.round_start_us = Some(now_us);
        self.round_delivered = 0;
        self.round_rtt_min_us = None;
    }

    fn end_round(&mut self, sample_sps: f64) {
        self.thr.push_back(sample_sps);
        if self.thr.len() > THR_WINDOW_ROUNDS {
            self.thr.pop_front();
        }
        let Some(min) = self.rtt_min_us else { return };
        let thr = self.throughput_sps();
        let bdp = thr * min as f64 / 1e6; // eq. 6
        // hopRTT of eq. 7 is the round's smallest sample: the smoothed RTT lags a draining
        // queue by several rounds and would cut cwnd again after the queue is gone.
        let hop_rtt = self.round_rtt_min_us.map_or(self.hop_rtt_us(), |r| r as f64);
        let queue = thr * (hop_rtt - min as f64).max(0.0) / 1e6; // eq. 7
        let m = self.cfg.m_segments.max(thr * M_TIME_US / 1e6);
        self.cwnd = if self.slow_start {
            if queue > m {
                self.slow_start = false;
                self.cfg.k * bdp
            } else {
                2.0 * self.cwnd
            }
        } else if queue <= m {
            self.cwnd + 1.0
        } else {
            self.cfg.k * bdp
        }; // eq. 8
        self.cwnd = self.cwnd.clamp(MIN_CWND, MAX_CWND);
    }

    /// Rate_bp of eq. 9, segments/s: `next_hop_sps` is the rate the upstream node delivers
    /// at and `backlog` its reported request backlog.
    pub fn backpressure_sps(&self, next_hop_sps: f64, backlog: usize) -> f64 {
        let bl = self.cfg.bl_target - backlog as f64;
        (next_hop_sps + bl / (self.hop_rtt_us() / 1e6)).max(MIN_RATE_SPS)
    }

    /// The request rate of eq. 9, segments/s.
    pub fn rate_sps(&self, rate_bp: Option<f64>) -> f64 {
        let own = self.cwnd / (self.hop_rtt_us() / 1e6);
        rate_bp.map_or(own, |bp| own.min(bp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives the controller with a fixed-capacity hop: `cap` segments/s, base RTT `base` µs,
    /// and a queue that builds when the request rate exceeds the capacity.
    fn drive(cc: &mut HopCc, cap: f64, base: u64, rounds: usize) -> Vec<f64> {
        let mut t = 0u64;
        let mut queue = 0.0f64;
        let mut cwnds = Vec::new();
        for _ in 0..rounds {
            let rtt = base + (queue / cap * 1e6) as u64;
            let rate = cc.rate_sps(None);
            let sent = rate * rtt as f64 / 1e6;
            let delivered = (sent + queue).min(cap * rtt as f64 / 1e6);
            queue = (queue + sent - delivered).max(0.0);
            let n = delivered.max(1.0) as u64;
            for i in 0..n {
                cc.on_delivery(t + rtt * (i + 1) / n, Some(rtt));
            }
            t += rtt;
            cwnds.push(cc.cwnd());
        }
        cwnds
    }

    #[test]
    fn slow_start_doubles_then_settles_near_the_bdp() {
        let mut cc = HopCc::new(HopCcConfig::default());
        let cap = 10_000.0; // segments/s = 96 Mbit/s
        let base = 20_000; // 20 ms: BDP = 200 segments
        let w = drive(&mut cc, cap, base, 60);
        assert!(w[1] >= 2.0 * INITIAL_CWND - 1e-9, "doubling: {w:?}");
        assert!(!cc.in_slow_start(), "slow start never ended: {w:?}");
        let tail = &w[40..];
        let mean = tail.iter().sum::<f64>() / tail.len() as f64;
        assert!((150.0..=300.0).contains(&mean), "cwnd {mean} not near the BDP of 200: {w:?}");
    }

    #[test]
    fn backpressure_follows_the_next_hop_and_the_backlog() {
        let mut cc = HopCc::new(HopCcConfig::default());
        for i in 0..200u64 {
            cc.on_delivery(i * 1000, Some(50_000));
        }
        let at_target = cc.backpressure_sps(1000.0, DEFAULT_BL_TARGET as usize);
        assert!((at_target - 1000.0).abs() < 1e-6);
        // The upstream node 50 segments above target, over a 50 ms hop RTT: ask for 1000
        // segments/s less than it delivers, until its backlog drains.
        assert!((cc.backpressure_sps(3000.0, DEFAULT_BL_TARGET as usize + 50) - 2000.0).abs() < 1.0);
        // Below target: ask for more, to fill it.
        assert!(cc.backpressure_sps(1000.0, 0) > 1000.0);
        assert_eq!(cc.backpressure_sps(0.0, 10_000), MIN_RATE_SPS);
        assert!(cc.rate_sps(Some(MIN_RATE_SPS)) <= MIN_RATE_SPS);
    }
}
