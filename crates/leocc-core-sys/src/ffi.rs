//! C layouts of core/leocc.h and the functions of core/leocc.c. Field order and types mirror
//! the header exactly; the sizes (and every offset of `Params`) are checked by tests here and
//! in core/tests.

/// The Rust mirror of `struct leocc_params`: one `u32` per row of the core's table
/// (`LEOCC_PARAMS`, core/leocc.h), in its order, the field list generated from that table by
/// build.rs. The table says what each field is: [`Params::rows`] gives every field's unit,
/// meaning, default and range, and docs/algorithm.md shows them. The layout test (crate tests)
/// checks the size and every field's offset against the core's rows.
macro_rules! params_struct {
    ($($field:ident,)*) => {
        /// Tunables of the algorithm (`struct leocc_params`): gains in fixed point with
        /// 1024 = 1.0, times in microseconds. `Params::default()` is `leocc_default_params`;
        /// [`Params::rows`] describes every field, [`Params::parse`] sets one by name.
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Params {
            $(
                #[doc = concat!("`", stringify!($field), "`: see its row, `Params::row(\"", stringify!($field), "\")`.")]
                pub $field: u32,
            )*
        }

        /// Every field of the mirror and its byte offset, for the layout test.
        #[cfg(test)]
        pub(crate) const PARAMS_FIELDS: &[(&str, usize)] = &[$((stringify!($field), std::mem::offset_of!(Params, $field)),)*];
    };
}

// The fields, in core/leocc.h's LEOCC_PARAMS(X) order, written by build.rs from that table.
include!(concat!(env!("OUT_DIR"), "/params_fields.rs"));

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

/// One row of `LEOCC_PARAMS` (`struct leocc_param_range`, core/leocc.h).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawParamRange {
    pub name: *const std::os::raw::c_char,
    pub offset: u32,
    pub def: u32,
    pub min: u32,
    pub max: u32,
    pub unit: *const std::os::raw::c_char,
    pub doc: *const std::os::raw::c_char,
    pub source: *const std::os::raw::c_char,
}

impl Default for RawParamRange {
    fn default() -> Self {
        let null = std::ptr::null();
        RawParamRange {
            name: null,
            offset: 0,
            def: 0,
            min: 0,
            max: 0,
            unit: null,
            doc: null,
            source: null,
        }
    }
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
