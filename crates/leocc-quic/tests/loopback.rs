//! Real quinn transfers over loopback with `leocc quic serve`'s and `get`'s library code.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leocc_quic::events::NoEvents;
use leocc_quic::transfer::{self, GetOptions, Request, ServeOptions};
use leocc_quic::Cc;

fn free_port() -> SocketAddr {
    // Bound and released: another process could take it in between, which a loopback test
    // on this machine tolerates.
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

fn transfer(cc: Cc, bytes: u64) -> serde_json::Value {
    transfer_both(cc, Cc::Leocc, bytes, false)
}

/// A transfer of `bytes` with the server on `server_cc` and the client on `client_cc`; the
/// client sends when `reverse`.
fn transfer_both(server_cc: Cc, client_cc: Cc, bytes: u64, reverse: bool) -> serde_json::Value {
    let cc = server_cc;
    let addr = free_port();
    let cert = std::env::temp_dir().join(format!("leocc-quic-test-{}-{}.der", std::process::id(), addr.port()));
    let serve = ServeOptions {
        listen: addr,
        cc,
        cert: cert.clone(),
        once: true,
        events: Arc::new(NoEvents),
        max_clients: transfer::DEFAULT_MAX_CLIENTS,
        max_duration: transfer::DEFAULT_MAX_DURATION,
        stop: None,
    };
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
        request: Request { duration_ms: 0, bytes: Some(bytes), interval_ms: 10, reverse },
        cc: client_cc,
        events: Arc::new(NoEvents),
    })
    .unwrap();
    server.join().unwrap().unwrap();
    let _ = std::fs::remove_file(&cert);
    out
}

/// -R: the client uploads with its own controller (LeoCC here, the server on Cubic, which
/// then only acknowledges); the totals and the interval rates are the receiving server's,
/// the RTT and cwnd samples the sending client's.
#[test]
fn reverse_uploads_with_the_clients_controller_and_reports_the_receivers_rates() {
    let n = 8_000_000;
    let v = transfer_both(Cc::Cubic, Cc::Leocc, n, true);
    let end = &v["end"];
    assert_eq!(end["sum_received"]["bytes"].as_u64(), Some(n), "{end}");
    assert_eq!(end["sum_sent"]["bytes"].as_u64(), Some(n), "{end}");
    assert_eq!(end["sender_tcp_congestion"], "leocc");
    assert_eq!(v["start"]["test_start"]["sender"], "client");
    assert_eq!(v["start"]["test_start"]["reverse"], true);
    let ivs = v["intervals"].as_array().unwrap();
    let counted: u64 = ivs.iter().map(|i| i["streams"][0]["bytes"].as_u64().unwrap()).sum();
    assert_eq!(counted, n, "the receiver's intervals add up to what it received");
    assert!(ivs.iter().any(|i| i["streams"][0]["rtt"].as_u64().is_some_and(|r| r > 0)), "{ivs:?}");
    assert!(ivs.iter().any(|i| i["streams"][0]["target_bps"].as_u64().is_some()), "LeoCC ran on the client: {ivs:?}");
    assert!(end["sum_received"]["seconds"].as_f64().unwrap() > 0.0);
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
        request: Request { duration_ms: 100, bytes: None, interval_ms: 100, reverse: false },
        cc: Cc::Leocc,
        events: Arc::new(NoEvents),
    })
    .unwrap_err();
    assert!(format!("{e:#}").contains("/nonexistent/leocc.der"), "{e:#}");
}

/// Issue 34: one client asking for an hour used to lock every other client out. Now a second
/// client is served while the first runs, the hour is clamped to the server's --max-duration
/// (and the client told), a client past --max-clients is refused at once, and the stop flag
/// (SIGINT/SIGTERM in the command) ends the server.
#[test]
fn a_second_client_is_served_while_a_first_runs_and_an_hour_is_clamped() {
    static STOP: AtomicBool = AtomicBool::new(false);
    const MAX_DURATION: Duration = Duration::from_millis(2_000);
    let addr = free_port();
    let dir = leocc_quic::tls::PrivateCertDir::create().unwrap();
    let cert = dir.cert_path();
    let serve = ServeOptions {
        listen: addr,
        cc: Cc::Cubic,
        cert: cert.clone(),
        once: false,
        events: Arc::new(NoEvents),
        max_clients: 2,
        max_duration: MAX_DURATION,
        stop: Some(&STOP),
    };
    let server = std::thread::spawn(move || transfer::serve(&serve));
    for _ in 0..500 {
        if cert.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let get = |duration_ms: u64, bytes: Option<u64>| {
        let cert = cert.clone();
        std::thread::spawn(move || {
            let r = transfer::get(&GetOptions { server: addr, cert, request: Request { duration_ms, bytes, interval_ms: 100, reverse: false }, cc: Cc::Leocc, events: Arc::new(NoEvents) });
            (Instant::now(), r)
        })
    };
    let t0 = Instant::now();
    let hour = get(3_600_000, None);
    std::thread::sleep(Duration::from_millis(300));
    let second = get(1_000, None);
    std::thread::sleep(Duration::from_millis(300));
    // Two transfers under way: a third is refused at once.
    let (third_at, third) = get(1_000, None).join().unwrap();
    let e = third.unwrap_err();
    assert!(format!("{e:#}").contains("refused"), "{e:#}");
    assert!(third_at.duration_since(t0) < Duration::from_millis(1_500), "refused, not queued");
    let (second_at, second) = second.join().unwrap();
    let second = second.expect("the second client is served while the first runs");
    let (hour_at, hour) = hour.join().unwrap();
    let hour = hour.expect("the first client, clamped");
    assert!(second_at < hour_at, "the second finished while the first ran");
    assert!(second["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
    assert!(second["end"]["server_limit_ms"].is_null(), "1 s is within the limit: {}", second["end"]);
    assert_eq!(hour["end"]["server_limit_ms"].as_u64(), Some(MAX_DURATION.as_millis() as u64));
    let secs = hour["end"]["sum_sent"]["seconds"].as_f64().unwrap();
    assert!((1.9..3.0).contains(&secs), "served for the limit, not an hour: {secs} s");
    STOP.store(true, Ordering::SeqCst);
    server.join().unwrap().unwrap();
    let d = dir.dir().to_path_buf();
    drop(dir);
    assert!(!d.exists());
}
