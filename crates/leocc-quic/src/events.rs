//! Where a QUIC controller gets the detector's reconfiguration events (with confidence) and
//! terminal-PoP RTTs.
//!
//! Controllers poll [`EventSource::latest`] once per ACK batch and act when the sequence
//! number grows, so a source only has to hold the newest state, never a queue. Sources:
//! - [`Subscription`]: the daemon's Unix socket (`leocc probe` serves
//!   `run_dir()/events.sock`, see `leocc_probe::subscribe`); root and members of group
//!   `leocc` may subscribe.
//! - [`PinnedMap`]: reads the pinned kernel signal map (`/sys/fs/bpf/leocc/signal`, needs
//!   access to bpffs, i.e. root or a delegated bpffs); at most every [`MAP_POLL`].
//! - [`SharedSignal`]: set by the application itself (its own detector, or tests).
//! - [`NoEvents`]: LeoCC without the detector (Dynamic Cruise only).

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

pub use leocc_probe::daemon::SignalUpdate as Signal;

/// A source of the detector's latest state. Shared by all connections of a server.
pub trait EventSource: Send + Sync {
    /// The newest state, if any has been seen. Called once per ACK batch: must not block.
    fn latest(&self) -> Option<Signal>;
}

/// No detector.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl EventSource for NoEvents {
    fn latest(&self) -> Option<Signal> {
        None
    }
}

/// A state the application sets ([`SharedSignal::set`]).
#[derive(Debug, Default)]
pub struct SharedSignal {
    state: Mutex<Option<Signal>>,
}

impl SharedSignal {
    /// Replaces the state.
    pub fn set(&self, s: Signal) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
    }
}

