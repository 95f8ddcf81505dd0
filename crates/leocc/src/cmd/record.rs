//! `leocc record` and `leocc record-server`: capture a real link into a trace.
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;

use leocc_emu::record::{self, RecordConfig, DEFAULT_PORT};
use leocc_trace::Dir;

const BITS_PER_MBIT: f64 = 1e6;

/// `leocc record`: one saturating UDP flow for capacity plus a 10 ms ICMP ping for delay and
/// loss, written as a trace.
#[derive(Args)]
pub struct RecordArgs {
    /// The record-server, HOST or HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    server: String,
    /// Seconds to record.
    #[arg(long, value_name = "S")]
    duration: f64,
    /// Output trace (our format).
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    output: PathBuf,
    /// Measure the uplink (client -> server) instead of the downlink.
    #[arg(long)]
    uplink: bool,
    /// Sending rate of the saturating flow, Mbit/s; must exceed the link's capacity.
    #[arg(long, default_value_t = 250.0)]
    rate: f64,
    /// Address to ping instead of the server (e.g. the PoP).
    #[arg(long, value_name = "ADDR")]
    ping: Option<std::net::Ipv4Addr>,
    /// Trace name stored in the metadata [default: the output file's stem].
    #[arg(long)]
    name: Option<String>,
}

fn resolve(s: &str) -> anyhow::Result<SocketAddr> {
    let with_port = if s.contains(':') { s.to_string() } else { format!("{s}:{DEFAULT_PORT}") };
    with_port.to_socket_addrs().with_context(|| format!("resolve {s}"))?.next().with_context(|| format!("{s}: no address"))
}

/// Runs `leocc record`.
pub fn run(a: RecordArgs) -> anyhow::Result<()> {
    if !(a.duration.is_finite() && a.duration > 0.0) {
        bail!("--duration must be a positive number of seconds");
    }
    if !(a.rate.is_finite() && a.rate > 0.0) {
        bail!("--rate must be a positive number of Mbit/s");
    }
    let name = a.name.clone().unwrap_or_else(|| a.output.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
    let cfg = RecordConfig {
        server: resolve(&a.server)?,
        duration: Duration::from_secs_f64(a.duration),
        dir: if a.uplink { Dir::Up } else { Dir::Down },
        rate_bps: (a.rate * BITS_PER_MBIT) as u64,
        ping: a.ping,
        name,
    };
    let rec = record::record(&cfg)?;
    rec.trace.save(&a.output)?;
    eprintln!(
        "leocc record: {} datagrams, {} of {} pings answered; wrote {}",
        rec.packets,
        rec.pings_answered,
        rec.pings_sent,
        a.output.display()
    );
    Ok(())
}

/// `leocc record-server`: the far end of `leocc record`.
#[derive(Args)]
pub struct RecordServerArgs {
    /// TCP (control) and UDP (data) port.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Serve one recording, then exit.
    #[arg(long)]
    once: bool,
}

/// Runs `leocc record-server`.
pub fn serve(a: RecordServerArgs) -> anyhow::Result<()> {
    let never = AtomicBool::new(false);
    record::serve(a.port, a.once, &never)?;
    Ok(())
}
