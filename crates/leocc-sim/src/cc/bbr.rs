//! BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016;
//! Linux net/ipv4/tcp_bbr.c, which this follows function by function).
//!
//! Model: BtlBw = windowed max of delivery-rate samples over 10 round trips (app-limited
//! samples only when they raise it); RTprop = min RTT over 10 s. Pacing rate = gain × BtlBw
//! (minus a 1 % margin), cwnd = cwnd_gain × BDP + 3 send quanta.
//! Modes: STARTUP (pacing and cwnd gain 2/ln 2 = 2.885) until the bandwidth grew < 25 % for
//! 3 rounds; DRAIN (pacing gain 1/2.885) until inflight ≤ BDP; PROBE_BW cycling pacing gains
//! [1.25, 0.75, 1, 1, 1, 1, 1, 1], one phase per min RTT, starting at a random phase other
//! than 0.75, cwnd gain 2; PROBE_RTT (cwnd 4 packets for 200 ms and one round) when the
//! min RTT was not refreshed for 10 s. Loss: packet conservation for the first round of
//! recovery, window restored on exit. ACK aggregation (bursty ACK arrivals, e.g. over
//! grant-based uplinks) is measured as Linux does — ACKed data beyond what bw predicts in
//! the current ACK epoch, max over two windows of 5 rounds, capped at 100 ms of bw and at
//! cwnd — and added to the cwnd target once the pipe is full. Not modelled: the long-term
//! (policer) bandwidth sampling.

use super::{AckSample, CaState, CcConfig, Controller, WindowedMax};
use crate::rng::Rng;

/// STARTUP gain, 2/ln 2 (tcp_bbr.c bbr_high_gain = 2885/1000).
const HIGH_GAIN: f64 = 2.885;
/// DRAIN pacing gain, 1/high gain (bbr_drain_gain).
const DRAIN_GAIN: f64 = 1.0 / 2.885;
/// PROBE_BW cwnd gain (bbr_cwnd_gain).
const CWND_GAIN: f64 = 2.0;
/// PROBE_BW pacing gain cycle (bbr_pacing_gain).
const PACING_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Bandwidth filter window in round trips (bbr_bw_rtts = cycle length + 2).
const BW_RTTS: u64 = 10;
/// Min RTT filter window (bbr_min_rtt_win_sec).
const MIN_RTT_WIN_US: u64 = 10_000_000;
/// Time spent in PROBE_RTT (bbr_probe_rtt_mode_ms).
const PROBE_RTT_US: u64 = 200_000;
/// Smallest cwnd, and the cwnd in PROBE_RTT (bbr_cwnd_min_target).
const MIN_CWND: u32 = 4;
/// Bandwidth growth that counts as "still growing" (bbr_full_bw_thresh).
const FULL_BW_THRESH: f64 = 1.25;
/// Rounds without growth that end STARTUP (bbr_full_bw_cnt).
const FULL_BW_CNT: u32 = 3;
/// Pace this much below the estimate (bbr_pacing_margin_percent).
const PACING_MARGIN: f64 = 0.01;
/// Below this pacing rate one segment per send quantum, else two (bbr_min_tso_rate, bytes/s).
const MIN_TSO_RATE: f64 = 1_200_000.0 / 8.0;
/// Linux sk_pacing_shift: a send quantum holds ~1 ms of data at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// Rounds per ACK-aggregation max-filter window (bbr_extra_acked_win_rtts).
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// Largest ACK-aggregation allowance, as time at the bandwidth estimate (bbr_extra_acked_max_us).
const EXTRA_ACKED_MAX_US: f64 = 100_000.0;
/// ACKed packets after which an ACK epoch restarts (bbr_ack_epoch_acked_reset_thresh).
const ACK_EPOCH_RESET_PKTS: f64 = (1u64 << 20) as f64;
/// GSO size limit for a send quantum, bytes.
const GSO_MAX_BYTES: f64 = 65_536.0;

/// BBR's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// BBR v1.
#[derive(Clone, Debug)]
pub struct Bbr {
    mss: f64,
    init_cwnd: u32,
    mode: Mode,
    bw: WindowedMax,
    min_rtt_us: u64,
    min_rtt_stamp: u64,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
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
}

