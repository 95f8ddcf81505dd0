//! `leocc quic serve|get`: an iperf3-like bulk transfer over QUIC (quinn) with LeoCC or quinn's
//! own controls; crates/leocc-quic does the work.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;
use clap::{Args, Subcommand, ValueEnum};
use leocc_quic::events::{EventSource, NoEvents, PinnedMap, Subscription};
use leocc_quic::transfer::{self, GetOptions, Request, ServeOptions};
use leocc_quic::Cc;

/// Subcommands of `leocc quic`.
#[derive(Subcommand)]
pub enum QuicCmd {
    /// Send bulk data to each client that connects, with --cc (the sender side, like iperf3 -s
    /// but the server sends). Writes a self-signed certificate to --cert for clients to trust:
    /// a lab tool for loopback and emulator namespaces, not for real networks.
    Serve(ServeArgs),
    /// Download from `leocc quic serve` and print iperf3-like JSON (throughput per interval,
    /// the sender's RTT, cwnd and lost packets, CPU time of both ends) on stdout.
    Get(GetArgs),
}

/// Detector input for LeoCC.
#[derive(Clone, Copy, ValueEnum)]
pub enum EventsArg {
    /// Subscribe to `leocc probe`'s socket (run dir/events.sock); unprivileged.
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
    /// Where to write the server's self-signed certificate (DER) [default: $TMPDIR/leocc-quic-PORT.der].
    #[arg(long, value_name = "PATH")]
    cert: Option<PathBuf>,
    /// Serve one transfer, then exit.
    #[arg(long, short = '1')]
    once: bool,
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
    /// The server's certificate, as `serve --cert` wrote it [default: $TMPDIR/leocc-quic-PORT.der].
    #[arg(long, value_name = "PATH")]
    cert: Option<PathBuf>,
    /// Transfer duration, seconds.
    #[arg(long, short = 't', default_value_t = 10.0)]
    time: f64,
    /// Transfer this many bytes instead of for --time.
    #[arg(long, short = 'n')]
    bytes: Option<u64>,
    /// Reporting interval, seconds.
    #[arg(long, short = 'i', default_value_t = 0.1)]
    interval: f64,
}

fn default_cert(port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("leocc-quic-{port}.der"))
}

/// Runs `leocc quic ...`.
pub fn run(c: QuicCmd) -> anyhow::Result<()> {
    match c {
        QuicCmd::Serve(a) => {
            let events: Arc<dyn EventSource> = match (a.cc, a.events) {
                (Cc::Leocc, EventsArg::Socket) => {
                    Subscription::start(&a.events_socket.unwrap_or_else(leocc_probe::subscribe::socket_path))
                }
                (Cc::Leocc, EventsArg::Map) => Arc::new(PinnedMap::default()),
                _ => Arc::new(NoEvents),
            };
            let cert = a.cert.unwrap_or_else(|| default_cert(a.listen.port()));
            transfer::serve(&ServeOptions { listen: a.listen, cc: a.cc, cert, once: a.once, events })
        }
        QuicCmd::Get(a) => {
            if !(a.time > 0.0 && a.time.is_finite() && a.interval > 0.0 && a.interval.is_finite()) {
                bail!("--time and --interval must be positive seconds");
            }
            let request = Request { duration_ms: (a.time * 1e3) as u64, bytes: a.bytes, interval_ms: ((a.interval * 1e3) as u64).max(1) };
            let cert = a.cert.unwrap_or_else(|| default_cert(a.server.port()));
            let v = transfer::get(&GetOptions { server: a.server, cert, request })?;
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(())
        }
    }
}
