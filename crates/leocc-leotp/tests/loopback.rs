//! Real transfers over loopback UDP: a producer, a chain of mid-nodes and a consumer, each on
//! its own thread and port, exactly as the programs run them (no mocks: real sockets, real
//! files). Loss is injected at the mid-nodes on data arriving from upstream.

use leocc_leotp::counters::Counters;
use leocc_leotp::packet::{self, Kind, Packet};
use leocc_leotp::{consumer, ConsumerConfig, HopCcConfig, Mid, MidConfig, Producer, Report};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leotp-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Chain {
    stop: Arc<AtomicBool>,
    producer: std::thread::JoinHandle<Producer>,
    mids: Vec<std::thread::JoinHandle<Mid>>,
    first_hop: SocketAddr,
}

/// Producer serving `file`, then `hops` mid-nodes; the first hop is the last mid-node.
fn chain(file: &PathBuf, hops: usize, loss: f64, innet: bool, hop_cc: bool) -> Chain {
    let stop = Arc::new(AtomicBool::new(false));
    let mut p = Producer::bind(any(), std::slice::from_ref(file)).unwrap();
    let mut up = p.local_addr();
    let s = stop.clone();
    let producer = std::thread::spawn(move || {
        p.run(&s);
        p
    });
    let mut mids = Vec::new();
    for i in 0..hops {
        let mut cfg = MidConfig::new(any(), up);
        cfg.inject_loss = loss;
        cfg.innet_retx = innet;
        cfg.hop_cc = hop_cc;
        cfg.seed = 7 + i as u64;
        let mut m = Mid::bind(cfg).unwrap();
        up = m.local_addr();
        let s = stop.clone();
        mids.push(std::thread::spawn(move || {
            m.run(&s);
            m
        }));
    }
    Chain { stop, producer, mids, first_hop: up }
}

impl Chain {
    fn finish(self) -> (Producer, Vec<Mid>) {
        self.stop.store(true, Ordering::Relaxed);
        let mids = self.mids.into_iter().map(|h| h.join().unwrap()).collect();
        (self.producer.join().unwrap(), mids)
    }
}

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 1000) as u8).collect()
}

fn get(first_hop: SocketAddr, name: &str, out: Option<PathBuf>, innet: bool) -> Report {
    let cfg = ConsumerConfig {
        first_hop,
        name: name.into(),
        output: out,
        duration: Some(Duration::from_secs(60)),
        cc: HopCcConfig::default(),
        innet_retx: innet,
        interval: Duration::from_secs(1),
        progress: false,
    };
    consumer::run(&cfg, &AtomicBool::new(false)).unwrap()
}

#[test]
fn a_file_crosses_two_mid_nodes_intact() {
    let dir = scratch("plain");
    let src = dir.join("payload.bin");
    // Not a multiple of the segment size: the last segment is short.
    let data = content(3 * 1024 * 1024 + 17);
    std::fs::write(&src, &data).unwrap();
    let c = chain(&src, 2, 0.0, true, true);
    let out = dir.join("got.bin");
    let r = get(c.first_hop, "payload.bin", Some(out.clone()), true);
    let (p, mids) = c.finish();
    assert!(r.complete, "{:?}", r.to_json());
    assert_eq!(r.bytes, data.len() as u64);
    assert_eq!(std::fs::read(&out).unwrap(), data);
    assert!(r.owd_mean_ms.is_some());
    // Every segment crossed both mid-nodes once: no repair was needed.
    let segs = data.len().div_ceil(packet::SEGMENT_BYTES) as u64;
    assert!(p.segments_sent >= segs);
    for m in &mids {
        assert_eq!(m.counters.malformed, 0);
        assert!(m.forwarded_bytes >= data.len() as u64);
    }
    let json = r.to_json();
    assert_eq!(json["end"]["sum_received"]["bytes"], data.len() as u64);
    assert!(json["intervals"].as_array().is_some_and(|a| !a.is_empty()));
    std::fs::remove_dir_all(dir).unwrap();
}

