//! `leocc kernel load|unload|status|stats|bench`: LeoCC as a BPF struct_ops congestion control
//! in the running kernel (crates/leocc-kernel does the work).
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use leocc_kernel::{bench, loader, option, stats};

/// Subcommands of `leocc kernel`.
#[derive(Subcommand)]
pub enum KernelCmd {
    /// Register the "leocc" congestion control (BPF struct_ops) and pin it under
    /// /sys/fs/bpf/leocc so it stays after this command exits, and attach the TCP-option
    /// carrier of the reconfiguration signal (sock_ops) for --role to --cgroup. Idempotent.
    /// Needs root.
    Load(LoadArgs),
    /// Unregister "leocc" and remove its pins, option carrier links included. Flows already
    /// using it keep running until they close; new sockets cannot select it any more. With
    /// --cgroup, only detach the option carrier from that cgroup. Needs root.
    Unload(UnloadArgs),
    /// Show whether leocc is loaded, the kernel version, BTF and struct_ops support.
    Status(BtfArg),
    /// Per-flow model state: mode, bBW_a, bBW_m, bRTT range, target rate. Needs root.
    Stats(StatsArgs),
    /// CPU per ACK of leocc against the kernel's bbr (or cubic) on the same veth transfer.
    Bench(BenchArgs),
    /// The parameters new LeoCC flows start from (the rows of the core's table, listed with
    /// ranges by `leocc sim --list-params leocc`): show them (default), set some, or return to
    /// the defaults. Flows already running keep theirs. Needs root and leocc loaded.
    Params(ParamsArgs),
    /// Run a command in a cgroup of its own and count what its sockets send and receive (BPF
    /// cgroup_skb programs: any protocol, any port), written to --out as JSON while it runs
    /// and when it ends. Exits with the command's status. The testbed's scavenger mode uses it
    /// to tell an experiment's own traffic from the terminal owner's. Needs root.
    Traffic(TrafficArgs),
}

/// Options of `leocc kernel traffic`.
#[derive(Args)]
pub struct TrafficArgs {
    /// Where to write the counts: {"tx_bytes", "tx_packets", "rx_bytes", "rx_packets" (IP
    /// bytes; segments, a GSO packet counting its own), "t_s", "running"}, replaced atomically.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Seconds between writes while the command runs.
    #[arg(long, default_value_t = 0.1, value_name = "SECS")]
    every: f64,
    /// The command and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "CMD")]
    cmd: Vec<String>,
}

/// Options of `leocc kernel params`.
#[derive(Args)]
pub struct ParamsArgs {
    /// Set a parameter for new flows, `leocc.NAME=VALUE`, on top of what is set now
    /// (repeatable). Unknown names and out-of-range values are refused, by the same parser
    /// as `leocc sim --param`.
    #[arg(long, value_name = "leocc.NAME=VALUE")]
    set: Vec<String>,
    /// Return every parameter to its default first (alone: just that).
    #[arg(long)]
    reset: bool,
    /// Print the parameter table of docs/algorithm.md (generated from the core's table,
    /// LEOCC_PARAMS in core/leocc.h) and exit; needs neither root nor leocc loaded.
    #[arg(long, hide = true, conflicts_with_all = ["set", "reset"])]
    markdown: bool,
}

/// The kernel's BTF location.
#[derive(Args)]
pub struct BtfArg {
    /// Kernel BTF file (default /sys/kernel/btf/vmlinux).
    #[arg(long, value_name = "PATH")]
    btf: Option<PathBuf>,
}

/// Options of `leocc kernel load`.
#[derive(Args)]
pub struct LoadArgs {
    #[command(flatten)]
    btf: BtfArg,
    /// What this host does with the reconfiguration signal in TCP options: `sender` reads
    /// it from peers into its LeoCC flows, `receiver` writes its detector's signal on its
    /// ACKs (the host behind the dish), `both` offers both (each connection uses what its
    /// peer offers), `none` (default) only registers the congestion control: a role puts a
    /// new option into every SYN of the cgroup's processes, a change on the wire that is opted
    /// into, not implied. Options are exchanged only with peers that offer them.
    #[arg(long, value_enum, default_value_t = RoleArg::None)]
    role: RoleArg,
    /// cgroup v2 whose processes' TCP sockets get the option carrier (default: the root of
    /// the cgroup2 hierarchy, i.e. every process: /sys/fs/cgroup, or /sys/fs/cgroup/unified
    /// on a hybrid system). Listeners started before the load do not offer the option.
    #[arg(long, value_name = "PATH")]
    cgroup: Option<PathBuf>,
}

/// Options of `leocc kernel unload`.
#[derive(Args)]
pub struct UnloadArgs {
    /// Only detach the option carrier from this cgroup; leocc stays loaded.
    #[arg(long, value_name = "PATH")]
    cgroup: Option<PathBuf>,
}

/// `--role` values: the option carrier's roles, or none.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RoleArg {
    Sender,
    Receiver,
    Both,
    None,
}

