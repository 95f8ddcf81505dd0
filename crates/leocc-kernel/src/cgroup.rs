//! Throw-away cgroup v2 directories: a command joins one before it runs, and programs attached
//! to it (the option carrier's test peer, the traffic counter) see only that command's sockets.

use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Distinguishes the cgroups one process makes.
static NEXT: AtomicU32 = AtomicU32::new(0);
/// How long [`Drop`] waits for the processes of a cgroup to be gone (killed ones take a moment).
const REMOVE_WAIT: Duration = Duration::from_secs(1);

/// A cgroup v2 made under the cgroup2 root, removed on drop once its processes are gone.
pub struct Cgroup {
    /// Its directory.
    pub path: PathBuf,
}

impl Cgroup {
    /// Creates `leocc-<tag>-<pid>-<n>` under the cgroup2 root (root only).
    pub fn new(tag: &str) -> io::Result<Cgroup> {
        let root = crate::option::cgroup2_root().map_err(|e| io::Error::other(e.to_string()))?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = root.join(format!("leocc-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("creating cgroup {}: {e}", path.display())))?;
        Ok(Cgroup { path })
    }

    /// Makes `cmd`'s process join this cgroup before it runs its program, so that every socket
    /// it and its children open belongs to the cgroup.
    pub fn join(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let procs = std::ffi::CString::new(
            self.path.join("cgroup.procs").into_os_string().into_encoded_bytes(),
        )
        .expect("no NUL in cgroup paths");
        // SAFETY: between fork and exec we only make async-signal-safe system calls on a
        // string allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                libc::close(fd);
                if ok {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let step = Duration::from_millis(20);
        for _ in 0..(REMOVE_WAIT.as_millis() / step.as_millis()) {
            if std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(step);
        }
    }
}
