//! One module per subcommand; each parses its arguments and calls into a library crate.
pub mod trace;
pub mod kernel;
pub mod probe;
pub mod eval;
pub mod emu;
pub mod record;
pub mod sim;
pub mod bench;
pub mod leotp;
pub mod chain;
pub mod quic;
pub mod testbed;
