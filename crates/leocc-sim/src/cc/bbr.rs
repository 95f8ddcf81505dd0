//! BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016;
//! Linux net/ipv4/tcp_bbr.c, which this follows function by function; the machinery it
//! shares with `leocc-ref` is in `bbr_core.rs`).
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

use super::bbr_core::{BbrCore, Mode, MIN_CWND, PROBE_UP_GAIN};
use super::{AckSample, CcConfig, Controller};

/// Min RTT filter window (bbr_min_rtt_win_sec).
pub(crate) const MIN_RTT_WIN_US: u64 = 10_000_000;

/// BBR v1.
#[derive(Clone, Debug)]
pub struct Bbr {
    core: BbrCore,
    /// This ACK found the flow in PROBE_RTT (it asks the sender to mark it app-limited).
    probe_rtt_ack: bool,
}

impl Bbr {
    /// A BBR controller with `cfg`'s `bbr.NAME=VALUE` settings; a refused one is the error.
    pub fn new(cfg: &CcConfig) -> Result<Self, String> {
        let p = super::param::resolve("bbr", &cfg.params)?;
        let win_us = (p.get("probe_rtt_interval_ms") * 1000.0) as u64;
        Ok(Bbr { core: BbrCore::new(cfg, win_us), probe_rtt_ack: false })
    }

    /// Bottleneck bandwidth estimate, bytes/s.
    pub fn bw(&self) -> f64 {
        self.core.bw.get()
    }

    /// bbr_update_min_rtt: PROBE_RTT when the min RTT was not refreshed for 10 s, cwnd 4
    /// packets there, then back to PROBE_BW (or STARTUP if the pipe was never full). Every ACK
    /// in PROBE_RTT, the one that enters it and the one that leaves it included, marks the
    /// flow app-limited (`marks_app_limited`), as Linux does.
    fn update_min_rtt(&mut self, s: &AckSample) {
        let c = &mut self.core;
        let expired = c.update_min_rtt_filter(s);
        if expired && c.mode != Mode::ProbeRtt && c.has_rtt {
            c.enter_probe_rtt();
        }
        self.probe_rtt_ack = c.mode == Mode::ProbeRtt;
        if c.mode == Mode::ProbeRtt && c.probe_rtt_elapsed(s, MIN_CWND) {
            c.min_rtt_stamp = s.now_us;
            c.cwnd = c.cwnd.max(c.prior_cwnd);
            if c.full_bw_reached {
                c.enter_probe_bw(s.now_us);
            } else {
                c.mode = Mode::Startup;
            }
        }
    }

    /// One ACK through the model, as `bbr_main`.
    pub(crate) fn main(&mut self, s: &AckSample) {
        self.core.update_model(s);
        self.update_min_rtt(s);
        self.core.update_gains(PROBE_UP_GAIN);
        let bw = self.core.bw.get();
        self.core.set_pacing_and_cwnd(s, bw, MIN_CWND);
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
        self.core.save_cwnd();
    }

    fn on_rto(&mut self, _now_us: u64) {
        self.core.on_rto();
    }

    fn cwnd(&self) -> u32 {
        self.core.cwnd.max(1)
    }

    fn marks_app_limited(&self) -> bool {
        self.probe_rtt_ack
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.core.pacing_rate)
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let c = &self.core;
        vec![
            ("mode", c.mode as u8 as f64),
            ("bw_mbps", c.bw.get() * 8.0 / 1e6),
            ("min_rtt_ms", if c.min_rtt_us == u64::MAX { 0.0 } else { c.min_rtt_us as f64 / 1e3 }),
            ("pacing_gain", c.pacing_gain),
            ("extra_acked", c.aggregation_pkts()),
            ("target", c.target_pkts()),
            ("recovery", f64::from(u8::from(c.in_recovery()))),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CaState;
    use crate::cc::testing::ack;

    #[test]
    fn startup_exits_when_bandwidth_plateaus_and_paces_near_it() {
        let mut b = Bbr::new(&CcConfig { mss: 1448, init_cwnd: 10, seed: 3, params: Vec::new() }).unwrap();
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
        assert!(b.core.full_bw_reached && b.core.mode != Mode::Startup, "still in startup");
        let bw = b.bw() * 8.0 / 1e6;
        assert!((bw - 10.0).abs() < 0.5, "bw {bw}");
        let pacing = b.pacing_rate().unwrap() * 8.0 / 1e6;
        assert!(pacing > 7.0 && pacing < 13.0, "pacing {pacing} Mbit/s");
    }

    #[test]
    fn probe_rtt_marks_every_ack_app_limited_from_entry_to_exit() {
        // tcp_bbr.c bbr_update_min_rtt: in PROBE_RTT, tp->app_limited = delivered + in
        // flight on every ACK, so the dip's low rates (and those of a recovery or timeout
        // during it) neither enter the bandwidth filter nor end STARTUP.
        let mut b = Bbr::new(&CcConfig { mss: 1448, init_cwnd: 10, seed: 3, params: Vec::new() }).unwrap();
        let mut s = ack(1_000, 10, CaState::Open);
        s.delivered = 10;
        s.interval_us = 60_000;
        s.rtt_us = Some(20_000);
        s.in_flight = 100;
        b.on_ack(&s);
        assert!(!b.marks_app_limited(), "outside PROBE_RTT");
        // 10 s without a lower RTT: PROBE_RTT, marked from the entering ACK on.
        let mut modes = Vec::new();
        let mut t = 10_100_000;
        for in_flight in [100, 50, 4, 4, 4, 4, 4, 4] {
            s.now_us = t;
            s.rtt_us = Some(25_000);
            s.in_flight = in_flight;
            s.delivered_total += 10;
            s.prior_delivered = s.delivered_total;
            b.on_ack(&s);
            modes.push((b.core.mode, b.marks_app_limited()));
            t += 60_000;
        }
        assert_eq!(modes[0], (Mode::ProbeRtt, true));
        assert!(modes.iter().filter(|&&(m, _)| m == Mode::ProbeRtt).all(|&(_, marked)| marked), "{modes:?}");
        let exit = modes.iter().position(|&(m, _)| m != Mode::ProbeRtt).expect("PROBE_RTT ended");
        assert!(modes[exit].1, "the exiting ACK marks too: {modes:?}");
        s.now_us = t;
        b.on_ack(&s);
        assert!(!b.marks_app_limited(), "after PROBE_RTT");
    }
}
