//! The congestion controls `leocc quic` offers: LeoCC (this crate) and quinn's own.

use std::sync::Arc;

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

/// Names accepted by [`Cc::parse`].
pub const NAMES: [&str; 4] = ["leocc", "cubic", "newreno", "bbr"];

impl Cc {
    /// Parses `leocc`, `cubic`, `newreno` (or `reno`) or `bbr`.
    pub fn parse(s: &str) -> Result<Cc, String> {
        match s {
            "leocc" => Ok(Cc::Leocc),
            "cubic" => Ok(Cc::Cubic),
            "newreno" | "reno" => Ok(Cc::Newreno),
            "bbr" => Ok(Cc::Bbr),
            _ => Err(format!("unknown congestion control `{s}` (QUIC offers {})", NAMES.join(", "))),
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

impl std::str::FromStr for Cc {
    type Err = String;
    fn from_str(s: &str) -> Result<Cc, String> {
        Cc::parse(s)
    }
}
