//! The detector's signal for user-space transports (QUIC servers): a Unix stream socket
//! `events.sock` in the daemon's run directory ([`crate::instance::run_dir`]).
//!
//! A QUIC process cannot read per-socket BPF state, and reading the pinned signal map needs
//! privileges (bpffs). The daemon therefore also serves its signal on this socket. The
//! protocol is one JSON object per line, sent on connect (the current state) and whenever the
//! signal changes (a reconfiguration, or a new terminal-PoP RTT at the daemon's publish
//! period):
//!
//! ```text
//! {"seq":3,"reconfig_time_ns":812345678901,"confidence":87,"probe_time_ns":812399000000,"term_pop_rtt_us":21450}
//! ```
//!
//! Times are CLOCK_MONOTONIC nanoseconds (as in the kernel's signal map); `seq` counts
//! reconfigurations (0 = none yet) and a subscriber acts when it grows; `confidence` is 0..=100.
//! A connection the daemon does not serve gets one line `{"error":"..."}` and is closed.
//!
//! Who may subscribe ([`Access`]). The signal steers every LeoCC flow of the host, and each
//! subscriber costs the daemon a descriptor, so the socket is not open to every local user
//! (issue 34: 5,000 connections by `nobody` once exhausted the daemon's descriptors and froze
//! the kernel signal for 13 s). If the group [`SOCKET_GROUP`] exists, the socket is mode 0660
//! with that group, and its members (and root) subscribe; otherwise it is 0600, root only.
//! Every accepted connection is also checked with SO_PEERCRED against the same rule, so a
//! socket whose mode was loosened by hand still serves only those users.
//!
//! Bounded cost. At most [`MAX_SUBSCRIBERS`] are served; writes never block (a subscriber
//! that stops reading is dropped when its socket buffer is full), and the daemon accepts at
//! most [`ACCEPT_BATCH`] connections per wake-up of its loop, so no number of connections
//! delays a probe or the kernel map's update by more than a fraction of a millisecond.

use std::io::{ErrorKind, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::daemon::{Publisher, SignalUpdate};

/// The socket's file name inside the run directory.
pub const SOCKET_NAME: &str = "events.sock";

/// The group whose members may subscribe (`groupadd leocc`, then add the users that run QUIC
/// servers); without it only root may.
pub const SOCKET_GROUP: &str = "leocc";

/// Mode of the socket when [`SOCKET_GROUP`] exists: owner and group connect (connecting to a
/// Unix socket needs write permission on it).
pub const SOCKET_MODE_GROUP: u32 = 0o660;

/// Mode of the socket without the group: root (the daemon's owner) only.
pub const SOCKET_MODE_OWNER: u32 = 0o600;

/// Most subscribers served at once. A subscriber is a server process, not a connection
/// (leocc-quic shares one subscription among all its connections), and a host runs a handful;
/// 64 leaves ample headroom for those while keeping the daemon's descriptors (the default soft
/// limit is 1,024) far from exhaustion, so the probe socket, the log, the state file's
/// temporary and the signal map always find one. Past the cap a connection is refused.
pub const MAX_SUBSCRIBERS: usize = 64;

/// Connections accepted per wake-up of the daemon's loop: each costs an accept, a credential
/// check and a write (a few microseconds), so a burst of thousands is taken in slices between
/// which the loop sends its due probe and drains replies.
pub const ACCEPT_BATCH: usize = 32;

/// How long the daemon stops watching the listening socket after accept(2) failed for a
/// reason other than "nothing pending" (e.g. out of descriptors): the pending connection would
/// otherwise wake the loop at once, again and again. Short against the 10 ms probe interval's
/// cost, long enough not to spin.
pub const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

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

/// The line a refused connection gets before it is closed (no trailing newline).
pub fn refusal_line(reason: &str) -> String {
    serde_json::json!({ "error": reason }).to_string()
}

/// Parses one line; the error names the problem (a refusal reads "the daemon refused: ...").
pub fn parse_line(line: &str) -> Result<SignalUpdate, String> {
    if line.len() > MAX_LINE {
        return Err(format!("line of {} bytes, longer than {MAX_LINE}", line.len()));
    }
    let v: serde_json::Value = serde_json::from_str(line.trim()).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(reason) = v.get("error").and_then(serde_json::Value::as_str) {
        return Err(format!("the daemon refused: {reason}"));
    }
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

/// Who may subscribe: root, the daemon's own user, and members of [`SOCKET_GROUP`] if it
/// exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The group allowed besides root: (name, gid).
    pub group: Option<(String, u32)>,
    /// The daemon's effective uid (it owns the socket).
    pub owner: u32,
}

/// A peer's credentials, as SO_PEERCRED and SO_PEERGROUPS report them (taken at connect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerCred {
    /// Process id of the peer when it connected.
    pub pid: i32,
    /// Its effective uid.
    pub uid: u32,
    /// Its effective gid.
    pub gid: u32,
    /// Its supplementary groups (empty where the kernel cannot report them).
    pub groups: Vec<u32>,
}

