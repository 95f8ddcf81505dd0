//! Throw-away test networks: a pair of network namespaces joined by an unshaped veth, with
//! iperf3 at both ends. Used by the integration tests and `leocc kernel bench`. Everything
//! created is removed when the [`NetnsPair`] (and each [`Iperf3Server`]) is dropped, also
//! when a test fails half way.

use std::io;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Client-side address on the veth.
pub const CLIENT_ADDR: &str = "10.77.0.1";
/// Server-side address on the veth.
pub const SERVER_ADDR: &str = "10.77.0.2";
/// Client-side IPv6 address on the veth (unique local).
pub const CLIENT_ADDR6: &str = "fd77::1";
/// Server-side IPv6 address on the veth.
pub const SERVER_ADDR6: &str = "fd77::2";
/// How long an iperf3 server gets to start listening.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(5);

static NEXT_PAIR: AtomicU32 = AtomicU32::new(0);

/// Lock file that serializes everything touching the one global "leocc" registration.
pub const GLOBAL_LOCK: &str = "/tmp/leocc-kernel-tests.lock";

/// An exclusive hold on [`GLOBAL_LOCK`], released on drop. Tests (of any crate) and
/// benchmarks that load or unload leocc take it first: cargo runs tests in parallel, and
/// one test's unload would pull leocc from under another's transfer.
pub struct GlobalLock {
    _file: std::fs::File,
}

impl GlobalLock {
    /// Blocks until the lock is ours.
    pub fn acquire() -> io::Result<GlobalLock> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::create(GLOBAL_LOCK)?;
        // SAFETY: flock on a descriptor we own; the lock goes with the descriptor.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(GlobalLock { _file: file })
    }
}

/// A test's exclusive use of the global "leocc": holds [`GlobalLock`] and unloads leocc when
/// the test ends, however it ends.
pub struct Exclusive {
    _lock: GlobalLock,
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        let _ = crate::loader::unload();
    }
}

/// Takes the kernel for `test`, with leocc unloaded; None (after printing why the test is
/// skipped) when the BPF program was not built, we are not root, or one of `tools` is missing.
pub fn exclusive(test: &str, tools: &[&str]) -> Option<Exclusive> {
    if let Some(reason) = crate::missing_bpf_reason() {
        eprintln!("SKIP {test}: built without the BPF program: {reason}");
        return None;
    }
    if !crate::is_root() {
        eprintln!("SKIP {test}: needs root (BPF, network namespaces)");
        return None;
    }
    for tool in tools {
        let found = Command::new(tool).arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
        if !found {
            eprintln!("SKIP {test}: {tool} is not installed (scripts/setup.sh installs it)");
            return None;
        }
    }
    let lock = GlobalLock::acquire().expect("global leocc lock");
    let _ = crate::loader::unload();
    Some(Exclusive { _lock: lock })
}

/// Which end of the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The sender (iperf3 client).
    Client,
    /// The receiver (iperf3 server).
    Server,
}

/// Two namespaces named uniquely for this process, joined by veth0 (client) -- veth1 (server).
pub struct NetnsPair {
    /// Client namespace name.
    pub client: String,
    /// Server namespace name.
    pub server: String,
}

fn run_checked(cmd: &mut Command) -> io::Result<Output> {
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out)
}

fn ip(args: &[&str]) -> io::Result<Output> {
    run_checked(Command::new("ip").args(args))
}

