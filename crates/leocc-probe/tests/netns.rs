//! The daemon against a live PoP in a network namespace (root only; skips otherwise).
//!
//! Two namespaces joined by a veth pair: the client runs the real daemon (raw socket, poll
//! loop, validator, detector, log and state files); the "PoP" is the peer namespace's kernel
//! answering echoes. Outages are made by switching the PoP's `icmp_echo_ignore_all` on for a
//! known time. During every outage a spoofer in the PoP namespace watches the daemon's echo
//! requests and answers each one itself, with the right identifier and sequence but without
//! the cookie, plus a reply under a foreign identifier: a daemon that believed any of them
//! would see no gap and miss the outage.

use std::fs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use leocc_probe::daemon::{self, Options, PopSource};
use leocc_probe::detect::{DetectorConfig, Scoring};
use leocc_probe::icmp;
use leocc_probe::net::{mono_ns, parse_target};

const CLIENT_ADDR: &str = "100.64.77.2/24";
const POP_ADDR: &str = "100.64.77.1";
/// Outages made, ms: the paper's 45-120 ms range and a bit beyond.
const OUTAGES_MS: [u64; 4] = [60, 80, 100, 150];
const MS: u64 = 1_000_000;

/// The daemon's stop flag is process-wide (a signal handler sets it), so the tests that run
/// daemons take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, raw sockets)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("needs the `ip` tool (iproute2)".into()),
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Network namespaces, removed on drop.
struct Namespaces(Vec<String>);