impl Access {
    /// The host's policy: [`SOCKET_GROUP`] if `getent group leocc` knows it, else root only.
    pub fn from_system() -> Access {
        // SAFETY: geteuid has no preconditions.
        let owner = unsafe { libc::geteuid() };
        Access { group: lookup_group(SOCKET_GROUP).map(|gid| (SOCKET_GROUP.to_string(), gid)), owner }
    }

    /// The socket file's mode under this policy.
    pub fn mode(&self) -> u32 {
        if self.group.is_some() {
            SOCKET_MODE_GROUP
        } else {
            SOCKET_MODE_OWNER
        }
    }

    /// Whether `peer` may subscribe.
    pub fn allows(&self, peer: &PeerCred) -> bool {
        if peer.uid == 0 || peer.uid == self.owner {
            return true;
        }
        match &self.group {
            Some((_, gid)) => peer.gid == *gid || peer.groups.contains(gid),
            None => false,
        }
    }

    /// For messages: "group leocc" or "root only".
    pub fn describe(&self) -> String {
        match &self.group {
            Some((name, _)) => format!("root and group {name}"),
            None => format!("root only (no group {SOCKET_GROUP})"),
        }
    }
}

/// The gid of group `name`, if the group database has it.
fn lookup_group(name: &str) -> Option<u32> {
    let cname = std::ffi::CString::new(name).ok()?;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: an all-zero group is a valid out-parameter; getgrnam_r writes only into `grp`
    // and `buf` (of the length given) and sets `res` to null or to `grp`.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut res: *mut libc::group = std::ptr::null_mut();
    let rc = unsafe { libc::getgrnam_r(cname.as_ptr(), &mut grp, buf.as_mut_ptr().cast(), buf.len(), &mut res) };
    (rc == 0 && !res.is_null()).then_some(grp.gr_gid)
}

/// The credentials of the process at the other end of `s`.
pub fn peer_cred(s: &UnixStream) -> std::io::Result<PeerCred> {
    let fd = s.as_raw_fd();
    // SAFETY: an all-zero ucred is valid; getsockopt writes at most `len` bytes into it.
    let mut c: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, (&mut c as *mut libc::ucred).cast(), &mut len) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Supplementary groups (Linux 4.13+). A peer in more groups than fit is judged by its uid
    // and primary gid only, which can only refuse, never admit, a peer wrongly.
    let mut groups = vec![0 as libc::gid_t; 64];
    let mut glen = (groups.len() * std::mem::size_of::<libc::gid_t>()) as libc::socklen_t;
    // SAFETY: the buffer holds `glen` bytes; the kernel writes at most that many.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_PEERGROUPS, groups.as_mut_ptr().cast(), &mut glen) };
    if r == 0 {
        groups.truncate(glen as usize / std::mem::size_of::<libc::gid_t>());
    } else {
        groups.clear();
    }
    Ok(PeerCred { pid: c.pid, uid: c.uid, gid: c.gid, groups })
}

/// Counters of the subscription, for the state file and `leocc probe status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SubscriberStats {
    /// Subscribers connected now.
    pub count: usize,
    /// [`MAX_SUBSCRIBERS`].
    pub max: usize,
    /// Connections refused because `max` were connected.
    pub refused_full: u64,
    /// Connections refused by the credential check.
    pub refused_credentials: u64,
    /// Subscribers dropped: closed, or not reading (socket buffer full).
    pub dropped: u64,
    /// The socket file's mode.
    pub mode: u32,
    /// Who may subscribe ([`Access::describe`]).
    pub access: String,
}

/// The daemon's side: a listening socket and its subscribers.
#[derive(Debug)]
pub struct SubscriptionServer {
    listener: UnixListener,
    path: PathBuf,
    access: Access,
    clients: Vec<UnixStream>,
    last: Option<SignalUpdate>,
    stats: SubscriberStats,
    /// Set after a failed accept: the listener is not watched until then ([`ACCEPT_PAUSE`]).
    paused_until: Option<Instant>,
}

