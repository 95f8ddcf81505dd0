//! The daemon's publisher into the kernel: every detector update written into the pinned signal
//! map that LeoCC flows read on their ACK path (`leocc_signal`, the map's one owner).

use std::path::Path;

use leocc_signal::{Signal, SignalWriter, SIGNAL_PIN};

use crate::daemon::{Publisher, SignalUpdate};

/// Writes the detector signal into the pinned BPF map, through a descriptor held open between
/// publishes ([`SignalWriter`]: reopened only when a write fails or the pin names a new map),
/// so that publishing never needs a new descriptor. The map may be absent (LeoCC not loaded),
/// which the daemon reports once and retries.
pub struct KernelMap {
    writer: SignalWriter,
}

impl KernelMap {
    /// A publisher into the map pinned at `path` (normally [`SIGNAL_PIN`]); nothing is opened
    /// until the first publish.
    pub fn new(path: &Path) -> KernelMap {
        KernelMap { writer: SignalWriter::new(path) }
    }
}

impl Publisher for KernelMap {
    fn describe(&self) -> String {
        format!("kernel signal map {}", self.writer.path().display())
    }

    fn current_seq(&mut self) -> Option<u64> {
        // Only the standard pin is read back.
        if self.writer.path() != Path::new(SIGNAL_PIN) {
            return None;
        }
        leocc_signal::read_signal().ok().filter(|s| s.is_valid()).map(|s| s.seq)
    }

    fn publish(&mut self, s: &SignalUpdate) -> Result<(), String> {
        let sig = Signal::new(s.reconfig_time_ns, s.seq, s.probe_time_ns, s.term_pop_rtt_us).with_confidence(s.confidence);
        self.writer.write(&sig).map_err(|e| e.to_string())
    }
}