impl Namespaces {
    fn add(&mut self, tag: &str) -> String {
        let name = format!("lp{}{tag}", std::process::id());
        ip(&["netns", "add", &name]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        self.0.push(name.clone());
        name
    }

    /// Joins `a` and `b` with a veth pair, addresses given with their prefix length; returns
    /// the device names on `a`'s and `b`'s side.
    fn link(&self, a: &str, a_addr: &str, b: &str, b_addr: &str) -> (String, String) {
        let (da, db) = (format!("v{}", rand_tag()), format!("w{}", rand_tag()));
        ip(&["link", "add", &da, "netns", a, "type", "veth", "peer", "name", &db, "netns", b]);
        ip(&["-n", a, "addr", "add", a_addr, "dev", &da]);
        ip(&["-n", b, "addr", "add", b_addr, "dev", &db]);
        ip(&["-n", a, "link", "set", &da, "up"]);
        ip(&["-n", b, "link", "set", &db, "up"]);
        (da, db)
    }
}

/// A short unique suffix for interface names (15 characters at most).
fn rand_tag() -> String {
    format!("{:x}", leocc_probe::discover::random_u64() & 0xffff_ffff)
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Two namespaces joined by a veth pair: the client and the PoP.
struct Lab {
    client: String,
    client_dev: String,
    pop: String,
    _ns: Namespaces,
}

impl Lab {
    fn new() -> Lab {
        let mut ns = Namespaces(Vec::new());
        let (client, pop) = (ns.add("c"), ns.add("p"));
        let (client_dev, _) = ns.link(&client, CLIENT_ADDR, &pop, &format!("{POP_ADDR}/24"));
        Lab { client, client_dev, pop, _ns: ns }
    }
}

/// Moves the calling thread into network namespace `ns`.
fn enter(ns: &str) {
    let f = fs::File::open(format!("/run/netns/{ns}")).expect("open netns");
    // SAFETY: setns on a namespace fd we own; affects only this thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {ns}: {}", std::io::Error::last_os_error());
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leocc-probe-netns-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn options(run_dir: &Path, log: &Path, duration_ns: Option<u64>) -> Options {
    Options {
        pop: PopSource::Fixed(parse_target(POP_ADDR).unwrap()),
        interval_ns: daemon::DEFAULT_INTERVAL_NS,
        // The paper's rule: this test is about the I/O path (validation, spoofing, reloads)
        // with outages in the first seconds, before the evidence scoring has statistics.
        detector: DetectorConfig { scoring: Scoring::Threshold, ..DetectorConfig::default() },
        log: Some(log.to_path_buf()),
        duration_ns,
        run_dir: run_dir.to_path_buf(),
        unreachable_after_ns: daemon::DEFAULT_UNREACHABLE_AFTER_NS,
        rediscover_after_ns: daemon::DEFAULT_REDISCOVER_AFTER_NS,
        verbose: false,
        metrics: None,
    }
}

/// A raw socket in the PoP namespace that sees the daemon's echo requests and forges replies.
struct Spoofer {
    fd: std::os::fd::OwnedFd,
}

impl Spoofer {
    fn new() -> Spoofer {
        // SAFETY: plain socket(2), owned at once.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, libc::IPPROTO_ICMP) };
        assert!(raw >= 0);
        // SAFETY: fresh descriptor.
        Spoofer { fd: unsafe { std::os::fd::FromRawFd::from_raw_fd(raw) } }
    }

    /// Answers every queued echo request with two forgeries; returns how many it sent.
    fn forge_pending(&self) -> u64 {
        let mut buf = [0u8; 1500];
        let mut sent = 0;
        loop {
            // SAFETY: buf is valid for its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n <= 0 {
                return sent;
            }
            let pkt = &buf[..n as usize];
            let Some(&first) = pkt.first() else { continue };
            let ihl = usize::from(first & 0x0f) * 4;
            if pkt.len() < ihl + 8 || pkt[ihl] != icmp::V4_ECHO_REQUEST {
                continue;
            }
            let id = u16::from_be_bytes([pkt[ihl + 4], pkt[ihl + 5]]);
            let seq = u16::from_be_bytes([pkt[ihl + 6], pkt[ihl + 7]]);
            let dst: [u8; 4] = pkt[12..16].try_into().unwrap();
            for (fid, payload) in [(id, [0u8; 8]), (id.wrapping_add(1), pkt[ihl + 8..].try_into().unwrap_or([0u8; 8]))] {
                let mut r = icmp::build_echo(false, fid, seq, &payload);
                r[0] = icmp::V4_ECHO_REPLY;
                r[2..4].copy_from_slice(&[0, 0]);
                let c = icmp::checksum(&r);
                r[2..4].copy_from_slice(&c.to_be_bytes());
                let sa = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: 0,
                    sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(dst) },
                    sin_zero: [0; 8],
                };
                // SAFETY: valid buffer and sockaddr_in of the stated size.
                let s = unsafe {
                    libc::sendto(
                        self.fd.as_raw_fd(),
                        r.as_ptr().cast(),
                        r.len(),
                        0,
                        (&sa as *const libc::sockaddr_in).cast(),
                        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                    )
                };
                if s > 0 {
                    sent += 1;
                }
            }
        }
    }
}

fn set_echo_ignore(on: bool) {
    // /proc/sys/net resolves to the network namespace of the calling thread.
    fs::write("/proc/sys/net/ipv4/icmp_echo_ignore_all", if on { "1" } else { "0" }).unwrap();
}

/// Runs in the PoP namespace: the outages (with spoofing during each), returns (on, off) times.
fn make_outages() -> (Vec<(u64, u64)>, u64) {
    let spoofer = Spoofer::new();
    let mut spans = Vec::new();
    let mut forged = 0;
    thread::sleep(Duration::from_millis(1000));
    for (i, len) in OUTAGES_MS.into_iter().enumerate() {
        if i == 2 {
            // A reload mid-run (re-resolve the PoP, reopen the log) must not disturb detection.
            // SAFETY: the daemon installed its SIGHUP handler before its first probe, a second ago.
            unsafe { libc::kill(libc::getpid(), libc::SIGHUP) };
        }
        spoofer.forge_pending(); // drop requests seen before the outage
        set_echo_ignore(true);
        let on = mono_ns();
        while mono_ns() < on + len * MS {
            forged += spoofer.forge_pending();
            thread::sleep(Duration::from_millis(1));
        }
        set_echo_ignore(false);
        spans.push((on, mono_ns()));
        thread::sleep(Duration::from_millis(700));
    }
    (spans, forged)
}

