//! Triggered against random start times (seed 004): `leocc eval --start-when 'EXPR'` finds the
//! moments of each trace's loop where a trigger expression holds (see `crate::when` for
//! what an expression sees over a trace), draws as many random moments, writes the trace
//! started at each (`leocc_trace::rotate`) to `DIR/starts/`, and the matrix runs over those.
//! The comparison is the median throughput and p95 RTT of the triggered runs against the
//! random ones, per control and buffer.

use crate::results::Record;
use anyhow::{Context, Result};
use leocc_probe::trigger::Expr;
use crate::when;
use leocc_base::metrics::median;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Marks a triggered start in a trace's file name, `starlink-down-60s~when-12340ms.trace`.
pub const WHEN: &str = "~when-";
/// Marks a random start.
pub const RANDOM: &str = "~random-";

/// Writes the traces started at the triggered and at random moments; returns their paths.
/// `run_s` (the runs' length) keeps triggered starts that far apart; `n` of each kind.
pub fn prepare(
    traces: &[PathBuf],
    expr_src: &str,
    n: usize,
    run_s: Option<f64>,
    seed: u64,
    out_dir: &Path,
) -> Result<Vec<PathBuf>> {
    let expr: Expr = expr_src
        .parse()
        .map_err(|e| anyhow::anyhow!("--start-when '{expr_src}': {e}"))?;
    let dir = out_dir.join("starts");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut out = Vec::new();
    for (i, path) in traces.iter().enumerate() {
        let trace = leocc_trace::Trace::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let stem = crate::matrix::trace_name(path);
        let d = trace.duration_us();
        // A run longer than what is left of the loop wraps round to its start (every engine
        // loops a trace), so any moment of the loop can start a run.
        let gap = run_s.map_or(d, |s| (s * 1e6) as u64).min(d);
        let latest = d.saturating_sub(when::STEP_US);
        let triggered = when::start_times(&trace, &mut expr.clone(), n, gap, latest);
        if triggered.is_empty() {
            eprintln!(
                "eval: --start-when '{expr_src}' never holds on {}; only random starts there",
                path.display()
            );
        }
        let random = when::random_starts(n, latest, seed.wrapping_add(i as u64));
        for (kind, times) in [(WHEN, &triggered), (RANDOM, &random)] {
            for &t in times.iter() {
                let p = dir.join(format!("{stem}{kind}{}ms.trace", t / 1000));
                leocc_trace::rotate::rotate(&trace, t)
                    .save(&p)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                out.push(p);
            }
        }
        eprintln!(
            "eval: {}: triggered starts at {} s; random at {} s",
            stem,
            fmt_times(&triggered),
            fmt_times(&random)
        );
    }
    Ok(out)
}

