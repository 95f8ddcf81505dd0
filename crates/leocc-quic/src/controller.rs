//! LeoCC as a quinn congestion controller: [`LeoccConfig`] is the `ControllerFactory`,
//! [`LeoccController`] the per-connection `Controller`. The algorithm is core/leocc.c run
//! through `leocc-core-sys` — the very code the kernel's BPF struct_ops runs.
//!
//! Translation, per ACK batch (`on_end_acks`, quinn's analogue of one TCP ACK):
//! - the batch's delivery-rate sample ([`crate::rate`]) and quinn's latest RTT become a
//!   `leocc_ack_sample` in packets of the current MTU, as Linux's `rate_sample` would;
//! - losses quinn declared since the previous batch are the sample's `losses`, and the core
//!   sees TCP_CA_RECOVERY until a packet sent after the loss is acknowledged (TCP's recovery
//!   episode), TCP_CA_LOSS after persistent congestion (QUIC's RTO);
//! - detector events from the [`EventSource`] go to `leocc_on_reconfig` / `leocc_on_path`.
//!
//! Mapping the output: quinn has no rate interface; its pacer releases about 1.25 windows per
//! smoothed RTT (`quinn-proto` `connection/pacing.rs`). The window given to quinn is therefore
//! `min(cwnd, pacing_rate x srtt)`: in-flight data is capped at the core's rate times the RTT, so
//! the ACK clock delivers the core's rate, and the pacer spreads it at 1.25 x that rate. A
//! burst phase (pacing gain > 1) raises the window for one RTT and the drain phase lowers it;
//! docs/quic.md reports how closely the achieved rate follows.
//!
//! Clock: the core's microseconds are CLOCK_MONOTONIC (what `Instant` reads on Linux and what
//! the detector stamps events with), taken from one reference pair when the factory is made.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leocc_core_sys::{AckSample, LeoccCore, Params};
use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

use crate::events::{EventSource, NoEvents, Signal};
use crate::rate::RateEstimator;

/// Linux TCP_CA_Open.
const TCP_CA_OPEN: u32 = 0;
/// Linux TCP_CA_Recovery.
const TCP_CA_RECOVERY: u32 = 3;
/// Linux TCP_CA_Loss.
const TCP_CA_LOSS: u32 = 4;
/// Smallest window handed to quinn, in datagrams: quinn's own minimum (2 x max datagram,
/// RFC 9002 §7.2 kMinimumWindow); a zero window is nonsense to its pacer.
const MIN_WINDOW_PACKETS: u64 = 2;

/// Maps `Instant`s to CLOCK_MONOTONIC microseconds.
#[derive(Debug, Clone, Copy)]
pub struct MonoClock {
    base: Instant,
    base_us: u64,
}

impl MonoClock {
    /// Reads both clocks now.
    pub fn new() -> MonoClock {
        let base = Instant::now();
        MonoClock { base, base_us: monotonic_ns() / 1000 }
    }

    /// `t` in CLOCK_MONOTONIC microseconds. Instants from before the reference (quinn may
    /// pass send times older than the factory) saturate rather than wrap.
    pub fn us(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.base) {
            Some(d) => self.base_us + d.as_micros() as u64,
            None => self.base_us.saturating_sub(self.base.duration_since(t).as_micros() as u64),
        }
    }
}

impl Default for MonoClock {
    fn default() -> Self {
        MonoClock::new()
    }
}

/// CLOCK_MONOTONIC in nanoseconds (the detector's and the kernel's time base).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The LeoCC controller factory: give it to `quinn::TransportConfig::congestion_controller_factory`.
#[derive(Clone)]
pub struct LeoccConfig {
    params: Params,
    events: Arc<dyn EventSource>,
    clock: MonoClock,
}

impl std::fmt::Debug for LeoccConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeoccConfig").field("params", &self.params).finish_non_exhaustive()
    }
}

impl LeoccConfig {
    /// The core's default parameters, no detector events.
    pub fn new() -> LeoccConfig {
        LeoccConfig { params: Params::default(), events: Arc::new(NoEvents), clock: MonoClock::new() }
    }