/// With 3 % loss on every hop, mid-nodes detect the holes, repair them from their upstream
/// neighbour's cache and send VPHs; the consumer then needs far fewer timeouts than when it
/// must recover every loss end to end.
#[test]
fn in_network_retransmission_repairs_most_losses_before_the_consumer_times_out() {
    let dir = scratch("lossy");
    let src = dir.join("lossy.bin");
    let data = content(2 * 1024 * 1024);
    std::fs::write(&src, &data).unwrap();
    let mut timeouts = Vec::new();
    for innet in [true, false] {
        let c = chain(&src, 3, 0.03, innet, true);
        let out = dir.join(format!("got-{innet}.bin"));
        let r = get(c.first_hop, "lossy.bin", Some(out.clone()), innet);
        let (_, mids) = c.finish();
        assert!(r.complete);
        assert_eq!(std::fs::read(&out).unwrap(), data, "innet {innet}");
        let sum = |f: fn(&Counters) -> u64| mids.iter().map(|m| f(&m.counters)).sum::<u64>();
        let lost = sum(|c| c.injected_losses);
        assert!(lost > 50, "too few losses to compare: {lost}");
        if innet {
            assert!(sum(|c| c.holes_detected) > lost / 2, "holes {} of {lost} losses", sum(|c| c.holes_detected));
            assert!(sum(|c| c.innet_retx_requests) > 0);
            // VPHs go downstream from every mid-node but the one next to the consumer... and
            // that one too (to the consumer).
            assert!(sum(|c| c.void_sent) > 0 && sum(|c| c.void_received) > 0);
            assert!(sum(|c| c.cache_hits) > 0, "repairs are served from caches");
        } else {
            assert_eq!(sum(|c| c.holes_detected) + sum(|c| c.void_sent), 0);
        }
        timeouts.push((r.timeouts, lost));
    }
    let (with, without) = (timeouts[0], timeouts[1]);
    assert!(without.0 >= without.1 / 2, "without repair, losses end in consumer timeouts: {without:?}");
    assert!(with.0 * 3 < without.0, "in-network repair should save most timeouts: with {with:?}, without {without:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_ablation_without_hop_cc_still_delivers() {
    let dir = scratch("nocc");
    let src = dir.join("nocc.bin");
    let data = content(1024 * 1024);
    std::fs::write(&src, &data).unwrap();
    let c = chain(&src, 2, 0.01, true, false);
    let out = dir.join("got.bin");
    let r = get(c.first_hop, "nocc.bin", Some(out.clone()), true);
    c.finish();
    assert!(r.complete);
    assert_eq!(std::fs::read(&out).unwrap(), data);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn malformed_spoofed_and_unknown_packets_are_counted_and_dropped() {
    let dir = scratch("bad");
    let src = dir.join("ok.bin");
    std::fs::write(&src, content(50_000)).unwrap();
    let c = chain(&src, 1, 0.0, true, true);
    let mid_addr = c.first_hop;
    let evil = UdpSocket::bind(any()).unwrap();
    let mut b = Vec::new();
    // Garbage, a truncated header, a wrong version, an oversized datagram.
    let mut bad_version = Vec::new();
    Packet::interest("ok.bin", 0, 1, 0, 0).encode(&mut bad_version);
    bad_version[2] = 9;
    for d in [vec![0xffu8; 40], b"LT\x01".to_vec(), bad_version, vec![0u8; packet::MAX_PACKET + 100]] {
        evil.send_to(&d, mid_addr).unwrap();
    }
    // Data and a void from an address that is not the mid-node's upstream: spoofed.
    Packet { kind: Kind::Data, flags: 0, name: "ok.bin", start: 0, end: 42, timestamp_us: 0, hold_us: 0, backlog: 0, payload: b"evil" }.encode(&mut b);
    evil.send_to(&b, mid_addr).unwrap();
    Packet::void("ok.bin", 0, 5).encode(&mut b);
    evil.send_to(&b, mid_addr).unwrap();
    // An interest for content nobody serves: forwarded, the producer counts it.
    Packet::interest("nothing-here", 0, 3, 0, 0).encode(&mut b);
    evil.send_to(&b, mid_addr).unwrap();
    // A real transfer still works afterwards.
    let r = get(mid_addr, "ok.bin", None, true);
    assert!(r.complete);
    assert_eq!(r.bytes, 50_000);
    let (p, mids) = c.finish();
    assert_eq!(mids[0].counters.malformed, 4);
    assert_eq!(mids[0].counters.spoofed, 2);
    assert_eq!(p.counters.unknown_content, 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn consumer_errors_are_clear() {
    let cfg = |name: &str, duration| ConsumerConfig {
        first_hop: "127.0.0.1:9".parse().unwrap(),
        name: name.into(),
        output: None,
        duration,
        cc: HopCcConfig::default(),
        innet_retx: true,
        interval: Duration::from_secs(1),
        progress: false,
    };
    let stop = AtomicBool::new(false);
    let e = consumer::run(&cfg("bulk", None), &stop).unwrap_err();
    assert!(e.contains("duration"), "{e}");
    let e = consumer::run(&cfg("has space", None), &stop).unwrap_err();
    assert!(e.contains("printable"), "{e}");
}

#[test]
fn bulk_runs_for_the_given_duration() {
    let dir = scratch("bulk");
    let src = dir.join("unused.bin");
    std::fs::write(&src, b"x").unwrap();
    let c = chain(&src, 1, 0.0, true, true);
    let cfg = ConsumerConfig {
        first_hop: c.first_hop,
        name: "bulk".into(),
        output: None,
        duration: Some(Duration::from_millis(1500)),
        cc: HopCcConfig::default(),
        innet_retx: true,
        interval: Duration::from_millis(500),
        progress: false,
    };
    let r = consumer::run(&cfg, &AtomicBool::new(false)).unwrap();
    c.finish();
    assert!(!r.complete && r.total_segments.is_none());
    assert!(r.bytes > 1_000_000, "{}", r.bytes);
    assert!(r.intervals.len() >= 3);
    std::fs::remove_dir_all(dir).unwrap();
}
