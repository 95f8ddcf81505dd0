//! The LeoCC congestion-control core on the host.
//!
//! `core/leocc.c` is the one source of the algorithm: the kernel's BPF struct_ops program
//! includes it, and this crate compiles the very same file (build.rs, `cc` crate) so that the
//! simulator and the QUIC controller run exactly what the kernel runs. The algorithm itself is
//! described in `core/leocc.c`'s header comment and in `docs/algorithm.md`.
//!
//! [`LeoccCore`] owns one flow's state. Feed it every ACK ([`LeoccCore::on_ack`]), every
//! reconfiguration the detector reports ([`LeoccCore::on_reconfig`]) and every terminal-PoP
//! RTT it measures ([`LeoccCore::on_path`]); apply the returned [`Output`] (pacing rate in
//! bytes per second, congestion window in packets). [`LeoccCore::view`] is a read-only snapshot
//! of the model for logs and plots. All times are microseconds on one clock.

mod ffi;
mod params;
mod suggest;

pub use ffi::{AckSample, Params};
pub use params::{ParamError, ParamRow};
pub use suggest::{closest, did_you_mean};

/// What the congestion control asks for after an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// Pacing rate, bytes per second.
    pub pacing_rate: u64,
    /// Congestion window, packets.
    pub cwnd: u32,
}

/// The state machine's mode (paper Fig. 9, plus BBR's Drain).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Exponential search for the bottleneck bandwidth.
    Startup,
    /// Draining the queue Startup built.
    Drain,
    /// Dynamic Cruise (paper §4.2.1).
    Cruise,
    /// Reconfiguration Adaptation (paper §4.2.2).
    Reconf,
}

impl Mode {
    fn from_raw(raw: u32) -> Mode {
        match raw {
            0 => Mode::Startup,
            1 => Mode::Drain,
            3 => Mode::Reconf,
            _ => Mode::Cruise,
        }
    }

    /// Short lowercase name for logs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::Cruise => "cruise",
            Mode::Reconf => "reconf",
        }
    }
}

/// What [`LeoccCore::on_reconfig`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReconfigOutcome {
    /// Duplicate (same or older sequence number), sequence 0, or too old: nothing changed.
    Ignored,
    /// Windows cut and Reconfiguration Adaptation entered.
    Adapt,
    /// Windows cut, but still in Startup (no adaptation needed).
    CutOnly,
    /// The detector's confidence was below the flow's threshold: nothing changed.
    Weak,
    /// Inside or too close to an adaptation, or over the adaptation budget: not acted on.
    Merged,
}

/// The confidence of an event the detector is sure of (core/leocc.h `LEOCC_CONF_FULL`).
pub const CONF_FULL: u32 = 100;

/// Confidence grades above "not given" that the TCP option and the signal flags carry:
/// confidence = (grade − 1) × 100 / 6 (bpf/leocc_option.h `LEOCC_SIGF_CONF_GRADES`; leocc-kernel
/// checks the value against the header).
pub const SIGF_CONF_GRADES: u32 = 6;

/// `leocc_opt_conf_grade()`: confidence 0..=100 → grade 1..=7, rounding down so that an event
/// below 50 never reads as 50.
pub fn conf_grade(confidence: u32) -> u8 {
    (1 + confidence.min(100) * SIGF_CONF_GRADES / 100) as u8
}

/// `leocc_opt_conf_of_grade()`: grade → confidence; 0 (a writer from before grades) is full.
pub fn conf_of_grade(grade: u8) -> u32 {
    if grade == 0 || u32::from(grade) > SIGF_CONF_GRADES + 1 {
        return CONF_FULL;
    }
    (u32::from(grade) - 1) * 100 / SIGF_CONF_GRADES
}

impl ReconfigOutcome {
    fn from_raw(raw: u32) -> ReconfigOutcome {
        match raw {
            1 => ReconfigOutcome::Adapt,
            3 => ReconfigOutcome::CutOnly,
            4 => ReconfigOutcome::Weak,
            5 => ReconfigOutcome::Merged,
            _ => ReconfigOutcome::Ignored,
        }
    }
}

/// Read-only snapshot of one flow's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Current mode.
    pub mode: Mode,
    /// Eq. 4's verdict: bRTT_latest >= bRTT_h + Delta_RTT.
    pub congested: bool,
    /// bBW_a, the aggressive (max-filter) bandwidth estimate, bytes per second.
    pub bbw_a: u64,
    /// bBW_m, the moderate (Kalman) bandwidth estimate, bytes per second.
    pub bbw_m: u64,
    /// rate_target of eq. 4, bytes per second.
    pub target_rate: u64,
    /// Last pacing rate output, bytes per second.
    pub pacing_rate: u64,
    /// Last congestion window output, packets.
    pub cwnd: u32,
    /// Lower end of the base-RTT range, microseconds (0 before the first sample).
    pub brtt_l_us: u32,
    /// Upper end of the base-RTT range, microseconds.
    pub brtt_h_us: u32,
    /// Kalman-filtered latest RTT, microseconds (0 when the window is empty).
    pub brtt_latest_us: u32,
    /// RTT_non-sat = bRTT_latest - RTT_term-PoP, microseconds (0 when unknown).
    pub rtt_nonsat_us: u32,
    /// §4.3 verdict: the bottleneck is in the terrestrial segment.
    pub terrestrial_bottleneck: bool,
    /// Cruise phase, 0 (burst), 1 (drain), 2.. (steady).
    pub cycle_phase: u32,
    /// Competing: another flow's standing queue was seen, and eq. 4 judges against the flow's
    /// own RTT range (docs/algorithm.md, "Next to buffer-filling flows").
    pub competing: bool,
    /// Time of the last reconfiguration event accepted or skipped, microseconds (0 if none).
    pub last_reconfig_us: u64,
    /// Events that cut the windows.
    pub reconfigs: u64,
    /// Events skipped because the bottleneck was terrestrial.
    pub reconfigs_skipped: u64,
    /// Round trips counted so far.
    pub rounds: u64,
}

