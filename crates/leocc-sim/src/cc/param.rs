//! Named, range-checked parameters of the simulator's controls, for `leocc sim --param
//! CC.NAME=VALUE`, `--list-params CC` and `leocc eval --sweep`.
//!
//! Each control that has settable parameters lists them in [`specs`] with its default and the
//! range in which the control stays meaningful; a value outside that range is an error naming
//! the parameter and the range, never a silently clamped run. LeoCC's parameters are the rows
//! of the core's table (`leocc_core_sys::Params::rows`), integers, parsed by
//! `leocc_core_sys::Params::parse`. Which of the two a control has is its row in the
//! registry ([`leocc_base::controls`]).

use leocc_base::controls::{self, Params};

/// One settable parameter of a control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamSpec {
    /// Name as in `CC.NAME=VALUE`.
    pub name: &'static str,
    /// The value the control uses when the parameter is not set.
    pub default: f64,
    /// Smallest accepted value.
    pub min: f64,
    /// Largest accepted value.
    pub max: f64,
    /// Only whole numbers are accepted.
    pub integer: bool,
    /// Unit and meaning.
    pub doc: &'static str,
}

/// BBRv3's parameters: the two that seed 004 (T3P) tunes for Starlink. The ranges bound what
/// the control's own logic survives: a ProbeRTT interval under 200 ms would be ProbeRTT all
/// the time (it lasts `PROBE_RTT_US`), and a loss threshold of 50 % or more means "ignore
/// loss", which is another control.
const BBR3: &[ParamSpec] = &[
    ParamSpec {
        name: "probe_rtt_interval_ms",
        default: super::bbr3::PROBE_RTT_INTERVAL_US as f64 / 1000.0,
        min: 200.0,
        max: 600_000.0,
        integer: true,
        doc: "time between ProbeRTT phases (T3P's alpha), ms",
    },
    ParamSpec {
        name: "loss_thresh",
        default: super::bbr3::LOSS_THRESH,
        min: 0.001,
        max: 0.5,
        integer: false,
        doc: "loss rate per round that ends bandwidth probing (T3P's beta), fraction",
    },
    ParamSpec {
        name: "beta",
        default: super::bbr3::BETA,
        min: 0.1,
        max: 0.99,
        integer: false,
        doc: "multiplicative decrease of bw_lo/inflight_lo on loss, fraction",
    },
];

/// BBRv1's: its min-RTT window is also the interval between ProbeRTT phases (Linux
/// `bbr_min_rtt_win_sec`).
const BBR: &[ParamSpec] = &[ParamSpec {
    name: "probe_rtt_interval_ms",
    default: super::bbr::MIN_RTT_WIN_US as f64 / 1000.0,
    min: 200.0,
    max: 600_000.0,
    integer: true,
    doc: "min-RTT window = time between ProbeRTT phases, ms",
}];

/// CUBIC's two constants (RFC 9438 §4.6, §5.1). β at 1 would never reduce, at 0 would drop to
/// nothing; C outside 0.01–10 is far beyond anything proposed.
const CUBIC: &[ParamSpec] = &[
    ParamSpec { name: "beta", default: super::cubic::BETA, min: 0.1, max: 0.95, integer: false, doc: "multiplicative decrease, fraction" },
    ParamSpec { name: "c", default: super::cubic::C, min: 0.01, max: 10.0, integer: false, doc: "cubic scaling constant, packets/s^3" },
];

/// The settable parameters of the control `cc` (empty for a control without any); None for an
/// unknown control.
pub fn specs(cc: &str) -> Option<Vec<ParamSpec>> {
    Some(match controls::find(cc).filter(|c| c.sim)?.params {
        Params::None => Vec::new(),
        // The core's one table (LEOCC_PARAMS in core/leocc.h), whose ranges Params::parse
        // enforces.
        Params::Core => leocc_core_sys::Params::rows()
            .iter()
            .map(|r| ParamSpec {
                name: r.name,
                default: f64::from(r.default),
                min: f64::from(r.min),
                max: f64::from(r.max),
                integer: true,
                doc: r.help,
            })
            .collect(),
        Params::Sim => match cc {
            "bbr3" => BBR3.to_vec(),
            "bbr" => BBR.to_vec(),
            "cubic" => CUBIC.to_vec(),
            _ => unreachable!("{cc}: the registry says its parameters are the simulator's, but it has none here"),
        },
    })
}

