//! The congestion controls `leocc quic` offers: LeoCC (this crate) and quinn's own.

use std::sync::Arc;

use leocc_base::controls::{self, Engine};
use quinn_proto::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};

use crate::controller::LeoccConfig;
use crate::events::EventSource;

/// A congestion control by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    /// LeoCC on core/leocc.c.
    Leocc,
    /// quinn's CUBIC.
    Cubic,
    /// quinn's NewReno.
    Newreno,
    /// quinn's BBR (v1-like).
    Bbr,
}

impl Cc {
    /// Parses a control the registry ([`leocc_base::controls`]) gives QUIC, by its QUIC name
    /// (`newreno`) or its name everywhere else (`reno`).
    pub fn parse(s: &str) -> Result<Cc, String> {
        let quic = controls::CONTROLS
            .iter()
            .find(|c| c.quic.is_some() && (c.name == s || c.quic == Some(s)))
            .and_then(|c| c.quic);
        match quic {
            Some("leocc") => Ok(Cc::Leocc),
            Some("cubic") => Ok(Cc::Cubic),
            Some("newreno") => Ok(Cc::Newreno),
            Some("bbr") => Ok(Cc::Bbr),
            Some(other) => {
                unreachable!("the registry gives QUIC `{other}`, which this crate does not have")
            }
            None => Err(format!(
                "unknown congestion control `{s}` (QUIC offers {})",
                names().join(", ")
            )),
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Cc::Leocc => "leocc",
            Cc::Cubic => "cubic",
            Cc::Newreno => "newreno",
            Cc::Bbr => "bbr",
        }
    }

    /// The quinn factory; `events` feeds LeoCC's detector input (others ignore it).
    pub fn factory(self, events: Arc<dyn EventSource>) -> Arc<dyn ControllerFactory + Send + Sync> {
        match self {
            Cc::Leocc => Arc::new(LeoccConfig::new().events(events)),
            Cc::Cubic => Arc::new(CubicConfig::default()),
            Cc::Newreno => Arc::new(NewRenoConfig::default()),
            Cc::Bbr => Arc::new(BbrConfig::default()),
        }
    }
}

/// QUIC's names of the controls it offers, in the registry's order.
pub fn names() -> Vec<&'static str> {
    controls::CONTROLS
        .iter()
        .filter(|c| c.runs_in(Engine::Quic))
        .filter_map(|c| c.quic)
        .collect()
}

impl std::str::FromStr for Cc {
    type Err = String;
    fn from_str(s: &str) -> Result<Cc, String> {
        Cc::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_the_registry_gives_quic_parses_by_either_name() {
        for c in controls::CONTROLS
            .iter()
            .filter(|c| c.runs_in(Engine::Quic))
        {
            let quic = c.quic.unwrap();
            assert_eq!(Cc::parse(quic).unwrap().name(), quic);
            assert_eq!(Cc::parse(c.name).unwrap().name(), quic);
        }
        assert_eq!(names(), ["leocc", "cubic", "bbr", "newreno"]);
        assert!(Cc::parse("bbr3")
            .unwrap_err()
            .contains("QUIC offers leocc, cubic, bbr, newreno"));
    }
}
