//! mahimahi's link event log, so that existing scripts (mm-throughput-graph, mm-delay-graph)
//! read our runs. Header lines start with `#`; `# base timestamp: B` gives the origin; each
//! event line is `TIME EVENT BYTES [DELAY]` with TIME in integer milliseconds on the same
//! clock as B:
//!   `T + N`      a packet of N bytes arrived at the link queue
//!   `T # 1500`   a delivery opportunity (logged whether used or not: it is the capacity)
//!   `T - N D`    a packet of N bytes left the queue after D ms of queueing
//!   `T d N`      a packet of N bytes was dropped (full queue or random loss)
//! We use Unix milliseconds for B so logs line up with pcap timestamps.

use std::io::Write;
use std::path::Path;

use leocc_base::OutFile;

/// Bytes of one delivery opportunity as the log prints it.
const OPPORTUNITY_LOG_BYTES: u32 = leocc_trace::OPPORTUNITY_BYTES;

/// A mahimahi-format event log for one link direction.
pub struct EventLog {
    /// A temporary file until [`EventLog::finish`] renames it into place.
    out: OutFile,
    base_ms: u64,
}

impl EventLog {
    /// Creates `path` and writes the header. `base_unix_ms` is the wall-clock time of
    /// emulation time zero; `title` describes the link (direction and trace).
    pub fn create(path: &Path, title: &str, base_unix_ms: u64) -> std::io::Result<EventLog> {
        let mut out = OutFile::create(path).map_err(std::io::Error::other)?;
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

    /// Writes the buffered lines and renames the complete log into place.
    pub fn finish(self) -> std::io::Result<()> {
        self.out.commit().map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks mm-throughput-graph applies: a single base timestamp, and event lines of
    /// integer ms, a known event type, integer bytes, and for departures a delay that does
    /// not reach before time zero.
    #[test]
    fn lines_follow_the_mahimahi_log_grammar() {
        let dir = std::env::temp_dir().join(format!("leocc-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("down.log");
        let mut log = EventLog::create(&path, "downlink [t]", 1_700_000_000_000).unwrap();
        log.arrival(1_500, 1500);
        log.opportunity(2_000);
        log.departure(2_000, 1500, 1_500);
        log.arrival(2_100, 60);
        log.drop_packet(2_100, 60);
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# "));
        assert_eq!(lines[1], "# base timestamp: 1700000000000");
        assert_eq!(
            &lines[2..],
            ["1700000000001 + 1500", "1700000000002 # 1500", "1700000000002 - 1500 1", "1700000000002 + 60", "1700000000002 d 60"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