/// Parameter values of one controller: the defaults overridden by `NAME=VALUE` settings.
#[derive(Clone, Debug)]
pub struct Values {
    cc: String,
    values: Vec<(&'static str, f64)>,
}

impl Values {
    /// The value of `name`. Asking for a name the control does not list is a programming
    /// error in the control, caught by its tests.
    pub fn get(&self, name: &str) -> f64 {
        match self.values.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => *v,
            None => panic!("{} has no parameter '{name}'", self.cc),
        }
    }
}

/// Checks `NAME=VALUE` settings against `cc`'s parameters and returns the resulting values.
/// Errors name the setting and, for a bad value, the accepted range.
pub fn resolve(cc: &str, settings: &[String]) -> Result<Values, String> {
    let specs = specs(cc).ok_or_else(|| super::unknown_cc(cc))?;
    let mut values: Vec<(&'static str, f64)> = specs.iter().map(|s| (s.name, s.default)).collect();
    for a in settings {
        let (name, value) = a.split_once('=').ok_or_else(|| format!("bad parameter '{a}': expected NAME=VALUE"))?;
        let (name, value) = (name.trim(), value.trim());
        if specs.is_empty() {
            return Err(format!("'{cc}' has no settable parameters (controls with some: bbr, bbr3, cubic, leocc)"));
        }
        let Some(spec) = specs.iter().find(|s| s.name == name) else {
            return Err(format!(
                "unknown {cc} parameter '{name}'{} (known: {})",
                super::did_you_mean(name, specs.iter().map(|s| s.name)),
                known_names(cc)
            ));
        };
        let v: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("{cc}.{name}: '{value}' is not a number"))?;
        if v < spec.min || v > spec.max || (spec.integer && v.fract() != 0.0) {
            return Err(format!(
                "{cc}.{name}={value} is out of range: expected {} {} ..= {} ({})",
                if spec.integer { "an integer" } else { "a number" },
                fmt_value(spec.min),
                fmt_value(spec.max),
                spec.doc
            ));
        }
        if let Some(slot) = values.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = v;
        }
    }
    Ok(Values { cc: cc.to_string(), values })
}

fn known_names(cc: &str) -> String {
    specs(cc).unwrap_or_default().iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

/// A value as the user would type it: integers without a fraction.
pub fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_lie_in_their_ranges() {
        for cc in super::super::names() {
            for s in specs(cc).unwrap() {
                assert!(s.min <= s.default && s.default <= s.max, "{cc}.{}", s.name);
            }
        }
        assert!(specs("nope").is_none());
    }

    #[test]
    fn settings_override_defaults_and_bad_ones_name_the_range() {
        let v = resolve("bbr3", &["loss_thresh=0.08".into()]).unwrap();
        assert_eq!(v.get("loss_thresh"), 0.08);
        assert_eq!(v.get("probe_rtt_interval_ms"), 5000.0);
        let e = resolve("bbr3", &["loss_thresh=0.9".into()]).unwrap_err();
        assert!(e.contains("bbr3.loss_thresh") && e.contains("0.001 ..= 0.5"), "{e}");
        let e = resolve("bbr3", &["probe_rtt_interval_ms=2500.5".into()]).unwrap_err();
        assert!(e.contains("an integer 200 ..= 600000"), "{e}");
        let e = resolve("bbr3", &["loss=0.1".into()]).unwrap_err();
        assert!(e.contains("unknown bbr3 parameter 'loss'") && e.contains("loss_thresh"), "{e}");
        assert!(resolve("bbr3", &["loss_thresh=nan".into()]).unwrap_err().contains("not a number"));
        assert!(resolve("reno", &["x=1".into()]).unwrap_err().contains("no settable parameters"));
        assert!(resolve("cubic", &["beta".into()]).unwrap_err().contains("NAME=VALUE"));
    }
}
