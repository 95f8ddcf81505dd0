//! `leocc emu` rejects bad input before it touches the network: a malformed trace is reported
//! with its file and line, a missing command by name, and the exit code is 1.

use std::process::Command;

fn leocc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leocc"))
}

#[test]
fn emu_reports_a_bad_trace_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("leocc-emu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.mm");
    std::fs::write(&bad, "1\n2\nfast\n3\n").unwrap();
    let out = leocc().args(["emu", "--trace"]).arg(&bad).args(["--", "true"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("bad.mm:3"), "error should name file and line: {err}");
    assert!(!err.contains("netns"), "no namespace work may happen: {err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn emu_reports_a_missing_command_by_name() {
    let dir = std::env::temp_dir().join(format!("leocc-emu-cli2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.mm");
    std::fs::write(&good, "1\n2\n3\n").unwrap();
    let out = leocc().args(["emu", "--trace"]).arg(&good).args(["--", "leocc-test-no-such-command"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("leocc-test-no-such-command"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Namespaces whose name says process `pid` made them.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("leocc-{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|d| d.flatten().filter_map(|e| e.file_name().into_string().ok()).filter(|n| n.starts_with(&prefix)).collect())
        .unwrap_or_default()
}

/// A fresh directory named for `what` with a two-line mahimahi trace in it, or None (with a
/// SKIP line) when the emulator cannot run here (it needs root and /dev/net/tun).
fn emu_scratch(what: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("SKIP {what} test: needs root and /dev/net/tun");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("leocc-emu-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("t.mm");
    std::fs::write(&t, "1\n2\n").unwrap();
    Some((dir, t))
}

/// Starts `leocc emu -- sleep 30`, waits for its namespaces, sends `sig`, and returns the exit
/// code and the namespaces left afterwards.
fn signal_emu(sig: i32) -> Option<(Option<i32>, Vec<String>)> {
    let (dir, t) = emu_scratch(&format!("sig{sig}"))?;
    let mut child = leocc()
        .args(["emu", "--trace"])
        .arg(&t)
        .args(["--server-cmd", "sleep 30", "--", "sleep", "30"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while namespaces_of(child.id()).len() < 2 && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(namespaces_of(child.id()).len(), 2, "leocc emu did not create its namespaces");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = child.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    Some((status.code(), namespaces_of(child.id())))
}

#[test]
fn emu_cleans_up_on_sigterm_and_sigint() {
    let Some((code, left)) = signal_emu(libc::SIGTERM) else { return };
    assert_eq!(code, Some(128 + libc::SIGTERM), "CMD is terminated and its status returned");
    assert!(left.is_empty(), "namespaces left after SIGTERM: {left:?}");
    let Some((code, left)) = signal_emu(libc::SIGINT) else { return };
    assert_eq!(code, Some(128 + libc::SIGINT), "SIGINT is forwarded to CMD");
    assert!(left.is_empty(), "namespaces left after SIGINT: {left:?}");
}

/// Waits up to 5 s until `check` holds.
fn eventually(check: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed().as_secs() < 5 {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// `kill -9` of `leocc emu` takes CMD and the server command down with it (death signal), and
/// `--cleanup` kills what they started in the namespaces (grandchildren do not inherit it).
#[test]
fn emu_kill_9_leaves_no_processes_after_cleanup() {
    use leocc_emu::owned::{descendants, processes};
    let Some((dir, t)) = emu_scratch("kill9") else { return };
    let mut child = leocc()
        .args(["emu", "--trace"])
        .arg(&t)
        // Both shells fork (two commands each), so each leaves a grandchild too.
        .args(["--server-cmd", "sleep 31; true", "--", "sh", "-c", "sleep 32; true"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(eventually(|| descendants(pid).len() >= 4), "CMD, server and their sleeps did not start: {:?}", descendants(pid));
    let (direct, all): (Vec<u32>, Vec<u32>) = {
        let procs = processes();
        (procs.iter().filter(|p| p.ppid == pid).map(|p| p.pid).collect(), descendants(pid))
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let alive = |pids: &[u32]| -> Vec<u32> {
        let live = processes();
        pids.iter().copied().filter(|p| live.iter().any(|q| q.pid == *p)).collect()
    };
    assert!(eventually(|| alive(&direct).is_empty()), "children outlived kill -9: {:?}", alive(&direct));
    let out = leocc().args(["emu", "--cleanup"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(eventually(|| alive(&all).is_empty()), "processes left after --cleanup: {:?}", alive(&all));
    assert!(namespaces_of(pid).is_empty(), "namespaces left: {:?}", namespaces_of(pid));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A server command that fails at once is reported at once, by `leocc emu` and `leocc chain`,
/// with its exit status and its last stderr lines; CMD does not run.
#[test]
fn a_server_command_that_exits_early_is_reported_at_once() {
    let Some((dir, trace)) = emu_scratch("server-exits-early") else { return };
    let server = "echo 'no such directory: /nope/cert' >&2; exit 3";
    for args in [vec!["emu".to_string(), "--trace".into(), trace.display().to_string()], vec!["chain".into(), "--hops".into(), "2".into()]] {
        let started = std::time::Instant::now();
        let out = leocc().args(&args).args(["--server-cmd", server, "--", "sh", "-c", "echo CMD RAN"]).output().unwrap();
        let (err, stdout) = (String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("exited early with exit status: 3"), "{args:?}: {err}");
        assert!(err.contains("last stderr lines:\n  no such directory: /nope/cert"), "{args:?}: {err}");
        assert!(!stdout.contains("CMD RAN"), "{args:?}: CMD ran: {stdout}");
        // At once, not after the 3 s wait for a listening socket.
        assert!(started.elapsed() < std::time::Duration::from_millis(2500), "{args:?}: {:?}", started.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The exit summary's rates are over the traffic period: 2 s of iperf3 at the link's 12 Mbit/s
/// after 3 s of nothing read ~12 Mbit/s over ~2 s of traffic, not ~5 Mbit/s over the run.
#[test]
fn the_summary_rates_the_traffic_period_not_the_setup() {
    let Some((dir, trace)) = emu_scratch("traffic-period") else { return };
    if Command::new("iperf3").arg("--version").output().is_err() {
        eprintln!("SKIP traffic-period test: needs iperf3");
        return;
    }
    let out = leocc()
        .args(["emu", "--trace"])
        .arg(&trace)
        .args(["--server-cmd", "iperf3 -s -1", "--", "sh", "-c", "sleep 3; iperf3 -c $LEOCC_SERVER -R -t 2 >/dev/null"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let line = err.lines().find(|l| l.trim_start().starts_with("downlink:")).unwrap_or_else(|| panic!("{err}"));
    let number_before = |unit: &str| -> f64 {
        let head = &line[..line.find(unit).unwrap_or_else(|| panic!("{unit} in {line}"))];
        head.trim_end().rsplit(' ').next().unwrap().parse().unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let delivered = number_before(" Mbit/s over");
    let traffic_s = number_before(" s of traffic");
    assert!((1.8..3.0).contains(&traffic_s), "{line}");
    assert!((9.0..12.5).contains(&delivered), "the link's 12 Mbit/s over the traffic, not diluted by the 3 s before it: {line}");
    let _ = std::fs::remove_dir_all(&dir);
}
