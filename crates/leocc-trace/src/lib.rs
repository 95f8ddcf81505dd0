//! LEO path traces: the formats users already have (mahimahi capacity, LeoReplayer delay),
//! our own single-file format, statistics and reconfiguration detection, the synthetic
//! generator, SVG plots, and the link model that both the simulator and the emulator consume.
//!
//! Times are `u64` microseconds since the trace start unless a name says otherwise.

pub mod error;
pub mod format;
pub mod gen;
pub mod link;
pub mod mahimahi;
pub mod model;
pub mod plot;
pub mod rng;
pub mod stats;
pub mod text;

pub use error::TraceError;
pub use link::{LinkModel, OUTAGE_MIN_US};
pub use model::{Capacity, DelaySeries, Dir, DirTrace, Loss, Measured, Meta, Segment, Span, Trace, OPPORTUNITY_BYTES};

use std::io::Write;
use std::path::Path;

/// Writes `data` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), TraceError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "trace".into());
    let tmp = path.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        TraceError::io(path, &e)
    })
}
