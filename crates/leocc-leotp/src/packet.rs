//! The LEOTP wire format, version 1 (documented in docs/leotp.md). One packet per UDP
//! datagram, big-endian, a fixed 24-byte header, then the name, then (data only) the payload.
//!
//! ```text
//!  0      2    3     4      5         6            8         12        16            24
//!  | "LT" | ver | kind | flags | name_len | payload_len | start | end | timestamp_us | name | payload
//! ```
//!
//! * Interest (kind 1): asks for segments `[start, end)` of the content `name`.
//! * Data (kind 2): segment `start` of `name`; `end` is the content's total number of
//!   segments (`UNBOUNDED` for an endless bulk source); `timestamp_us` is the producer's
//!   wall clock when it sent the segment, for one-way delay; `hold_us` is how long the node
//!   that sent it over the last hop held the request before answering (waiting for its own
//!   upstream), which the requester subtracts so its *hop* RTT is the hop's alone. Each
//!   mid-node rewrites `hold_us` when it forwards; `backlog` is that node's backlog of
//!   requests waiting for its own upstream hop (the BL of eq. 9, 0 at the producer), which the
//!   requester uses for backpressure. The rest of the packet is forwarded as is.
//! * Void (kind 3, the paper's Void Packet Header): segments `[start, end)` were lost on an
//!   upstream hop and are being recovered there; downstream nodes neither report them as holes
//!   again nor let the consumer's timer retransmit them meanwhile.
//!
//! `parse` never panics: every field is checked, and anything inconsistent is an error the
//! caller counts and drops.

/// First two bytes of every packet.
pub const MAGIC: [u8; 2] = *b"LT";
/// The only version this code speaks; another version is refused (not guessed at).
pub const VERSION: u8 = 1;
/// Bytes before the name.
pub const HEADER_LEN: usize = 32;
/// Offset of `hold_us` and then `backlog`, which mid-nodes rewrite in place.
pub const HOLD_OFFSET: usize = 24;
/// Longest name: names are short identifiers ("bulk", a file's base name), and a bound keeps
/// per-flow state and the header small.
pub const MAX_NAME_LEN: usize = 40;
/// Payload bytes of one data segment: 28 (IPv4/UDP) + 32 + 40 + 1400 = 1500, so a segment
/// fills but never exceeds a 1500-byte MTU whatever the name; with `bulk` the payload is
/// 95.6 % of the wire bytes (kernel TCP with timestamps: 1448 / 1500 = 96.5 %).
pub const SEGMENT_BYTES: usize = 1400;
/// Largest valid packet.
pub const MAX_PACKET: usize = HEADER_LEN + MAX_NAME_LEN + SEGMENT_BYTES;
/// Most segments one interest or void may cover: a bound on the work a single (possibly
/// spoofed) packet can cause at a node.
pub const MAX_RANGE: u32 = 1024;
/// Adds segment `seg` to `ranges` (`[start, end)`, in the order found): it extends the last
/// range when it follows it, else starts a new one.
pub fn push_segment(ranges: &mut Vec<(u32, u32)>, seg: u32) {
    match ranges.last_mut() {
        Some((_, end)) if *end == seg => *end += 1,
        _ => ranges.push((seg, seg.saturating_add(1))),
    }
}

/// `end` of a data packet whose content has no end (the bulk source).
pub const UNBOUNDED: u32 = u32::MAX;
/// Flag: this interest is a retransmission (consumer timeout or a mid-node's hole repair);
/// a node that already forwarded the same request upstream forwards it again.
pub const FLAG_RETX: u8 = 1;
/// Flags this version defines; others must be zero.
const KNOWN_FLAGS: u8 = FLAG_RETX;

/// Packet kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A request for a segment range.
    Interest = 1,
    /// One segment.
    Data = 2,
    /// A void packet header: a range being recovered upstream.
    Void = 3,
}

/// A parsed packet borrowing the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// What it is.
    pub kind: Kind,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// Content name (printable ASCII, 1..=MAX_NAME_LEN bytes).
    pub name: &'a str,
    /// Interest/Void: first segment; Data: the segment.
    pub start: u32,
    /// Interest/Void: one past the last segment; Data: total segments of the content.
    pub end: u32,
    /// Interest: the requester's clock; Data: the producer's wall clock at sending, µs.
    pub timestamp_us: u64,
    /// Data: µs the last hop's sender held the request before answering (0 otherwise).
    pub hold_us: u32,
    /// Data: the sending node's request backlog towards its upstream, segments (0 otherwise).
    pub backlog: u32,
    /// Segment bytes (data only).
    pub payload: &'a [u8],
}

