//! The detector signal: one `struct leocc_signal` (bpf/leocc_signal.h) in a pinned BPF ARRAY
//! map, written by the reconfiguration detector daemon and read by every LeoCC flow on its ACK
//! path, and by user-space transports (QUIC) that poll it.
//!
//! This crate is the one owner of that contract on the Rust side: the `#[repr(C)]` mirror of
//! the header with its check and confidence, the pins, the reader and the daemon's writing end.
//! It needs no BPF program: the daemon and the QUIC crate use it without building one
//! (`leocc-kernel`, which loads the program that creates the map, re-exports it as
//! `leocc_kernel::signal`). The tests hold the mirror to the header as the host compiler lays it
//! out (build.rs compiles abi.c, which includes the header), field by field and for the
//! header's own `leocc_signal_check` and `leocc_signal_confidence`.

use std::path::{Path, PathBuf};

use libbpf_rs::{MapCore, MapFlags, MapHandle};

/// Why the signal map could not be used, with where it should be pinned.
#[derive(Debug, thiserror::Error)]
#[error("signal map {}: {reason}", path.display())]
pub struct SignalError {
    /// Where the map should be pinned.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// bpffs directory holding everything the loader pins (LEOCC_PIN_DIR).
pub const PIN_DIR: &str = "/sys/fs/bpf/leocc";
/// The pinned struct_ops link; "leocc" stays registered while it exists (LEOCC_LINK_PIN).
pub const LINK_PIN: &str = "/sys/fs/bpf/leocc/link";
/// The pinned signal ARRAY map (LEOCC_SIGNAL_PIN).
pub const SIGNAL_PIN: &str = "/sys/fs/bpf/leocc/signal";
/// The pinned per-flow statistics HASH map (LEOCC_STATS_PIN).
pub const STATS_PIN: &str = "/sys/fs/bpf/leocc/stats";
/// A probe reply older than this makes the signal stale (LEOCC_SIGNAL_STALE_NS).
pub const SIGNAL_STALE_NS: u64 = 1_000_000_000;
/// Mixed into [`Signal::check`] so an all-zero entry is not valid (LEOCC_SIGNAL_MAGIC).
pub const SIGNAL_MAGIC: u64 = 0x4c45_4f43_4353_4947;
/// `flags` bit: bits 0..7 hold the confidence of the last reconfiguration
/// (LEOCC_SIGNAL_CONF_GIVEN). Without it the event has full confidence (older daemons).
pub const SIGNAL_CONF_GIVEN: u32 = 1 << 8;
/// `flags` bits of the confidence (LEOCC_SIGNAL_CONF_MASK).
pub const SIGNAL_CONF_MASK: u32 = 0xff;
/// Full confidence (LEOCC_SIGNAL_CONF_FULL, the core's LEOCC_CONF_FULL).
pub const SIGNAL_CONF_FULL: u32 = 100;

/// `struct leocc_signal`, byte for byte. Times are CLOCK_MONOTONIC nanoseconds (see
/// [`monotonic_ns`]), the clock of the kernel's TCP stack.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signal {
    /// When the last reconfiguration was detected.
    pub reconfig_time_ns: u64,
    /// Reconfigurations detected so far; flows react when it changes. 0 = none yet.
    pub seq: u64,
    /// When the last probe reply arrived; older than [`SIGNAL_STALE_NS`] = stale.
    pub probe_time_ns: u64,
    /// Latest terminal-to-PoP RTT in microseconds, 0 if unknown.
    pub term_pop_rtt_us: u32,
    /// Bits 0..7: confidence of the last reconfiguration when [`SIGNAL_CONF_GIVEN`] is set;
    /// other bits reserved, 0.
    pub flags: u32,
    /// [`Signal::expected_check`]; lets readers detect a torn (half-updated) entry.
    pub check: u64,
}

impl Signal {
    /// A signal with its check filled in.
    pub fn new(reconfig_time_ns: u64, seq: u64, probe_time_ns: u64, term_pop_rtt_us: u32) -> Self {
        let mut s = Signal {
            reconfig_time_ns,
            seq,
            probe_time_ns,
            term_pop_rtt_us,
            flags: 0,
            check: 0,
        };
        s.check = s.expected_check();
        s
    }

