//! The ablation of LeoCC (issue 12): every departure from the paper and every heuristic of
//! core/leocc.c turned off (or back to the paper) one at a time, over traces × buffers × flow
//! mixes, in the simulator, against the same runs of BBRv1 and BBRv3. What does not pay is a
//! candidate for deletion; `leocc bench ablation` prints the table and docs/algorithm.md keeps
//! the numbers.
//!
//! Each variant is a set of core parameters (`leocc sim --param leocc.NAME=VALUE`), so every
//! row can be reproduced with one `leocc sim` command.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use leocc_sim::{parse_flows, QueueLimit, RunResult, Scenario};
use leocc_trace::Trace;

/// One variant of LeoCC: a name, what it changes, and the core parameters that do it.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Short name for the table.
    pub name: &'static str,
    /// What is turned off or changed, in a few words.
    pub what: &'static str,
    /// `NAME=VALUE` settings of the core's parameters.
    pub params: &'static [&'static str],
}

/// The variants, the shipped defaults first.
pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "default",
        what: "as shipped",
        params: &[],
    },
    Variant {
        name: "own-range",
        what: "bRTT_h from the flow's own MPF (+10 ms), not the probe's band width",
        params: &["path_min_samples=0"],
    },
    Variant {
        name: "delta-10ms",
        what: "Delta_RTT 10 ms over the probe's range (authors: 0)",
        params: &["delta_rtt_us=10000"],
    },
    Variant {
        name: "cwnd-2x",
        what: "cwnd gain 2 while congested (not 1 x BDP)",
        params: &["cwnd_gain_congested=2048"],
    },
    Variant {
        name: "no-compete",
        what: "no standing-queue test, no failed-drain switch",
        params: &["competing_cycles=0"],
    },
    Variant {
        name: "pace-drain",
        what: "drain paced only: no cwnd hold to target x bRTT_h",
        params: &["drain_cwnd=0"],
    },
    Variant {
        name: "to-inflight",
        what: "drain ends on inflight, not also on the RTT back in the range",
        params: &["drain_to_range=0"],
    },
    Variant {
        name: "free-cycles",
        what: "each flow's cruise cycle runs on its own count, off the common grid",
        params: &["cycle_grid=0"],
    },
    Variant {
        name: "no-guards",
        what: "no event spacing, no adaptation budget",
        params: &["rcf_min_spacing_us=0", "rcf_budget_pct=100"],
    },
    Variant {
        name: "full-share",
        what: "no second band search at half the share",
        params: &["mpf_half_share=0"],
    },
    Variant {
        name: "one-capped",
        what: "no second capped round in the adaptation",
        params: &["ra_second_round=0"],
    },
    Variant {
        name: "kal-every",
        what: "bBW_m fed every sample, not each round's max",
        params: &["bw_kal_every_sample=1"],
    },
    Variant {
        name: "margin-1pct",
        what: "pace 1 % under the target (authors)",
        params: &["pacing_margin_pct=1"],
    },
];

/// A trace to run over, with the name it gets in the table.
#[derive(Clone)]
pub struct NamedTrace {
    /// Name in the output.
    pub name: String,
    /// The trace.
    pub trace: Arc<Trace>,
}

/// What to run.
#[derive(Clone)]
pub struct Plan {
    /// Traces.
    pub traces: Vec<NamedTrace>,
    /// Buffers, e.g. 500 packets and 150 ms of mean capacity.
    pub queues: Vec<QueueLimit>,
    /// Seeds per cell.
    pub seeds: Vec<u64>,
    /// Random loss added on the data direction.
    pub loss: f64,
    /// Simulated seconds per run (at most the trace's length).
    pub duration_s: f64,
    /// Also run three staggered LeoCC flows and LeoCC against BBRv1 (fairness columns).
    pub multi: bool,
    /// Variants to run.
    pub variants: Vec<Variant>,
    /// Worker threads.
    pub jobs: usize,
}

/// The mixes run per cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Mix {
    /// One LeoCC flow.
    Single,
    /// Three LeoCC flows starting a sixth of the run apart.
    Three,
    /// LeoCC against BBRv1.
    VsBbr,
}

/// One run to do: a variant (None: the reference controls) on one trace, buffer and seed.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Job {
    variant: Option<usize>,
    trace: usize,
    queue: usize,
    seed: u64,
    mix: Mix,
    cc: &'static str,
}

/// Averages of one variant over every cell (trace × buffer × seed).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Row {
    /// Variant name.
    pub variant: String,
    /// What it changes.
    pub what: String,
    /// Mean utilisation of the single flow.
    pub utilization: f64,
    /// Mean queueing delay of the single flow, ms.
    pub qdelay_avg_ms: f64,
    /// Mean p95 queueing delay, ms.
    pub qdelay_p95_ms: f64,
    /// Mean of (p95 RTT / BBRv1's p95 RTT) per cell.
    pub p95_vs_bbr: f64,
    /// Mean of (throughput / BBRv3's) per cell.
    pub thr_vs_bbr3: f64,
    /// Mean Jain index of three staggered LeoCC flows (NaN without --multi).
    pub jain3: f64,
    /// Mean of LeoCC's throughput over an equal share against BBRv1 (NaN without --multi).
    pub share_vs_bbr: f64,
    /// Cells averaged.
    pub cells: usize,
}

