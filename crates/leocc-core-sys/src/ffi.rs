//! C layouts of core/leocc.h and the functions of core/leocc.c. Field order and types mirror
//! the header exactly; the sizes are checked by tests here and in core/tests.

/// Tunables of the algorithm (`struct leocc_params`). Gains are fixed point with 1024 = 1.0;
/// times are microseconds. `Params::default()` gives the documented values; see
/// docs/algorithm.md for each one's unit and source.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Pacing gain in Startup (2.885).
    pub startup_gain: u32,
    /// Pacing gain in Drain (1/2.885).
    pub drain_gain: u32,
    /// cwnd = cwnd_gain x BDP + headroom (2).
    pub cwnd_gain: u32,
    /// Burst coefficient bco (1.25).
    pub bco: u32,
    /// Drain coefficient dco (0.75).
    pub dco: u32,
    /// Burst coefficient when congested (1.05).
    pub bco_congested: u32,
    /// Reconfiguration Adaptation inflight cap, x bBW_m x bRTT_l (0.5).
    pub ra_inflight_gain: u32,
    /// Pacing gain of the adaptation's bandwidth probe (1.5).
    pub ra_probe_gain: u32,
    /// Phases per cruise cycle, about one bRTT_l each (8).
    pub cycle_len: u32,
    /// Round trips of the bBW_a max filter (cycle_len + 2).
    pub bw_win_rounds: u32,
    /// W_RT, the window of the RTT range filters, us.
    pub rtt_win_us: u32,
    /// Delta_RTT of eq. 4, us.
    pub delta_rtt_us: u32,
    /// Width of one middle-pass filter bin, us.
    pub mpf_bin_us: u32,
    /// Share of the window's samples (%) that makes a bin part of a band.
    pub mpf_band_share_pct: u32,
    /// Kalman process variance (dimensionless).
    pub kal_q: u32,
    /// Kalman measurement variance (dimensionless).
    pub kal_r: u32,
    /// Kalman initial covariance (dimensionless).
    pub kal_p0: u32,
    /// Startup ends when the bandwidth grows less than this (%) per round...
    pub full_bw_growth_pct: u32,
    /// ...for this many rounds in a row.
    pub full_bw_rounds: u32,
    /// Fresh RTT samples needed before the adaptation's capped round may end.
    pub ra_min_rtt_samples: u32,
    /// Bound on the adaptation's capped step, us.
    pub ra_max_drain_us: u32,
    /// Bound on the adaptation's probe, rounds.
    pub ra_probe_max_rounds: u32,
    /// Bound on a cruise drain phase, in bRTT_l.
    pub drain_phase_max_rounds: u32,
    /// RTT_non-sat rise over its windowed minimum that counts as a spike, us.
    pub nonsat_spike_us: u32,
    /// A terminal-PoP RTT older than this is ignored, us.
    pub path_stale_us: u32,
    /// A reconfiguration event older than this when delivered is ignored, us.
    pub rcf_max_age_us: u32,
    /// Initial window, packets.
    pub init_cwnd: u32,
    /// Floor of every window, packets.
    pub min_cwnd: u32,
    /// Packets added to cwnd_gain x BDP.
    pub cwnd_headroom: u32,
    /// RTT assumed before the first sample, us.
    pub default_rtt_us: u32,
    /// Events the detector graded below this confidence (0..=100) are not acted on.
    pub rcf_min_confidence: u32,
    /// Probe RTTs since the last event before their band width sets the RTT range (0: never).
    pub path_min_samples: u32,
    /// cwnd gain while congested, x1024.
    pub cwnd_gain_congested: u32,
    /// Pace this % under the target.
    pub pacing_margin_pct: u32,
    /// Events closer than this to the last adaptation merge into it, us.
    pub rcf_min_spacing_us: u32,
    /// At most this % of the time in adaptations.
    pub rcf_budget_pct: u32,
    /// ... with at most this much saved up, us.
    pub rcf_budget_max_us: u32,
    /// Delta_RTT while the RTT range is the flow's own (no probe), us.
    pub delta_rtt_own_us: u32,
    /// Standing-queue cycles that switch the verdict to the flow's own range (0: never).
    pub competing_cycles: u32,
    /// 1: a second band search at half the share when none is dense at the full share.
    pub mpf_half_share: u32,
    /// 1: a second capped round tells a slower link from a longer path.
    pub ra_second_round: u32,
    /// 1: bBW_m is fed every delivery-rate sample instead of each round's largest.
    pub bw_kal_every_sample: u32,
}

/// What Linux gives a congestion control per ACK (`struct leocc_ack_sample`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckSample {
    /// Time of this ACK, us.
    pub now_us: u64,
    /// Packets delivered over the flow's life (tp->delivered).
    pub delivered_total: u64,
    /// Packets marked lost over the flow's life (tp->lost).
    pub lost_total: u64,
    /// Rate-sample interval, us; 0 if this ACK carries no rate sample.
    pub interval_us: u64,
    /// Packets delivered over `interval_us`.
    pub delivered: u32,
    /// RTT sample, us; 0 if none.
    pub rtt_us: u32,
    /// Packets newly (s)acked by this ACK.
    pub acked_sacked: u32,
    /// Packets newly marked lost by this ACK.
    pub losses: u32,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// Packets in flight after this ACK.
    pub in_flight: u32,
    /// 1 if the rate sample is application-limited.
    pub app_limited: u32,
    /// Bytes per packet.
    pub mss: u32,
    /// TCP CA state: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss.
    pub ca_state: u32,
    /// Padding, keep 0.
    pub _pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RawOutput {
    pub pacing_rate: u64,
    pub cwnd: u32,
    pub _pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RawReconfigEvent {
    pub time_us: u64,
    pub seq: u64,
    pub confidence: u32,
    pub _pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RawView {
    pub mode: u32,
    pub congested: u32,
    pub bbw_a: u64,
    pub bbw_m: u64,
    pub target_rate: u64,
    pub pacing_rate: u64,
    pub cwnd: u32,
    pub brtt_l: u32,
    pub brtt_h: u32,
    pub brtt_latest: u32,
    pub rtt_nonsat: u32,
    pub terrestrial_bottleneck: u32,
    pub cycle_phase: u32,
    pub competing: u32,
    pub last_reconfig_us: u64,
    pub reconfigs: u64,
    pub reconfigs_skipped: u64,
    pub rounds: u64,
}

/// One row of `LEOCC_PARAM_RANGES` (`struct leocc_param_range`, core/leocc.h).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawParamRange {
    pub name: *const std::os::raw::c_char,
    pub offset: u32,
    pub min: u32,
    pub max: u32,
}

/// `struct leocc_state`, only ever handled through a pointer.
#[repr(C)]
pub(crate) struct RawState {
    _opaque: [u8; 0],
}

extern "C" {
    pub(crate) fn leocc_default_params(params: *mut Params);
    pub(crate) fn leocc_init(s: *mut RawState, params: *const Params, now_us: u64);
    pub(crate) fn leocc_on_ack(s: *mut RawState, a: *const AckSample, out: *mut RawOutput);
    pub(crate) fn leocc_on_reconfig(s: *mut RawState, e: *const RawReconfigEvent) -> u32;
    pub(crate) fn leocc_on_path(s: *mut RawState, now_us: u64, term_pop_rtt_us: u32);
    pub(crate) fn leocc_view(s: *const RawState, v: *mut RawView);
    pub(crate) fn leocc_state_size() -> u32;
    pub(crate) fn leocc_param_range(index: u32, row: *mut RawParamRange) -> i32;
}
