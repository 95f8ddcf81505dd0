//! The report across many traces: what a dataset-scale eval (`--traces-from`, thousands of
//! traces) shows instead of one section per trace.
//!
//! Per engine and buffer, each control's single-flow result is reduced to one value per trace
//! (the mean over seeds); the page then shows how those values spread across the traces:
//! median and the 10th–90th percentile range in a table, and distribution functions of
//! utilisation and p95 RTT. LeoCC's comparison with each rival is made per trace first (the
//! paper's ratios), then summarised the same way, with the share of traces where LeoCC is ahead
//! and the shares where it is ahead or behind beyond the run-to-run noise (each trace's change
//! judged by [`crate::stats::change`], as the per-trace rows are).

use crate::report::{cc_color, DELAY_RIVALS, THROUGHPUT_RIVALS};
use crate::results::{stat, CellKey, Record, Stat};
use crate::stats::{self, Change, Noise};
use leocc_plot::{esc, Axis, Chart, Series, Style};
use leocc_base::metrics::quantile_nearest_rank;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Above this many traces in one engine and buffer the report shows the distributions across
/// them and draws the per-trace sections of the first [`DETAIL_TRACES`] only: past a dozen,
/// per-trace sections stop being readable (100 traces made a 5.5 MB page; the LeoCC dataset's
/// 4,800 would make half a gigabyte).
pub const DETAIL_TRACES: usize = 12;

/// One engine and buffer of an eval: every control's per-trace values.
pub struct Group<'a> {
    /// Engine ("sim", "emu").
    pub engine: &'a str,
    /// Buffer as given (`500`, `150ms`).
    pub queue: &'a str,
    /// Buffer label of its first run.
    pub queue_label: String,
    /// control -> trace -> the values of [`FIELDS`] over its seeds (mean, spread, runs).
    per_trace: BTreeMap<&'a str, BTreeMap<&'a str, [Stat; 5]>>,
}

const THR: usize = 0;
const UTIL: usize = 1;
const P95: usize = 2;
const QD95: usize = 3;
const QDAVG: usize = 4;
const FIELDS: [&str; 5] = [
    "throughput_mbps",
    "utilization",
    "rtt_p95_ms",
    "qdelay_p95_ms",
    "qdelay_avg_ms",
];