fn scenario(plan: &Plan, job: &Job) -> Result<Scenario, String> {
    let t = &plan.traces[job.trace];
    let dur = ((plan.duration_s * 1e6) as u64)
        .min(t.trace.duration_us())
        .max(1_000_000);
    let spec = match job.mix {
        Mix::Single => format!("{}@0-{}", job.cc, dur as f64 / 1e6),
        Mix::Three => {
            let s = dur as f64 / 1e6;
            format!("leocc@0-{s},leocc@{}-{s},leocc@{}-{s}", s / 6.0, s / 3.0)
        }
        Mix::VsBbr => format!("leocc@0-{0},bbr@0-{0}", dur as f64 / 1e6),
    };
    let mut sc = Scenario::new(t.trace.clone(), &t.name, job.cc, dur);
    sc.flows = parse_flows(&spec, "", dur)?;
    sc.seed = job.seed;
    sc.queue = plan.queues[job.queue];
    sc.loss = plan.loss;
    sc.data_dir = t.trace.meta.direction.primary();
    if let Some(v) = job.variant {
        sc.cc_params = plan.variants[v]
            .params
            .iter()
            .map(|p| ("leocc".to_string(), p.to_string()))
            .collect();
    }
    Ok(sc)
}

impl Plan {
    /// One line per run, in the order they are handed out (`--dry-run`).
    pub fn labels(&self) -> Vec<String> {
        jobs(self)
            .iter()
            .map(|j| {
                let who = j.variant.map_or("reference", |v| self.variants[v].name);
                let mix = match j.mix {
                    Mix::Single => "one flow",
                    Mix::Three => "three staggered flows",
                    Mix::VsBbr => "against BBRv1",
                };
                format!(
                    "ablation {who} {} {} buffer {} seed {}, {mix}",
                    j.cc,
                    self.traces[j.trace].name,
                    crate::runner::buffer_label(&self.queues[j.queue]),
                    j.seed
                )
            })
            .collect()
    }
}

fn jobs(plan: &Plan) -> Vec<Job> {
    let mut out = Vec::new();
    for trace in 0..plan.traces.len() {
        for queue in 0..plan.queues.len() {
            for &seed in &plan.seeds {
                for cc in ["bbr", "bbr3"] {
                    out.push(Job {
                        variant: None,
                        trace,
                        queue,
                        seed,
                        mix: Mix::Single,
                        cc,
                    });
                }
                for v in 0..plan.variants.len() {
                    out.push(Job {
                        variant: Some(v),
                        trace,
                        queue,
                        seed,
                        mix: Mix::Single,
                        cc: "leocc",
                    });
                    if plan.multi {
                        out.push(Job {
                            variant: Some(v),
                            trace,
                            queue,
                            seed,
                            mix: Mix::Three,
                            cc: "leocc",
                        });
                        out.push(Job {
                            variant: Some(v),
                            trace,
                            queue,
                            seed,
                            mix: Mix::VsBbr,
                            cc: "leocc",
                        });
                    }
                }
            }
        }
    }
    out
}

/// Run the plan on `plan.jobs` threads; `progress(done, total)` after each run.
pub fn run(plan: &Plan, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Vec<Row>, String> {
    let jobs = jobs(plan);
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let results: Mutex<Vec<Option<RunResult>>> = Mutex::new(vec![None; jobs.len()]);
    let error: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..plan.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() || error.lock().unwrap().is_some() {
                    return;
                }
                match scenario(plan, &jobs[i])
                    .and_then(|sc| leocc_sim::run(&sc).map_err(|e| e.to_string()))
                {
                    Ok(r) => {
                        results.lock().unwrap()[i] = Some(r);
                        progress(done.fetch_add(1, Ordering::Relaxed) + 1, jobs.len());
                    }
                    Err(e) => *error.lock().unwrap() = Some(e),
                }
            });
        }
    });
    if let Some(e) = error.into_inner().unwrap() {
        return Err(e);
    }
    let results: Vec<RunResult> = results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect();
    Ok(summarise(plan, &jobs, &results))
}

