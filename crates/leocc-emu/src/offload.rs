//! TUN offloads: how the engine reads a 64 KB super-packet with one syscall and still serves
//! the link model 1500-byte packets.
//!
//! With `IFF_VNET_HDR` every read and write on the device carries a 10-byte virtio-net header
//! before the IP packet, and `TUNSETOFFLOAD` lets the kernel hand over what a NIC with TSO and
//! UDP segmentation offload would get: a TCP or UDP *super-packet* of up to 64 KB (one header,
//! `gso_size` bytes per segment) whose transport checksum is left for the "hardware" to
//! finish (`NEEDS_CSUM`: the checksum field holds only the pseudo-header sum). The engine's
//! cost is then per super-packet on the read side, not per packet.
//!
//! [`split`] cuts a super-packet into the packets the sender's kernel would have put on the
//! wire without offload — the link model's opportunities, queue limits and losses all stay per
//! packet — and leaves each one's checksum partial too. The engine writes them to the other
//! device with `NEEDS_CSUM` set, which the receiving stack accepts as a packet whose checksum
//! the hardware vouched for (as with a virtio-net NIC); [`complete_checksum`] finishes it
//! where real bytes are needed (pcap captures). On the way out, [`Coalescer`] merges what
//! leaves in the same engine step back into one super-packet, as a NIC's GRO would, so the
//! write and the receiving stack are paid per super-packet too. IPv4 only, like the rest of
//! the emulator.

use crate::packet;

/// Bytes of the virtio-net header in front of every packet (`struct virtio_net_hdr`).
pub const VNET_HDR_LEN: usize = 10;
/// Largest super-packet the kernel hands a TUN device (GSO_MAX_SIZE), plus its header.
pub const MAX_SUPER_PACKET: usize = 65_536 + VNET_HDR_LEN;
/// `TUNSETOFFLOAD` features the emulator asks for: checksum, TCP and UDP segmentation over
/// IPv4, TCP with ECN. The kernel accepts UDP segmentation only for both IP versions at once;
/// the devices carry no IPv6, so no IPv6 super-packet comes (one would be counted malformed).
pub const TUN_FEATURES: libc::c_uint = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO_ECN | libc::TUN_F_USO4 | libc::TUN_F_USO6;

const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_UDP_L4: u8 = 5;
const GSO_ECN: u8 = 0x80;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const TCP_FLAG_FIN: u8 = 0x01;
const TCP_FLAG_PSH: u8 = 0x08;
const TCP_FLAG_CWR: u8 = 0x80;
/// Offset of the checksum field in a TCP and in a UDP header.
const TCP_CSUM_OFFSET: u16 = 16;
const UDP_CSUM_OFFSET: u16 = 6;
/// Longest IPv4 + TCP header (60 + 60 bytes).
const MAX_HEADERS: usize = 120;

/// A transport checksum left for the receiver's "hardware": the field at `start + offset`
/// holds the pseudo-header sum; the sum over `start..` completes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Csum {
    /// Where the checksummed bytes begin (the transport header).
    pub start: u16,
    /// Offset of the checksum field from `start`.
    pub offset: u16,
}

/// The virtio-net header (little-endian on the hosts this runs on, as TUN uses by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// `NEEDS_CSUM` and friends.
    pub flags: u8,
    /// Segmentation type (none, TCPv4, UDP L4), with the ECN bit.
    pub gso_type: u8,
    /// Header bytes (advisory).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Checksum start, when `NEEDS_CSUM`.
    pub csum_start: u16,
    /// Checksum field offset from `csum_start`.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Reads the header at the front of `b` (which must hold `VNET_HDR_LEN` bytes).
    pub fn parse(b: &[u8]) -> VnetHdr {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr { flags: b[0], gso_type: b[1], hdr_len: u16_at(2), gso_size: u16_at(4), csum_start: u16_at(6), csum_offset: u16_at(8) }
    }

    /// The header of one plain packet to write, its checksum left partial or not.
    pub fn for_packet(csum: Option<Csum>) -> [u8; VNET_HDR_LEN] {
        let mut h = [0u8; VNET_HDR_LEN];
        if let Some(c) = csum {
            h[0] = F_NEEDS_CSUM;
            h[6..8].copy_from_slice(&c.start.to_le_bytes());
            h[8..10].copy_from_slice(&c.offset.to_le_bytes());
        }
        h
    }
}

