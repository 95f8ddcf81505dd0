//! report.html: made from results.jsonl and the per-run time series alone.
//!
//! Sections, per engine and trace: the headline comparison the paper makes (LeoCC's throughput
//! against Cubic, Copa and BBRv3; its p95 RTT against BBRv1 and Vivace; its utilisation and
//! queueing delay), each change with whether it is beyond the run-to-run noise, the throughput /
//! p95-delay plane with the trace's oracle point, a table of every metric (mean and the 95 %
//! confidence interval over runs, [`crate::stats`]), bars for utilisation, queueing delay, loss and
//! retransmissions, time series of each control over the trace's capacity and base RTT with
//! reconfigurations marked, and the multi-flow scenarios (fairness, LeoCC against BBR and
//! Cubic, the two-stream test) with Jain's index over time. When both engines ran, a table
//! compares them.

use crate::across;
use crate::results::{by_cell, flow_stat, stat, CellKey, Record, Stat};
use crate::stats::{self, ci_caption, fmt_ratio, ratio_interval, Noise, CI_LEGEND, NOISE_LEGEND};
use crate::tsstore::Store;
use anyhow::{Context, Result};
use leocc_plot::{bars, color, esc, Axis, BarSeries, Chart, Marker, MarkerKind, Series, Style};
use leocc_base::controls;
use leocc_base::metrics::{jain, quantile_floor};
use leocc_trace::{Dir, Trace};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The controls LeoCC's throughput is compared with (the paper's +85 to +494 %).
pub const THROUGHPUT_RIVALS: [&str; 3] = ["cubic", "copa", "bbr3"];
/// The controls LeoCC's p95 RTT is compared with: the paper's (-44 to -56 % against BBRv1 and
/// Vivace) and the authors' own code (`leocc-ref`).
pub const DELAY_RIVALS: [&str; 3] = ["bbr", "vivace", "leocc-ref"];

/// The colour of a control (or a mixed label) wherever it appears: a control's is its place
/// in the registry ([`controls::CONTROLS`]), so it is the same in every chart. Other labels
/// (quic:*, swept settings, mixes) take a colour from a hash of the whole label: by length
/// alone, quic:cubic and quic:leocc were the same green.
pub(crate) fn cc_color(label: &str) -> &'static str {
    let other = || {
        controls::CONTROLS.len()
            + label
                .bytes()
                .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize))
    };
    color(controls::position(label).unwrap_or_else(other))
}

/// How ground-truth reconfigurations are drawn over time series.
const RECONFIG_COLOR: &str = "#bbbbbb";
const RECONFIG_DASH: &str = "3,3";
/// Width of the time-series bins, in seconds (the engines write 100 ms rows).
const BIN_S: f64 = 0.1;
/// Time-series plots are thinned to at most this many points per series.
const MAX_POINTS: usize = 1500;

/// One row of a run's time series (one flow over one bin).
#[derive(Clone, Debug, Default)]
pub struct TsRow {
    pub t_s: f64,
    pub flow: usize,
    pub throughput_mbps: f64,
    pub rtt_ms: f64,
}

/// Reads a run's CSV time series (header with at least t_s, flow, throughput_mbps, rtt_ms).
pub fn read_timeseries(path: &Path) -> Result<Vec<TsRow>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| header.iter().position(|h| h.trim() == name);
    let (Some(ct), Some(cf), Some(cth), Some(cr)) = (
        col("t_s"),
        col("flow"),
        col("throughput_mbps"),
        col("rtt_ms"),
    ) else {
        anyhow::bail!(
            "{}:1: expected columns t_s, flow, throughput_mbps, rtt_ms",
            path.display()
        );
    };
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let num = |c: usize| -> Result<f64> {
            f.get(c)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .with_context(|| {
                    format!(
                        "{}:{}: bad or missing column {}",
                        path.display(),
                        i + 2,
                        header[c]
                    )
                })
        };
        out.push(TsRow {
            t_s: num(ct)?,
            flow: num(cf)? as usize,
            throughput_mbps: num(cth)?,
            rtt_ms: num(cr)?,
        });
    }
    Ok(out)
}

/// What the report needs to know about a trace, computed once per trace.
struct TraceView {
    /// (time s, capacity Mbit/s) per 100 ms in the data direction.
    capacity: Vec<(f64, f64)>,
    /// (time s, base RTT ms).
    base_rtt: Vec<(f64, f64)>,
    reconfig_s: Vec<f64>,
    mean_capacity_mbps: f64,
    /// The 95th percentile of the base one-way delay: the oracle's delay.
    base_owd_p95_ms: f64,
}

impl TraceView {
    fn load(path: &Path, horizon_s: f64) -> Result<TraceView> {
        let trace = Trace::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let dir = trace.meta.direction.primary();
        let fwd = trace.link(dir);
        let back = trace.link(if dir == Dir::Up { Dir::Down } else { Dir::Up });
        let horizon_s = if horizon_s > 0.0 {
            horizon_s
        } else {
            trace.duration_us() as f64 / 1e6
        };
        let bins = (horizon_s / BIN_S).ceil() as u64;
        let bin_us = (BIN_S * 1e6) as u64;
        let mut capacity = Vec::with_capacity(bins as usize);
        let mut base_rtt = Vec::with_capacity(bins as usize);
        let mut owds = Vec::with_capacity(bins as usize);
        for b in 0..bins {
            let t = b * bin_us;
            let n = fwd.opportunities(t, bin_us).count() as f64;
            capacity.push(((t + bin_us) as f64 / 1e6, n * 1500.0 * 8.0 / BIN_S / 1e6));
            let owd = fwd.delay_us(t) as f64 / 1000.0;
            owds.push(owd);
            base_rtt.push((t as f64 / 1e6, owd + back.delay_us(t) as f64 / 1000.0));
        }
        owds.sort_by(f64::total_cmp);
        let period_s = trace.duration_us() as f64 / 1e6;
        let mut reconfig_s = Vec::new();
        if period_s > 0.0 {
            let mut base = 0.0;
            while base < horizon_s {
                reconfig_s.extend(
                    trace
                        .reconfigurations_us()
                        .iter()
                        .map(|&r| base + r as f64 / 1e6)
                        .filter(|&r| r < horizon_s),
                );
                base += period_s;
            }
        }
        Ok(TraceView {
            mean_capacity_mbps: fwd.mean_capacity_bps(0, bins * bin_us) / 1e6,
            base_owd_p95_ms: quantile_floor(&owds, 0.95).unwrap_or(0.0),
            capacity,
            base_rtt,
            reconfig_s,
        })
    }
}

