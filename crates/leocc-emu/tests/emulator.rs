//! Root-only tests of the emulator with real kernel TCP (iperf3) and ping. Each creates its
//! own namespaces and checks afterwards that none of them, nor a process inside, is left.

mod common;

use common::*;
use leocc_emu::emulator::Side;
use leocc_emu::shell::{self, ShellSpec};
use leocc_emu::{Emulator, Qdisc};
use leocc_trace::{Dir, Trace};

#[test]
fn constant_50mbit_20ms_gives_full_rate_and_40ms_rtt_for_cubic_and_bbr() {
    if !can_run("constant_50mbit", &["iperf3"]) {
        return;
    }
    let _g = serial();
    let trace = constant_trace(50.0, 20);
    let emu = Emulator::start(&config(&trace)).unwrap();
    let mut ccs = vec!["cubic"];
    if available_cc().split_whitespace().any(|c| c == "bbr") {
        ccs.push("bbr");
    } else {
        eprintln!("note: bbr is not available in this kernel; testing cubic only");
    }
    let mut results = Vec::new();
    for (i, cc) in ccs.iter().enumerate() {
        results.push((cc, iperf(&emu, cc, 5201 + i as u16, 10)));
    }
    stop_and_check(emu);
    for (cc, r) in results {
        eprintln!("{cc}: {r:?}");
        assert!((45.0..=50.5).contains(&r.mbps), "{cc}: {:.1} Mbit/s through a 50 Mbit/s link", r.mbps);
        assert!((39.0..=45.0).contains(&r.min_rtt_ms), "{cc}: min RTT {:.1} ms for a 2 x 20 ms path", r.min_rtt_ms);
    }
}

#[test]
fn cubic_is_clearly_below_bbr_on_the_real_starlink_uplink() {
    if !can_run("real_uplink", &["iperf3"]) {
        return;
    }
    let Some(path) = real_trace("leocc-example-uplink") else {
        eprintln!("SKIP real_uplink: ../shared/traces/real/leocc-example-uplink is absent");
        return;
    };
    if !available_cc().split_whitespace().any(|c| c == "bbr") {
        eprintln!("SKIP real_uplink: bbr is not available in this kernel");
        return;
    }
    let _g = serial();
    let trace = Trace::load(&path).unwrap();
    let mut cfg = config(&trace);
    // The authors' replay settings for this trace: 500-packet droptail, 0.2 % loss.
    cfg.loss = 0.002;
    cfg.up = trace.link(Dir::Up);
    let emu = Emulator::start(&cfg).unwrap();
    let cubic = iperf(&emu, "cubic", 5203, 15);
    let bbr = iperf(&emu, "bbr", 5204, 15);
    stop_and_check(emu);
    eprintln!("real uplink: cubic {cubic:?}, bbr {bbr:?}");
    assert!(cubic.mbps < 0.8 * bbr.mbps, "cubic {:.1} Mbit/s is not clearly below bbr {:.1} Mbit/s", cubic.mbps, bbr.mbps);
}

#[test]
fn a_missing_binary_fails_before_any_namespace_is_created() {
    if !can_run("missing_binary", &[]) {
        return;
    }
    let _g = serial();
    let before = leocc_emu::netns::bases_created();
    let cfg = config(&constant_trace(10.0, 5));
    for spec in [
        ShellSpec { cmd: vec!["leocc-test-no-such-binary".into()], server_cmd: None },
        ShellSpec { cmd: vec!["true".into()], server_cmd: Some("leocc-test-no-such-server --flag".into()) },
    ] {
        let e = shell::run(&cfg, &spec).unwrap_err().to_string();
        assert!(e.contains("leocc-test-no-such"), "{e}");
    }
    assert_eq!(leocc_emu::netns::bases_created(), before, "a namespace was created before the check");
}

