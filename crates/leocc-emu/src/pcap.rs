//! Classic pcap files (the format tcpdump and Wireshark read): a 24-byte global header, then
//! one 16-byte record header plus the bytes per packet. Link type RAW (101): each record is
//! a bare IP packet, which is exactly what a TUN device carries. [`PcapWriter`] writes them,
//! [`PcapReader`] reads them back (ours, or any classic pcap with µs or ns timestamps, in
//! either byte order), for analyses that need both ends of a path.

use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{EmuError, Result};
use leocc_base::OutFile;

/// pcap magic for microsecond timestamps, written in native byte order.
const PCAP_MAGIC_US: u32 = 0xa1b2_c3d4;
/// pcap magic for nanosecond timestamps (read only).
const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
/// Longest record a reader accepts: a corrupt length must not make it allocate gigabytes.
const MAX_RECORD: u32 = 262_144;
const PCAP_VERSION_MAJOR: u16 = 2;
const PCAP_VERSION_MINOR: u16 = 4;
/// LINKTYPE_RAW: the packet begins with an IPv4 or IPv6 header.
const LINKTYPE_RAW: u32 = 101;
/// Bytes captured per packet at most (the whole packet: TUN MTU is 1500).
const SNAPLEN: u32 = 65535;

/// A pcap file being written: to a temporary file that [`PcapWriter::finish`] renames into
/// place, so an interrupted run leaves no truncated capture under the real name.
pub struct PcapWriter {
    out: OutFile,
}

impl PcapWriter {
    /// Starts `path` and writes the global header.
    pub fn create(path: &Path) -> std::io::Result<PcapWriter> {
        let mut out = OutFile::create(path).map_err(std::io::Error::other)?;
        out.write_all(&PCAP_MAGIC_US.to_ne_bytes())?;
        out.write_all(&PCAP_VERSION_MAJOR.to_ne_bytes())?;
        out.write_all(&PCAP_VERSION_MINOR.to_ne_bytes())?;
        out.write_all(&0i32.to_ne_bytes())?; // thiszone: timestamps are UTC
        out.write_all(&0u32.to_ne_bytes())?; // sigfigs
        out.write_all(&SNAPLEN.to_ne_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_ne_bytes())?;
        Ok(PcapWriter { out })
    }

    /// Appends one packet seen at `unix_us` microseconds since the Unix epoch.
    pub fn write(&mut self, unix_us: u64, pkt: &[u8]) -> std::io::Result<()> {
        let len = pkt.len().min(SNAPLEN as usize) as u32;
        self.out.write_all(&((unix_us / 1_000_000) as u32).to_ne_bytes())?;
        self.out.write_all(&((unix_us % 1_000_000) as u32).to_ne_bytes())?;
        self.out.write_all(&len.to_ne_bytes())?;
        self.out.write_all(&(pkt.len() as u32).to_ne_bytes())?;
        self.out.write_all(&pkt[..len as usize])
    }

    /// Writes the buffered records and renames the complete file into place.
    pub fn finish(self) -> std::io::Result<()> {
        self.out.commit().map_err(std::io::Error::other)
    }
}

/// A capture shared by the engine threads that write into it (both directions of one side).
pub type SharedPcap = Arc<Mutex<PcapWriter>>;

/// Creates `dir/name` as a shared capture (the directory too, if needed).
pub fn create_shared(dir: &Path, name: &str) -> Result<SharedPcap> {
    std::fs::create_dir_all(dir).map_err(|e| EmuError::io(format!("create {}", dir.display()), e))?;
    let p = dir.join(name);
    PcapWriter::create(&p).map(|w| Arc::new(Mutex::new(w))).map_err(|e| EmuError::io(format!("create {}", p.display()), e))
}

/// Completes shared captures once the threads that wrote them have been joined (a capture
/// still shared, or poisoned by a panicking thread, is dropped: its temporary file goes).
/// A capture that cannot be written is reported on stderr, prefixed with `who`.
pub fn finish_shared(pcaps: Vec<SharedPcap>, who: &str) {
    for p in pcaps {
        if let Some(w) = Arc::try_unwrap(p).ok().and_then(|m| m.into_inner().ok()) {
            if let Err(e) = w.finish() {
                eprintln!("{who}: warning: could not write the capture: {e}");
            }
        }
    }
}

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// When it was captured, µs since the Unix epoch.
    pub unix_us: u64,
    /// The captured bytes (possibly fewer than the packet had: see `orig_len`).
    pub data: Vec<u8>,
    /// The packet's length on the wire.
    pub orig_len: u32,
}

/// Reads a classic pcap file record by record.
pub struct PcapReader {
    path: PathBuf,
    r: BufReader<std::fs::File>,
    swapped: bool,
    nanos: bool,
    offset: u64,
}