/// A cell's mean with ± its 95 % confidence interval ([`Stat::fmt_ci`]), or "–".
fn fmt_stat(s: Option<Stat>, scale: f64, decimals: usize) -> String {
    s.map_or_else(|| "–".into(), |s| s.fmt_ci(scale, decimals))
}

/// LeoCC's change against a rival with its noise verdict, "-31 % (beyond noise)"; "–" without
/// the rival, "n/a" when the rival's mean is zero.
fn change_text(ours: Option<Stat>, theirs: Option<Stat>) -> String {
    match (ours, theirs) {
        (Some(o), Some(t)) => stats::change(&o, &t).map_or("n/a".into(), |c| c.text()),
        _ => "–".into(),
    }
}

/// The same as a table cell, one line each: the change, its 95 % interval when there is one,
/// and the verdict; changes beyond the noise are bold, changes within it grey.
fn change_cell(ours: Option<Stat>, theirs: Option<Stat>) -> String {
    let (Some(o), Some(t)) = (ours, theirs) else {
        return "<td>–</td>".into();
    };
    let Some(c) = stats::change(&o, &t) else {
        return "<td>n/a</td>".into();
    };
    let class = match c.noise {
        Noise::Beyond => "beyond",
        Noise::Within => "within",
        Noise::Unknown => "unknown",
    };
    format!(
        "<td class=\"cmp {class}\"><span class=\"chg\">{}</span>{}<br><small>{}</small></td>",
        esc(&c.pct()),
        c.pct_interval()
            .map_or_else(String::new, |i| format!("<br><small>{}</small>", esc(&i))),
        esc(&c.verdict())
    )
}

/// Writes `out_dir/report.html` from `out_dir/results.jsonl`'s records; returns its path.
pub fn write(out_dir: &Path, records: &[Record], command_line: &str) -> Result<PathBuf> {
    let mut html = String::new();
    html.push_str(HEAD);
    let _ = write!(
        html,
        "<h1>leocc evaluation</h1><p class=\"meta\">{} runs from <code>results.jsonl</code>. Reproduce with <code>{}</code>.</p><p class=\"meta\">{}</p>",
        records.len(),
        esc(command_line),
        esc(CI_LEGEND)
    );
    let cells = by_cell(records);
    let ts = Store::open(out_dir)?;
    let engines: BTreeSet<&str> = records.iter().map(|r| r.str("engine")).collect();
    // One section per engine, trace and buffer (with its discipline); the buffer's label from
    // its first row.
    let mut traces: BTreeMap<(String, String, String), (PathBuf, String)> = BTreeMap::new();
    for r in records {
        traces
            .entry((r.str("engine").into(), r.str("trace").into(), r.buffer()))
            .or_insert_with(|| (PathBuf::from(r.str("trace_path")), r.queue_label()));
    }
    // Engines and buffers with more traces than a page can show one by one.
    let mut per_group: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (engine, _, queue) in traces.keys() {
        *per_group
            .entry((engine.as_str(), queue.as_str()))
            .or_default() += 1;
    }
    let many: BTreeMap<(&str, &str), across::Group> = per_group
        .iter()
        .filter(|(_, &n)| n > across::DETAIL_TRACES)
        .map(|(&(e, q), _)| ((e, q), across::Group::new(&cells, e, q)))
        .collect();
    html.push_str(&headline_table(&cells, &many));
    html.push_str(&detection_cost_table(&cells));
    let mut shown: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for ((engine, trace, queue), (path, queue_label)) in &traces {
        let group = (engine.as_str(), queue.as_str());
        let n = shown.entry(group).or_default();
        *n += 1;
        if let Some(g) = many.get(&group) {
            if *n == 1 {
                html.push_str(&g.section());
            }
            if *n > across::DETAIL_TRACES {
                continue;
            }
        }
        let horizon = records
            .iter()
            .filter(|r| r.str("trace") == trace && r.str("engine") == engine)
            .filter_map(|r| r.num("duration_s"))
            .fold(0.0, f64::max);
        let view = match TraceView::load(&resolve(out_dir, path), horizon) {
            Ok(v) => Some(v),
            Err(e) => {
                let _ = write!(
                    html,
                    "<p class=\"warn\">Trace {} could not be read for overlays: {}</p>",
                    esc(&path.display().to_string()),
                    esc(&format!("{e:#}"))
                );
                None
            }
        };
        let _ = write!(
            html,
            "<h2>{} — {} — buffer {}</h2>",
            esc(trace),
            esc(engine),
            esc(queue_label)
        );
        let at = At {
            engine,
            trace,
            queue,
        };
        single_section(&mut html, &ts, &cells, at, view.as_ref());
        multi_flow_section(&mut html, &ts, &cells, at, view.as_ref());
    }
    if engines.len() > 1 {
        html.push_str(&engine_comparison(&cells));
    }
    html.push_str("</body></html>\n");
    let path = out_dir.join("report.html");
    leocc_base::write_atomic(&path, html.as_bytes())?;
    Ok(path)
}

