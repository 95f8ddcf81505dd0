//! `leocc kernel load|unload|status`: registering the struct_ops "leocc" so it outlives the
//! loading process, removing it, and describing what this kernel offers.
//!
//! Load = open the embedded object (CO-RE relocated against the kernel BTF, or `--btf PATH`),
//! pin `signal` and `stats` under [`PIN_DIR`] (libbpf reuses an existing pinned `signal`, so a
//! detector daemon keeps its map across reloads of the same layout), load (the verifier runs
//! here), attach the struct_ops map through a BPF link and pin the link at [`LINK_PIN`].
//! The pinned link is what keeps "leocc" registered. Unload = remove the pins.

use std::ffi::CString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use libbpf_rs::query::ProgInfoIter;
use libbpf_rs::{libbpf_sys, Link, ProgramType};

use crate::params::PARAMS_PIN;
use crate::signal::{self, Signal, LINK_PIN, PIN_DIR, SIGNAL_PIN, STATS_PIN};
use crate::{is_root, missing_bpf_reason, KernelError};

/// Where the running kernel exposes its BTF.
pub const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
/// The congestion control's name, as in tcp_available_congestion_control.
pub const CC_NAME: &str = "leocc";
/// statfs f_type of bpffs (BPF_FS_MAGIC, include/uapi/linux/magic.h).
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
/// BTF header magic (include/uapi/linux/btf.h), little-endian on disk here.
const BTF_MAGIC: u16 = 0xeb9f;
/// The bpffs mount point the pins live under.
const BPFFS: &str = "/sys/fs/bpf";
/// Unregistering happens when the last link reference drops; allow it this long to show.
const UNREGISTER_WAIT: Duration = Duration::from_secs(2);
const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const DEFAULT_CC: &str = "/proc/sys/net/ipv4/tcp_congestion_control";
const BPF_STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";
/// Prefix of every program in bpf/leocc.bpf.c (kernel names are cut at 15 characters).
const PROG_PREFIX: &str = "leocc_";
/// Which build of the BPF object the registered "leocc" came from (a fingerprint of the
/// object, written at load). bpffs holds no plain files, so it lives in /run, which a reboot
/// clears as it clears the pins.
pub const BUILD_STAMP: &str = "/run/leocc/kernel-build";
/// This binary's fingerprint of its embedded object (build.rs).
const THIS_BUILD: &str = env!("LEOCC_BPF_BUILD");

/// How to load.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// The kernel's BTF file, when it is not at [`KERNEL_BTF`].
    pub btf: Option<PathBuf>,
}

/// What [`load`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadOutcome {
    /// "leocc" is now registered and pinned.
    Loaded,
    /// It already was, from this build's object; nothing changed.
    AlreadyLoaded,
    /// Another build's "leocc" was registered (a different object, or one from before the
    /// params map or the build stamp); it was unregistered and this build's loaded. Flows
    /// that were running keep the old one until they close.
    Replaced,
}

