//! The BBRv1 machinery (Linux net/ipv4/tcp_bbr.c) shared by `bbr` and `leocc-ref`, which the
//! LeoCC authors built on BBRv1: the bandwidth and min-RTT filters, round counting, the
//! STARTUP → DRAIN → PROBE_BW progression, the PROBE_BW gain cycle, pacing, the cwnd target
//! with its quantization budget and ACK-aggregation allowance, and packet conservation in
//! recovery. What the two controllers do differently (how PROBE_RTT is entered and left, its
//! cwnd cap, the gain of the probing phase, the min-RTT window) stays in their own files, which
//! call these pieces in `bbr_main`'s order.

use super::{AckSample, CaState, CcConfig, WindowedMax};
use crate::rng::Rng;

/// STARTUP gain, 2/ln 2 (bbr_high_gain = 2885/1000).
pub(crate) const HIGH_GAIN: f64 = 2.885;
/// DRAIN pacing gain, 1/high gain (bbr_drain_gain).
const DRAIN_GAIN: f64 = 1.0 / 2.885;
/// PROBE_BW cwnd gain (bbr_cwnd_gain).
const CWND_GAIN: f64 = 2.0;
/// Phases of the PROBE_BW gain cycle (CYCLE_LEN in tcp_bbr.c).
const CYCLE_LEN: usize = 8;
/// PROBE_BW pacing gain of the probing phase, phase 0 (bbr_pacing_gain[0]).
pub(crate) const PROBE_UP_GAIN: f64 = 1.25;
/// PROBE_BW pacing gain of the draining phase, phase 1 (bbr_pacing_gain[1]).
const PROBE_DOWN_GAIN: f64 = 0.75;
/// Bandwidth filter window in round trips (bbr_bw_rtts = cycle length + 2).
pub(crate) const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Time spent in PROBE_RTT (bbr_probe_rtt_mode_ms).
const PROBE_RTT_US: u64 = 200_000;
/// Smallest cwnd (bbr_cwnd_min_target).
pub(crate) const MIN_CWND: u32 = 4;
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

/// BBR's mode, numbered for time series (`leocc-ref`'s module calls PROBE_BW "cruise").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Startup = 0,
    Drain = 1,
    ProbeBw = 2,
    ProbeRtt = 3,
}

/// What one ACK's pass through [`BbrCore::update_model`] found.
pub(crate) struct ModelUpdate {
    /// The ACK's delivery-rate sample, bytes/s, if it carried a valid one.
    pub sample_bw: Option<f64>,
    /// STARTUP ended on this ACK (the pipe was found full).
    pub startup_ended: bool,
}

