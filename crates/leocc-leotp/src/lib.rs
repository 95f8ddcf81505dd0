//! LEOTP (seed 003, ICDCS 2023): a hop-by-hop, information-centric transport for LEO paths.
//!
//! Instead of one end-to-end control loop, the path is segmented: a consumer requests named
//! segments, a producer answers, and a mid-node on every hop caches what passes, repairs
//! losses of its upstream hop from its neighbour's cache (announcing the repair downstream
//! with a Void Packet Header so it happens once), and runs its own congestion control per hop
//! with backpressure (eq. 6–9). The consumer's timeout keeps end-to-end reliability.
//!
//! Module map: `packet` is the versioned wire format (parser never panics); `addrval` the
//! address tokens that keep a node from being a reflector; `names` a node's bounded, expiring
//! table of content names; `cache` the
//! bounded segment cache; `hopcc` the per-hop controller; `requester` the requesting side of
//! a hop (pacing, RTT, hole detection) shared by `consumer` and `mid`; `producer` serves
//! content; `counters` and `report` are what the programs print; `net` sockets and clocks.

pub mod addrval;
pub mod bench;
pub mod cache;
pub mod consumer;
pub mod counters;
pub mod hopcc;
pub mod mid;
pub mod names;
pub mod net;
pub mod packet;
pub mod producer;
pub mod report;
pub mod requester;

/// Most content names (flows) a node keeps state for at once: a bound against junk names
/// (`names::Names` expires idle ones).
pub const MAX_FLOWS: usize = 1024;
/// UDP port the programs use when an address names none (unassigned by IANA).
pub const DEFAULT_PORT: u16 = 5301;

/// Resolves `host[:port]` (port defaults to `DEFAULT_PORT`); the error names the input.
pub fn resolve(addr: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let with_port = if addr.parse::<std::net::SocketAddr>().is_ok() || addr.rsplit_once(':').is_some_and(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok()) {
        addr.to_string()
    } else if addr.contains(':') && !addr.starts_with('[') {
        format!("[{addr}]:{DEFAULT_PORT}")
    } else {
        format!("{addr}:{DEFAULT_PORT}")
    };
    with_port.to_socket_addrs().map_err(|e| format!("address {addr:?}: {e}"))?.next().ok_or_else(|| format!("address {addr:?}: resolves to nothing"))
}

pub use consumer::ConsumerConfig;
pub use counters::Counters;
pub use hopcc::HopCcConfig;
pub use mid::{Mid, MidConfig};
pub use producer::Producer;
pub use report::Report;