/// A trace path in results is as the user gave it; relative paths are tried from the current
/// directory and from the output directory's parent.
fn resolve(out_dir: &Path, p: &Path) -> PathBuf {
    if p.exists() {
        return p.to_path_buf();
    }
    out_dir
        .parent()
        .map(|d| d.join(p))
        .filter(|q| q.exists())
        .unwrap_or_else(|| p.to_path_buf())
}

type Cells<'a> = BTreeMap<CellKey, Vec<&'a Record>>;

/// One section of the report: an engine, a trace and a buffer.
#[derive(Clone, Copy)]
struct At<'a> {
    engine: &'a str,
    trace: &'a str,
    queue: &'a str,
}

impl At<'_> {
    fn holds(&self, key: &CellKey) -> bool {
        key.0 == self.engine && key.1 == self.trace && key.2 == self.queue
    }
}

fn single_runs<'a>(cells: &'a Cells, at: At) -> Vec<(&'a str, &'a Vec<&'a Record>)> {
    cells
        .iter()
        .filter(|(k, _)| at.holds(k) && k.3 == "single")
        .map(|(k, v)| (k.4.as_str(), v))
        .collect()
}

/// The buffer label of a cell's runs (the first run's).
fn queue_label(runs: &[&Record]) -> String {
    runs.first().map_or_else(String::new, |r| r.queue_label())
}

/// The paper's comparisons, one row per engine and trace with a LeoCC run; one row across
/// traces for an engine and buffer in `many`.
/// LeoCC with the detector against LeoCC fed the truth (`leocc-oracle`), wherever both ran
/// alone in one cell: (engine, trace, buffer, the LeoCC runs, throughput and p95 RTT of each).
/// The difference is what detection errors cost (missed, late and false events).
fn detection_costs<'c, 'r>(cells: &'c Cells<'r>) -> Vec<(&'c CellKey, &'c [&'r Record], Option<Stat>, Option<Stat>, Option<Stat>, Option<Stat>)> {
    cells
        .iter()
        .filter(|((_, _, _, scenario, label), _)| scenario == "single" && label == "leocc")
        .filter_map(|(key @ (engine, trace, queue, scenario, _), runs)| {
            let oracle = cells.get(&(engine.clone(), trace.clone(), queue.clone(), scenario.clone(), controls::ORACLE_LEOCC.into()))?;
            Some((
                key,
                runs.as_slice(),
                stat(runs, "throughput_mbps"),
                stat(oracle, "throughput_mbps"),
                stat(runs, "rtt_p95_ms"),
                stat(oracle, "rtt_p95_ms"),
            ))
        })
        .collect()
}

/// The report's section on what detection errors cost ([`detection_costs`]); empty when no
/// cell ran `leocc-oracle` beside `leocc`.
fn detection_cost_table(cells: &Cells) -> String {
    let rows: String = detection_costs(cells)
        .into_iter()
        .map(|((engine, trace, _, _, _), runs, thr, thr_o, p95, p95_o)| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}</tr>",
                esc(engine),
                esc(trace),
                esc(&queue_label(runs)),
                runs.len(),
                change_cell(thr, thr_o),
                change_cell(p95, p95_o)
            )
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<h2>What detection errors cost</h2><p>LeoCC with the reconfiguration detector (the simulator runs the daemon's own detection on a simulated \
         probe stream) against LeoCC fed the trace's true reconfigurations (<code>leocc-oracle</code>), single-flow runs: the changes are what missed, \
         late and false events cost. {}</p><table><tr><th>engine</th><th>trace</th><th>buffer</th><th>runs</th>\
         <th>throughput vs leocc-oracle</th><th>p95 RTT vs leocc-oracle</th></tr>{rows}</table>",
        esc(NOISE_LEGEND)
    )
}

fn headline_table(cells: &Cells, many: &BTreeMap<(&str, &str), across::Group>) -> String {
    let mut rows = String::new();
    // Runs per cell of every LeoCC row and its rivals, for the caption.
    let mut ns: Vec<usize> = Vec::new();
    for g in many.values() {
        rows += &g.headline_row();
    }
    for ((engine, trace, queue, scenario, label), runs) in cells {
        if scenario != "single"
            || label != "leocc"
            || many.contains_key(&(engine.as_str(), queue.as_str()))
        {
            continue;
        }
        let get = |cc: &str, field: &str| {
            cells
                .get(&(
                    engine.clone(),
                    trace.clone(),
                    queue.clone(),
                    "single".into(),
                    cc.into(),
                ))
                .and_then(|r| stat(r, field))
        };
        let thr = stat(runs, "throughput_mbps");
        let p95 = stat(runs, "rtt_p95_ms");
        ns.push(runs.len());
        for cc in THROUGHPUT_RIVALS.iter().chain(DELAY_RIVALS.iter()) {
            ns.extend(get(cc, "throughput_mbps").map(|s| s.n));
        }
        let mut cols = String::new();
        for cc in THROUGHPUT_RIVALS {
            cols += &change_cell(thr, get(cc, "throughput_mbps"));
        }
        for cc in DELAY_RIVALS {
            cols += &change_cell(p95, get(cc, "rtt_p95_ms"));
        }
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{cols}</tr>",
            esc(engine),
            esc(trace),
            esc(&queue_label(runs)),
            runs.len(),
            fmt_stat(stat(runs, "utilization"), 100.0, 1),
            fmt_stat(stat(runs, "qdelay_avg_ms"), 1.0, 1),
            fmt_stat(stat(runs, "qdelay_p95_ms"), 1.0, 1),
        );
    }
    if rows.is_empty() {
        return String::new();
    }
    let caption = if ns.is_empty() {
        String::new()
    } else {
        format!(
            "<caption>Per trace: {}; each change with its 95 % interval and the noise verdict.</caption>",
            esc(&ci_caption(ns))
        )
    };
    format!(
        "<h2>LeoCC against the field</h2><p>Throughput change of LeoCC against Cubic, Copa and BBRv3 (the paper reports +85 to +494 %) and \
         p95 RTT change against BBRv1 and Vivace (the paper: −44 to −56 %) and against the authors' own code (leocc-ref), single-flow runs, means over seeds, one row per buffer. \
         Each change is given with its 95 % interval and whether it is beyond the run-to-run noise (bold; grey when within it). {} \
         With more than {} traces in an engine and buffer, one row for all of them: the median change over traces, the share of traces where LeoCC is ahead, \
         and the shares of traces where it is ahead and behind beyond the noise (each trace's change judged as above). \
         Negative throughput or positive delay numbers are shortfalls and are shown as measured.</p>\
         <table>{caption}<tr><th>engine</th><th>trace</th><th>buffer</th><th>runs</th><th>LeoCC utilisation %</th><th>queueing delay mean ms</th><th>queueing delay p95 ms</th>\
         <th>thr. vs cubic</th><th>thr. vs copa</th><th>thr. vs bbr3</th><th>p95 RTT vs bbr</th><th>p95 RTT vs vivace</th><th>p95 RTT vs leocc-ref</th></tr>{rows}</table>",
        esc(NOISE_LEGEND),
        across::DETAIL_TRACES
    )
}