fn log_lines(log: &Path, kind: &str) -> Vec<serde_json::Value> {
    fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == kind)
        .collect()
}

fn events(log: &Path) -> Vec<serde_json::Value> {
    log_lines(log, "reconfig")
}

#[test]
fn daemon_detects_outages_and_ignores_forged_replies() {
    if let Some(why) = skip_reason() {
        println!("SKIP daemon_detects_outages_and_ignores_forged_replies: {why}");
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    let dir = tempdir("run");
    let log = dir.join("events.jsonl");
    let (client, pop) = (lab.client.clone(), lab.pop.clone());
    let opts = options(&dir, &log, Some(5_000 * MS));
    let d = thread::spawn(move || {
        enter(&client);
        daemon::run(opts, None)
    });
    let o = thread::spawn(move || {
        enter(&pop);
        make_outages()
    });
    let (spans, forged) = o.join().unwrap();
    let summary = d.join().unwrap().expect("daemon run");
    assert!(forged > 0, "the spoofer saw and answered probes");
    assert!(summary.replies > 300, "{summary:?}");

    let ev = events(&log);
    assert_eq!(ev.len(), OUTAGES_MS.len(), "one event per outage, nothing else: {ev:#?}");
    assert_eq!(log_lines(&log, "reload").len(), 1, "SIGHUP was handled as a reload");
    for ((on, off), e) in spans.iter().zip(&ev) {
        let start = (e["t_mono_ms"].as_f64().unwrap() * 1e6) as u64;
        let detect = (e["detect_mono_ms"].as_f64().unwrap() * 1e6) as u64;
        // The last reply before the gap answers a probe sent at most one interval before.
        assert!(start + 60 * MS >= *on && start <= on + 2 * MS, "start {start} vs outage {on}..{off}");
        // The first probe after the outage is answered within an interval (plus slack for a
        // loaded machine).
        assert!(detect >= *off && detect <= off + 150 * MS, "detect {detect} vs outage end {off}");
    }
    let state: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("probe.state.json")).unwrap()).unwrap();
    assert!(state["rejected"]["bad_cookie"].as_u64().unwrap() > 0, "{state:#}");
    assert!(state["rejected"]["foreign_id"].as_u64().unwrap() > 0, "{state:#}");
    assert_eq!(state["counters"]["events"], OUTAGES_MS.len());
    assert!(!dir.join("probe.pid").exists(), "pid file removed at exit");

    // A daemon without --duration stops cleanly on SIGTERM.
    let log2 = dir.join("events2.jsonl");
    let opts = options(&dir, &log2, None);
    let client = lab.client.clone();
    let d = thread::spawn(move || {
        enter(&client);
        daemon::run(opts, None)
    });
    let state_file = dir.join("probe.state.json");
    let before = fs::metadata(&state_file).unwrap().modified().unwrap();
    let t0 = mono_ns();
    while fs::metadata(&state_file).unwrap().modified().unwrap() == before {
        assert!(mono_ns() < t0 + 5_000 * MS, "second daemon never wrote its state");
        thread::sleep(Duration::from_millis(20));
    }
    assert!(dir.join("probe.pid").exists());
    // The interface goes down and up again: sends fail for a while, the daemon carries on.
    ip(&["-n", &lab.client, "link", "set", &lab.client_dev, "down"]);
    thread::sleep(Duration::from_millis(500));
    ip(&["-n", &lab.client, "link", "set", &lab.client_dev, "up"]);
    thread::sleep(Duration::from_millis(2500));
    let state: serde_json::Value = serde_json::from_slice(&fs::read(&state_file).unwrap()).unwrap();
    assert!(state["send_errors"].as_u64().unwrap() > 0, "{state:#}");
    assert!(state["last_reply_age_ms"].as_f64().unwrap() < 1000.0, "replies flow again: {state:#}");
    assert_eq!(state["reachable"], true, "{state:#}");
    assert!(events(&log2).is_empty(), "our own send failures are not an outage: {:#?}", events(&log2));
    // SAFETY: the daemon installed its SIGTERM handler before writing state; kill(getpid)
    // delivers it to the process, whichever thread runs the handler only sets a flag.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    let s = d.join().unwrap().expect("clean exit");
    assert!(s.replies > 0);
    assert!(!dir.join("probe.pid").exists());
    fs::remove_dir_all(&dir).unwrap();
}

