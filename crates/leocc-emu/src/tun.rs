//! TUN devices: a layer-3 virtual interface whose packets the emulator reads and writes.
//! The device lives in the network namespace of the thread that issues TUNSETIFF, so the
//! descriptor is opened on a short-lived helper thread that first joins the namespace; the
//! descriptor itself works from any thread afterwards. A non-persistent TUN disappears when
//! its last descriptor closes, so dropping `Tun` removes the device.

use crate::error::{EmuError, Result};
use crate::netns::NetNs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Device queue length (packets) the kernel may hold before the emulator reads them.
/// Generous, so that a scheduling hiccup of the emulator does not cause unmodelled loss.
pub const TUN_TXQUEUELEN: u32 = 4000;
/// Largest IP packet the emulator handles (the TUN MTU is 1500).
pub const MAX_PACKET: usize = 2048;

const TUN_PATH: &[u8] = b"/dev/net/tun\0";

/// An open TUN device (IFF_TUN | IFF_NO_PI: each read/write is one bare IP packet).
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Creates TUN device `name` inside `ns`, gives it `addr_cidr`, a default route and
    /// brings it up. With `offload`, reads and writes carry a virtio-net header and the
    /// kernel may hand over TCP/UDP super-packets (`offload` module).
    pub fn create_in(ns: &NetNs, name: &str, addr_cidr: &str, offload: bool) -> Result<Tun> {
        let tun = Tun::create_unrouted_in(ns, name, addr_cidr, offload)?;
        ns.ip(&["route", "add", "default", "dev", name])?;
        Ok(tun)
    }

    /// As `create_in`, without the default route (a namespace with two devices, a hop of
    /// `chain`, routes per destination instead). `addr_cidr` may be empty: no address.
    pub fn create_unrouted_in(ns: &NetNs, name: &str, addr_cidr: &str, offload: bool) -> Result<Tun> {
        let fd = std::thread::scope(|s| {
            s.spawn(|| -> Result<OwnedFd> {
                ns.enter_current_thread()?;
                let fd = open_tun(name, offload)?;
                disable_ipv6(name);
                Ok(fd)
            })
            .join()
            .map_err(|_| EmuError::msg("TUN creation thread panicked"))?
        })?;
        let tun = Tun { fd, name: name.to_string() };
        if !addr_cidr.is_empty() {
            ns.ip(&["addr", "add", addr_cidr, "dev", name])?;
        }
        ns.ip(&["link", "set", "dev", name, "txqueuelen", &TUN_TXQUEUELEN.to_string(), "up"])?;
        Ok(tun)
    }

    /// The device name inside its namespace.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw descriptor (non-blocking).
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

/// The emulator forwards IPv4; without IPv6 the device stays quiet (no router
/// solicitations or MLD reports in the captures). Net sysctls under /proc/sys/net belong
/// to the namespace of the thread that opens them. Best effort: IPv6 may be compiled out.
fn disable_ipv6(dev: &str) {
    let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1");
}

fn open_tun(name: &str, offload: bool) -> Result<OwnedFd> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(EmuError::msg(format!("TUN name {name:?} is too long")));
    }
    // SAFETY: plain open(2) of a constant NUL-terminated path.
    let raw = unsafe { libc::open(TUN_PATH.as_ptr().cast(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(EmuError::os("open /dev/net/tun"));
    }
    // SAFETY: raw is a descriptor we just opened and now own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    let vnet = if offload { libc::IFF_VNET_HDR } else { 0 };
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | vnet) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq we pass.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr as *mut libc::ifreq) } < 0 {
        return Err(EmuError::os(format!("ioctl TUNSETIFF {name}")));
    }
    // SAFETY: TUNSETOFFLOAD takes the feature bits by value.
    if offload && unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETOFFLOAD, crate::offload::TUN_FEATURES as libc::c_ulong) } < 0 {
        return Err(EmuError::os(format!("ioctl TUNSETOFFLOAD {name}")));
    }
    Ok(fd)
}

/// Reads one packet into `buf`; `None` when nothing is waiting.
pub fn read_packet(fd: i32, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        None
    } else {
        Some(n as usize)
    }
}

/// Writes one packet behind a virtio-net header (a device with offloads); false if the
/// kernel refused it.
pub fn write_packet_vnet(fd: i32, hdr: &[u8; crate::offload::VNET_HDR_LEN], pkt: &[u8]) -> bool {
    let iov = [libc::iovec { iov_base: hdr.as_ptr() as *mut libc::c_void, iov_len: hdr.len() }, libc::iovec { iov_base: pkt.as_ptr() as *mut libc::c_void, iov_len: pkt.len() }];
    // SAFETY: both iovecs point into live buffers of the given lengths; writev only reads.
    let n = unsafe { libc::writev(fd, iov.as_ptr(), 2) };
    n == (hdr.len() + pkt.len()) as isize
}

/// Writes one packet; false if the kernel refused it.
pub fn write_packet(fd: i32, pkt: &[u8]) -> bool {
    // SAFETY: pkt is valid for pkt.len() bytes.
    let n = unsafe { libc::write(fd, pkt.as_ptr().cast(), pkt.len()) };
    n == pkt.len() as isize
}
