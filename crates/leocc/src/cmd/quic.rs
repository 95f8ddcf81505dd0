//! `leocc quic serve|get`: an iperf3-like bulk transfer over QUIC (quinn) with LeoCC or quinn's
//! own controls; crates/leocc-quic does the work.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Subcommand, ValueEnum};
use leocc_quic::events::{EventSource, NoEvents, PinnedMap, Subscription};
use leocc_quic::tls::PrivateCertDir;
use leocc_quic::transfer::{self, GetOptions, Request, ServeOptions};
use leocc_quic::Cc;

/// Subcommands of `leocc quic`.
#[derive(Subcommand)]
pub enum QuicCmd {
    /// Send bulk data to each client that connects, with --cc (the sender side, like iperf3 -s
    /// but the server sends), up to --max-clients at once. Writes a fresh self-signed
    /// certificate (to --cert, or into a private temporary directory removed at exit; the path
    /// is printed) for clients to trust: a lab tool for loopback and emulator namespaces, not
    /// for real networks.
    Serve(ServeArgs),
    /// Download from `leocc quic serve` (or upload to it with -R) and print an iperf3-like
    /// summary (one line per interval, then the sender's and the receiver's totals), or with
    /// -J iperf3-like JSON (throughput per interval, the sender's RTT, cwnd and lost packets,
    /// CPU time of both ends).
    Get(GetArgs),
}

/// Detector input for LeoCC.
#[derive(Clone, Copy, ValueEnum)]
pub enum EventsArg {
    /// Subscribe to `leocc probe`'s socket (run dir/events.sock); root or group `leocc`.
    Socket,
    /// Poll the pinned kernel signal map (/sys/fs/bpf/leocc/signal); needs bpffs access.
    Map,
    /// No detector: LeoCC without reconfiguration events.
    None,
}

/// Options of `leocc quic serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// UDP address to listen on.
    #[arg(long, default_value = "0.0.0.0:4433")]
    listen: SocketAddr,
    /// Congestion control: leocc, cubic, newreno or bbr.
    #[arg(long, default_value = "leocc", value_parser = Cc::parse)]
    cc: Cc,
    /// Where to write the server's self-signed certificate (DER) [default: a private directory
    /// $TMPDIR/leocc-quic-XXXXXX (mode 0700, removed at exit); the path is printed].
    #[arg(long, value_name = "PATH")]
    cert: Option<PathBuf>,
    /// Serve one transfer, then exit.
    #[arg(long, short = '1')]
    once: bool,
    /// Transfers served at once; further clients are refused.
    #[arg(long, value_name = "N", default_value_t = transfer::DEFAULT_MAX_CLIENTS)]
    max_clients: usize,
    /// Longest transfer, seconds: a longer request is served this long (and the client told).
    #[arg(long, value_name = "S", default_value_t = transfer::DEFAULT_MAX_DURATION.as_secs_f64())]
    max_duration: f64,
    /// Where LeoCC's reconfiguration events come from.
    #[arg(long, value_enum, default_value = "socket")]
    events: EventsArg,
    /// The detector's socket [default: leocc probe's run directory/events.sock].
    #[arg(long, value_name = "PATH")]
    events_socket: Option<PathBuf>,
}

