//! Setting the core's parameters by name, for `leocc sim --param leocc.NAME=VALUE`, sweeps and
//! the ablation. The names are the C field names of `struct leocc_params`; the range of each is
//! the core's own table (`LEOCC_PARAM_RANGES` in core/leocc.h, read through
//! `leocc_param_range`), the same one `leocc_init` clamps to in the host build and in the BPF
//! program, so a value is refused here exactly when the core would not run it as given.

use std::ffi::CStr;
use std::sync::OnceLock;

use crate::ffi::{self, RawParamRange};
use crate::Params;

/// The inclusive range of one parameter: a row of the core's `LEOCC_PARAM_RANGES`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamRange {
    /// The field's name in `struct leocc_params`.
    pub name: &'static str,
    /// Byte offset of the field in `struct leocc_params` (ties the row to the Rust layout).
    pub offset: u32,
    /// Smallest accepted value.
    pub min: u32,
    /// Largest accepted value.
    pub max: u32,
}

/// Every row of the core's table, in struct order, read once.
fn core_ranges() -> &'static [ParamRange] {
    static RANGES: OnceLock<Vec<ParamRange>> = OnceLock::new();
    RANGES.get_or_init(|| {
        let mut rows = Vec::new();
        loop {
            let mut raw = RawParamRange { name: std::ptr::null(), offset: 0, min: 0, max: 0 };
            // SAFETY: the core fills `raw` (a valid, writable struct of the C layout) and
            // returns 0 past the last row; index is any u32.
            if unsafe { ffi::leocc_param_range(rows.len() as u32, &mut raw) } == 0 {
                break;
            }
            // SAFETY: the name points to a string literal of the C table: NUL-terminated and
            // alive for the whole program.
            let name = unsafe { CStr::from_ptr(raw.name) }.to_str().expect("parameter names are ASCII");
            rows.push(ParamRange { name, offset: raw.offset, min: raw.min, max: raw.max });
        }
        rows
    })
}

/// Generates the name table and the by-name accessor from one list, so a field can neither be
/// listed without being settable nor the other way round.
macro_rules! params_by_name {
    ($($field:ident: $doc:literal,)*) => {
        impl Params {
            /// Every parameter a caller may set by name, with its unit and meaning.
            pub const NAMES: &'static [(&'static str, &'static str)] = &[$((stringify!($field), $doc),)*];

            fn field_mut(&mut self, name: &str) -> Option<&mut u32> {
                match name {
                    $(stringify!($field) => Some(&mut self.$field),)*
                    _ => None,
                }
            }

            /// The value of the parameter called `name`, if there is one.
            pub fn get(&self, name: &str) -> Option<u32> {
                let mut copy = *self;
                copy.field_mut(name).map(|v| *v)
            }
        }
    };
}

params_by_name! {
    startup_gain: "pacing gain in Startup, x1024 (2954 = 2.885)",
    drain_gain: "pacing gain in Drain, x1024",
    cwnd_gain: "cwnd = cwnd_gain x BDP + headroom, x1024",
    bco: "burst coefficient, x1024 (1280 = 1.25)",
    dco: "drain coefficient, x1024 (768 = 0.75)",
    bco_congested: "burst coefficient when congested, x1024",
    ra_inflight_gain: "adaptation inflight cap x bBW_m x bRTT_l, x1024",
    ra_probe_gain: "pacing gain of the adaptation's bandwidth probe, x1024",
    cycle_len: "phases per cruise cycle",
    bw_win_rounds: "round trips of the bBW_a max filter",
    rtt_win_us: "W_RT, window of the RTT range filters, us",
    delta_rtt_us: "Delta_RTT of eq. 4, us",
    mpf_bin_us: "width of a middle-pass filter bin, us",
    mpf_band_share_pct: "share of samples (%) that makes a bin a band",
    kal_q: "Kalman process variance",
    kal_r: "Kalman measurement variance",
    kal_p0: "Kalman initial covariance",
    full_bw_growth_pct: "Startup ends below this growth (%) per round ...",
    full_bw_rounds: "... for this many rounds",
    ra_min_rtt_samples: "fresh RTT samples before the adaptation's capped round may end",
    ra_max_drain_us: "bound on the adaptation's capped step, us",
    ra_probe_max_rounds: "bound on the adaptation's probe, rounds",
    drain_phase_max_rounds: "bound on a cruise drain phase, in bRTT_l",
    nonsat_spike_us: "RTT_non-sat rise that counts as a spike, us",
    path_stale_us: "a terminal-PoP RTT older than this is ignored, us",
    rcf_max_age_us: "an event older than this when delivered is ignored, us",
    init_cwnd: "initial window, packets",
    min_cwnd: "floor of every window, packets",
    cwnd_headroom: "packets added to cwnd_gain x BDP",
    default_rtt_us: "RTT assumed before the first sample, us",
    rcf_min_confidence: "events graded below this confidence (0-100) are not acted on",
    path_min_samples: "probe RTTs before their band width sets the RTT range (0: never)",
    cwnd_gain_congested: "cwnd gain while congested, x1024",
    pacing_margin_pct: "pace this % under the target",
    rcf_min_spacing_us: "events closer than this to the last adaptation merge into it, us",
    rcf_budget_pct: "at most this % of the time in adaptations",
    rcf_budget_max_us: "... with at most this much saved up, us",
    delta_rtt_own_us: "Delta_RTT while the RTT range is the flow's own (no probe), us",
    competing_cycles: "congested cycles in a row with a failed drain that switch to the flow's own range (0: never)",
    mpf_half_share: "1: second band search at half the share when none is dense",
    ra_second_round: "1: a second capped round tells a slower link from a longer path",
    bw_kal_every_sample: "1: bBW_m fed every delivery-rate sample, not each round's largest",
}

