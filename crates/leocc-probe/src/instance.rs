//! One detector per host: the lock, pid and state files under the run directory.
//!
//! A second daemon would double the probe load and publish conflicting sequences, so the first
//! one holds an exclusive flock(2) on `probe.lock` for its whole life; the kernel drops the lock
//! when the process dies, even by SIGKILL, so a stale pid file never blocks a restart. The pid
//! file exists to *name* the holder to a refused second instance. The state file is a JSON
//! snapshot the daemon rewrites (temp file + rename, never half-written) for `leocc probe
//! status`.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Default run directory.
pub const DEFAULT_RUN_DIR: &str = "/run/leocc";
/// Environment variable that overrides the run directory (tests, unprivileged trials).
pub const RUN_DIR_ENV: &str = "LEOCC_RUN_DIR";
const LOCK_FILE: &str = "probe.lock";
const PID_FILE: &str = "probe.pid";
const STATE_FILE: &str = "probe.state.json";

/// Errors of the single-instance machinery.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    /// Another daemon holds the lock.
    #[error("another leocc probe is already running: pid {pid} ({cmdline}); lock {lock}")]
    AlreadyRunning {
        /// Its pid (0 if the pid file was unreadable).
        pid: u32,
        /// Its command line, or a note why it is unknown.
        cmdline: String,
        /// The lock file.
        lock: String,
    },
    /// A file operation failed.
    #[error("{path}: {error}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        error: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> InstanceError + '_ {
    move |error| InstanceError::Io { path: path.display().to_string(), error }
}

/// The run directory: `$LEOCC_RUN_DIR` or /run/leocc.
pub fn run_dir() -> PathBuf {
    std::env::var_os(RUN_DIR_ENV).map_or_else(|| PathBuf::from(DEFAULT_RUN_DIR), PathBuf::from)
}

/// The held single-instance lock; dropping it removes the pid file and releases the lock.
pub struct Instance {
    dir: PathBuf,
    _lock: File,
}

fn flock(f: &File, op: libc::c_int) -> io::Result<()> {
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), op) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn open_lock(dir: &Path) -> Result<File, InstanceError> {
    let path = dir.join(LOCK_FILE);
    OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o644).open(&path).map_err(io_err(&path))
}

/// The command line of a running process, for messages.
fn cmdline_of(pid: u32) -> String {
    match fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(b) if !b.is_empty() => {
            b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ")
        }
        _ => "command line unknown".to_string(),
    }
}

fn read_pid(dir: &Path) -> Option<u32> {
    fs::read_to_string(dir.join(PID_FILE)).ok()?.trim().parse().ok()
}

/// Writes `bytes` to `path` atomically, through the project's one output helper.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    leocc_base::write_atomic(path, bytes).map_err(io::Error::other)
}

impl Instance {
    /// Takes the host-wide lock in `dir` (created if needed), or names the running holder.
    pub fn acquire(dir: &Path) -> Result<Instance, InstanceError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock = open_lock(dir)?;
        if let Err(e) = flock(&lock, libc::LOCK_EX | libc::LOCK_NB) {
            if e.kind() == io::ErrorKind::WouldBlock {
                let pid = read_pid(dir).unwrap_or(0);
                let cmdline = if pid == 0 { "pid file unreadable".to_string() } else { cmdline_of(pid) };
                return Err(InstanceError::AlreadyRunning { pid, cmdline, lock: dir.join(LOCK_FILE).display().to_string() });
            }
            return Err(io_err(&dir.join(LOCK_FILE))(e));
        }
        let pid_path = dir.join(PID_FILE);
        write_atomic(&pid_path, format!("{}\n", std::process::id()).as_bytes()).map_err(io_err(&pid_path))?;
        Ok(Instance { dir: dir.to_path_buf(), _lock: lock })
    }

    /// Replaces the state file with `json`.
    pub fn write_state(&self, json: &serde_json::Value) -> Result<(), InstanceError> {
        let path = self.dir.join(STATE_FILE);
        let mut text = serde_json::to_vec_pretty(json).unwrap_or_default();
        text.push(b'\n');
        write_atomic(&path, &text).map_err(io_err(&path))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::remove_file(self.dir.join(PID_FILE));
    }
}

/// What `leocc probe status` finds in a run directory.
#[derive(Debug)]
pub struct Status {
    /// Pid of the running daemon, if one holds the lock.
    pub running: Option<u32>,
    /// The last state snapshot, if any (may be from a daemon that has exited).
    pub state: Option<serde_json::Value>,
}

/// Reads the status of the daemon using `dir`.
pub fn read_status(dir: &Path) -> Result<Status, InstanceError> {
    let lock_path = dir.join(LOCK_FILE);
    let running = match File::open(&lock_path) {
        Ok(f) => match flock(&f, libc::LOCK_SH | libc::LOCK_NB) {
            Ok(()) => None,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(read_pid(dir).unwrap_or(0)),
            Err(e) => return Err(io_err(&lock_path)(e)),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(&lock_path)(e)),
    };
    let state_path = dir.join(STATE_FILE);
    let state = match fs::read(&state_path) {
        Ok(b) => Some(serde_json::from_slice(&b).map_err(|e| InstanceError::Io {
            path: state_path.display().to_string(),
            error: io::Error::new(io::ErrorKind::InvalidData, e),
        })?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(&state_path)(e)),
    };
    Ok(Status { running, state })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-probe-test-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn second_instance_is_refused_and_names_the_first() {
        let dir = tempdir("lock");
        let first = Instance::acquire(&dir).unwrap();
        // flock locks belong to the open file description, so a second open in the same
        // process conflicts exactly as a second process would.
        match Instance::acquire(&dir) {
            Err(InstanceError::AlreadyRunning { pid, cmdline, .. }) => {
                assert_eq!(pid, std::process::id());
                assert!(!cmdline.is_empty() && cmdline != "command line unknown", "{cmdline}");
            }
            other => panic!("expected AlreadyRunning, got {:?}", other.map(|_| ())),
        }
        assert_eq!(read_status(&dir).unwrap().running, Some(std::process::id()));
        first.write_state(&serde_json::json!({"pop": "100.64.0.1"})).unwrap();
        drop(first);
        let st = read_status(&dir).unwrap();
        assert_eq!(st.running, None, "lock released on drop");
        assert_eq!(st.state.unwrap()["pop"], "100.64.0.1", "last state kept for status");
        assert!(!dir.join(PID_FILE).exists());
        // And the lock can be taken again.
        Instance::acquire(&dir).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn status_of_empty_dir_is_not_running() {
        let dir = tempdir("empty");
        let st = read_status(&dir).unwrap();
        assert!(st.running.is_none() && st.state.is_none());
    }
}