    /// The same signal with the confidence (0..=100) of its last reconfiguration in `flags`.
    pub fn with_confidence(mut self, confidence: u8) -> Self {
        self.flags = (self.flags & !(SIGNAL_CONF_MASK | SIGNAL_CONF_GIVEN))
            | SIGNAL_CONF_GIVEN
            | u32::from(confidence).min(SIGNAL_CONF_FULL);
        self.check = self.expected_check();
        self
    }

    /// leocc_signal_confidence(): the confidence the entry gives its last reconfiguration
    /// (full when not given).
    pub fn confidence(&self) -> u32 {
        if self.flags & SIGNAL_CONF_GIVEN == 0 {
            return SIGNAL_CONF_FULL;
        }
        (self.flags & SIGNAL_CONF_MASK).min(SIGNAL_CONF_FULL)
    }

    /// leocc_signal_check() of the header: the value `check` must hold.
    pub fn expected_check(&self) -> u64 {
        self.reconfig_time_ns
            ^ (self.seq << 1)
            ^ (self.probe_time_ns << 2)
            ^ (u64::from(self.term_pop_rtt_us) << 3)
            ^ (u64::from(self.flags) << 35)
            ^ SIGNAL_MAGIC
    }

    /// Whether the BPF program would believe this entry (written, whole).
    pub fn is_valid(&self) -> bool {
        self.probe_time_ns != 0 && self.check == self.expected_check()
    }

    /// Whether a valid entry is fresh at CLOCK_MONOTONIC time `now_ns`.
    pub fn is_fresh(&self, now_ns: u64) -> bool {
        self.is_valid() && now_ns.saturating_sub(self.probe_time_ns) <= SIGNAL_STALE_NS
    }

    /// The map value's bytes (native endianness, as the kernel stores it).
    pub fn to_bytes(&self) -> [u8; std::mem::size_of::<Signal>()] {
        let mut b = [0u8; std::mem::size_of::<Signal>()];
        b[0..8].copy_from_slice(&self.reconfig_time_ns.to_ne_bytes());
        b[8..16].copy_from_slice(&self.seq.to_ne_bytes());
        b[16..24].copy_from_slice(&self.probe_time_ns.to_ne_bytes());
        b[24..28].copy_from_slice(&self.term_pop_rtt_us.to_ne_bytes());
        b[28..32].copy_from_slice(&self.flags.to_ne_bytes());
        b[32..40].copy_from_slice(&self.check.to_ne_bytes());
        b
    }