/// host --192.168.1.0/24-- terminal --100.64.0.0/24-- PoP --198.18.0.0/24-- destination.
/// Returns the namespaces (host, terminal, PoP, destination, then the terminal's and the PoP's
/// devices on their shared link).
fn terminal_path() -> (Namespaces, Vec<String>) {
    let mut ns = Namespaces(Vec::new());
    let (host, term, pop, dest) = (ns.add("h"), ns.add("t"), ns.add("g"), ns.add("d"));
    ns.link(&host, "192.168.1.2/24", &term, "192.168.1.1/24");
    let (term_dev, pop_dev) = ns.link(&term, "100.64.0.2/24", &pop, "100.64.0.1/24");
    ns.link(&pop, "198.18.0.1/24", &dest, "198.18.0.2/24");
    ip(&["-n", &host, "route", "add", "default", "via", "192.168.1.1"]);
    ip(&["-n", &term, "route", "add", "default", "via", "100.64.0.1"]);
    ip(&["-n", &pop, "route", "add", "192.168.1.0/24", "via", "100.64.0.2"]);
    ip(&["-n", &dest, "route", "add", "default", "via", "198.18.0.1"]);
    for r in [&term, &pop] {
        let out = Command::new("ip").args(["netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"]).output().unwrap();
        assert!(out.status.success());
    }
    (ns, vec![host, term, pop, dest, term_dev, pop_dev])
}

