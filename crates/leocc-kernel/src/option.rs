//! The reconfiguration signal in a TCP option (bpf/leocc_option.bpf.c, format in
//! bpf/leocc_option.h): attaching the sock_ops program of a role to a cgroup v2, the pinned
//! links, and the option counters.
//!
//! The model. `leocc kernel load` loads ONE object: the struct_ops congestion control and three
//! sock_ops programs, one per role ([`Role`]), all pinned under [`PIN_DIR`]. Attaching a role
//! to a cgroup creates a BPF link from the pinned program of that role to the cgroup
//! (BPF_CGROUP_SOCK_OPS) and pins the link as `option-<role>-<cgroup id>`; it then applies to
//! every TCP socket of the processes in that cgroup and its descendants, in every network
//! namespace. Removing the pin detaches it. One role per cgroup: attaching another role to the
//! same cgroup replaces the first.

use std::ffi::CString;
use std::fmt;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use libbpf_rs::libbpf_sys;
use serde::Serialize;

use crate::signal::PIN_DIR;
use crate::KernelError;

/// RFC 6994 shared experimental option kind (LEOCC_OPT_KIND).
pub const OPT_KIND: u8 = 253;
/// Our experiment identifier (LEOCC_OPT_EXID).
pub const OPT_EXID: u16 = 0x4c43;
/// Format version (LEOCC_OPT_VERSION).
pub const OPT_VERSION: u8 = 1;
/// Length of the handshake option (LEOCC_OPT_SYN_LEN).
pub const OPT_SYN_LEN: u8 = 5;
/// Length of the signal option (LEOCC_OPT_SIG_LEN).
pub const OPT_SIG_LEN: u8 = 12;
// The budget: at most 12 bytes with kind, length and ExID, so that it still fits in the 40
// bytes of option space next to timestamps (12) and one SACK block (12 with padding).
const _: () = assert!(OPT_SIG_LEN <= 12);
/// Capability: writes the signal (LEOCC_CAP_PRODUCE).
pub const CAP_PRODUCE: u8 = 0x1;
/// Capability: reads the signal into LeoCC (LEOCC_CAP_CONSUME).
pub const CAP_CONSUME: u8 = 0x2;
/// Signal flag: a reconfiguration was detected, seq and age are valid (LEOCC_SIGF_EVENT).
pub const SIGF_EVENT: u8 = 0x1;
/// Bits 1..3 of the signal flags: the confidence grade of the last event (LEOCC_SIGF_CONF_*).
pub const SIGF_CONF_SHIFT: u8 = 1;
/// Mask of the confidence grade in byte 4 (LEOCC_SIGF_CONF_MASK).
pub const SIGF_CONF_MASK: u8 = 0xe;
/// The confidence grades the option carries (LEOCC_SIGF_CONF_GRADES, leocc_opt_conf_grade,
/// leocc_opt_conf_of_grade): defined once in leocc-core-sys, which the simulator's model of the
/// option carrier uses too.
pub use leocc_core_sys::{conf_grade, conf_of_grade, SIGF_CONF_GRADES};
/// Unit of the terminal-PoP RTT field, microseconds (LEOCC_OPT_RTT_UNIT_US).
pub const OPT_RTT_UNIT_US: u32 = 10;
/// Unit of the probe-age field, milliseconds (LEOCC_OPT_PROBE_AGE_UNIT_MS).
pub const OPT_PROBE_AGE_UNIT_MS: u32 = 10;
/// Peer reconfiguration claims closer than this are dropped (LEOCC_OPT_MIN_EVENT_GAP_NS).
pub const OPT_MIN_EVENT_GAP_NS: u64 = 1_000_000_000;

/// The pinned PERCPU_ARRAY of counters (`option_counters` in bpf/leocc_option.bpf.c).
pub const COUNTERS_PIN: &str = "/sys/fs/bpf/leocc/option_counters";
/// Prefix of the pinned cgroup links.
const LINK_PREFIX: &str = "option-";
/// BPF_CGROUP_SOCK_OPS attach type (include/uapi/linux/bpf.h).
const BPF_CGROUP_SOCK_OPS: u32 = 3;
/// The usual cgroup v2 mount points, in order of preference.
const CGROUP2_MOUNTS: [&str; 2] = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];
/// statfs f_type of cgroup2 (CGROUP2_SUPER_MAGIC).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// How deep `status` searches the cgroup tree for an attached cgroup's path.
const CGROUP_SEARCH_DEPTH: usize = 6;

