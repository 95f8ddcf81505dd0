//! ICMP echo packets: building, bounds-checked parsing, and validation of replies.
//!
//! Every ICMP packet that reaches the host is delivered to every raw ICMP socket, so the
//! detector must never take a reply at face value. A reply counts only if all hold:
//! - it is an echo reply carrying our identifier (chosen per run),
//! - it comes from the PoP address we probe,
//! - its sequence number belongs to a probe we sent within the outstanding window and not yet
//!   answered (duplicates and stale replies are dropped),
//! - it echoes the 8-byte cookie we put in that probe: SipHash-2-4 under a random per-run
//!   128-bit key of our identifier, the sequence number and the probe's monotonic send time.
//!   An off-path host cannot forge it; a captured reply cannot be replayed for a later probe
//!   with the same sequence number (its send time differs); and since the hash is a keyed
//!   PRF, seeing cookies reveals neither the key nor the cookie of any other probe.
//!
//! The RTT is always taken from the send time stored here, never from the packet. What no
//! cookie can stop: a host *on the path* sees the probe and may answer it early with the
//! cookie copied (ICMP echo cannot authenticate the responder). The genuine reply then
//! arrives for an already answered probe with a valid cookie and is rejected as
//! [`Reject::Duplicate`], which the daemon counts apart from stale replies: a non-zero count
//! means replies were duplicated or injected on the path. See docs/detector.md, "Threat model".
//!
//! Parsing never panics on any byte string: every field is read through bounds-checked slices
//! and a short or inconsistent packet is an `Err`, not an index panic.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// ICMPv4 types (RFC 792).
pub const V4_ECHO_REPLY: u8 = 0;
/// ICMPv4 destination unreachable.
pub const V4_DEST_UNREACH: u8 = 3;
/// ICMPv4 echo request.
pub const V4_ECHO_REQUEST: u8 = 8;
/// ICMPv4 time exceeded.
pub const V4_TIME_EXCEEDED: u8 = 11;
/// ICMPv6 types (RFC 4443).
pub const V6_DEST_UNREACH: u8 = 1;
/// ICMPv6 time exceeded.
pub const V6_TIME_EXCEEDED: u8 = 3;
/// ICMPv6 echo request.
pub const V6_ECHO_REQUEST: u8 = 128;
/// ICMPv6 echo reply.
pub const V6_ECHO_REPLY: u8 = 129;
/// Bytes of the ICMP echo header (type, code, checksum, identifier, sequence).
pub const ECHO_HEADER_LEN: usize = 8;
/// Bytes of payload in our probes: just the cookie, to keep the probe overhead minimal.
pub const COOKIE_LEN: usize = 8;
/// Bytes of an IPv4 header without options.
const IPV4_HEADER_BYTES: u64 = 20;
/// Bytes of one probe (or reply) at the IP layer: IPv4 header, echo header, cookie.
pub const PROBE_IP_BYTES: u64 = IPV4_HEADER_BYTES + ECHO_HEADER_LEN as u64 + COOKIE_LEN as u64;

/// Probe overhead in bit/s at the IP layer, one direction, for IPv4 echoes of our size.
pub fn overhead_bps(interval_us: u64) -> f64 {
    PROBE_IP_BYTES as f64 * 8.0 * 1e6 / interval_us as f64
}
/// IPv4 protocol number of ICMP.
const IPPROTO_ICMP: u8 = 1;
/// IPv6 next-header number of ICMPv6.
const IPPROTO_ICMPV6: u8 = 58;
/// Minimum IPv4 header, bytes.
const IPV4_MIN_HEADER: usize = 20;
/// Fixed IPv6 header, bytes.
const IPV6_HEADER: usize = 40;
/// Size of the outstanding-probe window: 2048 probes = 20 s at the 10 ms probe interval.
pub const OUTSTANDING_WINDOW: usize = 2048;
/// A reply older than this (ns) no longer measures the current path: 5 s.
pub const MAX_REPLY_AGE_NS: u64 = 5_000_000_000;

