//! The detector's signal for user-space transports (QUIC servers): a Unix stream socket
//! `events.sock` in the daemon's run directory ([`crate::instance::run_dir`]).
//!
//! A QUIC process cannot read per-socket BPF state, and reading the pinned signal map needs
//! privileges (bpffs). The daemon therefore also serves its signal on a socket whose mode is
//! 0666, so an unprivileged server can connect. The protocol is one JSON object per line,
//! sent on connect (the current state) and whenever the signal changes (a reconfiguration, or
//! a new terminal-PoP RTT at the daemon's publish period):
//!
//! ```text
//! {"seq":3,"reconfig_time_ns":812345678901,"confidence":87,"probe_time_ns":812399000000,"term_pop_rtt_us":21450}
//! ```
//!
//! Times are CLOCK_MONOTONIC nanoseconds (as in the kernel's signal map); `seq` counts
//! reconfigurations (0 = none yet) and a subscriber acts when it grows; `confidence` is 0..=100.
//! Subscribers only read; a subscriber that stops reading is dropped rather than allowed to
//! stall the daemon.

use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use crate::daemon::{Publisher, SignalUpdate};

/// The socket's file name inside the run directory.
pub const SOCKET_NAME: &str = "events.sock";

/// Mode of the socket file: connecting to a Unix socket needs write permission on it, and
/// the subscribers are unprivileged servers of any user; the stream carries no secrets.
pub const SOCKET_MODE: u32 = 0o666;

/// Longest line a subscriber should accept (a line is about 120 bytes).
pub const MAX_LINE: usize = 1024;

/// Where the daemon serves the subscription: `run_dir()/events.sock`.
pub fn socket_path() -> PathBuf {
    crate::instance::run_dir().join(SOCKET_NAME)
}

/// The wire form of one signal (no trailing newline).
pub fn format_line(s: &SignalUpdate) -> String {
    serde_json::json!({
        "seq": s.seq,
        "reconfig_time_ns": s.reconfig_time_ns,
        "confidence": s.confidence,
        "probe_time_ns": s.probe_time_ns,
        "term_pop_rtt_us": s.term_pop_rtt_us,
    })
    .to_string()
}

/// Parses one line; the error names the problem.
pub fn parse_line(line: &str) -> Result<SignalUpdate, String> {
    if line.len() > MAX_LINE {
        return Err(format!("line of {} bytes, longer than {MAX_LINE}", line.len()));
    }
    let v: serde_json::Value = serde_json::from_str(line.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let field = |name: &str| -> Result<u64, String> {
        v.get(name)
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| format!("field `{name}` missing or not a non-negative integer"))
    };
    let confidence = field("confidence")?;
    if confidence > 100 {
        return Err(format!("confidence {confidence} above 100"));
    }
    let rtt = field("term_pop_rtt_us")?;
    Ok(SignalUpdate {
        seq: field("seq")?,
        reconfig_time_ns: field("reconfig_time_ns")?,
        confidence: confidence as u8,
        probe_time_ns: field("probe_time_ns")?,
        term_pop_rtt_us: u32::try_from(rtt).map_err(|_| format!("term_pop_rtt_us {rtt} too large"))?,
    })
}

/// The daemon's side: a listening socket and its subscribers.
#[derive(Debug)]
pub struct SubscriptionServer {
    listener: UnixListener,
    path: PathBuf,
    clients: Vec<UnixStream>,
    last: Option<SignalUpdate>,
}

impl SubscriptionServer {
    /// Listens at `path`. A leftover socket file from a dead daemon is replaced (the run
    /// directory's instance lock guarantees no live daemon owns it).
    pub fn bind(path: &Path) -> std::io::Result<SubscriptionServer> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))?;
        Ok(SubscriptionServer { listener, path: path.to_path_buf(), clients: Vec::new(), last: None })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Subscribers connected.
    pub fn subscribers(&self) -> usize {
        self.clients.len()
    }

    /// Accepts waiting subscribers (each gets the current state) and sends `s` to all.
    pub fn send(&mut self, s: &SignalUpdate) {
        self.accept();
        self.last = Some(*s);
        let line = format!("{}\n", format_line(s));
        self.clients.retain_mut(|c| write_all_or_drop(c, line.as_bytes()));
    }

    /// Accepts waiting subscribers without a new signal (call it from the daemon's loop).
    pub fn accept(&mut self) {
        while let Ok((c, _)) = self.listener.accept() {
            if c.set_nonblocking(true).is_err() {
                continue;
            }
            let mut c = c;
            let keep = match &self.last {
                Some(s) => write_all_or_drop(&mut c, format!("{}\n", format_line(s)).as_bytes()),
                None => true,
            };
            if keep {
                self.clients.push(c);
            }
        }
    }
}

