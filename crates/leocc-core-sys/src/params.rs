//! Setting the core's parameters by name, for `leocc sim --param leocc.NAME=VALUE`, sweeps and
//! the ablation. The names are the C field names of `struct leocc_params`.

use crate::Params;

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
    /// Set the parameter called `name` to `value`; an unknown name is an error that lists the
    /// known ones. (The core repairs values that would break it, see `sanitize_params`.)
    pub fn set(&mut self, name: &str, value: u32) -> Result<(), String> {
        match self.field_mut(name) {
            Some(v) => {
                *v = value;
                Ok(())
            }
            None => Err(format!(
                "unknown LeoCC parameter '{name}' (known: {})",
                Self::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// Apply `NAME=VALUE` assignments in order.
    pub fn apply<'a>(&mut self, assignments: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
        for a in assignments {
            let (name, value) = a.split_once('=').ok_or_else(|| format!("bad parameter '{a}': expected NAME=VALUE"))?;
            let value: u32 = value
                .trim()
                .parse()
                .map_err(|_| format!("bad value in '{a}': expected an integer 0..{}", u32::MAX))?;
            self.set(name.trim(), value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_named_once_and_settable() {
        let mut p = Params::default();
        let fields = std::mem::size_of::<Params>() / 4; // all u32
        assert_eq!(Params::NAMES.len(), fields, "a field of struct leocc_params is missing from the name table");
        for (i, (n, _)) in Params::NAMES.iter().enumerate() {
            p.set(n, 1000 + i as u32).unwrap();
        }
        for (i, (n, _)) in Params::NAMES.iter().enumerate() {
            assert_eq!(p.get(n), Some(1000 + i as u32), "{n}");
        }
    }

    #[test]
    fn apply_parses_and_rejects() {
        let mut p = Params::default();
        p.apply(["delta_rtt_us=0", " cycle_len = 6"]).unwrap();
        assert_eq!((p.delta_rtt_us, p.cycle_len), (0, 6));
        assert!(p.apply(["nope=1"]).unwrap_err().contains("unknown LeoCC parameter 'nope'"));
        assert!(p.apply(["delta_rtt_us"]).unwrap_err().contains("NAME=VALUE"));
        assert!(p.apply(["delta_rtt_us=-1"]).unwrap_err().contains("integer"));
    }
}