    /// Parses a map value; `None` if it has the wrong size.
    pub fn from_bytes(b: &[u8]) -> Option<Signal> {
        if b.len() != std::mem::size_of::<Signal>() {
            return None;
        }
        let u64_at = |i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Some(Signal {
            reconfig_time_ns: u64_at(0),
            seq: u64_at(8),
            probe_time_ns: u64_at(16),
            term_pop_rtt_us: u32_at(24),
            flags: u32_at(28),
            check: u64_at(32),
        })
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of bpf_ktime_get_ns() and TCP's timestamps.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn open_signal_map(path: &Path) -> Result<MapHandle, SignalError> {
    MapHandle::from_pinned_path(path).map_err(|e| SignalError {
        path: path.to_path_buf(),
        reason: format!("{e} (is leocc loaded? `leocc kernel load` creates it)"),
    })
}

/// Writes the detector signal into the pinned map at [`SIGNAL_PIN`]; the check is
/// recomputed, so callers only fill the four data fields. Every LeoCC flow sees it on its
/// next ACK. The map is opened on each call, so a reload of leocc never leaves the daemon
/// writing into an orphaned map.
pub fn write_signal(signal: &Signal) -> Result<(), SignalError> {
    write_signal_at(Path::new(SIGNAL_PIN), signal)
}

/// [`write_signal`] to a map pinned elsewhere.
pub fn write_signal_at(path: &Path, signal: &Signal) -> Result<(), SignalError> {
    let map = open_signal_map(path)?;
    let mut s = *signal;
    s.check = s.expected_check();
    map.update(&0u32.to_ne_bytes(), &s.to_bytes(), MapFlags::ANY)
        .map_err(|e| SignalError {
            path: path.to_path_buf(),
            reason: format!("update failed: {e}"),
        })?;
    Ok(())
}

/// The detector daemon's writing end of a pinned signal map, with the map's descriptor held
/// open between writes.
///
/// Opening the pin on every write (as [`write_signal_at`] does) costs a descriptor at each
/// publish, so a daemon out of descriptors could not update the map at all (issue 34: local
/// connections exhausted them and the signal froze for 13 s). The held descriptor is reopened
/// only when a write fails or when the pin no longer names the map it was opened on: a reload
/// of leocc unpins the old map and pins a new one at the same path, and an update through the
/// old descriptor would succeed into the orphaned map that no flow reads. The pin's identity
/// (device and inode on bpffs) is checked with stat(2), which needs no descriptor.
#[derive(Debug)]
pub struct SignalWriter {
    path: PathBuf,
    map: Option<(MapHandle, PinId)>,
    opens: u64,
}

/// A pin's identity on bpffs: (device, inode).
type PinId = (u64, u64);

fn pin_id(path: &Path) -> Result<PinId, SignalError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).map_err(|e| SignalError {
        path: path.to_path_buf(),
        reason: format!("{e} (is leocc loaded? `leocc kernel load` creates it)"),
    })?;
    Ok((m.dev(), m.ino()))
}

impl SignalWriter {
    /// A writer for the map pinned at `path`; nothing is opened until the first write.
    pub fn new(path: &Path) -> SignalWriter {
        SignalWriter { path: path.to_path_buf(), map: None, opens: 0 }
    }

    /// The pin written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many times the pin was opened so far (once, unless the map was replaced or a
    /// write failed).
    pub fn opens(&self) -> u64 {
        self.opens
    }

    /// Writes `signal` (the check is recomputed, as in [`write_signal_at`]).
    pub fn write(&mut self, signal: &Signal) -> Result<(), SignalError> {
        let id = match pin_id(&self.path) {
            Ok(id) => id,
            Err(e) => {
                self.map = None;
                return Err(e);
            }
        };
        let mut s = *signal;
        s.check = s.expected_check();
        let bytes = s.to_bytes();
        // A held descriptor of the same pin first; on failure, one fresh open and retry.
        if let Some((map, held)) = &self.map {
            if *held == id && map.update(&0u32.to_ne_bytes(), &bytes, MapFlags::ANY).is_ok() {
                return Ok(());
            }
        }
        self.map = None;
        let map = open_signal_map(&self.path)?;
        self.opens += 1;
        map.update(&0u32.to_ne_bytes(), &bytes, MapFlags::ANY).map_err(|e| SignalError {
            path: self.path.clone(),
            reason: format!("update failed: {e}"),
        })?;
        self.map = Some((map, id));
        Ok(())
    }
}