/// Why a datagram is not a valid packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than the header, or than the lengths it announces.
    Truncated,
    /// Longer than the header announces, or than `MAX_PACKET`.
    Oversized,
    /// Not "LT".
    BadMagic,
    /// Another protocol version.
    BadVersion(u8),
    /// Unknown kind byte.
    BadKind(u8),
    /// Unknown flag bits.
    BadFlags(u8),
    /// Empty, too long, or not printable ASCII.
    BadName,
    /// Interest/void range empty or wider than `MAX_RANGE`; data segment beyond the total.
    BadRange,
    /// Payload on an interest or void, or a data payload larger than `SEGMENT_BYTES`.
    BadPayload,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Truncated => write!(f, "truncated packet"),
            ParseError::Oversized => write!(f, "oversized packet"),
            ParseError::BadMagic => write!(f, "not a LEOTP packet (bad magic)"),
            ParseError::BadVersion(v) => write!(f, "unsupported LEOTP version {v} (this is {VERSION})"),
            ParseError::BadKind(k) => write!(f, "unknown packet kind {k}"),
            ParseError::BadFlags(b) => write!(f, "unknown flags {b:#04x}"),
            ParseError::BadName => write!(f, "invalid content name"),
            ParseError::BadRange => write!(f, "invalid segment range"),
            ParseError::BadPayload => write!(f, "invalid payload length"),
        }
    }
}

impl std::error::Error for ParseError {}

fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Whether `name` is a valid content name.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_LEN && name.iter().all(|&c| (0x21..=0x7e).contains(&c))
}

/// Parses one datagram.
pub fn parse(buf: &[u8]) -> Result<Packet<'_>, ParseError> {
    if buf.len() > MAX_PACKET {
        return Err(ParseError::Oversized);
    }
    if buf.len() < HEADER_LEN {
        return Err(ParseError::Truncated);
    }
    if buf[0..2] != MAGIC {
        return Err(ParseError::BadMagic);
    }
    if buf[2] != VERSION {
        return Err(ParseError::BadVersion(buf[2]));
    }
    let kind = match buf[3] {
        1 => Kind::Interest,
        2 => Kind::Data,
        3 => Kind::Void,
        k => return Err(ParseError::BadKind(k)),
    };
    let flags = buf[4];
    if flags & !KNOWN_FLAGS != 0 {
        return Err(ParseError::BadFlags(flags));
    }
    let name_len = usize::from(buf[5]);
    let payload_len = usize::from(be_u16(&buf[6..8]));
    let start = be_u32(&buf[8..12]);
    let end = be_u32(&buf[12..16]);
    let timestamp_us = u64::from_be_bytes([buf[16], buf[17], buf[18], buf[19], buf[20], buf[21], buf[22], buf[23]]);
    let hold_us = be_u32(&buf[HOLD_OFFSET..HOLD_OFFSET + 4]);
    let backlog = be_u32(&buf[HOLD_OFFSET + 4..HOLD_OFFSET + 8]);
    let total = HEADER_LEN + name_len + payload_len;
    if buf.len() < total {
        return Err(ParseError::Truncated);
    }
    if buf.len() > total {
        return Err(ParseError::Oversized);
    }
    let name_bytes = &buf[HEADER_LEN..HEADER_LEN + name_len];
    if !valid_name(name_bytes) {
        return Err(ParseError::BadName);
    }
    // Checked above: printable ASCII is UTF-8.
    let name = std::str::from_utf8(name_bytes).map_err(|_| ParseError::BadName)?;
    let payload = &buf[HEADER_LEN + name_len..];
    match kind {
        Kind::Interest | Kind::Void => {
            if !payload.is_empty() {
                return Err(ParseError::BadPayload);
            }
            if start >= end || end - start > MAX_RANGE {
                return Err(ParseError::BadRange);
            }
        }
        Kind::Data => {
            if payload.len() > SEGMENT_BYTES {
                return Err(ParseError::BadPayload);
            }
            if start >= end {
                return Err(ParseError::BadRange);
            }
        }
    }
    Ok(Packet { kind, flags, name, start, end, timestamp_us, hold_us, backlog, payload })
}

/// Rewrites `hold_us` and `backlog` of an encoded data packet in place (a mid-node
/// forwarding it).
pub fn set_hold(dgram: &mut [u8], hold_us: u32, backlog: u32) {
    if let Some(f) = dgram.get_mut(HOLD_OFFSET..HOLD_OFFSET + 8) {
        f[..4].copy_from_slice(&hold_us.to_be_bytes());
        f[4..].copy_from_slice(&backlog.to_be_bytes());
    }
}

