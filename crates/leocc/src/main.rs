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
    /// A LEOScope-like testbed on Ray: nodes behind terminals, jobs on one-off, cron and trigger
    /// schedules, scavenger mode (`leocc testbed --help`; docs/testbed.md).
    Testbed(cmd::testbed::TestbedArgs),
    /// Same as `leocc bench emu` (kept for scripts).
    #[command(hide = true)]
    BenchEmu(cmd::emu::BenchEmuArgs),
    /// Every subcommand and the options it accepts, as JSON (python/tests/test_docs.py checks
    /// the docs' `leocc ...` commands against it).
    #[command(hide = true)]
    CliTree,
}

/// The parser as data: for each command its name, aliases, options and positional arguments
/// (what each accepts: how many values, whether it is the `-- CMD` tail) and its subcommands,
/// after clap's own `--help`, `--version` and `help` have been added.
fn cli_tree(cmd: &clap::Command) -> serde_json::Value {
    let args: Vec<serde_json::Value> = cmd
        .get_arguments()
        .map(|a| {
            let range = a.get_num_args().unwrap_or_default();
            let takes = a.get_action().takes_values();
            serde_json::json!({
                "id": a.get_id().as_str(),
                "long": a.get_long(),
                "long_aliases": a.get_all_aliases().unwrap_or_default(),
                "short": a.get_short().map(String::from),
                "short_aliases": a.get_all_short_aliases().unwrap_or_default().into_iter().map(String::from).collect::<Vec<_>>(),
                "positional": a.is_positional(),
                "last": a.is_last_set(),
                "min_values": if takes { range.min_values() } else { 0 },
                // null: no upper bound (`--trace A B C`)
                "max_values": if !takes { Some(0) } else if range.max_values() == usize::MAX { None } else { Some(range.max_values()) },
                "allow_hyphen_values": a.is_allow_hyphen_values_set(),
                // CMD: a shell command (an option's value) or a command's words (the `--` tail)
                "value_names": a.get_value_names().unwrap_or_default().iter().map(|v| v.as_str()).collect::<Vec<_>>(),
                "required": a.is_required_set(),
            })
        })
        .collect();
    let subs: Vec<serde_json::Value> = cmd.get_subcommands().map(cli_tree).collect();
    serde_json::json!({
        "name": cmd.get_name(),
        "aliases": cmd.get_all_aliases().collect::<Vec<_>>(),
        "hidden": cmd.is_hide_set(),
        "subcommand_required": cmd.is_subcommand_required_set(),
        "args": args,
        "subcommands": subs,
    })
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
        Command::Testbed(a) => cmd::testbed::run(a),
        Command::CliTree => {
            use clap::CommandFactory;
            let mut root = Cli::command();
            root.build();
            println!("{}", cli_tree(&root));
            Ok(())
        }
    };
    if let Err(e) = result {
        eprintln!("leocc: error: {e:#}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// The `[default: X]` texts a help page shows for `arg`: clap's own (the default values,
    /// space-separated) and those written into the help text by hand when they read as a value
    /// (a single word, or starting with a number) rather than a description ("the trace's
    /// length").
    fn shown_defaults(arg: &clap::Arg) -> Vec<String> {
        let mut out = Vec::new();
        let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
        if !defaults.is_empty() && !arg.is_hide_default_value_set() && arg.get_action().takes_values() {
            out.push(defaults.join(" "));
        }
        let help = [arg.get_help(), arg.get_long_help()].into_iter().flatten().map(|h| h.to_string()).collect::<Vec<_>>().join(" ");
        let mut rest = help.as_str();
        while let Some(i) = rest.find("[default: ") {
            let tail = &rest[i + "[default: ".len()..];
            let Some(end) = tail.find(']') else { break };
            let x = tail[..end].trim();
            let value_like = !x.contains('$') && (!x.contains(' ') || x.starts_with(|c: char| c.is_ascii_digit()));
            if value_like {
                out.push(x.to_string());
            }
            rest = &tail[end..];
        }
        out
    }

    /// Why typing `x` back after `arg`'s option fails, if it does: the shell splits it into
    /// words, which go to a command holding only an option like `arg` (its values, delimiter
    /// and parser; not its ties to other options).
    fn typed_back(arg: &clap::Arg, x: &str) -> Option<String> {
        let mut opt = clap::Arg::new("x").long("x").action(arg.get_action().clone()).value_parser(arg.get_value_parser().clone());
        if let Some(n) = arg.get_num_args() {
            opt = opt.num_args(n);
        }
        if let Some(d) = arg.get_value_delimiter() {
            opt = opt.value_delimiter(d);
        }
        let words = ["t", "--x"].into_iter().chain(x.split_whitespace());
        clap::Command::new("t").arg(opt).try_get_matches_from(words).err().map(|e| e.to_string().lines().next().unwrap_or("").to_string())
    }

    fn check(cmd: &clap::Command, path: &str, bad: &mut Vec<String>, seen: &mut usize) {
        for arg in cmd.get_arguments() {
            for x in shown_defaults(arg) {
                *seen += 1;
                if let Some(why) = typed_back(arg, &x) {
                    bad.push(format!("{path} --{}: [default: {x}] {why}", arg.get_long().unwrap_or(arg.get_id().as_str())));
                }
            }
        }
        for sub in cmd.get_subcommands() {
            check(sub, &format!("{path} {}", sub.get_name()), bad, seen);
        }
    }

    /// Every `[default: X]` of every subcommand's help is accepted when typed back as the
    /// option's value (`leocc emu --queue 500`, `leocc bench emu --rates 500,1000,...`).
    #[test]
    fn every_help_default_parses_when_typed_back() {
        let mut cmd = Cli::command();
        cmd.build();
        let (mut bad, mut seen) = (Vec::new(), 0);
        check(&cmd, "leocc", &mut bad, &mut seen);
        assert!(seen > 50, "only {seen} defaults found: the walk is broken");
        assert!(bad.is_empty(), "help defaults that do not parse:\n{}", bad.join("\n"));
    }

    /// `leocc cli-tree` (what python/tests/test_docs.py checks the docs' commands against)
    /// has every subcommand, clap's own --help, and marks the `-- CMD` tails and CMD values.
    #[test]
    fn the_cli_tree_names_subcommands_options_and_command_tails() {
        let mut root = Cli::command();
        root.build();
        let t = super::cli_tree(&root);
        let sub = |v: &serde_json::Value, name: &str| v["subcommands"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned().unwrap_or_else(|| panic!("no {name}"));
        let emu = sub(&t, "emu");
        let arg = |id: &str| emu["args"].as_array().unwrap().iter().find(|a| a["id"] == id).cloned().unwrap();
        assert_eq!(arg("help")["long"], "help");
        assert_eq!(arg("trace")["max_values"], 1);
        assert_eq!(arg("no_realtime")["max_values"], 0);
        assert!(arg("cmd")["last"] == true && arg("cmd")["value_names"][0] == "CMD");
        assert_eq!(arg("server_cmd")["value_names"][0], "CMD");
        assert!(arg("cmd")["max_values"].is_null());
        let kernel = sub(&t, "kernel");
        assert_eq!(kernel["subcommand_required"], true);
        assert_eq!(sub(&kernel, "stats")["name"], "stats");
        assert_eq!(sub(&t, "cli-tree")["hidden"], true);
    }

    #[test]
    fn the_cli_is_consistent() {
        Cli::command().debug_assert();
    }
}
