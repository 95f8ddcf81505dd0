//! Real transfers over loopback UDP: a producer, a chain of mid-nodes and a consumer, each on
//! its own thread and port, exactly as the programs run them (no mocks: real sockets, real
//! files). Loss is injected at the mid-nodes on data arriving from upstream.

use leocc_leotp::addrval::AMPLIFICATION_LIMIT;
use leocc_leotp::counters::Counters;
use leocc_leotp::names::NAME_IDLE_US;
use leocc_leotp::packet::{self, ErrorCode, Kind, Packet, TOKEN_LEN};
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
    /// The first hop's upstream (the producer with one mid-node).
    upstream_of_first: SocketAddr,
}

/// Producer serving `file`, then `hops` mid-nodes; the first hop is the last mid-node.
fn chain(file: &PathBuf, hops: usize, loss: f64, innet: bool, hop_cc: bool) -> Chain {
    chain_of(std::slice::from_ref(file), hops, loss, innet, hop_cc)
}

/// A one-hop chain (the file is a placeholder: `bulk` is the producer's endless source) and a
/// consumer asking it for `bulk` for `duration`; the scratch folder is the caller's to remove.
fn bulk_chain(tag: &str, duration: Duration) -> (Chain, ConsumerConfig, PathBuf) {
    let dir = scratch(tag);
    let src = dir.join("unused.bin");
    std::fs::write(&src, b"x").unwrap();
    let c = chain(&src, 1, 0.0, true, true);
    let cfg = ConsumerConfig {
        first_hop: c.first_hop,
        name: "bulk".into(),
        output: None,
        duration: Some(duration),
        cc: HopCcConfig::default(),
        innet_retx: true,
        interval: Duration::from_millis(500),
        progress: false,
    };
    (c, cfg, dir)
}

/// `chain` with several files.
fn chain_of(files: &[PathBuf], hops: usize, loss: f64, innet: bool, hop_cc: bool) -> Chain {
    let stop = Arc::new(AtomicBool::new(false));
    let mut p = Producer::bind(any(), files).unwrap();
    let mut up = p.local_addr();
    let s = stop.clone();
    let producer = std::thread::spawn(move || {
        p.run(&s);
        p
    });
    let mut mids = Vec::new();
    let mut upstream_of_first = up;
    for i in 0..hops {
        upstream_of_first = up;
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
    Chain { stop, producer, mids, first_hop: up, upstream_of_first }
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
    try_get(first_hop, name, out, innet).unwrap()
}

fn try_get(first_hop: SocketAddr, name: &str, out: Option<PathBuf>, innet: bool) -> Result<Report, String> {
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
    consumer::run(&cfg, &AtomicBool::new(false))
}

/// A requester's socket, with the programs' large buffers (a burst of 1,024 segments fits).
fn socket() -> UdpSocket {
    leocc_leotp::net::bind(any()).unwrap()
}

/// Every datagram arriving on `s` until nothing has come for `quiet`.
fn drain(s: &UdpSocket, quiet: Duration) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 2048];
    let mut last = std::time::Instant::now();
    while last.elapsed() < quiet {
        leocc_leotp::net::wait_readable(s, Duration::from_millis(10));
        while let Ok((n, _)) = s.recv_from(&mut buf) {
            got.push(buf[..n].to_vec());
            last = std::time::Instant::now();
        }
    }
    got
}

fn encode(p: &Packet) -> Vec<u8> {
    let mut b = Vec::new();
    p.encode(&mut b);
    b
}

/// IPv4 + UDP header bytes, for amplification at the IP level (what a victim's link carries).
const IP_UDP: usize = 28;