impl Packet<'_> {
    /// Appends the wire form to `out` (cleared first). Panics only on a packet `parse` would
    /// refuse, which this crate never builds (names are checked where they enter).
    pub fn encode(&self, out: &mut Vec<u8>) {
        debug_assert!(valid_name(self.name.as_bytes()) && self.payload.len() <= SEGMENT_BYTES);
        out.clear();
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.kind as u8);
        out.push(self.flags);
        out.push(self.name.len() as u8);
        out.extend_from_slice(&(self.payload.len() as u16).to_be_bytes());
        out.extend_from_slice(&self.start.to_be_bytes());
        out.extend_from_slice(&self.end.to_be_bytes());
        out.extend_from_slice(&self.timestamp_us.to_be_bytes());
        out.extend_from_slice(&self.hold_us.to_be_bytes());
        out.extend_from_slice(&self.backlog.to_be_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(self.payload);
    }

    /// An interest for `[start, end)`.
    pub fn interest(name: &str, start: u32, end: u32, flags: u8, timestamp_us: u64) -> Packet<'_> {
        Packet { kind: Kind::Interest, flags, name, start, end, timestamp_us, hold_us: 0, backlog: 0, payload: &[] }
    }

    /// A void header for `[start, end)`.
    pub fn void(name: &str, start: u32, end: u32) -> Packet<'_> {
        Packet { kind: Kind::Void, flags: 0, name, start, end, timestamp_us: 0, hold_us: 0, backlog: 0, payload: &[] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(p: &Packet) -> Vec<u8> {
        let mut v = Vec::new();
        p.encode(&mut v);
        v
    }

    #[test]
    fn every_kind_round_trips() {
        let payload = vec![7u8; SEGMENT_BYTES];
        let pkts = [
            Packet::interest("bulk", 10, 20, FLAG_RETX, 5),
            Packet::void("a/b.bin", 0, MAX_RANGE),
            Packet { kind: Kind::Data, flags: 0, name: "x", start: 3, end: UNBOUNDED, timestamp_us: u64::MAX, hold_us: 77, backlog: 5, payload: &payload },
        ];
        for p in pkts {
            let b = enc(&p);
            assert!(b.len() <= MAX_PACKET);
            assert_eq!(parse(&b), Ok(p));
        }
    }

    #[test]
    fn malformed_packets_are_refused_with_the_reason() {
        let good = enc(&Packet::interest("bulk", 1, 2, 0, 0));
        assert_eq!(parse(&good[..10]), Err(ParseError::Truncated));
        assert_eq!(parse(&good[..good.len() - 1]), Err(ParseError::Truncated));
        let mut long = good.clone();
        long.push(0);
        assert_eq!(parse(&long), Err(ParseError::Oversized));
        assert_eq!(parse(&vec![0u8; MAX_PACKET + 1]), Err(ParseError::Oversized));
        let set = |i: usize, v: u8| {
            let mut b = good.clone();
            b[i] = v;
            parse(&b).map(|_| ())
        };
        assert_eq!(set(0, b'X'), Err(ParseError::BadMagic));
        assert_eq!(set(2, 2), Err(ParseError::BadVersion(2)));
        assert_eq!(set(3, 9), Err(ParseError::BadKind(9)));
        assert_eq!(set(4, 0x80), Err(ParseError::BadFlags(0x80)));
        assert_eq!(set(HEADER_LEN, b' '), Err(ParseError::BadName));
        // Empty range, reversed range, too wide a range.
        for (s, e) in [(5, 5), (6, 5), (0, MAX_RANGE + 1)] {
            assert_eq!(parse(&enc(&Packet::interest("n", s, e, 0, 0))), Err(ParseError::BadRange));
        }
        // A payload on an interest: announce one byte and append it.
        let mut b = good.clone();
        b[7] = 1;
        b.push(0);
        assert_eq!(parse(&b), Err(ParseError::BadPayload));
        let data = Packet { kind: Kind::Data, flags: 0, name: "n", start: 4, end: 4, timestamp_us: 0, hold_us: 0, backlog: 0, payload: b"" };
        assert_eq!(parse(&enc(&data)), Err(ParseError::BadRange));
    }

    #[test]
    fn a_mid_node_rewrites_hold_and_backlog_in_place() {
        let payload = [9u8; 100];
        let mut b = enc(&Packet { kind: Kind::Data, flags: 0, name: "bulk", start: 7, end: UNBOUNDED, timestamp_us: 42, hold_us: 0, backlog: 0, payload: &payload });
        set_hold(&mut b, 12_345, 678);
        let p = parse(&b).unwrap();
        assert_eq!((p.hold_us, p.backlog, p.start, p.timestamp_us, p.payload), (12_345, 678, 7, 42, &payload[..]));
        // Too short to hold the fields: left alone, no panic.
        let mut short = vec![0u8; 10];
        set_hold(&mut short, 1, 1);
        assert_eq!(short, vec![0u8; 10]);
    }

    #[test]
    fn the_fuzz_seeds_are_valid_packets_of_every_kind() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/leotp_packet");
        let mut kinds = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let bytes = std::fs::read(e.unwrap().path()).unwrap();
            let p = parse(&bytes).unwrap();
            assert_eq!(enc(&p), bytes);
            kinds.push(p.kind as u8);
        }
        kinds.sort_unstable();
        assert_eq!(kinds, [1, 2, 3]);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let good = enc(&Packet::interest("bulk", 1, 2, 0, 0));
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = good.clone();
            b.resize((x % 200) as usize, (x >> 8) as u8);
            let idx = (x >> 16) as usize % b.len().max(1);
            if let Some(v) = b.get_mut(idx) {
                *v = (x >> 24) as u8 ^ i as u8;
            }
            let _ = parse(&b);
        }
    }
}