impl<'a> Group<'a> {
    /// The single-flow cells of `engine` and `queue`.
    pub fn new(
        cells: &'a BTreeMap<CellKey, Vec<&'a Record>>,
        engine: &'a str,
        queue: &'a str,
    ) -> Group<'a> {
        let mut per_trace: BTreeMap<&str, BTreeMap<&str, [Stat; 5]>> = BTreeMap::new();
        let mut queue_label = String::new();
        for ((e, trace, q, scenario, label), runs) in cells {
            if e != engine || q != queue || scenario != "single" || runs.is_empty() {
                continue;
            }
            per_trace.entry(label.as_str()).or_default().insert(
                trace.as_str(),
                FIELDS.map(|f| stat(runs, f).unwrap_or_default()),
            );
            if queue_label.is_empty() {
                // "500 pkts (135 ms)": the time part is resolved per trace, so it is dropped.
                let l = runs[0].queue_label();
                queue_label = l.split(" (").next().unwrap_or(&l).to_string();
            }
        }
        Group {
            engine,
            queue,
            queue_label,
            per_trace,
        }
    }

    /// Number of traces with any single-flow run.
    pub fn traces(&self) -> usize {
        self.per_trace
            .values()
            .flat_map(|t| t.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }

    /// LeoCC's change against `rival` in `field`, one per trace both ran.
    fn changes(&self, rival: &str, field: usize) -> Vec<Change> {
        let (Some(ours), Some(theirs)) = (self.per_trace.get("leocc"), self.per_trace.get(rival))
        else {
            return Vec::new();
        };
        ours.iter()
            .filter_map(|(t, v)| {
                theirs
                    .get(t)
                    .filter(|w| w[field].n > 0 && v[field].n > 0)
                    .and_then(|w| stats::change(&v[field], &w[field]))
            })
            .collect()
    }

    /// How many runs each trace's value is the mean of: "n=3 runs per trace", "n=1–3 runs per
    /// trace", or "n=1 per trace: single runs, no interval".
    fn runs_caption(&self) -> String {
        let ns: Vec<usize> = self
            .per_trace
            .values()
            .flat_map(|t| t.values().map(|v| v[THR].n))
            .collect();
        let (lo, hi) = (
            ns.iter().copied().min().unwrap_or(0),
            ns.iter().copied().max().unwrap_or(0),
        );
        if hi <= 1 {
            "n=1 per trace: single runs, no interval".into()
        } else if lo == hi {
            format!("n={hi} runs per trace")
        } else {
            format!("n={lo}–{hi} runs per trace")
        }
    }

    /// The headline row: LeoCC against each rival, median change across traces and the share
    /// of traces where LeoCC is ahead (more throughput, lower p95 RTT).
    pub fn headline_row(&self) -> String {
        let leocc = self.per_trace.get("leocc");
        let vals = |f: usize| {
            leocc
                .map(|m| m.values().map(|v| v[f].mean).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let mut row = format!(
            "<tr><td>{}</td><td>all {} traces</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(self.engine),
            self.traces(),
            esc(&self.queue_label),
            median_range(&vals(UTIL), 100.0),
            median_range(&vals(QDAVG), 1.0),
            median_range(&vals(QD95), 1.0),
        );
        for cc in THROUGHPUT_RIVALS {
            row += &format!("<td>{}</td>", change_cell(&self.changes(cc, THR), true));
        }
        for cc in DELAY_RIVALS {
            row += &format!("<td>{}</td>", change_cell(&self.changes(cc, P95), false));
        }
        row + "</tr>"
    }

    /// The section: a table per control and the distributions of utilisation and p95 RTT.
    pub fn section(&self) -> String {
        let mut html = format!(
            "<h2>{} — buffer {} — across {} traces</h2><p>One value per trace and control (the mean over its seeds, {}); \
             median and, in brackets, the 10th and 90th percentiles across traces: how the traces differ, not a confidence interval \
             (each trace's own interval is in its section and in <code>leocc report --markdown</code>). Every run is in results.jsonl \
             (<code>leocc.read_results</code> in Python); the per-trace sections below are the first {DETAIL_TRACES} traces by name.</p>",
            esc(self.engine),
            esc(&self.queue_label),
            self.traces(),
            esc(&self.runs_caption())
        );
        html += "<table><caption>median [p10, p90] across traces of each trace's mean</caption><tr><th>control</th><th>traces</th><th>throughput Mbit/s</th><th>utilisation %</th><th>RTT p95 ms</th><th>qdelay p95 ms</th></tr>";
        for (cc, traces) in &self.per_trace {
            let col = |f: usize| traces.values().map(|v| v[f].mean).collect::<Vec<_>>();
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(cc),
                traces.len(),
                median_range(&col(THR), 1.0),
                median_range(&col(UTIL), 100.0),
                median_range(&col(P95), 1.0),
                median_range(&col(QD95), 1.0)
            );
        }
        html += "</table><div class=\"row\">";
        html += &self.cdf(
            "utilisation",
            "utilisation across traces (%, better →)",
            UTIL,
            100.0,
        );
        html += &self.cdf("p95 RTT", "p95 RTT across traces (ms, ← better)", P95, 1.0);
        html + "</div>"
    }

    /// The distribution function of one value across traces, a line per control.
    fn cdf(&self, what: &str, x_label: &str, field: usize, scale: f64) -> String {
        let mut c = Chart::new(
            format!("{}, buffer {}: {what}", self.engine, self.queue_label),
            Axis::new(x_label),
            Axis::new("share of traces").range(0.0, 1.0),
        );
        c.height = 320;
        for (cc, traces) in &self.per_trace {
            let mut v: Vec<f64> = traces
                .values()
                .map(|x| x[field].mean * scale)
                .filter(|x| x.is_finite())
                .collect();
            v.sort_by(f64::total_cmp);
            let n = v.len() as f64;
            let pts: Vec<(f64, f64)> = v
                .iter()
                .enumerate()
                .map(|(i, &x)| (x, (i + 1) as f64 / n))
                .collect();
            c.series
                .push(Series::new(*cc, cc_color(cc), Style::Step, pts));
        }
        format!("<figure>{}</figure>", c.svg())
    }
}

/// "median [p10, p90]" of `v` scaled, or "–" when empty.
fn median_range(v: &[f64], scale: f64) -> String {
    let mut v: Vec<f64> = v
        .iter()
        .map(|x| x * scale)
        .filter(|x| x.is_finite())
        .collect();
    if v.is_empty() {
        return "–".into();
    }
    v.sort_by(f64::total_cmp);
    let q = |q| quantile_nearest_rank(&v, q).unwrap_or(f64::NAN);
    format!("{:.1} [{:.1}, {:.1}]", q(0.5), q(0.1), q(0.9))
}

/// LeoCC's per-trace changes against a rival: the median change, the share of traces where
/// LeoCC is ahead (`higher_is_better` says which direction that is), and the shares where it is
/// ahead and behind beyond the noise, among the traces with two runs or more a side ("n=1 per
/// trace, no noise verdict" when there are none).
fn change_cell(changes: &[Change], higher_is_better: bool) -> String {
    if changes.is_empty() {
        return "–".into();
    }
    let mut v: Vec<f64> = changes.iter().map(|c| (c.ratio - 1.0) * 100.0).collect();
    v.sort_by(f64::total_cmp);
    let is_ahead = |c: &Change| {
        if higher_is_better {
            c.ratio > 1.0
        } else {
            c.ratio < 1.0
        }
    };
    let share = |k: usize, of: usize| k as f64 * 100.0 / of.max(1) as f64;
    let ahead = changes.iter().filter(|c| is_ahead(c)).count();
    let judged: Vec<&Change> = changes
        .iter()
        .filter(|c| c.noise != Noise::Unknown)
        .collect();
    let verdict = if judged.is_empty() {
        "n=1 per trace, no noise verdict".to_string()
    } else {
        let beyond_ahead = judged
            .iter()
            .filter(|c| c.noise == Noise::Beyond && is_ahead(c))
            .count();
        let beyond_behind = judged
            .iter()
            .filter(|c| c.noise == Noise::Beyond && !is_ahead(c))
            .count();
        let of = if judged.len() == changes.len() {
            String::new()
        } else {
            format!(" of {} traces with 2+ runs", judged.len())
        };
        format!(
            "beyond noise: ahead {:.0} %, behind {:.0} %{of}",
            share(beyond_ahead, judged.len()),
            share(beyond_behind, judged.len())
        )
    };
    format!(
        "{:+.0} % (ahead on {:.0} %; {verdict})",
        quantile_nearest_rank(&v, 0.5).unwrap_or(f64::NAN),
        share(ahead, changes.len())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::by_cell;
    use serde_json::json;

    fn run(trace: &str, label: &str, seed: u64, thr: f64, p95: f64) -> Record {
        Record(
            json!({"engine": "sim", "trace": trace, "queue": "500", "scenario": "single", "label": label, "seed": seed,
            "throughput_mbps": thr, "utilization": thr / 100.0, "rtt_p95_ms": p95, "qdelay_p95_ms": p95 - 40.0,
            "qdelay_avg_ms": 5.0}),
        )
    }

    #[test]
    fn values_per_trace_then_across_traces() {
        // LeoCC ahead of BBR on delay on 3 of 4 traces, behind on throughput against cubic on none.
        let mut recs = Vec::new();
        for (i, t) in ["a", "b", "c", "d"].iter().enumerate() {
            let i = i as f64;
            recs.push(run(t, "leocc", 1, 90.0, 50.0 + i));
            recs.push(run(t, "leocc", 2, 70.0, 50.0 + i)); // mean over seeds: 80
            recs.push(run(t, "bbr", 1, 85.0, if i < 3.0 { 60.0 } else { 40.0 }));
            recs.push(run(t, "cubic", 1, 40.0, 45.0));
        }
        let cells = by_cell(&recs);
        let g = Group::new(&cells, "sim", "500");
        assert_eq!(g.traces(), 4);
        let ratios: Vec<f64> = g.changes("cubic", THR).iter().map(|c| c.ratio).collect();
        assert_eq!(ratios, vec![2.0; 4]);
        let row = g.headline_row();
        assert!(row.contains("all 4 traces"), "{row}");
        // One run of each rival per trace: no noise verdict.
        assert!(
            row.contains("+100 % (ahead on 100 %; n=1 per trace, no noise verdict)"),
            "{row}"
        );
        assert!(row.contains("(ahead on 75 %;"), "{row}");
        let page = g.section();
        assert!(
            page.contains("80.0 [80.0, 80.0]"),
            "LeoCC's throughput is the mean over seeds: {page}"
        );
        assert_eq!(page.matches("<svg").count(), 2);
        assert!(page.contains("n=1–2 runs per trace"), "{page}");
    }

    #[test]
    fn across_traces_counts_the_changes_beyond_noise() {
        // Three runs a side on every trace. Throughput against cubic: +100 % with a small
        // spread on a, b, c (beyond noise), +2 % with a large one on d (within). p95 RTT against
        // bbr: -20 % beyond noise on a; on b, c, d no difference.
        let mut recs = Vec::new();
        for (i, t) in ["a", "b", "c", "d"].iter().enumerate() {
            for (seed, d) in [(1, -1.0), (2, 0.0), (3, 1.0)] {
                let (thr, spread) = if i < 3 { (80.0, 1.0) } else { (40.8, 15.0) };
                recs.push(run(t, "leocc", seed, thr + spread * d, 48.0 + d));
                recs.push(run(t, "cubic", seed, 40.0 + d, 45.0));
                recs.push(run(
                    t,
                    "bbr",
                    seed,
                    85.0,
                    if i == 0 { 60.0 } else { 48.0 } + d,
                ));
            }
        }
        let cells = by_cell(&recs);
        let g = Group::new(&cells, "sim", "500");
        let row = g.headline_row();
        assert!(
            row.contains("+100 % (ahead on 100 %; beyond noise: ahead 75 %, behind 0 %)"),
            "{row}"
        );
        assert!(
            row.contains("+0 % (ahead on 25 %; beyond noise: ahead 25 %, behind 0 %)"),
            "{row}"
        );
        assert!(g.section().contains("n=3 runs per trace"));
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median_range(&v, 1.0), "5.0 [1.0, 9.0]");
        assert_eq!(median_range(&[], 1.0), "–");
        assert_eq!(change_cell(&[], true), "–");
    }
}
