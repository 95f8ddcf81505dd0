//! Congestion controls behind one small trait, in the style of quinn-proto's `congestion`
//! module: the transport owns loss detection and hands each controller what Linux's
//! `tcp_congestion_ops` sees — a per-ACK rate sample (net/ipv4/tcp_rate.c), the entry into
//! recovery, timeouts — and reads back a congestion window and an optional pacing rate.
//!
//! One file per control, each citing its source and parameters. `new_controller` maps a
//! name (as on the command line) to a boxed controller.

mod bbr;
mod bbr_core;
mod bbr3;
mod copa;
mod cubic;
mod leocc;
mod leocc_ref;
pub mod param;
mod reno;
mod satcp;
mod vegas;
mod vivace;

use leocc_base::controls::{self, Engine, Params};

pub use bbr::Bbr;
pub use bbr3::Bbr3;
pub use copa::Copa;
pub use cubic::Cubic;
pub use leocc::Leocc;
pub use leocc_ref::LeoccRef;
pub use reno::Reno;
pub use satcp::Satcp;
pub use vegas::Vegas;
pub use vivace::Vivace;

/// The loss-recovery state of the sender, as Linux's `icsk_ca_state` (Open, Recovery, Loss).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    /// No loss being repaired.
    Open,
    /// Fast recovery after a loss detected by SACK/RACK.
    Recovery,
    /// Recovery after a retransmission timeout.
    Loss,
}

impl CaState {
    /// Whether an ACK may raise a window-based control's cwnd (Linux `tcp_cong_control`): in
    /// every state but Recovery, whose window PRR sets. In Loss, slow start from one packet is
    /// how the window lost at a timeout is retransmitted; a sender held at one packet until
    /// the whole window was repaired sent one retransmission per backed-off RTO and never
    /// recovered (Cubic at 0.1 Mbit/s for 40 s next to LeoCC on drawn path 6 of `leocc bench
    /// robust`).
    pub fn may_raise_cwnd(self) -> bool {
        self != CaState::Recovery
    }
}

/// What a controller learns from one ACK: Linux's `struct rate_sample` plus the socket
/// fields a `cong_control` hook reads. Counts are in packets (segments of `mss` bytes).
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    /// Time of the ACK's arrival at the sender.
    pub now_us: u64,
    /// Packets newly delivered (cumulatively ACKed or SACKed) by this ACK.
    pub acked_sacked: u32,
    /// Packets newly marked lost while processing this ACK.
    pub losses: u32,
    /// Rate sample: packets delivered over `interval_us`; -1 when there is no valid sample.
    pub delivered: i64,
    /// Rate sample interval, max(send interval, ACK interval); -1 when invalid.
    pub interval_us: i64,
    /// `tp->delivered` when the sampled packet was sent (the start of its round trip).
    pub prior_delivered: u64,
    /// RTT of the most recently sent packet this ACK delivered (never retransmitted ones only).
    pub rtt_us: Option<u64>,
    /// Packets in flight before this ACK was processed.
    pub prior_in_flight: u32,
    /// Packets in flight after processing it.
    pub in_flight: u32,
    /// The sample was taken while the sender was application-limited.
    pub app_limited: bool,
    /// The sampled packet had been retransmitted.
    pub is_retrans: bool,
    /// Packets in flight when the sampled packet was sent (BBRv3 `tx_in_flight`).
    pub tx_in_flight: u32,
    /// Packets marked lost while the sampled packet was in flight (BBRv3 `rs.lost`).
    pub lost: u64,
    /// Loss-recovery state after processing this ACK.
    pub ca_state: CaState,
    /// Total packets delivered so far (`tp->delivered`).
    pub delivered_total: u64,
    /// Total packets marked lost so far.
    pub lost_total: u64,
    /// Windowed minimum RTT (Linux `tcp_min_rtt`), 0 when unknown.
    pub min_rtt_us: u64,
    /// Smoothed RTT, 0 when unknown.
    pub srtt_us: u64,
    /// Payload bytes per packet.
    pub mss: u32,
    /// The last transmission attempt was stopped by cwnd, latched for a window of data (Linux
    /// `tp->is_cwnd_limited`, kept by `tcp_cwnd_validate`).
    pub cwnd_limited: bool,
    /// Most packets outstanding in the current window (Linux `tp->max_packets_out`).
    pub max_packets_out: u32,
}