/// A parse failure; the packet is dropped and counted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Fewer bytes than the headers announce.
    #[error("truncated packet")]
    Truncated,
    /// Not IPv4, not ICMP, or an impossible header length.
    #[error("malformed IP header")]
    BadIpHeader,
    /// The ICMP checksum does not match.
    #[error("bad ICMP checksum")]
    BadChecksum,
}

/// What a received ICMP packet is, as far as the detector cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Icmp<'a> {
    /// An echo reply.
    EchoReply {
        /// Source address (from the IP header for IPv4, from recvfrom for IPv6).
        src: IpAddr,
        /// Echo identifier.
        id: u16,
        /// Echo sequence number.
        seq: u16,
        /// Echoed payload.
        payload: &'a [u8],
    },
    /// A time-exceeded or destination-unreachable error quoting one of the echoes we sent.
    Error {
        /// The router (or host) that sent the error.
        from: IpAddr,
        /// ICMP type of the error (time exceeded or unreachable).
        icmp_type: u8,
        /// Destination of the quoted echo.
        orig_dst: IpAddr,
        /// Identifier of the quoted echo.
        id: u16,
        /// Sequence number of the quoted echo.
        seq: u16,
    },
    /// Anything else (other ICMP types, errors quoting non-echo packets).
    Other,
}

/// The Internet checksum (RFC 1071) over `data`.
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

/// An ICMP echo request (without IP header). For IPv4 the checksum is filled in; for IPv6 the
/// kernel computes it (it covers a pseudo-header we do not build).
pub fn build_echo(v6: bool, id: u16, seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(ECHO_HEADER_LEN + payload.len());
    p.push(if v6 { V6_ECHO_REQUEST } else { V4_ECHO_REQUEST });
    p.push(0);
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(payload);
    if !v6 {
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
    }
    p
}

fn be16(b: &[u8], at: usize) -> Result<u16, ParseError> {
    b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]])).ok_or(ParseError::Truncated)
}

fn v4_addr(b: &[u8], at: usize) -> Result<Ipv4Addr, ParseError> {
    let s = b.get(at..at + 4).ok_or(ParseError::Truncated)?;
    Ok(Ipv4Addr::new(s[0], s[1], s[2], s[3]))
}

fn v6_addr(b: &[u8], at: usize) -> Result<Ipv6Addr, ParseError> {
    let s: [u8; 16] = b.get(at..at + 16).ok_or(ParseError::Truncated)?.try_into().map_err(|_| ParseError::Truncated)?;
    Ok(Ipv6Addr::from(s))
}

/// Splits an IPv4 datagram into (source, destination, protocol, payload).
fn split_ipv4(b: &[u8]) -> Result<(Ipv4Addr, Ipv4Addr, u8, &[u8]), ParseError> {
    let first = *b.first().ok_or(ParseError::Truncated)?;
    if first >> 4 != 4 {
        return Err(ParseError::BadIpHeader);
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < IPV4_MIN_HEADER {
        return Err(ParseError::BadIpHeader);
    }
    if b.len() < ihl {
        return Err(ParseError::Truncated);
    }
    let total = usize::from(be16(b, 2)?);
    if total < ihl {
        return Err(ParseError::BadIpHeader);
    }
    // A quoted datagram inside an ICMP error may be cut short; never read past what we have.
    let end = total.min(b.len());
    let proto = *b.get(9).ok_or(ParseError::Truncated)?;
    Ok((v4_addr(b, 12)?, v4_addr(b, 16)?, proto, &b[ihl..end]))
}

/// Parses a datagram read from a raw IPv4 ICMP socket (the IP header included).
pub fn parse_v4(b: &[u8]) -> Result<Icmp<'_>, ParseError> {
    let (src, _dst, proto, icmp) = split_ipv4(b)?;
    if proto != IPPROTO_ICMP {
        return Err(ParseError::BadIpHeader);
    }
    if icmp.len() < ECHO_HEADER_LEN {
        return Err(ParseError::Truncated);
    }
    if checksum(icmp) != 0 {
        return Err(ParseError::BadChecksum);
    }
    match icmp[0] {
        V4_ECHO_REPLY if icmp[1] == 0 => Ok(Icmp::EchoReply {
            src: IpAddr::V4(src),
            id: be16(icmp, 4)?,
            seq: be16(icmp, 6)?,
            payload: &icmp[ECHO_HEADER_LEN..],
        }),
        t @ (V4_TIME_EXCEEDED | V4_DEST_UNREACH) => {
            let (_isrc, idst, iproto, inner) = split_ipv4(&icmp[ECHO_HEADER_LEN..])?;
            if iproto != IPPROTO_ICMP || inner.first() != Some(&V4_ECHO_REQUEST) {
                return Ok(Icmp::Other);
            }
            Ok(Icmp::Error {
                from: IpAddr::V4(src),
                icmp_type: t,
                orig_dst: IpAddr::V4(idst),
                id: be16(inner, 4)?,
                seq: be16(inner, 6)?,
            })
        }
        _ => Ok(Icmp::Other),
    }
}