impl NetnsPair {
    /// Creates the namespaces and the veth; `tag` makes the names readable in `ip netns`.
    pub fn new(tag: &str) -> io::Result<NetnsPair> {
        let n = NEXT_PAIR.fetch_add(1, Ordering::Relaxed);
        let base = format!("lk-{}-{n}-{tag}", std::process::id());
        let pair = NetnsPair {
            client: format!("{base}-c"),
            server: format!("{base}-s"),
        };
        // From here on, Drop cleans up whatever part was made.
        ip(&["netns", "add", &pair.client])?;
        ip(&["netns", "add", &pair.server])?;
        ip(&[
            "-n", &pair.client, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1",
            "netns", &pair.server,
        ])?;
        for (ns, dev, addr, addr6) in [
            (&pair.client, "veth0", CLIENT_ADDR, CLIENT_ADDR6),
            (&pair.server, "veth1", SERVER_ADDR, SERVER_ADDR6),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            // nodad: usable at once, no duplicate address detection delay.
            ip(&["-n", ns, "addr", "add", &format!("{addr6}/64"), "dev", dev, "nodad"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(pair)
    }

    /// The namespace name of one side.
    pub fn ns(&self, side: Side) -> &str {
        match side {
            Side::Client => &self.client,
            Side::Server => &self.server,
        }
    }

    /// `program args` to run inside one side's namespace.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.ns(side), program]);
        c
    }

    /// `ss -tin` of the client side, filtered to the iperf3 data port.
    pub fn ss_client(&self, port: u16) -> io::Result<String> {
        let out = run_checked(self.command(Side::Client, "ss").args([
            "-tin",
            "state",
            "established",
            &format!("dport = :{port}"),
        ]))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// TCP segments received by one side so far (/proc/net/snmp Tcp InSegs of its netns):
    /// on the sender, that is the ACKs.
    pub fn tcp_in_segs(&self, side: Side) -> io::Result<u64> {
        let out = run_checked(self.command(side, "cat").arg("/proc/net/snmp"))?;
        parse_in_segs(&String::from_utf8_lossy(&out.stdout))
            .ok_or_else(|| io::Error::other("no Tcp InSegs in /proc/net/snmp"))
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        // Deleting a namespace deletes its veth end, and the peer with it.
        for ns in [&self.client, &self.server] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn parse_in_segs(snmp: &str) -> Option<u64> {
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let names = tcp.next()?;
    let values = tcp.next()?;
    let idx = names.split_whitespace().position(|n| n == "InSegs")?;
    values.split_whitespace().nth(idx)?.parse().ok()
}

/// An iperf3 server in the server namespace; killed on drop.
pub struct Iperf3Server {
    child: Child,
}

impl Iperf3Server {
    /// Starts `iperf3 -s -p port` and waits until it listens.
    pub fn start(pair: &NetnsPair, port: u16) -> io::Result<Iperf3Server> {
        Self::spawn_and_wait(pair, port, pair.command(Side::Server, "iperf3"))
    }

    fn spawn_and_wait(pair: &NetnsPair, port: u16, mut cmd: Command) -> io::Result<Iperf3Server> {
        let child = cmd
            .args(["-s", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io::Error::other(format!("starting iperf3 (apt-get install iperf3): {e}")))?;
        let server = Iperf3Server { child };
        let deadline = Instant::now() + LISTEN_TIMEOUT;
        loop {
            let out = run_checked(pair.command(Side::Server, "ss").args([
                "-tln",
                &format!("sport = :{port}"),
            ]))?;
            if String::from_utf8_lossy(&out.stdout).contains(&format!(":{port}")) {
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!("iperf3 server did not listen on {port}")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        // `ip netns exec` execs iperf3 in place, so this pid is iperf3 itself.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An iperf3 client run: `iperf3 -c SERVER -p port -C cc -t secs -P parallel -J`.
pub fn iperf3_client(pair: &NetnsPair, port: u16, cc: &str, secs: u32, parallel: u32) -> Command {
    iperf3_client_to(pair, SERVER_ADDR, port, cc, secs, parallel)
}

/// [`iperf3_client`] to another server address (e.g. [`SERVER_ADDR6`]).
pub fn iperf3_client_to(
    pair: &NetnsPair,
    server: &str,
    port: u16,
    cc: &str,
    secs: u32,
    parallel: u32,
) -> Command {
    let mut c = pair.command(Side::Client, "iperf3");
    c.args([
        "-c",
        server,
        "-p",
        &port.to_string(),
        "-C",
        cc,
        "-t",
        &secs.to_string(),
        "-P",
        &parallel.to_string(),
        "-J",
    ]);
    c
}

/// The parts of iperf3's JSON report we use.
#[derive(Clone, Debug, PartialEq)]
pub struct Iperf3Result {
    /// Bits per second the receiver got (all streams).
    pub received_bps: f64,
    /// Bytes the sender sent.
    pub sent_bytes: u64,
    /// Retransmitted segments.
    pub retransmits: u64,
    /// The congestion control iperf3 reports for the sender.
    pub sender_cc: String,
    /// CPU of the sending iperf3 process (user + system, getrusage), percent of the test.
    pub sender_cpu_pct: f64,
    /// The same for the receiving iperf3 process.
    pub receiver_cpu_pct: f64,
    /// Test duration, seconds (what the percentages refer to).
    pub seconds: f64,
}

/// Parses `iperf3 -J` output; an iperf3 error report becomes Err with its message.
pub fn parse_iperf3_json(text: &str) -> Result<Iperf3Result, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("iperf3 output is not JSON: {e}"))?;
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return Err(format!("iperf3: {err}"));
    }
    let end = v.get("end").ok_or("iperf3 JSON has no \"end\"")?;
    let num = |path: &[&str]| -> Result<f64, String> {
        path.iter()
            .try_fold(end, |node, k| node.get(k))
            .and_then(|x| x.as_f64())
            .ok_or_else(|| format!("iperf3 JSON has no end.{}", path.join(".")))
    };
    Ok(Iperf3Result {
        received_bps: num(&["sum_received", "bits_per_second"])?,
        sent_bytes: num(&["sum_sent", "bytes"])? as u64,
        retransmits: num(&["sum_sent", "retransmits"]).unwrap_or(0.0) as u64,
        sender_cc: end
            .get("sender_tcp_congestion")
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_string(),
        sender_cpu_pct: num(&["cpu_utilization_percent", "host_total"]).unwrap_or(0.0),
        receiver_cpu_pct: num(&["cpu_utilization_percent", "remote_total"]).unwrap_or(0.0),
        seconds: num(&["sum_sent", "seconds"]).unwrap_or(0.0),
    })
}

/// Runs an iperf3 client to completion and parses its report.
pub fn run_iperf3(
    pair: &NetnsPair,
    port: u16,
    cc: &str,
    secs: u32,
    parallel: u32,
) -> Result<Iperf3Result, String> {
    run_iperf3_with(pair, port, cc, secs, parallel, &[])
}

/// [`run_iperf3`] with extra iperf3 arguments (e.g. `-b 2000M`).
pub fn run_iperf3_with(
    pair: &NetnsPair,
    port: u16,
    cc: &str,
    secs: u32,
    parallel: u32,
    extra: &[&str],
) -> Result<Iperf3Result, String> {
    let out = iperf3_client(pair, port, cc, secs, parallel)
        .args(extra)
        .output()
        .map_err(|e| format!("running iperf3: {e}"))?;
    parse_iperf3_json(&String::from_utf8_lossy(&out.stdout))
}

/// A cgroup v2 made for one test: the option carrier attaches per cgroup, so putting a test's
/// sender and receiver processes in two of these gives each host its own role on one kernel.
pub use crate::cgroup::Cgroup as TestCgroup;

impl Iperf3Server {
    /// [`Iperf3Server::start`] with the server's process in `cgroup`.
    pub fn start_in(pair: &NetnsPair, port: u16, cgroup: &TestCgroup) -> io::Result<Iperf3Server> {
        let mut cmd = pair.command(Side::Server, "iperf3");
        cgroup.join(&mut cmd);
        Self::spawn_and_wait(pair, port, cmd)
    }
}

/// A scriptable TCP peer for the option carrier's tests (bpf/leocc_test_peer.bpf.c), attached
/// to one cgroup until dropped: it writes given raw option bytes into the SYN-ACKs and the
/// other segments of that cgroup's sockets, and counts leocc options it receives.
#[cfg(not(leocc_no_bpf))]
pub struct TestPeer {
    obj: libbpf_rs::Object,
    _link: libbpf_rs::Link,
}

/// What a [`TestPeer`] writes.
#[derive(Clone, Debug, Default)]
pub struct PeerScript {
    /// Raw option bytes for SYN-ACKs (empty: none).
    pub synack: Vec<u8>,
    /// Raw option bytes for every other segment (empty: none).
    pub ack: Vec<u8>,
    /// Offset in `ack` of a 16-bit big-endian field to bump on every segment (0: none).
    pub bump_at: u32,
}

/// What a [`TestPeer`] saw and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerSeen {
    /// Established segments received carrying leocc's kind and ExID.
    pub segments: u64,
    /// SYN-ACKs received carrying it.
    pub synacks: u64,
    /// Segments the peer wrote its `ack` bytes into.
    pub written: u64,
}

#[cfg(not(leocc_no_bpf))]
const TEST_PEER_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/leocc_test_peer.bpf.o"));
/// Longest option a [`TestPeer`] writes (PEER_MAX_OPT).
pub const PEER_MAX_OPT: usize = 16;

#[cfg(not(leocc_no_bpf))]
impl TestPeer {
    /// Loads the peer with `script` and attaches it to `cgroup`.
    pub fn attach(cgroup: &TestCgroup, script: &PeerScript) -> io::Result<TestPeer> {
        use libbpf_rs::{MapCore, MapFlags, ObjectBuilder};
        use std::os::fd::AsRawFd;
        let e = |what: &str, err: libbpf_rs::Error| io::Error::other(format!("test peer: {what}: {err}"));
        if script.synack.len() > PEER_MAX_OPT || script.ack.len() > PEER_MAX_OPT {
            return Err(io::Error::other("test peer: options are at most 16 bytes"));
        }
        let obj = ObjectBuilder::default()
            .open_memory(TEST_PEER_OBJ)
            .map_err(|x| e("open", x))?
            .load()
            .map_err(|x| e("load", x))?;
        // struct peer_cfg: synack[16], ack[16], synack_len, ack_len, bump_at, pad (u32 each).
        let mut cfg = [0u8; 2 * PEER_MAX_OPT + 16];
        cfg[..script.synack.len()].copy_from_slice(&script.synack);
        cfg[PEER_MAX_OPT..PEER_MAX_OPT + script.ack.len()].copy_from_slice(&script.ack);
        let lens = [script.synack.len() as u32, script.ack.len() as u32, script.bump_at, 0];
        for (i, v) in lens.iter().enumerate() {
            let at = 2 * PEER_MAX_OPT + 4 * i;
            cfg[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        }
        let map = obj
            .maps()
            .find(|m| m.name() == "peer_cfg")
            .ok_or_else(|| io::Error::other("test peer: no peer_cfg map"))?;
        map.update(&0u32.to_ne_bytes(), &cfg, MapFlags::ANY)
            .map_err(|x| e("configure", x))?;
        let dir = std::fs::File::open(&cgroup.path)?;
        let link = obj
            .progs_mut()
            .find(|p| p.name() == "leocc_test_peer")
            .ok_or_else(|| io::Error::other("test peer: no program"))?
            .attach_cgroup(dir.as_raw_fd())
            .map_err(|x| e("attach", x))?;
        Ok(TestPeer { obj, _link: link })
    }

    /// The peer's counters so far.
    pub fn seen(&self) -> io::Result<PeerSeen> {
        use libbpf_rs::{MapCore, MapFlags};
        let map = self
            .obj
            .maps()
            .find(|m| m.name() == "peer_seen")
            .ok_or_else(|| io::Error::other("test peer: no peer_seen map"))?;
        let get = |slot: u32| -> io::Result<u64> {
            let v = map
                .lookup(&slot.to_ne_bytes(), MapFlags::ANY)
                .map_err(|x| io::Error::other(format!("test peer: {x}")))?
                .unwrap_or_default();
            Ok(v.get(..8).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))))
        };
        Ok(PeerSeen {
            segments: get(0)?,
            synacks: get(1)?,
            written: get(2)?,
        })
    }
}

/// Without the BPF programs (see [`crate::missing_bpf_reason`]) there is no test peer.
#[cfg(leocc_no_bpf)]
pub struct TestPeer;

#[cfg(leocc_no_bpf)]
impl TestPeer {
    /// Always fails: this build carries no BPF object.
    pub fn attach(_cgroup: &TestCgroup, _script: &PeerScript) -> io::Result<TestPeer> {
        Err(io::Error::other("test peer: this build has no BPF programs"))
    }

    /// Always fails: this build carries no BPF object.
    pub fn seen(&self) -> io::Result<PeerSeen> {
        Err(io::Error::other("test peer: this build has no BPF programs"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_segs_is_read_by_column_name() {
        let snmp = "Ip: Forwarding\nIp: 1\nTcp: RtoAlgorithm RtoMin InSegs OutSegs\nTcp: 1 200 4242 17\n";
        assert_eq!(parse_in_segs(snmp), Some(4242));
        assert_eq!(parse_in_segs("Tcp: A B\n"), None);
    }

    #[test]
    fn iperf3_errors_and_results_parse() {
        assert_eq!(
            parse_iperf3_json(r#"{"error":"unable to set TCP_CONGESTION"}"#).unwrap_err(),
            "iperf3: unable to set TCP_CONGESTION"
        );
        let ok = r#"{"end":{"sum_sent":{"bytes":1000,"retransmits":2},
            "sum_received":{"bits_per_second":8e9},"sender_tcp_congestion":"leocc",
            "cpu_utilization_percent":{"host_total":42.5,"remote_total":10.0}}}"#;
        let r = parse_iperf3_json(ok).unwrap();
        assert_eq!(r.sender_cc, "leocc");
        assert_eq!(r.sent_bytes, 1000);
        assert_eq!(r.retransmits, 2);
        assert_eq!(r.receiver_cpu_pct, 10.0);
        assert!((r.received_bps - 8e9).abs() < 1.0);
        assert!(parse_iperf3_json("not json").is_err());
    }
}
