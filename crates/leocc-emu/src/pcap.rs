//! Classic pcap files (the format tcpdump and Wireshark read): a 24-byte global header, then
//! one 16-byte record header plus the bytes per packet. Link type RAW (101): each record is
//! a bare IP packet, which is exactly what a TUN device carries.

use std::io::Write;
use std::path::Path;

use leocc_trace::OutFile;

/// pcap magic for microsecond timestamps, written in native byte order.
const PCAP_MAGIC_US: u32 = 0xa1b2_c3d4;
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
}