impl AckSample {
    /// Linux `tcp_is_cwnd_limited`: whether a loss-based control may grow its window `cwnd`.
    /// Not while something else (the send buffer, the application, pacing) holds the flow
    /// below it, except in slow start up to twice what was outstanding. Without this a flow
    /// held by its send buffer grew cwnd without bound (118,000 packets after 11 s on drawn
    /// path 21, where the kernel's stayed at 5,437), and every reduction after a loss started
    /// from there.
    pub fn is_cwnd_limited(&self, cwnd: u32, in_slow_start: bool) -> bool {
        self.cwnd_limited || (in_slow_start && cwnd < 2 * self.max_packets_out)
    }

    /// The delivery rate of this sample in bytes per second, if the sample is valid.
    pub fn delivery_rate(&self) -> Option<f64> {
        (self.delivered > 0 && self.interval_us > 0)
            .then(|| self.delivered as f64 * self.mss as f64 * 1e6 / self.interval_us as f64)
    }
}

/// A reconfiguration event as the detector (or the oracle) reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconfigEvent {
    /// When the detector decided a reconfiguration happened.
    pub time_us: u64,
    /// Event number, increasing from 1.
    pub seq: u32,
    /// When the sender learns about it.
    pub now_us: u64,
    /// How sure the detector is, 0 ..= `leocc_core_sys::CONF_FULL` (the simulator's own
    /// detector and the oracle are always sure).
    pub confidence: u32,
}

