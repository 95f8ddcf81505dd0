//! Parameter sweeps, as seed 004 (T3P / LEOScope) tunes BBR for Starlink: every combination of
//! a control's parameter values (`leocc eval --sweep 'bbr3.loss_thresh=0.02,0.04' --sweep
//! ...`) runs next to the control's defaults; the page `sweep.html` shows heatmaps of the
//! throughput gain and the p95-RTT inflation against the defaults, marks the best setting whose
//! latency inflation stays under [`MAX_INFLATION_PCT`], and (as the seed does) runs that setting
//! and the defaults against one Cubic flow to see what the gain costs the other flow.
//!
//! A swept run is an ordinary matrix run with `--param` settings: its key ends in `|p` and the
//! settings, its label is `cc{name=value,...}` (so the main report shows each setting as a
//! control of its own), and its results row carries a `params` array. A rerun skips what is
//! done, and a sweep shares the defaults' runs with a plain `leocc eval` into the same directory.

use crate::matrix::{Engine, Matrix, RunSpec, Scenario};
use crate::results::{self, flow_stat, stat, Record, Stat};
use crate::runner::{self, Runner};
use crate::stats::{self, ci_caption, Change, Noise};
use anyhow::{bail, Result};
use leocc_plot::{esc, Heatmap};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The latency budget of the chosen setting: T3P picks the largest throughput gain whose p95
/// RTT grows by less than 10 % over the defaults.
pub const MAX_INFLATION_PCT: f64 = 10.0;
/// How a throughput gain qualifies as the best ([`Group::best`]), in the words the page and the
/// table both use.
const GAIN_RULE: &str = "beyond the run-to-run noise, where the runs give an interval";

/// One swept parameter: `CC.NAME=V1,V2,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub cc: String,
    pub name: String,
    /// The values as given (so keys and labels read as the user typed them), each checked
    /// against the parameter's range.
    pub values: Vec<String>,
}

impl FromStr for Axis {
    type Err = String;
    fn from_str(s: &str) -> Result<Axis, String> {
        let bad = || {
            format!(
                "--sweep '{s}': expected CC.NAME=V1,V2,... e.g. bbr3.loss_thresh=0.02,0.04,0.08"
            )
        };
        let (lhs, vals) = s.split_once('=').ok_or_else(bad)?;
        let (cc, name) = lhs
            .trim()
            .split_once('.')
            .filter(|(c, n)| !c.is_empty() && !n.is_empty())
            .ok_or_else(bad)?;
        let mut values: Vec<String> = Vec::new();
        for v in vals.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            leocc_sim::cc::check_params(cc, &[format!("{name}={v}")])
                .map_err(|e| format!("--sweep '{s}': {e}"))?;
            if !values.iter().any(|x| x == v) {
                values.push(v.to_string());
            }
        }
        if values.is_empty() {
            return Err(bad());
        }
        Ok(Axis {
            cc: cc.to_string(),
            name: name.to_string(),
            values,
        })
    }
}

/// One point of the grid: (parameter name, value) per axis, in axis order.
pub type Setting = Vec<(String, String)>;

/// A sweep: the cartesian product of its axes, all of one control.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub axes: Vec<Axis>,
}

impl Sweep {
    /// A sweep over `axes`: at least one, all of the same control, each parameter once.
    pub fn new(axes: Vec<Axis>) -> Result<Sweep, String> {
        let Some(first) = axes.first() else {
            return Err("no --sweep given".into());
        };
        for (i, a) in axes.iter().enumerate() {
            if a.cc != first.cc {
                return Err(format!(
                    "--sweep: all axes must be of one control ({} and {})",
                    first.cc, a.cc
                ));
            }
            if axes[..i].iter().any(|b| b.name == a.name) {
                return Err(format!("--sweep: {}.{} is swept twice", a.cc, a.name));
            }
        }
        Ok(Sweep { axes })
    }

    /// The swept control.
    pub fn cc(&self) -> &str {
        &self.axes[0].cc
    }

    /// Every setting of the grid, the first axis varying slowest.
    pub fn settings(&self) -> Vec<Setting> {
        let mut out: Vec<Setting> = vec![Vec::new()];
        for a in &self.axes {
            out = out
                .into_iter()
                .flat_map(|s| {
                    a.values
                        .iter()
                        .map(move |v| [s.clone(), vec![(a.name.clone(), v.clone())]].concat())
                })
                .collect();
        }
        out
    }

    /// `cc.name=value` settings for `leocc sim --param`.
    pub fn params(&self, s: &Setting) -> Vec<String> {
        s.iter()
            .map(|(n, v)| format!("{}.{n}={v}", self.cc()))
            .collect()
    }

    /// The label of a setting's runs: `bbr3{probe_rtt_interval_ms=1000,loss_thresh=0.02}`.
    pub fn label(&self, s: &Setting) -> String {
        format!(
            "{}{{{}}}",
            self.cc(),
            s.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        )
    }

    fn key_suffix(&self, s: &Setting) -> String {
        format!("|p{}", self.params(s).join(","))
    }

    /// The runs of the sweep from a matrix's runs: each single-flow run of the swept control
    /// (its defaults, kept as they are) plus one copy per setting. Other runs pass through.
    pub fn expand(&self, base: &[RunSpec]) -> Vec<RunSpec> {
        let mut out = Vec::new();
        for spec in base {
            out.push(spec.clone());
            if spec.scenario != Scenario::Single || spec.label != self.cc() {
                continue;
            }
            for s in self.settings() {
                let mut r = spec.clone();
                r.key = format!("{}{}", spec.key, self.key_suffix(&s));
                r.label = self.label(&s);
                r.params = self.params(&s);
                out.push(r);
            }
        }
        out
    }