impl EventSource for SharedSignal {
    fn latest(&self) -> Option<Signal> {
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Delay before reconnecting to a daemon that is absent or went away: short enough that a
/// restarted daemon's next event is not missed (events are seconds apart, at 15 s
/// reconfiguration boundaries), long enough not to spin.
pub const RECONNECT_DELAY: Duration = Duration::from_millis(500);

/// Subscribes to the daemon's socket from a background thread that reconnects when the
/// daemon restarts; the thread ends when the last handle to the subscription is dropped.
#[derive(Debug)]
pub struct Subscription {
    state: Arc<SharedSignal>,
    path: PathBuf,
    lines: Arc<Mutex<(u64, u64)>>,
}

impl Subscription {
    /// Subscribes to `path` (normally `leocc_probe::subscribe::socket_path()`). Never fails:
    /// an absent daemon is retried every [`RECONNECT_DELAY`].
    pub fn start(path: &Path) -> Arc<Subscription> {
        let sub = Arc::new(Subscription {
            state: Arc::new(SharedSignal::default()),
            path: path.to_path_buf(),
            lines: Arc::new(Mutex::new((0, 0))),
        });
        let weak = Arc::downgrade(&sub);
        let path = path.to_path_buf();
        std::thread::Builder::new()
            .name("leocc-subscribe".into())
            .spawn(move || subscriber_loop(&path, weak))
            .expect("spawning a thread");
        sub
    }

    /// The socket subscribed to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// (lines accepted, lines rejected as malformed) so far.
    pub fn lines(&self) -> (u64, u64) {
        *self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventSource for Subscription {
    fn latest(&self) -> Option<Signal> {
        self.state.latest()
    }
}

/// What a failed connection to the detector's socket at `path` means, in the user's terms:
/// a refused connection on a socket file that exists is a stale socket left by a detector
/// that is not running any more.
fn connect_problem(path: &Path, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!(
            "no detector running (stale socket {}: nothing listens on it; start `leocc probe`)",
            path.display()
        ),
        std::io::ErrorKind::NotFound => {
            format!("no detector running ({} does not exist; start `leocc probe`)", path.display())
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("not allowed to connect to {} (root or members of group leocc are)", path.display())
        }
        _ => format!("cannot connect to the detector at {} ({e})", path.display()),
    }
}

fn subscriber_loop(path: &Path, sub: Weak<Subscription>) {
    let mut warned = false;
    // A refusal (not allowed, or the daemon's subscriber cap reached) is said once until a
    // valid line arrives, not at every reconnection.
    let mut refusal_said = false;
    loop {
        let Some(s) = sub.upgrade() else { return };
        let (state, lines) = (s.state.clone(), s.lines.clone());
        drop(s);
        match UnixStream::connect(path) {
            Ok(stream) => {
                warned = false;
                // A read timeout lets the thread notice that the subscription was dropped.
                let _ = stream.set_read_timeout(Some(RECONNECT_DELAY));
                let mut r = BufReader::new(stream);
                let mut line = String::new();
                loop {
                    if sub.strong_count() == 0 {
                        return;
                    }
                    match r.read_line(&mut line) {
                        Ok(0) => break,
                        Ok(_) if line.ends_with('\n') => {
                            let mut l = lines.lock().unwrap_or_else(|p| p.into_inner());
                            match leocc_probe::subscribe::parse_line(&line) {
                                Ok(sig) => {
                                    state.set(sig);
                                    l.0 += 1;
                                    refusal_said = false;
                                }
                                Err(e) if e.starts_with("the daemon refused") => {
                                    if !refusal_said {
                                        eprintln!("leocc-quic: {}: {e}; retrying every {} ms", path.display(), RECONNECT_DELAY.as_millis());
                                        refusal_said = true;
                                    }
                                }
                                Err(e) => {
                                    l.1 += 1;
                                    if l.1 == 1 {
                                        eprintln!("leocc-quic: ignoring a line from {}: {e}", path.display());
                                    }
                                }
                            }
                            line.clear();
                        }
                        Ok(_) => {}
                        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                            if line.len() > leocc_probe::subscribe::MAX_LINE {
                                break; // not our protocol
                            }
                        }
                        Err(_) => break,
                    }
                }
            }
            Err(e) => {
                if !warned {
                    eprintln!("leocc-quic: {}; retrying every {} ms", connect_problem(path, &e), RECONNECT_DELAY.as_millis());
                    warned = true;
                }
            }
        }
        std::thread::sleep(RECONNECT_DELAY);
    }
}

/// Shortest interval between two reads of the pinned map: each read opens the pin and does
/// a bpf() lookup (two syscalls), too much per ACK batch; the detector publishes every 50 ms.
pub const MAP_POLL: Duration = Duration::from_millis(10);

/// Polls the pinned kernel signal map (`leocc_signal::read_signal`).
#[derive(Debug, Default)]
pub struct PinnedMap {
    cache: Mutex<Option<(Instant, Option<Signal>)>>,
}

impl EventSource for PinnedMap {
    fn latest(&self) -> Option<Signal> {
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, s)) = *c {
            if at.elapsed() < MAP_POLL {
                return s;
            }
        }
        let s = leocc_signal::read_signal().ok().filter(|s| s.is_valid()).map(|k| Signal {
            reconfig_time_ns: k.reconfig_time_ns,
            seq: k.seq,
            probe_time_ns: k.probe_time_ns,
            term_pop_rtt_us: k.term_pop_rtt_us,
            confidence: k.confidence().min(100) as u8,
        });
        *c = Some((Instant::now(), s));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_socket_is_called_stale_and_a_missing_one_missing() {
        let dir = std::env::temp_dir().join(format!("leocc-quic-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.sock");
        // A listener that is gone leaves its socket file behind: what a killed detector leaves.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let e = UnixStream::connect(&path).unwrap_err();
        let m = connect_problem(&path, &e);
        assert!(m.contains("no detector running (stale socket") && m.contains("events.sock"), "{m}");
        std::fs::remove_file(&path).unwrap();
        let e = UnixStream::connect(&path).unwrap_err();
        let m = connect_problem(&path, &e);
        assert!(m.contains("no detector running") && m.contains("does not exist"), "{m}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
