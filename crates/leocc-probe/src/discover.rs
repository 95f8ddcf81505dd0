//! PoP discovery: TTL-limited echoes toward a destination, like traceroute.
//!
//! The PoP is the first router behind the satellite link that answers us (seed §4.1.1: "the
//! closest accessible IP address of the PoP ... identified by the traceroute tool"). Behind a
//! Starlink terminal the path is: host → terminal/router (private LAN address) → the CGNAT
//! gateway in 100.64.0.0/10 (commonly 100.64.0.1) → the Internet. So we send ICMP echoes with
//! TTL 1, 2, 3 ... toward the destination, collect the routers that answer with Time Exceeded
//! (each quoting our echo, which is checked: identifier, sequence, original destination), and
//! take the first hop whose address lies in the configured prefixes (100.64.0.0/10 by default).

use std::net::IpAddr;

use crate::icmp::{self, CookieKey, Icmp};
use crate::net::{self, IcmpSocket, Target};

/// Default PoP prefix: the shared CGNAT space (RFC 6598) Starlink uses for its gateways.
pub const DEFAULT_PREFIX: &str = "100.64.0.0/10";
/// Hops tried before giving up: the PoP is a few hops from the host.
pub const DEFAULT_MAX_TTL: u8 = 8;
/// Wait for each hop's answer, ns: 1 s covers a geostationary RTT with margin.
pub const HOP_TIMEOUT_NS: u64 = 1_000_000_000;
/// Echoes per hop before the hop is declared silent.
const TRIES_PER_HOP: u16 = 2;
/// Receive buffer: larger than any ICMP error we accept.
const RECV_BUF: usize = 1500;

/// An address prefix such as 100.64.0.0/10.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

impl std::str::FromStr for Prefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, l) = s.split_once('/').ok_or_else(|| format!("'{s}': expected ADDRESS/LENGTH, e.g. 100.64.0.0/10"))?;
        let addr: IpAddr = a.parse().map_err(|_| format!("'{s}': '{a}' is not an address"))?;
        let len: u8 = l.parse().map_err(|_| format!("'{s}': '{l}' is not a prefix length"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if len > max {
            return Err(format!("'{s}': prefix length {len} exceeds {max}"));
        }
        Ok(Prefix { addr, len })
    }
}

impl Prefix {
    /// Whether `ip` lies in this prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let bits = |a: IpAddr| -> u128 {
            match a {
                IpAddr::V4(v) => u128::from(u32::from(v)) << 96,
                IpAddr::V6(v) => u128::from(v),
            }
        };
        if self.addr.is_ipv4() != ip.is_ipv4() {
            return false;
        }
        let mask = if self.len == 0 { 0 } else { u128::MAX << (128 - u32::from(self.len)) };
        bits(self.addr) & mask == bits(ip) & mask
    }
}

/// One hop of the discovery: the TTL and who answered (None: silent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// TTL of the echoes.
    pub ttl: u8,
    /// The router that answered, or the destination itself.
    pub addr: Option<IpAddr>,
    /// Whether this answer came from the destination (an echo reply).
    pub reached: bool,
}

/// The first hop whose address is in one of `prefixes`.
pub fn choose_pop(hops: &[Hop], prefixes: &[Prefix]) -> Option<IpAddr> {
    hops.iter().filter_map(|h| h.addr).find(|&a| prefixes.iter().any(|p| p.contains(a)))
}

/// Why discovery failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// Socket trouble (no CAP_NET_RAW, no route).
    #[error("PoP discovery toward {dest}: {error}")]
    Io {
        /// The destination.
        dest: String,
        /// The error.
        error: std::io::Error,
    },
    /// The path was traced but no hop was in the prefixes.
    #[error("PoP discovery toward {dest}: no hop in {prefixes} among {hops}; give --pop ADDR or --pop-prefix")]
    NotFound {
        /// The destination.
        dest: String,
        /// The prefixes searched, comma-separated.
        prefixes: String,
        /// The hops seen, for the message.
        hops: String,
    },
}

/// Traces toward `dest` and returns the PoP and the hops seen.
pub fn discover(dest: Target, prefixes: &[Prefix], max_ttl: u8) -> Result<(Target, Vec<Hop>), DiscoverError> {
    let io = |error| DiscoverError::Io { dest: dest.to_string(), error };
    let sock = IcmpSocket::open(dest.addr.is_ipv6()).map_err(io)?;
    let id = random_u64() as u16;
    let key = random_cookie_key();
    let mut hops = Vec::new();
    for ttl in 1..=max_ttl {
        sock.set_ttl(ttl).map_err(io)?;
        let hop = probe_hop(&sock, dest, ttl, id, key).map_err(io)?;
        let reached = hop.reached;
        hops.push(hop);
        if let Some(pop) = choose_pop(&hops, prefixes) {
            return Ok((Target { addr: pop, scope_id: dest.scope_id }, hops));
        }
        if reached {
            break;
        }
    }
    let fmt_hops = hops
        .iter()
        .map(|h| format!("{}:{}", h.ttl, h.addr.map_or("*".to_string(), |a| a.to_string())))
        .collect::<Vec<_>>()
        .join(" ");
    let prefixes = prefixes.iter().map(|p| format!("{}/{}", p.addr, p.len)).collect::<Vec<_>>().join(",");
    Err(DiscoverError::NotFound { dest: dest.to_string(), prefixes, hops: fmt_hops })
}

