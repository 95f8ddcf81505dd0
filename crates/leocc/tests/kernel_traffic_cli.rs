//! `leocc kernel traffic`: the command's exit status passes through, the counts file says the
//! command ended and holds its traffic, and a bad interval is refused before anything runs.
use std::process::Command;

fn leocc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leocc"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn the_command_s_status_and_traffic_come_back() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let out = std::env::temp_dir().join(format!("leocc-traffic-cli-{}.json", std::process::id()));
    // Ten pings of 100 bytes over loopback, then the command's own status.
    let o = leocc()
        .args(["kernel", "traffic", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "ping -q -c 10 -i 0.01 -s 100 127.0.0.1 >/dev/null && exit 3"])
        .output()
        .expect("run leocc");
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["running"], false);
    assert_eq!(v["tx_packets"], 10, "{v}");
    assert_eq!(v["tx_bytes"], 10 * 128, "{v}");
    std::fs::remove_file(&out).unwrap();
}

#[test]
fn a_bad_interval_is_refused() {
    let o = leocc().args(["kernel", "traffic", "--out", "/nonexistent/x", "--every", "0", "--", "true"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--every 0: expected 0.01 to 60 seconds"));
}