impl Bbr {
    /// A BBR controller.
    pub fn new(cfg: &CcConfig) -> Self {
        let mss = cfg.mss as f64;
        Bbr {
            mss,
            init_cwnd: cfg.init_cwnd,
            mode: Mode::Startup,
            bw: WindowedMax::new(BW_RTTS),
            min_rtt_us: u64::MAX,
            min_rtt_stamp: 0,
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            // bbr_init_pacing_rate_from_rtt with no RTT yet: 1 ms.
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
        }
    }

    /// Bottleneck bandwidth estimate, bytes/s.
    pub fn bw(&self) -> f64 {
        self.bw.get()
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

    fn inflight(&self, bw: f64, gain: f64) -> f64 {
        let mut w = self.bdp(bw, gain) + 3.0 * self.tso_segs_goal();
        w = (w / 2.0).ceil() * 2.0;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            w += 2.0;
        }
        w
    }

    /// bbr_update_ack_aggregation: how far ACKs ran ahead of the bandwidth estimate.
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
        let mut expected = self.bw.get() * epoch_us / 1e6 / self.mss;
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

    /// bbr_ack_aggregation_cwnd: packets of cwnd allowance for aggregated ACKs.
    fn aggregation_cwnd(&self, bw: f64) -> f64 {
        if !self.full_bw_reached {
            return 0.0;
        }
        let max_aggr = bw * EXTRA_ACKED_MAX_US / 1e6 / self.mss;
        self.extra_acked[0].max(self.extra_acked[1]).min(max_aggr)
    }

    /// bbr_set_cwnd's target: BDP × cwnd gain, the ACK-aggregation allowance, and the
    /// quantization budget.
    fn cwnd_target(&self, bw: f64) -> f64 {
        let mut w = self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd(bw) + 3.0 * self.tso_segs_goal();
        w = (w / 2.0).ceil() * 2.0;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            w += 2.0;
        }
        w
    }

    fn update_bw(&mut self, s: &AckSample) {
        self.round_start = false;
        if s.delivered < 0 || s.interval_us <= 0 {
            return;
        }
        if s.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = s.delivered_total;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = s.delivered as f64 * self.mss * 1e6 / s.interval_us as f64;
        if !s.app_limited || bw >= self.bw.get() {
            self.bw.update(self.rtt_cnt, bw);
        }
    }

    fn advance_cycle_phase(&mut self, now: u64) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAINS.len();
        self.cycle_stamp = now;
    }

    fn update_cycle_phase(&mut self, s: &AckSample) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let full_length = s.now_us - self.cycle_stamp > self.min_rtt_us;
        let gain = PACING_GAINS[self.cycle_idx];
        let inflight = s.prior_in_flight as f64;
        let next = if gain == 1.0 {
            full_length
        } else if gain > 1.0 {
            full_length && (s.losses > 0 || inflight >= self.inflight(self.bw.get(), gain))
        } else {
            full_length || inflight <= self.inflight(self.bw.get(), 1.0)
        };
        if next {
            self.advance_cycle_phase(s.now_us);
        }
    }

    fn enter_probe_bw(&mut self, now: u64) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = PACING_GAINS.len() - 1 - self.rng.below(PACING_GAINS.len() as u64 - 1) as usize;
        self.advance_cycle_phase(now);
    }

    fn check_full_bw_reached(&mut self, s: &AckSample) {
        if self.full_bw_reached || !self.round_start || s.app_limited {
            return;
        }
        let bw = self.bw.get();
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
            self.mode = Mode::Drain;
        }
        if self.mode == Mode::Drain && s.in_flight as f64 <= self.inflight(self.bw.get(), 1.0) {
            self.enter_probe_bw(s.now_us);
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
        if expired && self.mode != Mode::ProbeRtt && self.has_rtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done = None;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done {
                None if s.in_flight <= MIN_CWND => {
                    self.probe_rtt_done = Some(now + PROBE_RTT_US);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = s.delivered_total;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now > done {
                        self.min_rtt_stamp = now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        if self.full_bw_reached {
                            self.enter_probe_bw(now);
                        } else {
                            self.mode = Mode::Startup;
                        }
                    }
                }
                None => {}
            }
        }
    }

    fn update_gains(&mut self) {
        let (p, c) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (PACING_GAINS[self.cycle_idx], CWND_GAIN),
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

    fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let rate = bw * gain * (1.0 - PACING_MARGIN);
        if (self.full_bw_reached || rate > self.pacing_rate) && rate > 0.0 {
            self.pacing_rate = rate;
        }
    }

    /// bbr_set_cwnd_to_recover_or_restore: returns the window to use, if it decides one.
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
                let target = self.cwnd_target(bw) as u32;
                if self.full_bw_reached {
                    self.cwnd = (self.cwnd + s.acked_sacked).min(target);
                } else if self.cwnd < target || s.delivered_total < self.init_cwnd as u64 {
                    self.cwnd += s.acked_sacked;
                }
                self.cwnd = self.cwnd.max(MIN_CWND);
            }
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(MIN_CWND);
        }
    }

    /// One ACK through the model, as `bbr_main`.
    pub(crate) fn main(&mut self, s: &AckSample) {
        if !self.has_rtt {
            if let Some(r) = s.rtt_us {
                // bbr_init_pacing_rate_from_rtt once the first RTT is known.
                self.pacing_rate = HIGH_GAIN * self.init_cwnd as f64 * self.mss * 1e6 / r.max(1) as f64;
            }
        }
        self.update_bw(s);
        self.update_ack_aggregation(s);
        self.update_cycle_phase(s);
        self.check_full_bw_reached(s);
        self.check_drain(s);
        self.update_min_rtt(s);
        self.update_gains();
        let bw = self.bw.get();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(s, bw);
    }
}

