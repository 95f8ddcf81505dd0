//! leocc-kernel: LeoCC in the stock Linux kernel, as a BPF struct_ops `tcp_congestion_ops`.
//!
//! The model. The congestion control itself is bpf/leocc.bpf.c, a thin glue around the LeoCC
//! core (core/leocc.c) that build.rs compiles with clang into a BPF object and embeds here as a
//! libbpf-rs skeleton: nothing is compiled at run time. Loading registers the struct_ops map
//! "leocc" through a BPF link and pins that link (and the maps user space needs) under
//! /sys/fs/bpf/leocc/, so the congestion control outlives the loading process; unloading
//! removes the pins, which unregisters "leocc" while flows that already use it keep running
//! (each holds a reference to the struct_ops map until it closes).
//!
//! Three pinned maps connect user space to the flows:
//! - `signal` ([`signal`]): the reconfiguration detector's output, one entry;
//! - `stats` ([`stats`]): each flow's model state, refreshed by the flow every 10 ms;
//! - the link itself (`link`), whose presence means "loaded".
//!
//! The same object carries the sock_ops programs that put the signal in a TCP option on a
//! satellite-side receiver and read it on a sender ([`option`]): `load` pins them, and
//! [`option::attach`] attaches a role to a cgroup.
//!
//! [`lab`] builds throw-away network namespace pairs for the integration tests and the CPU
//! benchmark ([`bench`]).

pub mod bench;
pub mod cgroup;
pub mod lab;
pub mod loader;
pub mod option;
pub mod params;
pub mod stats;
pub mod traffic;

/// The detector signal's map layout, pins, reader and writer: the `leocc-signal` crate, which
/// needs no BPF program (the daemon and QUIC use it directly).
pub use leocc_signal as signal;

use std::path::PathBuf;

pub use loader::{load, status, unload, LoadOptions, LoadOutcome, Status};
pub use signal::{read_signal, write_signal, Signal};
pub use stats::{read_stats, FlowStats};

/// The generated skeleton of bpf/leocc.bpf.c (types of its maps included).
#[cfg(not(leocc_no_bpf))]
#[allow(clippy::all, missing_docs, dead_code, non_camel_case_types, non_snake_case)]
pub(crate) mod skel {
    include!(concat!(env!("OUT_DIR"), "/leocc.skel.rs"));
}

/// Why this build carries no BPF program (set by build.rs), if it carries none.
pub fn missing_bpf_reason() -> Option<&'static str> {
    #[cfg(leocc_no_bpf)]
    return Some(env!("LEOCC_NO_BPF_REASON"));
    #[cfg(not(leocc_no_bpf))]
    None
}

/// Everything that can stop the loader, each with the reason a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// Loading BPF needs CAP_BPF + CAP_NET_ADMIN; we only check for root.
    #[error("{action} needs root (CAP_BPF and CAP_NET_ADMIN); run it with sudo")]
    NotRoot {
        /// What was attempted.
        action: &'static str,
    },
    /// No kernel BTF where we looked.
    #[error(
        "no kernel BTF at {}: {reason}. LeoCC is a BPF struct_ops congestion control and \
         needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (which exposes /sys/kernel/btf/vmlinux); \
         --btf PATH can name the BTF file when it lives elsewhere", path.display()
    )]
    NoBtf {
        /// The BTF path that was checked.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The kernel cannot register a BPF tcp_congestion_ops.
    #[error("this kernel cannot load a BPF struct_ops congestion control: {0}")]
    NoStructOps(String),
    /// bpffs is not mounted and could not be mounted.
    #[error("bpffs at /sys/fs/bpf: {0}")]
    Bpffs(String),
    /// This binary was built without the BPF object.
    #[error("this leocc was built without its BPF program: {0}; rebuild on a machine with kernel BTF, clang and bpftool")]
    NotBuilt(&'static str),
    /// A name clash: someone else registered "leocc".
    #[error("a congestion control named \"leocc\" is registered, but not by this loader (no pin at {0}); remove it first")]
    ForeignLeocc(String),
    /// libbpf failed to open, load or attach the object.
    #[error("{stage}: {reason}")]
    Libbpf {
        /// open / load / attach / pin.
        stage: &'static str,
        /// libbpf's error and our hint.
        reason: String,
    },
    /// The signal map could not be used.
    #[error(transparent)]
    Signal(#[from] leocc_signal::SignalError),
    /// The params map could not be used.
    #[error("LeoCC's parameter map {}: {reason}", path.display())]
    ParamsMap {
        /// Where it should be pinned.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The stats map could not be read.
    #[error("stats map {}: {reason}", path.display())]
    StatsMap {
        /// Where it should be pinned.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The option carrier (sock_ops programs, cgroup links, counters) failed.
    #[error("option carrier: {0}")]
    Option(String),
    /// A file system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Whether we run as root (the loader's only privilege check; capabilities are not parsed).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    /// The signal's Rust mirror (leocc-signal, held to the header there) against the compiled
    /// BPF object's own BTF: the generated skeleton's type.
    #[cfg(not(leocc_no_bpf))]
    #[test]
    fn signal_layout_is_the_compiled_objects() {
        use crate::signal::Signal;
        use crate::skel::types::leocc_signal as C;
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<C>(), size_of::<Signal>());
        assert_eq!(offset_of!(C, reconfig_time_ns), offset_of!(Signal, reconfig_time_ns));
        assert_eq!(offset_of!(C, seq), offset_of!(Signal, seq));
        assert_eq!(offset_of!(C, probe_time_ns), offset_of!(Signal, probe_time_ns));
        assert_eq!(offset_of!(C, term_pop_rtt_us), offset_of!(Signal, term_pop_rtt_us));
        assert_eq!(offset_of!(C, flags), offset_of!(Signal, flags));
        assert_eq!(offset_of!(C, check), offset_of!(Signal, check));
    }
}