/// A congestion control. The sender calls the hooks; the controller keeps its window.
pub trait Controller: Send {
    /// Name as on the command line.
    fn name(&self) -> &'static str;
    /// Every ACK, after loss detection and the recovery state machine (`cong_control`).
    fn on_ack(&mut self, s: &AckSample);
    /// Fast recovery starts (the first loss of an episode was detected).
    fn on_congestion_event(&mut self, _now_us: u64, _in_flight: u32) {}
    /// Recovery (fast or after a timeout) ended: everything sent before it was ACKed.
    fn on_recovery_exit(&mut self, _now_us: u64) {}
    /// The retransmission timer fired.
    fn on_rto(&mut self, _now_us: u64) {}
    /// The detector reported a satellite reconfiguration.
    fn on_reconfig(&mut self, _ev: &ReconfigEvent) {}
    /// A new terminal-to-PoP RTT measurement from the detector's probes.
    fn on_path(&mut self, _now_us: u64, _term_pop_rtt_us: u64) {}
    /// A packet (new or retransmission) left the sender; `tx_index` numbers transmissions.
    fn on_packet_sent(&mut self, _now_us: u64, _tx_index: u64, _in_flight: u32) {}
    /// The transmission `tx_index` was delivered, `rtt_us` after it was sent.
    fn on_packet_acked(&mut self, _now_us: u64, _tx_index: u64, _rtt_us: u64) {}
    /// The transmission `tx_index` was declared lost.
    fn on_packet_lost(&mut self, _now_us: u64, _tx_index: u64) {}
    /// Congestion window in packets (at least 1).
    fn cwnd(&self) -> u32;
    /// Pacing rate in bytes per second, or None for no pacing.
    fn pacing_rate(&self) -> Option<f64>;
    /// Whether the sender should pace the window reduction of fast recovery with
    /// Proportional Rate Reduction, as Linux does for controls without `cong_control`
    /// (Reno, CUBIC, Vegas). Controls that set their window on every ACK answer false.
    fn uses_prr(&self) -> bool {
        false
    }
    /// Asked after every `on_ack`: whether the control wants the sender to mark the flow
    /// application-limited now, so that the rate samples of what is in flight and what is sent
    /// next (until that much is delivered) count as app-limited (Linux: the control sets
    /// `tp->app_limited = delivered + in flight`). BBR does this on every ACK in PROBE_RTT
    /// ("ignore low rate samples during this mode", tcp_bbr.c bbr_update_min_rtt), which keeps
    /// the bandwidth filter and the full-pipe test away from the dip's low rates, also through
    /// a recovery or a timeout that follows it.
    fn marks_app_limited(&self) -> bool {
        false
    }
    /// Internal state for time series, as (name, value) pairs.
    fn state(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// Settings every controller may read.
#[derive(Clone, Debug)]
pub struct CcConfig {
    /// Payload bytes per packet.
    pub mss: u32,
    /// Initial congestion window in packets.
    pub init_cwnd: u32,
    /// Seed for controllers that randomise (BBR's gain phase, Vivace's trial order).
    pub seed: u64,
    /// `NAME=VALUE` settings of this controller's own parameters (`leocc sim --param`),
    /// checked when the scenario is built.
    pub params: Vec<String>,
}

/// LeoCC fed the trace's true reconfigurations instead of the detector's events (simulator
/// only): beside `leocc` in one run or report, it shows what detection errors cost. It is the
/// same controller with the same parameters (`--param leocc.NAME=VALUE` applies to both).
pub use leocc_base::controls::ORACLE_LEOCC;

/// The names `new_controller` accepts: the registry's simulator controls
/// ([`leocc_base::controls::CONTROLS`]).
pub fn names() -> Vec<&'static str> {
    controls::names(Engine::Sim)
}

/// Whether `new_controller` accepts `name`.
pub fn known(name: &str) -> bool {
    controls::runs_in(Engine::Sim, name)
}

/// Whether flows of control `name` get the oracle's reconfigurations.
pub fn fed_by_oracle(name: &str) -> bool {
    name == ORACLE_LEOCC
}

pub use leocc_core_sys::{closest, did_you_mean};

/// The error for a control name that is not one of [`names`]: the known names, and the
/// likely one when `name` looks like a typo.
pub fn unknown_cc(name: &str) -> String {
    let names = names();
    format!("unknown congestion control '{name}'{} (known: {})", did_you_mean(name, names.iter().copied()), names.join(", "))
}

/// The controller called `name` with `cfg`'s parameter settings, or an error: an unknown name
/// (listing the known ones), or a setting the control refuses (see [`check_params`]).
pub fn new_controller(name: &str, cfg: &CcConfig) -> Result<Box<dyn Controller>, String> {
    if !known(name) {
        return Err(unknown_cc(name));
    }
    if controls::find(name).is_some_and(|c| c.params == Params::None) {
        // Any setting is refused here.
        param::resolve(name, &cfg.params)?;
    }
    Ok(match name {
        "reno" => Box::new(Reno::new(cfg)),
        "cubic" => Box::new(Cubic::new(cfg)?),
        "vegas" => Box::new(Vegas::new(cfg)),
        "bbr" => Box::new(Bbr::new(cfg)?),
        "bbr3" => Box::new(Bbr3::new(cfg)?),
        "copa" => Box::new(Copa::new(cfg)),
        "vivace" => Box::new(Vivace::new(cfg)),
        "satcp" => Box::new(Satcp::new(cfg)),
        "leocc" => Box::new(Leocc::new(cfg)?),
        "leocc-ref" => Box::new(LeoccRef::new(cfg)),
        ORACLE_LEOCC => Box::new(Leocc::new(cfg)?.named(ORACLE_LEOCC)),
        _ => return Err(unknown_cc(name)),
    })
}

/// Splits and checks one `CC.NAME=VALUE` setting (`leocc.delta_rtt_us=0`) into (control,
/// `NAME=VALUE`); the one parser of `leocc sim --param` and the Python binding's `params`.
pub fn parse_setting(p: &str) -> Result<(String, String), String> {
    let Some((cc, setting)) = p.split_once('.').filter(|(cc, s)| !cc.is_empty() && s.contains('=')) else {
        return Err("expected CC.NAME=VALUE, e.g. leocc.delta_rtt_us=0".into());
    };
    check_params(cc, &[setting.to_string()])?;
    Ok((cc.to_string(), setting.to_string()))
}

/// Check `NAME=VALUE` settings for the controller called `name`: an unknown name or a value
/// outside the parameter's range is an error naming it (see [`param`]).
pub fn check_params(name: &str, params: &[String]) -> Result<(), String> {
    if params.is_empty() {
        return Ok(());
    }
    match controls::find(name).map(|c| c.params) {
        // The core's one parser (leocc_core_sys::Params::parse), as the controller uses it.
        Some(Params::Core) => leocc_core_sys::Params::default().apply(params.iter().map(String::as_str)).map_err(|e| e.to_string()),
        _ => param::resolve(name, params).map(|_| ()),
    }
}

/// The settable parameters of the controller called `name`, with defaults and ranges.
pub fn list_params(name: &str) -> Result<Vec<param::ParamSpec>, String> {
    param::specs(name).ok_or_else(|| unknown_cc(name))
}

/// A windowed max filter over rounds (or any monotone clock): keeps the best value of each
/// of the last `window` slots. Used by BBR's bandwidth filter and similar.
#[derive(Clone, Debug)]
pub(crate) struct WindowedMax {
    window: u64,
    entries: std::collections::VecDeque<(u64, f64)>,
}

impl WindowedMax {
    pub(crate) fn new(window: u64) -> Self {
        WindowedMax { window, entries: std::collections::VecDeque::new() }
    }