impl Controller for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_ack(&mut self, s: &AckSample) {
        self.main(s);
    }

    fn on_congestion_event(&mut self, _now_us: u64, _in_flight: u32) {
        self.save_cwnd();
    }

    fn on_rto(&mut self, _now_us: u64) {
        // tcp_enter_loss: ssthresh hook saves the window, cwnd = in flight + 1 (= 1 here,
        // everything unSACKed was just marked lost); bbr_set_state resets the full-bw probe.
        self.save_cwnd();
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        self.cwnd = 1;
    }

    fn cwnd(&self) -> u32 {
        self.cwnd.max(1)
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate)
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("mode", self.mode as u8 as f64),
            ("bw_mbps", self.bw.get() * 8.0 / 1e6),
            ("min_rtt_ms", if self.min_rtt_us == u64::MAX { 0.0 } else { self.min_rtt_us as f64 / 1e3 }),
            ("pacing_gain", self.pacing_gain),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::ack;

    #[test]
    fn startup_exits_when_bandwidth_plateaus_and_paces_near_it() {
        let mut b = Bbr::new(&CcConfig { mss: 1448, init_cwnd: 10, seed: 3, params: Vec::new() });
        // A 10 Mbit/s path with 20 ms RTT: every ACK reports 10 Mbit/s worth of delivery.
        let rate_pps = 10e6 / 8.0 / 1448.0;
        let mut delivered = 0u64;
        for i in 0..400u64 {
            let now = i * 5_000;
            let mut s = ack(now, 4, CaState::Open);
            delivered += 4;
            s.delivered = (rate_pps * 0.02) as i64;
            s.interval_us = 20_000;
            s.prior_delivered = delivered.saturating_sub(s.delivered as u64);
            s.delivered_total = delivered;
            s.rtt_us = Some(20_000);
            s.prior_in_flight = 20;
            s.in_flight = 20;
            b.on_ack(&s);
        }
        assert!(b.full_bw_reached && b.mode != Mode::Startup, "still in startup");
        let bw = b.bw() * 8.0 / 1e6;
        assert!((bw - 10.0).abs() < 0.5, "bw {bw}");
        let pacing = b.pacing_rate().unwrap() * 8.0 / 1e6;
        assert!(pacing > 7.0 && pacing < 13.0, "pacing {pacing} Mbit/s");
    }
}