    /// One flow of the control (with `setting`, or its defaults) against one Cubic flow, for
    /// each single-flow run of the control in `base`.
    pub fn fairness_specs(&self, base: &[RunSpec], setting: Option<&Setting>) -> Vec<RunSpec> {
        let cc = self.cc();
        let mut out = Vec::new();
        for spec in base
            .iter()
            .filter(|s| s.scenario == Scenario::Single && s.label == cc)
        {
            let mut r = spec.clone();
            r.scenario = Scenario::VsCubic;
            r.flows = Scenario::VsCubic.flows_spec(&format!("{cc}+cubic"), spec.duration_s);
            r.label = format!(
                "{}+cubic",
                setting.map_or(cc.to_string(), |s| self.label(s))
            );
            r.params = setting.map(|s| self.params(s)).unwrap_or_default();
            r.key = format!(
                "{}|vs-cubic{}",
                spec.key,
                setting.map(|s| self.key_suffix(s)).unwrap_or_default()
            );
            out.push(r);
        }
        out
    }

    /// The setting a results row ran with: Some(empty) for the defaults, None for a row that is
    /// not this sweep's (another control, or params of a different grid).
    fn setting_of(&self, r: &Record) -> Option<Setting> {
        let base = r.str("label").split(['{', '+']).next().unwrap_or("");
        if base != self.cc() {
            return None;
        }
        let params: Vec<&str> =
            r.0.get("params")
                .and_then(|v| v.as_array())
                .map_or(Vec::new(), |a| {
                    a.iter().filter_map(|v| v.as_str()).collect()
                });
        let mut s = Setting::new();
        for p in params {
            let (lhs, v) = p.split_once('=')?;
            let (_, name) = lhs.split_once('.')?;
            s.push((name.to_string(), v.to_string()));
        }
        (s.is_empty() || self.settings().contains(&s)).then_some(s)
    }
}

/// A setting's outcome on one trace and buffer (or averaged over all of them).
#[derive(Clone, Debug)]
pub struct Point {
    pub setting: Setting,
    /// Mean throughput over the seeds, Mbit/s (over the cells' means for the average).
    pub throughput_mbps: f64,
    /// Mean of the runs' p95 RTT, ms (over the cells' means for the average).
    pub rtt_p95_ms: f64,
    pub runs: usize,
    /// Throughput against the defaults', %.
    pub gain_pct: f64,
    /// p95 RTT against the defaults', %.
    pub inflation_pct: f64,
    /// Throughput and p95 RTT over the runs of one cell, with their intervals; None for the
    /// average over cells.
    pub throughput: Option<Stat>,
    pub rtt_p95: Option<Stat>,
    /// The gain and the inflation with their 95 % intervals and noise verdicts
    /// ([`stats::change`] per cell, [`stats::mean_change`] for the average); None for the
    /// defaults, or when the defaults' mean is zero.
    pub gain: Option<Change>,
    pub inflation: Option<Change>,
}

/// The sweep's outcome on one trace and buffer.
#[derive(Clone, Debug)]
pub struct Group {
    /// `trace, buffer`, or "all traces and buffers" for the average.
    pub title: String,
    /// The defaults' point (gain and inflation 0).
    pub defaults: Point,
    pub points: Vec<Point>,
    /// The (trace, buffer) cells behind it: 1, or all of them for the average.
    pub cells: usize,
}

impl Group {
    /// The index of the best setting: the largest throughput gain above zero whose latency
    /// inflation stays under [`MAX_INFLATION_PCT`]. Where the runs give the gain an interval,
    /// only a gain beyond the run-to-run noise counts: a within-noise "best" would send the
    /// fairness runs, and the reader, after a setting no better than the defaults. (Single
    /// runs, such as the simulator's deterministic ones, have no verdict and count by their
    /// means.)
    pub fn best(&self) -> Option<usize> {
        self.points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.inflation_pct < MAX_INFLATION_PCT && p.gain_pct > 0.0)
            .filter(|(_, p)| p.gain.is_none_or(|c| c.noise != Noise::Within))
            .max_by(|a, b| a.1.gain_pct.total_cmp(&b.1.gain_pct))
            .map(|(i, _)| i)
    }
}

