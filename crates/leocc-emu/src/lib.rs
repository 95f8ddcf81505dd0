//! LeoReplayer: a trace-driven LEO link emulator that real kernel TCP runs through, and the
//! recorder that captures such traces (seed 000, §5.2).
//!
//! The emulator joins a client and a server network namespace through TUN devices and moves
//! every packet through this process, which applies a `leocc_trace::LinkModel` per direction:
//! mahimahi delivery opportunities (1500 bytes each, the schedule loops), a time-varying
//! one-way delay that never reorders, random loss, and outages, behind a droptail queue. A PoP
//! at the end of the satellite segment answers pings after the satellite delay only, on its
//! own queue, because Starlink keeps ICMP apart from TCP/UDP (appendix B); a terrestrial
//! segment with its own delay and optional capacity follows, so the bottleneck can move.
//!
//! Module map: `stage` is the link model in virtual time (pure, unit-tested); `engine` runs
//! the stages on two threads against the wall clock; `emulator` builds namespaces, devices and
//! threads and summarises, with `flows` counting what each flow got through the bottleneck;
//! `shell` runs a command behind the link; `record` is the recorder; `bench` measures accuracy
//! and speed. `netns`, `tun`, `offload`, `packet`, `pcap`, `eventlog`, `clock`
//! are the plumbing; `owned` makes every child die with the command that started it.

pub mod bench;
pub mod chain;
pub mod clock;
pub mod emulator;
pub mod engine;
pub mod error;
pub mod eventlog;
pub mod flows;
pub mod netns;
pub mod offload;
pub mod owned;
pub mod packet;
pub mod pcap;
pub mod record;
pub mod shell;
pub mod stage;
pub mod tun;

pub use emulator::{EmuConfig, Emulator, Side, Summary, CLIENT_ADDR, POP_ADDR, SERVER_ADDR};
pub use error::{EmuError, Result};
pub use leocc_trace::qdisc::Qdisc;
pub use stage::QueueLimit;