/// Why a packet from the device could not be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitError {
    /// Not IPv4, or its headers do not fit.
    BadHeaders,
    /// A segmentation type or protocol the emulator did not ask for.
    Unsupported,
    /// A checksum position outside the packet.
    BadChecksum,
    /// A segment would not fit a packet buffer.
    TooLarge,
}

/// One packet cut from a super-packet: its (rewritten) headers, then its payload.
pub struct Piece<'a> {
    /// IPv4 and transport header of this packet.
    pub headers: &'a [u8],
    /// Its payload, a slice of the super-packet's.
    pub payload: &'a [u8],
    /// The partial checksum to finish, if any.
    pub csum: Option<Csum>,
}

impl Piece<'_> {
    /// Bytes of the packet.
    pub fn len(&self) -> usize {
        self.headers.len() + self.payload.len()
    }

    /// Whether the packet is empty (never, for a piece `split` made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Hands `out` every packet of `pkt` (the bytes after the virtio-net header `h`): the packet
/// itself when it is not a super-packet, else one per `gso_size` bytes of payload, each no
/// longer than `max_len`. Each packet's IP length, identification and header checksum are its
/// own; a TCP segment's sequence number advances, FIN and PSH stay on the last segment and CWR
/// on the first, as a NIC's TSO does.
pub fn split(h: &VnetHdr, pkt: &[u8], max_len: usize, mut out: impl FnMut(Piece<'_>)) -> Result<(), SplitError> {
    let gso = h.gso_type & !GSO_ECN;
    let given_csum = (h.flags & F_NEEDS_CSUM != 0).then_some(Csum { start: h.csum_start, offset: h.csum_offset });
    if let Some(c) = given_csum {
        if usize::from(c.start) + usize::from(c.offset) + 2 > pkt.len() {
            return Err(SplitError::BadChecksum);
        }
    }
    if gso == GSO_NONE {
        if pkt.len() > max_len {
            return Err(SplitError::TooLarge);
        }
        out(Piece { headers: &[], payload: pkt, csum: given_csum });
        return Ok(());
    }
    let (ihl, total) = ipv4_lengths(pkt).ok_or(SplitError::BadHeaders)?;
    let (proto, l4_hdr, csum_offset) = match (gso, pkt[9]) {
        (GSO_TCPV4, PROTO_TCP) if total >= ihl + 20 => (PROTO_TCP, usize::from(pkt[ihl + 12] >> 4) * 4, TCP_CSUM_OFFSET),
        (GSO_UDP_L4, PROTO_UDP) => (PROTO_UDP, 8, UDP_CSUM_OFFSET),
        _ => return Err(SplitError::Unsupported),
    };
    let hlen = ihl + l4_hdr;
    let mss = usize::from(h.gso_size);
    if l4_hdr < 8 || hlen > total || hlen > MAX_HEADERS || mss == 0 {
        return Err(SplitError::BadHeaders);
    }
    if hlen + mss > max_len {
        return Err(SplitError::TooLarge);
    }
    let payload = &pkt[hlen..total];
    let segments = payload.len().div_ceil(mss).max(1);
    let id = u16::from_be_bytes([pkt[4], pkt[5]]);
    let seq = u32::from_be_bytes([pkt[ihl + 4], pkt[ihl + 5], pkt[ihl + 6], pkt[ihl + 7]]);
    let mut hdr = [0u8; MAX_HEADERS];
    for k in 0..segments {
        let chunk = &payload[(k * mss).min(payload.len())..((k + 1) * mss).min(payload.len())];
        let hd = &mut hdr[..hlen];
        hd.copy_from_slice(&pkt[..hlen]);
        let len = (hlen + chunk.len()) as u16;
        hd[2..4].copy_from_slice(&len.to_be_bytes());
        hd[4..6].copy_from_slice(&id.wrapping_add(k as u16).to_be_bytes());
        hd[10..12].copy_from_slice(&[0, 0]);
        let ip_sum = packet::checksum(&hd[..ihl]);
        hd[10..12].copy_from_slice(&ip_sum.to_be_bytes());
        let l4 = &mut hd[ihl..];
        let l4_len = (l4_hdr + chunk.len()) as u16;
        if proto == PROTO_TCP {
            l4[4..8].copy_from_slice(&seq.wrapping_add((k * mss) as u32).to_be_bytes());
            if k + 1 < segments {
                l4[13] &= !(TCP_FLAG_FIN | TCP_FLAG_PSH);
            }
            if k > 0 {
                l4[13] &= !TCP_FLAG_CWR;
            }
        } else {
            l4[4..6].copy_from_slice(&l4_len.to_be_bytes());
        }
        let field = usize::from(csum_offset);
        l4[field..field + 2].copy_from_slice(&pseudo_header_sum(&pkt[12..20], proto, l4_len).to_be_bytes());
        out(Piece { headers: hd, payload: chunk, csum: Some(Csum { start: ihl as u16, offset: csum_offset }) });
    }
    Ok(())
}

/// TCP flags a segment may carry and still be merged with its neighbours (as GRO does).
const TCP_FLAG_ACK: u8 = 0x10;
const MERGEABLE_FLAGS: u8 = TCP_FLAG_ACK | TCP_FLAG_PSH;

/// Gathers consecutive segments of one TCP connection (or datagrams of one UDP flow),
/// released in the same engine step, into one super-packet for one write, as a NIC's GRO
/// would before the receiving stack: the write side's cost is then per super-packet too. Only
/// packets whose checksum is still partial merge; a TCP segment with PSH, or any short
/// segment or datagram, ends a super-packet (it ends the sender's burst).
pub struct Coalescer {
    buf: Vec<u8>,
    proto: u8,
    ihl: usize,
    hlen: usize,
    mss: usize,
    segments: usize,
    next_seq: u32,
    closed: bool,
}

impl Default for Coalescer {
    fn default() -> Coalescer {
        Coalescer { buf: Vec::with_capacity(MAX_SUPER_PACKET), proto: 0, ihl: 0, hlen: 0, mss: 0, segments: 0, next_seq: 0, closed: false }
    }
}

impl Coalescer {
    /// Segments gathered so far.
    pub fn segments(&self) -> usize {
        self.segments
    }

    /// Adds `pkt` if it can start or continue the pending super-packet; false leaves the
    /// pending one as it was (flush it, then add again or write `pkt` alone).
    pub fn try_add(&mut self, pkt: &[u8], csum: Option<Csum>) -> bool {
        let Some((ihl, total)) = ipv4_lengths(pkt) else { return false };
        let proto = pkt[9];
        let fragment = pkt[6] & 0x3f != 0 || pkt[7] != 0;
        if total != pkt.len() || fragment {
            return false;
        }
        let (hlen, csum_offset, flags) = match proto {
            PROTO_TCP if total >= ihl + 20 => (ihl + usize::from(pkt[ihl + 12] >> 4) * 4, TCP_CSUM_OFFSET, pkt[ihl + 13]),
            PROTO_UDP if total >= ihl + 8 => (ihl + 8, UDP_CSUM_OFFSET, 0),
            _ => return false,
        };
        if csum != Some(Csum { start: ihl as u16, offset: csum_offset }) || hlen < ihl + 8 || hlen >= total || flags & !MERGEABLE_FLAGS != 0 {
            return false; // a complete checksum, no payload, or TCP flags beyond ACK and PSH
        }
        let payload = total - hlen;
        let seq = if proto == PROTO_TCP { u32::from_be_bytes([pkt[ihl + 4], pkt[ihl + 5], pkt[ihl + 6], pkt[ihl + 7]]) } else { 0 };
        if self.segments == 0 {
            self.buf.clear();
            self.buf.extend_from_slice(pkt);
            (self.proto, self.ihl, self.hlen, self.mss, self.segments) = (proto, ihl, hlen, payload, 1);
        } else {
            let p = &self.buf;
            let same = |a: usize, b: usize| p[a..b] == pkt[a..b];
            let (i, h) = (ihl, hlen);
            let same_headers = same(0, 2) && same(6, 10) && same(12, i) // IP: all but length, id, checksum
                && if proto == PROTO_TCP {
                    seq == self.next_seq && same(i, i + 4) && same(i + 8, i + 13) && same(i + 14, i + 16) && same(i + 18, h) // all but seq, flags, checksum
                } else {
                    same(i, i + 4) // ports
                };
            let continues = !self.closed && (proto, ihl, hlen) == (self.proto, self.ihl, self.hlen) && payload <= self.mss && self.buf.len() + payload <= u16::MAX as usize && same_headers;
            if !continues {
                return false;
            }
            self.buf.extend_from_slice(&pkt[hlen..]);
            if proto == PROTO_TCP {
                self.buf[ihl + 13] |= flags & TCP_FLAG_PSH;
            }
            self.segments += 1;
        }
        self.next_seq = seq.wrapping_add(payload as u32);
        // A short segment or PSH ends the sender's burst: nothing may follow it in one piece.
        self.closed = payload < self.mss || flags & TCP_FLAG_PSH != 0;
        true
    }

    /// The pending super-packet (or single segment) and its virtio-net header; empties the
    /// coalescer. None when nothing is pending.
    pub fn take(&mut self) -> Option<([u8; VNET_HDR_LEN], &[u8])> {
        if self.segments == 0 {
            return None;
        }
        let (ihl, hlen, tcp) = (self.ihl, self.hlen, self.proto == PROTO_TCP);
        let offset = if tcp { TCP_CSUM_OFFSET } else { UDP_CSUM_OFFSET };
        let mut hdr = VnetHdr::for_packet(Some(Csum { start: ihl as u16, offset }));
        if self.segments > 1 {
            let total = self.buf.len();
            let l4_len = (total - ihl) as u16;
            self.buf[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            self.buf[10..12].copy_from_slice(&[0, 0]);
            let ip_sum = packet::checksum(&self.buf[..ihl]);
            self.buf[10..12].copy_from_slice(&ip_sum.to_be_bytes());
            if !tcp {
                self.buf[ihl + 4..ihl + 6].copy_from_slice(&l4_len.to_be_bytes());
            }
            let sum = pseudo_header_sum(&self.buf[12..20], self.proto, l4_len);
            let field = ihl + usize::from(offset);
            self.buf[field..field + 2].copy_from_slice(&sum.to_be_bytes());
            hdr[1] = if tcp { GSO_TCPV4 } else { GSO_UDP_L4 };
            hdr[2..4].copy_from_slice(&(hlen as u16).to_le_bytes());
            hdr[4..6].copy_from_slice(&(self.mss as u16).to_le_bytes());
        }
        self.segments = 0;
        self.closed = false;
        Some((hdr, &self.buf))
    }
}

/// IPv4 header length and total length, if the header is well formed and fits.
fn ipv4_lengths(pkt: &[u8]) -> Option<(usize, usize)> {
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
    (ihl >= 20 && ihl <= total && total <= pkt.len()).then_some((ihl, total))
}

/// The folded, uncomplemented sum of the IPv4 pseudo-header (`addrs`: source then
/// destination), as a partial checksum field holds it.
fn pseudo_header_sum(addrs: &[u8], proto: u8, l4_len: u16) -> u16 {
    let mut sum: u32 = addrs.chunks_exact(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    sum += u32::from(proto) + u32::from(l4_len);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Finishes a partial checksum in place, as the receiving hardware would have.
pub fn complete_checksum(pkt: &mut [u8], c: Csum) {
    let (start, field) = (usize::from(c.start), usize::from(c.start) + usize::from(c.offset));
    if field + 2 > pkt.len() {
        return;
    }
    // The field holds the pseudo-header sum: summing over it includes it.
    let sum = packet::checksum(&pkt[start..]);
    pkt[field..field + 2].copy_from_slice(&sum.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 + TCP super-packet of `payload` bytes, with the pseudo-header sum in the TCP
    /// checksum field (as the kernel leaves it).
    fn tcp_super(payload: usize, flags: u8) -> Vec<u8> {
        let total = 20 + 32 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0xfffeu16.to_be_bytes());
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..22].copy_from_slice(&5201u16.to_be_bytes());
        p[24..28].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        p[32] = 8 << 4;
        p[33] = flags;
        for (i, b) in p[52..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    fn tcp_checksum_ok(pkt: &[u8]) -> bool {
        let total = pkt.len();
        let mut pseudo = pkt[12..20].to_vec();
        pseudo.extend_from_slice(&[0, PROTO_TCP]);
        pseudo.extend_from_slice(&((total - 20) as u16).to_be_bytes());
        pseudo.extend_from_slice(&pkt[20..]);
        packet::checksum(&pseudo) == 0
    }

    #[test]
    fn a_tso_super_packet_becomes_the_packets_the_sender_would_have_sent() {
        let sup = tcp_super(3000, TCP_FLAG_PSH | TCP_FLAG_FIN | TCP_FLAG_CWR);
        let h = VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_TCPV4, hdr_len: 52, gso_size: 1448, csum_start: 20, csum_offset: 16 };
        let mut pkts: Vec<Vec<u8>> = Vec::new();
        split(&h, &sup, 1500, |p| {
            let mut b = [p.headers, p.payload].concat();
            complete_checksum(&mut b, p.csum.unwrap());
            pkts.push(b);
        })
        .unwrap();
        assert_eq!(pkts.iter().map(Vec::len).collect::<Vec<_>>(), [1500, 1500, 52 + 104]);
        for (k, p) in pkts.iter().enumerate() {
            assert_eq!(usize::from(u16::from_be_bytes([p[2], p[3]])), p.len());
            assert_eq!(u16::from_be_bytes([p[4], p[5]]), 0xfffeu16.wrapping_add(k as u16), "IP ids follow on (and wrap)");
            assert_eq!(packet::checksum(&p[..20]), 0, "IP header checksum of packet {k}");
            assert!(tcp_checksum_ok(p), "TCP checksum of packet {k}");
            let seq = u32::from_be_bytes([p[24], p[25], p[26], p[27]]);
            assert_eq!(seq, 0xffff_fff0u32.wrapping_add(1448 * k as u32));
            let last = k == 2;
            assert_eq!(p[33] & (TCP_FLAG_FIN | TCP_FLAG_PSH) != 0, last, "FIN/PSH on the last segment only");
            assert_eq!(p[33] & TCP_FLAG_CWR != 0, k == 0, "CWR on the first only");
        }
        // The payload comes through whole and in order.
        let joined: Vec<u8> = pkts.iter().flat_map(|p| p[52..].to_vec()).collect();
        assert_eq!(joined, sup[52..]);
    }

    #[test]
    fn a_udp_super_packet_splits_into_datagrams_with_their_own_lengths() {
        let mut sup = tcp_super(2944 + 100 - 24, 0);
        sup[9] = PROTO_UDP;
        let total = sup.len();
        sup[24..26].copy_from_slice(&((total - 20) as u16).to_be_bytes());
        let h = VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_UDP_L4, hdr_len: 28, gso_size: 1472, csum_start: 20, csum_offset: 6 };
        let mut lens = Vec::new();
        split(&h, &sup, 1500, |p| {
            let b = [p.headers, p.payload].concat();
            lens.push((b.len(), u16::from_be_bytes([b[24], b[25]]) as usize));
        })
        .unwrap();
        assert_eq!(lens, [(1500, 1480), (1500, 1480), (28 + 100, 108)]);
    }

    #[test]
    fn plain_packets_pass_whole_and_bad_ones_are_refused() {
        let pkt = tcp_super(100, 0);
        let mut n = 0;
        split(&VnetHdr::default(), &pkt, 1500, |p| {
            assert_eq!((p.len(), p.csum), (pkt.len(), None));
            n += 1;
        })
        .unwrap();
        assert_eq!(n, 1);
        let gso = VnetHdr { gso_type: GSO_TCPV4, gso_size: 1448, ..VnetHdr::default() };
        assert_eq!(split(&gso, &pkt[..30], 1500, |_| {}).err(), Some(SplitError::BadHeaders));
        assert_eq!(split(&VnetHdr { gso_size: 0, ..gso }, &pkt, 1500, |_| {}).err(), Some(SplitError::BadHeaders));
        assert_eq!(split(&VnetHdr { gso_size: 9000, ..gso }, &pkt, 1500, |_| {}).err(), Some(SplitError::TooLarge));
        assert_eq!(split(&VnetHdr { gso_type: 3, ..gso }, &pkt, 1500, |_| {}).err(), Some(SplitError::Unsupported));
        let far = VnetHdr { flags: F_NEEDS_CSUM, csum_start: 150, csum_offset: 16, ..VnetHdr::default() };
        assert_eq!(split(&far, &pkt, 1500, |_| {}).err(), Some(SplitError::BadChecksum));
        assert_eq!(split(&VnetHdr::default(), &[0u8; 1600], 1500, |_| {}).err(), Some(SplitError::TooLarge));
    }

    /// Splits `sup` into its segments as the engine's read side does.
    fn segments_of(sup: &[u8], mss: u16) -> Vec<(Vec<u8>, Option<Csum>)> {
        let h = VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_TCPV4, hdr_len: 52, gso_size: mss, csum_start: 20, csum_offset: 16 };
        let mut v = Vec::new();
        split(&h, sup, 1500, |p| v.push(([p.headers, p.payload].concat(), p.csum))).unwrap();
        v
    }

    #[test]
    fn consecutive_segments_merge_back_into_the_super_packet_they_came_from() {
        let sup = tcp_super(4000, TCP_FLAG_ACK | TCP_FLAG_PSH);
        let segs = segments_of(&sup, 1448);
        let mut c = Coalescer::default();
        for (p, csum) in &segs {
            assert!(c.try_add(p, *csum));
        }
        assert_eq!(c.segments(), 3);
        let (hdr, merged) = c.take().unwrap();
        let h = VnetHdr::parse(&hdr);
        assert_eq!((h.gso_type, h.gso_size, h.hdr_len, h.flags), (GSO_TCPV4, 1448, 52, F_NEEDS_CSUM));
        assert_eq!(merged.len(), sup.len());
        assert_eq!(&merged[52..], &sup[52..], "payload in order");
        assert_eq!(packet::checksum(&merged[..20]), 0);
        assert_eq!(merged[33] & TCP_FLAG_PSH, TCP_FLAG_PSH, "the last segment's PSH survives");
        // Split again, it gives the same segments: the merge loses nothing.
        let again = segments_of(merged, h.gso_size);
        assert_eq!(again.iter().map(|s| &s.0).collect::<Vec<_>>(), segs.iter().map(|s| &s.0).collect::<Vec<_>>());
        assert!(c.take().is_none(), "taking empties it");
    }

    #[test]
    fn only_what_continues_the_same_connection_in_order_merges() {
        let segs = segments_of(&tcp_super(4000, TCP_FLAG_ACK), 1448);
        let mut c = Coalescer::default();
        assert!(c.try_add(&segs[0].0, segs[0].1));
        assert!(!c.try_add(&segs[2].0, segs[2].1), "a gap in sequence");
        assert!(!c.try_add(&segs[1].0, None), "a complete checksum");
        let mut other_port = segs[1].0.clone();
        other_port[21] ^= 1;
        assert!(!c.try_add(&other_port, segs[1].1), "another connection");
        let mut syn = segs[1].0.clone();
        syn[33] |= 0x02;
        assert!(!c.try_add(&syn, segs[1].1), "SYN never merges");
        assert!(c.try_add(&segs[1].0, segs[1].1));
        assert!(c.try_add(&segs[2].0, segs[2].1));
        // The last was short: the burst is over.
        let more = segments_of(&tcp_super(1448, TCP_FLAG_ACK), 1448);
        assert!(!c.try_add(&more[0].0, more[0].1));
        let (hdr, one) = {
            let mut single = Coalescer::default();
            assert!(single.try_add(&segs[0].0, segs[0].1));
            let (h, p) = single.take().unwrap();
            (h, p.to_vec())
        };
        assert_eq!((VnetHdr::parse(&hdr).gso_type, one), (GSO_NONE, segs[0].0.clone()), "one segment is written as it is");
    }

    #[test]
    fn udp_datagrams_of_one_flow_merge_and_split_back() {
        let mut sup = tcp_super(1472 * 2 + 300 - 24, 0);
        sup[9] = PROTO_UDP;
        let total = sup.len();
        sup[24..26].copy_from_slice(&((total - 20) as u16).to_be_bytes());
        let h = VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_UDP_L4, hdr_len: 28, gso_size: 1472, csum_start: 20, csum_offset: 6 };
        let mut dgrams = Vec::new();
        split(&h, &sup, 1500, |p| dgrams.push(([p.headers, p.payload].concat(), p.csum))).unwrap();
        let mut c = Coalescer::default();
        for (d, csum) in &dgrams {
            assert!(c.try_add(d, *csum));
        }
        let (hdr, merged) = c.take().unwrap();
        let mh = VnetHdr::parse(&hdr);
        assert_eq!((mh.gso_type, mh.gso_size), (GSO_UDP_L4, 1472));
        assert_eq!(u16::from_be_bytes([merged[24], merged[25]]) as usize, total - 20, "UDP length of the whole");
        let mut again = Vec::new();
        split(&mh, merged, 1500, |p| again.push([p.headers, p.payload].concat())).unwrap();
        assert_eq!(again, dgrams.iter().map(|d| d.0.clone()).collect::<Vec<_>>());
    }

    #[test]
    fn headers_round_trip() {
        let c = Csum { start: 20, offset: 16 };
        let h = VnetHdr::parse(&VnetHdr::for_packet(Some(c)));
        assert_eq!((h.flags, h.csum_start, h.csum_offset, h.gso_type), (F_NEEDS_CSUM, 20, 16, GSO_NONE));
        assert_eq!(VnetHdr::for_packet(None), [0u8; VNET_HDR_LEN]);
    }
}