impl RoleArg {
    fn role(self) -> Option<option::Role> {
        match self {
            RoleArg::Sender => Some(option::Role::Sender),
            RoleArg::Receiver => Some(option::Role::Receiver),
            RoleArg::Both => Some(option::Role::Both),
            RoleArg::None => None,
        }
    }
}

/// Options of `leocc kernel stats`.
#[derive(Args)]
pub struct StatsArgs {
    /// One JSON object per flow instead of a table (then one with the option counters).
    #[arg(long)]
    json: bool,
}

/// Options of `leocc kernel bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Seconds per transfer.
    #[arg(long, default_value_t = 5)]
    seconds: u32,
    /// Transfers per congestion control (runs alternate with the baseline).
    #[arg(long, default_value_t = 2)]
    repeats: u32,
    /// Baseline congestion control (default: bbr if available, else cubic).
    #[arg(long)]
    baseline: Option<String>,
    /// Application rate limit in Mbit/s (iperf3 -b) so both move the same bytes; 0 = none.
    #[arg(long, default_value_t = bench::DEFAULT_RATE_MBPS)]
    rate: u32,
}

/// Runs one `leocc kernel` subcommand.
pub fn run(cmd: KernelCmd) -> anyhow::Result<()> {
    match cmd {
        KernelCmd::Load(a) => load(a),
        KernelCmd::Unload(UnloadArgs { cgroup: Some(cg) }) => {
            let removed = option::detach(&cg)?;
            if removed.is_empty() {
                println!("no option carrier was attached to {}", cg.display());
            }
            for r in removed {
                println!("option carrier ({r}) detached from {}", cg.display());
            }
            Ok(())
        }
        KernelCmd::Unload(UnloadArgs { cgroup: None }) => {
            if loader::unload()? {
                println!("leocc unloaded (flows still using it run on until they close)");
            } else {
                println!("leocc was not loaded; stale pins, if any, removed");
            }
            Ok(())
        }
        KernelCmd::Status(a) => {
            print!("{}", loader::status(a.btf.as_deref()));
            Ok(())
        }
        KernelCmd::Stats(a) => show_stats(a),
        KernelCmd::Bench(a) => run_bench(a),
        KernelCmd::Params(a) => params(a),
        KernelCmd::Traffic(a) => traffic(a),
    }
}

/// The signal `leocc kernel traffic` received, passed on to its command.
static TRAFFIC_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_traffic_signal(sig: libc::c_int) {
    TRAFFIC_SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// `leocc kernel traffic`.
fn traffic(a: TrafficArgs) -> anyhow::Result<()> {
    use leocc_base::signal::{install, Handler};
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    if !(a.every.is_finite() && (0.01..=60.0).contains(&a.every)) {
        bail!("--every {}: expected 0.01 to 60 seconds", a.every);
    }
    if !leocc_kernel::is_root() {
        bail!("leocc kernel traffic needs root (it makes a cgroup and attaches BPF programs to it)");
    }
    let counter = leocc_kernel::traffic::CgroupTraffic::new().context("counting the command's traffic")?;
    let mut cmd = std::process::Command::new(&a.cmd[0]);
    cmd.args(&a.cmd[1..]);
    counter.join(&mut cmd);
    // SAFETY: prctl is async-signal-safe; the command dies with us rather than outlive us.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    install(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP], Handler::Plain(on_traffic_signal), true);
    let mut child = cmd.spawn().with_context(|| format!("running {}", a.cmd[0]))?;
    let start = Instant::now();
    let write = |running: bool| -> anyhow::Result<()> {
        let t = counter.read()?;
        let mut v = serde_json::to_value(t)?;
        v["t_s"] = start.elapsed().as_secs_f64().into();
        v["running"] = running.into();
        leocc_base::out::write_atomic(&a.out, format!("{v}\n").as_bytes())?;
        Ok(())
    };
    let every = Duration::from_secs_f64(a.every);
    // The command's end and a signal to pass on are looked for this often, between writes.
    let poll = Duration::from_millis(10).min(every);
    let mut next_write = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let sig = TRAFFIC_SIGNAL.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // SAFETY: signalling our own child, which has not been reaped yet.
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        }
        if Instant::now() >= next_write {
            write(true)?;
            next_write += every;
        }
        std::thread::sleep(poll);
    };
    write(false)?;
    drop(counter);
    std::process::exit(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)));
}