/// Gains and inflations of every setting on every (trace, buffer) of `records` where the
/// defaults ran too, then their average over those (the group the choice is made on; a
/// setting missing anywhere is left out of the average).
pub fn analyse(sweep: &Sweep, records: &[Record]) -> Vec<Group> {
    // (trace, buffer label) -> setting -> runs
    let mut cells: BTreeMap<(String, String), BTreeMap<Setting, Vec<&Record>>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.str("scenario") == "single") {
        if let Some(s) = sweep.setting_of(r) {
            cells
                .entry((r.str("trace").to_string(), r.queue_label()))
                .or_default()
                .entry(s)
                .or_default()
                .push(r);
        }
    }
    let point = |setting: &Setting, runs: &[&Record]| {
        let (thr, p95) = (stat(runs, "throughput_mbps"), stat(runs, "rtt_p95_ms"));
        Point {
            setting: setting.clone(),
            throughput_mbps: thr.map_or(0.0, |s| s.mean),
            rtt_p95_ms: p95.map_or(0.0, |s| s.mean),
            runs: runs.len(),
            gain_pct: 0.0,
            inflation_pct: 0.0,
            throughput: thr,
            rtt_p95: p95,
            gain: None,
            inflation: None,
        }
    };
    let versus = |a: Option<Stat>, b: Option<Stat>| match (a, b) {
        (Some(a), Some(b)) => stats::change(&a, &b),
        _ => None,
    };
    let mut groups = Vec::new();
    for ((trace, queue), by_setting) in &cells {
        let Some(def_runs) = by_setting.get(&Setting::new()) else {
            continue;
        };
        let defaults = point(&Setting::new(), def_runs);
        let points = sweep
            .settings()
            .iter()
            .filter_map(|s| by_setting.get(s).map(|runs| point(s, runs)))
            .map(|mut p| {
                p.gain_pct = pct(p.throughput_mbps, defaults.throughput_mbps);
                p.inflation_pct = pct(p.rtt_p95_ms, defaults.rtt_p95_ms);
                p.gain = versus(p.throughput, defaults.throughput);
                p.inflation = versus(p.rtt_p95, defaults.rtt_p95);
                p
            })
            .collect();
        groups.push(Group {
            title: format!("{trace}, buffer {queue}"),
            defaults,
            points,
            cells: 1,
        });
    }
    if groups.len() > 1 {
        let avg = |f: &dyn Fn(&Point) -> f64, ps: &[&Point]| {
            // 0 when empty.
            leocc_base::metrics::mean(&ps.iter().map(|p| f(p)).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        let mut points = Vec::new();
        for s in sweep.settings() {
            // Each cell's point with that cell's defaults.
            let ps: Vec<(&Point, &Point)> = groups
                .iter()
                .filter_map(|g| {
                    g.points
                        .iter()
                        .find(|p| p.setting == s)
                        .map(|p| (p, &g.defaults))
                })
                .collect();
            if ps.len() == groups.len() {
                let pairs = |f: &dyn Fn(&Point) -> Option<Stat>| -> Option<Vec<(Stat, Stat)>> {
                    ps.iter().map(|(p, d)| Some((f(p)?, f(d)?))).collect()
                };
                let only: Vec<&Point> = ps.iter().map(|(p, _)| *p).collect();
                points.push(Point {
                    setting: s,
                    throughput_mbps: avg(&|p| p.throughput_mbps, &only),
                    rtt_p95_ms: avg(&|p| p.rtt_p95_ms, &only),
                    runs: only.iter().map(|p| p.runs).sum(),
                    gain_pct: avg(&|p| p.gain_pct, &only),
                    inflation_pct: avg(&|p| p.inflation_pct, &only),
                    throughput: None,
                    rtt_p95: None,
                    gain: pairs(&|p| p.throughput).and_then(|v| stats::mean_change(&v)),
                    inflation: pairs(&|p| p.rtt_p95).and_then(|v| stats::mean_change(&v)),
                });
            }
        }
        let d: Vec<&Point> = groups.iter().map(|g| &g.defaults).collect();
        let defaults = Point {
            setting: Setting::new(),
            throughput_mbps: avg(&|p| p.throughput_mbps, &d),
            rtt_p95_ms: avg(&|p| p.rtt_p95_ms, &d),
            runs: d.iter().map(|p| p.runs).sum(),
            gain_pct: 0.0,
            inflation_pct: 0.0,
            throughput: None,
            rtt_p95: None,
            gain: None,
            inflation: None,
        };
        let cells = groups.len();
        groups.push(Group {
            title: "average over all traces and buffers".into(),
            defaults,
            points,
            cells,
        });
    }
    groups
}

fn pct(ours: f64, theirs: f64) -> f64 {
    if theirs.abs() < 1e-12 {
        0.0
    } else {
        (ours / theirs - 1.0) * 100.0
    }
}

/// What one command of `leocc eval --sweep` needs.
pub struct SweepRun<'a> {
    pub matrix: &'a Matrix,
    pub sweep: &'a Sweep,
    pub runner: &'a Runner,
    /// Run the chosen setting and the defaults against Cubic afterwards.
    pub fairness: bool,
    pub command_line: &'a str,
}

/// Runs the sweep (skipping finished runs), then the fairness runs of the chosen setting,
/// writes `report.html` and `sweep.html`, and returns the groups and the page's path.
pub fn run(s: &SweepRun, trace_duration_s: impl Fn(&Path) -> f64) -> Result<(Vec<Group>, PathBuf)> {
    let cc = s.sweep.cc();
    if s.matrix.engine == Engine::Emu && cc != "leocc" {
        bail!("--sweep with --engine emu: only LeoCC (BPF) takes parameters in the kernel; sweep {cc} with --engine sim");
    }
    if !s.matrix.ccs.iter().any(|c| c == cc) {
        bail!(
            "--sweep sweeps {cc}, which is not among --cc ({})",
            s.matrix.ccs.join(",")
        );
    }
    let base = s.matrix.expand(&trace_duration_s);
    let specs = s.sweep.expand(&base);
    eprintln!(
        "sweep: {} settings of {cc} + defaults, {} runs",
        s.sweep.settings().len(),
        specs.len()
    );
    check(s.runner.run(&specs)?, specs.len())?;
    let mut groups = analyse(
        s.sweep,
        &results::read(&runner::results_path(&s.runner.out_dir))?,
    );
    let chosen = groups
        .last()
        .and_then(|g| g.best().map(|i| g.points[i].setting.clone()));
    if s.fairness && cc != "cubic" {
        if let Some(c) = &chosen {
            let mut f = s.sweep.fairness_specs(&base, None);
            f.extend(s.sweep.fairness_specs(&base, Some(c)));
            eprintln!(
                "sweep: fairness against Cubic of {} and the defaults, {} runs",
                s.sweep.label(c),
                f.len()
            );
            check(s.runner.run(&f)?, f.len())?;
        }
    }
    let all = results::read(&runner::results_path(&s.runner.out_dir))?;
    groups = analyse(s.sweep, &all);
    crate::report::write(&s.runner.out_dir, &all, s.command_line)?;
    let page = s.runner.out_dir.join("sweep.html");
    leocc_base::write_atomic(
        &page,
        page_html(
            s.sweep,
            s.matrix.engine,
            &groups,
            &all,
            chosen.as_ref(),
            s.command_line,
        )
        .as_bytes(),
    )?;
    Ok((groups, page))
}

