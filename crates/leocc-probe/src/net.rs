//! Raw ICMP sockets and the two clocks.
//!
//! Intervals are measured on CLOCK_MONOTONIC, read right after each receive; the wall clock
//! (CLOCK_REALTIME) is read alongside only for the schedule prior and for logs. Sockets are
//! non-blocking; the daemon waits with poll() so that signals and the send schedule are never
//! starved. For IPv4 an ICMP_FILTER lets through only echo replies and the two error types
//! discovery needs; everything that still arrives is validated in `icmp`.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// ICMP types an IPv4 probe socket accepts: echo reply (0), unreachable (3), time exceeded (11).
const V4_PASS_TYPES: [u8; 3] = [0, 3, 11];
/// ICMPv6 types a probe socket accepts: unreachable (1), time exceeded (3), echo reply (129).
const V6_PASS_TYPES: [u8; 3] = [1, 3, 129];
/// Linux `ICMP_FILTER` option of SOL_RAW (linux/icmp.h).
const ICMP_FILTER: libc::c_int = 1;
/// Linux `ICMP6_FILTER` option of IPPROTO_ICMPV6 (linux/icmpv6.h).
const ICMP6_FILTER: libc::c_int = 1;

fn clock(id: libc::clockid_t) -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; both clock ids always exist.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts
}

/// CLOCK_MONOTONIC in ns.
pub fn mono_ns() -> u64 {
    let ts = clock(libc::CLOCK_MONOTONIC);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall clock (Unix time) in ns.
pub fn wall_ns() -> i64 {
    let ts = clock(libc::CLOCK_REALTIME);
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// A probe destination: an address, plus the interface index for IPv6 link-local addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// The address.
    pub addr: IpAddr,
    /// IPv6 scope (interface index), 0 if none.
    pub scope_id: u32,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.addr)?;
        if self.scope_id != 0 {
            write!(f, "%{}", self.scope_id)?;
        }
        Ok(())
    }
}

/// Parses `100.64.0.1`, `2001:db8::1` or `fe80::1%eth0` (interface name or index).
pub fn parse_target(s: &str) -> Result<Target, String> {
    let (addr, scope) = match s.split_once('%') {
        Some((a, sc)) => (a, Some(sc)),
        None => (s, None),
    };
    let addr: IpAddr = addr.parse().map_err(|_| format!("'{s}' is not an IPv4 or IPv6 address"))?;
    let scope_id = match (scope, addr) {
        (None, _) => 0,
        (Some(_), IpAddr::V4(_)) => return Err(format!("'{s}': a %scope is only valid on IPv6")),
        (Some(sc), IpAddr::V6(_)) => match sc.parse::<u32>() {
            Ok(i) => i,
            Err(_) => {
                let name = std::ffi::CString::new(sc).map_err(|_| format!("'{s}': bad interface name"))?;
                // SAFETY: if_nametoindex reads a NUL-terminated string we own.
                let i = unsafe { libc::if_nametoindex(name.as_ptr()) };
                if i == 0 {
                    return Err(format!("'{s}': no interface named '{sc}'"));
                }
                i
            }
        },
    };
    Ok(Target { addr, scope_id })
}