impl SubscriptionServer {
    /// Listens at `path` with the host's policy ([`Access::from_system`]).
    pub fn bind(path: &Path) -> std::io::Result<SubscriptionServer> {
        Self::bind_with(path, Access::from_system())
    }

    /// Listens at `path`, serving the users `access` allows. A leftover socket file from a
    /// dead daemon is replaced (the run directory's instance lock guarantees no live daemon
    /// owns it).
    pub fn bind_with(path: &Path, access: Access) -> std::io::Result<SubscriptionServer> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        // Until the chmod the file has the umask's mode; the credential check covers a peer
        // that connects in that window.
        if let Some((name, gid)) = &access.group {
            std::os::unix::fs::chown(path, None, Some(*gid))
                .map_err(|e| std::io::Error::new(e.kind(), format!("giving {} to group {name}: {e}", path.display())))?;
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(access.mode()))?;
        let stats = SubscriberStats { max: MAX_SUBSCRIBERS, mode: access.mode(), access: access.describe(), ..SubscriberStats::default() };
        Ok(SubscriptionServer { listener, path: path.to_path_buf(), access, clients: Vec::new(), last: None, stats, paused_until: None })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Subscribers connected.
    pub fn subscribers(&self) -> usize {
        self.clients.len()
    }

    /// The counters.
    pub fn stats(&self) -> SubscriberStats {
        SubscriberStats { count: self.clients.len(), ..self.stats.clone() }
    }

    /// The listening descriptor, for the daemon's poll(); `None` while accepting is paused
    /// after an error ([`ACCEPT_PAUSE`]).
    pub fn listen_fd(&self) -> Option<RawFd> {
        match self.paused_until {
            Some(t) if Instant::now() < t => None,
            _ => Some(self.listener.as_raw_fd()),
        }
    }

    /// Accepts waiting subscribers (each gets the current state) and sends `s` to all.
    pub fn send(&mut self, s: &SignalUpdate) {
        self.accept();
        self.last = Some(*s);
        let line = format!("{}\n", format_line(s));
        let before = self.clients.len();
        self.clients.retain_mut(|c| write_all_or_drop(c, line.as_bytes()));
        self.stats.dropped += (before - self.clients.len()) as u64;
    }

