//! Root-only tests of the emulator with real kernel TCP (iperf3) and ping. Each creates its
//! own namespaces and checks afterwards that none of them, nor a process inside, is left.

mod common;

use common::*;
use leocc_emu::emulator::Side;
use leocc_emu::flows::FlowKey;
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

/// A trace that gives its terminal–PoP round trip (`pop_rtt_ms`, as drawn paths do): the PoP
/// answers after that round trip, as a real one would, while packets to the server cross the
/// whole path (as in the simulator's probe stream).
#[test]
fn the_pop_answers_after_the_terminal_pop_round_trip_a_trace_gives() {
    if !can_run("pop_rtt", &["ping"]) {
        return;
    }
    let _g = serial();
    let mut trace = constant_trace(20.0, 40);
    trace.meta.pop_rtt_us = Some(30_000);
    let mut cfg = config(&trace);
    cfg.beyond_pop_us = trace.beyond_pop_us();
    assert_eq!(cfg.beyond_pop_us, (25_000, 25_000), "80 ms of round trip, 30 of it to the PoP");
    let emu = Emulator::start(&cfg).unwrap();
    let (pop_rtt, _) = ping(&emu, &leocc_emu::POP_ADDR.to_string(), 100);
    let (server_rtt, _) = ping(&emu, &leocc_emu::SERVER_ADDR.to_string(), 50);
    stop_and_check(emu);
    eprintln!("PoP ping {pop_rtt:.2} ms, server ping {server_rtt:.2} ms");
    assert!((pop_rtt - 30.0).abs() < 2.0, "PoP ping {pop_rtt:.2} ms: the trace's pop_rtt_ms is 30");
    assert!((server_rtt - 80.0).abs() < 2.0, "server ping {server_rtt:.2} ms: the data path keeps 2 x 40 ms");
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

/// Kernel TCP on a 20 Mbit/s link with a short queue and random loss, so that many segments
/// are retransmitted and some retransmissions are lost again: Cubic with a 10-packet queue and
/// 2 % loss, and BBR (which keeps its rate through random loss, so the link stays busy) with 50
/// packets and 5 %. The bottleneck's per-flow counts must add up to what left the queue, and
/// the data connection can never have got more through than the trace offered while it was
/// served, nor less than the receiver got.
#[test]
fn per_flow_departures_add_up_and_stay_within_the_link_for_retransmitting_senders() {
    if !can_run("per_flow", &["iperf3"]) {
        return;
    }
    let _g = serial();
    let mut cases = vec![("cubic", 10, 0.02, 0.1)];
    if available_cc().split_whitespace().any(|c| c == "bbr") {
        cases.push(("bbr", 50, 0.05, 0.6));
    } else {
        eprintln!("note: bbr is not available in this kernel; testing cubic only");
    }
    let trace = constant_trace(20.0, 10);
    for (i, (cc, queue, loss, min_util)) in cases.into_iter().enumerate() {
        let mut cfg = config(&trace);
        cfg.queue = leocc_emu::QueueLimit { packets: Some(queue), bytes: None };
        cfg.loss = loss;
        let emu = Emulator::start(&cfg).unwrap();
        let port = 5220 + i as u16;
        let server = KillOnDrop(emu.command(Side::Server, "iperf3").args(["-s", "-1", "-p", &port.to_string()]).stdout(std::process::Stdio::null()).spawn().unwrap());
        wait_listening(server.0.id(), port);
        let out = emu
            .command(Side::Client, "iperf3")
            .args(["-c", &leocc_emu::SERVER_ADDR.to_string(), "-p", &port.to_string(), "-t", "8", "-C", cc, "-J"])
            .output()
            .unwrap();
        drop(server);
        let s = stop_and_check(emu);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("iperf3 output: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        let received = j["end"]["sum_received"]["bytes"].as_f64().unwrap();
        let segments_sent = j["end"]["sum_sent"]["bytes"].as_f64().unwrap() / 1448.0;
        let rtx = j["end"]["sum_sent"]["retransmits"].as_f64().unwrap();
        let up = &s.uplink;

        let (pkts, bytes) = up.flows.iter().fold((0, 0), |(p, b), (_, c)| (p + c.pkts, b + c.bytes));
        assert_eq!((pkts, bytes), (up.departed_pkts, up.departed_bytes), "{cc}: the flows add up to the queue's departures");
        assert!(up.flow_bins_complete);
        for (k, c) in &up.flows {
            assert_eq!(c.bins.iter().sum::<u64>(), c.bytes, "{k}: bins add up");
        }
        // The data connection: most bytes to the port (iperf3's control connection is the other).
        let (key, conn) = up.flows.iter().find(|(k, _)| k.has_port(port)).expect("the iperf3 connection at the bottleneck");
        assert!(matches!(key, FlowKey::Ipv4 { proto: 6, src, dst, dport, .. } if *src == leocc_emu::CLIENT_ADDR && *dst == leocc_emu::SERVER_ADDR && *dport == port), "{key}");
        let link = trace.link(Dir::Up);
        let offered_bytes = (link.count_before(conn.last_us + 1) - link.count_before(conn.first_us)) * u64::from(leocc_trace::OPPORTUNITY_BYTES);
        let util = conn.bytes as f64 / offered_bytes as f64;
        // Segments are 1448 bytes of payload in 1500-byte packets.
        let wire_received = received / 1448.0 * 1500.0;
        let old_count = (received / 1448.0 + rtx) * 1500.0;
        eprintln!(
            "{cc}, {queue} pkts, loss {loss}: {key}: {} pkts, {:.2} MB departed, utilisation {util:.4} over {:.2} s served; receiver {:.2} MB on the wire; {:.1} % retransmitted; the old count (received + retransmitted) {:.2} MB, utilisation {:.4}",
            conn.pkts,
            conn.bytes as f64 / 1e6,
            (conn.last_us - conn.first_us) as f64 / 1e6,
            wire_received / 1e6,
            rtx / segments_sent * 100.0,
            old_count / 1e6,
            old_count / offered_bytes as f64
        );
        assert!(rtx / segments_sent > loss / 2.0, "{cc}: {rtx} retransmissions of {segments_sent:.0} segments");
        // At most one packet more than the opportunities in the span carried: the first packet
        // may have started on an earlier opportunity's budget.
        assert!(conn.bytes <= offered_bytes + 1500, "{cc}: utilisation {util:.4}");
        assert!(util > min_util, "{cc}: utilisation {util:.3}");
        // Every segment the receiver got crossed the bottleneck at least once.
        assert!(conn.bytes as f64 >= wire_received, "{cc}: {} bytes departed, {wire_received:.0} received", conn.bytes);
        // Retransmissions lost again crossed nothing, and those that filled holes are in what
        // the receiver got already: the old count was too high.
        assert!(old_count > conn.bytes as f64, "{cc}: old {old_count:.0} vs departed {}", conn.bytes);
    }
}