/// Writes a whole line to a non-blocking subscriber; false (drop it) on any error, including
/// a full socket buffer: a subscriber that far behind has lost the stream's meaning anyway.
fn write_all_or_drop(c: &mut UnixStream, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        match c.write(buf) {
            Ok(0) => return false,
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

impl Drop for SubscriptionServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A publisher that serves the subscription and forwards to another sink (the kernel map),
/// if any. The socket is bound on the first publish, i.e. after the daemon holds its run
/// directory's instance lock, so a second daemon never steals a live daemon's socket. A
/// subscription that cannot be bound is reported once on stderr and the inner sink goes on.
pub struct Tee {
    inner: Option<Box<dyn Publisher>>,
    path: PathBuf,
    server: Option<SubscriptionServer>,
    failed: bool,
}

impl Tee {
    /// Serves `path` (normally [`socket_path`] under the daemon's run directory) besides `inner`.
    pub fn new(path: PathBuf, inner: Option<Box<dyn Publisher>>) -> Tee {
        Tee { inner, path, server: None, failed: false }
    }
}

impl Publisher for Tee {
    fn describe(&self) -> String {
        match &self.inner {
            Some(p) => format!("{} and subscribers of {}", p.describe(), self.path.display()),
            None => format!("subscribers of {}", self.path.display()),
        }
    }

    fn current_seq(&mut self) -> Option<u64> {
        self.inner.as_mut().and_then(|p| p.current_seq())
    }

    fn publish(&mut self, s: &SignalUpdate) -> Result<(), String> {
        if self.server.is_none() && !self.failed {
            match SubscriptionServer::bind(&self.path) {
                Ok(srv) => self.server = Some(srv),
                Err(e) => {
                    eprintln!("leocc probe: no subscription socket at {}: {e}", self.path.display());
                    self.failed = true;
                }
            }
        }
        if let Some(srv) = self.server.as_mut() {
            srv.send(s);
        }
        match self.inner.as_mut() {
            Some(p) => p.publish(s),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};

    fn sample(seq: u64) -> SignalUpdate {
        SignalUpdate {
            reconfig_time_ns: 5_000_000_000 + seq,
            seq,
            probe_time_ns: 6_000_000_000,
            term_pop_rtt_us: 21_000,
            confidence: 80,
        }
    }

    #[test]
    fn lines_round_trip_and_bad_lines_name_the_problem() {
        let s = sample(7);
        assert_eq!(parse_line(&format_line(&s)).unwrap(), s);
        assert!(parse_line("garbage").unwrap_err().contains("not JSON"));
        assert!(parse_line(r#"{"seq":1}"#).unwrap_err().contains("field `confidence` missing"));
        let hi = format_line(&s).replace("\"confidence\":80", "\"confidence\":300");
        assert!(parse_line(&hi).unwrap_err().contains("confidence 300"));
        assert!(parse_line(&"x".repeat(MAX_LINE + 1)).unwrap_err().contains("longer"));
    }

    #[test]
    fn subscribers_get_the_current_state_then_updates_and_the_socket_is_world_writable() {
        let dir = std::env::temp_dir().join(format!("leocc-sub-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(SOCKET_NAME);
        let mut server = SubscriptionServer::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, SOCKET_MODE);
        server.send(&sample(1));
        let c = UnixStream::connect(&path).unwrap();
        server.send(&sample(2));
        assert_eq!(server.subscribers(), 1);
        let mut r = BufReader::new(c);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(parse_line(&line).unwrap().seq, 1, "current state first");
        line.clear();
        r.read_line(&mut line).unwrap();
        assert_eq!(parse_line(&line).unwrap().seq, 2);
        drop(r);
        server.send(&sample(3));
        server.send(&sample(4));
        assert_eq!(server.subscribers(), 0, "a closed subscriber is dropped");
        drop(server);
        assert!(!path.exists(), "the socket file is removed on exit");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