/// `leocc kernel params`.
fn params(a: ParamsArgs) -> anyhow::Result<()> {
    use leocc_kernel::params::{apply_settings, read_params, write_params, Params};
    if a.markdown {
        print!("{}", Params::markdown_table());
        return Ok(());
    }
    let apply = |base| apply_settings(base, &a.set).map_err(|e| anyhow::anyhow!("--set {e}"));
    // Settings are checked (names, ranges) before the map is touched, so a bad value is
    // refused with its range whether or not leocc is loaded or the caller is root.
    apply(Params::default())?;
    let current = read_params()?;
    if a.set.is_empty() && !a.reset {
        let p = current.unwrap_or_default();
        println!("LeoCC parameters of new flows ({}):", if current.is_some() { "set; * differs from the default" } else { "the defaults" });
        for r in Params::rows() {
            let (name, v, d) = (r.name, p.get(r.name).unwrap_or_default(), r.default);
            println!("  {} {name:<24} {v:>10}  {}{}", if v != d { "*" } else { " " }, r.help, if v != d { format!(" (default {d})") } else { String::new() });
        }
        return Ok(());
    }
    let base = if a.reset { Params::default() } else { current.unwrap_or_default() };
    let p = apply(base)?;
    let defaults = Params::default();
    let changed: Vec<&str> = Params::rows().iter().map(|r| r.name).filter(|n| p.get(n) != defaults.get(n)).collect();
    if changed.is_empty() {
        write_params(None)?;
        println!("new LeoCC flows start from the defaults");
    } else {
        write_params(Some(&p))?;
        let list: Vec<String> = changed.iter().map(|n| format!("{n}={}", p.get(n).unwrap_or_default())).collect();
        println!("new LeoCC flows start from the defaults with {}", list.join(", "));
    }
    Ok(())
}

fn load(a: LoadArgs) -> anyhow::Result<()> {
    let btf = a.btf.btf;
    let outcome = loader::load(&loader::LoadOptions { btf: btf.clone() })?;
    match outcome {
        loader::LoadOutcome::Loaded => println!("leocc loaded"),
        loader::LoadOutcome::AlreadyLoaded => println!("leocc is already loaded"),
        loader::LoadOutcome::Replaced => println!(
            "leocc loaded, replacing a registration from another build (flows already running keep it until they close)"
        ),
    }
    if let Some(role) = a.role.role() {
        let cgroup = match a.cgroup {
            Some(c) => c,
            None => option::cgroup2_root()?,
        };
        match option::attach(role, &cgroup)? {
            option::AttachOutcome::Attached => {
                println!("option carrier ({role}) attached to {}", cgroup.display())
            }
            option::AttachOutcome::AlreadyAttached => {
                println!("option carrier ({role}) was already attached to {}", cgroup.display())
            }
            option::AttachOutcome::Replaced(old) => println!(
                "option carrier ({role}) attached to {}, replacing {old}",
                cgroup.display()
            ),
        }
    }
    print!("{}", loader::status(btf.as_deref()));
    if !loader::is_registered() {
        bail!("leocc was loaded but is missing from net.ipv4.tcp_available_congestion_control");
    }
    println!("use it: sysctl net.ipv4.tcp_congestion_control=leocc, iperf3 -C leocc, or setsockopt(TCP_CONGESTION, \"leocc\")");
    Ok(())
}

fn show_stats(a: StatsArgs) -> anyhow::Result<()> {
    let flows = leocc_kernel::read_stats()?;
    let counters = option::read_counters().ok();
    if a.json {
        for f in &flows {
            println!("{}", serde_json::to_string(f).context("encoding stats")?);
        }
        if let Some(c) = &counters {
            let obj: serde_json::Map<String, serde_json::Value> =
                c.0.iter().map(|(n, v)| (n.to_string(), (*v).into())).collect();
            println!("{}", serde_json::json!({ "option_counters": obj }));
        }
        return Ok(());
    }
    if let Some(c) = &counters {
        println!("option counters (all connections since load):\n{c}");
    }
    if flows.is_empty() {
        println!("no flows use leocc right now");
        return Ok(());
    }
    println!(
        "{:<22} {:<22} {:<12} {:>9} {:>9} {:>9} {:>15} {:>6} {:>7} {:>7}",
        "local", "remote", "mode", "bBW_a", "bBW_m", "target", "bRTT l-h (ms)", "cwnd", "rcf", "signal"
    );
    for f in &flows {
        println!(
            "{:<22} {:<22} {:<12} {:>9.1} {:>9.1} {:>9.1} {:>15} {:>6} {:>7} {:>7}",
            f.local.to_string(),
            f.remote.to_string(),
            format!("{}{}", f.mode_name, if f.competing { "+" } else if f.congested { "*" } else { "" }),
            stats::mbps(f.bbw_a),
            stats::mbps(f.bbw_m),
            stats::mbps(f.target_rate),
            format!("{:.1}-{:.1}", f.brtt_l_us as f64 / 1e3, f.brtt_h_us as f64 / 1e3),
            f.cwnd,
            f.reconfigs_fed,
            format!("{}{}", f.signal, if f.signal_source == "remote" { "/opt" } else { "" }),
        );
    }
    println!("rates in Mbit/s; * = congested (eq. 4); + = another flow's standing queue seen, judged on its own range; rcf = reconfigurations handed to the core; /opt = signal from the peer's TCP option");
    Ok(())
}

pub fn run_bench(a: BenchArgs) -> anyhow::Result<()> {
    let opts = bench::BenchOptions {
        seconds: a.seconds,
        repeats: a.repeats,
        baseline: a.baseline,
        rate_mbps: a.rate,
    };
    let report = bench::run(&opts, |line| eprintln!("bench: {line}")).map_err(anyhow::Error::msg)?;
    println!("{report}");
    Ok(())
}