fn check(o: runner::Outcome, total: usize) -> Result<()> {
    for (key, why) in &o.failed {
        eprintln!("sweep: FAILED {key}: {why}");
    }
    if !o.failed.is_empty() {
        bail!(
            "{} of {total} runs failed; rerun the same command to retry only those",
            o.failed.len()
        );
    }
    Ok(())
}

/// A heatmap of one metric of a group over the first two axes (one row when there is one).
fn heatmap(sweep: &Sweep, g: &Group, gain: bool) -> Option<Heatmap> {
    if sweep.axes.len() > 2 {
        return None;
    }
    let x = &sweep.axes[0];
    let y = sweep.axes.get(1);
    let rows: Vec<String> = y.map_or(vec!["—".into()], |a| a.values.clone());
    let best = g.best().map(|i| &g.points[i].setting);
    let mut marked = None;
    let cells = (0..rows.len())
        .map(|r| {
            (0..x.values.len())
                .map(|c| {
                    let mut want = vec![(x.name.clone(), x.values[c].clone())];
                    if let Some(a) = y {
                        want.push((a.name.clone(), a.values[r].clone()));
                    }
                    if best == Some(&want) {
                        marked = Some((r, c));
                    }
                    g.points.iter().find(|p| p.setting == want).map(|p| {
                        if gain {
                            p.gain_pct
                        } else {
                            p.inflation_pct
                        }
                    })
                })
                .collect()
        })
        .collect();
    Some(Heatmap {
        title: format!(
            "{}: {} vs defaults",
            g.title,
            if gain {
                "throughput gain"
            } else {
                "p95 RTT inflation"
            }
        ),
        x_label: format!("{}.{}", x.cc, x.name),
        y_label: y.map_or(String::new(), |a| format!("{}.{}", a.cc, a.name)),
        x_ticks: x.values.clone(),
        y_ticks: rows,
        cells,
        unit: " %".into(),
        higher_is_better: gain,
        marked,
        // Full red at the latency budget and full blue at an equally large gain.
        min_span: MAX_INFLATION_PCT,
    })
}