/// Parses an ICMPv6 message read from a raw ICMPv6 socket (no IP header; the kernel has
/// verified the checksum), with the source address from recvfrom.
pub fn parse_v6(b: &[u8], src: Ipv6Addr) -> Result<Icmp<'_>, ParseError> {
    if b.len() < ECHO_HEADER_LEN {
        return Err(ParseError::Truncated);
    }
    match b[0] {
        V6_ECHO_REPLY if b[1] == 0 => Ok(Icmp::EchoReply {
            src: IpAddr::V6(src),
            id: be16(b, 4)?,
            seq: be16(b, 6)?,
            payload: &b[ECHO_HEADER_LEN..],
        }),
        t @ (V6_TIME_EXCEEDED | V6_DEST_UNREACH) => {
            let inner = &b[ECHO_HEADER_LEN..];
            if inner.len() < IPV6_HEADER + ECHO_HEADER_LEN {
                return Err(ParseError::Truncated);
            }
            if inner[0] >> 4 != 6 {
                return Err(ParseError::BadIpHeader);
            }
            let echo = &inner[IPV6_HEADER..];
            if inner[6] != IPPROTO_ICMPV6 || echo[0] != V6_ECHO_REQUEST {
                return Ok(Icmp::Other);
            }
            Ok(Icmp::Error {
                from: IpAddr::V6(src),
                icmp_type: t,
                orig_dst: IpAddr::V6(v6_addr(inner, 24)?),
                id: be16(echo, 4)?,
                seq: be16(echo, 6)?,
            })
        }
        _ => Ok(Icmp::Other),
    }
}

/// The per-run key of the cookies: 128 random bits, never sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CookieKey(pub [u64; 2]);

impl std::fmt::Debug for CookieKey {
    /// Never printed: the key is what makes cookies unforgeable.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CookieKey(..)")
    }
}

