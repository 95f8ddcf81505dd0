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
    /// The main job: LeoCC against eight controls on bundled traces, with a report.
    Demo(cmd::eval::DemoArgs),
    /// Run a matrix of controls over traces; write results.jsonl and report.html.
    Eval(cmd::eval::EvalArgs),
    /// Remake report.html, or print the README's results table, from an eval's results.jsonl.
    Report(cmd::eval::ReportArgs),
    /// Packet-level simulation of controls over a trace (deterministic per seed).
    Sim(cmd::sim::SimArgs),
    /// Run a command behind an emulated LEO path (namespaces, TUN, trace replay).
    Emu(cmd::emu::EmuArgs),
    /// LeoCC in the running kernel: load, unload, status, per-flow stats, CPU benchmark.
    #[command(subcommand)]
    Kernel(cmd::kernel::KernelCmd),
    /// The reconfiguration detector: probe the PoP, publish events; status; offline replay.
    Probe(cmd::probe::ProbeArgs),
    /// Import, export, inspect, generate and plot LEO path traces.
    #[command(subcommand)]
    Trace(cmd::trace::TraceCmd),
    /// Record a real link into a trace (saturating UDP flow + 10 ms ping).
    Record(cmd::record::RecordArgs),
    /// The far end of `leocc record`.
    RecordServer(cmd::record::RecordServerArgs),
    /// Benchmarks that print numbers: `leocc bench sim|emu|kernel`.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCmd),
    /// QUIC bulk transfer with LeoCC or quinn's controls: `leocc quic serve|get`.
    #[command(subcommand)]
    Quic(cmd::quic::QuicCmd),
    /// One emulator run of kernel TCP flows, printed as JSON (what `eval --engine emu` runs).
    EmuRun(cmd::eval::EmuRunArgs),
    /// Run commands on a multi-hop emulated path (a namespace per node, a trace per hop).
    Chain(cmd::chain::ChainArgs),
    /// LEOTP (seed 003), hop-by-hop transport: `leocc leotp serve|get|mid|eval`.
    #[command(subcommand)]
    Leotp(cmd::leotp::LeotpCmd),
    /// Same as `leocc bench emu` (kept for scripts).
    #[command(hide = true)]
    BenchEmu(cmd::emu::BenchEmuArgs),
}

/// `leocc ... | head` closes stdout before we are done. Rust ignores SIGPIPE (so that writes to
/// closed sockets and child pipes are errors, not deaths), which makes `println!` panic with
/// "Broken pipe"; end quietly instead, as Unix tools do, with the shell's SIGPIPE status.
fn quiet_on_closed_stdout() {
    /// 128 + SIGPIPE, what a shell reports for a tool killed by SIGPIPE.
    const EXIT_SIGPIPE: i32 = 141;
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(EXIT_SIGPIPE);
        }
        default(info)
    }));
}

fn main() {
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Trace(c) => cmd::trace::run(c),
        Command::Kernel(c) => cmd::kernel::run(c),
        Command::Eval(a) => cmd::eval::eval(a),
        Command::Demo(a) => cmd::eval::demo(a),
        Command::Report(a) => cmd::eval::report(a),
        Command::EmuRun(a) => cmd::eval::emu_run(a),
        Command::Probe(a) => cmd::probe::run(a),
        Command::Emu(a) => cmd::emu::run(a),
        Command::BenchEmu(a) => cmd::emu::bench(a),
        Command::Record(a) => cmd::record::run(a),
        Command::RecordServer(a) => cmd::record::serve(a),
        Command::Sim(a) => cmd::sim::run(a),
        Command::Bench(c) => cmd::bench::run(c),
        Command::Leotp(c) => cmd::leotp::run(c),
        Command::Chain(a) => cmd::chain::run(a),
        Command::Quic(c) => cmd::quic::run(c),
    };
    if let Err(e) = result {
        eprintln!("leocc: error: {e:#}");
        std::process::exit(1);
    }
}