/// Issue 34 item 1: one 36-byte interest for 1,024 segments of `bulk` used to be answered
/// at once with 1,024 segments (1.47 MB of UDP payload, 40,846 x; 23,424 x at the IP level)
/// towards its source, which can be forged. Now an unvalidated source gets one token packet,
/// at most 3 x the bytes it sent, from the producer and from a mid-node holding the
/// segments in its cache; echoing the token gets the data.
#[test]
fn an_unvalidated_interest_is_answered_with_at_most_three_times_its_bytes() {
    // Warm the mid-node's cache with bulk's first segments through a real transfer.
    let (c, cfg, dir) = bulk_chain("amp", Duration::from_millis(700));
    let warm = consumer::run(&cfg, &AtomicBool::new(false)).unwrap();
    assert!(warm.bytes >= 1024 * packet::SEGMENT_BYTES as u64, "cache not warm: {} bytes", warm.bytes);
    let forged = [0x42u8; TOKEN_LEN];
    let mut worst: f64 = 0.0;
    for (label, target) in [("producer", c.upstream_of_first), ("mid-node (cache)", c.first_hop)] {
        for token in [None, Some(&forged)] {
            let evil = socket();
            let mut p = Packet::interest("bulk", 0, packet::MAX_RANGE, 0, 0);
            if let Some(t) = token {
                p.payload = t;
            }
            let sent = encode(&p);
            evil.send_to(&sent, target).unwrap();
            let back = drain(&evil, Duration::from_millis(300));
            let bytes: usize = back.iter().map(Vec::len).sum();
            let factor = bytes as f64 / sent.len() as f64;
            let ip_factor = (bytes + IP_UDP * back.len()) as f64 / (sent.len() + IP_UDP) as f64;
            eprintln!("{label}, token {}: sent {} B, got {} datagrams, {bytes} B back: {factor:.2} x ({ip_factor:.2} x with IP/UDP headers)", if token.is_some() { "forged" } else { "none" }, sent.len(), back.len());
            assert!(bytes <= AMPLIFICATION_LIMIT * sent.len(), "{label}: {bytes} B for {} B", sent.len());
            assert!(ip_factor <= AMPLIFICATION_LIMIT as f64);
            worst = worst.max(factor);
            // What came back is a token for this address, for exactly the range asked.
            assert_eq!(back.len(), 1);
            let t = packet::parse(&back[0]).unwrap();
            assert_eq!((t.kind, t.start, t.end, t.payload.len()), (Kind::Token, 0, packet::MAX_RANGE, TOKEN_LEN));
            // Echoing it proves the address: now the data comes.
            let with_token = encode(&Packet { payload: t.payload, ..Packet::interest("bulk", 0, packet::MAX_RANGE, 0, 0) });
            evil.send_to(&with_token, target).unwrap();
            let data = drain(&evil, Duration::from_millis(500));
            let segs = data.iter().filter(|d| packet::parse(d).is_ok_and(|p| p.kind == Kind::Data)).count();
            assert!(segs > 1000, "{label}: a validated address is served ({segs} of 1024 segments)");
        }
    }
    eprintln!("worst amplification of an unvalidated source: {worst:.2} x");
    let (p, mids) = c.finish();
    assert!(p.counters.unvalidated >= 2 && mids[0].counters.unvalidated >= 2);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 34 item 4: junk names used to take the mid-node's 1,024 name slots for good (every
/// new content then got 0 bytes and `get` still succeeded). 100,000 junk packets with new
/// names from an unvalidated or spoofed source take no slot at all; a validated source that
/// fills the table makes a new content fail with a clear error, until its names expire, and
/// then the content is served in full.
#[test]
fn junk_names_leave_new_contents_fully_served() {
    let dir = scratch("junk");
    let (a, b) = (dir.join("first.bin"), dir.join("second.bin"));
    let data = content(300_000);
    std::fs::write(&a, &data).unwrap();
    std::fs::write(&b, &data).unwrap();
    let c = chain_of(&[a, b], 1, 0.0, true, true);
    let mid = c.first_hop;
    let evil = socket();
    let forged = [0x42u8; TOKEN_LEN];
    const JUNK: u32 = 100_000;
    let t0 = std::time::Instant::now();
    for i in 0..JUNK {
        let name = format!("junk-{i}");
        let p = match i % 4 {
            0 | 1 => Packet::interest(&name, 0, 1, 0, 0),
            2 => Packet { payload: &forged, ..Packet::interest(&name, 0, 1, 0, 0) },
            _ if i % 8 == 3 => Packet { kind: Kind::Data, flags: 0, name: &name, start: 0, end: 1, timestamp_us: 0, hold_us: 0, backlog: 0, payload: b"x" },
            _ => Packet::void(&name, 0, 1),
        };
        evil.send_to(&encode(&p), mid).unwrap();
        // Closed loop, so that the junk is handled rather than lost in a full socket buffer:
        // each batch's interests are answered with a token each before the next batch goes.
        if i % 256 == 255 {
            let (mut answers, t) = (0, std::time::Instant::now());
            while answers < 192 && t.elapsed() < Duration::from_millis(200) {
                leocc_leotp::net::wait_readable(&evil, Duration::from_millis(5));
                while evil.recv_from(&mut [0u8; 128]).is_ok() {
                    answers += 1;
                }
            }
        }
    }
    eprintln!("sent {JUNK} junk packets in {:.2} s", t0.elapsed().as_secs_f64());
    let out = dir.join("got-first.bin");
    let r = get(mid, "first.bin", Some(out.clone()), true);
    assert!(r.complete == Some(true) && std::fs::read(&out).unwrap() == data, "{:?}", r.to_json());

    // Junk names from a validated source are forwarded; the producer answers "unknown
    // content" and the mid-node frees their slots at once.
    evil.send_to(&encode(&Packet::interest("junk-x", 0, 1, 0, 0)), mid).unwrap();
    let token = drain(&evil, Duration::from_millis(200)).into_iter().find_map(|d| packet::parse(&d).ok().filter(|p| p.kind == Kind::Token).map(|p| p.payload.to_vec())).expect("a token");
    for i in 0..2_000u32 {
        evil.send_to(&encode(&Packet { payload: &token, ..Packet::interest(&format!("valid-junk-{i}"), 0, 1, 0, 0) }), mid).unwrap();
        if i % 128 == 127 {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    drain(&evil, Duration::from_millis(300));
    let r = get(mid, "first.bin", None, true);
    assert!(r.complete == Some(true), "{:?}", r.to_json());
    // A validated source asking for 1,100 contents that do exist (the synthetic `bulk-N`)
    // fills the table (first.bin holds one slot): the names past it are refused.
    for i in 0..1_100u32 {
        evil.send_to(&encode(&Packet { payload: &token, ..Packet::interest(&format!("bulk-{i}"), 0, 1, 0, 0) }), mid).unwrap();
        if i % 128 == 127 {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    let refusals = drain(&evil, Duration::from_millis(200)).iter().filter(|d| packet::parse(d).is_ok_and(|p| p.error_code() == Some(ErrorCode::TableFull))).count();
    assert!(refusals >= 50, "names past the table's size are refused with an error ({refusals})");
    let e = try_get(mid, "second.bin", None, true).unwrap_err();
    assert!(e.contains("table is full"), "{e}");
    // Idle for NAME_IDLE_US, they expire, and the new content is served in full.
    std::thread::sleep(Duration::from_micros(NAME_IDLE_US) + Duration::from_millis(700));
    let out = dir.join("got-second.bin");
    let r = get(mid, "second.bin", Some(out.clone()), true);
    assert!(r.complete == Some(true) && std::fs::read(&out).unwrap() == data, "{:?}", r.to_json());
    let (_, mids) = c.finish();
    let m = &mids[0].counters;
    eprintln!("mid-node: received {} datagrams, unvalidated {}, spoofed {}, refused (table full) {}, names dropped {}", m.rx_packets, m.unvalidated, m.spoofed, m.state_full, m.names_expired);
    assert!(m.unvalidated + m.spoofed >= u64::from(JUNK) * 95 / 100, "the junk reached the node: {m:?}");
    std::fs::remove_dir_all(dir).unwrap();
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
    assert!(r.complete == Some(true), "{:?}", r.to_json());
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
        assert!(r.complete == Some(true));
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
    assert!(r.complete == Some(true));
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
    // An interest for content nobody serves, without a token: answered with a token only.
    evil.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    Packet::interest("nothing-here", 0, 3, 0, 0).encode(&mut b);
    evil.send_to(&b, mid_addr).unwrap();
    let mut buf = [0u8; 256];
    let n = evil.recv(&mut buf).unwrap();
    let t = packet::parse(&buf[..n]).unwrap();
    assert_eq!((t.kind, t.start, t.end), (Kind::Token, 0, 3));
    // With the token it is forwarded; the producer says nobody serves it, and the mid-node
    // relays that.
    let token = t.payload.to_vec();
    Packet { payload: &token, ..Packet::interest("nothing-here", 0, 3, 0, 0) }.encode(&mut b);
    evil.send_to(&b, mid_addr).unwrap();
    let n = evil.recv(&mut buf).unwrap();
    assert_eq!(packet::parse(&buf[..n]).unwrap().error_code(), Some(ErrorCode::UnknownContent));
    // A consumer asking for it fails with that reason.
    let e = try_get(mid_addr, "nothing-here", None, true).unwrap_err();
    assert!(e.contains("no producer serves"), "{e}");
    // A real transfer still works afterwards.
    let r = get(mid_addr, "ok.bin", None, true);
    assert!(r.complete == Some(true));
    assert_eq!(r.bytes, 50_000);
    let (p, mids) = c.finish();
    assert_eq!(mids[0].counters.malformed, 4);
    assert_eq!(mids[0].counters.spoofed, 2);
    assert_eq!(mids[0].counters.unvalidated, 3, "the first interest of evil and of each consumer's socket");
    assert_eq!(p.counters.unknown_content, 2);
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
    let (c, cfg, dir) = bulk_chain("bulk", Duration::from_millis(1500));
    let r = consumer::run(&cfg, &AtomicBool::new(false)).unwrap();
    c.finish();
    assert!(r.complete.is_none() && r.endless && r.total_segments.is_none(), "{:?}", r.to_json());
    // The JSON says so too: no `"complete": false` for a stream that has no end.
    let end = &r.to_json()["end"];
    assert!(end["complete"].is_null() && end["endless"] == true, "{end}");
    assert!(r.bytes > 1_000_000, "{}", r.bytes);
    assert!(r.intervals.len() >= 3);
    std::fs::remove_dir_all(dir).unwrap();
}