impl Default for Params {
    /// The values documented in docs/algorithm.md (`leocc_default_params`).
    fn default() -> Params {
        let mut p = std::mem::MaybeUninit::<Params>::zeroed();
        // SAFETY: leocc_default_params writes every field of a valid Params pointer.
        unsafe {
            ffi::leocc_default_params(p.as_mut_ptr());
            p.assume_init()
        }
    }
}

/// One flow's LeoCC controller. Cloning copies the whole state (plain integers), e.g. for a
/// QUIC stack that clones its controller to inspect it.
#[derive(Clone)]
pub struct LeoccCore {
    /// `struct leocc_state` as opaque, 8-byte aligned storage of `leocc_state_size()` bytes.
    state: Box<[u64]>,
}

impl std::fmt::Debug for LeoccCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeoccCore").field("view", &self.view()).finish()
    }
}

impl LeoccCore {
    /// A controller whose clock starts at 0 us.
    pub fn new(params: Params) -> LeoccCore {
        LeoccCore::new_at(params, 0)
    }

    /// A controller created at `now_us` on the caller's clock.
    pub fn new_at(params: Params, now_us: u64) -> LeoccCore {
        // SAFETY: a pure function returning sizeof(struct leocc_state).
        let size = unsafe { ffi::leocc_state_size() } as usize;
        let mut state = vec![0u64; size.div_ceil(8)].into_boxed_slice();
        // SAFETY: `state` is at least sizeof(struct leocc_state) bytes, 8-byte aligned (the
        // struct holds only integers of at most 8 bytes), and `params` is a valid Params.
        unsafe { ffi::leocc_init(state.as_mut_ptr().cast(), &params, now_us) };
        LeoccCore { state }
    }

    /// sizeof(struct leocc_state) in bytes: the per-flow memory the kernel keeps in sk_storage.
    pub fn state_size() -> usize {
        // SAFETY: a pure function.
        unsafe { ffi::leocc_state_size() as usize }
    }

    /// One ACK: updates the model and returns the pacing rate and cwnd to apply.
    pub fn on_ack(&mut self, sample: &AckSample) -> Output {
        let mut out = ffi::RawOutput::default();
        // SAFETY: state initialised by leocc_init; sample and out are valid for the call.
        unsafe { ffi::leocc_on_ack(self.state.as_mut_ptr().cast(), sample, &mut out) };
        Output { pacing_rate: out.pacing_rate, cwnd: out.cwnd }
    }

    /// A reconfiguration reported by the detector: `time_us` is when the new path began (the
    /// end of the outage), `seq` the detector's strictly increasing counter (0 is invalid).
    /// Calling it again with the same `seq` is harmless. `confidence` (0 ..= [`CONF_FULL`]) is
    /// how sure the detector is; an event below the flow's `rcf_min_confidence` is not acted
    /// on ([`ReconfigOutcome::Weak`]). A detector that does not grade its events passes
    /// [`CONF_FULL`].
    pub fn on_reconfig(&mut self, time_us: u64, seq: u64, confidence: u32) -> ReconfigOutcome {
        let event = ffi::RawReconfigEvent { time_us, seq, confidence: confidence.min(CONF_FULL), _pad: 0 };
        // SAFETY: state initialised by leocc_init; event valid for the call.
        let raw = unsafe { ffi::leocc_on_reconfig(self.state.as_mut_ptr().cast(), &event) };
        ReconfigOutcome::from_raw(raw)
    }

    /// A terminal-PoP RTT measured by the detector's probe at `now_us` (0 is ignored).
    pub fn on_path(&mut self, now_us: u64, term_pop_rtt_us: u32) {
        // SAFETY: state initialised by leocc_init.
        unsafe { ffi::leocc_on_path(self.state.as_mut_ptr().cast(), now_us, term_pop_rtt_us) };
    }

    /// Read-only snapshot of the model.
    pub fn view(&self) -> View {
        let mut v = ffi::RawView::default();
        // SAFETY: state initialised by leocc_init; v valid for the call.
        unsafe { ffi::leocc_view(self.state.as_ptr().cast(), &mut v) };
        View {
            mode: Mode::from_raw(v.mode),
            congested: v.congested != 0,
            bbw_a: v.bbw_a,
            bbw_m: v.bbw_m,
            target_rate: v.target_rate,
            pacing_rate: v.pacing_rate,
            cwnd: v.cwnd,
            brtt_l_us: v.brtt_l,
            brtt_h_us: v.brtt_h,
            brtt_latest_us: v.brtt_latest,
            rtt_nonsat_us: v.rtt_nonsat,
            terrestrial_bottleneck: v.terrestrial_bottleneck != 0,
            cycle_phase: v.cycle_phase,
            competing: v.competing != 0,
            last_reconfig_us: v.last_reconfig_us,
            reconfigs: v.reconfigs,
            reconfigs_skipped: v.reconfigs_skipped,
            rounds: v.rounds,
        }
    }
}

#[cfg(test)]
mod tests;