/// Options of `leocc quic get`.
#[derive(Args)]
pub struct GetArgs {
    /// Server address.
    #[arg(value_name = "ADDR:PORT")]
    server: SocketAddr,
    /// The server's certificate: the path `leocc quic serve` printed (or its --cert).
    #[arg(long, value_name = "PATH", required = true)]
    cert: PathBuf,
    /// Transfer duration, seconds.
    #[arg(long, short = 't', default_value_t = 10.0)]
    time: f64,
    /// Transfer this many bytes instead of for --time.
    #[arg(long, short = 'n')]
    bytes: Option<u64>,
    /// Reporting interval, seconds (default: 1 for the text summary, 0.1 with -J).
    #[arg(long, short = 'i')]
    interval: Option<f64>,
    /// Print iperf3-like JSON instead of the text summary.
    #[arg(long = "json", short = 'J')]
    json: bool,
    /// Parallel connections, each its own transfer (as iperf3 -P; the server's
    /// --max-clients bounds them). The summary adds them up.
    #[arg(long = "parallel", short = 'P', default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=128))]
    parallel: u16,
    /// Reverse the direction: the client sends (uploads) to the server, with --cc, and the
    /// server receives. Without -R the server sends with its own --cc (the opposite of
    /// iperf3, whose client sends unless -R). With -R the interval rates and the receiver total
    /// are the server's, the side that received (as iperf3 reports), and the RTT, cwnd and
    /// losses the client's.
    #[arg(long = "reverse", short = 'R')]
    reverse: bool,
    /// The client's congestion control when it sends (-R): leocc, cubic, newreno or bbr
    /// [default: leocc]. Without -R the server's --cc decides.
    #[arg(long, value_parser = Cc::parse, requires = "reverse")]
    cc: Option<Cc>,
    /// Where the client's LeoCC gets reconfiguration events (-R with --cc leocc), as for
    /// `leocc quic serve`.
    #[arg(long, value_enum, default_value = "socket", requires = "reverse")]
    events: EventsArg,
    /// The detector's socket [default: leocc probe's run directory/events.sock].
    #[arg(long, value_name = "PATH", requires = "reverse")]
    events_socket: Option<PathBuf>,
}

/// LeoCC's detector input for `cc` as chosen by `--events` (only LeoCC uses one).
fn event_source(cc: Cc, events: EventsArg, socket: Option<PathBuf>) -> Arc<dyn EventSource> {
    match (cc, events) {
        (Cc::Leocc, EventsArg::Socket) => Subscription::start(&socket.unwrap_or_else(leocc_probe::subscribe::socket_path)),
        (Cc::Leocc, EventsArg::Map) => Arc::new(PinnedMap::default()),
        _ => Arc::new(NoEvents),
    }
}

/// Set by SIGINT/SIGTERM: the server stops and removes its private certificate directory.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn install_stop_handlers() {
    use leocc_base::signal::{install, Handler};
    // The handler only stores to an atomic, which is async-signal-safe. No SA_RESTART (as
    // before the shared installer).
    install(&[libc::SIGINT, libc::SIGTERM], Handler::Plain(on_stop), false);
}

/// Runs `leocc quic ...`.
pub fn run(c: QuicCmd) -> anyhow::Result<()> {
    match c {
        QuicCmd::Serve(a) => {
            let events = event_source(a.cc, a.events, a.events_socket);
            if a.max_clients == 0 {
                bail!("--max-clients must be at least 1");
            }
            if !(a.max_duration.is_finite() && a.max_duration > 0.0) {
                bail!("--max-duration must be a positive number of seconds (got {})", a.max_duration);
            }
            // Held until serve returns: dropping it removes the directory and the certificate.
            let private = match &a.cert {
                Some(_) => None,
                None => Some(PrivateCertDir::create()?),
            };
            let cert = a.cert.clone().unwrap_or_else(|| private.as_ref().map(PrivateCertDir::cert_path).expect("made above"));
            install_stop_handlers();
            transfer::serve(&ServeOptions {
                listen: a.listen,
                cc: a.cc,
                cert,
                once: a.once,
                events,
                max_clients: a.max_clients,
                max_duration: Duration::from_secs_f64(a.max_duration),
                stop: Some(&STOP),
            })
        }
        QuicCmd::Get(a) => {
            let interval = a.interval.unwrap_or(if a.json { 0.1 } else { 1.0 });
            if !(a.time > 0.0 && a.time.is_finite() && interval > 0.0 && interval.is_finite()) {
                bail!("--time and --interval must be positive seconds");
            }
            let request = Request { duration_ms: (a.time * 1e3) as u64, bytes: a.bytes, interval_ms: ((interval * 1e3) as u64).max(1), reverse: a.reverse };
            let cc = a.cc.unwrap_or(Cc::Leocc);
            // Only a sending client runs a controller (and subscribes to the detector).
            let events: Arc<dyn EventSource> = if a.reverse { event_source(cc, a.events, a.events_socket) } else { Arc::new(NoEvents) };
            let opts = GetOptions { server: a.server, cert: a.cert, request, cc, events };
            let v = if a.parallel == 1 {
                transfer::get(&opts)?
            } else {
                // One connection per thread, each with its own runtime: independent transfers
                // that the server serves at once, as iperf3's parallel streams.
                let results: Vec<anyhow::Result<serde_json::Value>> = std::thread::scope(|s| {
                    let handles: Vec<_> = (0..a.parallel).map(|_| s.spawn(|| transfer::get(&opts))).collect();
                    handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a transfer thread panicked")))).collect()
                });
                let all = results.into_iter().enumerate().map(|(i, r)| r.map_err(|e| e.context(format!("connection {} of {}", i + 1, a.parallel)))).collect::<anyhow::Result<Vec<_>>>()?;
                merge_parallel(all)
            };
            if a.json {
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", text_summary(&v));
            }
            Ok(())
        }
    }
}