/// Names of the counters, in the order of `enum leocc_opt_counter` (bpf/leocc_option.h).
pub const COUNTER_NAMES: [&str; 16] = [
    "syn_sent",
    "peer_capable",
    "peer_plain",
    "producing",
    "consuming",
    "written",
    "not_fresh",
    "no_space",
    "received",
    "bad_len",
    "bad_version",
    "bad_magic",
    "events",
    "rate_limited",
    "history",
    "same_ack",
];

/// What a host does with the option on the connections of a cgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads the peer's signal into its LeoCC flows (a LeoCC sender on the ground).
    Sender,
    /// Writes its detector's signal on its ACKs (a receiver behind the satellite dish).
    Receiver,
    /// Both: advertises both capabilities; each connection uses what its peer offers.
    Both,
}

impl Role {
    /// All roles.
    pub const ALL: [Role; 3] = [Role::Sender, Role::Receiver, Role::Both];

    /// The role's name on the command line and in pin names.
    pub fn name(self) -> &'static str {
        match self {
            Role::Sender => "sender",
            Role::Receiver => "receiver",
            Role::Both => "both",
        }
    }

    /// The sock_ops program of this role in bpf/leocc_option.bpf.c.
    pub fn program(self) -> &'static str {
        match self {
            Role::Sender => "leocc_opt_snd",
            Role::Receiver => "leocc_opt_rcv",
            Role::Both => "leocc_opt_both",
        }
    }

    /// Where `load` pins the role's program.
    pub fn prog_pin(self) -> PathBuf {
        Path::new(PIN_DIR).join(format!("prog-{}", self.program()))
    }

    fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Role, String> {
        Role::from_name(s).ok_or_else(|| format!("unknown role {s:?} (sender, receiver or both)"))
    }
}

/// One role attached to one cgroup, as pinned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Attachment {
    /// The role.
    pub role: Role,
    /// The cgroup's id (its inode number on cgroup2).
    pub cgroup_id: u64,
    /// The cgroup's path, if found under the cgroup2 mount.
    pub cgroup: Option<PathBuf>,
    /// The link's pin.
    pub pin: PathBuf,
}

/// What [`attach`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachOutcome {
    /// Newly attached.
    Attached,
    /// This role was attached to this cgroup already.
    AlreadyAttached,
    /// Another role was attached to this cgroup; it is replaced.
    Replaced(Role),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> KernelError + '_ {
    move |source| KernelError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn option_err(reason: String) -> KernelError {
    KernelError::Option(reason)
}

fn is_cgroup2(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the struct we own from a valid C string.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == CGROUP2_SUPER_MAGIC
    }
}

/// The cgroup v2 hierarchy's mount point: /sys/fs/cgroup on a unified system, else the
/// cgroup2 mount of a hybrid one (/sys/fs/cgroup/unified), else the first one in /proc/mounts.
pub fn cgroup2_root() -> Result<PathBuf, KernelError> {
    if let Some(p) = CGROUP2_MOUNTS.iter().map(Path::new).find(|p| is_cgroup2(p)) {
        return Ok(p.to_path_buf());
    }
    let mounts = fs::read_to_string("/proc/mounts").map_err(io_err(Path::new("/proc/mounts")))?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_dev, dir, ty) = (f.next()?, f.next()?, f.next()?);
            (ty == "cgroup2").then(|| PathBuf::from(dir))
        })
        .next()
        .ok_or_else(|| option_err("no cgroup v2 hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup)".into()))
}

/// The id of a cgroup v2 directory (its inode), checking that it is one.
pub fn cgroup_id(path: &Path) -> Result<u64, KernelError> {
    let meta = fs::metadata(path).map_err(io_err(path))?;
    if !meta.is_dir() || !is_cgroup2(path) {
        return Err(option_err(format!(
            "{} is not a cgroup v2 directory (the cgroup2 hierarchy here is {})",
            path.display(),
            cgroup2_root().map_or_else(|_| "not mounted".into(), |p| p.display().to_string())
        )));
    }
    Ok(meta.ino())
}