#[test]
fn the_shell_cleans_up_after_a_crashing_command_and_returns_its_code() {
    if !can_run("crash", &[]) {
        return;
    }
    let _g = serial();
    let before = leocc_emu::netns::namespaces_with_prefix(&format!("leocc-{}-", std::process::id()));
    let cfg = config(&constant_trace(10.0, 5));
    let spec = ShellSpec { cmd: vec!["sh".into(), "-c".into(), "test -n \"$LEOCC_SERVER\" && kill -SEGV $$".into()], server_cmd: Some("sleep 30".into()) };
    let (code, _) = shell::run(&cfg, &spec).unwrap();
    assert_eq!(code, 128 + 11, "exit code of a command killed by SIGSEGV");
    let spec = ShellSpec { cmd: vec!["sh".into(), "-c".into(), "exit 7".into()], server_cmd: None };
    assert_eq!(shell::run(&cfg, &spec).unwrap().0, 7);
    let after = leocc_emu::netns::namespaces_with_prefix(&format!("leocc-{}-", std::process::id()));
    assert_eq!(before, after, "namespaces left behind");
}

/// Runs `ping` in the client namespace; returns the average RTT in ms and the loss in %.
fn ping(emu: &Emulator, addr: &str, count: u32) -> (f64, f64) {
    let out = emu.command(Side::Client, "ping").args(["-q", "-i", "0.01", "-c", &count.to_string(), addr]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let avg = text
        .lines()
        .find(|l| l.contains("min/avg/max"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().split('/').nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no RTT in ping output: {text}"));
    let loss = text
        .split_whitespace()
        .find(|w| w.ends_with('%'))
        .and_then(|w| w.trim_end_matches('%').parse().ok())
        .unwrap_or(100.0);
    (avg, loss)
}

#[test]
fn the_pop_answers_ping_with_the_satellite_delay_while_tcp_fills_the_queue() {
    if !can_run("pop_ping", &["iperf3", "ping"]) {
        return;
    }
    let _g = serial();
    let trace = constant_trace(20.0, 25);
    let mut cfg = config(&trace);
    cfg.terrestrial_delay_us = Some(5_000);
    let emu = Emulator::start(&cfg).unwrap();
    let server = KillOnDrop(emu.command(Side::Server, "iperf3").args(["-s", "-1", "-p", "5205"]).stdout(std::process::Stdio::null()).spawn().unwrap());
    wait_listening(server.0.id(), 5205);
    let client = emu
        .command(Side::Client, "iperf3")
        .args(["-c", &leocc_emu::SERVER_ADDR.to_string(), "-p", "5205", "-t", "6", "-C", "cubic", "-J"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (pop_rtt, pop_loss) = ping(&emu, &leocc_emu::POP_ADDR.to_string(), 200);
    let (server_rtt, _) = ping(&emu, &leocc_emu::SERVER_ADDR.to_string(), 100);
    let out = client.wait_with_output().unwrap();
    drop(server);
    let summary = stop_and_check(emu);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tcp_rtt = j["end"]["streams"][0]["sender"]["mean_rtt"].as_f64().unwrap() / 1000.0;
    eprintln!("PoP ping {pop_rtt:.2} ms (loss {pop_loss} %), server ping {server_rtt:.2} ms, TCP mean RTT {tcp_rtt:.1} ms");
    assert!((pop_rtt - 50.0).abs() < 2.0, "PoP RTT {pop_rtt:.2} ms, satellite delay is 2 x 25 ms");
    assert!((server_rtt - 60.0).abs() < 2.0, "server ping {server_rtt:.2} ms: ICMP skips the data queue, 2 x (25 + 5) ms");
    assert!(tcp_rtt > 80.0, "TCP RTT {tcp_rtt:.1} ms: the saturating flow should build a queue");
    assert!(pop_loss < 1.0, "PoP ping loss {pop_loss} % without outages");
    assert!(summary.uplink.dropped_queue > 0 || summary.uplink.queue_delay_ms[1].unwrap_or(0.0) > 20.0);
}

#[test]
fn pings_to_the_pop_are_dropped_during_outages() {
    if !can_run("pop_outage", &["ping"]) {
        return;
    }
    let _g = serial();
    // 12 Mbit/s with no opportunity in [500, 700) ms of every second: 20 % of pings lost.
    let times: Vec<u64> = (1..=1000u64).filter(|ms| !(500..700).contains(ms)).map(|ms| ms * 1000).collect();
    let trace = trace_with(times, 1_000_000, leocc_trace::DelaySeries::constant(10_000));
    let emu = Emulator::start(&config(&trace)).unwrap();
    let (_, loss) = ping(&emu, &leocc_emu::POP_ADDR.to_string(), 300);
    let summary = stop_and_check(emu);
    eprintln!("ping loss with 20 % outage time: {loss} %, outage drops {}", summary.uplink.dropped_outage);
    assert!((10.0..=32.0).contains(&loss), "loss {loss} %: about 20 % of the time is outage");
}

#[test]
fn a_terrestrial_bottleneck_limits_tcp_but_not_the_pop_ping() {
    if !can_run("terrestrial", &["iperf3", "ping"]) {
        return;
    }
    let _g = serial();
    let mut cfg = config(&constant_trace(50.0, 20));
    cfg.terrestrial = Some(constant_trace(12.0, 0).link(Dir::Down));
    cfg.terrestrial_delay_us = Some(5_000);
    let emu = Emulator::start(&cfg).unwrap();
    let server = KillOnDrop(emu.command(Side::Server, "iperf3").args(["-s", "-1", "-p", "5206"]).stdout(std::process::Stdio::null()).spawn().unwrap());
    wait_listening(server.0.id(), 5206);
    let client = emu
        .command(Side::Client, "iperf3")
        .args(["-c", &leocc_emu::SERVER_ADDR.to_string(), "-p", "5206", "-t", "6", "-C", "cubic", "-J"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (pop_rtt, _) = ping(&emu, &leocc_emu::POP_ADDR.to_string(), 150);
    let out = client.wait_with_output().unwrap();
    drop(server);
    stop_and_check(emu);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mbps = j["end"]["sum_received"]["bits_per_second"].as_f64().unwrap() / 1e6;
    let tcp_rtt = j["end"]["streams"][0]["sender"]["mean_rtt"].as_f64().unwrap() / 1000.0;
    eprintln!("terrestrial bottleneck: {mbps:.1} Mbit/s, TCP RTT {tcp_rtt:.1} ms, PoP ping {pop_rtt:.2} ms");
    assert!((9.5..=12.0).contains(&mbps), "{mbps:.1} Mbit/s through a 12 Mbit/s terrestrial segment");
    assert!((pop_rtt - 40.0).abs() < 2.0, "PoP ping {pop_rtt:.2} ms should see the satellite delay only");
    assert!(tcp_rtt > 60.0, "TCP RTT {tcp_rtt:.1} ms should include the terrestrial queue");
}

#[test]
fn codel_keeps_the_queue_short_for_kernel_cubic_and_drop_front_keeps_its_rate() {
    if !can_run("qdisc", &["iperf3"]) {
        return;
    }
    let _g = serial();
    // 20 Mbit/s, 20 ms each way, 500 ms of buffer (1.25 MB): Cubic fills a drop-tail queue.
    let trace = constant_trace(20.0, 20);
    let mut runs = Vec::new();
    for (i, q) in [Qdisc::DropTail, Qdisc::DropFront, Qdisc::CoDel].into_iter().enumerate() {
        let mut cfg = config(&trace);
        cfg.queue = leocc_emu::QueueLimit { packets: None, bytes: Some(1_250_000) };
        cfg.qdisc = q;
        let emu = Emulator::start(&cfg).unwrap();
        let r = iperf(&emu, "cubic", 5210 + i as u16, 10);
        let s = stop_and_check(emu);
        let p95 = s.uplink.queue_delay_ms[1].unwrap_or(0.0);
        eprintln!("{q}: {r:?}, queueing delay p95 {p95:.1} ms, queue drops {}", s.uplink.dropped_queue);
        assert_eq!(s.uplink.qdisc, q);
        runs.push((r, p95, s.uplink.dropped_queue));
    }
    let [(tail, tail_p95, _), (front, _, front_drops), (codel, codel_p95, codel_drops)] = &runs[..] else { unreachable!() };
    assert!(*tail_p95 > 100.0, "drop-tail: Cubic should build a standing queue, p95 {tail_p95:.1} ms");
    assert!(*codel_p95 < tail_p95 / 4.0 && *codel_p95 < 50.0, "CoDel p95 {codel_p95:.1} ms vs drop-tail {tail_p95:.1} ms");
    assert!(*codel_drops > 0, "CoDel dropped nothing");
    assert!(codel.mbps > 15.0, "CoDel starved the link: {codel:?}");
    assert!(front.mbps > 0.9 * tail.mbps, "drop-front {front:?} vs drop-tail {tail:?} ({front_drops} drops)");
}
