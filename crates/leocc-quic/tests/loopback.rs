//! Real quinn transfers over loopback with `leocc quic serve`'s and `get`'s library code.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

use leocc_quic::events::NoEvents;
use leocc_quic::transfer::{self, GetOptions, Request, ServeOptions};
use leocc_quic::Cc;

fn free_port() -> SocketAddr {
    // Bound and released: another process could take it in between, which a loopback test
    // on this machine tolerates.
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

fn transfer(cc: Cc, bytes: u64) -> serde_json::Value {
    let addr = free_port();
    let cert = std::env::temp_dir().join(format!("leocc-quic-test-{}-{}.der", std::process::id(), addr.port()));
    let serve = ServeOptions { listen: addr, cc, cert: cert.clone(), once: true, events: Arc::new(NoEvents) };
    let server = std::thread::spawn(move || transfer::serve(&serve));
    // The certificate file appears once the server is listening.
    for _ in 0..500 {
        if cert.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = transfer::get(&GetOptions {
        server: addr,
        cert: cert.clone(),
        request: Request { duration_ms: 0, bytes: Some(bytes), interval_ms: 10 },
    })
    .unwrap();
    server.join().unwrap().unwrap();
    let _ = std::fs::remove_file(&cert);
    out
}

#[test]
fn leocc_transfers_exactly_the_requested_bytes_over_loopback() {
    let n = 20_000_000;
    let v = transfer(Cc::Leocc, n);
    let end = &v["end"];
    assert_eq!(end["sum_received"]["bytes"].as_u64(), Some(n));
    assert_eq!(end["sum_sent"]["bytes"].as_u64(), Some(n));
    assert_eq!(v["start"]["test_start"]["cc"], "leocc");
    let ivs = v["intervals"].as_array().unwrap();
    assert!(!ivs.is_empty());
    let s = &ivs[ivs.len() - 1]["streams"][0];
    assert!(s["rtt"].as_u64().unwrap() > 0, "{s}");
    // LeoCC's own rate is reported per interval.
    assert!(ivs.iter().any(|iv| iv["streams"][0]["target_bps"].as_u64().unwrap_or(0) > 0));
    assert!(end["cpu"]["sender_s"].as_f64().unwrap() > 0.0);
    assert!(end["sum_sent"]["wire_bytes"].as_u64().unwrap() > n / 2);
}

#[test]
fn quinn_controls_run_through_the_same_tool() {
    for cc in [Cc::Cubic, Cc::Newreno, Cc::Bbr] {
        let v = transfer(cc, 2_000_000);
        assert_eq!(v["end"]["sum_received"]["bytes"].as_u64(), Some(2_000_000), "{}", cc.name());
        assert_eq!(v["start"]["test_start"]["cc"], cc.name());
        assert!(v["intervals"][0]["streams"][0].get("target_bps").is_none());
    }
}

#[test]
fn a_client_without_the_server_certificate_fails_with_the_path() {
    let e = transfer::get(&GetOptions {
        server: free_port(),
        cert: "/nonexistent/leocc.der".into(),
        request: Request { duration_ms: 100, bytes: None, interval_ms: 100 },
    })
    .unwrap_err();
    assert!(format!("{e:#}").contains("/nonexistent/leocc.der"), "{e:#}");
}
