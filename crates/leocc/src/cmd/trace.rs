//! `leocc trace ...`
use clap::Subcommand;

#[derive(Subcommand)]
pub enum TraceCmd {}

pub fn run(cmd: TraceCmd) -> anyhow::Result<()> {
    match cmd {}
}