/// SipHash-2-4 (Aumasson and Bernstein) of `msg` under `key`: a keyed PRF, so cookies reveal
/// nothing about the key or each other (the splitmix64 mix used before is invertible: one
/// cookie gave away the secret and with it every future cookie).
fn siphash24(key: CookieKey, msg: &[u8]) -> u64 {
    let [k0, k1] = key.0;
    let mut v = [k0 ^ 0x736f_6d65_7073_6575, k1 ^ 0x646f_7261_6e64_6f6d, k0 ^ 0x6c79_6765_6e65_7261, k1 ^ 0x7465_6462_7974_6573];
    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    let mut compress = |m: u64| {
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    };
    let mut chunks = msg.chunks_exact(8);
    for c in &mut chunks {
        compress(u64::from_le_bytes(c.try_into().expect("8-byte chunk")));
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    compress(u64::from_le_bytes(last) | (msg.len() as u64) << 56);
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// The cookie of the probe with identifier `id` and sequence `seq` sent at monotonic
/// `sent_ns`: SipHash-2-4 of the three under the per-run key. The send time is not in the
/// packet; the receiver recomputes the cookie from the send time it stored.
pub fn cookie(key: CookieKey, id: u16, seq: u16, sent_ns: u64) -> [u8; COOKIE_LEN] {
    let mut msg = [0u8; 12];
    msg[..2].copy_from_slice(&id.to_be_bytes());
    msg[2..4].copy_from_slice(&seq.to_be_bytes());
    msg[4..].copy_from_slice(&sent_ns.to_be_bytes());
    siphash24(key, &msg).to_be_bytes()
}

/// Why a packet was not accepted as one of our replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Not an echo reply (another ICMP type), or unparsable.
    NotEchoReply,
    /// Someone else's identifier (another ping on the host).
    ForeignId,
    /// Right identifier but not from the PoP.
    WrongSource,
    /// Sequence number never sent, replaced by a newer probe, or too old.
    NotOutstanding,
    /// A second reply, with a valid cookie, to a probe already answered: the network
    /// duplicated it, or a host on the path answered early with the cookie copied.
    Duplicate,
    /// Payload does not carry the cookie of that probe: forged, replayed or corrupted.
    BadCookie,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    seq: u16,
    sent_ns: u64,
    /// Holds a probe to the current peer (answered or not).
    sent: bool,
    /// Not answered yet.
    live: bool,
}

/// Our identity plus the probes in flight; accepts genuine replies exactly once.
pub struct Validator {
    id: u16,
    key: CookieKey,
    peer: IpAddr,
    slots: Vec<Slot>,
}

/// A reply accepted by the validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    /// Sequence number.
    pub seq: u16,
    /// Monotonic ns at which the probe was sent.
    pub sent_ns: u64,
}

impl Validator {
    /// A validator for probes with identifier `id` and cookie key `key` towards `peer`.
    pub fn new(id: u16, key: CookieKey, peer: IpAddr) -> Self {
        Validator { id, key, peer, slots: vec![Slot::default(); OUTSTANDING_WINDOW] }
    }

    /// Our echo identifier.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The address we probe.
    pub fn peer(&self) -> IpAddr {
        self.peer
    }

    /// Switches to a new peer; probes in flight to the old one are forgotten.
    pub fn set_peer(&mut self, peer: IpAddr) {
        self.peer = peer;
        self.slots.iter_mut().for_each(|s| *s = Slot::default());
    }

    /// The echo request for `seq`, recording it as sent at `now_ns`.
    pub fn probe(&mut self, seq: u16, now_ns: u64) -> Vec<u8> {
        self.slots[usize::from(seq) % OUTSTANDING_WINDOW] = Slot { seq, sent_ns: now_ns, sent: true, live: true };
        build_echo(self.peer.is_ipv6(), self.id, seq, &cookie(self.key, self.id, seq, now_ns))
    }

    /// Accepts `pkt`, received at `now_ns`, if it is a genuine first reply to one of our probes.
    pub fn accept(&mut self, pkt: &Icmp<'_>, now_ns: u64) -> Result<Accepted, Reject> {
        let Icmp::EchoReply { src, id, seq, payload } = *pkt else {
            return Err(Reject::NotEchoReply);
        };
        if id != self.id {
            return Err(Reject::ForeignId);
        }
        if !same_host(src, self.peer) {
            return Err(Reject::WrongSource);
        }
        let slot = &mut self.slots[usize::from(seq) % OUTSTANDING_WINDOW];
        if !slot.sent || slot.seq != seq || now_ns.saturating_sub(slot.sent_ns) > MAX_REPLY_AGE_NS {
            return Err(Reject::NotOutstanding);
        }
        // Bound to this probe's send time: a reply captured for an earlier probe with the same
        // sequence number does not verify.
        if payload != cookie(self.key, self.id, seq, slot.sent_ns) {
            return Err(Reject::BadCookie);
        }
        if !slot.live {
            return Err(Reject::Duplicate);
        }
        slot.live = false;
        Ok(Accepted { seq, sent_ns: slot.sent_ns })
    }
}