const METRICS: [(&str, &str, f64, usize); 10] = [
    ("throughput_mbps", "throughput Mbit/s", 1.0, 1),
    ("utilization", "utilisation %", 100.0, 1),
    ("rtt_avg_ms", "RTT mean ms", 1.0, 1),
    ("rtt_p95_ms", "RTT p95 ms", 1.0, 1),
    ("owd_p95_ms", "OWD p95 ms", 1.0, 1),
    ("qdelay_avg_ms", "qdelay mean ms", 1.0, 1),
    ("qdelay_p95_ms", "qdelay p95 ms", 1.0, 1),
    ("loss_rate", "loss %", 100.0, 2),
    ("retrans_rate", "retrans %", 100.0, 2),
    ("jain", "Jain", 1.0, 3),
];

fn single_section(html: &mut String, ts: &Store, cells: &Cells, at: At, view: Option<&TraceView>) {
    let At {
        engine,
        trace,
        queue,
    } = at;
    let runs = single_runs(cells, at);
    if runs.is_empty() {
        return;
    }
    // Throughput against p95 one-way delay, Pantheon style.
    let mut chart = Chart::new(
        format!("{trace}: throughput vs 95th-percentile one-way delay ({engine}, queue {queue})"),
        Axis::new("95th-percentile one-way delay (ms, log scale, better →)")
            .log()
            .inverted(),
        Axis::new("throughput (Mbit/s)"),
    );
    chart.height = 420;
    for (label, rs) in &runs {
        let (Some(t), Some(d)) = (stat(rs, "throughput_mbps"), stat(rs, "owd_p95_ms")) else {
            continue;
        };
        let mut s = Series::new(
            *label,
            cc_color(label),
            Style::Points,
            vec![(d.mean, t.mean)],
        )
        .labelled();
        if t.n > 1 {
            s.spread.push((d.min, d.max, t.min, t.max));
        }
        chart.series.push(s);
    }
    if let Some(v) = view {
        chart.series.push(
            Series::new(
                "oracle",
                "#000000",
                Style::Points,
                vec![(v.base_owd_p95_ms.max(0.1), v.mean_capacity_mbps)],
            )
            .labelled(),
        );
    }
    let _ = write!(html, "<figure>{}<figcaption>Each control's mean over seeds with its min–max spread; the oracle point is all the capacity the trace offers at its base delay.</figcaption></figure>", chart.svg());

    // Table.
    let _ = write!(
        html,
        "<table><caption>{}</caption><tr><th>control</th><th>runs</th>",
        esc(&ci_caption(runs.iter().map(|(_, rs)| rs.len())))
    );
    for (_, h, _, _) in METRICS {
        let _ = write!(html, "<th>{h}</th>");
    }
    html.push_str("</tr>");
    for (label, rs) in &runs {
        let _ = write!(html, "<tr><td>{}</td><td>{}</td>", esc(label), rs.len());
        for (f, _, scale, d) in METRICS {
            let _ = write!(html, "<td>{}</td>", fmt_stat(stat(rs, f), scale, d));
        }
        html.push_str("</tr>");
    }
    let _ = write!(html, "</table><p class=\"note\">{}</p>", esc(CI_LEGEND));

    // Bars.
    let cats: Vec<String> = runs.iter().map(|(l, _)| l.to_string()).collect();
    let series = |fields: &[(&str, &str, f64)]| -> Vec<BarSeries> {
        fields
            .iter()
            .map(|(f, name, scale)| {
                let vals = runs
                    .iter()
                    .map(|(_, rs)| {
                        stat(rs, f).map(|s| (s.mean * scale, s.min * scale, s.max * scale))
                    })
                    .collect();
                (name.to_string(), vals)
            })
            .collect()
    };
    let _ = write!(
        html,
        "<div class=\"row\">{}{}</div><div class=\"row\">{}</div>",
        bars(
            "Utilisation",
            "% of offered capacity",
            &cats,
            &series(&[("utilization", "utilisation", 100.0)])
        ),
        bars(
            "Queueing delay",
            "ms",
            &cats,
            &series(&[
                ("qdelay_avg_ms", "mean", 1.0),
                ("qdelay_p95_ms", "p95", 1.0)
            ])
        ),
        bars(
            "Loss and retransmissions",
            "% of packets sent",
            &cats,
            &series(&[
                ("loss_rate", "loss", 100.0),
                ("retrans_rate", "retransmissions", 100.0)
            ])
        ),
    );

    // Time series per control (the first seed).
    html.push_str("<h3>Time series (first seed)</h3>");
    for (label, rs) in &runs {
        let Some(rec) = rs
            .iter()
            .min_by_key(|r| r.num("seed").unwrap_or(0.0) as u64)
        else {
            continue;
        };
        match ts.read(rec.str("key"), rec.str("timeseries")) {
            Ok(rows) => html.push_str(&timeseries_chart(
                &format!("{trace}, queue {queue}: {label}"),
                &rows,
                view,
                false,
            )),
            Err(e) => {
                let _ = write!(
                    html,
                    "<p class=\"warn\">{}: no time series ({})</p>",
                    esc(label),
                    esc(&format!("{e:#}"))
                );
            }
        }
    }
}

