//! `leocc`: the one user-facing binary. Each subcommand is a thin layer over a library crate.

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(name = "leocc", version, about = "LeoCC congestion control and a LEO network lab", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import, export, inspect, generate and plot LEO path traces.
    #[command(subcommand)]
    Trace(cmd::trace::TraceCmd),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Trace(c) => cmd::trace::run(c),
    };
    if let Err(e) = result {
        eprintln!("leocc: error: {e:#}");
        std::process::exit(1);
    }
}
