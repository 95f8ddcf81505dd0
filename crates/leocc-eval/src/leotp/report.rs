//! The LEOTP evaluation's report: summary.md and its SVG plots, from the run records.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use leocc_base::metrics::mean;

use super::LeotpRecord;

/// Mean of a field over the runs `pred` picks (absent values skipped).
fn field(rows: &[LeotpRecord], pred: impl Fn(&LeotpRecord) -> bool, get: impl Fn(&LeotpRecord) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = rows.iter().filter(|r| pred(r)).filter_map(get).collect();
    mean(&v)
}

/// Writes summary.md and the SVG plots for the rows in `out`.
pub fn report(rows: &[LeotpRecord], out: &Path) -> Result<PathBuf> {
    use leocc_plot::{bars, color, Axis, Chart, Series, Style};
    let mut md = String::from("# LEOTP on the emulated ISL chain\n\n");
    let exp = |e: &'static str| move |r: &LeotpRecord| r.experiment == e;
    let labels = |e: &str| -> Vec<String> {
        let mut l: Vec<String> = Vec::new();
        for r in rows.iter().filter(|r| r.experiment == e) {
            let s = r.variant.clone();
            if !l.contains(&s) {
                l.push(s);
            }
        }
        l
    };
    for e in ["headline", "ablation"] {
        let ls = labels(e);
        if ls.is_empty() {
            continue;
        }
        md.push_str(&format!(
            "## {e}\n\n| variant | throughput Mbit/s | mean OWD ms | p95 OWD ms | in-order delay mean / p95 ms | retransmitted pkts % | their mean OWD ms | sender retransmits | bottleneck Mbit/s | runs |\n|---|---|---|---|---|---|---|---|---|---|\n"
        ));
        let mut thr = Vec::new();
        let mut owd = Vec::new();
        let mut inorder_means = Vec::new();
        for l in &ls {
            let is = |r: &LeotpRecord| {
                exp(if e == "headline" {
                    "headline"
                } else {
                    "ablation"
                })(r)
                    && r.variant == *l
            };
            let (t, o, p, x) = (
                field(rows, is, |r| r.thr_mbps),
                field(rows, is, |r| r.owd_mean_ms),
                field(rows, is, |r| r.owd_p95_ms),
                field(rows, is, |r| r.retransmits.map(|x| x as f64)),
            );
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
            let n = rows
                .iter()
                .filter(|r| is(r) && r.ok())
                .count();
            let share = field(rows, is, |r| r.retx_share).map(|v| v * 100.0);
            let inorder_mean = field(rows, is, |r| r.inorder_mean_ms);
            let inorder = format!(
                "{} / {}",
                f(inorder_mean),
                f(field(rows, is, |r| r.inorder_p95_ms))
            );
            md.push_str(&format!(
                "| {l} | {} | {} | {} | {inorder} | {} | {} | {} | {} | {n} |\n",
                f(t),
                f(o),
                f(p),
                f(share),
                f(field(rows, is, |r| r.retx_owd_mean_ms)),
                f(x),
                f(field(rows, is, |r| r.bottleneck_mbps))
            ));
            thr.push(t.map(|v| (v, v, v)));
            owd.push(o.map(|v| (v, v, v)));
            inorder_means.push(inorder_mean.map(|v| (v, v, v)));
        }
        md.push('\n');
        if e == "headline" {
            // Seed 003's Fig. 14: each run as a point, throughput against mean one-way delay
            // under the chain's fluctuating capacity (up and to the left is better).
            let mut c = Chart::new(
                format!("{e}: throughput against mean one-way delay, one point per run"),
                Axis::new("mean one-way delay (ms, ← better)"),
                Axis::new("throughput (Mbit/s)"),
            );
            c.height = 360;
            for (i, l) in ls.iter().enumerate() {
                let pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.experiment == e && r.variant == *l)
                    .filter_map(|r| Some((r.owd_mean_ms?, r.thr_mbps?)))
                    .collect();
                c.series
                    .push(Series::new(l.clone(), color(i), Style::Points, pts));
            }
            let svg = c.svg();
            leocc_base::out::write_atomic(&out.join(format!("{e}-scatter.svg")), svg.as_bytes())
                .map_err(|e| anyhow!("{e}"))?;
            md.push_str(&format!(
                "![{e}: throughput against mean one-way delay]({e}-scatter.svg)\n\n"
            ));
            let svg = retx_cdf(rows, e, &ls);
            leocc_base::out::write_atomic(&out.join(format!("{e}-retx-owd.svg")), svg.as_bytes())
                .map_err(|e| anyhow!("{e}"))?;
            md.push_str(&format!(
                "![{e}: one-way delay of retransmitted packets]({e}-retx-owd.svg)\n\n"
            ));
        }
        // Two charts: Mbit/s and ms on one axis would flatten one of them. The delay chart puts
        // the network's view (one-way delay) beside a stream reader's (in-order delay).
        let delays = vec![
            ("one-way (network)".to_string(), owd),
            ("in-order (application)".to_string(), inorder_means),
        ];
        for (name, title, unit, series) in [
            (
                "throughput",
                "throughput",
                "Mbit/s",
                vec![("throughput".to_string(), thr)],
            ),
            ("owd", "mean delay", "ms", delays),
        ] {
            let svg = bars(&format!("{e}: {title} ({unit})"), unit, &ls, &series);
            leocc_base::out::write_atomic(&out.join(format!("{e}-{name}.svg")), svg.as_bytes())
                .map_err(|e| anyhow!("{e}"))?;
            md.push_str(&format!("![{e} {title}]({e}-{name}.svg)\n"));
        }
        md.push('\n');
    }
    let loss_of = |r: &LeotpRecord| r.loss;
    let hops_of = |r: &LeotpRecord| r.hops as f64;
    for (e, xkey, xlabel, x_of) in [
        ("loss", "loss", "random loss per hop", &loss_of as &dyn Fn(&LeotpRecord) -> f64),
        ("hops", "hops", "hops", &hops_of),
    ] {
        let ls = labels(e);
        if ls.is_empty() {
            continue;
        }
        md.push_str(&format!("## {e}\n\n| variant | {xlabel} | throughput Mbit/s | mean OWD ms | sender traffic % of delivered | runs |\n|---|---|---|---|---|---|\n"));
        let mut thr_series = Vec::new();
        let mut owd_series = Vec::new();
        let mut cost_series = Vec::new();
        for (i, l) in ls.iter().enumerate() {
            let mut pts = Vec::new();
            let mut opts = Vec::new();
            let mut cpts = Vec::new();
            let mut xs: Vec<f64> = rows
                .iter()
                .filter(|r| r.experiment == e && r.variant == *l)
                .map(x_of)
                .collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            for x0 in xs {
                // Mean over the seeds of this x.
                let at = |r: &LeotpRecord| {
                    r.experiment == e
                        && r.variant == *l
                        && x_of(r) == x0
                };
                let x = if xkey == "loss" { x0 * 100.0 } else { x0 };
                let (t, o) = (field(rows, at, |r| r.thr_mbps), field(rows, at, |r| r.owd_mean_ms));
                if let Some(t) = t {
                    pts.push((x, t));
                }
                if let Some(o) = o {
                    opts.push((x, o));
                }
                let cost = field(rows, at, |r| r.sender_traffic_ratio).map(|r| r * 100.0);
                if let Some(c) = cost {
                    cpts.push((x, c));
                }
                let n = rows.iter().filter(|r| at(r)).count();
                let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
                md.push_str(&format!(
                    "| {l} | {x} | {} | {} | {} | {n} |\n",
                    f(t),
                    f(o),
                    f(cost)
                ));
            }
            thr_series.push(Series::new(l.clone(), color(i), Style::Line, pts));
            owd_series.push(Series::new(l.clone(), color(i), Style::Line, opts));
            cost_series.push(Series::new(l.clone(), color(i), Style::Line, cpts));
        }
        md.push('\n');
        let x = if xkey == "loss" {
            "random loss per hop, %"
        } else {
            "hops"
        };
        let mut c1 = Chart::new(
            format!("{e}: throughput"),
            Axis::new(x),
            Axis::new("Mbit/s"),
        );
        c1.series = thr_series;
        let mut c2 = Chart::new(
            format!("{e}: mean one-way delay"),
            Axis::new(x),
            Axis::new("ms"),
        );
        c2.series = owd_series;
        let mut charts = vec![c1, c2];
        if e == "loss" {
            // Seed 003's Fig. 11: what the sender pays for the losses.
            let mut c3 = Chart::new("loss: traffic the server sent, % of the bytes delivered (100 = nothing sent twice)", Axis::new(x), Axis::new("%"));
            c3.series = cost_series;
            charts.push(c3);
        }
        let svg = leocc_plot::stack(&format!("LEOTP vs kernel TCP: {e}"), &charts);
        leocc_base::out::write_atomic(&out.join(format!("{e}.svg")), svg.as_bytes())
            .map_err(|e| anyhow!("{e}"))?;
        md.push_str(&format!("![{e}]({e}.svg)\n\n"));
    }
    for (e, what) in [
        ("fairness", "Two flows of each protocol at once over the same chain (seed 003's Fig. 15, equal RTTs)"),
        (
            "fairness-rtt",
            "Two flows of each protocol at once, the second received at node 3, half-way along the chain (seed 003's Fig. 16, unequal RTTs; \
             the hops only the far flow crosses have twice the capacity, so that the flows compete on the shared half; \
             flows listed far / near; the delay is the far flow's, the only one both end captures see)",
        ),
    ] {
        let ls = labels(e);
        if ls.is_empty() {
            continue;
        }
        md.push_str(&format!(
            "## {e}\n\n{what}: each flow's throughput and Jain's index over the two.\n\n| variant | flow throughputs Mbit/s | total Mbit/s | Jain | mean OWD ms | runs |\n|---|---|---|---|---|---|\n"
        ));
        let mut jains = Vec::new();
        for l in &ls {
            let is = |r: &LeotpRecord| r.experiment == e && r.variant == *l;
            let flows: Vec<String> = rows
                .iter()
                .filter(|r| is(r))
                .filter_map(|r| r.flow_mbps.as_ref().map(|a| a.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(" / ")))
                .collect();
            let f = |v: Option<f64>, d: usize| v.map_or("-".into(), |v| format!("{v:.d$}"));
            let n = rows.iter().filter(|r| is(r) && r.ok()).count();
            let j = field(rows, is, |r| r.jain);
            md.push_str(&format!("| {l} | {} | {} | {} | {} | {n} |\n", flows.join("; "), f(field(rows, is, |r| r.thr_mbps), 1), f(j, 3), f(field(rows, is, |r| r.owd_mean_ms), 1)));
            jains.push(j.map(|v| (v, v, v)));
        }
        let svg = bars(&format!("{e}: Jain's index of two flows (1 = equal shares)"), "Jain's index", &ls, &[("Jain".to_string(), jains)]);
        leocc_base::out::write_atomic(&out.join(format!("{e}.svg")), svg.as_bytes()).map_err(|e| anyhow!("{e}"))?;
        md.push_str(&format!("\n![{e}]({e}.svg)\n\n"));
    }
    let p = out.join("summary.md");
    leocc_base::out::write_atomic(&p, md.as_bytes()).map_err(|e| anyhow!("{e}"))?;
    Ok(p)
}

/// Seed 003's Fig. 10: the CDF of the retransmitted packets' one-way delay per protocol,
/// from each run's quantiles (every run of a protocol weighs the same).
fn retx_cdf(rows: &[LeotpRecord], experiment: &str, labels: &[String]) -> String {
    use leocc_plot::{color, Axis, Chart, Series, Style};
    let mut c = Chart::new(
        format!(
            "{experiment}: one-way delay of retransmitted packets (CDF, from the path captures)"
        ),
        Axis::new("one-way delay (ms, log scale)").log(),
        Axis::new("fraction of retransmitted packets"),
    );
    c.height = 340;
    for (i, l) in labels.iter().enumerate() {
        let mut v: Vec<f64> = rows
            .iter()
            .filter(|r| r.experiment == experiment && r.variant == *l)
            .filter_map(|r| r.retx_owd_quantiles_ms.as_ref())
            .flatten()
            .copied()
            .collect();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let pts = v
            .iter()
            .enumerate()
            .map(|(k, &x)| (x, (k + 1) as f64 / n))
            .collect();
        c.series
            .push(Series::new(l.clone(), color(i), Style::Line, pts));
    }
    c.svg()
}
