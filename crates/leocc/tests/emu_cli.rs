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

/// Starts `leocc emu -- sleep 30`, waits for its namespaces, sends `sig`, and returns the exit
/// code and the namespaces left afterwards.
fn signal_emu(sig: i32) -> Option<(Option<i32>, Vec<String>)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("SKIP signal test: needs root and /dev/net/tun");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("leocc-emu-sig-{}-{sig}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("t.mm");
    std::fs::write(&t, "1\n2\n").unwrap();
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