/// Address equality that treats an IPv4-mapped IPv6 address as the IPv4 one.
fn same_host(a: IpAddr, b: IpAddr) -> bool {
    let norm = |x: IpAddr| match x {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(x, IpAddr::V4),
        v4 => v4,
    };
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POP: IpAddr = IpAddr::V4(Ipv4Addr::new(100, 64, 0, 1));
    const ME: Ipv4Addr = Ipv4Addr::new(100, 64, 1, 2);
    const KEY: CookieKey = CookieKey([42, 43]);

    /// Wraps an ICMP message in an IPv4 header (checksum of the IP header not needed here).
    fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, icmp: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, IPPROTO_ICMP, 0, 0];
        let total = (IPV4_MIN_HEADER + icmp.len()) as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&dst.octets());
        p.extend_from_slice(icmp);
        p
    }

    /// The echo reply a genuine PoP sends for the request `req`.
    fn reply_for(req: &[u8]) -> Vec<u8> {
        let mut r = req.to_vec();
        r[0] = V4_ECHO_REPLY;
        r[2..4].copy_from_slice(&[0, 0]);
        let c = checksum(&r);
        r[2..4].copy_from_slice(&c.to_be_bytes());
        r
    }

    fn pop_v4() -> Ipv4Addr {
        match POP {
            IpAddr::V4(a) => a,
            IpAddr::V6(_) => unreachable!(),
        }
    }

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 §3 example bytes sum to 0xddf2; the checksum is its complement.
        assert_eq!(checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), !0xddf2);
        let e = build_echo(false, 7, 9, b"abc");
        assert_eq!(checksum(&e), 0, "a built echo verifies");
    }

    #[test]
    fn genuine_reply_is_accepted_once() {
        let mut v = Validator::new(0x1234, KEY, POP);
        let req = v.probe(5, 1_000);
        let pkt = ipv4(pop_v4(), ME, &reply_for(&req));
        let parsed = parse_v4(&pkt).unwrap();
        assert_eq!(v.accept(&parsed, 2_000), Ok(Accepted { seq: 5, sent_ns: 1_000 }));
        assert_eq!(v.accept(&parsed, 3_000), Err(Reject::Duplicate));
    }

    #[test]
    fn foreign_and_spoofed_replies_are_rejected() {
        let mut v = Validator::new(0x1234, KEY, POP);
        let req = v.probe(5, 1_000);
        // Another program's ping to the same PoP.
        let other = reply_for(&build_echo(false, 0x9999, 5, &cookie(KEY, 0x9999, 5, 1_000)));
        assert_eq!(v.accept(&parse_v4(&ipv4(pop_v4(), ME, &other)).unwrap(), 2_000), Err(Reject::ForeignId));
        // Our id and seq, but from elsewhere.
        let elsewhere = ipv4(Ipv4Addr::new(8, 8, 8, 8), ME, &reply_for(&req));
        assert_eq!(v.accept(&parse_v4(&elsewhere).unwrap(), 2_000), Err(Reject::WrongSource));
        // Spoofed from the PoP with our id and a guessed seq, but without the secret cookie.
        let forged = reply_for(&build_echo(false, 0x1234, 5, &cookie(CookieKey([42, 44]), 0x1234, 5, 1_000)));
        assert_eq!(v.accept(&parse_v4(&ipv4(pop_v4(), ME, &forged)).unwrap(), 2_000), Err(Reject::BadCookie));
        // A seq we never sent.
        let unsent = reply_for(&build_echo(false, 0x1234, 6, &cookie(KEY, 0x1234, 6, 1_000)));
        assert_eq!(v.accept(&parse_v4(&ipv4(pop_v4(), ME, &unsent)).unwrap(), 2_000), Err(Reject::NotOutstanding));
        // A reply that is far too late.
        let late = ipv4(pop_v4(), ME, &reply_for(&req));
        assert_eq!(v.accept(&parse_v4(&late).unwrap(), 1_000 + MAX_REPLY_AGE_NS + 1), Err(Reject::NotOutstanding));
        // Our own echo request looped back is not a reply.
        assert_eq!(v.accept(&parse_v4(&ipv4(ME, pop_v4(), &req)).unwrap(), 2_000), Err(Reject::NotEchoReply));
        // The genuine one still works after all that.
        assert!(v.accept(&parse_v4(&ipv4(pop_v4(), ME, &reply_for(&req))).unwrap(), 2_000).is_ok());
    }

    /// SipHash-2-4 reference vector (the paper's appendix: key 00..0f, message 00..0e).
    #[test]
    fn siphash_matches_the_reference() {
        let key = CookieKey([u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]), u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15])]);
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(key, &msg), 0xa129_ca61_49be_45e5);
    }

    /// A reply captured for one probe, replayed when a later probe reuses its sequence
    /// number, must not verify (the old seq-only cookie did, and the RTT came out as however
    /// soon the replay was sent).
    #[test]
    fn replayed_reply_for_an_earlier_probe_with_the_same_seq_is_rejected() {
        let mut v = Validator::new(0x1234, KEY, POP);
        let first = v.probe(5, 1_000);
        let captured = ipv4(pop_v4(), ME, &reply_for(&first));
        assert!(v.accept(&parse_v4(&captured).unwrap(), 20_000_000).is_ok());
        // The sequence comes round again (65 536 probes later; here, sooner).
        let again = v.probe(5, 30_000_000);
        assert_eq!(v.accept(&parse_v4(&captured).unwrap(), 30_000_100), Err(Reject::BadCookie));
        // The genuine reply to the new probe still counts, timed from the stored send time.
        let genuine = ipv4(pop_v4(), ME, &reply_for(&again));
        assert_eq!(v.accept(&parse_v4(&genuine).unwrap(), 49_600_000), Ok(Accepted { seq: 5, sent_ns: 30_000_000 }));
    }

    /// An on-path host that copies the cookie into an early reply cannot be told from the PoP
    /// (ICMP echo authenticates nobody), but it is not silent: the genuine reply that follows
    /// is a valid duplicate, counted as such rather than as a stale reply.
    #[test]
    fn early_copied_reply_makes_the_genuine_one_a_duplicate() {
        let mut v = Validator::new(0x1234, KEY, POP);
        let req = v.probe(9, 1_000_000);
        let copy = ipv4(pop_v4(), ME, &reply_for(&req));
        assert_eq!(v.accept(&parse_v4(&copy).unwrap(), 11_000_000), Ok(Accepted { seq: 9, sent_ns: 1_000_000 }));
        assert_eq!(v.accept(&parse_v4(&copy).unwrap(), 20_600_000), Err(Reject::Duplicate));
    }

    /// Cookies of different probes are unrelated: neither the sequence number nor the send
    /// time nor the identifier can be changed without changing the cookie.
    #[test]
    fn cookie_binds_id_seq_and_send_time() {
        let c = cookie(KEY, 1, 2, 3);
        assert_ne!(c, cookie(KEY, 1, 2, 4));
        assert_ne!(c, cookie(KEY, 1, 3, 3));
        assert_ne!(c, cookie(KEY, 2, 2, 3));
        assert_ne!(c, cookie(CookieKey([42, 0]), 1, 2, 3));
    }

    #[test]
    fn sequence_wrap_replaces_old_slot() {
        let mut v = Validator::new(1, KEY, POP);
        let old = v.probe(3, 0);
        v.probe(3 + OUTSTANDING_WINDOW as u16, 10);
        let pkt = ipv4(pop_v4(), ME, &reply_for(&old));
        assert_eq!(v.accept(&parse_v4(&pkt).unwrap(), 20), Err(Reject::NotOutstanding));
    }

    #[test]
    fn corrupted_checksum_is_rejected() {
        let mut v = Validator::new(1, KEY, POP);
        let mut r = reply_for(&v.probe(1, 0));
        r[9] ^= 0xff;
        assert_eq!(parse_v4(&ipv4(pop_v4(), ME, &r)), Err(ParseError::BadChecksum));
    }

    #[test]
    fn time_exceeded_quotes_our_probe() {
        let dest = Ipv4Addr::new(100, 100, 0, 9);
        let req = build_echo(false, 77, 3, &cookie(KEY, 77, 3, 0));
        let quoted = ipv4(ME, dest, &req);
        let mut te = vec![V4_TIME_EXCEEDED, 0, 0, 0, 0, 0, 0, 0];
        te.extend_from_slice(&quoted[..IPV4_MIN_HEADER + 8]); // routers quote 8 bytes
        let c = checksum(&te);
        te[2..4].copy_from_slice(&c.to_be_bytes());
        let router = Ipv4Addr::new(100, 64, 0, 1);
        let pkt = ipv4(router, ME, &te);
        let parsed = parse_v4(&pkt).unwrap();
        assert_eq!(
            parsed,
            Icmp::Error { from: IpAddr::V4(router), icmp_type: V4_TIME_EXCEEDED, orig_dst: IpAddr::V4(dest), id: 77, seq: 3 }
        );
    }

    #[test]
    fn icmpv6_echo_reply_and_error() {
        let src: Ipv6Addr = "fe80::1".parse().unwrap();
        let mut r = build_echo(true, 5, 6, b"12345678");
        r[0] = V6_ECHO_REPLY;
        assert_eq!(parse_v6(&r, src).unwrap(), Icmp::EchoReply { src: IpAddr::V6(src), id: 5, seq: 6, payload: b"12345678" });
        let mut err = vec![V6_TIME_EXCEEDED, 0, 0, 0, 0, 0, 0, 0];
        let mut ip6 = vec![0x60, 0, 0, 0, 0, 16, IPPROTO_ICMPV6, 1];
        ip6.extend_from_slice(&[0; 16]);
        ip6.extend_from_slice(&"2001:db8::9".parse::<Ipv6Addr>().unwrap().octets());
        err.extend_from_slice(&ip6);
        err.extend_from_slice(&build_echo(true, 5, 6, b""));
        match parse_v6(&err, src).unwrap() {
            Icmp::Error { orig_dst, id: 5, seq: 6, .. } => assert_eq!(orig_dst.to_string(), "2001:db8::9"),
            other => panic!("{other:?}"),
        }
    }

    /// Deterministic xorshift so the fuzz test is reproducible.
    fn xorshift(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    #[test]
    fn parsers_never_panic_on_random_or_truncated_bytes() {
        let mut v = Validator::new(0x1234, KEY, POP);
        let req = v.probe(5, 0);
        let genuine = ipv4(pop_v4(), ME, &reply_for(&req));
        let mut te = vec![V4_TIME_EXCEEDED, 0, 0, 0, 0, 0, 0, 0];
        te.extend_from_slice(&ipv4(ME, pop_v4(), &req));
        let nested = ipv4(pop_v4(), ME, &te);
        // Every truncation of real packets.
        for p in [&genuine, &nested] {
            for n in 0..=p.len() {
                let _ = parse_v4(&p[..n]);
                let _ = parse_v6(&p[..n], Ipv6Addr::LOCALHOST);
            }
        }
        // Random bytes, and real packets with random bytes flipped (keeps headers plausible).
        let mut s = 0x9e3779b97f4a7c15u64;
        for round in 0..20_000 {
            let len = (xorshift(&mut s) % 120) as usize;
            let mut buf: Vec<u8> = if round % 2 == 0 {
                (0..len).map(|_| xorshift(&mut s) as u8).collect()
            } else {
                let mut b = if round % 4 == 1 { genuine.clone() } else { nested.clone() };
                for _ in 0..3 {
                    let i = (xorshift(&mut s) as usize) % b.len();
                    b[i] = xorshift(&mut s) as u8;
                }
                b.truncate(len.max(1));
                b
            };
            if let Ok(p) = parse_v4(&buf) {
                let _ = v.accept(&p, 1);
            }
            buf.reverse();
            if let Ok(p) = parse_v6(&buf, Ipv6Addr::LOCALHOST) {
                let _ = v.accept(&p, 1);
            }
        }
    }

    #[test]
    fn overhead_matches_packet_size() {
        // 36-byte IPv4 echoes every 10 ms: 28.8 kbit/s.
        assert!((overhead_bps(10_000) - 28_800.0).abs() < 1e-6);
    }
}
