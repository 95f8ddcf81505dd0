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
    /// LeoCC in the running kernel: load, unload, status, per-flow stats, CPU benchmark.
    #[command(subcommand)]
    Kernel(cmd::kernel::KernelCmd),
    /// The reconfiguration detector: probe the PoP, publish events; status; offline replay.
    Probe(cmd::probe::ProbeArgs),
    /// Run a matrix of controls over traces; write results.jsonl and report.html.
    Eval(cmd::eval::EvalArgs),
    /// The main job: LeoCC against eight controls on bundled traces, with a report.
    Demo(cmd::eval::DemoArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Trace(c) => cmd::trace::run(c),
        Command::Kernel(c) => cmd::kernel::run(c),
        Command::Eval(a) => cmd::eval::eval(a),
        Command::Demo(a) => cmd::eval::demo(a),
        Command::Probe(a) => cmd::probe::run(a),
    };
    if let Err(e) = result {
        eprintln!("leocc: error: {e:#}");
        std::process::exit(1);
    }
}