/// Registers "leocc" and pins it under [`PIN_DIR`]. Idempotent for one build; a
/// registration from another build is replaced, so that what runs is this binary's LeoCC.
pub fn load(opts: &LoadOptions) -> Result<LoadOutcome, KernelError> {
    if let Some(reason) = missing_bpf_reason() {
        return Err(KernelError::NotBuilt(reason));
    }
    if !is_root() {
        return Err(KernelError::NotRoot {
            action: "loading a BPF congestion control",
        });
    }
    let btf = opts.btf.clone().unwrap_or_else(|| PathBuf::from(KERNEL_BTF));
    check_btf(&btf)?;
    ensure_bpffs()?;
    fs::create_dir_all(PIN_DIR).map_err(|source| KernelError::Io {
        path: PIN_DIR.into(),
        source,
    })?;

    let mut outcome = LoadOutcome::Loaded;
    if Path::new(LINK_PIN).exists() {
        if Link::open(LINK_PIN).is_ok() && is_registered() {
            if Path::new(PARAMS_PIN).exists() && loaded_build().as_deref() == Some(THIS_BUILD) {
                return Ok(LoadOutcome::AlreadyLoaded);
            }
            // Ours, but another build's: replace it, so that what runs is this build's LeoCC
            // (a binary rebuilt with a changed core otherwise measured the old one, silently).
            // The signal map stays pinned, for a detector daemon that holds it.
            unregister()?;
            outcome = LoadOutcome::Replaced;
        } else {
            // A pin left by a kernel that has since dropped the registration: start afresh.
            remove_if_present(Path::new(LINK_PIN))?;
        }
    }
    if is_registered() {
        return Err(KernelError::ForeignLeocc(LINK_PIN.to_string()));
    }
    // Stats of flows and option counters from an earlier load are history, and so are the
    // option programs (their cgroup links would keep an old object alive) and parameters set
    // for the old object's flows; the signal map is kept (see above).
    remove_if_present(Path::new(STATS_PIN))?;
    remove_if_present(Path::new(PARAMS_PIN))?;
    crate::option::remove_all()?;

    let custom_btf = (btf != Path::new(KERNEL_BTF)).then_some(btf);
    if let Err(e) = load_and_pin(custom_btf.as_deref()) {
        let _ = remove_if_present(Path::new(LINK_PIN));
        let _ = remove_if_present(Path::new(STATS_PIN));
        let _ = remove_if_present(Path::new(PARAMS_PIN));
        let _ = crate::option::remove_all();
        return Err(e);
    }
    write_build_stamp()?;
    Ok(outcome)
}

/// The fingerprint of the object the registered "leocc" was loaded from, if a stamp is there.
pub fn loaded_build() -> Option<String> {
    fs::read_to_string(BUILD_STAMP).ok().map(|s| s.trim().to_string())
}

/// Records that this build's object is the one registered (temporary file, then rename).
fn write_build_stamp() -> Result<(), KernelError> {
    let io = |path: &str| {
        let path = PathBuf::from(path);
        move |source| KernelError::Io { path, source }
    };
    let dir = Path::new(BUILD_STAMP).parent().expect("a file in a directory");
    fs::create_dir_all(dir).map_err(io(BUILD_STAMP))?;
    let tmp = format!("{BUILD_STAMP}.tmp");
    fs::write(&tmp, format!("{THIS_BUILD}\n")).map_err(io(&tmp))?;
    fs::rename(&tmp, BUILD_STAMP).map_err(io(BUILD_STAMP))
}

/// Removes the registration's pins but the signal map's, and waits for "leocc" to go.
fn unregister() -> Result<(), KernelError> {
    crate::option::remove_all()?;
    for pin in [LINK_PIN, STATS_PIN, PARAMS_PIN, BUILD_STAMP] {
        remove_if_present(Path::new(pin))?;
    }
    let deadline = Instant::now() + UNREGISTER_WAIT;
    while is_registered() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(leocc_no_bpf)]
fn load_and_pin(_btf: Option<&Path>) -> Result<(), KernelError> {
    Err(KernelError::NotBuilt(missing_bpf_reason().unwrap_or("unknown")))
}