    /// Add `value` observed at `time`; values older than `time - window` expire.
    pub(crate) fn update(&mut self, time: u64, value: f64) {
        while self.entries.back().is_some_and(|&(_, v)| v <= value) {
            self.entries.pop_back();
        }
        self.entries.push_back((time, value));
        self.expire(time);
    }

    /// Drop values older than the window ending at `time`.
    pub(crate) fn expire(&mut self, time: u64) {
        while self.entries.len() > 1 && self.entries.front().is_some_and(|&(t, _)| t + self.window <= time) {
            self.entries.pop_front();
        }
    }

    pub(crate) fn get(&self) -> f64 {
        self.entries.front().map_or(0.0, |&(_, v)| v)
    }
}

/// Helpers for the controls' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::{AckSample, CaState};

    /// An ACK at `now` delivering `acked` packets, with no rate sample and no RTT.
    pub(crate) fn ack(now: u64, acked: u32, ca_state: CaState) -> AckSample {
        AckSample {
            now_us: now,
            acked_sacked: acked,
            losses: 0,
            delivered: -1,
            interval_us: -1,
            prior_delivered: 0,
            rtt_us: None,
            prior_in_flight: 0,
            in_flight: 0,
            app_limited: false,
            is_retrans: false,
            tx_in_flight: 0,
            lost: 0,
            ca_state,
            delivered_total: 0,
            lost_total: 0,
            min_rtt_us: 20_000,
            srtt_us: 20_000,
            mss: 1448,
            cwnd_limited: true,
            max_packets_out: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_a_suggestion_and_strangers_none() {
        assert!(unknown_cc("cubci").contains("(did you mean cubic?)"), "{}", unknown_cc("cubci"));
        assert!(unknown_cc("BBR3").contains("did you mean bbr3?"));
        assert!(!unknown_cc("quic").contains("did you mean"), "{}", unknown_cc("quic"));
        let e = check_params("cubic", &["betta=0.5".into()]).unwrap_err();
        assert!(e.contains("did you mean beta?"), "{e}");
        let e = check_params("leocc", &["delta_rtt=0".into()]).unwrap_err();
        assert!(e.contains("did you mean delta_rtt_us?"), "{e}");
    }

    #[test]
    fn a_controller_refuses_the_settings_its_control_refuses() {
        let cfg = |params: &[&str]| CcConfig { mss: 1448, init_cwnd: 10, seed: 1, params: params.iter().map(|s| s.to_string()).collect() };
        let refused = |name: &str, params: &[&str]| new_controller(name, &cfg(params)).err().expect("refused");
        let e = refused("leocc", &["min_cwnd=0"]);
        assert!(e.contains("'min_cwnd' = 0 is out of range: it must be in 2..=1000"), "{e}");
        assert!(new_controller("leocc", &cfg(&["min_cwnd=8", "cycle_len=6"])).is_ok());
        assert!(refused("cubic", &["beta=2"]).contains("cubic.beta=2 is out of range"));
        assert!(refused("bbr3", &["loss_thresh=0.9"]).contains("bbr3.loss_thresh"));
        assert!(refused("bbr", &["probe_rtt_interval_ms=1"]).contains("bbr.probe_rtt_interval_ms"));
        assert!(refused("reno", &["x=1"]).contains("no settable parameters"));
        assert!(refused("satcp", &["beta=0.5"]).contains("no settable parameters"));
    }

    #[test]
    fn windowed_max_expires_old_best() {
        let mut f = WindowedMax::new(10);
        f.update(0, 5.0);
        f.update(3, 2.0);
        assert_eq!(f.get(), 5.0);
        f.update(10, 1.0);
        assert_eq!(f.get(), 2.0);
        f.update(14, 0.5);
        assert_eq!(f.get(), 1.0);
    }

    #[test]
    fn every_name_constructs() {
        let cfg = CcConfig { mss: 1448, init_cwnd: 10, seed: 1, params: Vec::new() };
        for n in names() {
            let c = new_controller(n, &cfg).unwrap();
            assert_eq!(c.name(), n);
            assert!(c.cwnd() >= 1);
        }
        assert!(new_controller("nope", &cfg).is_err());
    }
}