/// The state BBRv1 keeps per flow (struct bbr), and the steps of `bbr_main` on it.
#[derive(Clone, Debug)]
pub(crate) struct BbrCore {
    mss: f64,
    init_cwnd: u32,
    min_rtt_win_us: u64,
    pub mode: Mode,
    pub bw: WindowedMax,
    pub min_rtt_us: u64,
    pub min_rtt_stamp: u64,
    pub rtt_cnt: u64,
    pub next_rtt_delivered: u64,
    pub round_start: bool,
    pub full_bw: f64,
    pub full_bw_cnt: u32,
    pub full_bw_reached: bool,
    cycle_idx: usize,
    cycle_stamp: u64,
    pub pacing_gain: f64,
    cwnd_gain: f64,
    pub pacing_rate: f64,
    pub cwnd: u32,
    pub prior_cwnd: u32,
    packet_conservation: bool,
    prev_ca_state: CaState,
    probe_rtt_done: Option<u64>,
    probe_rtt_round_done: bool,
    rng: Rng,
    pub has_rtt: bool,
    extra_acked: [f64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    ack_epoch_us: u64,
    ack_epoch_acked: f64,
}

impl BbrCore {
    /// A flow's state at connection start, with the given min-RTT filter window.
    pub fn new(cfg: &CcConfig, min_rtt_win_us: u64) -> Self {
        let mss = cfg.mss as f64;
        BbrCore {
            mss,
            init_cwnd: cfg.init_cwnd,
            min_rtt_win_us,
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

    /// Packets in `gain` × `bw` × min RTT (bbr_bdp); the initial window before any RTT.
    pub fn bdp(&self, bw: f64, gain: f64) -> f64 {
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

    /// bbr_quantization_budget: room for send quanta in flight at both ends, rounded up to
    /// even, plus 2 while probing so that the probe can actually raise inflight.
    fn quantization_budget(&self, w: f64) -> f64 {
        let mut w = w + 3.0 * self.tso_segs_goal();
        w = (w / 2.0).ceil() * 2.0;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            w += 2.0;
        }
        w
    }

    fn inflight(&self, bw: f64, gain: f64) -> f64 {
        self.quantization_budget(self.bdp(bw, gain))
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

    /// The ACK-aggregation allowance now in the cwnd target, packets (0 before the pipe is full).
    pub fn aggregation_pkts(&self) -> f64 {
        self.aggregation_cwnd(self.bw.get())
    }

    /// The cwnd target of bbr_set_cwnd at the max filter's bandwidth, packets.
    pub fn target_pkts(&self) -> f64 {
        let bw = self.bw.get();
        self.quantization_budget(self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd(bw))
    }

    /// Whether the last ACK found the flow in loss recovery (or after an RTO).
    pub fn in_recovery(&self) -> bool {
        self.prev_ca_state != CaState::Open
    }

    /// bbr_update_bw: round counting and the max filter; returns the ACK's rate sample.
    fn update_bw(&mut self, s: &AckSample) -> Option<f64> {
        self.round_start = false;
        if s.delivered < 0 || s.interval_us <= 0 {
            return None;
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
        Some(bw)
    }

    fn advance_cycle_phase(&mut self, now: u64) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = now;
    }

    /// bbr_update_cycle_phase; like bbr_is_next_cycle_phase it judges the phase by the gain
    /// in force, which `leocc-ref` changes between ACKs.
    fn update_cycle_phase(&mut self, s: &AckSample) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let full_length = s.now_us.saturating_sub(self.cycle_stamp) > self.min_rtt_us;
        let gain = self.pacing_gain;
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

    /// bbr_reset_probe_bw_mode: a random phase other than the draining one.
    pub fn enter_probe_bw(&mut self, now: u64) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_LEN as u64 - 1) as usize;
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

    /// bbr_check_drain; returns whether STARTUP ended.
    fn check_drain(&mut self, s: &AckSample) -> bool {
        let startup_ended = self.mode == Mode::Startup && self.full_bw_reached;
        if startup_ended {
            self.mode = Mode::Drain;
        }
        if self.mode == Mode::Drain && s.in_flight as f64 <= self.inflight(self.bw.get(), 1.0) {
            self.enter_probe_bw(s.now_us);
        }
        startup_ended
    }

    /// The part of `bbr_main` before the min-RTT and PROBE_RTT logic: the first RTT's pacing
    /// rate, bandwidth, ACK aggregation, gain cycle, full-pipe test and DRAIN.
    pub fn update_model(&mut self, s: &AckSample) -> ModelUpdate {
        if !self.has_rtt {
            if let Some(r) = s.rtt_us {
                // bbr_init_pacing_rate_from_rtt once the first RTT is known.
                self.pacing_rate = HIGH_GAIN * self.init_cwnd as f64 * self.mss * 1e6 / r.max(1) as f64;
            }
        }
        let sample_bw = self.update_bw(s);
        self.update_ack_aggregation(s);
        self.update_cycle_phase(s);
        self.check_full_bw_reached(s);
        let startup_ended = self.check_drain(s);
        ModelUpdate { sample_bw, startup_ended }
    }

    /// The min-RTT filter of bbr_update_min_rtt; returns whether the window had expired.
    pub fn update_min_rtt_filter(&mut self, s: &AckSample) -> bool {
        let expired = s.now_us > self.min_rtt_stamp + self.min_rtt_win_us;
        if let Some(rtt) = s.rtt_us {
            if rtt < self.min_rtt_us || expired {
                self.min_rtt_us = rtt.max(1);
                self.min_rtt_stamp = s.now_us;
                self.has_rtt = true;
            }
        }
        expired
    }

    /// Enters PROBE_RTT (the caller decides when), remembering the window to restore.
    pub fn enter_probe_rtt(&mut self) {
        self.mode = Mode::ProbeRtt;
        self.save_cwnd();
        self.probe_rtt_done = None;
    }

    /// One ACK in PROBE_RTT: once inflight fell to `cap`, wait 200 ms and a round trip.
    /// Returns whether both have passed; leaving the mode is the caller's.
    pub fn probe_rtt_elapsed(&mut self, s: &AckSample, cap: u32) -> bool {
        match self.probe_rtt_done {
            None => {
                if s.in_flight <= cap {
                    self.probe_rtt_done = Some(s.now_us + PROBE_RTT_US);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = s.delivered_total;
                }
                false
            }
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                self.probe_rtt_round_done && s.now_us > done
            }
        }
    }

    /// bbr_update_gains, with `probe_up_gain` as the probing phase's pacing gain.
    pub fn update_gains(&mut self, probe_up_gain: f64) {
        let (p, c) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => {
                let phase = match self.cycle_idx {
                    0 => probe_up_gain,
                    1 => PROBE_DOWN_GAIN,
                    _ => 1.0,
                };
                (phase, CWND_GAIN)
            }
            Mode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    /// bbr_save_cwnd: the window to restore after recovery or PROBE_RTT.
    pub fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.prev_ca_state == CaState::Open && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    /// What an RTO does to BBR: tcp_enter_loss has the ssthresh hook save the window and sets
    /// cwnd = in flight + 1 (= 1 here, everything unSACKed was just marked lost); bbr_set_state
    /// resets the full-bw probe.
    pub fn on_rto(&mut self) {
        self.save_cwnd();
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        self.cwnd = 1;
    }

    fn set_pacing_rate(&mut self, bw: f64) {
        let rate = bw * self.pacing_gain * (1.0 - PACING_MARGIN);
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

    /// The end of `bbr_main`: pacing rate and cwnd from `bw` (the max filter's, unless the
    /// caller has a reason to use another estimate); in PROBE_RTT cwnd is held at
    /// `probe_rtt_cap`.
    pub fn set_pacing_and_cwnd(&mut self, s: &AckSample, bw: f64, probe_rtt_cap: u32) {
        self.set_pacing_rate(bw);
        if s.acked_sacked > 0 {
            if let Some(c) = self.recover_or_restore(s) {
                self.cwnd = c;
            } else {
                // bbr_set_cwnd's target: BDP × cwnd gain, the ACK-aggregation allowance, and
                // the quantization budget.
                let target =
                    self.quantization_budget(self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd(bw)) as u32;
                if self.full_bw_reached {
                    self.cwnd = (self.cwnd + s.acked_sacked).min(target);
                } else if self.cwnd < target || s.delivered_total < self.init_cwnd as u64 {
                    self.cwnd += s.acked_sacked;
                }
                self.cwnd = self.cwnd.max(MIN_CWND);
            }
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(probe_rtt_cap);
        }
    }
}