/// A raw ICMP (or ICMPv6) socket.
pub struct IcmpSocket {
    fd: OwnedFd,
    v6: bool,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` points to a live T of the size we pass.
    cvt(unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, name, (v as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t)
    })
    .map(|_| ())
}

impl IcmpSocket {
    /// Opens a non-blocking raw socket for IPv4 or IPv6 ICMP (needs CAP_NET_RAW).
    pub fn open(v6: bool) -> io::Result<Self> {
        let (domain, proto) = if v6 { (libc::AF_INET6, libc::IPPROTO_ICMPV6) } else { (libc::AF_INET, libc::IPPROTO_ICMP) };
        // SAFETY: plain socket(2); the fd is owned right away.
        let raw = cvt(unsafe { libc::socket(domain, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto) })?;
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if v6 {
            let mut filter = [u32::MAX; 8];
            for t in V6_PASS_TYPES {
                filter[usize::from(t >> 5)] &= !(1u32 << (t & 31));
            }
            setsockopt(&fd, libc::IPPROTO_ICMPV6, ICMP6_FILTER, &filter)?;
        } else {
            let mut block = u32::MAX;
            for t in V4_PASS_TYPES {
                block &= !(1u32 << t);
            }
            setsockopt(&fd, libc::SOL_RAW, ICMP_FILTER, &block)?;
        }
        Ok(IcmpSocket { fd, v6 })
    }

    /// Whether this is an ICMPv6 socket.
    pub fn is_v6(&self) -> bool {
        self.v6
    }

    /// Sets the TTL (hop limit) of the next packets.
    pub fn set_ttl(&self, ttl: u8) -> io::Result<()> {
        let v = libc::c_int::from(ttl);
        if self.v6 {
            setsockopt(&self.fd, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, &v)
        } else {
            setsockopt(&self.fd, libc::IPPROTO_IP, libc::IP_TTL, &v)
        }
    }

    /// Sends one ICMP message (no IP header) to `to`.
    pub fn send_to(&self, pkt: &[u8], to: Target) -> io::Result<()> {
        let (sa, len) = sockaddr(to);
        // SAFETY: `sa` is a sockaddr_storage of which `len` bytes are initialised.
        let n = unsafe {
            libc::sendto(self.fd.as_raw_fd(), pkt.as_ptr().cast(), pkt.len(), 0, (&sa as *const libc::sockaddr_storage).cast(), len)
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receives one datagram into `buf` without blocking: Ok(None) when nothing is queued.
    /// IPv4 datagrams include the IP header; ICMPv6 messages do not.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, IpAddr)>> {
        // SAFETY: an all-zero sockaddr_storage is a valid value.
        let mut sa: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: buf and sa are valid for the lengths passed.
        let n = unsafe {
            libc::recvfrom(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0, (&mut sa as *mut libc::sockaddr_storage).cast(), &mut len)
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some((n as usize, from_sockaddr(&sa))))
    }

    /// Waits until a datagram is queued or `timeout_ns` passed (or a signal arrived).
    pub fn wait_readable(&self, timeout_ns: u64) -> io::Result<bool> {
        let mut p = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // Round up so that a sub-millisecond wait does not spin.
        let ms = timeout_ns.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
        }
        Ok(r > 0)
    }

    /// Like [`IcmpSocket::wait_readable`], also waking when `other` (e.g. a listening socket)
    /// is readable; returns (this socket readable, `other` readable).
    pub fn wait_readable_or(&self, other: Option<std::os::fd::RawFd>, timeout_ns: u64) -> io::Result<(bool, bool)> {
        let Some(other) = other else {
            return self.wait_readable(timeout_ns).map(|r| (r, false));
        };
        let mut p = [
            libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: other, events: libc::POLLIN, revents: 0 },
        ];
        let ms = timeout_ns.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
        // SAFETY: two valid pollfds.
        let r = unsafe { libc::poll(p.as_mut_ptr(), 2, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok((false, false)) } else { Err(e) };
        }
        let ready = |q: &libc::pollfd| q.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
        Ok((ready(&p[0]), ready(&p[1])))
    }
}

fn sockaddr(to: Target) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match to.addr {
        IpAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: 0,
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            (ss, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        IpAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: 0,
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr: a.octets() },
                sin6_scope_id: to.scope_id,
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            (ss, std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

fn from_sockaddr(ss: &libc::sockaddr_storage) -> IpAddr {
    match libc::c_int::from(ss.ss_family) {
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6: &libc::sockaddr_in6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
        }
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin: &libc::sockaddr_in = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            IpAddr::V4(Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()))
        }
        _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(parse_target("100.64.0.1").unwrap().addr, "100.64.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(parse_target("fe80::1%1").unwrap().scope_id, 1);
        assert_eq!(parse_target("fe80::1%lo").unwrap().scope_id, parse_target("fe80::1%1").unwrap().scope_id);
        assert!(parse_target("100.64.0.1%lo").unwrap_err().contains("only valid on IPv6"));
        assert!(parse_target("pop.example").unwrap_err().contains("not an IPv4 or IPv6"));
        assert!(parse_target("fe80::1%nosuchif0").unwrap_err().contains("no interface"));
    }

    #[test]
    fn clocks_advance() {
        let a = mono_ns();
        let b = mono_ns();
        assert!(b >= a);
        assert!(wall_ns() > 1_600_000_000 * 1_000_000_000);
    }
}
