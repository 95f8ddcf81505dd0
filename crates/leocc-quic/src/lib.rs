//! LeoCC for QUIC (quinn).
//!
//! - [`controller`]: [`LeoccConfig`], a `quinn_proto::congestion::ControllerFactory`, and its
//!   [`LeoccController`], running core/leocc.c through `leocc-core-sys`;
//! - [`rate`]: the delivery-rate estimator quinn lacks (BBR drafts' sampler);
//! - [`events`]: where the detector's reconfiguration events come from (the daemon's
//!   subscription socket, the pinned kernel map, or the application);
//! - [`transfer`] and [`tls`]: `leocc quic serve` / `leocc quic get`, an iperf3-like bulk
//!   transfer for measurements;
//! - [`cc`]: the controls by name.
//!
//! Use in your own quinn server (docs/quic.md):
//!
//! ```no_run
//! use std::sync::Arc;
//! let events = leocc_quic::events::Subscription::start(&leocc_probe::subscribe::socket_path());
//! let mut transport = quinn::TransportConfig::default();
//! transport.congestion_controller_factory(Arc::new(leocc_quic::LeoccConfig::new().events(events)));
//! // server_config.transport_config(Arc::new(transport));
//! ```

pub mod cc;
pub mod controller;
pub mod events;
pub mod rate;
pub mod tls;
pub mod transfer;

pub use cc::Cc;
pub use controller::{LeoccConfig, LeoccController};