impl PcapReader {
    /// Opens `path` and checks its global header.
    pub fn open(path: &Path) -> Result<PcapReader> {
        let f = std::fs::File::open(path).map_err(|e| EmuError::io(format!("open {}", path.display()), e))?;
        let mut r = PcapReader { path: path.to_path_buf(), r: BufReader::new(f), swapped: false, nanos: false, offset: 0 };
        let mut h = [0u8; 24];
        if !r.fill(&mut h)? {
            return Err(r.bad("empty file, not a pcap capture"));
        }
        let magic = u32::from_ne_bytes(h[0..4].try_into().expect("4 bytes"));
        (r.swapped, r.nanos) = match magic {
            PCAP_MAGIC_US => (false, false),
            PCAP_MAGIC_NS => (false, true),
            m if m.swap_bytes() == PCAP_MAGIC_US => (true, false),
            m if m.swap_bytes() == PCAP_MAGIC_NS => (true, true),
            m => return Err(r.bad(&format!("magic {m:#010x}: not a classic pcap capture (pcapng is not read)"))),
        };
        let linktype = r.u32_at(&h, 20);
        if linktype != LINKTYPE_RAW {
            return Err(r.bad(&format!("link type {linktype}: only RAW (101, bare IP packets, as TUN devices carry) is read")));
        }
        r.offset = 24;
        Ok(r)
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let v = u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        if self.swapped {
            v.swap_bytes()
        } else {
            v
        }
    }

    fn bad(&self, what: &str) -> EmuError {
        EmuError::msg(format!("{}: byte {}: {what}", self.path.display(), self.offset))
    }

    /// Fills `buf`; false at a clean end of file before its first byte.
    fn fill(&mut self, buf: &mut [u8]) -> Result<bool> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => return Err(self.bad(&format!("truncated: {got} of {} bytes", buf.len()))),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(EmuError::io(format!("read {}", self.path.display()), e)),
            }
        }
        Ok(true)
    }

    /// The next record; `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        let mut h = [0u8; 16];
        if !self.fill(&mut h)? {
            return Ok(None);
        }
        let (sec, frac, incl, orig) = (self.u32_at(&h, 0), self.u32_at(&h, 4), self.u32_at(&h, 8), self.u32_at(&h, 12));
        if incl > MAX_RECORD {
            return Err(self.bad(&format!("record of {incl} bytes (at most {MAX_RECORD}): corrupt capture")));
        }
        let mut data = vec![0u8; incl as usize];
        self.fill(&mut data)?;
        self.offset += 16 + u64::from(incl);
        let sub_us = if self.nanos { u64::from(frac) / 1000 } else { u64::from(frac) };
        Ok(Some(Record { unix_us: u64::from(sec) * 1_000_000 + sub_us, data, orig_len: orig }))
    }
}

impl Iterator for PcapReader {
    type Item = Result<Record>;
    fn next(&mut self) -> Option<Result<Record>> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_header_and_records() {
        let dir = std::env::temp_dir().join(format!("leocc-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        let mut w = PcapWriter::create(&path).unwrap();
        w.write(1_500_000, &[0x45, 1, 2]).unwrap();
        // Nothing under the real name until the capture is complete.
        assert!(!path.exists());
        w.finish().unwrap();
        let b = std::fs::read(&path).unwrap();
        assert_eq!(b.len(), 24 + 16 + 3);
        assert_eq!(u32::from_ne_bytes(b[0..4].try_into().unwrap()), PCAP_MAGIC_US);
        assert_eq!(u32::from_ne_bytes(b[20..24].try_into().unwrap()), LINKTYPE_RAW);
        assert_eq!(u32::from_ne_bytes(b[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(b[28..32].try_into().unwrap()), 500_000);
        assert_eq!(&b[40..], &[0x45, 1, 2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_back_what_was_written_and_names_corruption() {
        let dir = std::env::temp_dir().join(format!("leocc-pcap-r-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        let mut w = PcapWriter::create(&path).unwrap();
        w.write(1_500_000, &[0x45, 1, 2]).unwrap();
        w.write(2_000_007, &[0x45; 40]).unwrap();
        w.finish().unwrap();
        let recs: Vec<Record> = PcapReader::open(&path).unwrap().collect::<Result<_>>().unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].unix_us, recs[0].data.as_slice(), recs[0].orig_len), (1_500_000, &[0x45, 1, 2][..], 3));
        assert_eq!((recs[1].unix_us, recs[1].data.len()), (2_000_007, 40));
        // A cut-off last record is an error naming the file and where, not a short packet.
        let b = std::fs::read(&path).unwrap();
        std::fs::write(&path, &b[..b.len() - 5]).unwrap();
        let err = PcapReader::open(&path).unwrap().collect::<Result<Vec<_>>>().unwrap_err().to_string();
        assert!(err.contains("t.pcap") && err.contains("byte 43") && err.contains("truncated"), "{err}");
        std::fs::write(&path, b"not a capture at all, 24+").unwrap();
        assert!(PcapReader::open(&path).err().unwrap().to_string().contains("not a classic pcap"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
