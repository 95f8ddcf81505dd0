//! leocc-base: the utilities every other crate of the project shares, with no LEO model in them.
//!
//! - [`controls`]: the congestion controls the project knows, one list for every engine;
//! - [`error`]: [`FileError`], the one error for a file a user gave us: file, line, problem;
//! - [`out`]: output files and directories written to a temporary name and renamed, so that
//!   nothing is ever half-written ([`write_atomic`], [`OutFile`], [`OutDir`]);
//! - [`text`]: line-oriented parsing of the text formats, with limits on times and values;
//! - [`record`]: the run record both engines report and results.jsonl holds ([`record::SCHEMA`]);
//! - [`rng`]: the seeded generator (xoshiro256**) behind every random choice;
//! - [`metrics`]: quantile definitions, means, medians and Jain's index, one of each;
//! - [`signal`]: installing signal handlers;
//! - `alloc_count` (hidden): a counting allocator for memory benchmarks and tests.

#[doc(hidden)]
pub mod alloc_count;
pub mod controls;
pub mod error;
pub mod metrics;
pub mod out;
pub mod record;
pub mod rng;
pub mod signal;
pub mod text;

pub use error::FileError;
pub use out::{write_atomic, OutDir, OutFile};
