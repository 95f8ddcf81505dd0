//! `leocc leotp serve|get|mid`: the LEOTP programs (crates/leocc-leotp). Parses options and
//! calls the library; SIGINT/SIGTERM end `serve` and `mid` cleanly (they then print their
//! counters as JSON) and end `get` early with a report of what arrived.
use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use leocc_leotp::{consumer, resolve, ConsumerConfig, HopCcConfig, Mid, MidConfig, Producer};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The three LEOTP programs.
#[derive(Subcommand)]
pub enum LeotpCmd {
    /// Producer: serve files (by base name) and the endless `bulk` source.
    Serve(ServeArgs),
    /// Consumer: fetch a content through the first hop; JSON report like `iperf3 -J`.
    Get(GetArgs),
    /// Mid-node: cache, repair and forward between a downstream and an upstream hop.
    Mid(MidArgs),
    /// The seed's evaluation on the emulated ISL chain: LEOTP vs kernel TCP (needs root).
    Eval(EvalArgs),
}

/// Options of `leocc leotp eval`.
#[derive(Args, Debug)]
#[command(after_help = "Writes OUT/results.jsonl (after every run), OUT/summary.md and OUT/*.svg. Numbers are \
only comparable when nothing else loads the machine: run it under `flock /tmp/leocc-emu.lock` on a shared host.")]
pub struct EvalArgs {
    /// Output directory.
    #[arg(short, long)]
    pub out: PathBuf,
    /// Experiments, comma separated: headline, loss, ablation, hops, fairness, fairness-rtt.
    #[arg(long, value_delimiter = ',', default_value = "headline,loss,ablation,hops,fairness,fairness-rtt")]
    pub experiment: Vec<String>,
    /// Seconds per run.
    #[arg(long, default_value_t = leocc_eval::leotp::DEFAULT_DURATION_S)]
    pub duration: f64,
    /// Median capacity of every hop, Mbit/s.
    #[arg(long, default_value_t = leocc_eval::leotp::DEFAULT_MBPS)]
    pub mbps: f64,
    /// Seed of the hop traces and of the emulator's losses.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run nothing: rebuild OUT's summary and plots from these results.jsonl files (the rows
    /// of --experiment from each), e.g. to combine evaluations.
    #[arg(long)]
    pub from: Vec<PathBuf>,
    /// Runs per cell, with seeds seed, seed+1, ... (tables and plots show the mean).
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Leave LeoCC out of the headline (it needs the kernel's struct_ops LeoCC).
    #[arg(long)]
    pub no_leocc: bool,
}

/// Options of `leocc leotp serve`.
#[derive(Args, Debug)]
#[command(after_help = "Example: leocc leotp serve --file movie.mp4   (serves `movie.mp4` and `bulk` on UDP 5301)")]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:5301")]
    pub listen: String,
    /// A file to serve under its base name (repeatable).
    #[arg(long)]
    pub file: Vec<PathBuf>,
    /// Stop after this many seconds (default: until SIGINT/SIGTERM).
    #[arg(long)]
    pub duration: Option<f64>,
}