/// Per-100 ms aggregate throughput of each flow, thinned to at most MAX_POINTS points.
fn per_flow(rows: &[TsRow]) -> BTreeMap<usize, Vec<(f64, f64, f64)>> {
    let mut flows: BTreeMap<usize, Vec<(f64, f64, f64)>> = BTreeMap::new();
    for r in rows {
        flows
            .entry(r.flow)
            .or_default()
            .push((r.t_s, r.throughput_mbps, r.rtt_ms));
    }
    flows
}

fn thin<T: Copy>(v: &[T]) -> Vec<T> {
    let step = v.len().div_ceil(MAX_POINTS).max(1);
    v.iter().step_by(step).copied().collect()
}

fn timeseries_chart(
    title: &str,
    rows: &[TsRow],
    view: Option<&TraceView>,
    per_flow_lines: bool,
) -> String {
    let mut c = Chart::new(
        title,
        Axis::new("time (s)"),
        Axis::new("throughput (Mbit/s)"),
    );
    c.y2 = Some(Axis::new("RTT (ms)"));
    let horizon = rows.iter().map(|r| r.t_s).fold(0.0, f64::max);
    if let Some(v) = view {
        let cap: Vec<_> = v
            .capacity
            .iter()
            .copied()
            .filter(|p| p.0 <= horizon)
            .collect();
        c.series
            .push(Series::new("capacity", "#999999", Style::Area, thin(&cap)));
        let base: Vec<_> = v
            .base_rtt
            .iter()
            .copied()
            .filter(|p| p.0 <= horizon)
            .collect();
        c.series.push(
            Series::new("base RTT", "#999999", Style::Line, thin(&base))
                .on_right()
                .dashed(),
        );
        c.markers = v
            .reconfig_s
            .iter()
            .filter(|&&x| x <= horizon)
            .map(|&x| Marker::new(x, RECONFIG_COLOR, RECONFIG_DASH))
            .collect();
        c.marker_kinds.push(MarkerKind {
            name: "reconfiguration".into(),
            color: RECONFIG_COLOR.into(),
            dash: RECONFIG_DASH.into(),
        });
    }
    let flows = per_flow(rows);
    if per_flow_lines {
        for (i, (f, pts)) in flows.iter().enumerate() {
            let thr: Vec<_> = pts.iter().map(|p| (p.0, p.1)).collect();
            c.series.push(Series::new(
                format!("flow {f}"),
                color(i),
                Style::Line,
                thin(&thr),
            ));
        }
    } else {
        let mut total: BTreeMap<u64, (f64, f64, u32)> = BTreeMap::new();
        for r in rows {
            let e = total.entry((r.t_s * 1000.0).round() as u64).or_default();
            e.0 += r.throughput_mbps;
            if r.rtt_ms > 0.0 {
                e.1 += r.rtt_ms;
                e.2 += 1;
            }
        }
        let thr: Vec<_> = total
            .iter()
            .map(|(t, v)| (*t as f64 / 1000.0, v.0))
            .collect();
        let rtt: Vec<_> = total
            .iter()
            .filter(|(_, v)| v.2 > 0)
            .map(|(t, v)| (*t as f64 / 1000.0, v.1 / v.2 as f64))
            .collect();
        c.series
            .push(Series::new("throughput", color(0), Style::Line, thin(&thr)));
        c.series
            .push(Series::new("RTT", color(1), Style::Line, thin(&rtt)).on_right());
    }
    format!("<figure>{}</figure>", c.svg())
}

/// Jain's index over time of the flows active in each bin (a flow counts from its first bin
/// with data to its last).
fn jain_over_time(rows: &[TsRow]) -> Vec<(f64, f64)> {
    let flows = per_flow(rows);
    let spans: BTreeMap<usize, (f64, f64)> = flows
        .iter()
        .map(|(f, pts)| {
            let active: Vec<f64> = pts.iter().filter(|p| p.1 > 0.0).map(|p| p.0).collect();
            (
                *f,
                (
                    active.first().copied().unwrap_or(f64::MAX),
                    active.last().copied().unwrap_or(0.0),
                ),
            )
        })
        .collect();
    let mut bins: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in rows {
        let (a, b) = spans[&r.flow];
        if r.t_s >= a && r.t_s <= b {
            bins.entry((r.t_s * 1000.0).round() as u64)
                .or_default()
                .push(r.throughput_mbps);
        }
    }
    bins.into_iter()
        .filter(|(_, xs)| xs.len() > 1)
        .map(|(t, xs)| (t as f64 / 1000.0, jain(&xs)))
        .collect()
}