const STYLE: &str = "<style>body{font-family:Helvetica,Arial,sans-serif;margin:24px;max-width:1200px}\
    table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
    th{background:#f3f3f3}td:first-child{text-align:left}.best{background:#e6f0fa;font-weight:bold}\
    caption{caption-side:top;text-align:left;font-size:12px;color:#555;padding:2px 0}\
    td.beyond,td.within,td.unknown{white-space:nowrap}td.beyond{font-weight:bold}td.within,td.unknown{color:#888;font-weight:normal}\
    .maps{display:flex;flex-wrap:wrap;gap:12px}code{background:#f5f5f5}</style>";

/// A cell's mean with ± its 95 % confidence interval, or the average's plain mean.
fn value(s: Option<Stat>, mean: f64) -> String {
    s.map_or_else(|| format!("{mean:.1}"), |s| s.fmt_ci(1.0, 1))
}

/// A gain or an inflation in words: "+5.0 % [-2, +12] %, within noise, n=3", "+5.0 % (single
/// run)", or the bare change when there is no comparison.
pub fn change_text(pct: f64, c: Option<&Change>) -> String {
    match c {
        Some(c) => match c.pct_interval() {
            Some(i) => format!("{pct:+.1} % {i}, {}", c.verdict()),
            None => format!("{pct:+.1} % ({})", c.verdict()),
        },
        None => format!("{pct:+.1} %"),
    }
}

/// The same as a table cell: bold beyond the noise, grey within it or without a verdict.
fn change_td(pct: f64, c: Option<&Change>) -> String {
    let class = match c.map(|c| c.noise) {
        Some(Noise::Beyond) => "beyond",
        Some(Noise::Within) => "within",
        _ => "unknown",
    };
    format!("<td class=\"{class}\">{}</td>", esc(&change_text(pct, c)))
}

/// What a group's table holds: a cell's runs, or the average over cells.
fn group_caption(g: &Group, cell_runs: &[usize]) -> String {
    if g.cells <= 1 {
        let runs = std::iter::once(g.defaults.runs).chain(g.points.iter().map(|p| p.runs));
        return ci_caption(runs);
    }
    format!(
        "mean over {} trace-and-buffer cells of each cell's mean ({}); gain and inflation: the mean of the cells' \
         ratios to their defaults, with its 95 % interval (delta method on the log scale, Welch's degrees of freedom)",
        g.cells,
        ci_caption(cell_runs.iter().copied())
    )
}

fn page_html(
    sweep: &Sweep,
    engine: Engine,
    groups: &[Group],
    records: &[Record],
    chosen: Option<&Setting>,
    command_line: &str,
) -> String {
    let mut h = String::new();
    let same_runs = match engine {
        Engine::Sim => "(the simulator is deterministic per seed)",
        Engine::Emu => {
            "(in the emulator, with kernel TCP and the BPF LeoCC, whose parameters each run sets and resets; \
             emulator runs are not repeatable: a single run's gain or inflation claims nothing, <code>--runs 3</code> gives intervals)"
        }
    };
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>leocc sweep: {cc}</title>{STYLE}</head><body>\
         <h1>Parameter sweep of {cc}</h1><p>Reproduce with <code>{}</code>. Each setting ran against the defaults \
         on the same traces, buffers and seeds {same_runs}. Gain and inflation are \
         of the means over seeds, each with the 95 % interval of the ratio of the two means and whether it is beyond the \
         run-to-run noise (the interval excludes 0 %: log scale, delta method, Welch's degrees of freedom, which is Welch's \
         t-test at 5 % on the log of the means; bold when beyond, grey when not); ★ marks the largest throughput gain ({GAIN_RULE}) whose p95 RTT inflation stays under \
         {MAX_INFLATION_PCT} % (seed 004's choice). The other runs: <a href=\"report.html\">report.html</a>.</p>",
        esc(command_line),
        cc = esc(sweep.cc())
    );
    let cell_runs: Vec<usize> = groups
        .iter()
        .filter(|g| g.cells == 1)
        .flat_map(|g| std::iter::once(g.defaults.runs).chain(g.points.iter().map(|p| p.runs)))
        .collect();
    for g in groups.iter().rev() {
        let _ = write!(h, "<h2>{}</h2>", esc(&g.title));
        if let (Some(a), Some(b)) = (heatmap(sweep, g, true), heatmap(sweep, g, false)) {
            let _ = write!(h, "<div class=\"maps\">{}{}</div>", a.svg(), b.svg());
        }
        let best = g.best();
        let _ = write!(
            h,
            "<table><caption>{}</caption><tr><th>setting</th><th>throughput Mbit/s</th><th>gain</th><th>RTT p95 ms</th><th>inflation</th><th>runs</th></tr>\
             <tr><td>defaults</td><td>{}</td><td>–</td><td>{}</td><td>–</td><td>{}</td></tr>",
            esc(&group_caption(g, &cell_runs)),
            value(g.defaults.throughput, g.defaults.throughput_mbps),
            value(g.defaults.rtt_p95, g.defaults.rtt_p95_ms),
            g.defaults.runs
        );
        for (i, p) in g.points.iter().enumerate() {
            let _ = write!(
                h,
                "<tr{}><td>{}{}</td><td>{}</td>{}<td>{}</td>{}<td>{}</td></tr>",
                if best == Some(i) {
                    " class=\"best\""
                } else {
                    ""
                },
                if best == Some(i) { "★ " } else { "" },
                esc(&sweep.label(&p.setting)),
                value(p.throughput, p.throughput_mbps),
                change_td(p.gain_pct, p.gain.as_ref()),
                value(p.rtt_p95, p.rtt_p95_ms),
                change_td(p.inflation_pct, p.inflation.as_ref()),
                p.runs
            );
        }
        h.push_str("</table>");
        if let Some(i) = best {
            let p = &g.points[i];
            let _ = write!(
                h,
                "<p>★ {}: throughput {}, p95 RTT {}.{}</p>",
                esc(&sweep.label(&p.setting)),
                esc(&change_text(p.gain_pct, p.gain.as_ref())),
                esc(&change_text(p.inflation_pct, p.inflation.as_ref())),
                if p.gain.is_some_and(|c| c.noise == Noise::Beyond) {
                    ""
                } else {
                    " Its gain has no interval (single runs): the choice rests on the means alone."
                }
            );
        }
        if best.is_none() {
            let _ = write!(h, "<p>No setting gains throughput ({GAIN_RULE}) with less than {MAX_INFLATION_PCT} % latency inflation here.</p>");
        }
    }
    h.push_str("<h2>Fairness against Cubic</h2>");
    let fair: Vec<&Record> = records
        .iter()
        .filter(|r| {
            r.str("scenario") == "vs-cubic"
                && r.str("label").ends_with("+cubic")
                && sweep.setting_of(r).is_some()
        })
        .collect();
    match chosen {
        None => h.push_str("<p>Not run: no setting was chosen.</p>"),
        Some(_) if fair.is_empty() => {
            h.push_str("<p>Not run (--no-fairness, or the swept control is Cubic).</p>")
        }
        Some(_) => {
            let mut cells: BTreeMap<(String, String), Vec<&Record>> = BTreeMap::new();
            for r in fair {
                cells
                    .entry((
                        r.str("label").to_string(),
                        format!("{}, {}", r.str("trace"), r.queue_label()),
                    ))
                    .or_default()
                    .push(r);
            }
            let _ = write!(
                h,
                "<p>One flow of the control against one Cubic flow, started together, same traces, buffers and seeds. \
                 Jain's index over the two flows' throughput (1 = equal shares).</p>\
                 <table><caption>{}</caption><tr><th>flows</th><th>trace, buffer</th><th>control Mbit/s</th><th>Cubic Mbit/s</th><th>Jain</th><th>runs</th></tr>",
                esc(&ci_caption(cells.values().map(|runs| runs.len())))
            );
            for ((label, at), runs) in &cells {
                let flow = |i: usize| {
                    flow_stat(runs, i, "throughput_mbps").map_or("–".into(), |s| s.fmt_ci(1.0, 1))
                };
                let jain = stat(runs, "jain").map_or("–".into(), |s| s.fmt_ci(1.0, 3));
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{jain}</td><td>{}</td></tr>",
                    esc(label),
                    esc(at),
                    flow(0),
                    flow(1),
                    runs.len()
                );
            }
            h.push_str("</table>");
        }
    }
    h.push_str("</body></html>");
    h
}

/// A plain-text summary of a group for the terminal: each cell's means with ± their 95 %
/// intervals (the average's plain means), gains and inflations with their intervals and
/// whether they are beyond the noise.
pub fn table(sweep: &Sweep, g: &Group) -> String {
    let mut s = format!(
        "{} ({})\n{:<60} {:>14} {:>14} {:>42} {:>42}\n{:<60} {:>14} {:>14} {:>42} {:>42}\n",
        g.title,
        if g.cells <= 1 {
            ci_caption(std::iter::once(g.defaults.runs).chain(g.points.iter().map(|p| p.runs)))
        } else {
            format!("mean over {} cells", g.cells)
        },
        "setting",
        "thr Mbit/s",
        "RTT p95 ms",
        "gain",
        "inflation",
        "defaults",
        value(g.defaults.throughput, g.defaults.throughput_mbps),
        value(g.defaults.rtt_p95, g.defaults.rtt_p95_ms),
        "–",
        "–"
    );
    let best = g.best();
    for (i, p) in g.points.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:<60} {:>14} {:>14} {:>42} {:>42}{}",
            sweep.label(&p.setting),
            value(p.throughput, p.throughput_mbps),
            value(p.rtt_p95, p.rtt_p95_ms),
            change_text(p.gain_pct, p.gain.as_ref()),
            change_text(p.inflation_pct, p.inflation.as_ref()),
            if best == Some(i) {
                "  <- best under 10 % inflation"
            } else {
                ""
            }
        );
    }
    if best.is_none() {
        let _ = writeln!(
            s,
            "no setting chosen: none raises throughput ({GAIN_RULE}) while keeping the p95 RTT \
             within {MAX_INFLATION_PCT:.0} % of the defaults'"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Matrix;
    use leocc_sim::QueueLimit;

    fn sweep() -> Sweep {
        Sweep::new(vec![
            "bbr3.probe_rtt_interval_ms=1000,5000".parse().unwrap(),
            "bbr3.loss_thresh=0.02, 0.08,0.08".parse().unwrap(),
        ])
        .unwrap()
    }

    #[test]
    fn the_table_says_when_no_setting_is_chosen() {
        let sw = sweep();
        let pt = |setting: Setting, gain_pct: f64, inflation_pct: f64| Point {
            setting,
            throughput_mbps: 10.0,
            rtt_p95_ms: 50.0,
            runs: 1,
            gain_pct,
            inflation_pct,
            throughput: None,
            rtt_p95: None,
            gain: None,
            inflation: None,
        };
        let setting = sw.settings()[0].clone();
        let mut g = Group {
            title: "all".into(),
            defaults: pt(Vec::new(), 0.0, 0.0),
            points: vec![pt(setting, 5.0, 30.0)],
            cells: 1,
        };
        let t = table(&sw, &g);
        assert!(t.contains("no setting chosen"), "{t}");
        g.points[0].inflation_pct = 2.0;
        let t = table(&sw, &g);
        assert!(
            t.contains("<- best") && !t.contains("no setting chosen"),
            "{t}"
        );
    }

    #[test]
    fn axes_are_checked_against_the_parameters() {
        let s = sweep();
        assert_eq!(s.axes[1].values, vec!["0.02", "0.08"]);
        let e = "bbr3.loss_thresh=0.02,0.9".parse::<Axis>().unwrap_err();
        assert!(
            e.contains("out of range") && e.contains("0.001 ..= 0.5"),
            "{e}"
        );
        assert!("bbr3.nope=1"
            .parse::<Axis>()
            .unwrap_err()
            .contains("unknown bbr3 parameter 'nope'"));
        assert!("bbr3=1".parse::<Axis>().is_err());
        assert!("bbr3.loss_thresh=".parse::<Axis>().is_err());
        assert!("leocc.delta_rtt_us=0,5000".parse::<Axis>().is_ok());
        let mixed = Sweep::new(vec![
            "bbr3.beta=0.5".parse().unwrap(),
            "cubic.beta=0.5".parse().unwrap(),
        ]);
        assert!(mixed.unwrap_err().contains("one control"));
        let twice = Sweep::new(vec![
            "bbr3.beta=0.5".parse().unwrap(),
            "bbr3.beta=0.6".parse().unwrap(),
        ]);
        assert!(twice.unwrap_err().contains("twice"));
    }

    #[test]
    fn expands_the_product_next_to_the_defaults_with_distinct_keys() {
        let m = Matrix {
            engine: Engine::Sim,
            traces: vec!["a.trace".into(), "b.trace".into()],
            ccs: vec!["bbr3".into(), "cubic".into()],
            scenarios: vec![Scenario::Single],
            runs: 3,
            seed: 1,
            duration_s: Some(10.0),
            queues: vec![QueueLimit::Packets(500)],
            loss: None,
            oracle_reconfig: false,
        };
        let s = sweep();
        let base = m.expand(|_| 60.0);
        let specs = s.expand(&base);
        // 2 traces x 3 seeds x (cubic + bbr3 defaults + 4 settings)
        assert_eq!(specs.len(), 2 * 3 * (2 + 4));
        let mut keys: Vec<_> = specs.iter().map(|r| r.key.as_str()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), specs.len());
        let one = specs
            .iter()
            .find(|r| r.label == "bbr3{probe_rtt_interval_ms=5000,loss_thresh=0.08}")
            .unwrap();
        assert_eq!(
            one.params,
            vec!["bbr3.probe_rtt_interval_ms=5000", "bbr3.loss_thresh=0.08"]
        );
        assert_eq!(one.flows, "bbr3@0-10");
        assert!(specs
            .iter()
            .filter(|r| r.label == "cubic")
            .all(|r| r.params.is_empty()));
        let f = s.fairness_specs(&base, Some(&s.settings()[1]));
        assert_eq!(f.len(), 2 * 3);
        assert_eq!(f[0].flows, "bbr3@0-10,cubic@0-10");
        assert!(
            f[0].key
                .ends_with("|vs-cubic|pbbr3.probe_rtt_interval_ms=1000,bbr3.loss_thresh=0.08"),
            "{}",
            f[0].key
        );
    }

    fn rec(label: &str, params: &[&str], thr: f64, rtt: f64) -> Record {
        Record(
            serde_json::json!({"key": format!("{label}{params:?}"), "scenario": "single", "trace": "t", "queue": "500",
            "label": label, "params": params, "throughput_mbps": thr, "rtt_p95_ms": rtt}),
        )
    }

    /// One cell of three seeds: `(label, params, throughput, its spread, p95 RTT, its spread)`
    /// per setting; seed i's value is the base plus (i - 2) x the spread.
    fn three_seeds(cells: &[(&str, &[&str], f64, f64, f64, f64)]) -> Vec<Record> {
        let mut records = Vec::new();
        for (seed, d) in [(1, -1.0), (2, 0.0), (3, 1.0)] {
            for &(label, params, thr, thr_d, rtt, rtt_d) in cells {
                let mut x = rec(label, params, thr + thr_d * d, rtt + rtt_d * d);
                x.0["key"] = format!("{label}{params:?}{seed}").into();
                records.push(x);
            }
        }
        records
    }

    /// The simulator's sweep page of one group.
    fn page(s: &Sweep, g: &Group, records: &[Record]) -> String {
        page_html(s, Engine::Sim, std::slice::from_ref(g), records, None, "leocc eval")
    }

    #[test]
    fn best_is_the_largest_gain_within_the_latency_budget() {
        let s = sweep();
        let records = vec![
            rec("bbr3", &[], 100.0, 50.0),
            rec(
                "bbr3{}",
                &["bbr3.probe_rtt_interval_ms=1000", "bbr3.loss_thresh=0.02"],
                90.0,
                45.0,
            ),
            // Largest gain, but 20 % more latency: not chosen.
            rec(
                "x",
                &["bbr3.probe_rtt_interval_ms=1000", "bbr3.loss_thresh=0.08"],
                200.0,
                60.0,
            ),
            rec(
                "x",
                &["bbr3.probe_rtt_interval_ms=5000", "bbr3.loss_thresh=0.08"],
                150.0,
                54.0,
            ),
            rec("cubic", &[], 10.0, 10.0),
        ];
        // Rows are told apart by their params, not their labels; "x" is not bbr3.
        assert!(analyse(&s, &records)[0].points.len() == 1);
        let records: Vec<Record> = records
            .into_iter()
            .map(|mut r| {
                if r.str("label") == "x" {
                    r.0["label"] = "bbr3{..}".into();
                }
                r
            })
            .collect();
        let g = &analyse(&s, &records)[0];
        assert_eq!(g.points.len(), 3);
        let best = &g.points[g.best().unwrap()];
        assert_eq!(
            best.setting,
            vec![
                ("probe_rtt_interval_ms".into(), "5000".into()),
                ("loss_thresh".into(), "0.08".into())
            ]
        );
        assert!((best.gain_pct - 50.0).abs() < 1e-9 && (best.inflation_pct - 8.0).abs() < 1e-9);
        let map = heatmap(&s, g, true).unwrap();
        assert_eq!(map.marked, Some((1, 1)));
        assert!((map.cells[0][0].unwrap() + 10.0).abs() < 1e-9);
        assert!((map.cells[1][0].unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(map.cells[0][1], None, "5000 ms with 0.02 did not run");
        let html = page_html(
            &s,
            Engine::Sim,
            std::slice::from_ref(g),
            &records,
            Some(&best.setting),
            "leocc eval",
        );
        assert!(html.contains("★ bbr3{probe_rtt_interval_ms=5000,loss_thresh=0.08}"));
    }

    #[test]
    fn gains_carry_intervals_and_noise_verdicts() {
        let s = sweep();
        let a = ["bbr3.probe_rtt_interval_ms=1000", "bbr3.loss_thresh=0.02"];
        let b = ["bbr3.probe_rtt_interval_ms=5000", "bbr3.loss_thresh=0.08"];
        let records = three_seeds(&[
            // Defaults [99, 100, 101] Mbit/s, [49, 50, 51] ms.
            ("bbr3", &[], 100.0, 1.0, 50.0, 1.0),
            // A: +20 % throughput, far outside the spread; +2 % p95 RTT inside a wide one.
            ("bbr3{a}", &a, 120.0, 1.0, 51.0, 8.0),
            // B: +2 % throughput with a wide spread, within the noise.
            ("bbr3{b}", &b, 102.0, 10.0, 50.0, 1.0),
        ]);
        let g = &analyse(&s, &records)[0];
        let pa = g.points.iter().find(|p| p.setting[0].1 == "1000").unwrap();
        let pb = g.points.iter().find(|p| p.setting[0].1 == "5000").unwrap();
        assert_eq!(pa.gain.unwrap().noise, Noise::Beyond);
        assert_eq!(pa.inflation.unwrap().noise, Noise::Within);
        assert_eq!(pb.gain.unwrap().noise, Noise::Within);
        // [119, 120, 121]: 120 ± 4.303 / √3 = 120.0 ± 2.5.
        assert_eq!(pa.throughput.unwrap().fmt_ci(1.0, 1), "120.0 ± 2.5");
        let t = table(&s, g);
        assert!(t.contains("mean ± 95 % CI, n=3"), "{t}");
        assert!(t.contains("120.0 ± 2.5"), "{t}");
        assert!(t.contains("+20.0 % [+17, +23] %, beyond noise"), "{t}");
        assert!(t.contains("+2.0 % ["), "{t}");
        assert!(t.contains("within noise, n=3"), "{t}");
        let html = page(&s, g, &records);
        assert!(
            html.contains("<caption>mean ± 95 % CI, n=3</caption>"),
            "{html}"
        );
        assert!(
            html.contains("<td class=\"beyond\">+20.0 % [+17, +23] %, beyond noise</td>"),
            "{html}"
        );
        assert!(html.contains("<td class=\"within\">+2.0 % ["), "{html}");
        // A: the largest gain within the latency budget; its gain stands out from the noise.
        assert!(
            html.contains(
                "★ bbr3{probe_rtt_interval_ms=1000,loss_thresh=0.02}: throughput +20.0 %"
            ),
            "{html}"
        );
        assert!(
            !html.contains("the choice rests on the means alone"),
            "{html}"
        );
    }

    #[test]
    fn a_gain_within_the_noise_is_not_chosen() {
        let s = sweep();
        let b = ["bbr3.probe_rtt_interval_ms=5000", "bbr3.loss_thresh=0.08"];
        let records = three_seeds(&[
            ("bbr3", &[], 100.0, 1.0, 50.0, 1.0),
            // +2 % on the mean, but the runs spread over +-10 %.
            ("bbr3{b}", &b, 102.0, 10.0, 50.0, 1.0),
        ]);
        let g = &analyse(&s, &records)[0];
        assert_eq!(g.points[0].gain.unwrap().noise, Noise::Within);
        assert!(g.points[0].gain_pct > 0.0);
        assert_eq!(g.best(), None, "a within-noise gain is no choice");
        assert!(table(&s, g).contains("no setting chosen"));
        let html = page(&s, g, &records);
        assert!(
            html.contains("No setting gains throughput (beyond the run-to-run noise"),
            "{html}"
        );
        assert!(!html.contains("★ bbr3{"), "{html}");
    }

    #[test]
    fn the_average_over_cells_has_an_interval_too() {
        let s = sweep();
        let a = ["bbr3.probe_rtt_interval_ms=1000", "bbr3.loss_thresh=0.02"];
        let mut records = Vec::new();
        for trace in ["t1", "t2"] {
            for (seed, d) in [(1, -1.0), (2, 0.0), (3, 1.0)] {
                for (label, params, thr) in [("bbr3", &[][..], 100.0), ("bbr3{a}", &a[..], 110.0)] {
                    let mut x = rec(label, params, thr + d, 50.0 + d);
                    x.0["key"] = format!("{trace}{label}{seed}").into();
                    x.0["trace"] = trace.into();
                    records.push(x);
                }
            }
        }
        let groups = analyse(&s, &records);
        assert_eq!(groups.len(), 3);
        let avg = groups.last().unwrap();
        assert_eq!(avg.cells, 2);
        let p = &avg.points[0];
        assert!((p.gain_pct - 10.0).abs() < 1e-9);
        let g = p.gain.unwrap();
        assert_eq!(g.noise, Noise::Beyond);
        assert_eq!(g.n, (3, 3));
        assert_eq!(p.inflation.unwrap().noise, Noise::Within);
        let t = table(&s, avg);
        assert!(t.contains("mean over 2 cells"), "{t}");
        let html = page_html(&s, Engine::Sim, &groups, &records, None, "leocc eval");
        assert!(
            html.contains(
                "mean over 2 trace-and-buffer cells of each cell's mean (mean ± 95 % CI, n=3)"
            ),
            "{html}"
        );
    }

    /// The sweep's settings reach the simulated control: a tiny ProbeRTT interval changes the
    /// run (it spends more time with a small window) while the defaults' run does not move.
    #[test]
    fn a_setting_changes_the_simulated_run() {
        let trace = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../traces/starlink-down-60s.trace"
        );
        let trace = std::sync::Arc::new(leocc_trace::Trace::load(Path::new(trace)).unwrap());
        let run = |params: &[&str]| {
            let mut sc = leocc_sim::Scenario::new(trace.clone(), "t", "bbr3", 8_000_000);
            sc.cc_params = params
                .iter()
                .map(|p| ("bbr3".to_string(), p.to_string()))
                .collect();
            leocc_sim::run(&sc).map(|r| r.throughput_mbps)
        };
        let d = run(&[]).unwrap();
        assert_eq!(d, run(&[]).unwrap());
        assert_ne!(d, run(&["probe_rtt_interval_ms=200"]).unwrap());
        let e = run(&["loss_thresh=2"]).unwrap_err().to_string();
        assert!(e.contains("bbr3.loss_thresh=2 is out of range"), "{e}");
    }
}
