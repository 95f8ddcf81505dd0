//! `leocc quic serve|get` and the detector's subscription socket through the command line;
//! QUIC flows through the emulator (`leocc emu-run --flows quic:...`). Root-only parts skip
//! otherwise.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_leocc");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn scratch(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leocc-quic-cli-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts `leocc quic serve ARGS` without a detector on a free loopback port, writing its
/// certificate to `cert`, and waits (up to 5 s) until the certificate exists; returns the
/// server and its port.
fn serve(args: &[&str], cert: &Path, stderr: Stdio) -> (std::process::Child, u16) {
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Command::new(BIN)
        .args(["quic", "serve"])
        .args(args)
        .args(["--events", "none", "--listen", &format!("127.0.0.1:{port}"), "--cert"])
        .arg(cert)
        .stderr(stderr)
        .spawn()
        .unwrap();
    for _ in 0..500 {
        if cert.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (server, port)
}

#[test]
fn serve_and_get_over_loopback_print_iperf3_like_json() {
    let dir = scratch("loop");
    let cert = dir.join("cert.der");
    let (server, port) = serve(&["--once", "--cc", "leocc"], &cert, Stdio::piped());
    let o = Command::new(BIN)
        .args(["quic", "get", &format!("127.0.0.1:{port}"), "-J", "-n", "5000000", "-i", "0.05", "--cert"])
        .arg(&cert)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["end"]["sum_received"]["bytes"], 5_000_000);
    assert_eq!(v["end"]["sender_tcp_congestion"], "leocc");
    let out = server.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sent 5000000 bytes"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 33: without -J, `quic get` prints iperf3's text layout: interval lines, then the
/// sender's and the receiver's totals; -P N runs N connections and adds them up ([SUM]).
#[test]
fn get_prints_an_iperf3_like_summary_and_runs_parallel_connections() {
    let dir = scratch("text");
    let cert = dir.join("cert.der");
    let (mut server, port) = serve(&["--cc", "cubic", "--max-clients", "3"], &cert, Stdio::null());
    let get = |extra: &[&str]| {
        let o = Command::new(BIN).args(["quic", "get", &format!("127.0.0.1:{port}"), "--cert"]).arg(&cert).args(extra).output().unwrap();
        assert!(o.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let one = get(&["-n", "3000000"]);
    assert!(one.starts_with("Connected to 127.0.0.1 port"), "{one}");
    assert!(one.contains("[ ID] Interval") && one.contains("Bitrate"), "{one}");
    let sender = one.lines().find(|l| l.ends_with("sender")).unwrap_or_else(|| panic!("{one}"));
    assert!(sender.starts_with("[  1]") && sender.contains("2.9 MBytes"), "{one}");
    assert!(one.lines().any(|l| l.ends_with("receiver")), "{one}");
    // -P 3: three connections, one sum.
    let three = get(&["-n", "2000000", "-P", "3", "-J"]);
    let v: serde_json::Value = serde_json::from_str(&three).unwrap();
    assert_eq!(v["end"]["sum_received"]["bytes"], 6_000_000.0);
    assert_eq!(v["end"]["streams"].as_array().unwrap().len(), 3);
    assert_eq!(v["intervals"][0]["streams"].as_array().unwrap().len(), 3);
    let text = get(&["-n", "1000000", "-P", "2"]);
    assert!(text.contains("2 parallel connections") && text.lines().any(|l| l.starts_with("[SUM]") && l.ends_with("sender")), "{text}");
    let _ = server.kill();
    let _ = server.wait();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// -R: the client uploads with its --cc and the server receives; the summary's rates are the
/// server's (the receiving side, as iperf3 reports); --cc without -R is refused.
#[test]
fn get_reverse_uploads_to_the_server() {
    let dir = scratch("reverse");
    let cert = dir.join("cert.der");
    let (server, port) = serve(&["--once", "--cc", "bbr"], &cert, Stdio::piped());
    let addr = format!("127.0.0.1:{port}");
    let o = Command::new(BIN)
        .args(["quic", "get", &addr, "-R", "--cc", "cubic", "-n", "4000000", "-i", "0.05", "-J", "--cert"])
        .arg(&cert)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["end"]["sum_received"]["bytes"], 4_000_000);
    assert_eq!(v["end"]["sum_sent"]["bytes"], 4_000_000);
    assert_eq!(v["end"]["sender_tcp_congestion"], "cubic", "the client's --cc, not the server's bbr");
    assert_eq!(v["start"]["test_start"]["sender"], "client");
    let out = server.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("received 4000000 bytes"), "{err}");
    // The text summary says who sent (a second server, its own certificate file).
    let cert2 = dir.join("cert2.der");
    let (mut server, port) = serve(&["--once"], &cert2, Stdio::null());
    let o = Command::new(BIN)
        .args(["quic", "get", &format!("127.0.0.1:{port}"), "-R", "--cc", "newreno", "--events", "none", "-n", "1000000", "--cert"])
        .arg(&cert2)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        let _ = server.kill();
    }
    let _ = server.wait();
    assert!(o.status.success() && text.contains("(QUIC, client sends with newreno)") && text.lines().any(|l| l.ends_with("receiver")), "{text}{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(BIN).args(["quic", "get", &addr, "--cc", "cubic", "--cert"]).arg(&cert).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("--reverse"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 34: without --cert the certificate goes to a fresh private directory (0700, printed),
/// which is removed when the server stops on SIGTERM; two clients at once are both served.
#[test]
fn the_default_certificate_is_private_and_removed_at_exit() {
    use std::io::Read;
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Command::new(BIN)
        .args(["quic", "serve", "--cc", "cubic", "--events", "none", "--max-clients", "2", "--listen", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(server.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let cert = PathBuf::from(first.split("certificate ").nth(1).and_then(|r| r.split(',').next()).unwrap_or_else(|| panic!("{first}")));
    let dir = cert.parent().unwrap().to_path_buf();
    assert!(dir.file_name().unwrap().to_string_lossy().starts_with("leocc-quic-"), "{first}");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    let get = || {
        Command::new(BIN)
            .args(["quic", "get", &format!("127.0.0.1:{port}"), "-J", "-t", "1", "-i", "0.1", "--cert"])
            .arg(&cert)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (get(), get());
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // SAFETY: our own child.
    unsafe { libc::kill(server.id() as libc::pid_t, libc::SIGTERM) };
    let status = server.wait().unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{rest}");
    assert!(!dir.exists(), "the private directory is removed at exit");
    // Without --cert the client says what it needs.
    let o = Command::new(BIN).args(["quic", "get", &format!("127.0.0.1:{port}")]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--cert"));
}

#[test]
fn bad_options_are_named() {
    let o = Command::new(BIN).args(["quic", "serve", "--cc", "vegas"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown congestion control `vegas`"));
    let o = Command::new(BIN).args(["quic", "get", "127.0.0.1:1", "-t", "0", "--cert", "/nonexistent.der"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--time and --interval must be positive"));
    let o = Command::new(BIN).args(["quic", "serve", "--max-clients", "0"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--max-clients must be at least 1"));
    let o = Command::new(BIN).args(["quic", "serve", "--max-duration", "0"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--max-duration must be a positive number"));
}

/// The daemon, probing loopback, serves its signal on `RUN_DIR/events.sock` (mode 0600, or
/// 0660 with group `leocc`) in
/// the subscription's line format.
#[test]
fn probe_daemon_serves_the_subscription_socket() {
    if !is_root() {
        println!("SKIP probe_daemon_serves_the_subscription_socket: raw ICMP needs root");
        return;
    }
    let dir = scratch("probe");
    let run_dir = dir.join("run");
    let mut daemon = Command::new(BIN)
        .args(["probe", "--pop", "127.0.0.1", "--no-kernel", "--quiet", "--duration", "3", "--run-dir"])
        .arg(&run_dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let sock = run_dir.join(leocc_probe::subscribe::SOCKET_NAME);
    let mut stream = None;
    for _ in 0..200 {
        if let Ok(s) = UnixStream::connect(&sock) {
            stream = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let stream = stream.expect("the daemon never served events.sock");
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    let want = if leocc_probe::subscribe::Access::from_system().group.is_some() { 0o660 } else { 0o600 };
    assert_eq!(mode, want, "{mode:o}");
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    let s = leocc_probe::subscribe::parse_line(&line).unwrap();
    assert!(s.probe_time_ns > 0 && s.term_pop_rtt_us > 0, "{line}");
    assert!(daemon.wait().unwrap().success());
    assert!(!sock.exists(), "the socket is removed when the daemon exits");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// QUIC (LeoCC and quinn's CUBIC) beside kernel CUBIC through the emulated uplink for 5 s:
/// the emulator engine's QUIC path end to end, with the detector subscription for quic:leocc.
#[test]
fn quic_flows_run_through_the_emulator() {
    if !is_root() || !Path::new("/dev/net/tun").exists() {
        println!("SKIP quic_flows_run_through_the_emulator: needs root and /dev/net/tun");
        return;
    }
    let o = Command::new(BIN)
        .args(["emu-run", "--trace", "traces/starlink-up-60s.trace", "--flows", "quic:leocc@0-5,quic:cubic@0-5", "--duration", "5", "--queue", "500"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(line.lines().last().unwrap()).unwrap();
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    for f in flows {
        let thr = f["throughput_mbps"].as_f64().unwrap();
        let rtt = f["rtt_p50_ms"].as_f64().unwrap();
        // The uplink trace offers about 45 Mbit/s at about 20 ms base RTT.
        assert!(thr > 1.0 && f["utilization"].as_f64().unwrap() <= 1.05, "{f}");
        assert!((15.0..1000.0).contains(&rtt), "{f}");
        assert!(f["cpu_s_per_mb"].as_f64().unwrap() > 0.0, "{f}");
    }
    assert!(v["utilization"].as_f64().unwrap() > 0.3, "two flows should use the link: {v}");
}