    /// Accepts up to [`ACCEPT_BATCH`] waiting connections without a new signal (the daemon's
    /// loop calls it when the listener is readable): allowed ones within the cap become
    /// subscribers and get the current state at once, the others get a refusal line.
    pub fn accept(&mut self) {
        for _ in 0..ACCEPT_BATCH {
            let c = match self.listener.accept() {
                Ok((c, _)) => c,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    // E.g. EMFILE: the connection stays queued; look again after a pause.
                    self.paused_until = Some(Instant::now() + ACCEPT_PAUSE);
                    return;
                }
            };
            self.paused_until = None;
            if c.set_nonblocking(true).is_err() {
                continue;
            }
            let mut c = c;
            let allowed = peer_cred(&c).is_ok_and(|p| self.access.allows(&p));
            if !allowed {
                self.stats.refused_credentials += 1;
                let why = format!("not allowed to subscribe ({})", self.access.describe());
                write_all_or_drop(&mut c, format!("{}\n", refusal_line(&why)).as_bytes());
                continue;
            }
            if self.clients.len() >= MAX_SUBSCRIBERS {
                self.stats.refused_full += 1;
                let why = format!("{MAX_SUBSCRIBERS} subscribers already connected");
                write_all_or_drop(&mut c, format!("{}\n", refusal_line(&why)).as_bytes());
                continue;
            }
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
/// a full socket buffer: a subscriber that far behind has lost the stream's meaning anyway,
/// and waiting for it would stall the daemon's publish path.
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
/// if any. The socket is bound when the daemon starts ([`Publisher::start`], after it holds
/// its run directory's instance lock, so a second daemon never steals a live daemon's socket)
/// or else on the first publish. A subscription that cannot be bound is reported once on
/// stderr and the inner sink goes on.
pub struct Tee {
    inner: Option<Box<dyn Publisher>>,
    path: PathBuf,
    access: Access,
    server: Option<SubscriptionServer>,
    failed: bool,
}

impl Tee {
    /// Serves `path` (normally [`socket_path`] under the daemon's run directory) besides
    /// `inner`, with the host's policy ([`Access::from_system`]).
    pub fn new(path: PathBuf, inner: Option<Box<dyn Publisher>>) -> Tee {
        Self::with_access(path, inner, Access::from_system())
    }

    /// [`Tee::new`] with a given policy.
    pub fn with_access(path: PathBuf, inner: Option<Box<dyn Publisher>>, access: Access) -> Tee {
        Tee { inner, path, access, server: None, failed: false }
    }

    fn ensure_bound(&mut self) {
        if self.server.is_some() || self.failed {
            return;
        }
        match SubscriptionServer::bind_with(&self.path, self.access.clone()) {
            Ok(srv) => self.server = Some(srv),
            Err(e) => {
                eprintln!("leocc probe: no subscription socket at {}: {e}", self.path.display());
                self.failed = true;
            }
        }
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

    fn start(&mut self) {
        self.ensure_bound();
        if let Some(p) = self.inner.as_mut() {
            p.start();
        }
    }

    fn wake_fd(&self) -> Option<RawFd> {
        self.server.as_ref().and_then(SubscriptionServer::listen_fd)
    }

    fn service(&mut self) {
        if let Some(srv) = self.server.as_mut() {
            srv.accept();
        }
    }

    fn state(&self) -> Option<serde_json::Value> {
        self.server.as_ref().and_then(|s| serde_json::to_value(s.stats()).ok())
    }

    fn publish(&mut self, s: &SignalUpdate) -> Result<(), String> {
        // The kernel first: it is what every LeoCC flow reads, and nothing the subscribers
        // do may come before it.
        let r = match self.inner.as_mut() {
            Some(p) => p.publish(s),
            None => Ok(()),
        };
        self.ensure_bound();
        if let Some(srv) = self.server.as_mut() {
            srv.send(s);
        }
        r
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

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("leocc-sub-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn root_only() -> Access {
        // SAFETY: geteuid has no preconditions.
        Access { group: None, owner: unsafe { libc::geteuid() } }
    }

    fn read_line(c: &UnixStream) -> String {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut line = String::new();
        BufReader::new(c).read_line(&mut line).unwrap();
        line
    }

    #[test]
    fn subscribers_get_the_current_state_then_updates_and_the_socket_is_private() {
        let dir = scratch("basic");
        let path = dir.join(SOCKET_NAME);
        let mut server = SubscriptionServer::bind_with(&path, root_only()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, SOCKET_MODE_OWNER, "no group: owner only");
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
        assert_eq!(server.stats().dropped, 1);
        drop(server);
        assert!(!path.exists(), "the socket file is removed on exit");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_group_policy_gives_mode_0660_and_admits_members_only() {
        let a = Access { group: Some(("leocc".into(), 4242)), owner: 0 };
        assert_eq!(a.mode(), 0o660);
        let peer = |uid, gid, groups: &[u32]| PeerCred { pid: 1, uid, gid, groups: groups.to_vec() };
        assert!(a.allows(&peer(0, 0, &[])), "root");
        assert!(a.allows(&peer(1000, 4242, &[])), "primary group");
        assert!(a.allows(&peer(1000, 1000, &[27, 4242])), "supplementary group");
        assert!(!a.allows(&peer(65534, 65534, &[])), "anyone else");
        let b = Access { group: None, owner: 0 };
        assert_eq!(b.mode(), 0o600);
        assert!(!b.allows(&peer(1000, 4242, &[4242])));
        assert!(b.allows(&peer(0, 0, &[])));
    }

    #[test]
    fn connections_past_the_cap_are_refused_and_taken_in_batches() {
        let dir = scratch("cap");
        let path = dir.join(SOCKET_NAME);
        let mut server = SubscriptionServer::bind_with(&path, root_only()).unwrap();
        server.send(&sample(1));
        let extra = 5;
        let conns: Vec<UnixStream> = (0..MAX_SUBSCRIBERS + extra).map(|_| UnixStream::connect(&path).unwrap()).collect();
        // Accepting without a publish (the daemon's loop does this when the listener is readable).
        assert!(server.listen_fd().is_some());
        server.accept();
        assert_eq!(server.subscribers(), ACCEPT_BATCH.min(MAX_SUBSCRIBERS), "one batch per call");
        for _ in 0..(MAX_SUBSCRIBERS + extra) / ACCEPT_BATCH + 1 {
            server.accept();
        }
        let st = server.stats();
        assert_eq!((st.count, st.max, st.refused_full), (MAX_SUBSCRIBERS, MAX_SUBSCRIBERS, extra as u64), "{st:?}");
        assert_eq!(parse_line(&read_line(&conns[0])).unwrap().seq, 1, "admitted subscribers get the state at once");
        let refused = parse_line(&read_line(&conns[MAX_SUBSCRIBERS])).unwrap_err();
        assert!(refused.contains("the daemon refused") && refused.contains("subscribers already connected"), "{refused}");
        drop(conns);
        server.send(&sample(2));
        assert_eq!(server.subscribers(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_subscriber_that_never_reads_is_dropped_without_blocking_the_publisher() {
        let dir = scratch("slow");
        let path = dir.join(SOCKET_NAME);
        let mut server = SubscriptionServer::bind_with(&path, root_only()).unwrap();
        let _silent = UnixStream::connect(&path).unwrap();
        server.accept();
        assert_eq!(server.subscribers(), 1);
        let t0 = Instant::now();
        // ~2.4 MB of lines: far beyond a Unix socket's send buffer (~200 kB).
        for seq in 0..20_000 {
            server.send(&sample(seq));
        }
        assert_eq!(server.subscribers(), 0, "dropped once its buffer filled");
        assert_eq!(server.stats().dropped, 1);
        assert!(t0.elapsed() < Duration::from_secs(5), "publishing never waited on it: {:?}", t0.elapsed());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Forks a child that becomes `uid`, connects to `path` and waits to be killed; returns
    /// its pid and whether the connect succeeded (or its errno).
    fn connect_as(uid: u32, path: &Path) -> (libc::pid_t, Result<(), i32>) {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: an all-zero sockaddr_un is valid; the path fits (checked).
        let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let b = path.as_os_str().as_bytes();
        assert!(b.len() < sa.sun_path.len());
        for (d, s) in sa.sun_path.iter_mut().zip(b) {
            *d = *s as libc::c_char;
        }
        let mut fds = [0; 2];
        // SAFETY: pipe fills two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child only makes raw system calls (no allocation, no locks) and ends
        // with _exit or is killed by the parent.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                close_inherited(fds[1]);
                let status: i32 = if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(uid) != 0 || libc::setuid(uid) != 0 {
                    -1
                } else {
                    let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                    if libc::connect(s, (&sa as *const libc::sockaddr_un).cast(), len) == 0 {
                        0
                    } else {
                        *libc::__errno_location()
                    }
                };
                libc::write(fds[1], (&status as *const i32).cast(), 4);
                loop {
                    libc::pause();
                }
            }
        }
        let mut status = 0i32;
        // SAFETY: reads 4 bytes into `status`.
        let n = unsafe { libc::read(fds[0], (&mut status as *mut i32).cast(), 4) };
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        assert_eq!(n, 4);
        assert_ne!(status, -1, "the child could not become uid {uid}");
        (pid, if status == 0 { Ok(()) } else { Err(status) })
    }

    /// In a forked child: closes every descriptor but stdio and `keep`. The child inherits
    /// the sockets that tests on other threads hold; kept open here until the child is killed,
    /// their peers would never see them close (a flaky failure of the cap test).
    ///
    /// # Safety
    /// Only raw system calls, so it is safe after fork in a multithreaded process.
    unsafe fn close_inherited(keep: i32) {
        let all = libc::c_uint::MAX;
        let keep = keep as libc::c_uint;
        unsafe {
            if keep > 3 {
                libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, keep - 1, 0 as libc::c_uint);
            }
            libc::syscall(libc::SYS_close_range, keep + 1, all, 0 as libc::c_uint);
        }
    }

    fn kill(pid: libc::pid_t) {
        // SAFETY: our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }

    #[test]
    fn other_users_are_kept_out_by_the_mode_and_by_their_credentials() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("SKIP other_users_are_kept_out_by_the_mode_and_by_their_credentials: needs root to become nobody");
            return;
        }
        const NOBODY: u32 = 65534;
        let dir = scratch("cred");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.join(SOCKET_NAME);
        let mut server = SubscriptionServer::bind_with(&path, root_only()).unwrap();
        let (pid, r) = connect_as(NOBODY, &path);
        kill(pid);
        assert_eq!(r, Err(libc::EACCES), "mode 0600 keeps nobody out");
        // A socket loosened by hand: the credential check still refuses.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let (pid, r) = connect_as(NOBODY, &path);
        assert_eq!(r, Ok(()));
        server.accept();
        kill(pid);
        let st = server.stats();
        assert_eq!((st.count, st.refused_credentials), (0, 1), "{st:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
