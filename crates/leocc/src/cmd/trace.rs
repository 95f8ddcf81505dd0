//! `leocc trace ...`: import, export, inspect, generate and plot LEO path traces. A thin layer
//! over the leocc-trace library, which holds all the logic (the eval report reuses it).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Subcommand, ValueEnum};
use leocc_trace::gen::{self, Profile};
use leocc_trace::mahimahi::{self, ImportSpec};
use leocc_trace::stats::{self, Stats};
use leocc_base::OutDir;
use leocc_trace::{dataset, plot, Dir, Trace};

/// A direction on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum DirArg {
    /// Client (satellite user) to server.
    Up,
    /// Server to client.
    Down,
}

impl From<DirArg> for Dir {
    fn from(d: DirArg) -> Dir {
        match d {
            DirArg::Up => Dir::Up,
            DirArg::Down => Dir::Down,
        }
    }
}

/// Export formats.
#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// mahimahi capacity file(s) plus LeoReplayer delay file(s).
    Mahimahi,
}

#[derive(Subcommand)]
pub enum TraceCmd {
    /// Import mahimahi capacity and LeoReplayer delay files into one trace file.
    Import {
        /// mahimahi capacity file (the downlink when --uplink-bw is given).
        #[arg(long)]
        bw: PathBuf,
        /// LeoReplayer delay file: one-way delay in ms per 10 ms, applied in both directions.
        #[arg(long)]
        delay: Option<PathBuf>,
        /// mahimahi capacity file of the uplink.
        #[arg(long)]
        uplink_bw: Option<PathBuf>,
        /// Which direction --bw describes when --uplink-bw is absent.
        #[arg(long, value_enum, default_value = "down")]
        direction: DirArg,
        /// Trace name (default: the file name of --bw).
        #[arg(long)]
        name: Option<String>,
        /// Licence of the data, recorded in the trace.
        #[arg(long)]
        licence: Option<String>,
        /// Output trace file (our format).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Export a trace as mahimahi capacity file(s) and a LeoReplayer delay file.
    Export {
        /// Trace to export (our format, a mahimahi file or a directory).
        input: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "mahimahi")]
        format: Format,
        /// Output directory (created if missing; written whole, then swapped in).
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT even if it is a non-empty directory or a file.
        #[arg(long)]
        force: bool,
    },
    /// Print duration, capacity, delay, loss, outages, reconfigurations and their period.
    Stat {
        /// Trace (our format, a mahimahi file or a directory).
        trace: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Direction to describe (default: the measured one; downlink when both).
        #[arg(long, value_enum)]
        dir: Option<DirArg>,
    },
    /// Generate a synthetic trace with ground truth from a LEO model.
    Gen {
        /// starlink-down, starlink-up, oneweb, geo, fiber or bottleneck-shift.
        #[arg(long)]
        profile: String,
        /// Length in seconds.
        #[arg(long, default_value_t = 60)]
        duration: u64,
        /// Random seed; the same seed gives the same bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output trace file (our format).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Draw a path from wide ranges (capacity, RTT, bands, reconfigurations, outages, loss,
    /// buffer; another model than `gen`), write its trace and print the drawn parameters: what
    /// `leocc bench robust` runs on, so that any of its paths can be rerun with `leocc sim`.
    Draw {
        /// Draw seed; the same seed gives the same path and the same bytes.
        #[arg(long)]
        seed: u64,
        /// Length in seconds.
        #[arg(long, default_value_t = 45.0)]
        duration: f64,
        /// Output trace file (our format).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Import a dataset of mahimahi/LeoReplayer pairs (the LeoCC dataset's
    /// SITE_download/N/bw_N.txt + delay_N.txt, or any folder of bw*.txt + delay*.txt) into
    /// OUTPUT/traces/*.trace with OUTPUT/index.csv for `leocc eval --traces-from`. Bad pairs are
    /// reported with file and line, listed in OUTPUT/skipped.csv and left out.
    ImportDataset {
        /// The dataset's root folder.
        dir: PathBuf,
        /// Output folder (written whole, then swapped in).
        #[arg(short, long)]
        output: PathBuf,
        /// Pairs parsed at once (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Replace OUTPUT if it exists and is not empty.
        #[arg(long)]
        force: bool,
    },
    /// Generate an ISL chain: one trace per hop (terminal-satellite, ISLs, satellite-ground
    /// station), delays from geometry, handovers, fluctuating capacity; for `leocc chain --hop-trace`.
    IslChain {
        /// Number of hops (2..=16; the seed evaluates 3-10).
        #[arg(long, default_value_t = 6)]
        hops: usize,
        /// Length in seconds.
        #[arg(long, default_value_t = 60)]
        duration: u64,
        /// Median capacity of every hop, Mbit/s.
        #[arg(long, default_value_t = 40.0)]
        mbps: f64,
        /// Random loss on every hop.
        #[arg(long, default_value_t = 0.0)]
        loss: f64,
        /// Random seed; the same seed gives the same bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output directory: hop-0.trace .. hop-(H-1).trace.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Plot capacity and delay over time with reconfigurations marked (.svg, .png or .pdf).
    Plot {
        /// Trace to plot.
        trace: PathBuf,
        /// Output file: .svg, or .png / .pdf (rendered with headless chromium).
        #[arg(short, long)]
        output: PathBuf,
    },
}

pub fn run(cmd: TraceCmd) -> Result<()> {
    match cmd {
        TraceCmd::Import { bw, delay, uplink_bw, direction, name, licence, output } => {
            let spec = ImportSpec { bw, delay, uplink_bw, direction: direction.into(), name };
            let mut t = mahimahi::import(&spec)?;
            if let Some(l) = licence {
                t.meta.licence = l;
            }
            t.save(&output)?;
            eprintln!("wrote {} ({:.1} s)", output.display(), t.duration_us() as f64 / 1e6);
        }
        TraceCmd::Export { input, format: Format::Mahimahi, output, force } => {
            let t = Trace::load(&input)?;
            for p in mahimahi::export(&t, &output, force)? {
                eprintln!("wrote {}", p.display());
            }
        }
        TraceCmd::Stat { trace, json, dir } => {
            let t = Trace::load(&trace)?;
            let d = dir.map(Dir::from).unwrap_or(t.meta.direction.primary());
            let s = stats::stats(&t, d);
            if json {
                println!("{}", serde_json::to_string(&s)?);
            } else {
                print!("{}", human(&s));
            }
        }
        TraceCmd::Gen { profile, duration, seed, output } => {
            let Some(p) = Profile::parse(&profile) else {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                bail!("unknown profile {profile:?}; choose one of {}", names.join(", "));
            };
            let command = format!("leocc trace gen --profile {p} --duration {duration} --seed {seed}");
            let ms = duration.checked_mul(1000).context("duration too large")?;
            let t = gen::generate(p, ms, seed, &command).map_err(anyhow::Error::msg)?;
            t.save(&output)?;
            eprintln!("wrote {} ({} reconfigurations)", output.display(), t.reconfigurations.len());
        }
        TraceCmd::Draw { seed, duration, output } => {
            if !(duration.is_finite() && duration > 0.0) {
                bail!("--duration {duration} must be a positive number of seconds");
            }
            let ms = (duration * 1000.0).round() as u64;
            let command = format!("leocc trace draw --seed {seed} --duration {duration} -o {}", output.display());
            let (d, t) = leocc_trace::draw::trace(seed, ms, &command).map_err(anyhow::Error::msg)?;
            t.save(&output)?;
            println!("{d}");
            println!("reconfigurations:   {} in {} s", t.reconfigurations.len(), leocc_base::text::us_as_ms(ms));
            println!(
                "rerun:              leocc sim --trace {} --queue {} --seed {seed} --cc leocc",
                output.display(),
                leocc_base::text::us_as_ms(d.buffer_us()) + "ms"
            );
            eprintln!("wrote {}", output.display());
        }
        TraceCmd::ImportDataset { dir, output, jobs, force } => import_dataset(&dir, &output, jobs, force)?,
        TraceCmd::IslChain { hops, duration, mbps, loss, seed, output } => {
            let spec = leocc_trace::isl::ChainSpec { hops, duration_ms: duration.checked_mul(1000).context("duration too large")?, median_mbps: mbps, loss, seed };
            let traces = leocc_trace::isl::chain(&spec).map_err(anyhow::Error::msg)?;
            std::fs::create_dir_all(&output).with_context(|| format!("create {}", output.display()))?;
            for (i, t) in traces.iter().enumerate() {
                t.save(&output.join(format!("hop-{i}.trace")))?;
            }
            eprintln!("wrote {} hop traces to {}", traces.len(), output.display());
        }
        TraceCmd::Plot { trace, output } => {
            let t = Trace::load(&trace)?;
            plot::plot(&t, &output)?;
            eprintln!("wrote {}", output.display());
        }
    }
    Ok(())
}

/// Progress lines on stderr at most this often: a 4,800-trace import takes minutes.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

fn import_dataset(dir: &std::path::Path, output: &std::path::Path, jobs: Option<usize>, force: bool) -> Result<()> {
    let pairs = dataset::discover(dir)?;
    if pairs.is_empty() {
        bail!("{}: no bw*.txt capacity files found under this folder", dir.display());
    }
    let out = OutDir::create(output, force)?;
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    eprintln!("import-dataset: {} pairs under {}, {jobs} at once", pairs.len(), dir.display());
    let last = std::sync::Mutex::new(std::time::Instant::now());
    let report = dataset::import(&pairs, out.path(), jobs, &|done, total, skipped| {
        let mut l = last.lock().unwrap_or_else(|p| p.into_inner());
        if l.elapsed() >= PROGRESS_EVERY || done == total {
            *l = std::time::Instant::now();
            eprintln!("import-dataset: {done}/{total} ({skipped} skipped)");
        }
    })?;
    for (name, e) in &report.skipped {
        eprintln!("skipped {name}: {e}");
    }
    if report.imported.is_empty() {
        bail!("{}: none of the {} pairs could be imported (reasons above)", dir.display(), pairs.len());
    }
    out.commit()?;
    eprintln!(
        "wrote {} ({} traces; {} skipped, listed in {})",
        output.join(dataset::INDEX_FILE).display(),
        report.imported.len(),
        report.skipped.len(),
        output.join(dataset::SKIPPED_FILE).display()
    );
    Ok(())
}

/// The text form of `stat`.
fn human(s: &Stats) -> String {
    let q = |x: &stats::Summary| format!("mean {:.1}  p5 {:.1}  p50 {:.1}  p95 {:.1}", x.mean, x.p5, x.p50, x.p95);
    let ms = |v: &[f64]| v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" ");
    let mut out = format!("trace {} ({}), {:.3} s\n", s.name, s.direction, s.duration_s);
    out += &format!("capacity (Mbit/s, 100 ms bins): {}\n", q(&s.capacity_mbps));
    out += &format!("one-way delay (ms):             {}\n", q(&s.owd_ms));
    if let Some(t) = &s.terrestrial_capacity_mbps {
        out += &format!("terrestrial capacity (Mbit/s):  {}\n", q(t));
    }
    out += &format!("loss: {:.4}\n", s.loss);
    let outages: Vec<String> = s.outages.iter().map(|o| format!("{:.0}+{:.0}", o.start_ms, o.len_ms)).collect();
    out += &format!("outages >= 20 ms ({}): {}\n", outages.len(), outages.join(" "));
    out += &format!("reconfigurations detected ({}): {}\n", s.reconfigurations_ms.len(), ms(&s.reconfigurations_ms));
    out += &format!("RTT band switches inside an interval, not reconfigurations ({}): {}\n", s.band_switches_ms.len(), ms(&s.band_switches_ms));
    if !s.truth_reconfigurations_ms.is_empty() {
        out += &format!("reconfigurations ground truth ({}): {}\n", s.truth_reconfigurations_ms.len(), ms(&s.truth_reconfigurations_ms));
    }
    out += &match s.period_ms {
        Some(p) => format!("period: {p:.1} ms\n"),
        None => "period: none (aperiodic)\n".into(),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-cli-trace-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn draw_writes_the_same_trace_for_the_same_seed() {
        let d = scratch("draw");
        run(TraceCmd::Draw { seed: 3, duration: 5.0, output: d.join("a.trace") }).unwrap();
        run(TraceCmd::Draw { seed: 3, duration: 5.0, output: d.join("b.trace") }).unwrap();
        let (a, b) = (Trace::load(&d.join("a.trace")).unwrap(), Trace::load(&d.join("b.trace")).unwrap());
        assert_eq!((a.up, a.down, a.reconfigurations, a.outages), (b.up, b.down, b.reconfigurations, b.outages));
        assert!(a.meta.notes.starts_with("drawn path 3:"), "{}", a.meta.notes);
        assert!(run(TraceCmd::Draw { seed: 3, duration: 0.5, output: d.join("c.trace") }).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn isl_chain_writes_one_loadable_trace_per_hop() {
        let d = scratch("isl");
        run(TraceCmd::IslChain { hops: 4, duration: 20, mbps: 25.0, loss: 0.01, seed: 2, output: d.clone() }).unwrap();
        for i in 0..4 {
            let t = Trace::load(&d.join(format!("hop-{i}.trace"))).unwrap();
            assert!(t.meta.notes.contains(&format!("hop {i} of 4")), "{}", t.meta.notes);
        }
        assert!(!d.join("hop-4.trace").exists());
        let e = run(TraceCmd::IslChain { hops: 1, duration: 20, mbps: 25.0, loss: 0.0, seed: 2, output: d.clone() }).unwrap_err();
        assert!(e.to_string().contains("hops"), "{e}");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn gen_export_import_stat_plot_chain() {
        let d = scratch("chain");
        let tr = d.join("up.trace");
        run(TraceCmd::Gen { profile: "starlink-up".into(), duration: 20, seed: 4, output: tr.clone() }).unwrap();
        run(TraceCmd::Export { input: tr.clone(), format: Format::Mahimahi, output: d.join("mm"), force: false }).unwrap();
        let back = d.join("back.trace");
        run(TraceCmd::Import {
            bw: d.join("mm/bw.txt"),
            delay: Some(d.join("mm/delay.txt")),
            uplink_bw: None,
            direction: DirArg::Up,
            name: None,
            licence: None,
            output: back.clone(),
        })
        .unwrap();
        let (a, b) = (Trace::load(&tr).unwrap(), Trace::load(&back).unwrap());
        assert_eq!(a.up.capacity, b.up.capacity);
        assert_eq!(a.up.delay, b.up.delay);
        run(TraceCmd::Stat { trace: back.clone(), json: true, dir: None }).unwrap();
        run(TraceCmd::Plot { trace: tr, output: d.join("p.svg") }).unwrap();
        let svg = std::fs::read_to_string(d.join("p.svg")).unwrap();
        assert!(svg.contains("reconfiguration (ground truth)") && svg.contains("time (s)"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn plot_png_through_chromium() {
        if !std::path::Path::new(plot::CHROMIUM).exists() {
            eprintln!("SKIP: {} is absent; PNG plots need it", plot::CHROMIUM);
            return;
        }
        let d = scratch("png");
        let tr = d.join("g.trace");
        run(TraceCmd::Gen { profile: "oneweb".into(), duration: 15, seed: 1, output: tr.clone() }).unwrap();
        run(TraceCmd::Plot { trace: tr, output: d.join("p.png") }).unwrap();
        let png = std::fs::read(d.join("p.png")).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{} bytes", png.len());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_file() {
        let d = scratch("bad");
        let e = run(TraceCmd::Gen { profile: "leo".into(), duration: 10, seed: 1, output: d.join("x") }).unwrap_err();
        assert!(e.to_string().contains("starlink-down"), "{e}");
        std::fs::write(d.join("bad.txt"), "1\n2\nx\n").unwrap();
        let e = run(TraceCmd::Stat { trace: d.join("bad.txt"), json: false, dir: None }).unwrap_err();
        assert!(e.to_string().contains("bad.txt:3: "), "{e}");
        std::fs::write(d.join("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        let e = run(TraceCmd::Stat { trace: d.join("img.png"), json: false, dir: None }).unwrap_err();
        assert!(e.to_string().contains("img.png: not a text trace"), "{e}");
        // Export onto an existing file: a clear refusal, honoured with --force.
        let tr = d.join("f.trace");
        run(TraceCmd::Gen { profile: "fiber".into(), duration: 2, seed: 1, output: tr.clone() }).unwrap();
        let e = run(TraceCmd::Export { input: tr.clone(), format: Format::Mahimahi, output: d.join("bad.txt"), force: false }).unwrap_err();
        assert!(e.to_string().contains("bad.txt: exists and is not a directory"), "{e}");
        run(TraceCmd::Export { input: tr, format: Format::Mahimahi, output: d.join("bad.txt"), force: true }).unwrap();
        assert!(d.join("bad.txt").join("bw.txt").exists() || d.join("bad.txt").join("bw_down.txt").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