#[cfg(not(leocc_no_bpf))]
fn load_and_pin(btf: Option<&Path>) -> Result<(), KernelError> {
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    use std::mem::MaybeUninit;

    let libbpf = |stage: &'static str, hint: &str| {
        let hint = hint.to_string();
        move |e: libbpf_rs::Error| KernelError::Libbpf {
            stage,
            reason: if hint.is_empty() {
                e.to_string()
            } else {
                format!("{e}; {hint}")
            },
        }
    };

    let btf_c = match btf {
        Some(p) => Some(CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| {
            KernelError::NoBtf {
                path: p.to_path_buf(),
                reason: "path contains a NUL byte".into(),
            }
        })?),
        None => None,
    };
    // SAFETY: bpf_object_open_opts is a plain C struct; all-zero is its documented default.
    let mut opts: libbpf_sys::bpf_object_open_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_object_open_opts>() as libbpf_sys::size_t;
    if let Some(c) = &btf_c {
        opts.btf_custom_path = c.as_ptr();
    }

    let mut object = MaybeUninit::uninit();
    let mut open = crate::skel::LeoccSkelBuilder::default()
        .open_opts(opts, &mut object)
        .map_err(libbpf("opening the embedded BPF object", ""))?;
    open.maps
        .signal
        .set_pin_path(SIGNAL_PIN)
        .map_err(libbpf("pinning the signal map", ""))?;
    open.maps
        .stats
        .set_pin_path(STATS_PIN)
        .map_err(libbpf("pinning the stats map", ""))?;
    open.maps
        .params
        .set_pin_path(PARAMS_PIN)
        .map_err(libbpf("pinning the params map", ""))?;
    open.maps
        .option_counters
        .set_pin_path(crate::option::COUNTERS_PIN)
        .map_err(libbpf("pinning the option counters", ""))?;
    let mut skel = open.load().map_err(libbpf(
        "loading the BPF program",
        "the verifier log above says why; if the signal map is incompatible, `leocc kernel unload` removes the old one",
    ))?;
    let mut link = skel.maps.leocc.attach_struct_ops().map_err(libbpf(
        "registering the struct_ops tcp_congestion_ops",
        "the kernel needs CONFIG_BPF_JIT and struct_ops support for tcp_congestion_ops",
    ))?;
    // The option carrier's programs, for `option::attach` to link to cgroups later.
    for (prog, role) in [
        (&mut skel.progs.leocc_opt_snd, crate::option::Role::Sender),
        (&mut skel.progs.leocc_opt_rcv, crate::option::Role::Receiver),
        (&mut skel.progs.leocc_opt_both, crate::option::Role::Both),
    ] {
        prog.pin(role.prog_pin())
            .map_err(libbpf("pinning the option carrier's programs", ""))?;
    }
    link.pin(LINK_PIN)
        .map_err(libbpf("pinning the struct_ops link", ""))?;
    Ok(())
}

/// Unregisters "leocc" by removing its pins (the option carrier's cgroup links too). Flows already using it keep running until they
/// close (they hold the struct_ops map); new sockets can no longer select it. Returns whether
/// it was loaded.
pub fn unload() -> Result<bool, KernelError> {
    if !is_root() {
        return Err(KernelError::NotRoot {
            action: "unloading a BPF congestion control",
        });
    }
    let was_loaded = Path::new(LINK_PIN).exists();
    unregister()?;
    remove_if_present(Path::new(SIGNAL_PIN))?;
    // Only our pins: leave the directory if something else was put there.
    let _ = fs::remove_dir(PIN_DIR);
    Ok(was_loaded)
}

fn remove_if_present(path: &Path) -> Result<(), KernelError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(KernelError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Checks that `path` is a readable BTF blob.
pub fn check_btf(path: &Path) -> Result<u64, KernelError> {
    let no_btf = |reason: String| KernelError::NoBtf {
        path: path.to_path_buf(),
        reason,
    };
    let meta = fs::metadata(path).map_err(|e| {
        no_btf(if e.kind() == std::io::ErrorKind::NotFound {
            "the file does not exist".into()
        } else {
            e.to_string()
        })
    })?;
    let head = fs::read(path)
        .map_err(|e| no_btf(e.to_string()))
        .map(|b| b.get(..2).map(|m| u16::from_le_bytes([m[0], m[1]])))?;
    if head != Some(BTF_MAGIC) {
        return Err(no_btf("not a BTF file (bad magic)".into()));
    }
    Ok(meta.len())
}

fn bpffs_mounted() -> bool {
    let path = CString::new(BPFFS).expect("no NUL");
    // SAFETY: statfs fills the struct we own from a valid C string.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(path.as_ptr(), &mut st) == 0 && st.f_type as i64 == BPF_FS_MAGIC
    }
}

