//! Just enough IPv4 to route packets through the emulator: which lane a packet takes
//! (Starlink queues ICMP apart from TCP/UDP, seed 000 appendix B) and how the PoP answers an
//! echo request. Every accessor checks lengths first: a malformed packet is classified as
//! such and dropped, never trusted.

use std::net::Ipv4Addr;

const IPV4_VERSION: u8 = 4;
const IPV4_MIN_HEADER: usize = 20;
const PROTO_ICMP: u8 = 1;
const ICMP_ECHO_REPLY: u8 = 0;
const ICMP_ECHO_REQUEST: u8 = 8;
const ICMP_HEADER: usize = 8;
/// TTL of the replies the PoP generates (Linux's default).
const REPLY_TTL: u8 = 64;

/// What the emulator does with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// ICMP echo request addressed to the PoP: answered by the PoP.
    EchoToPop,
    /// Any other packet addressed to the PoP: the PoP has no other service; dropped.
    OtherToPop,
    /// ICMP to somewhere else: rides the satellite segment's separate ICMP queue.
    Icmp,
    /// TCP, UDP and everything else: the data queue, subject to the capacity trace.
    Data,
    /// Not a well-formed IPv4 packet: dropped.
    Malformed,
}

/// The IPv4 header length if `pkt` starts with a well-formed header that fits.
fn header_len(pkt: &[u8]) -> Option<usize> {
    let first = *pkt.first()?;
    if first >> 4 != IPV4_VERSION {
        return None;
    }
    let ihl = usize::from(first & 0x0f) * 4;
    (ihl >= IPV4_MIN_HEADER && pkt.len() >= ihl).then_some(ihl)
}

/// Destination address of an IPv4 packet.
pub fn dst(pkt: &[u8]) -> Option<Ipv4Addr> {
    header_len(pkt)?;
    Some(Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]))
}

/// Source address of an IPv4 packet.
pub fn src(pkt: &[u8]) -> Option<Ipv4Addr> {
    header_len(pkt)?;
    Some(Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15]))
}

/// Decides the lane of `pkt` given the PoP's address.
pub fn classify(pkt: &[u8], pop: Ipv4Addr) -> Class {
    let Some(ihl) = header_len(pkt) else { return Class::Malformed };
    let to_pop = dst(pkt) == Some(pop);
    let is_icmp = pkt[9] == PROTO_ICMP;
    let is_echo = is_icmp && pkt.len() >= ihl + ICMP_HEADER && pkt[ihl] == ICMP_ECHO_REQUEST;
    match (to_pop, is_icmp) {
        (true, _) if is_echo => Class::EchoToPop,
        (true, _) => Class::OtherToPop,
        (false, true) => Class::Icmp,
        (false, false) => Class::Data,
    }
}

/// Internet checksum (RFC 1071) of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Turns an echo request (as classified `EchoToPop`) into the PoP's echo reply, in place.
/// Returns false (leaving garbage) if the packet is not a complete echo request.
pub fn make_echo_reply(pkt: &mut [u8]) -> bool {
    let Some(ihl) = header_len(pkt) else { return false };
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
    if total > pkt.len() || total < ihl + ICMP_HEADER || pkt[ihl] != ICMP_ECHO_REQUEST {
        return false;
    }
    let (a, b) = (pkt[12..16].to_vec(), pkt[16..20].to_vec());
    pkt[12..16].copy_from_slice(&b);
    pkt[16..20].copy_from_slice(&a);
    pkt[8] = REPLY_TTL;
    pkt[10..12].copy_from_slice(&[0, 0]);
    let ip_sum = checksum(&pkt[..ihl]);
    pkt[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    pkt[ihl] = ICMP_ECHO_REPLY;
    pkt[ihl + 2..ihl + 4].copy_from_slice(&[0, 0]);
    let icmp_sum = checksum(&pkt[ihl..total]);
    pkt[ihl + 2..ihl + 4].copy_from_slice(&icmp_sum.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 28-byte ICMP echo request 100.64.0.2 -> `to`, id 7, seq 1, with valid checksums.
    fn echo_request(to: Ipv4Addr) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 28, 0, 1, 0, 0, 64, PROTO_ICMP, 0, 0, 100, 64, 0, 2];
        p.extend_from_slice(&to.octets());
        p.extend_from_slice(&[ICMP_ECHO_REQUEST, 0, 0, 0, 0, 7, 0, 1]);
        let s = checksum(&p[..20]);
        p[10..12].copy_from_slice(&s.to_be_bytes());
        let s = checksum(&p[20..]);
        p[22..24].copy_from_slice(&s.to_be_bytes());
        p
    }

    #[test]
    fn classifies_lanes() {
        let pop = Ipv4Addr::new(100, 64, 0, 1);
        assert_eq!(classify(&echo_request(pop), pop), Class::EchoToPop);
        assert_eq!(classify(&echo_request(Ipv4Addr::new(100, 100, 0, 2)), pop), Class::Icmp);
        let mut tcp = echo_request(Ipv4Addr::new(100, 100, 0, 2));
        tcp[9] = 6;
        assert_eq!(classify(&tcp, pop), Class::Data);
        tcp[16..20].copy_from_slice(&pop.octets());
        assert_eq!(classify(&tcp, pop), Class::OtherToPop);
        assert_eq!(classify(&[0x45, 0, 0], pop), Class::Malformed);
        assert_eq!(classify(&[], pop), Class::Malformed);
        assert_eq!(classify(&[0x60; 40], pop), Class::Malformed);
    }

    #[test]
    fn echo_reply_swaps_addresses_and_keeps_checksums_valid() {
        let pop = Ipv4Addr::new(100, 64, 0, 1);
        let mut p = echo_request(pop);
        assert!(make_echo_reply(&mut p));
        assert_eq!(src(&p), Some(pop));
        assert_eq!(dst(&p), Some(Ipv4Addr::new(100, 64, 0, 2)));
        assert_eq!(p[20], ICMP_ECHO_REPLY);
        assert_eq!(checksum(&p[..20]), 0, "IP header checksum verifies");
        assert_eq!(checksum(&p[20..]), 0, "ICMP checksum verifies");
        let mut truncated = echo_request(pop);
        truncated[3] = 200;
        assert!(!make_echo_reply(&mut truncated));
    }
}
