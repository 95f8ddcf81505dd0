//! LEO path traces: the formats users already have (mahimahi capacity, LeoReplayer delay),
//! our own single-file format, statistics and reconfiguration detection, the synthetic
//! generator (and the paths drawn from wide ranges of `draw`), SVG plots, and the link model
//! that both the simulator and the emulator consume.
//!
//! Times are `u64` microseconds since the trace start unless a name says otherwise.

#[doc(hidden)]
pub mod alloc_count;
pub mod dataset;
pub mod draw;
pub mod error;
pub mod format;
pub mod gen;
pub mod isl;
pub mod link;
pub mod mahimahi;
pub mod metrics;
pub mod model;
pub mod out;
pub mod plot;
pub mod qdisc;
pub mod rng;
pub mod rotate;
pub mod signal;
pub mod stats;
pub mod text;

pub use error::TraceError;
pub use link::{LinkModel, OUTAGE_MIN_US};
pub use qdisc::Qdisc;
pub use model::{Capacity, DelaySeries, Dir, DirTrace, Loss, Measured, Meta, Segment, Span, Trace, OPPORTUNITY_BYTES};

pub use out::{write_atomic, OutDir, OutFile};
