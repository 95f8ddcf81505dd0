//! Root-only tests of the multi-hop chain: real namespaces, kernel forwarding, ping and
//! kernel TCP (iperf3) end to end across every hop, a command at every hop, and nothing left
//! behind afterwards.

mod common;

use common::*;
use leocc_emu::chain::{self, Chain, ChainConfig, ChainShellSpec, HopConfig};
use leocc_trace::Dir;

fn hops(n: usize, mbps: f64, delay_ms: u64) -> Vec<HopConfig> {
    let t = constant_trace(mbps, delay_ms);
    (0..n).map(|_| HopConfig { up: t.link(Dir::Up), down: t.link(Dir::Down) }).collect()
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("leocc-chain-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn ping_crosses_every_hop_and_every_node_runs_the_node_command() {
    if !can_run("chain_ping", &["ping"]) {
        return;
    }
    let _g = serial();
    let dir = scratch("ping");
    let cfg = ChainConfig::new(hops(4, 20.0, 5));
    let spec = ChainShellSpec {
        cmd: vec!["sh".into(), "-c".into(), format!("ping -c 3 -i 0.2 -q $LEOCC_SERVER > {0}/ping.txt; ping -c 2 -i 0.2 -q $LEOCC_NODE_2 > {0}/ping2.txt", dir.display())],
        server_cmd: None,
        // Every mid node records its environment, then keeps a socket open like a daemon.
        node_cmd: Some(format!("echo $LEOCC_NODE $LEOCC_ADDR $LEOCC_UPSTREAM $LEOCC_DOWNSTREAM > {}/node-$LEOCC_NODE.txt; exec sleep 30", dir.display())),
    };
    let (code, summary) = chain::run(&cfg, &spec).unwrap();
    assert_eq!(code, 0);
    // 4 hops x 5 ms each way: 40 ms to the server, 20 ms to node 2.
    let rtt = |f: &str| -> f64 {
        let t = std::fs::read_to_string(dir.join(f)).unwrap();
        let line = t.lines().find(|l| l.contains("min/avg")).unwrap_or_else(|| panic!("{t}"));
        line.split('=').nth(1).unwrap().trim().split('/').next().unwrap().parse().unwrap()
    };
    let (to_server, to_node2) = (rtt("ping.txt"), rtt("ping2.txt"));
    assert!((40.0..46.0).contains(&to_server), "{to_server} ms");
    assert!((20.0..25.0).contains(&to_node2), "{to_node2} ms");
    for i in 1..4 {
        let env = std::fs::read_to_string(dir.join(format!("node-{i}.txt"))).unwrap();
        let want = format!("{i} {} {} {}", chain::node_addr(i), chain::node_addr(i + 1), chain::node_addr(i - 1));
        assert_eq!(env.trim(), want);
    }
    assert_eq!(summary.len(), 8);
    assert!(summary.iter().all(|s| s.arrived_pkts >= 3), "{summary:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn kernel_tcp_runs_end_to_end_at_the_narrowest_hop_and_the_namespaces_go_away() {
    if !can_run("chain_tcp", &["iperf3"]) {
        return;
    }
    let _g = serial();
    let mut h = hops(3, 40.0, 5);
    // The middle hop is the bottleneck.
    let narrow = constant_trace(15.0, 5);
    h[1] = HopConfig { up: narrow.link(Dir::Up), down: narrow.link(Dir::Down) };
    let chain = Chain::start(&ChainConfig::new(h)).unwrap();
    let names: Vec<String> = (0..=3).map(|i| chain.ns(i).name().to_string()).collect();
    let server = KillOnDrop(chain.command(3, "iperf3").args(["-s", "-1", "-p", "5311"]).stdout(std::process::Stdio::null()).spawn().unwrap());
    wait_listening(server.0.id(), 5311);
    let out = chain.command(0, "iperf3").args(["-c", &chain::node_addr(3).to_string(), "-p", "5311", "-t", "5", "-J"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mbps = j["end"]["sum_received"]["bits_per_second"].as_f64().unwrap() / 1e6;
    let summary = chain.stop();
    assert!((11.0..15.5).contains(&mbps), "{mbps} Mbit/s through a 15 Mbit/s hop");
    let narrow_hop = summary.iter().find(|s| s.hop == 1 && s.dir == "up").unwrap();
    assert!(narrow_hop.delivered_mbps > 8.0, "{narrow_hop}");
    // Rated over the traffic period, not over the chain's setup and the server's start: the
    // hop's rate is the application's, within its ACK and header overhead.
    assert!(narrow_hop.traffic_s > 4.0 && narrow_hop.traffic_s < 7.0, "{narrow_hop}");
    assert!((narrow_hop.delivered_mbps - mbps).abs() < 0.15 * mbps, "{narrow_hop} vs iperf3's {mbps} Mbit/s");
    for n in names {
        assert!(!std::path::Path::new(&format!("/run/netns/{n}")).exists(), "{n} is left");
    }
}
