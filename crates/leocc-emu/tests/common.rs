//! Helpers shared by the root-only emulator tests: skipping, serialising, traces, and the
//! leftover check (no namespace, and so no device or process, of a test survives it).

#![allow(dead_code)]

use leocc_emu::emulator::{EmuConfig, Emulator, Side, Summary};
use leocc_trace::{Capacity, DelaySeries, Dir, DirTrace, Loss, Measured, Meta, Trace};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Heavy tests run one at a time: they measure throughput on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises a test; tolerant of a previous test's panic.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// True when we may create namespaces and TUN devices and have `tools`; prints why not.
pub fn can_run(test: &str, tools: &[&str]) -> bool {
    if let Err(e) = leocc_emu::shell::check_privileges() {
        eprintln!("SKIP {test}: {e}");
        return false;
    }
    for t in tools {
        if leocc_emu::shell::resolve_program(t).is_err() {
            eprintln!("SKIP {test}: {t} is not installed (scripts/setup.sh installs it)");
            return false;
        }
    }
    true
}

/// A trace with the same constant capacity and one-way delay series in both directions.
pub fn trace_with(times_us: Vec<u64>, period_us: u64, delay: DelaySeries) -> Trace {
    let dir = DirTrace { capacity: Some(Capacity::new(times_us, Some(period_us)).unwrap()), delay: Some(delay), loss: Loss::Constant(0.0) };
    Trace {
        meta: Meta { name: "test".into(), direction: Measured::Both, ..Meta::default() },
        up: dir.clone(),
        down: dir,
        reconfigurations: vec![],
        outages: vec![],
        terrestrial: None,
    }
}

/// Constant `mbps` (evenly spaced opportunities over 1 s) and constant one-way delay.
pub fn constant_trace(mbps: f64, delay_ms: u64) -> Trace {
    let gap = 1500.0 * 8.0 / mbps;
    let n = (1e6 / gap).round() as u64;
    let times = (1..=n).map(|i| ((i as f64 * gap).round() as u64).min(1_000_000)).collect();
    trace_with(times, 1_000_000, DelaySeries::constant(delay_ms * 1000))
}

/// Emulator configuration for a trace.
pub fn config(t: &Trace) -> EmuConfig {
    EmuConfig::new(t.link(Dir::Up), t.link(Dir::Down))
}

/// Identity of a test's namespaces, to check they are gone afterwards.
pub struct NsIds(Vec<(String, u64)>);

/// Records the names and inodes of an emulator's namespaces.
pub fn ns_ids(emu: &Emulator) -> NsIds {
    use std::os::unix::fs::MetadataExt;
    NsIds(
        [Side::Client, Side::Server]
            .iter()
            .map(|&s| {
                let name = emu.ns(s).name().to_string();
                let ino = std::fs::metadata(format!("/run/netns/{name}")).unwrap().ino();
                (name, ino)
            })
            .collect(),
    )
}

/// Asserts that the namespaces are deleted and no process remains inside them (a namespace
/// without a name or a process is destroyed by the kernel, and its TUN device with it).
pub fn assert_gone(ids: &NsIds) {
    for (name, ino) in &ids.0 {
        assert!(!Path::new(&format!("/run/netns/{name}")).exists(), "namespace {name} left behind");
        let needle = format!("net:[{ino}]");
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(link) = std::fs::read_link(e.path().join("ns/net")) {
                assert_ne!(link.to_string_lossy(), needle, "process {:?} still in namespace {name}", e.file_name());
            }
        }
    }
}

/// Stops the emulator and checks that nothing is left.
pub fn stop_and_check(emu: Emulator) -> Summary {
    let ids = ns_ids(&emu);
    let s = emu.stop();
    assert_gone(&ids);
    s
}

/// Waits until something listens on TCP `port` in the namespace of process `pid`.
pub fn wait_listening(pid: u32, port: u16) {
    let want = format!(":{port:04X} ");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        // iperf3 listens on a dual-stack IPv6 socket: look at both tables.
        let tcp = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default()
            + &std::fs::read_to_string(format!("/proc/{pid}/net/tcp6")).unwrap_or_default();
        if tcp.lines().any(|l| l.contains(&want) && l.split_whitespace().nth(3) == Some("0A")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on port {port} after 5 s");
}

/// A child process that is killed and reaped when dropped (also when a test panics).
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Result of one iperf3 run.
#[derive(Debug)]
pub struct Iperf {
    /// Receiver goodput, Mbit/s.
    pub mbps: f64,
    /// The kernel's minimum RTT of the connection (`ss` minrtt, mid-transfer), ms.
    pub min_rtt_ms: f64,
    /// iperf3's mean of the sender's smoothed RTT, ms.
    pub mean_rtt_ms: f64,
}

/// The first `minrtt:` of `ss -tin` in the client namespace (the iperf3 data connection).
fn kernel_min_rtt_ms(emu: &Emulator, port: u16) -> f64 {
    let out = emu.command(Side::Client, "ss").args(["-tin", "dport", &format!("= :{port}")]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix("minrtt:"))
        .filter_map(|v| v.parse::<f64>().ok())
        .fold(f64::NAN, f64::min)
}

/// Runs an iperf3 client (uplink: client -> server) with congestion control `cc`.
pub fn iperf(emu: &Emulator, cc: &str, port: u16, seconds: u32) -> Iperf {
    let server = KillOnDrop(emu.command(Side::Server, "iperf3").args(["-s", "-1", "-p", &port.to_string()]).stdout(std::process::Stdio::null()).spawn().unwrap());
    wait_listening(server.0.id(), port);
    let client = emu
        .command(Side::Client, "iperf3")
        .args(["-c", &leocc_emu::SERVER_ADDR.to_string(), "-p", &port.to_string(), "-t", &seconds.to_string(), "-C", cc, "-J"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(u64::from(seconds) / 2));
    let min_rtt_ms = kernel_min_rtt_ms(emu, port);
    let out = client.wait_with_output().unwrap();
    drop(server);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("iperf3 output: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    let end = &j["end"];
    Iperf {
        mbps: end["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6,
        min_rtt_ms,
        mean_rtt_ms: end["streams"][0]["sender"]["mean_rtt"].as_f64().unwrap_or(0.0) / 1000.0,
    }
}

/// The shared real traces, relative to the repository (../shared/traces/real from the root).
pub fn real_trace(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/real").join(name);
    p.exists().then_some(p)
}

/// Kernel congestion controls available.
pub fn available_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default()
}