fn summarise(plan: &Plan, jobs: &[Job], results: &[RunResult]) -> Vec<Row> {
    let mean = |xs: &[f64]| leocc_base::metrics::mean(xs).unwrap_or(f64::NAN);
    let by_job: std::collections::HashMap<&Job, &RunResult> = jobs.iter().zip(results).collect();
    let find = |variant: Option<usize>,
                trace: usize,
                queue: usize,
                seed: u64,
                mix: Mix,
                cc: &'static str| {
        by_job
            .get(&Job {
                variant,
                trace,
                queue,
                seed,
                mix,
                cc,
            })
            .copied()
    };
    let mut rows = Vec::new();
    for (v, variant) in plan.variants.iter().enumerate() {
        let (mut util, mut q, mut q95, mut p95, mut thr, mut jain, mut share) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        for trace in 0..plan.traces.len() {
            for queue in 0..plan.queues.len() {
                for &seed in &plan.seeds {
                    let Some(r) = find(Some(v), trace, queue, seed, Mix::Single, "leocc") else {
                        continue;
                    };
                    util.push(r.utilization);
                    q.push(r.qdelay_avg_ms);
                    q95.push(r.qdelay_p95_ms);
                    if let Some(b) = find(None, trace, queue, seed, Mix::Single, "bbr") {
                        p95.push(r.rtt_p95_ms / b.rtt_p95_ms.max(1e-9));
                    }
                    if let Some(b) = find(None, trace, queue, seed, Mix::Single, "bbr3") {
                        thr.push(r.throughput_mbps / b.throughput_mbps.max(1e-9));
                    }
                    if let Some(m) = find(Some(v), trace, queue, seed, Mix::Three, "leocc") {
                        jain.push(m.jain);
                    }
                    if let Some(m) = find(Some(v), trace, queue, seed, Mix::VsBbr, "leocc") {
                        let (l, b) = (m.flows[0].throughput_mbps, m.flows[1].throughput_mbps);
                        share.push(l / ((l + b) / 2.0).max(1e-9));
                    }
                }
            }
        }
        rows.push(Row {
            variant: variant.name.to_string(),
            what: variant.what.to_string(),
            utilization: mean(&util),
            qdelay_avg_ms: mean(&q),
            qdelay_p95_ms: mean(&q95),
            p95_vs_bbr: mean(&p95),
            thr_vs_bbr3: mean(&thr),
            jain3: mean(&jain),
            share_vs_bbr: mean(&share),
            cells: util.len(),
        });
    }
    rows
}

/// The table `leocc bench ablation` prints (Markdown, pasteable into docs/algorithm.md).
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| variant | what | util | queue mean / p95 ms | p95 RTT / BBRv1 | thr / BBRv3 | Jain, 3 flows | share vs BBRv1 |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let opt = |x: f64| {
            if x.is_nan() {
                "-".to_string()
            } else {
                format!("{x:.2}")
            }
        };
        s.push_str(&format!(
            "| {} | {} | {:.3} | {:.1} / {:.1} | {:.2} | {:.2} | {} | {} |\n",
            r.variant,
            r.what,
            r.utilization,
            r.qdelay_avg_ms,
            r.qdelay_p95_ms,
            r.p95_vs_bbr,
            r.thr_vs_bbr3,
            opt(r.jain3),
            opt(r.share_vs_bbr)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_plan_runs_every_variant_and_the_reference() {
        let trace = Arc::new(leocc_sim::constant_trace(20.0, 20_000, 1_000_000, &[]));
        let plan = Plan {
            traces: vec![NamedTrace {
                name: "const".into(),
                trace,
            }],
            queues: vec![QueueLimit::Packets(100)],
            seeds: vec![1],
            loss: 0.0,
            duration_s: 3.0,
            multi: true,
            variants: VARIANTS[..2].to_vec(),
            jobs: 2,
        };
        let labels = plan.labels();
        // The two reference controls, then each variant alone, three staggered, against BBRv1.
        assert_eq!(labels.len(), 2 + 2 * 3, "{labels:?}");
        assert_eq!(labels[2], "ablation default leocc const buffer 100 pkts seed 1, one flow");
        let done = AtomicUsize::new(0);
        let rows = run(&plan, &|n, total| {
            assert_eq!(total, labels.len(), "the plan lists every run handed out");
            done.fetch_max(n, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(done.load(Ordering::Relaxed), labels.len());
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(r.cells, 1);
            assert!(r.utilization > 0.5 && r.utilization <= 1.0, "{r:?}");
            assert!(
                r.p95_vs_bbr.is_finite()
                    && r.thr_vs_bbr3.is_finite()
                    && r.jain3 > 0.3
                    && r.share_vs_bbr > 0.0,
                "{r:?}"
            );
        }
        let t = table(&rows);
        assert!(
            t.contains("| default | as shipped |") && t.contains("| own-range |"),
            "{t}"
        );
    }

    #[test]
    fn every_variant_names_real_parameters() {
        for v in VARIANTS {
            let params: Vec<String> = v.params.iter().map(|p| p.to_string()).collect();
            leocc_sim::cc::check_params("leocc", &params)
                .unwrap_or_else(|e| panic!("{}: {e}", v.name));
        }
    }
}