fn link_pin(role: Role, cgid: u64) -> PathBuf {
    Path::new(PIN_DIR).join(format!("{LINK_PREFIX}{}-{cgid}", role.name()))
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).expect("pin paths have no NUL")
}

/// Attaches `role`'s sock_ops program (pinned by `load`) to the cgroup at `cgroup` and pins
/// the link. Replaces another role on the same cgroup.
pub fn attach(role: Role, cgroup: &Path) -> Result<AttachOutcome, KernelError> {
    let cgid = cgroup_id(cgroup)?;
    let existing: Vec<Attachment> = attachments()?
        .into_iter()
        .filter(|a| a.cgroup_id == cgid)
        .collect();
    if existing.iter().any(|a| a.role == role) {
        return Ok(AttachOutcome::AlreadyAttached);
    }
    let prog_pin = role.prog_pin();
    if !prog_pin.exists() {
        return Err(option_err(format!(
            "{} is missing: leocc was loaded by a build without the option carrier; \
             `leocc kernel unload` and load again",
            prog_pin.display()
        )));
    }
    let dir = fs::File::open(cgroup).map_err(io_err(cgroup))?;
    let pin = link_pin(role, cgid);
    // SAFETY: plain libbpf calls on descriptors we own and C strings that outlive them; every
    // descriptor is closed before return.
    unsafe {
        use std::os::fd::AsRawFd;
        let prog = libbpf_sys::bpf_obj_get(cpath(&prog_pin).as_ptr());
        if prog < 0 {
            return Err(option_err(format!(
                "opening {}: {}",
                prog_pin.display(),
                std::io::Error::from_raw_os_error(-prog)
            )));
        }
        let link = libbpf_sys::bpf_link_create(
            prog,
            dir.as_raw_fd(),
            BPF_CGROUP_SOCK_OPS,
            std::ptr::null(),
        );
        libc::close(prog);
        if link < 0 {
            return Err(option_err(format!(
                "attaching {} to {}: {}",
                role.program(),
                cgroup.display(),
                std::io::Error::from_raw_os_error(-link)
            )));
        }
        let rc = libbpf_sys::bpf_obj_pin(link, cpath(&pin).as_ptr());
        libc::close(link);
        if rc < 0 {
            return Err(option_err(format!(
                "pinning {}: {}",
                pin.display(),
                std::io::Error::from_raw_os_error(-rc)
            )));
        }
    }
    // The new role runs; now drop the old one (both ran for an instant: harmless, each
    // connection decided its mode at its own handshake).
    for old in &existing {
        remove_pin(&old.pin)?;
    }
    Ok(match existing.first() {
        Some(old) => AttachOutcome::Replaced(old.role),
        None => AttachOutcome::Attached,
    })
}