impl Params {
    /// The ranges of every parameter, in struct order, from the core's table.
    pub fn ranges() -> &'static [ParamRange] {
        core_ranges()
    }

    /// The range of the parameter called `name`, if there is one.
    pub fn range(name: &str) -> Option<ParamRange> {
        core_ranges().iter().find(|r| r.name == name).copied()
    }

    /// Set the parameter called `name` to `value`. An unknown name is an error that lists the
    /// known ones; a value outside the parameter's range (`Params::range`) is an error that
    /// names the range, and leaves the parameter as it was.
    pub fn set(&mut self, name: &str, value: u32) -> Result<(), String> {
        let Some(range) = Self::range(name) else {
            return Err(format!(
                "unknown LeoCC parameter '{name}' (known: {})",
                Self::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ));
        };
        if !(range.min..=range.max).contains(&value) {
            let doc = Self::NAMES.iter().find(|(n, _)| *n == name).map_or("", |(_, d)| d);
            return Err(format!(
                "LeoCC parameter '{name}' = {value} is out of range: it must be in {}..={} ({doc})",
                range.min, range.max
            ));
        }
        let field = self.field_mut(name).expect("the core's table and the Rust names agree (tested)");
        *field = value;
        Ok(())
    }

    /// Apply `NAME=VALUE` assignments in order.
    pub fn apply<'a>(&mut self, assignments: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
        for a in assignments {
            let (name, value) = a.split_once('=').ok_or_else(|| format!("bad parameter '{a}': expected NAME=VALUE"))?;
            let name = name.trim();
            let value: u32 = value.trim().parse().map_err(|_| match Self::range(name) {
                Some(r) => format!("bad value in '{a}': expected an integer in {}..={}", r.min, r.max),
                None => format!("bad value in '{a}': expected an integer"),
            })?;
            self.set(name, value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust name table, the Rust struct and the core's range table list the same fields
    /// in the same order at the same offsets: the ranges have one source, the C table.
    #[test]
    fn the_core_range_table_matches_the_rust_names_and_layout() {
        let fields = std::mem::size_of::<Params>() / 4; // all u32
        let ranges = Params::ranges();
        assert_eq!(ranges.len(), fields, "one row per field of struct leocc_params");
        assert_eq!(Params::NAMES.len(), fields, "a field of struct leocc_params is missing from the name table");
        for (i, (r, (n, _))) in ranges.iter().zip(Params::NAMES).enumerate() {
            assert_eq!(r.name, *n, "row {i}");
            assert_eq!(r.offset as usize, i * 4, "{n}");
            assert!(r.min <= r.max, "{n}: {}..={}", r.min, r.max);
        }
        // Spot checks of the layout against Rust's own offsets.
        assert_eq!(Params::range("min_cwnd").unwrap().offset as usize, std::mem::offset_of!(Params, min_cwnd));
        assert_eq!(Params::range("bw_kal_every_sample").unwrap().offset as usize, std::mem::offset_of!(Params, bw_kal_every_sample));
    }

    #[test]
    fn the_defaults_lie_inside_their_ranges() {
        let p = Params::default();
        for r in Params::ranges() {
            let v = p.get(r.name).unwrap();
            assert!((r.min..=r.max).contains(&v), "default {} = {v} outside {}..={}", r.name, r.min, r.max);
        }
    }

    #[test]
    fn every_field_is_settable_at_both_ends_of_its_range_and_not_beyond() {
        let mut p = Params::default();
        for r in Params::ranges() {
            for v in [r.min, r.max] {
                p.set(r.name, v).unwrap();
                assert_eq!(p.get(r.name), Some(v), "{}", r.name);
            }
            if r.max < u32::MAX {
                let e = p.set(r.name, r.max + 1).unwrap_err();
                assert!(e.contains(&format!("must be in {}..={}", r.min, r.max)), "{e}");
                assert_eq!(p.get(r.name), Some(r.max), "a refused value leaves {} alone", r.name);
            }
            if r.min > 0 {
                assert!(p.set(r.name, r.min - 1).is_err(), "{} below its minimum", r.name);
            }
        }
    }

    #[test]
    fn apply_parses_and_rejects() {
        let mut p = Params::default();
        p.apply(["delta_rtt_us=0", " cycle_len = 6"]).unwrap();
        assert_eq!((p.delta_rtt_us, p.cycle_len), (0, 6));
        assert!(p.apply(["nope=1"]).unwrap_err().contains("unknown LeoCC parameter 'nope'"));
        assert!(p.apply(["delta_rtt_us"]).unwrap_err().contains("NAME=VALUE"));
        assert!(p.apply(["delta_rtt_us=-1"]).unwrap_err().contains("integer in 0..="));
        // The values of issue 34: a window floor of 2^32-1 and of 0.
        let e = p.apply(["min_cwnd=4294967295"]).unwrap_err();
        assert_eq!(e, "LeoCC parameter 'min_cwnd' = 4294967295 is out of range: it must be in 2..=1000 (floor of every window, packets)");
        assert!(p.apply(["min_cwnd=0"]).unwrap_err().contains("must be in 2..=1000"));
        assert_eq!(p.min_cwnd, Params::default().min_cwnd);
    }
}