    /// Replaces the core's parameters (e.g. after `Params::apply` of `leocc.NAME=VALUE`s).
    pub fn params(mut self, params: Params) -> LeoccConfig {
        self.params = params;
        self
    }

    /// Where detector events come from (shared by all connections of this factory).
    pub fn events(mut self, events: Arc<dyn EventSource>) -> LeoccConfig {
        self.events = events;
        self
    }
}

impl Default for LeoccConfig {
    fn default() -> Self {
        LeoccConfig::new()
    }
}

impl ControllerFactory for LeoccConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(LeoccController::new(&self, now, current_mtu))
    }
}

/// Counters for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Reconfiguration events passed to the core.
    pub reconfigs_seen: u64,
    /// Terminal-PoP RTTs passed to the core.
    pub paths_seen: u64,
    /// ACK batches with a valid rate sample.
    pub samples: u64,
    /// Loss events quinn reported.
    pub congestion_events: u64,
}

/// One connection's LeoCC.
#[derive(Clone)]
pub struct LeoccController {
    core: LeoccCore,
    params: Params,
    events: Arc<dyn EventSource>,
    clock: MonoClock,
    rate: RateEstimator,
    mtu: u64,
    /// Core output: pacing rate, bytes/s.
    pacing_rate: u64,
    /// Core output: cwnd, packets.
    cwnd: u32,
    /// Latest smoothed and minimum RTT quinn reported.
    srtt: Duration,
    min_rtt: Duration,
    rtt_sample: Duration,
    lost_total_bytes: u64,
    lost_since_ack: u64,
    acked_in_batch: u64,
    in_flight: u64,
    /// Recovery lasts until a packet sent after this time is acknowledged.
    recovery_until: Option<Instant>,
    persistent: bool,
    /// Last detector state forwarded.
    last_seq: u64,
    last_probe_ns: u64,
    stats: Stats,
}

impl std::fmt::Debug for LeoccController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeoccController").field("core", &self.core).field("stats", &self.stats).finish()
    }
}

impl LeoccController {
    fn new(cfg: &LeoccConfig, now: Instant, mtu: u16) -> LeoccController {
        let core = LeoccCore::new_at(cfg.params, cfg.clock.us(now));
        let v = core.view();
        let mut c = LeoccController {
            core,
            params: cfg.params,
            events: cfg.events.clone(),
            clock: cfg.clock,
            rate: RateEstimator::new(now),
            mtu: u64::from(mtu.max(1)),
            pacing_rate: v.pacing_rate,
            cwnd: v.cwnd.max(1),
            srtt: Duration::ZERO,
            min_rtt: Duration::ZERO,
            rtt_sample: Duration::ZERO,
            lost_total_bytes: 0,
            lost_since_ack: 0,
            acked_in_batch: 0,
            in_flight: 0,
            recovery_until: None,
            persistent: false,
            last_seq: 0,
            last_probe_ns: 0,
            stats: Stats::default(),
        };
        // An event that happened before this connection existed is history, not news: only
        // later sequence numbers are forwarded.
        c.last_seq = c.events.latest().map_or(0, |s| s.seq);
        c
    }

    /// The model's snapshot (mode, estimates, cycle phase...).
    pub fn view(&self) -> leocc_core_sys::View {
        self.core.view()
    }

    /// Event and sample counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The core's pacing rate, bytes per second.
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate
    }

    fn poll_events(&mut self) {
        let Some(s) = self.events.latest() else { return };
        self.apply_signal(&s);
    }

    fn apply_signal(&mut self, s: &Signal) {
        if s.seq > self.last_seq && s.reconfig_time_ns > 0 {
            self.last_seq = s.seq;
            self.stats.reconfigs_seen += 1;
            self.core.on_reconfig(s.reconfig_time_ns / 1000, s.seq, u32::from(s.confidence));
        }
        if s.probe_time_ns > self.last_probe_ns && s.term_pop_rtt_us > 0 {
            self.last_probe_ns = s.probe_time_ns;
            self.stats.paths_seen += 1;
            self.core.on_path(s.probe_time_ns / 1000, s.term_pop_rtt_us);
        }
    }

    /// One packet acknowledged, with quinn's smoothed and minimum RTT (`Controller::on_ack`
    /// without the `RttEstimator`, which only quinn can make).
    pub fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, srtt: Duration, min_rtt: Duration) {
        self.rate.on_ack(now, sent, bytes);
        self.acked_in_batch += bytes;
        self.srtt = srtt;
        self.min_rtt = min_rtt;
        // The RTT of this very packet: quinn's latest sample can lag one batch behind.
        self.rtt_sample = now.saturating_duration_since(sent);
        if self.recovery_until.is_some_and(|t| sent > t) {
            self.recovery_until = None;
            self.persistent = false;
        }
    }

    fn packets(&self, bytes: u64) -> u64 {
        bytes / self.mtu
    }
}