/// Reads the signal currently in the pinned map at [`SIGNAL_PIN`].
pub fn read_signal() -> Result<Signal, SignalError> {
    let path = Path::new(SIGNAL_PIN);
    let map = open_signal_map(path)?;
    let bytes = map
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| SignalError {
            path: path.to_path_buf(),
            reason: format!("lookup failed: {e}"),
        })?
        .unwrap_or_default();
    Signal::from_bytes(&bytes).ok_or_else(|| SignalError {
        path: path.to_path_buf(),
        reason: format!(
            "value is {} bytes, expected {} (a different leocc version pinned it)",
            bytes.len(),
            std::mem::size_of::<Signal>()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::ffi::{c_char, CStr};

    // abi.c: bpf/leocc_signal.h compiled for the host (build.rs).
    extern "C" {
        fn leocc_signal_abi_size() -> usize;
        fn leocc_signal_abi_off_reconfig_time_ns() -> usize;
        fn leocc_signal_abi_off_seq() -> usize;
        fn leocc_signal_abi_off_probe_time_ns() -> usize;
        fn leocc_signal_abi_off_term_pop_rtt_us() -> usize;
        fn leocc_signal_abi_off_flags() -> usize;
        fn leocc_signal_abi_off_check() -> usize;
        fn leocc_signal_abi_pin_dir() -> *const c_char;
        fn leocc_signal_abi_link_pin() -> *const c_char;
        fn leocc_signal_abi_signal_pin() -> *const c_char;
        fn leocc_signal_abi_stats_pin() -> *const c_char;
        fn leocc_signal_abi_stale_ns() -> u64;
        fn leocc_signal_abi_magic() -> u64;
        fn leocc_signal_abi_conf_given() -> u32;
        fn leocc_signal_abi_conf_mask() -> u32;
        fn leocc_signal_abi_conf_full() -> u32;
        fn leocc_signal_abi_check(s: *const Signal) -> u64;
        fn leocc_signal_abi_confidence(s: *const Signal) -> u32;
    }

    fn c_str(p: *const c_char) -> &'static str {
        // SAFETY: abi.c returns pointers to the header's string literals (static, NUL-terminated).
        unsafe { CStr::from_ptr(p) }.to_str().expect("ASCII paths")
    }

    #[test]
    fn layout_is_the_headers() {
        use std::mem::{offset_of, size_of};
        // SAFETY: the abi_* functions take no arguments and only return constants.
        unsafe {
            assert_eq!(size_of::<Signal>(), leocc_signal_abi_size());
            assert_eq!(offset_of!(Signal, reconfig_time_ns), leocc_signal_abi_off_reconfig_time_ns());
            assert_eq!(offset_of!(Signal, seq), leocc_signal_abi_off_seq());
            assert_eq!(offset_of!(Signal, probe_time_ns), leocc_signal_abi_off_probe_time_ns());
            assert_eq!(offset_of!(Signal, term_pop_rtt_us), leocc_signal_abi_off_term_pop_rtt_us());
            assert_eq!(offset_of!(Signal, flags), leocc_signal_abi_off_flags());
            assert_eq!(offset_of!(Signal, check), leocc_signal_abi_off_check());
        }
    }

    #[test]
    fn constants_are_the_headers() {
        // SAFETY: as above.
        unsafe {
            assert_eq!(PIN_DIR, c_str(leocc_signal_abi_pin_dir()));
            assert_eq!(LINK_PIN, c_str(leocc_signal_abi_link_pin()));
            assert_eq!(SIGNAL_PIN, c_str(leocc_signal_abi_signal_pin()));
            assert_eq!(STATS_PIN, c_str(leocc_signal_abi_stats_pin()));
            assert_eq!(SIGNAL_STALE_NS, leocc_signal_abi_stale_ns());
            assert_eq!(SIGNAL_MAGIC, leocc_signal_abi_magic());
            assert_eq!(SIGNAL_CONF_GIVEN, leocc_signal_abi_conf_given());
            assert_eq!(SIGNAL_CONF_MASK, leocc_signal_abi_conf_mask());
            assert_eq!(SIGNAL_CONF_FULL, leocc_signal_abi_conf_full());
        }
    }

    /// The check and the confidence the BPF program computes (the header's inline functions),
    /// against the mirror's, on entries with every field's bits spread out.
    #[test]
    fn check_and_confidence_are_the_headers() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..1000 {
            let mut s = Signal::new(next(), next(), next(), next() as u32);
            s.flags = match i % 4 {
                0 => 0,
                1 => SIGNAL_CONF_GIVEN | (next() as u32 & SIGNAL_CONF_MASK),
                2 => next() as u32,
                _ => SIGNAL_CONF_GIVEN | 250,
            };
            s.check = next();
            // SAFETY: `s` is a live #[repr(C)] value whose layout is the header's (tested above).
            let (check, conf) = unsafe { (leocc_signal_abi_check(&s), leocc_signal_abi_confidence(&s)) };
            assert_eq!(s.expected_check(), check, "{s:?}");
            assert_eq!(s.confidence(), conf, "{s:?}");
        }
    }

    #[test]
    fn check_detects_torn_and_unwritten_entries() {
        let s = Signal::new(5_000, 3, 6_000, 25_000);
        assert!(s.is_valid());
        assert!(!Signal::default().is_valid(), "all-zero entry must not be valid");
        let mut torn = s;
        torn.seq = 4; // new seq, old time and check
        assert!(!torn.is_valid());
        let back = Signal::from_bytes(&s.to_bytes()).unwrap();
        assert_eq!(back, s);
        assert!(Signal::from_bytes(&[0u8; 39]).is_none());
    }

    #[test]
    fn confidence_rides_in_the_flags_and_older_entries_mean_full() {
        let old = Signal::new(5_000, 3, 6_000, 25_000);
        assert_eq!(old.flags, 0);
        assert_eq!(old.confidence(), SIGNAL_CONF_FULL, "no CONF_GIVEN bit: an older daemon");
        let s = old.with_confidence(62);
        assert_eq!(s.flags, SIGNAL_CONF_GIVEN | 62);
        assert_eq!(s.confidence(), 62);
        assert!(s.is_valid(), "the check covers the flags");
        let back = Signal::from_bytes(&s.to_bytes()).unwrap();
        assert_eq!(back.confidence(), 62);
        assert_eq!(old.with_confidence(0).confidence(), 0);
        assert_eq!(old.with_confidence(250).confidence(), SIGNAL_CONF_FULL);
        let mut torn = s;
        torn.flags = SIGNAL_CONF_GIVEN | 99;
        assert!(!torn.is_valid());
    }

    #[test]
    fn freshness_follows_the_probe_time() {
        let s = Signal::new(1, 1, 10_000_000_000, 20_000);
        assert!(s.is_fresh(10_500_000_000));
        assert!(!s.is_fresh(11_000_000_001));
        assert!(s.is_fresh(9_000_000_000), "a probe stamped after now is fresh");
    }
    #[test]
    fn the_writer_opens_the_pin_once_and_follows_a_replaced_map() {
        use libbpf_rs::{libbpf_sys, MapType};
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("SKIP the_writer_opens_the_pin_once_and_follows_a_replaced_map: needs root (bpffs)");
            return;
        }
        let pin = std::path::PathBuf::from(format!("/sys/fs/bpf/leocc-test-signal-{}", std::process::id()));
        let make = || -> Option<MapHandle> {
            // SAFETY: an all-zero bpf_map_create_opts is "no options" once `sz` is set.
            let mut opts: libbpf_sys::bpf_map_create_opts = unsafe { std::mem::zeroed() };
            opts.sz = std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t;
            let mut m = MapHandle::create(MapType::Array, Some("leocc_sig_test"), 4, std::mem::size_of::<Signal>() as u32, 1, &opts).ok()?;
            m.pin(&pin).ok()?;
            Some(m)
        };
        let seq_in = |m: &MapHandle| Signal::from_bytes(&m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).unwrap().unwrap()).unwrap().seq;
        let Some(first) = make() else {
            println!("SKIP the_writer_opens_the_pin_once_and_follows_a_replaced_map: cannot create and pin a BPF map here");
            return;
        };
        let mut w = SignalWriter::new(&pin);
        for i in 1..=200 {
            w.write(&Signal::new(i, i, i, 1)).unwrap();
        }
        assert_eq!(w.opens(), 1, "one descriptor for every write");
        assert_eq!(seq_in(&first), 200);
        // A reload: the old map is unpinned and a new one pinned at the same path.
        std::fs::remove_file(&pin).unwrap();
        let second = make().expect("pinning a second map");
        w.write(&Signal::new(1, 500, 1, 1)).unwrap();
        assert_eq!(w.opens(), 2, "the replaced pin was noticed");
        assert_eq!(seq_in(&second), 500, "written into the map the pin names now");
        assert_eq!(seq_in(&first), 200, "not into the orphaned one");
        std::fs::remove_file(&pin).unwrap();
        let e = w.write(&Signal::new(1, 501, 1, 1)).unwrap_err();
        assert!(e.to_string().contains("leocc-test-signal"), "{e}");
    }
}