/// Options of `leocc leotp get`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  leocc leotp get 10.0.0.1 -t 10                 bulk for 10 s through the mid-node at 10.0.0.1:5301\n  leocc leotp get 10.0.0.1:5301 movie.mp4 -o m.mp4\nThe JSON report goes to stdout (or --json FILE); per-second goodput to stderr with --progress.")]
pub struct GetArgs {
    /// First hop: a mid-node or the producer, HOST[:PORT] (port 5301 by default).
    pub first_hop: String,
    /// Content name: a file's base name, or `bulk` (also `bulk-1`, `bulk-2`...: separate
    /// endless sources, for several flows from one producer).
    #[arg(default_value = "bulk")]
    pub name: String,
    /// Write the content here (a file transfer).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Seconds to run: required for `bulk` (default 10), a time limit for a file.
    #[arg(short = 't', long)]
    pub time: Option<f64>,
    /// Report interval, seconds.
    #[arg(short, long, default_value_t = 1.0)]
    pub interval: f64,
    /// Print each interval's goodput on stderr.
    #[arg(long)]
    pub progress: bool,
    /// Turn off hole detection and repair at the consumer (the ablation).
    #[arg(long)]
    pub no_innet_retx: bool,
    /// Write the JSON report to FILE instead of stdout.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Options of `leocc leotp mid`.
#[derive(Args, Debug)]
#[command(after_help = "Example (ground station between consumer and producer):\n  leocc leotp mid --listen 0.0.0.0:5301 --upstream 100.100.0.2:5301\nThe consumer then runs `leocc leotp get GROUND-STATION-ADDR`. Counters are printed as JSON at exit.")]
pub struct MidArgs {
    /// Address to listen on (downstream neighbours send interests here).
    #[arg(long, default_value = "0.0.0.0:5301")]
    pub listen: String,
    /// The upstream neighbour: the next mid-node or the producer, HOST[:PORT].
    #[arg(long)]
    pub upstream: String,
    /// Cache size, MiB.
    #[arg(long, default_value_t = 64)]
    pub cache_mib: usize,
    /// Forward interests at once instead of hop-by-hop congestion control (the ablation).
    #[arg(long)]
    pub no_hop_cc: bool,
    /// No hole detection, repair or VPH (the ablation).
    #[arg(long)]
    pub no_innet_retx: bool,
    /// Drop this fraction of data arriving from upstream (demonstrations without an emulator).
    #[arg(long, default_value_t = 0.0)]
    pub inject_loss: f64,
    /// Seed of --inject-loss.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop after this many seconds (default: until SIGINT/SIGTERM).
    #[arg(long)]
    pub duration: Option<f64>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn install_stop_handlers() {
    use leocc_base::signal::{install, Handler};
    // The handler only stores to an atomic (async-signal-safe). SA_RESTART, as signal(3) gave.
    install(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP], Handler::Plain(on_signal), true);
}

fn seconds(name: &str, v: f64) -> anyhow::Result<Duration> {
    if !(v.is_finite() && v > 0.0 && v < 1e7) {
        return Err(anyhow!("{name} {v}: must be a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Sets STOP after `d` (for --duration), on a thread that ends with the process.
fn stop_after(d: Option<Duration>) {
    if let Some(d) = d {
        std::thread::spawn(move || {
            let t = Instant::now();
            while t.elapsed() < d && !STOP.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
            STOP.store(true, Ordering::SeqCst);
        });
    }
}

/// Runs a `leocc leotp` subcommand.
pub fn run(c: LeotpCmd) -> anyhow::Result<()> {
    if !matches!(c, LeotpCmd::Eval(_)) {
        install_stop_handlers();
    }
    match c {
        LeotpCmd::Serve(a) => {
            let listen = resolve(&a.listen).map_err(|e| anyhow!("--listen: {e}"))?;
            stop_after(a.duration.map(|d| seconds("--duration", d)).transpose()?);
            let mut p = Producer::bind(listen, &a.file).map_err(|e| anyhow!(e))?;
            eprintln!("leotp serve: listening on {} (bulk{})", p.local_addr(), a.file.iter().map(|f| format!(", {}", f.display())).collect::<String>());
            p.run(&STOP);
            println!("{}", serde_json::json!({ "listen": p.local_addr().to_string(), "segments_sent": p.segments_sent, "counters": p.counters }));
        }
        LeotpCmd::Mid(a) => {
            let mut cfg = MidConfig::new(resolve(&a.listen).map_err(|e| anyhow!("--listen: {e}"))?, resolve(&a.upstream).map_err(|e| anyhow!("--upstream: {e}"))?);
            if !(0.0..1.0).contains(&a.inject_loss) {
                return Err(anyhow!("--inject-loss {}: must be in [0, 1)", a.inject_loss));
            }
            cfg.cache_bytes = a.cache_mib.checked_mul(1 << 20).ok_or_else(|| anyhow!("--cache-mib {}: too large", a.cache_mib))?;
            cfg.hop_cc = !a.no_hop_cc;
            cfg.innet_retx = !a.no_innet_retx;
            cfg.inject_loss = a.inject_loss;
            cfg.seed = a.seed;
            stop_after(a.duration.map(|d| seconds("--duration", d)).transpose()?);
            let mut m = Mid::bind(cfg).map_err(|e| anyhow!(e))?;
            eprintln!("leotp mid: listening on {}, upstream {}", m.local_addr(), a.upstream);
            m.run(&STOP);
            println!("{}", m.summary_json());
        }
        LeotpCmd::Eval(a) if !a.from.is_empty() => {
            let p = leocc_eval::leotp::report_from(&a.from, &a.experiment, &a.out)?;
            eprintln!("leotp eval: wrote {}", p.display());
        }
        LeotpCmd::Eval(a) => {
            let cfg = leocc_eval::leotp::EvalConfig {
                experiments: a.experiment.clone(),
                duration_s: seconds("--duration", a.duration)?.as_secs_f64(),
                mbps: a.mbps,
                seed: a.seed,
                seeds: a.seeds,
                with_leocc: !a.no_leocc,
                exe: std::env::current_exe().context("locating the leocc binary")?,
            };
            let p = leocc_eval::leotp::evaluate(&cfg, &a.out)?;
            eprintln!("leotp eval: wrote {}", p.display());
        }
        LeotpCmd::Get(a) => {
            let first_hop = resolve(&a.first_hop).map_err(|e| anyhow!("first hop: {e}"))?;
            let time = match (a.time, leocc_leotp::producer::is_bulk(&a.name)) {
                (Some(t), _) => Some(seconds("--time", t)?),
                (None, true) => Some(Duration::from_secs(10)),
                (None, false) => None,
            };
            let cfg = ConsumerConfig {
                first_hop,
                name: a.name.clone(),
                output: a.output.clone(),
                duration: time,
                cc: HopCcConfig::default(),
                innet_retx: !a.no_innet_retx,
                interval: seconds("--interval", a.interval)?,
                progress: a.progress,
            };
            let r = consumer::run(&cfg, &STOP).map_err(|e| anyhow!(e))?;
            let text = serde_json::to_string_pretty(&r.to_json())?;
            match &a.json {
                Some(p) => leocc_base::out::write_atomic(p, text.as_bytes()).with_context(|| format!("write {}", p.display()))?,
                None => println!("{text}"),
            }
            if a.output.is_some() && r.complete == Some(false) {
                return Err(anyhow!("the transfer of {:?} did not complete ({} bytes arrived)", a.name, r.bytes));
            }
        }
    }
    Ok(())
}

/// Options of `leocc bench leotp`.
#[derive(Args, Debug)]
pub struct BenchLeotpArgs {
    /// Seconds of transfer.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
}

/// Runs `leocc bench leotp`.
pub fn bench(a: BenchLeotpArgs) -> anyhow::Result<()> {
    let d = seconds("--duration", a.duration)?;
    eprintln!("leotp bench: producer -> mid-node -> consumer on loopback, bulk for {:.0} s ...", d.as_secs_f64());
    let b = leocc_leotp::bench::mid_forwarding(d).map_err(|e| anyhow!(e))?;
    println!("mid-node forwarding: {:.0} Mbit/s per core ({:.1} MB forwarded in {:.2} s of its thread's CPU); consumer goodput {:.0} Mbit/s over {:.1} s wall (all three on this machine's shared cores)", b.mbps_per_core, b.forwarded_bytes as f64 / 1e6, b.mid_cpu_s, b.goodput_mbps, b.seconds);
    Ok(())
}
