//! Sockets and clocks shared by the three programs.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Socket buffer size asked for: at 200 Mbit/s, 8 MiB absorbs 300 ms of a stalled loop (the
/// kernel caps it at net.core.rmem_max/wmem_max unless we are root, which the emulator is).
pub const SOCKET_BUFFER_BYTES: libc::c_int = 8 << 20;
/// Datagrams handled per wakeup before timers run again: bounded so a flood of input cannot
/// starve pacing and retransmission.
pub const RX_BATCH: usize = 256;

/// Wall clock in µs since the epoch: the clock one-way delays are measured on (every
/// namespace of one machine shares it).
pub fn wall_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// A monotonic clock in µs since `origin`.
#[derive(Debug, Clone, Copy)]
pub struct Mono(Instant);

impl Mono {
    /// Starts at zero now.
    pub fn start() -> Mono {
        Mono(Instant::now())
    }
    /// µs since start.
    pub fn now_us(&self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

/// Binds a non-blocking UDP socket with large buffers.
pub fn bind(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind(addr)?;
    s.set_nonblocking(true)?;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE, libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: setsockopt with a valid int option value on our own socket; failure (no
        // privilege for *FORCE) is harmless, the plain variants follow.
        unsafe {
            libc::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, opt, (&SOCKET_BUFFER_BYTES as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t);
        }
    }
    Ok(s)
}

/// Waits until `s` is readable or `timeout` passes.
pub fn wait_readable(s: &UdpSocket, timeout: Duration) {
    let mut pfd = libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().min(1000) as libc::c_int;
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, ms) };
}

/// CPU time of the calling thread, µs.
pub fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// A seeded random source (SplitMix64) for the loss injector: reproducible per seed.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// Seeded.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}
