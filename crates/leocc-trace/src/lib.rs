//! LEO path traces: the formats users already have (mahimahi capacity, LeoReplayer delay),
//! our own single-file format, statistics and reconfiguration detection, the synthetic
//! generator (and the paths drawn from wide ranges of `draw`), SVG plots, and the link model
//! that both the simulator and the emulator consume. Errors are `leocc_base::FileError`
//! (file, line, problem); the utilities it uses (atomic output, RNG, text parsing, metrics)
//! live in `leocc-base`.
//!
//! Times are `u64` microseconds since the trace start unless a name says otherwise.

pub mod dataset;
pub mod draw;
pub mod format;
pub mod gen;
pub mod isl;
pub mod link;
pub mod mahimahi;
pub mod model;
pub mod plot;
pub mod qdisc;
pub mod rotate;
pub mod stats;

pub use link::{LinkModel, OUTAGE_MIN_US};
pub use qdisc::Qdisc;
pub use model::{Capacity, DelaySeries, Dir, DirTrace, Loss, Measured, Meta, Segment, Span, Trace, OPPORTUNITY_BYTES};

