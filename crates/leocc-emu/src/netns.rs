//! Named network namespaces, created with iproute2 (`ip netns add`) so that users can look
//! inside with `ip netns exec NAME ...` while an emulation runs, and removed by a Drop guard
//! (also on panic). Names carry the process id and a per-process counter, so parallel runs
//! and parallel tests never collide; `leftover_namespaces` finds those of dead processes.

use crate::error::{EmuError, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every namespace this crate creates.
pub const NS_PREFIX: &str = "leocc-";
/// Where iproute2 keeps the bind mounts of named namespaces.
pub const NETNS_RUN_DIR: &str = "/run/netns";

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// A fresh, process-unique base name such as `leocc-1234-0`; roles append `-c` / `-s`.
pub fn unique_base() -> String {
    format!("{NS_PREFIX}{}-{}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// How many namespace base names this process has handed out so far.
pub fn bases_created() -> u32 {
    NEXT_ID.load(Ordering::Relaxed)
}

/// A named network namespace that is deleted when dropped.
#[derive(Debug)]
pub struct NetNs {
    name: String,
    fd: Option<File>,
}

impl NetNs {
    /// Creates the namespace `name` and brings its loopback up.
    pub fn create(name: &str) -> Result<NetNs> {
        run_ip(&["netns", "add", name])?;
        let mut ns = NetNs { name: name.to_string(), fd: None };
        let path = format!("{NETNS_RUN_DIR}/{name}");
        ns.fd = Some(File::open(&path).map_err(|e| EmuError::io(format!("open {path}"), e))?);
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace's name (as `ip netns list` shows it).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw descriptor of the namespace (valid while `self` lives), for `setns`.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1)
    }

    /// Moves the calling thread into this namespace. Use on a dedicated thread only.
    pub fn enter_current_thread(&self) -> Result<()> {
        // SAFETY: setns on a valid namespace descriptor only changes this thread's namespace.
        if unsafe { libc::setns(self.raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(EmuError::os(format!("setns into {}", self.name)));
        }
        Ok(())
    }

    /// Runs `ip -n NAME ARGS...` and fails with ip's message if it fails.
    pub fn ip(&self, args: &[&str]) -> Result<()> {
        let mut full = vec!["-n", self.name.as_str()];
        full.extend_from_slice(args);
        run_ip(&full)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        self.fd = None;
        if let Err(e) = remove(&self.name) {
            eprintln!("leocc emu: warning: could not delete namespace {}: {e}", self.name);
        }
    }
}

/// Kills every process left in namespace `name` (grandchildren of CMD or --server-cmd, which
/// do not inherit the death signal; everything, after a `kill -9` of leocc), then deletes it.
/// Deleting alone would leave them running, cut off from the network.
pub fn remove(name: &str) -> Result<()> {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()) {
            if pid != me {
                // SAFETY: kill(2) on a process inside our own namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
    run_ip(&["netns", "del", name])
}

/// Runs `ip ARGS...`; an error carries ip's stderr.
pub fn run_ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| EmuError::io("run `ip` (iproute2)", e))?;
    if !out.status.success() {
        return Err(EmuError::msg(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Names of existing namespaces whose name starts with `prefix`.
pub fn namespaces_with_prefix(prefix: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_RUN_DIR) else { return Vec::new() };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// Namespaces this crate created in processes that no longer exist (left by `kill -9`).
pub fn leftover_namespaces() -> Vec<String> {
    namespaces_with_prefix(NS_PREFIX)
        .into_iter()
        .filter(|n| match owner_pid(n) {
            Some(pid) => !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            None => false,
        })
        .collect()
}

/// The pid encoded in a name made by `unique_base`.
fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(NS_PREFIX)?.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_differ_and_encode_the_pid() {
        let a = unique_base();
        let b = unique_base();
        assert_ne!(a, b);
        assert_eq!(owner_pid(&format!("{a}-c")), Some(std::process::id()));
        assert_eq!(owner_pid("leocc-x-1"), None);
    }
}
