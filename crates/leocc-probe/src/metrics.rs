//! The detector's measurements in Prometheus' text format (`leocc probe --metrics ADDR`):
//! probes sent and answered, the terminal-PoP RTT (latest, smoothed, minimum, and a histogram),
//! the loss of the last second, reconfigurations and weak candidates with the last event's
//! confidence and time, and whether the PoP answers.
//!
//! The daemon's loop updates a [`Snapshot`] behind a mutex at each probe and reply (a few
//! stores); a thread of its own answers `GET /metrics` from it, so a slow or hostile scraper
//! never delays a probe. Each connection is served in turn with a read timeout and a request
//! size bound; anything but `GET /metrics` gets 404 (or 400 when it is not HTTP).

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upper bounds of the RTT histogram's buckets, seconds: 5 ms to 2 s, finer where LEO RTTs
/// lie (20-80 ms to the PoP).
pub const RTT_BUCKETS_S: [f64; 14] = [0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0, 2.0];
/// A scraper gets this long to send its request, and to take the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest request read (a scrape's request is a few hundred bytes).
const MAX_REQUEST: usize = 8192;

/// What the exporter reports; the daemon fills it in.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub sent: u64,
    pub replies: u64,
    pub reconfigurations: u64,
    pub weak: u64,
    /// Latest, smoothed and minimum RTT, seconds (NaN before the first reply).
    pub rtt_s: f64,
    pub srtt_s: f64,
    pub min_rtt_s: f64,
    /// Share of the probes of the last second without a reply (NaN before any).
    pub loss: f64,
    /// Confidence (0-100) and Unix time of the latest reconfiguration (NaN before one).
    pub last_confidence: f64,
    pub last_reconfiguration_s: f64,
    pub reachable: bool,
    /// Per bucket of [`RTT_BUCKETS_S`] (not cumulative), then the sum and count.
    pub rtt_counts: [u64; RTT_BUCKETS_S.len()],
    pub rtt_sum_s: f64,
    pub rtt_count: u64,
}

impl Snapshot {
    /// A fresh snapshot: nothing measured yet.
    pub fn new() -> Snapshot {
        Snapshot { rtt_s: f64::NAN, srtt_s: f64::NAN, min_rtt_s: f64::NAN, loss: f64::NAN, last_confidence: f64::NAN, last_reconfiguration_s: f64::NAN, reachable: true, ..Snapshot::default() }
    }

    /// A reply's RTT into the histogram.
    pub fn observe_rtt(&mut self, rtt_s: f64) {
        if let Some(i) = RTT_BUCKETS_S.iter().position(|&b| rtt_s <= b) {
            self.rtt_counts[i] += 1;
        }
        self.rtt_sum_s += rtt_s;
        self.rtt_count += 1;
        self.rtt_s = rtt_s;
    }

    /// The exposition (text format 0.0.4).
    pub fn render(&self) -> String {
        let mut o = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}", number(value));
        };
        metric("leocc_probe_sent_total", "counter", "ICMP probes sent to the PoP.", self.sent as f64);
        metric("leocc_probe_replies_total", "counter", "Valid replies from the PoP.", self.replies as f64);
        metric("leocc_probe_reconfigurations_total", "counter", "Reconfigurations detected (published).", self.reconfigurations as f64);
        metric("leocc_probe_weak_candidates_total", "counter", "Candidates below the confidence threshold (logged, not published).", self.weak as f64);
        metric("leocc_probe_last_rtt_seconds", "gauge", "Round-trip time of the latest reply.", self.rtt_s);
        metric("leocc_probe_srtt_seconds", "gauge", "Smoothed round-trip time.", self.srtt_s);
        metric("leocc_probe_min_rtt_seconds", "gauge", "Windowed minimum round-trip time.", self.min_rtt_s);
        metric("leocc_probe_loss_ratio", "gauge", "Share of the last second's probes without a reply.", self.loss);
        metric("leocc_probe_last_reconfiguration_confidence", "gauge", "Confidence (0-100) of the latest reconfiguration.", self.last_confidence);
        metric("leocc_probe_last_reconfiguration_timestamp_seconds", "gauge", "Unix time the latest reconfiguration was detected.", self.last_reconfiguration_s);
        metric("leocc_probe_pop_reachable", "gauge", "1 while the PoP answers, 0 once it has been silent too long.", if self.reachable { 1.0 } else { 0.0 });
        let name = "leocc_probe_rtt_seconds";
        let _ = writeln!(o, "# HELP {name} Round-trip times of the replies.\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (b, c) in RTT_BUCKETS_S.iter().zip(self.rtt_counts) {
            cumulative += c;
            let _ = writeln!(o, "{name}_bucket{{le=\"{b}\"}} {cumulative}");
        }
        let _ = writeln!(o, "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {}\n{name}_count {}", self.rtt_count, number(self.rtt_sum_s), self.rtt_count);
        o
    }
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

