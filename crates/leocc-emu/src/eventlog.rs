//! mahimahi's link event log, so that existing scripts (mm-throughput-graph, mm-delay-graph)
//! read our runs. Header lines start with `#`; `# base timestamp: B` gives the origin; each
//! event line is `TIME EVENT BYTES [DELAY]` with TIME in integer milliseconds on the same
//! clock as B:
//!   `T + N`      a packet of N bytes arrived at the link queue
//!   `T # 1500`   a delivery opportunity (logged whether used or not: it is the capacity)
//!   `T - N D`    a packet of N bytes left the queue after D ms of queueing
//!   `T d N`      a packet of N bytes was dropped (full queue or random loss)
//! We use Unix milliseconds for B so logs line up with pcap timestamps.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Bytes of one delivery opportunity as the log prints it.
const OPPORTUNITY_LOG_BYTES: u32 = leocc_trace::OPPORTUNITY_BYTES;

/// A mahimahi-format event log for one link direction.
pub struct EventLog {
    out: BufWriter<File>,
    base_ms: u64,
}

impl EventLog {
    /// Creates `path` and writes the header. `base_unix_ms` is the wall-clock time of
    /// emulation time zero; `title` describes the link (direction and trace).
    pub fn create(path: &Path, title: &str, base_unix_ms: u64) -> std::io::Result<EventLog> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "# leocc emu ({title}) > {}", path.display())?;
        writeln!(out, "# base timestamp: {base_unix_ms}")?;
        Ok(EventLog { out, base_ms: base_unix_ms })
    }

    fn ms(&self, t_us: u64) -> u64 {
        self.base_ms + t_us / 1000
    }

    /// A packet of `bytes` arrived at emulation time `t_us`.
    pub fn arrival(&mut self, t_us: u64, bytes: usize) {
        let _ = writeln!(self.out, "{} + {bytes}", self.ms(t_us));
    }

    /// A delivery opportunity at `t_us`.
    pub fn opportunity(&mut self, t_us: u64) {
        let _ = writeln!(self.out, "{} # {OPPORTUNITY_LOG_BYTES}", self.ms(t_us));
    }

    /// A packet that arrived at `arrival_us` left the queue at `t_us`.
    pub fn departure(&mut self, t_us: u64, bytes: usize, arrival_us: u64) {
        let (t, a) = (self.ms(t_us), self.ms(arrival_us));
        let _ = writeln!(self.out, "{t} - {bytes} {}", t - a);
    }

    /// A packet was dropped at `t_us`.
    pub fn drop_packet(&mut self, t_us: u64, bytes: usize) {
        let _ = writeln!(self.out, "{} d {bytes}", self.ms(t_us));
    }

    /// Flushes the buffered lines.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
