//! SaTCP (Cao et al., "SaTCP: Link-Layer Informed TCP Adaptation for Highly Dynamic LEO
//! Satellite Networks", IEEE INFOCOM 2023): CUBIC that, when told a satellite handover is
//! happening, freezes its congestion state instead of reading the handover's losses and
//! timeouts as congestion.
//!
//! As in the LeoCC paper's evaluation (§5: SaTCP driven by LeoCC's reconfiguration detector),
//! a reconfiguration event opens a freeze window. During it the CUBIC state saved at the
//! event (cwnd, ssthresh, W_max, epoch) is kept: a loss-triggered reduction or a timeout
//! is undone as soon as it happens, and growth continues from the saved state. The window
//! lasts `FREEZE_US` (our choice: longer than the 45–120 ms outages plus the recovery round
//! trip that follows; the SaTCP paper leaves its length to the handover predictor).

use super::cubic::Cubic;
use super::{AckSample, CcConfig, Controller, ReconfigEvent};

/// How long after a reconfiguration event losses and timeouts are ignored.
const FREEZE_US: u64 = 300_000;

/// SaTCP.
#[derive(Clone, Debug)]
pub struct Satcp {
    cubic: Cubic,
    frozen: Option<(u64, Box<Cubic>)>,
    freezes: u64,
}

impl Satcp {
    /// A SaTCP controller.
    pub fn new(cfg: &CcConfig) -> Self {
        Satcp { cubic: Cubic::with(cfg, super::cubic::BETA, super::cubic::C), frozen: None, freezes: 0 }
    }

    fn frozen_at(&mut self, now: u64) -> Option<&Cubic> {
        if self.frozen.as_ref().is_some_and(|(until, _)| now >= *until) {
            self.frozen = None;
        }
        self.frozen.as_ref().map(|(_, c)| c.as_ref())
    }
}

impl Controller for Satcp {
    fn name(&self) -> &'static str {
        "satcp"
    }

    fn on_ack(&mut self, s: &AckSample) {
        self.cubic.on_ack(s);
    }

    fn on_congestion_event(&mut self, now_us: u64, in_flight: u32) {
        match self.frozen_at(now_us).cloned() {
            Some(saved) => self.cubic.restore(&saved),
            None => self.cubic.on_congestion_event(now_us, in_flight),
        }
    }

    fn on_rto(&mut self, now_us: u64) {
        match self.frozen_at(now_us).cloned() {
            Some(saved) => self.cubic.restore(&saved),
            None => self.cubic.on_rto(now_us),
        }
    }

    fn on_reconfig(&mut self, ev: &ReconfigEvent) {
        self.freezes += 1;
        self.frozen = Some((ev.now_us + FREEZE_US, Box::new(self.cubic.clone())));
    }

    fn cwnd(&self) -> u32 {
        self.cubic.cwnd()
    }

    fn pacing_rate(&self) -> Option<f64> {
        None
    }

    fn uses_prr(&self) -> bool {
        true
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let mut v = self.cubic.state();
        v.push(("frozen", self.frozen.is_some() as u8 as f64));
        v.push(("freezes", self.freezes as f64));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::ack;
    use crate::cc::CaState;

    #[test]
    fn keeps_its_window_through_a_handover_but_not_after() {
        let mut s = Satcp::new(&CcConfig { mss: 1448, init_cwnd: 10, seed: 0, params: Vec::new() });
        s.on_ack(&ack(0, 90, CaState::Open));
        assert_eq!(s.cwnd(), 100);
        s.on_reconfig(&ReconfigEvent { time_us: 1_000_000, seq: 1, now_us: 1_000_000, confidence: 100 });
        s.on_congestion_event(1_050_000, 100);
        assert_eq!(s.cwnd(), 100, "loss during the freeze is not congestion");
        s.on_rto(1_100_000);
        assert_eq!(s.cwnd(), 100, "nor is a timeout");
        s.on_congestion_event(1_000_000 + FREEZE_US + 1, 100);
        assert_eq!(s.cwnd(), 70, "after the freeze it is CUBIC again");
    }
}