fn multi_flow_section(
    html: &mut String,
    ts: &Store,
    cells: &Cells,
    at: At,
    view: Option<&TraceView>,
) {
    let At { trace, queue, .. } = at;
    let multi: Vec<_> = cells
        .iter()
        .filter(|(k, _)| at.holds(k) && k.3 != "single")
        .collect();
    if multi.is_empty() {
        return;
    }
    let _ = write!(
        html,
        "<h3>Several flows</h3><table><caption>{}</caption><tr><th>scenario</th>",
        esc(&ci_caption(multi.iter().map(|(_, runs)| runs.len())))
    );
    html.push_str("<th>controls</th><th>runs</th><th>total Mbit/s</th><th>per-flow Mbit/s</th><th>Jain</th><th>RTT p95 ms</th></tr>");
    for ((_, _, _, scenario, label), runs) in &multi {
        // Flow i of every run (a scenario's flows are in the same order in each run).
        let per_flow: Vec<String> = runs
            .first()
            .map(|r| {
                r.flows()
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        format!(
                            "{} {}",
                            f.get("cc").and_then(|v| v.as_str()).unwrap_or("?"),
                            fmt_stat(flow_stat(runs, i, "throughput_mbps"), 1.0, 1)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(scenario),
            esc(label),
            runs.len(),
            fmt_stat(stat(runs, "throughput_mbps"), 1.0, 1),
            esc(&per_flow.join(", ")),
            fmt_stat(stat(runs, "jain"), 1.0, 3),
            fmt_stat(stat(runs, "rtt_p95_ms"), 1.0, 1)
        );
    }
    let _ = write!(
        html,
        "</table><p class=\"note\">Per-flow throughput is each flow's over the runs. {}</p>",
        esc(CI_LEGEND)
    );
    for ((_, _, _, scenario, label), runs) in &multi {
        let Some(rec) = runs
            .iter()
            .min_by_key(|r| r.num("seed").unwrap_or(0.0) as u64)
        else {
            continue;
        };
        let Ok(rows) = ts.read(rec.str("key"), rec.str("timeseries")) else {
            continue;
        };
        html.push_str(&timeseries_chart(
            &format!("{trace}, queue {queue}: {scenario}, {label} — per-flow throughput"),
            &rows,
            view,
            true,
        ));
        let j = jain_over_time(&rows);
        if !j.is_empty() {
            let mut c = Chart::new(
                format!("{trace}, queue {queue}: {scenario}, {label} — Jain's index over time"),
                Axis::new("time (s)"),
                Axis::new("Jain's index").range(0.0, 1.0),
            );
            c.height = 220;
            c.series
                .push(Series::new("Jain's index", color(2), Style::Line, thin(&j)));
            let _ = write!(html, "<figure>{}</figure>", c.svg());
        }
    }
}

fn engine_comparison(cells: &Cells) -> String {
    let mut rows = String::new();
    for ((engine, trace, queue, scenario, label), sim_runs) in cells {
        if engine != "sim" || scenario != "single" {
            continue;
        }
        let Some(emu_runs) = cells.get(&(
            "emu".to_string(),
            trace.clone(),
            queue.clone(),
            scenario.clone(),
            label.clone(),
        )) else {
            continue;
        };
        let ratio = |f: &str| match (stat(sim_runs, f), stat(emu_runs, f)) {
            (Some(s), Some(e)) if e.mean > 0.0 => {
                fmt_ratio(s.mean / e.mean, ratio_interval(&s, &e))
            }
            _ => "–".into(),
        };
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td></tr>",
            esc(trace),
            esc(&queue_label(sim_runs)),
            esc(label),
            sim_runs.len(),
            emu_runs.len(),
            ratio("throughput_mbps"),
            ratio("rtt_p95_ms")
        );
    }
    if rows.is_empty() {
        return String::new();
    }
    format!("<h2>Simulator against emulator</h2><p>Ratios of the two engines' means, with their 95 % interval in brackets when a side has two runs or more \
             (log scale, delta method, Welch's degrees of freedom; a side with one run counts as exact). <code>leocc bench fidelity</code> runs both engines on the same cells.</p>\
             <table><tr><th>trace</th><th>buffer</th><th>control</th><th>runs sim / emu</th><th>throughput sim/emu</th><th>p95 RTT sim/emu</th></tr>{rows}</table>")
}

const HEAD: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>leocc evaluation</title><style>\
body{font-family:Helvetica,Arial,sans-serif;max-width:1280px;margin:1.5em auto;padding:0 1em;color:#222}\
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}figure{margin:1em 0}\
figcaption{font-size:12px;color:#555}.row{display:flex;flex-wrap:wrap;gap:1em}.row svg{max-width:100%}\
.meta{color:#555}.warn{color:#a40}.note{font-size:12px;color:#555;margin-top:-.5em}\
caption{caption-side:top;text-align:left;font-size:12px;color:#555;padding:2px 0}td small{color:#555}td.cmp{white-space:nowrap}td.beyond .chg{font-weight:bold}td.within{color:#999}td.within small{color:#999}code{background:#f4f4f4;padding:1px 4px}\
</style></head><body>";

/// The README's results table (markdown) from a set of records: one row per engine, trace and
/// single-flow control, means over seeds with their 95 % confidence intervals, plus LeoCC's
/// changes against the paper's rivals, each with whether it is beyond the run-to-run noise.
pub fn markdown(records: &[Record]) -> String {
    let cells = by_cell(records);
    let mut s = String::from(
        "| engine | trace | buffer | control | throughput Mbit/s | utilisation % | RTT p95 ms | queueing delay mean / p95 ms | loss % | runs |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for ((engine, trace, _, scenario, label), runs) in &cells {
        if scenario != "single" {
            continue;
        }
        let m = |f: &str, k: f64, d: usize| fmt_stat(stat(runs, f), k, d);
        let _ = writeln!(
            s,
            "| {engine} | {trace} | {} | {} | {} | {} | {} | {} / {} | {} | {} |",
            queue_label(runs),
            if label == "leocc" {
                "**leocc**".to_string()
            } else {
                label.clone()
            },
            m("throughput_mbps", 1.0, 1),
            m("utilization", 100.0, 1),
            m("rtt_p95_ms", 1.0, 1),
            m("qdelay_avg_ms", 1.0, 1),
            m("qdelay_p95_ms", 1.0, 1),
            m("loss_rate", 100.0, 2),
            runs.len()
        );
    }
    let caption = ci_caption(
        cells
            .iter()
            .filter(|(k, _)| k.3 == "single")
            .map(|(_, runs)| runs.len()),
    );
    let _ = writeln!(s, "\nCells: {caption}. {CI_LEGEND} {NOISE_LEGEND}\n");
    for ((engine, trace, queue, scenario, label), runs) in &cells {
        if scenario != "single" || label != "leocc" {
            continue;
        }
        let rival = |cc: &str, f: &str| {
            cells
                .get(&(
                    engine.clone(),
                    trace.clone(),
                    queue.clone(),
                    scenario.clone(),
                    cc.to_string(),
                ))
                .and_then(|r| stat(r, f))
        };
        let (Some(thr), Some(p95)) = (stat(runs, "throughput_mbps"), stat(runs, "rtt_p95_ms"))
        else {
            continue;
        };
        let thr_vs: Vec<String> = THROUGHPUT_RIVALS
            .iter()
            .filter_map(|cc| {
                rival(cc, "throughput_mbps")
                    .map(|t| format!("{cc} {}", change_text(Some(thr), Some(t))))
            })
            .collect();
        let rtt_vs: Vec<String> = DELAY_RIVALS
            .iter()
            .filter_map(|cc| {
                rival(cc, "rtt_p95_ms").map(|t| format!("{cc} {}", change_text(Some(p95), Some(t))))
            })
            .collect();
        // Only the comparisons with a rival that ran (a QUIC eval has no BBR: no "p95 RTT vs .").
        let mut parts = Vec::new();
        if !thr_vs.is_empty() {
            parts.push(format!("LeoCC throughput vs {}", thr_vs.join(", ")));
        }
        if !rtt_vs.is_empty() {
            parts.push(format!("p95 RTT vs {}", rtt_vs.join(", ")));
        }
        if parts.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "- {engine}, {trace}, buffer {}: {}.",
            queue_label(runs),
            parts.join("; ")
        );
    }
    for ((engine, trace, _, _, _), runs, thr, thr_o, p95, p95_o) in detection_costs(&cells) {
        let _ = writeln!(
            s,
            "- {engine}, {trace}, buffer {}: LeoCC with the detector vs leocc-oracle (what detection errors cost): throughput {}, p95 RTT {}.",
            queue_label(runs),
            change_text(thr, thr_o),
            change_text(p95, p95_o)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quic_controls_get_different_colours() {
        assert_ne!(cc_color("quic:cubic"), cc_color("quic:leocc"));
        assert_eq!(cc_color("leocc"), color(0));
    }

    #[test]
    fn jain_over_time_counts_only_active_flows() {
        let mut rows = Vec::new();
        for i in 0..10 {
            let t = i as f64 * 0.1;
            rows.push(TsRow {
                t_s: t,
                flow: 0,
                throughput_mbps: 10.0,
                rtt_ms: 50.0,
            });
            // flow 1 joins at 0.5 s with a fifth of the rate
            rows.push(TsRow {
                t_s: t,
                flow: 1,
                throughput_mbps: if i >= 5 { 2.0 } else { 0.0 },
                rtt_ms: 50.0,
            });
        }
        let j = jain_over_time(&rows);
        assert_eq!(j.len(), 5);
        let expect = 144.0 / (2.0 * 104.0);
        assert!(j.iter().all(|(_, v)| (v - expect).abs() < 1e-9), "{j:?}");
    }

    #[test]
    fn timeseries_csv_errors_name_the_line() {
        let p = std::env::temp_dir().join(format!("leocc-ts-{}.csv", std::process::id()));
        std::fs::write(
            &p,
            "t_s,flow,throughput_mbps,rtt_ms\n0.1,0,5,40\n0.2,0,x,40\n",
        )
        .unwrap();
        let e = read_timeseries(&p).unwrap_err().to_string();
        assert!(e.contains(":3:"), "{e}");
        std::fs::write(&p, "time,flow\n").unwrap();
        assert!(read_timeseries(&p).unwrap_err().to_string().contains(":1:"));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn percent_change_reads_as_a_gain_or_a_shortfall() {
        let one = |v: f64| Stat::of(&[v]);
        assert_eq!(change_text(one(185.0), one(100.0)), "+85 % (single run)");
        assert_eq!(change_text(one(44.0), one(100.0)), "-56 % (single run)");
        assert_eq!(change_text(one(1.0), one(0.0)), "n/a");
        assert_eq!(change_text(one(1.0), None), "–");
        let cell = change_cell(Stat::of(&[60.0, 61.0, 62.0]), Stat::of(&[87.0, 88.0, 89.0]));
        assert!(
            cell.starts_with(
                "<td class=\"cmp beyond\"><span class=\"chg\">-31 %</span><br><small>[-3"
            ) && cell.ends_with("<br><small>beyond noise</small></td>"),
            "{cell}"
        );
        let cell = change_cell(Stat::of(&[52.0, 58.0, 63.0]), Stat::of(&[54.0, 60.0, 67.0]));
        assert!(
            cell.starts_with("<td class=\"cmp within\"><span class=\"chg\">-4 %")
                && cell.contains("within noise, n=3"),
            "{cell}"
        );
    }

    fn run(engine: &str, label: &str, seed: u64, thr: f64, p95: f64) -> Record {
        Record(serde_json::json!({
            "key": format!("{engine}|t|single|{label}|{seed}"),
            "engine": engine, "trace": "t", "scenario": "single", "label": label, "seed": seed,
            "queue": "150ms", "throughput_mbps": thr, "utilization": thr / 200.0,
            "rtt_p95_ms": p95, "qdelay_avg_ms": p95 / 5.0, "qdelay_p95_ms": p95 / 2.0,
            "loss_rate": 0.001,
        }))
    }

    /// Three simulator seeds of leocc, bbr, cubic and vivace (leocc's p95 RTT 31 % under bbr's
    /// beyond the noise, 2 % under vivace's within it) and one emulator run of leocc and bbr.
    fn fixed_records() -> Vec<Record> {
        let mut recs = Vec::new();
        for (seed, d) in [(1, -1.0), (2, 0.0), (3, 1.0)] {
            recs.push(run("sim", "leocc", seed, 180.0 + d, 61.0 + d));
            recs.push(run("sim", "bbr", seed, 184.0 + 3.0 * d, 88.0 + d));
            recs.push(run("sim", "cubic", seed, 20.0 + d, 35.0 + d));
            recs.push(run("sim", "vivace", seed, 100.0, 62.0 + 7.0 * d));
        }
        recs.push(run("emu", "leocc", 1, 186.0, 62.0));
        recs.push(run("emu", "bbr", 1, 185.5, 90.0));
        recs
    }

    /// Where leocc-oracle ran beside leocc, the report and the markdown say what detection
    /// errors cost, with the noise verdict; elsewhere they say nothing of it.
    #[test]
    fn the_report_states_what_detection_errors_cost() {
        let mut recs = fixed_records();
        assert!(detection_cost_table(&by_cell(&recs)).is_empty() && !markdown(&recs).contains("leocc-oracle"));
        for (seed, d) in [(1, -1.0), (2, 0.0), (3, 1.0)] {
            recs.push(run("sim", "leocc-oracle", seed, 180.0 + d, 55.0 + d));
        }
        let md = markdown(&recs);
        assert!(
            md.contains("- sim, t, buffer 150ms: LeoCC with the detector vs leocc-oracle (what detection errors cost): throughput +0 % (within noise, n=3), p95 RTT +11 % (beyond noise)."),
            "{md}"
        );
        let html = detection_cost_table(&by_cell(&recs));
        assert!(html.contains("What detection errors cost") && html.contains("<td>sim</td>") && !html.contains("<td>emu</td>"), "{html}");
    }

    #[test]
    fn markdown_gives_intervals_and_noise_verdicts() {
        let mut recs = fixed_records();
        recs.push(run("emu", "cubic", 1, 18.6, 35.0));
        let md = markdown(&recs);
        // [60, 61, 62]: 61 ± 4.303 / √3 = 61.0 ± 2.5.
        assert!(
            md.contains("| sim | t | 150ms | **leocc** | 180.0 ± 2.5 | 90.0 ± 1.2 | 61.0 ± 2.5 | 12.2 ± 0.5 / 30.5 ± 1.2 | 0.10 ± 0.00 | 3 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| emu | t | 150ms | **leocc** | 186.0 | 93.0 | 62.0 | 12.4 / 31.0 | 0.10 | 1 |"
            ),
            "a single run is its value alone, runs = 1: {md}"
        );
        assert!(md.contains(CI_LEGEND) && md.contains(NOISE_LEGEND), "{md}");
        assert!(
            md.contains(
                "- sim, t, buffer 150ms: LeoCC throughput vs cubic +800 % (beyond noise); \
                 p95 RTT vs bbr -31 % (beyond noise), vivace -2 % (within noise, n=3)."
            ),
            "{md}"
        );
        assert!(
            md.contains("- emu, t, buffer 150ms: LeoCC throughput vs cubic +900 % (single run); p95 RTT vs bbr -31 % (single run)."),
            "{md}"
        );
        let html_row = headline_table(&by_cell(&recs), &BTreeMap::new());
        assert!(html_row.contains("within noise, n=3"), "{html_row}");
        // Without a delay rival (a QUIC eval: leocc, cubic), no empty "p95 RTT vs ." clause.
        let quic: Vec<Record> = recs
            .iter()
            .filter(|r| r.str("engine") == "sim" && ["leocc", "cubic"].contains(&r.str("label")))
            .cloned()
            .collect();
        let md = markdown(&quic);
        assert!(
            md.contains(
                "- sim, t, buffer 150ms: LeoCC throughput vs cubic +800 % (beyond noise).\n"
            ),
            "{md}"
        );
    }

    /// The HTML report from fixed results: the intervals it prints, the runs in its captions,
    /// a change beyond the noise and one within it, and single runs claiming nothing.
    #[test]
    fn html_report_gives_intervals_captions_and_verdicts() {
        let recs = fixed_records();
        let dir = std::env::temp_dir().join(format!("leocc-report-ci-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let html = std::fs::read_to_string(write(&dir, &recs, "leocc eval").unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // The metric table of the simulator's section: [60, 61, 62] is 61.0 ± 2.5.
        assert!(
            html.contains("<table><caption>mean ± 95 % CI, n=3</caption><tr><th>control</th>"),
            "{html}"
        );
        assert!(
            html.contains("<td>180.0 ± 2.5</td>") && html.contains("<td>61.0 ± 2.5</td>"),
            "{html}"
        );
        // The emulator's single runs: values alone, a caption that claims nothing.
        assert!(html.contains("<caption>single runs, n=1: no interval, no difference is claimed beyond noise</caption>"), "{html}");
        assert!(html.contains("<td>186.0</td>"), "{html}");
        // The headline table: p95 RTT vs bbr beyond the noise, vs vivace within it, the
        // emulator's single run without a verdict; its caption says the runs differ.
        assert!(
            html.contains("<caption>Per trace: mean ± 95 % CI, n=1–3"),
            "{html}"
        );
        assert!(
            html.contains(
                "<td class=\"cmp beyond\"><span class=\"chg\">-31 %</span><br><small>[-3"
            ),
            "{html}"
        );
        assert!(
            html.contains("<br><small>beyond noise</small></td>"),
            "{html}"
        );
        assert!(
            html.contains("<td class=\"cmp within\"><span class=\"chg\">-2 %</span>"),
            "{html}"
        );
        assert!(html.contains("<small>within noise, n=3</small>"), "{html}");
        assert!(html.contains("<td class=\"cmp unknown\"><span class=\"chg\">-31 %</span><br><small>single run</small></td>"), "{html}");
    }
}
