//! LeoCC (Lu et al., "LeoCC: Making Internet Congestion Control Robust to LEO Satellite
//! Dynamics", SIGCOMM 2025) through `leocc-core-sys`: the same C core (core/leocc.c) that the
//! kernel's BPF struct_ops runs. This file only translates.
//!
//! Per ACK the sender's rate sample becomes a `leocc_ack_sample` (the fields Linux's
//! `struct rate_sample` and `tcp_sock` give a `cong_control` hook: an invalid sample has
//! interval 0, no RTT is 0, CA states as Linux numbers them), and the core's output — pacing
//! rate in bytes/s and cwnd in packets — is applied as is. Reconfiguration events (detected by
//! the simulator's detector model, or the oracle) go to `leocc_on_reconfig` with the event
//! time (the first probe reply after the gap) and sequence number; terminal-PoP RTTs from the
//! probes go to `leocc_on_path`. On a retransmission timeout the kernel sets cwnd to
//! inflight + 1 (`tcp_enter_loss`) until the next ACK lets the control decide again; so do we.
//! Parameters: the core's defaults (`leocc_default_params`, documented in docs/algorithm.md),
//! with the scenario's `--param leocc.NAME=VALUE` settings applied.

use leocc_core_sys::{LeoccCore, Output, Params};

use super::{AckSample, CaState, CcConfig, Controller, ReconfigEvent};

/// Linux `enum tcp_ca_state` values the core expects.
const TCP_CA_OPEN: u32 = 0;
/// Linux TCP_CA_Recovery.
const TCP_CA_RECOVERY: u32 = 3;
/// Linux TCP_CA_Loss.
const TCP_CA_LOSS: u32 = 4;

/// LeoCC.
pub struct Leocc {
    core: LeoccCore,
    out: Output,
    name: &'static str,
}

impl std::fmt::Debug for Leocc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leocc").field("out", &self.out).field("core", &self.core).finish()
    }
}

impl Leocc {
    /// A LeoCC controller with the core's default parameters and `cfg`'s `NAME=VALUE`
    /// settings (`leocc_core_sys::Params::parse`); a setting the core refuses is the error.
    pub fn new(cfg: &CcConfig) -> Result<Self, String> {
        let mut params = Params { init_cwnd: cfg.init_cwnd, ..Params::default() };
        params.apply(cfg.params.iter().map(String::as_str)).map_err(|e| e.to_string())?;
        let core = LeoccCore::new(params);
        let v = core.view();
        Ok(Leocc { core, out: Output { pacing_rate: v.pacing_rate, cwnd: v.cwnd.max(1) }, name: "leocc" })
    }

    /// The same controller under another name (`leocc-oracle`: the world feeds it the truth).
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    fn sample(s: &AckSample) -> leocc_core_sys::AckSample {
        let valid = s.delivered > 0 && s.interval_us > 0;
        leocc_core_sys::AckSample {
            now_us: s.now_us,
            delivered_total: s.delivered_total,
            lost_total: s.lost_total,
            interval_us: if valid { s.interval_us as u64 } else { 0 },
            delivered: if valid { s.delivered.min(u32::MAX as i64) as u32 } else { 0 },
            rtt_us: s.rtt_us.map_or(0, |r| r.clamp(1, u32::MAX as u64) as u32),
            acked_sacked: s.acked_sacked,
            losses: s.losses,
            prior_in_flight: s.prior_in_flight,
            in_flight: s.in_flight,
            app_limited: s.app_limited as u32,
            mss: s.mss,
            ca_state: match s.ca_state {
                CaState::Open => TCP_CA_OPEN,
                CaState::Recovery => TCP_CA_RECOVERY,
                CaState::Loss => TCP_CA_LOSS,
            },
            _pad: 0,
        }
    }
}

impl Controller for Leocc {
    fn name(&self) -> &'static str {
        self.name
    }

    fn on_ack(&mut self, s: &AckSample) {
        self.out = self.core.on_ack(&Self::sample(s));
    }

    fn on_rto(&mut self, _now_us: u64) {
        self.out.cwnd = 1;
    }

    fn on_reconfig(&mut self, ev: &ReconfigEvent) {
        // The outcome is provisional (a terrestrial skip can be revised once the new path's
        // rate is measured); the core's own counters in the view are the final word.
        self.core.on_reconfig(ev.time_us, ev.seq as u64, ev.confidence);
    }

    fn on_path(&mut self, now_us: u64, term_pop_rtt_us: u64) {
        self.core.on_path(now_us, term_pop_rtt_us.min(u32::MAX as u64) as u32);
    }

    fn cwnd(&self) -> u32 {
        self.out.cwnd.max(1)
    }

    fn pacing_rate(&self) -> Option<f64> {
        (self.out.pacing_rate > 0).then_some(self.out.pacing_rate as f64)
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let v = self.core.view();
        let mbps = |b: u64| b as f64 * 8.0 / 1e6;
        let ms = |us: u32| us as f64 / 1e3;
        vec![
            ("mode", v.mode as u8 as f64),
            ("congested", v.congested as u8 as f64),
            ("competing", v.competing as u8 as f64),
            ("bbw_a_mbps", mbps(v.bbw_a)),
            ("bbw_m_mbps", mbps(v.bbw_m)),
            ("brtt_l_ms", ms(v.brtt_l_us)),
            ("brtt_h_ms", ms(v.brtt_h_us)),
            ("brtt_latest_ms", ms(v.brtt_latest_us)),
            ("target_mbps", mbps(v.target_rate)),
            ("rtt_nonsat_ms", ms(v.rtt_nonsat_us)),
            ("terrestrial_bottleneck", v.terrestrial_bottleneck as u8 as f64),
            // Events that cut the windows (adapted, including skips revised later) and skips
            // that stood.
            ("reconfigs_adapted", v.reconfigs as f64),
            ("reconfigs_skipped", v.reconfigs_skipped as f64),
        ]
    }
}
