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