/// Mounts bpffs at /sys/fs/bpf unless it is there.
fn ensure_bpffs() -> Result<(), KernelError> {
    if bpffs_mounted() {
        return Ok(());
    }
    fs::create_dir_all(BPFFS).map_err(|e| KernelError::Bpffs(format!("creating it: {e}")))?;
    let (src, dst, ty, data) = (
        CString::new("bpf").expect("no NUL"),
        CString::new(BPFFS).expect("no NUL"),
        CString::new("bpf").expect("no NUL"),
        CString::new("mode=0700").expect("no NUL"),
    );
    // SAFETY: all arguments are valid C strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            ty.as_ptr(),
            0,
            data.as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(KernelError::Bpffs(format!(
            "not mounted, and mounting it failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

fn read_trimmed(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The congestion controls the kernel offers now.
pub fn available_ccs() -> Vec<String> {
    read_trimmed(AVAILABLE_CC)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Whether "leocc" is in tcp_available_congestion_control.
pub fn is_registered() -> bool {
    available_ccs().iter().any(|c| c == CC_NAME)
}

/// `uname -r`.
pub fn kernel_release() -> String {
    read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

/// Whether kernel.bpf_stats_enabled is on (run_time_ns/run_cnt are counted).
pub fn bpf_stats_enabled() -> Option<bool> {
    read_trimmed(BPF_STATS).map(|s| s != "0")
}

/// Turns kernel.bpf_stats_enabled on or off.
pub fn set_bpf_stats(on: bool) -> Result<(), KernelError> {
    fs::write(BPF_STATS, if on { "1" } else { "0" }).map_err(|source| KernelError::Io {
        path: BPF_STATS.into(),
        source,
    })
}

/// One of leocc's struct_ops programs as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgStat {
    /// Kernel program id.
    pub id: u32,
    /// Program name (cut at 15 characters by the kernel).
    pub name: String,
    /// Runs counted while kernel.bpf_stats_enabled was on.
    pub run_cnt: u64,
    /// Nanoseconds spent in those runs.
    pub run_time_ns: u64,
}

/// leocc's struct_ops programs alive in the kernel (also those kept by flows that still run
/// on an unloaded leocc). Needs root.
pub fn leocc_programs() -> Vec<ProgStat> {
    ProgInfoIter::default()
        .filter(|p| p.ty == ProgramType::StructOps)
        .filter_map(|p| {
            let name = p.name.to_string_lossy().into_owned();
            name.starts_with(PROG_PREFIX).then_some(ProgStat {
                id: p.id,
                name,
                run_cnt: p.run_cnt,
                run_time_ns: p.run_time_ns,
            })
        })
        .collect()
}

fn struct_ops_supported() -> Option<bool> {
    if !is_root() {
        return None;
    }
    // SAFETY: a plain libbpf probe; NULL opts is allowed.
    let rc = unsafe {
        libbpf_sys::libbpf_probe_bpf_map_type(libbpf_sys::BPF_MAP_TYPE_STRUCT_OPS, std::ptr::null())
    };
    (rc >= 0).then_some(rc == 1)
}

/// Everything `leocc kernel status` reports. Gathering it never fails.
#[derive(Clone, Debug)]
pub struct Status {
    /// `uname -r`.
    pub kernel_release: String,
    /// The BTF file checked.
    pub btf_path: PathBuf,
    /// Its size, or why it cannot be used.
    pub btf: Result<u64, String>,
    /// Whether BPF struct_ops maps can be created (None: unknown, not root).
    pub struct_ops: Option<bool>,
    /// Whether bpffs is mounted at /sys/fs/bpf.
    pub bpffs_mounted: bool,
    /// Whether the registered "leocc" was loaded from this binary's object ([`BUILD_STAMP`]).
    pub same_build: bool,
    /// Whether our link pin exists.
    pub link_pinned: bool,
    /// Whether "leocc" is in tcp_available_congestion_control.
    pub registered: bool,
    /// tcp_available_congestion_control.
    pub available: Vec<String>,
    /// net.ipv4.tcp_congestion_control.
    pub default_cc: String,
    /// leocc's programs (empty when not root or not loaded).
    pub programs: Vec<ProgStat>,
    /// Flows listed in the stats map, if readable.
    pub flows: Option<usize>,
    /// The detector signal, if readable.
    pub signal: Option<Signal>,
    /// Why this binary has no BPF program, if it has none.
    pub missing_bpf: Option<&'static str>,
    /// Option carrier roles attached to cgroups.
    pub option_links: Vec<crate::option::Attachment>,
    /// The option counters, if readable.
    pub option_counters: Option<crate::option::Counters>,
    /// Whether we run as root.
    pub root: bool,
    /// kernel.bpf_stats_enabled (None: unreadable): without it the kernel counts no runs, so
    /// a program's "0 runs" means "not counted", not "never ran".
    pub bpf_stats: Option<bool>,
}

impl Status {
    /// Whether leocc is loaded by this loader (pinned and registered).
    pub fn loaded(&self) -> bool {
        self.link_pinned && self.registered
    }
}

/// Gathers the [`Status`]; `btf` overrides [`KERNEL_BTF`].
pub fn status(btf: Option<&Path>) -> Status {
    let btf_path = btf.map_or_else(|| PathBuf::from(KERNEL_BTF), Path::to_path_buf);
    let root = is_root();
    Status {
        kernel_release: kernel_release(),
        btf: check_btf(&btf_path).map_err(|e| match e {
            KernelError::NoBtf { reason, .. } => reason,
            other => other.to_string(),
        }),
        btf_path,
        struct_ops: struct_ops_supported(),
        bpffs_mounted: bpffs_mounted(),
        link_pinned: Path::new(LINK_PIN).exists(),
        registered: is_registered(),
        available: available_ccs(),
        same_build: loaded_build().as_deref() == Some(THIS_BUILD),
        default_cc: read_trimmed(DEFAULT_CC).unwrap_or_default(),
        programs: if root { leocc_programs() } else { Vec::new() },
        flows: crate::stats::read_stats().ok().map(|s| s.len()),
        signal: signal::read_signal().ok(),
        missing_bpf: missing_bpf_reason(),
        option_links: crate::option::attachments().unwrap_or_default(),
        option_counters: crate::option::read_counters().ok(),
        root,
        bpf_stats: bpf_stats_enabled(),
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (self.link_pinned, self.registered) {
            (true, true) if self.same_build => "loaded (pinned at ".to_string() + LINK_PIN + ")",
            (true, true) => "loaded from ANOTHER build's object (`leocc kernel load` replaces it with this binary's)".to_string(),
            // /sys/fs/bpf is root-only: without root the pin is invisible, not absent.
            (false, true) if !self.root => "registered (whether by this loader needs root to check: run `sudo leocc kernel status`)".to_string(),
            (false, true) => "registered, but NOT by this loader (no pin)".to_string(),
            (true, false) => "stale pin, not registered (`leocc kernel load` repairs it)".into(),
            (false, false) => "not loaded".to_string(),
        };
        writeln!(f, "leocc:            {state}")?;
        writeln!(f, "kernel:           {}", self.kernel_release)?;
        match &self.btf {
            Ok(size) => writeln!(f, "BTF:              {} ({size} bytes)", self.btf_path.display())?,
            Err(reason) => writeln!(
                f,
                "BTF:              MISSING at {}: {reason}\n                  \
                 leocc is a BPF struct_ops congestion control; it needs a kernel built with\n                  \
                 CONFIG_DEBUG_INFO_BTF=y (exposing {KERNEL_BTF}), or --btf PATH to its BTF",
                self.btf_path.display()
            )?,
        }
        let so = match self.struct_ops {
            Some(true) => "supported",
            Some(false) => "NOT supported by this kernel (needs CONFIG_BPF_JIT, BPF struct_ops)",
            None => "unknown (probing needs root)",
        };
        writeln!(f, "struct_ops:       {so}")?;
        writeln!(
            f,
            "bpffs:            {}",
            if self.bpffs_mounted {
                "mounted at /sys/fs/bpf"
            } else {
                "not mounted (load mounts it)"
            }
        )?;
        writeln!(f, "available:        {}", self.available.join(" "))?;
        writeln!(f, "default:          {}", self.default_cc)?;
        if let Some(reason) = self.missing_bpf {
            writeln!(f, "this binary:      built WITHOUT the BPF program: {reason}")?;
        }
        if !self.root {
            writeln!(f, "note:             not root: programs, maps and struct_ops support are not shown")?;
        }
        for p in &self.programs {
            if self.bpf_stats == Some(true) {
                writeln!(
                    f,
                    "program:          {} id {} ({} runs, {} ns)",
                    p.name, p.id, p.run_cnt, p.run_time_ns
                )?;
            } else {
                writeln!(f, "program:          {} id {}", p.name, p.id)?;
            }
        }
        if !self.programs.is_empty() && self.bpf_stats != Some(true) {
            writeln!(
                f,
                "run statistics:   off (kernel.bpf_stats_enabled=0: runs are not counted; \
                 `sysctl -w kernel.bpf_stats_enabled=1` counts them, at a small cost per run)"
            )?;
        }
        if let Some(n) = self.flows {
            writeln!(f, "flows:            {n} (`leocc kernel stats` shows them)")?;
        }
        if let Some(s) = &self.signal {
            let now = signal::monotonic_ns();
            let verdict = if !s.is_valid() {
                "never written: flows run without a detector".to_string()
            } else if s.is_fresh(now) {
                format!(
                    "fresh: reconfiguration #{} {:.3} s ago, terminal-PoP RTT {} us",
                    s.seq,
                    now.saturating_sub(s.reconfig_time_ns) as f64 / 1e9,
                    s.term_pop_rtt_us
                )
            } else {
                format!(
                    "stale (last probe {:.1} s ago): flows run without a detector",
                    now.saturating_sub(s.probe_time_ns) as f64 / 1e9
                )
            };
            writeln!(f, "signal:           {verdict}")?;
        }
        if self.option_links.is_empty() && self.link_pinned {
            writeln!(f, "option carrier:   not attached (`leocc kernel load --role ...`)")?;
        }
        for a in &self.option_links {
            writeln!(
                f,
                "option carrier:   {} on cgroup {} (id {}, link {})",
                a.role,
                a.cgroup
                    .as_ref()
                    .map_or_else(|| "?".to_string(), |p| p.display().to_string()),
                a.cgroup_id,
                a.pin.display()
            )?;
        }
        if let Some(c) = &self.option_counters {
            let nonzero: Vec<String> = c
                .0
                .iter()
                .filter(|(_, v)| *v > 0)
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            if !nonzero.is_empty() {
                writeln!(f, "option counters:  {}", nonzero.join(" "))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without root the pin under /sys/fs/bpf cannot be seen, so a registered leocc must not
    /// be reported as someone else's.
    #[test]
    fn unprivileged_status_says_root_is_needed_not_foreign_loader() {
        let mut s = status(None);
        (s.root, s.link_pinned, s.registered) = (false, false, true);
        let text = s.to_string();
        assert!(text.contains("needs root") && !text.contains("NOT by this loader"), "{text}");
        s.root = true;
        assert!(s.to_string().contains("NOT by this loader"));
    }
}