fn fmt_times(t: &[u64]) -> String {
    if t.is_empty() {
        return "(none)".into();
    }
    t.iter()
        .map(|x| format!("{:.2}", *x as f64 / 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One control and buffer: the triggered and the random runs' medians.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The trace the starts were taken from.
    pub trace: String,
    pub label: String,
    pub queue: String,
    pub triggered_runs: usize,
    pub random_runs: usize,
    pub triggered_thr_mbps: f64,
    pub random_thr_mbps: f64,
    pub triggered_rtt_p95_ms: f64,
    pub random_rtt_p95_ms: f64,
}

/// Compares the single-flow runs over triggered and random starts in `records`.
pub fn compare(records: &[Record]) -> Vec<Comparison> {
    type Runs<'a> = (Vec<&'a Record>, Vec<&'a Record>);
    let mut cells: BTreeMap<(String, String, String), Runs> = BTreeMap::new();
    for r in records.iter().filter(|r| r.str("scenario") == "single") {
        let trace = r.str("trace");
        let source = trace.split('~').next().unwrap_or(trace).to_string();
        let cell = cells
            .entry((source, r.str("label").to_string(), r.queue_label()))
            .or_default();
        if trace.contains(WHEN) {
            cell.0.push(r);
        } else if trace.contains(RANDOM) {
            cell.1.push(r);
        }
    }
    let med = |rs: &[&Record], f: &str| median(&rs.iter().filter_map(|r| r.num(f)).collect::<Vec<_>>());
    cells
        .into_iter()
        .filter(|(_, (t, r))| !t.is_empty() || !r.is_empty())
        .map(|((trace, label, queue), (t, r))| Comparison {
            trace,
            label,
            queue,
            triggered_runs: t.len(),
            random_runs: r.len(),
            triggered_thr_mbps: med(&t, "throughput_mbps"),
            random_thr_mbps: med(&r, "throughput_mbps"),
            triggered_rtt_p95_ms: med(&t, "rtt_p95_ms"),
            random_rtt_p95_ms: med(&r, "rtt_p95_ms"),
        })
        .collect()
}

/// The comparison as a terminal table.
pub fn table(rows: &[Comparison]) -> String {
    let mut s = format!(
        "{:<22} {:<12} {:<22} {:>6} {:>6} {:>12} {:>12} {:>8} {:>11} {:>11}\n",
        "trace",
        "cc",
        "buffer",
        "n trig",
        "n rand",
        "thr trig",
        "thr rand",
        "diff %",
        "p95 trig",
        "p95 rand"
    );
    for c in rows {
        let _ = writeln!(
            s,
            "{:<22} {:<12} {:<22} {:>6} {:>6} {:>12.1} {:>12.1} {:>+8.1} {:>11.1} {:>11.1}",
            c.trace,
            c.label,
            c.queue,
            c.triggered_runs,
            c.random_runs,
            c.triggered_thr_mbps,
            c.random_thr_mbps,
            (c.triggered_thr_mbps / c.random_thr_mbps - 1.0) * 100.0,
            c.triggered_rtt_p95_ms,
            c.random_rtt_p95_ms
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepares_rotated_traces_and_compares_medians() {
        let trace = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../traces/starlink-down-60s.trace"
        ));
        let dir = std::env::temp_dir().join(format!("leocc-starts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let paths = prepare(
            std::slice::from_ref(&trace),
            "event == 1",
            2,
            Some(10.0),
            1,
            &dir,
        )
        .unwrap();
        let when: Vec<_> = paths
            .iter()
            .filter(|p| p.to_string_lossy().contains(WHEN))
            .collect();
        assert_eq!(when.len(), 2);
        assert_eq!(paths.len(), 4);
        let t = leocc_trace::Trace::load(when[0]).unwrap();
        // A triggered trace starts at a reconfiguration (just after it: the event lies at the
        // very end of the rotated loop, or at 0).
        assert!(
            t.reconfigurations
                .iter()
                .any(|&r| r == 0 || r > t.duration_us() - 200_000),
            "{:?}",
            t.reconfigurations
        );
        assert!(crate::matrix::trace_name(when[0]).contains(WHEN));
        let e = prepare(&[trace], "event ==", 2, None, 1, &dir)
            .unwrap_err()
            .to_string();
        assert!(e.contains("column 9"), "{e}");
        let rec = |trace: &str, thr: f64| {
            Record(
                serde_json::json!({"key": trace, "scenario": "single", "label": "cubic", "queue": "500", "trace": trace, "throughput_mbps": thr, "rtt_p95_ms": 50.0}),
            )
        };
        let c = compare(&[
            rec("a~when-1ms", 10.0),
            rec("a~when-2ms", 30.0),
            rec("a~when-3ms", 20.0),
            rec("a~random-5ms", 40.0),
            rec("a", 99.0),
        ]);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].trace, "a");
        assert_eq!((c[0].triggered_runs, c[0].random_runs), (3, 1));
        assert_eq!(
            (c[0].triggered_thr_mbps, c[0].random_thr_mbps),
            (20.0, 40.0)
        );
        assert!(table(&c).contains("-50.0"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