fn clamp_u32(v: u64) -> u32 {
    v.min(u64::from(u32::MAX)) as u32
}

impl Controller for LeoccController {
    fn on_sent(&mut self, now: Instant, _bytes: u64, _last_packet_number: u64) {
        // `_bytes` is not the packet's size in a GSO batch (quinn passes the batch buffer's
        // length so far); the estimator needs only the time.
        self.rate.on_sent(now, false);
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, _app_limited: bool, rtt: &RttEstimator) {
        self.acked(now, sent, bytes, rtt.get(), rtt.min());
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, _largest: Option<u64>) {
        self.poll_events();
        let prior_in_flight = self.in_flight.max(in_flight + self.acked_in_batch);
        self.in_flight = in_flight;
        let s = self.rate.on_end_acks(in_flight, self.min_rtt);
        let valid = s.delivered > 0 && !s.interval.is_zero();
        if valid {
            self.stats.samples += 1;
        }
        let ca_state = match self.recovery_until {
            None => TCP_CA_OPEN,
            Some(_) if self.persistent => TCP_CA_LOSS,
            Some(_) => TCP_CA_RECOVERY,
        };
        let sample = AckSample {
            now_us: self.clock.us(now),
            delivered_total: self.packets(s.delivered_total),
            lost_total: self.packets(self.lost_total_bytes),
            interval_us: if valid { s.interval.as_micros() as u64 } else { 0 },
            delivered: if valid { clamp_u32(self.packets(s.delivered).max(1)) } else { 0 },
            rtt_us: clamp_u32(self.rtt_sample.as_micros() as u64),
            acked_sacked: clamp_u32(self.packets(self.acked_in_batch).max(1)),
            losses: clamp_u32(self.packets(self.lost_since_ack)),
            prior_in_flight: clamp_u32(self.packets(prior_in_flight)),
            in_flight: clamp_u32(self.packets(in_flight)),
            app_limited: u32::from(app_limited || s.app_limited),
            mss: clamp_u32(self.mtu),
            ca_state,
            _pad: 0,
        };
        let out = self.core.on_ack(&sample);
        self.pacing_rate = out.pacing_rate;
        self.cwnd = out.cwnd.max(1);
        self.acked_in_batch = 0;
        self.lost_since_ack = 0;
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, lost_bytes: u64) {
        self.stats.congestion_events += 1;
        self.lost_total_bytes += lost_bytes;
        self.lost_since_ack += lost_bytes;
        if self.recovery_until.is_none() || persistent {
            self.recovery_until = Some(now.max(sent));
        }
        if persistent {
            // QUIC's persistent congestion is TCP's RTO: like tcp_enter_loss, one packet until
            // the next ACK lets the core decide again.
            self.persistent = true;
            self.cwnd = 1;
        }
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = u64::from(new_mtu.max(1));
    }

    fn window(&self) -> u64 {
        let cwnd = u64::from(self.cwnd) * self.mtu;
        let rate_window = if self.pacing_rate > 0 && !self.srtt.is_zero() {
            (self.pacing_rate as f64 * self.srtt.as_secs_f64()) as u64
        } else {
            u64::MAX
        };
        cwnd.min(rate_window).max(MIN_WINDOW_PACKETS * self.mtu)
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.window();
        m.pacing_rate = Some(self.pacing_rate.saturating_mul(8));
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        u64::from(self.params.init_cwnd.max(1)) * self.mtu
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests;
