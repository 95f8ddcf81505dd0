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
    /// Download from `leocc quic serve` and print iperf3-like JSON (throughput per interval,
    /// the sender's RTT, cwnd and lost packets, CPU time of both ends) on stdout.
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
    /// Reporting interval, seconds.
    #[arg(long, short = 'i', default_value_t = 0.1)]
    interval: f64,
}

/// Set by SIGINT/SIGTERM: the server stops and removes its private certificate directory.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn install_stop_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            let h: extern "C" fn(libc::c_int) = on_stop;
            sa.sa_sigaction = h as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
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
            if !(a.time > 0.0 && a.time.is_finite() && a.interval > 0.0 && a.interval.is_finite()) {
                bail!("--time and --interval must be positive seconds");
            }
            let request = Request { duration_ms: (a.time * 1e3) as u64, bytes: a.bytes, interval_ms: ((a.interval * 1e3) as u64).max(1) };
            let v = transfer::get(&GetOptions { server: a.server, cert: a.cert, request })?;
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(())
        }
    }
}