#[test]
fn silent_pop_is_rediscovered_at_its_new_address() {
    if let Some(why) = skip_reason() {
        println!("SKIP silent_pop_is_rediscovered_at_its_new_address: {why}");
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_ns, p) = terminal_path();
    let (host, term, pop, term_dev, pop_dev) = (p[0].clone(), p[1].clone(), p[2].clone(), p[4].clone(), p[5].clone());
    let dir = tempdir("rediscover");
    let log = dir.join("events.jsonl");
    let mut opts = options(&dir, &log, Some(6_000 * MS));
    opts.pop = PopSource::Auto {
        dest: parse_target("198.18.0.2").unwrap(),
        prefixes: vec![leocc_probe::discover::DEFAULT_PREFIX.parse().unwrap()],
    };
    opts.unreachable_after_ns = 500 * MS;
    opts.rediscover_after_ns = 1_500 * MS;
    let d = thread::spawn(move || {
        enter(&host);
        daemon::run(opts, None)
    });
    thread::sleep(Duration::from_millis(1500));
    // The PoP moves to another address: the old one stops answering.
    ip(&["-n", &term, "addr", "flush", "dev", &term_dev]);
    ip(&["-n", &pop, "addr", "flush", "dev", &pop_dev]);
    ip(&["-n", &term, "addr", "add", "100.64.1.2/24", "dev", &term_dev]);
    ip(&["-n", &pop, "addr", "add", "100.64.1.1/24", "dev", &pop_dev]);
    ip(&["-n", &term, "route", "replace", "default", "via", "100.64.1.1"]);
    ip(&["-n", &pop, "route", "replace", "192.168.1.0/24", "via", "100.64.1.2"]);
    let summary = d.join().unwrap().expect("daemon run");
    let changed = log_lines(&log, "pop_changed");
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!((changed[0]["from"].as_str(), changed[0]["to"].as_str()), (Some("100.64.0.1"), Some("100.64.1.1")));
    assert_eq!(log_lines(&log, "pop_unreachable").len(), 1);
    assert_eq!(log_lines(&log, "pop_reachable").len(), 1, "replies resumed from the new PoP");
    assert!(events(&log).is_empty(), "the silence is not a reconfiguration: {:?}", events(&log));
    let state: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("probe.state.json")).unwrap()).unwrap();
    assert_eq!(state["pop"], "100.64.1.1");
    assert!(summary.replies > 150, "{summary:?}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn auto_discovery_finds_the_cgnat_hop_behind_the_terminal() {
    if let Some(why) = skip_reason() {
        println!("SKIP auto_discovery_finds_the_cgnat_hop_behind_the_terminal: {why}");
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_ns, path) = terminal_path();
    let (host, _term, _pop, _dest) = (path[0].clone(), path[1].clone(), path[2].clone(), path[3].clone());
    let dir = tempdir("auto");
    let log = dir.join("events.jsonl");
    let mut opts = options(&dir, &log, Some(1_000 * MS));
    opts.pop = PopSource::Auto {
        dest: parse_target("198.18.0.2").unwrap(),
        prefixes: vec![leocc_probe::discover::DEFAULT_PREFIX.parse().unwrap()],
    };
    let h = host.clone();
    let (found, summary) = thread::spawn(move || {
        enter(&h);
        let (pop, hops) = leocc_probe::discover::discover(parse_target("198.18.0.2").unwrap(), &[leocc_probe::discover::DEFAULT_PREFIX.parse().unwrap()], 8).expect("discover");
        (pop.addr.to_string() + &format!(" after {} hops", hops.len()), daemon::run(opts, None))
    })
    .join()
    .unwrap();
    assert_eq!(found, "100.64.0.1 after 2 hops");
    let summary = summary.expect("daemon with --auto");
    assert!(summary.replies > 50, "{summary:?}");
    let state: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("probe.state.json")).unwrap()).unwrap();
    assert_eq!(state["pop"], "100.64.0.1");
    // Without a hop in the prefixes, discovery fails with a message naming the hops seen.
    let h = host.clone();
    let err = thread::spawn(move || {
        enter(&h);
        leocc_probe::discover::discover(parse_target("198.18.0.2").unwrap(), &["10.0.0.0/8".parse().unwrap()], 8).unwrap_err().to_string()
    })
    .join()
    .unwrap();
    assert!(err.contains("1:192.168.1.1 2:100.64.0.1 3:198.18.0.2"), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ipv6_pop_by_global_and_link_local_address() {
    if let Some(why) = skip_reason() {
        println!("SKIP ipv6_pop_by_global_and_link_local_address: {why}");
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut ns = Namespaces(Vec::new());
    let (client, pop) = (ns.add("6c"), ns.add("6p"));
    for n in [&client, &pop] {
        // No duplicate address detection: addresses (and neighbour discovery) work at once.
        let out = Command::new("ip")
            .args(["netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let (dev, _) = ns.link(&client, "fd00:64::2/64", &pop, "fd00:64::1/64");
    // The kernel assigns the link-local address shortly after the link comes up.
    let t0 = mono_ns();
    let ll = loop {
        let out = Command::new("ip").args(["-n", &pop, "-6", "-o", "addr", "show", "scope", "link"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(w) = text.split_whitespace().find(|w| w.starts_with("fe80::")) {
            break w.split('/').next().unwrap().to_string();
        }
        assert!(mono_ns() < t0 + 3_000 * MS, "no link-local address on the PoP side");
        thread::sleep(Duration::from_millis(50));
    };
    let dir = tempdir("v6");
    for pop_addr in ["fd00:64::1".to_string(), format!("{ll}%{dev}")] {
        let log = dir.join("events.jsonl");
        let c = client.clone();
        let dev_target = pop_addr.clone();
        let d = dir.clone();
        let summary = thread::spawn(move || {
            enter(&c);
            let mut opts = options(&d, &log, Some(2_000 * MS));
            opts.pop = PopSource::Fixed(parse_target(&dev_target).expect("target"));
            daemon::run(opts, None)
        })
        .join()
        .unwrap()
        .expect("daemon run");
        assert!(summary.replies > 150, "{pop_addr}: {summary:?}");
        assert_eq!(summary.events, 0, "{pop_addr}: {summary:?}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// Stands in for the kernel map: records when each signal was published (CLOCK_MONOTONIC).
struct Recorder(std::sync::Arc<Mutex<Vec<(u64, daemon::SignalUpdate)>>>);

impl daemon::Publisher for Recorder {
    fn describe(&self) -> String {
        "recorder".into()
    }
    fn current_seq(&mut self) -> Option<u64> {
        None
    }
    fn publish(&mut self, s: &daemon::SignalUpdate) -> Result<(), String> {
        self.0.lock().unwrap().push((mono_ns(), *s));
        Ok(())
    }
}

/// A forked child that became `uid` and opened connections to a Unix socket, holding them
/// without ever reading; killed (and reaped) on drop.
struct Flood {
    pid: libc::pid_t,
}

impl Flood {
    /// Opens `n` connections to `path` as `uid`; returns the child, how many connected and
    /// the errno of the first failure (0: none).
    fn start(uid: u32, path: &Path, n: u32) -> (Flood, u32, i32) {
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
        // SAFETY: the child makes raw system calls only (no allocation or locks, which another
        // thread may have held at the fork) and never returns: it waits to be killed.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            unsafe {
                let want = libc::rlim_t::from(n) + 64;
                let lim = libc::rlimit { rlim_cur: want, rlim_max: want };
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                let mut report = [0i32, 0i32];
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(uid) != 0 || libc::setuid(uid) != 0 {
                    report[1] = -1;
                } else {
                    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                    for _ in 0..n {
                        let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                        if s < 0 {
                            report[1] = *libc::__errno_location();
                            break;
                        }
                        if libc::connect(s, (&sa as *const libc::sockaddr_un).cast(), len) == 0 {
                            report[0] += 1;
                        } else {
                            if report[1] == 0 {
                                report[1] = *libc::__errno_location();
                            }
                            libc::close(s);
                        }
                    }
                }
                libc::write(fds[1], report.as_ptr().cast(), 8);
                loop {
                    libc::pause();
                }
            }
        }
        let mut report = [0i32; 2];
        // SAFETY: reads 8 bytes into `report`; the child writes them once.
        let got = unsafe { libc::read(fds[0], report.as_mut_ptr().cast(), 8) };
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        let flood = Flood { pid };
        assert_eq!(got, 8, "the flooding child reported");
        assert_ne!(report[1], -1, "the child could not become uid {uid}");
        (flood, report[0] as u32, report[1])
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        // SAFETY: our own child.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// Reads lines from a subscription in a thread, stamping each with CLOCK_MONOTONIC.
fn collect_lines(s: std::os::unix::net::UnixStream) -> std::sync::Arc<Mutex<Vec<(u64, String)>>> {
    use std::io::BufRead;
    let out = std::sync::Arc::new(Mutex::new(Vec::new()));
    let o = out.clone();
    thread::spawn(move || {
        let mut r = std::io::BufReader::new(s);
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => o.lock().unwrap().push((mono_ns(), line)),
            }
        }
    });
    out
}

fn state_of(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(dir.join("probe.state.json")).unwrap_or_default()).unwrap_or(serde_json::Value::Null)
}

/// Issue 34: local users connecting to events.sock must neither silence the detector (the
/// kernel signal and the state file keep being updated) nor lock a legitimate subscriber out
/// of its events. 2,000 connections by `nobody` are refused by the socket's mode; 2,000 by
/// root, none of them reading, fill the subscriber cap and no more; through both, every event
/// reaches the signal sink within one probe interval of its detection, the sink is refreshed
/// at the publish period, a subscriber connected before the flood gets every event, and a new
/// subscriber is served at once even while no reply (hence no publish) comes.
#[test]
fn hostile_subscribers_neither_silence_the_signal_nor_starve_subscribers() {
    use leocc_probe::subscribe::{self, MAX_SUBSCRIBERS};
    use std::os::unix::fs::PermissionsExt;
    if let Some(why) = skip_reason() {
        println!("SKIP hostile_subscribers_neither_silence_the_signal_nor_starve_subscribers: {why}");
        return;
    }
    const NOBODY: u32 = 65534;
    /// Hostile connections per flood: above the cap, bounded so the test stays cheap.
    const HOSTILE: u32 = 2_000;
    /// Outages: two short ones while the flood holds, then one long enough to show that a
    /// subscriber is accepted while the PoP is silent and the daemon publishes nothing.
    const SHORT_AT_MS: [u64; 2] = [2_500, 3_500];
    const SHORT_MS: u64 = 100;
    const LONG_AT_MS: u64 = 5_000;
    const LONG_MS: u64 = 800;
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    let dir = tempdir("hostile");
    // The run directory as the daemon's default one: searchable by everyone.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let log = dir.join("events.jsonl");
    let sock = dir.join(subscribe::SOCKET_NAME);
    let record = std::sync::Arc::new(Mutex::new(Vec::new()));
    let t0 = mono_ns();
    let opts = options(&dir, &log, Some(6_500 * MS));
    let (client, rec, s) = (lab.client.clone(), record.clone(), sock.clone());
    let d = thread::spawn(move || {
        enter(&client);
        let publisher: Box<dyn daemon::Publisher> = Box::new(subscribe::Tee::new(s, Some(Box::new(Recorder(rec)))));
        daemon::run(opts, Some(publisher))
    });
    let pop = lab.pop.clone();
    let o = thread::spawn(move || {
        enter(&pop);
        let mut spans = Vec::new();
        for (at, len) in SHORT_AT_MS.iter().map(|&a| (a, SHORT_MS)).chain([(LONG_AT_MS, LONG_MS)]) {
            thread::sleep(Duration::from_nanos((t0 + at * MS).saturating_sub(mono_ns())));
            set_echo_ignore(true);
            let on = mono_ns();
            thread::sleep(Duration::from_millis(len));
            set_echo_ignore(false);
            spans.push((on, mono_ns()));
        }
        spans
    });
    // The socket exists before the first reply (bound at start).
    while !sock.exists() {
        assert!(mono_ns() < t0 + 2_000 * MS, "the daemon never bound {}", sock.display());
        thread::sleep(Duration::from_millis(5));
    }
    let mode = fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert!(mode == subscribe::SOCKET_MODE_OWNER || mode == subscribe::SOCKET_MODE_GROUP, "mode {mode:o}");
    let early = collect_lines(std::os::unix::net::UnixStream::connect(&sock).unwrap());

    let (_nobody, connected, errno) = Flood::start(NOBODY, &sock, HOSTILE);
    assert_eq!((connected, errno), (0, libc::EACCES), "nobody cannot connect at all");
    let flood_t = mono_ns();
    let (root_flood, connected, errno) = Flood::start(0, &sock, HOSTILE);
    let flood_ms = (mono_ns() - flood_t) as f64 / 1e6;
    assert_eq!((connected, errno), (HOSTILE, 0), "root's connections are all taken (served or refused)");
    assert!(mono_ns() < t0 + SHORT_AT_MS[0] * MS, "the flood took too long ({flood_ms:.0} ms) for the schedule");
    // A newcomer while the cap is full is told so.
    let mut late = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    late.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut refusal = String::new();
    std::io::Read::read_to_string(&mut late, &mut refusal).unwrap();
    let why = subscribe::parse_line(&refusal).unwrap_err();
    assert!(why.contains("subscribers already connected"), "{why}");
    // The state file shows the cap held.
    let mut st = state_of(&dir);
    while st["subscribers"]["refused_full"].as_u64().unwrap_or(0) == 0 {
        assert!(mono_ns() < t0 + SHORT_AT_MS[1] * MS, "no state with the flood: {st:#}");
        thread::sleep(Duration::from_millis(50));
        st = state_of(&dir);
    }
    assert_eq!(st["subscribers"]["count"], MAX_SUBSCRIBERS, "{st:#}");
    assert_eq!(st["subscribers"]["max"], MAX_SUBSCRIBERS, "{st:#}");
    // The flood ends before the long outage: its subscribers are dropped at the next publish.
    thread::sleep(Duration::from_nanos((t0 + (SHORT_AT_MS[1] + 500) * MS).saturating_sub(mono_ns())));
    drop(root_flood);
    // Connect while the PoP is silent: the daemon publishes nothing until it answers again.
    thread::sleep(Duration::from_nanos((t0 + (LONG_AT_MS + 150) * MS).saturating_sub(mono_ns())));
    let joined = mono_ns();
    let quiet = collect_lines(std::os::unix::net::UnixStream::connect(&sock).unwrap());

    let spans = o.join().unwrap();
    let summary = d.join().unwrap().expect("daemon run");
    assert!(summary.replies > 300, "{summary:?}");
    let ev = events(&log);
    assert_eq!(ev.len(), spans.len(), "one event per outage: {ev:#?}");
    let record = record.lock().unwrap().clone();
    // Every event reached the sink within one probe interval of its detection.
    for (k, e) in ev.iter().enumerate() {
        let detect = (e["detect_mono_ms"].as_f64().unwrap() * 1e6) as u64;
        let (at, _) = record.iter().find(|(_, s)| s.seq == k as u64 + 1).unwrap_or_else(|| panic!("event {} never published", k + 1));
        let lag = at.saturating_sub(detect);
        println!("event {}: published {:.3} ms after its detection", k + 1, lag as f64 / 1e6);
        assert!(lag <= daemon::DEFAULT_INTERVAL_NS, "event {} published {lag} ns after detection", k + 1);
    }
    // And the sink was refreshed all along, flood or not (outside the outages, where no reply
    // means nothing new to publish).
    let in_outage = |a: u64, b: u64| spans.iter().any(|&(on, off)| a < off + 20 * MS && b + 20 * MS > on);
    let gaps: Vec<u64> = record.windows(2).filter(|w| !in_outage(w[0].0, w[1].0)).map(|w| w[1].0 - w[0].0).collect();
    let worst = gaps.iter().copied().max().unwrap_or(0);
    println!("flood of {HOSTILE} connections took {flood_ms:.0} ms; {} publishes, worst gap outside outages {:.1} ms", record.len(), worst as f64 / 1e6);
    assert!(worst < 250 * MS, "the signal went stale for {:.0} ms", worst as f64 / 1e6);
    // Every reply is published: its RTT is one sample of LeoCC's path range.
    assert!(record.len() as u64 * 10 >= summary.replies * 9, "{} publishes for {} replies", record.len(), summary.replies);
    // The subscriber from before the flood saw every event.
    let seqs: Vec<u64> = early.lock().unwrap().iter().filter_map(|(_, l)| subscribe::parse_line(l).ok()).map(|s| s.seq).collect();
    for k in 1..=ev.len() as u64 {
        assert!(seqs.contains(&k), "the early subscriber missed event {k}: {seqs:?}");
    }
    // The subscriber that joined during the silence got the state at once, not when the PoP
    // answered again.
    let first = quiet.lock().unwrap().first().map(|(t, _)| *t).expect("the quiet subscriber got nothing");
    let (_, long_off) = spans[spans.len() - 1];
    println!("joined during the silence: first line after {:.1} ms (the PoP answered again {:.0} ms after joining)", (first - joined) as f64 / 1e6, long_off.saturating_sub(joined) as f64 / 1e6);
    assert!(first < long_off && first - joined < 400 * MS, "first line {:.0} ms after connecting", (first - joined) as f64 / 1e6);
    let st = state_of(&dir);
    assert!(st["subscribers"]["refused_full"].as_u64().unwrap() >= u64::from(HOSTILE) - MAX_SUBSCRIBERS as u64, "{st:#}");
    assert_eq!(st["recent_events"].as_array().map(Vec::len), Some(ev.len()), "the state file has every event");
    fs::remove_dir_all(&dir).unwrap();
}