/// The results of parallel connections as one iperf3-like JSON object: each interval lists
/// every connection's stream (iperf3's `streams[]`) and their `sum`; `end` adds up the totals
/// (received bytes over the longest connection's time) and keeps each connection's under
/// `end.streams`.
fn merge_parallel(all: Vec<serde_json::Value>) -> serde_json::Value {
    use serde_json::{json, Value};
    let n_iv = all.iter().map(|v| v["intervals"].as_array().map_or(0, Vec::len)).max().unwrap_or(0);
    let intervals: Vec<Value> = (0..n_iv)
        .map(|i| {
            let streams: Vec<Value> = all.iter().filter_map(|v| v["intervals"][i]["streams"][0].as_object().cloned().map(Value::Object)).collect();
            let sum = |k: &str| streams.iter().filter_map(|s| s[k].as_f64()).sum::<f64>();
            let (start, end) = (streams.first().map_or(0.0, |s| s["start"].as_f64().unwrap_or(0.0)), streams.first().map_or(0.0, |s| s["end"].as_f64().unwrap_or(0.0)));
            json!({ "streams": streams, "sum": { "start": start, "end": end, "bytes": sum("bytes"), "bits_per_second": sum("bits_per_second"), "lost_packets": sum("lost_packets") } })
        })
        .collect();
    let total = |side: &str, k: &str| all.iter().filter_map(|v| v["end"][side][k].as_f64()).sum::<f64>();
    let longest = |side: &str| all.iter().filter_map(|v| v["end"][side]["seconds"].as_f64()).fold(0.0, f64::max);
    let mut out = all[0].clone();
    out["intervals"] = Value::Array(intervals);
    let (sent_s, recv_s) = (longest("sum_sent"), longest("sum_received"));
    out["end"]["sum_sent"] = json!({
        "bytes": total("sum_sent", "bytes"), "seconds": sent_s,
        "bits_per_second": total("sum_sent", "bytes") * 8.0 / sent_s.max(1e-9),
        "retransmits": total("sum_sent", "retransmits"), "sent_packets": total("sum_sent", "sent_packets"),
        "wire_bytes": total("sum_sent", "wire_bytes"),
    });
    out["end"]["sum_received"] = json!({
        "bytes": total("sum_received", "bytes"), "seconds": recv_s,
        "bits_per_second": total("sum_received", "bytes") * 8.0 / recv_s.max(1e-9),
    });
    out["end"]["streams"] = Value::Array(all.iter().map(|v| json!({ "sum_sent": v["end"]["sum_sent"], "sum_received": v["end"]["sum_received"] })).collect());
    out["start"]["test_start"]["num_streams"] = json!(all.len());
    out
}