fn remove_pin(pin: &Path) -> Result<(), KernelError> {
    match fs::remove_file(pin) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(KernelError::Io {
            path: pin.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Detaches whatever role is attached to `cgroup`; returns the roles removed.
pub fn detach(cgroup: &Path) -> Result<Vec<Role>, KernelError> {
    let cgid = cgroup_id(cgroup)?;
    let mut removed = Vec::new();
    for a in attachments()?.into_iter().filter(|a| a.cgroup_id == cgid) {
        remove_pin(&a.pin)?;
        removed.push(a.role);
    }
    Ok(removed)
}

/// Removes every option link, the role programs' pins and the counters (part of unload).
pub(crate) fn remove_all() -> Result<(), KernelError> {
    for a in attachments()? {
        remove_pin(&a.pin)?;
    }
    for r in Role::ALL {
        remove_pin(&r.prog_pin())?;
    }
    remove_pin(Path::new(COUNTERS_PIN))
}

/// The attached roles, from the pins (cgroup paths resolved when found).
pub fn attachments() -> Result<Vec<Attachment>, KernelError> {
    let dir = Path::new(PIN_DIR);
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((role, cgid)) = parse_link_name(&name) else { continue };
        found.push(Attachment {
            role,
            cgroup_id: cgid,
            cgroup: None,
            pin: entry.path(),
        });
    }
    if !found.is_empty() {
        if let Ok(root) = cgroup2_root() {
            for a in &mut found {
                a.cgroup = find_cgroup(&root, a.cgroup_id, CGROUP_SEARCH_DEPTH);
            }
        }
    }
    found.sort_by_key(|a| a.cgroup_id);
    Ok(found)
}

fn parse_link_name(name: &str) -> Option<(Role, u64)> {
    let rest = name.strip_prefix(LINK_PREFIX)?;
    let (role, id) = rest.rsplit_once('-')?;
    Some((Role::from_name(role)?, id.parse().ok()?))
}

fn find_cgroup(dir: &Path, id: u64, depth: usize) -> Option<PathBuf> {
    let meta = fs::metadata(dir).ok()?;
    if meta.ino() == id {
        return Some(dir.to_path_buf());
    }
    if depth == 0 {
        return None;
    }
    fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .find_map(|e| find_cgroup(&e.path(), id, depth - 1))
}

/// The option counters, summed over CPUs, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters(pub Vec<(&'static str, u64)>);

impl Counters {
    /// The value of one counter (0 if unknown).
    pub fn get(&self, name: &str) -> u64 {
        self.0.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }

    /// `after - before`, counter by counter (for tests and runs that share a host).
    pub fn since(&self, before: &Counters) -> Counters {
        Counters(
            self.0
                .iter()
                .map(|(n, v)| (*n, v.saturating_sub(before.get(n))))
                .collect(),
        )
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in &self.0 {
            writeln!(f, "  {name:<14} {v}")?;
        }
        Ok(())
    }
}

/// Reads the pinned counters.
pub fn read_counters() -> Result<Counters, KernelError> {
    use libbpf_rs::{MapCore, MapFlags, MapHandle};
    let path = Path::new(COUNTERS_PIN);
    let err = |reason: String| option_err(format!("{}: {reason}", path.display()));
    let map = MapHandle::from_pinned_path(path)
        .map_err(|e| err(format!("{e} (is leocc loaded by this version? `leocc kernel load`)")))?;
    let mut out = Vec::with_capacity(COUNTER_NAMES.len());
    for (i, name) in COUNTER_NAMES.iter().enumerate() {
        let per_cpu = map
            .lookup_percpu(&(i as u32).to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| err(format!("lookup: {e}")))?
            .unwrap_or_default();
        let sum = per_cpu
            .iter()
            .filter_map(|b| b.get(..8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))))
            .sum();
        out.push((*name, sum));
    }
    Ok(Counters(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = include_str!("../../../bpf/leocc_option.h");

    // option_abi.c: bpf/leocc_option.h compiled for the host (build.rs), one function per
    // constant.
    extern "C" {
        fn leocc_option_abi_opt_kind() -> u64;
        fn leocc_option_abi_opt_exid() -> u64;
        fn leocc_option_abi_opt_version() -> u64;
        fn leocc_option_abi_opt_syn_len() -> u64;
        fn leocc_option_abi_opt_sig_len() -> u64;
        fn leocc_option_abi_cap_produce() -> u64;
        fn leocc_option_abi_cap_consume() -> u64;
        fn leocc_option_abi_sigf_event() -> u64;
        fn leocc_option_abi_sigf_conf_shift() -> u64;
        fn leocc_option_abi_sigf_conf_mask() -> u64;
        fn leocc_option_abi_sigf_conf_grades() -> u64;
        fn leocc_option_abi_opt_rtt_unit_us() -> u64;
        fn leocc_option_abi_opt_probe_age_unit_ms() -> u64;
        fn leocc_option_abi_opt_min_event_gap_ns() -> u64;
        fn leocc_option_abi_cnt_max() -> u64;
        fn leocc_option_abi_conf_grade(confidence: u32) -> u8;
        fn leocc_option_abi_conf_of_grade(grade: u8) -> u32;
    }

    #[test]
    fn constants_are_the_headers() {
        // SAFETY: the abi functions take no arguments and return constants.
        unsafe {
            assert_eq!(leocc_option_abi_opt_kind(), u64::from(OPT_KIND));
            assert_eq!(leocc_option_abi_opt_exid(), u64::from(OPT_EXID));
            assert_eq!(leocc_option_abi_opt_version(), u64::from(OPT_VERSION));
            assert_eq!(leocc_option_abi_opt_syn_len(), u64::from(OPT_SYN_LEN));
            assert_eq!(leocc_option_abi_opt_sig_len(), u64::from(OPT_SIG_LEN));
            assert_eq!(leocc_option_abi_cap_produce(), u64::from(CAP_PRODUCE));
            assert_eq!(leocc_option_abi_cap_consume(), u64::from(CAP_CONSUME));
            assert_eq!(leocc_option_abi_sigf_event(), u64::from(SIGF_EVENT));
            assert_eq!(leocc_option_abi_sigf_conf_shift(), u64::from(SIGF_CONF_SHIFT));
            assert_eq!(leocc_option_abi_sigf_conf_mask(), u64::from(SIGF_CONF_MASK));
            assert_eq!(leocc_option_abi_sigf_conf_grades(), u64::from(SIGF_CONF_GRADES));
            assert_eq!(leocc_option_abi_opt_rtt_unit_us(), u64::from(OPT_RTT_UNIT_US));
            assert_eq!(leocc_option_abi_opt_probe_age_unit_ms(), u64::from(OPT_PROBE_AGE_UNIT_MS));
            assert_eq!(leocc_option_abi_opt_min_event_gap_ns(), OPT_MIN_EVENT_GAP_NS);
            assert_eq!(leocc_option_abi_cnt_max(), COUNTER_NAMES.len() as u64, "LEOCC_CNT_MAX");
        }
    }

    /// The grade functions the sock_ops program runs (the header's inline ones) against the
    /// Rust ones the simulator and the daemon use, over every input.
    #[test]
    fn grades_are_the_headers() {
        for c in 0..=300u32 {
            // SAFETY: pure functions of their argument.
            assert_eq!(conf_grade(c), unsafe { leocc_option_abi_conf_grade(c) }, "confidence {c}");
        }
        for g in 0..=u8::MAX {
            // SAFETY: as above.
            assert_eq!(conf_of_grade(g), unsafe { leocc_option_abi_conf_of_grade(g) }, "grade {g}");
        }
    }

    #[test]
    fn confidence_grades_round_trip_and_keep_the_threshold() {
        assert_eq!(conf_of_grade(0), 100, "no grade: a writer from before grades");
        assert_eq!(conf_of_grade(conf_grade(100)), 100);
        assert_eq!(conf_of_grade(conf_grade(50)), 50);
        assert_eq!(conf_of_grade(conf_grade(0)), 0);
        for c in 0..=100 {
            let back = conf_of_grade(conf_grade(c));
            assert!(back <= c && c - back <= 100 / SIGF_CONF_GRADES + 1, "{c} -> {back}");
            assert_eq!(back >= 50, c >= 50, "{c}: the core's threshold survives the wire");
            let bits = conf_grade(c) << SIGF_CONF_SHIFT;
            assert_eq!(bits & !SIGF_CONF_MASK, 0, "the grade stays in bits 1..3");
            assert_eq!(bits & SIGF_EVENT, 0);
        }
    }

    #[test]
    fn counter_names_follow_the_enum() {
        let body = HEADER.split("enum leocc_opt_counter {").nth(1).unwrap();
        let names: Vec<String> = body
            .lines()
            .map(str::trim)
            .take_while(|l| !l.starts_with("LEOCC_CNT_MAX"))
            .filter(|l| l.starts_with("LEOCC_CNT_"))
            .map(|l| {
                let n = l.trim_start_matches("LEOCC_CNT_");
                n[..n.find([',', ' ']).unwrap()].to_ascii_lowercase()
            })
            .collect();
        assert_eq!(names, COUNTER_NAMES);
    }

    #[test]
    fn roles_and_link_names_round_trip() {
        for r in Role::ALL {
            assert_eq!(r.name().parse::<Role>().unwrap(), r);
            assert!(r.program().len() <= 15, "kernel cuts program names at 15");
            let pin = link_pin(r, 4242);
            let name = pin.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse_link_name(name), Some((r, 4242)));
        }
        assert!("client".parse::<Role>().is_err());
        assert_eq!(parse_link_name("option-both-x"), None);
        assert_eq!(parse_link_name("link"), None);
    }
}