/// Sends up to TRIES_PER_HOP echoes with `ttl` and waits for the quoting error or the reply.
fn probe_hop(sock: &IcmpSocket, dest: Target, ttl: u8, id: u16, key: CookieKey) -> std::io::Result<Hop> {
    let mut buf = [0u8; RECV_BUF];
    for t in 0..TRIES_PER_HOP {
        let seq = u16::from(ttl) * TRIES_PER_HOP + t;
        let sent_ns = net::mono_ns();
        let cookie = icmp::cookie(key, id, seq, sent_ns);
        let pkt = icmp::build_echo(dest.addr.is_ipv6(), id, seq, &cookie);
        sock.send_to(&pkt, dest)?;
        let deadline = net::mono_ns() + HOP_TIMEOUT_NS;
        loop {
            let now = net::mono_ns();
            if now >= deadline {
                break;
            }
            if !sock.wait_readable(deadline - now)? {
                continue;
            }
            while let Some((n, from)) = sock.recv(&mut buf)? {
                let parsed = if sock.is_v6() {
                    match from {
                        IpAddr::V6(src) => icmp::parse_v6(&buf[..n], src),
                        IpAddr::V4(_) => continue,
                    }
                } else {
                    icmp::parse_v4(&buf[..n])
                };
                match parsed {
                    Ok(Icmp::Error { from, orig_dst, id: qid, seq: qseq, .. })
                        if qid == id && qseq == seq && orig_dst == dest.addr =>
                    {
                        return Ok(Hop { ttl, addr: Some(from), reached: false });
                    }
                    Ok(Icmp::EchoReply { src, id: rid, seq: rseq, payload })
                        if rid == id && rseq == seq && src == dest.addr && payload == cookie =>
                    {
                        return Ok(Hop { ttl, addr: Some(src), reached: true });
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(Hop { ttl, addr: None, reached: false })
}

/// A fresh random cookie key for one run.
pub fn random_cookie_key() -> CookieKey {
    CookieKey([random_u64(), random_u64()])
}

/// 64 random bits from the kernel (getrandom), for identifiers and cookie keys.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most 8 bytes into our buffer.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        // getrandom cannot fail for 8 bytes once the pool is initialised; fall back to the
        // clocks and pid rather than abort, since the cookie is defence in depth.
        return net::mono_ns() ^ (net::wall_ns() as u64).rotate_left(17) ^ u64::from(std::process::id()) << 40;
    }
    u64::from_ne_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(ttl: u8, a: Option<&str>) -> Hop {
        Hop { ttl, addr: a.map(|s| s.parse().unwrap()), reached: false }
    }

    #[test]
    fn prefixes_parse_and_match() {
        let p: Prefix = DEFAULT_PREFIX.parse().unwrap();
        assert!(p.contains("100.64.0.1".parse().unwrap()));
        assert!(p.contains("100.127.255.254".parse().unwrap()));
        assert!(!p.contains("100.128.0.1".parse().unwrap()));
        assert!(!p.contains("::1".parse().unwrap()));
        let v6: Prefix = "2605:59c8::/32".parse().unwrap();
        assert!(v6.contains("2605:59c8:1::1".parse().unwrap()));
        assert!("100.64.0.0/33".parse::<Prefix>().unwrap_err().contains("exceeds 32"));
        assert!("100.64.0.0".parse::<Prefix>().unwrap_err().contains("ADDRESS/LENGTH"));
        let all: Prefix = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
    }

    #[test]
    fn pop_is_first_hop_in_prefix_past_the_terminal() {
        let p = vec![DEFAULT_PREFIX.parse().unwrap()];
        let hops = [hop(1, Some("192.168.1.1")), hop(2, None), hop(3, Some("100.64.0.1")), hop(4, Some("100.64.9.9"))];
        assert_eq!(choose_pop(&hops, &p), Some("100.64.0.1".parse().unwrap()));
        assert_eq!(choose_pop(&hops[..2], &p), None);
    }

    #[test]
    fn random_differs() {
        assert_ne!(random_u64(), random_u64());
    }
}