/// Bytes as iperf3 prints them: KBytes, MBytes or GBytes (powers of 1024).
fn fmt_bytes(b: f64) -> String {
    match b {
        b if b >= 1024.0 * 1024.0 * 1024.0 => format!("{:.2} GBytes", b / (1024.0 * 1024.0 * 1024.0)),
        b if b >= 1024.0 * 1024.0 => format!("{:.1} MBytes", b / (1024.0 * 1024.0)),
        b => format!("{:.0} KBytes", b / 1024.0),
    }
}

/// A rate as iperf3 prints it: Kbits/sec, Mbits/sec or Gbits/sec (powers of 1000).
fn fmt_rate(bps: f64) -> String {
    match bps {
        r if r >= 1e9 => format!("{:.2} Gbits/sec", r / 1e9),
        r if r >= 1e6 => format!("{:.1} Mbits/sec", r / 1e6),
        r => format!("{:.0} Kbits/sec", r / 1e3),
    }
}

/// The text summary of `leocc quic get` (iperf3's layout): a line per interval with the
/// throughput and the sender's lost packets, congestion window and RTT, then the sender's and
/// the receiver's totals.
fn text_summary(v: &serde_json::Value) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let conn = &v["start"]["connected"][0];
    let cc = v["end"]["sender_tcp_congestion"].as_str().unwrap_or("?");
    let streams = v["start"]["test_start"]["num_streams"].as_u64().unwrap_or(1);
    let sender = v["start"]["test_start"]["sender"].as_str().unwrap_or("server");
    let _ = writeln!(
        s,
        "Connected to {} port {} (QUIC, {sender} sends with {cc}{})",
        conn["remote_host"].as_str().unwrap_or("?"),
        conn["remote_port"],
        if streams > 1 { format!(", {streams} parallel connections") } else { String::new() }
    );
    let _ = writeln!(s, "[ ID] Interval           Transfer      Bitrate          Lost  Cwnd          RTT");
    let id = if streams > 1 { "SUM".to_string() } else { "  1".to_string() };
    for iv in v["intervals"].as_array().into_iter().flatten() {
        let one = &iv["streams"][0];
        let row = if iv["sum"].is_object() { &iv["sum"] } else { one };
        let f = |x: &serde_json::Value, k: &str| x[k].as_f64().unwrap_or(0.0);
        let cwnd_rtt = if streams > 1 {
            String::new()
        } else {
            format!("  {:>12}  {:>5.1} ms", fmt_bytes(f(one, "snd_cwnd")), f(one, "rtt") / 1e3)
        };
        let _ = writeln!(
            s,
            "[{id}] {:>6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}{cwnd_rtt}",
            f(row, "start"),
            f(row, "end"),
            fmt_bytes(f(row, "bytes")),
            fmt_rate(f(row, "bits_per_second")),
            f(row, "lost_packets")
        );
    }
    let end = &v["end"];
    let f = |side: &str, k: &str| end[side][k].as_f64().unwrap_or(0.0);
    let _ = writeln!(s, "- - - - - - - - - - - - - - - - - - - - - - - - -");
    let _ = writeln!(
        s,
        "[{id}]   0.00-{:<6.2} sec  {:>12}  {:>15}  {:>4}  sender",
        f("sum_sent", "seconds"),
        fmt_bytes(f("sum_sent", "bytes")),
        fmt_rate(f("sum_sent", "bits_per_second")),
        f("sum_sent", "retransmits")
    );
    let _ = writeln!(
        s,
        "[{id}]   0.00-{:<6.2} sec  {:>12}  {:>15}        receiver",
        f("sum_received", "seconds"),
        fmt_bytes(f("sum_received", "bytes")),
        fmt_rate(f("sum_received", "bits_per_second"))
    );
    if let Some(min) = end["min_rtt"].as_f64().filter(|m| *m > 0.0) {
        let _ = writeln!(s, "min RTT {:.1} ms; CPU: sender {:.2} s, receiver {:.2} s", min / 1e3, end["cpu"]["sender_s"].as_f64().unwrap_or(0.0), end["cpu"]["receiver_s"].as_f64().unwrap_or(0.0));
    }
    s
}
