//! `leocc-probe`: the reconfiguration detector of LeoCC (seed §4.1.1, §4.3).
//!
//! One daemon per host pings the Starlink point of presence (PoP) every 10 ms and watches the
//! response interval RI between consecutive valid replies. A short outage of 45–120 ms happens
//! at every satellite reconfiguration, so RI > Δoutage (45 ms) marks one. The events, with the
//! terminal–PoP RTT statistics that the bottleneck discrimination of §4.3 needs, go to the
//! kernel (a pinned BPF map shared by every LeoCC flow), to a JSON-lines log and to a state file
//! that `leocc probe status` reads.
//!
//! The crate is layered so that the decisions are testable offline:
//! - [`detect`]: the pure state machine (RI candidates scored into events with a confidence,
//!   outage start, schedule labels, RTT stats);
//! - [`tail`]: how unlikely a send gap or RTT step is, from the stream's own recent values;
//! - [`learn`]: the schedule prior, period and phase learned from confident events;
//! - [`gen`]: seeded probe-stream generator with ground truth (tests, `leocc probe gen/bench`);
//! - [`input`]: reading `ping -D`, irtt JSON and CSV recordings;
//! - [`schedule`]: the wall-clock prior of Starlink's seconds 12/27/42/57;
//! - [`icmp`]: packet building, bounds-checked parsing, reply validation;
//! - [`replay`]: offline analysis of `ping -D` output and evaluation against slots or truth;
//! - [`net`]: raw sockets and clocks; [`discover`]: TTL-limited PoP discovery;
//! - [`instance`]: the single-instance lock, pid and state files; [`daemon`]: the loop;
//! - `kernel_map` (feature `kernel-map`): the publisher that writes the kernel's signal map;
//! - [`trigger`]: expressions over the measurement stream that run a command (`--trigger`).

pub mod bench;
pub mod daemon;
pub mod detect;
pub mod discover;
pub mod gen;
pub mod icmp;
pub mod input;
pub mod instance;
#[cfg(feature = "kernel-map")]
pub mod kernel_map;
pub mod learn;
pub mod metrics;
pub mod net;
pub mod replay;
pub mod schedule;
pub mod subscribe;
pub mod tail;
pub mod trigger;