/// The exporter: the shared snapshot and the thread that serves it.
#[derive(Clone)]
pub struct Exporter {
    snapshot: Arc<Mutex<Snapshot>>,
    addr: SocketAddr,
}

impl Exporter {
    /// Binds `addr` and starts serving; the error names the address.
    pub fn start(addr: SocketAddr) -> Result<Exporter, String> {
        let listener = TcpListener::bind(addr).map_err(|e| format!("--metrics {addr}: cannot listen ({e})"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let snapshot = Arc::new(Mutex::new(Snapshot::new()));
        let shared = Arc::clone(&snapshot);
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    serve(conn, &shared);
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Exporter { snapshot, addr })
    }

    /// The address it listens on (the port chosen when ADDR asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the snapshot.
    pub fn update(&self, f: impl FnOnce(&mut Snapshot)) {
        if let Ok(mut s) = self.snapshot.lock() {
            f(&mut s);
        }
    }
}

fn serve(mut conn: TcpStream, snapshot: &Mutex<Snapshot>) {
    let _ = conn.set_read_timeout(Some(IO_TIMEOUT));
    let _ = conn.set_write_timeout(Some(IO_TIMEOUT));
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < MAX_REQUEST {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let line = req.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or(&[]);
    let mut words = line.split(|&b| b == b' ');
    let (method, path) = (words.next().unwrap_or(&[]), words.next().unwrap_or(&[]));
    let (status, kind, body) = match (method, path) {
        (b"GET", b"/metrics") => {
            let body = snapshot.lock().map(|s| s.render()).unwrap_or_default();
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
        }
        (b"GET", _) => ("404 Not Found", "text/plain", "only /metrics is served here\n".into()),
        _ => ("400 Bad Request", "text/plain", "expected GET /metrics\n".into()),
    };
    let head = format!("HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    let _ = conn.write_all(head.as_bytes()).and_then(|_| conn.write_all(body.as_bytes()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_snapshot_and_refuses_the_rest() {
        let e = Exporter::start("127.0.0.1:0".parse().unwrap()).unwrap();
        e.update(|s| {
            s.sent = 10;
            s.replies = 3;
            for r in [0.012, 0.031, 3.0] {
                s.observe_rtt(r);
            }
            s.last_confidence = 87.0;
        });
        let r = get(e.addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("\nleocc_probe_sent_total 10\n") && r.contains("\nleocc_probe_last_reconfiguration_confidence 87\n"), "{r}");
        // Cumulative buckets; the 3 s reply is only in +Inf.
        assert!(r.contains("leocc_probe_rtt_seconds_bucket{le=\"0.015\"} 1\n") && r.contains("leocc_probe_rtt_seconds_bucket{le=\"0.04\"} 2\n"), "{r}");
        assert!(r.contains("leocc_probe_rtt_seconds_bucket{le=\"2\"} 2\n") && r.contains("leocc_probe_rtt_seconds_bucket{le=\"+Inf\"} 3\n"), "{r}");
        assert!(r.contains("\nleocc_probe_loss_ratio NaN\n"), "nothing measured is NaN, not 0: {r}");
        assert!(get(e.addr(), "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(e.addr(), "\x16\x03\x01garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
        // A scraper that connects and says nothing does not block the next one for long.
        let _idle = TcpStream::connect(e.addr()).unwrap();
        assert!(get(e.addr(), "GET /metrics HTTP/1.0\r\n\r\n").contains("leocc_probe_replies_total 3"));
    }
}
