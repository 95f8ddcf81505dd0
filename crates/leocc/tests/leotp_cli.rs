//! `leocc leotp serve|mid|get` as programs, on loopback: the two attacks of issue 34 on the
//! LEOTP programs, at a bounded size (one interest; 1,100 names), against the real binaries.

use leocc_leotp::packet::{self, Kind, Packet};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A LEOTP program running in the background, killed when dropped.
struct Program {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `leocc leotp ARGS` and waits for its "listening on ADDR" line.
fn start(args: &[&str]) -> Program {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leocc")).arg("leotp").args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start leocc leotp");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split("listening on ").nth(1).and_then(|r| r.split([' ', ',']).next()).and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("no address in {line:?}"));
    Program { child, addr }
}

fn encode(p: &Packet) -> Vec<u8> {
    let mut b = Vec::new();
    p.encode(&mut b);
    b
}

/// Every datagram arriving on `s` until nothing has come for `quiet`.
fn drain(s: &UdpSocket, quiet: Duration) -> Vec<Vec<u8>> {
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let (mut got, mut last, mut buf) = (Vec::new(), Instant::now(), vec![0u8; 2048]);
    while last.elapsed() < quiet {
        if let Ok(n) = s.recv(&mut buf) {
            got.push(buf[..n].to_vec());
            last = Instant::now();
        }
    }
    got
}

/// The measurement: one 36-byte interest for 1,024 segments of `bulk`, from an
/// address the producer has never seen. Version 1 answered with 1,470,464 bytes (40,846 x);
/// now with one token packet, at most 3 x.
#[test]
fn leotp_serve_reflects_at_most_three_times_to_an_unvalidated_source() {
    let serve = start(&["serve", "--listen", "127.0.0.1:0", "--duration", "20"]);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(serve.addr).unwrap();
    let interest = encode(&Packet::interest("bulk", 0, packet::MAX_RANGE, 0, 0));
    assert_eq!(interest.len(), 36);
    s.send(&interest).unwrap();
    let back = drain(&s, Duration::from_millis(500));
    let bytes: usize = back.iter().map(Vec::len).sum();
    eprintln!("sent {} B, got {} datagrams, {bytes} B back: {:.2} x", interest.len(), back.len(), bytes as f64 / interest.len() as f64);
    assert!(bytes <= 3 * interest.len(), "{bytes} B back for {} B", interest.len());
    let t = packet::parse(&back[0]).unwrap();
    assert_eq!(t.kind, Kind::Token);
}

/// `get` never reports an empty success: a content nobody serves, and a mid-node whose name
/// table is full, end it with a non-zero exit and the reason.
#[test]
fn leotp_get_fails_clearly_when_a_node_refuses() {
    let serve = start(&["serve", "--listen", "127.0.0.1:0", "--duration", "30"]);
    let get = |first_hop: SocketAddr, name: &str| Command::new(env!("CARGO_BIN_EXE_leocc")).args(["leotp", "get", &first_hop.to_string(), name, "-t", "5"]).output().unwrap();
    let o = get(serve.addr, "nothing-here");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no producer serves"), "{err}");

    let mid = start(&["mid", "--listen", "127.0.0.1:0", "--upstream", &serve.addr.to_string(), "--duration", "30"]);
    // 1,100 validated requests for contents that exist (`bulk-N`) fill its 1,024 names.
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(mid.addr).unwrap();
    s.send(&encode(&Packet::interest("bulk-x", 0, 1, 0, 0))).unwrap();
    let token = drain(&s, Duration::from_millis(300)).into_iter().find_map(|d| packet::parse(&d).ok().filter(|p| p.kind == Kind::Token).map(|p| p.payload.to_vec())).expect("a token");
    for i in 0..1_100 {
        s.send(&encode(&Packet { payload: &token, ..Packet::interest(&format!("bulk-{i}"), 0, 1, 0, 0) })).unwrap();
        if i % 128 == 127 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let o = get(mid.addr, "bulk");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("table is full"), "{err}");
}
