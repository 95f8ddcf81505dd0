//! The producer (`leocc leotp serve`): answers interests with segments of its content, at
//! once — pacing is the requesters' job (requester-driven transport). Only interests from a
//! validated address are served (`addrval`): one interest may ask for 1,024 segments, so
//! answering a forged source would make the producer a reflector.

use crate::addrval::{Admit, Validator};
use crate::counters::Counters;
use crate::net;
use crate::packet::{self, ErrorCode, Kind, Packet, SEGMENT_BYTES, UNBOUNDED};
use std::collections::HashMap;
use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Name of the endless synthetic source every producer serves.
pub const BULK_NAME: &str = "bulk";
/// Further synthetic sources, `bulk-1`, `bulk-2`...: distinct content (mid-nodes cache and
/// aggregate by name), so that several consumers of one producer are separate flows.
const BULK_PREFIX: &str = "bulk-";

/// Whether `name` is one of the synthetic sources (`bulk`, `bulk-X`).
pub fn is_bulk(name: &str) -> bool {
    name == BULK_NAME || name.strip_prefix(BULK_PREFIX).is_some_and(|rest| !rest.is_empty())
}
/// How long the loop sleeps waiting for input before checking the stop flag.
const IDLE_POLL: Duration = Duration::from_millis(50);

/// Byte `i` of segment `seg` of the bulk source: a pattern a consumer can check.
pub fn bulk_byte(seg: u32, i: usize) -> u8 {
    (seg as usize).wrapping_mul(31).wrapping_add(i) as u8
}

struct FileContent {
    file: File,
    len: u64,
}

impl FileContent {
    fn segments(&self) -> u32 {
        (self.len.div_ceil(SEGMENT_BYTES as u64)).clamp(1, u64::from(UNBOUNDED - 1)) as u32
    }
}

/// What a producer serves.
#[derive(Debug, Clone, Default)]
pub struct ProducerConfig {
    /// Address to listen on.
    pub listen: Option<SocketAddr>,
    /// Files served under their base names (besides `bulk`).
    pub files: Vec<PathBuf>,
}

/// A bound producer.
pub struct Producer {
    sock: UdpSocket,
    files: HashMap<String, FileContent>,
    validator: Validator,
    /// What happened so far.
    pub counters: Counters,
    /// Segments sent.
    pub segments_sent: u64,
}

impl Producer {
    /// Opens the files and binds. Errors name the file or the address.
    pub fn bind(listen: SocketAddr, files: &[PathBuf]) -> Result<Producer, String> {
        let mut map = HashMap::new();
        for p in files {
            let name = content_name(p)?;
            let file = File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let len = file.metadata().map_err(|e| format!("{}: {e}", p.display()))?.len();
            if len.div_ceil(SEGMENT_BYTES as u64) >= u64::from(UNBOUNDED) {
                return Err(format!("{}: too large for LEOTP (32-bit segment numbers) (at most {} bytes)", p.display(), (u64::from(UNBOUNDED) - 1) * SEGMENT_BYTES as u64));
            }
            if is_bulk(&name) || map.insert(name.clone(), FileContent { file, len }).is_some() {
                return Err(format!("{}: content name {name:?} is served twice", p.display()));
            }
        }
        let sock = net::bind(listen).map_err(|e| format!("bind {listen}: {e}"))?;
        Ok(Producer { sock, files: map, validator: Validator::new()?, counters: Counters::default(), segments_sent: 0 })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("bound socket has an address")
    }

    /// Serves until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) {
        let mut buf = vec![0u8; packet::MAX_PACKET + 1];
        let mut out = Vec::with_capacity(packet::MAX_PACKET);
        let mut payload = vec![0u8; SEGMENT_BYTES];
        while !stop.load(Ordering::Relaxed) {
            net::wait_readable(&self.sock, IDLE_POLL);
            for _ in 0..net::RX_BATCH {
                let Ok((n, from)) = self.sock.recv_from(&mut buf) else { break };
                self.counters.rx_packets += 1;
                self.handle(&buf[..n], from, &mut out, &mut payload);
            }
        }
    }

    fn handle(&mut self, dgram: &[u8], from: SocketAddr, out: &mut Vec<u8>, payload: &mut [u8]) {
        let p = match packet::parse(dgram) {
            Ok(p) => p,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        if p.kind != Kind::Interest {
            self.counters.unsolicited += 1;
            return;
        }
        if self.validator.admit(&p, dgram.len(), from, &self.sock, out, &mut self.counters) == Admit::Drop {
            return;
        }
        let total = if is_bulk(p.name) {
            UNBOUNDED
        } else if let Some(f) = self.files.get(p.name) {
            f.segments()
        } else {
            // Said, not left to the requester's timeout: the source is validated, and the
            // error is no larger than the interest.
            self.counters.unknown_content += 1;
            Packet::error(p.name, p.start, p.end, ErrorCode::UnknownContent).encode(out);
            match self.sock.send_to(out, from) {
                Ok(_) => {
                    self.counters.tx_packets += 1;
                    self.counters.errors_sent += 1;
                }
                Err(_) => self.counters.send_errors += 1,
            }
            return;
        };
        for seg in p.start..p.end.min(total) {
            let len = match self.files.get(p.name) {
                Some(f) => {
                    let off = u64::from(seg) * SEGMENT_BYTES as u64;
                    let len = (f.len.saturating_sub(off)).min(SEGMENT_BYTES as u64) as usize;
                    if f.file.read_exact_at(&mut payload[..len], off).is_err() {
                        self.counters.unknown_content += 1;
                        continue;
                    }
                    len
                }
                None => {
                    for (i, b) in payload.iter_mut().enumerate() {
                        *b = bulk_byte(seg, i);
                    }
                    SEGMENT_BYTES
                }
            };
            let d = Packet { kind: Kind::Data, flags: 0, name: p.name, start: seg, end: total, timestamp_us: net::wall_us(), hold_us: 0, backlog: 0, payload: &payload[..len] };
            d.encode(out);
            match self.sock.send_to(out, from) {
                Ok(_) => {
                    self.counters.tx_packets += 1;
                    self.segments_sent += 1;
                }
                Err(_) => self.counters.send_errors += 1,
            }
        }
    }
}

/// The content name of a served file: its base name, which must be a valid LEOTP name.
pub fn content_name(p: &Path) -> Result<String, String> {
    let name = p.file_name().and_then(|n| n.to_str()).ok_or_else(|| format!("{}: no usable file name", p.display()))?;
    if !packet::valid_name(name.as_bytes()) {
        return Err(format!("{}: the base name must be 1..={} printable ASCII characters without spaces to be a LEOTP name", p.display(), packet::MAX_NAME_LEN));
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_sources_are_bulk_and_bulk_dash_anything() {
        for (name, bulk) in [("bulk", true), ("bulk-2", true), ("bulk-a", true), ("bulk-", false), ("bulky", false), ("video.mp4", false)] {
            assert_eq!(is_bulk(name), bulk, "{name}");
        }
    }
}
