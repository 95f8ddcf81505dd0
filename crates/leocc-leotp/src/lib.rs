//! LEOTP (seed 003, ICDCS 2023): a hop-by-hop, information-centric transport for LEO paths.
//!
//! Instead of one end-to-end control loop, the path is segmented: a consumer requests named
//! segments, a producer answers, and a mid-node on every hop caches what passes, repairs
//! losses of its upstream hop from its neighbour's cache (announcing the repair downstream
//! with a Void Packet Header so it happens once), and runs its own congestion control per hop
//! with backpressure (eq. 6–9). The consumer's timeout keeps end-to-end reliability.
//!
//! Module map: `packet` is the versioned wire format (parser never panics); `cache` the
//! bounded segment cache; `hopcc` the per-hop controller; `requester` the requesting side of
//! a hop (pacing, RTT, hole detection) shared by `consumer` and `mid`; `producer` serves
//! content; `counters` and `report` are what the programs print; `net` sockets and clocks.

pub mod cache;
pub mod consumer;
pub mod counters;
pub mod hopcc;
pub mod mid;
pub mod net;
pub mod packet;
pub mod producer;
pub mod report;
pub mod requester;

/// Most content names (flows) a node keeps state for: a bound against spoofed names.
pub const MAX_FLOWS: usize = 1024;

pub use consumer::ConsumerConfig;
pub use counters::Counters;
pub use hopcc::HopCcConfig;
pub use mid::{Mid, MidConfig};
pub use producer::Producer;
pub use report::Report;
