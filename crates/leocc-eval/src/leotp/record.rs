//! The record of one LEOTP-evaluation run: a row of `OUT/leotp/results.jsonl`, written after
//! every run and read back to resume an interrupted evaluation and to build the report.
//!
//! It is its own type, not the transport run record (`leocc_base::record::RunRecord`) that
//! `leocc eval`'s engines share: a chain run has no bottleneck queue, no RTT samples and no
//! send buffer of its own, but two one-way delay measurements (the path's, from the chain's
//! captures, and each endpoint's), the in-order delay, retransmission quantiles and the
//! sender's traffic per delivered byte. Forced into the transport record, most of either
//! would be optional and the rest untyped.
//!
//! A measured field is `None` where the run could not measure it (no retransmission, no
//! packet matched, a failed run); it is left out of the row then (rows written before this
//! type held `null` there, which reads the same).

use std::path::Path;

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

use leocc_base::metrics::{jain, mean, quantile_nearest_rank, sorted};

use crate::pathdelay::PathDelay;

/// The version of the rows: bumped when a field changes meaning or goes away (adding an
/// optional field does not bump it). Rows without it are version 0, which this reads; rows of
/// a newer version are refused.
pub const SCHEMA: u32 = 1;

/// Quantiles of the retransmitted packets' delay kept per run (0 %, 5 %, .., 100 %): enough
/// for the CDF of seed 003's Fig. 10 without storing every packet.
const RETX_QUANTILES: usize = 21;

/// How the path's one-way delay is measured (the same for every protocol).
const PATH_OWD_METHOD: &str = "path: server capture to client capture, per data packet, from the data's first copy";

/// One flow as its endpoint reported it: LEOTP's consumer report, or iperf3's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointFlow {
    /// Goodput at the receiver, Mbit/s.
    pub thr_mbps: f64,
    /// The endpoint's own mean one-way delay estimate, ms.
    pub owd_mean_ms: Option<f64>,
    /// Its 95th percentile, ms.
    pub owd_p95_ms: Option<f64>,
    /// Retransmissions the sender counted.
    pub retransmits: Option<u64>,
}

/// One run of `leocc leotp eval`: what ran (the identity a resumed evaluation matches), and
/// what it measured, or why it failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeotpRecord {
    /// The row's version ([`SCHEMA`]; 0 for rows written before it).
    #[serde(default)]
    pub schema: u32,
    /// Experiment (`headline`, `loss`, ...).
    pub experiment: String,
    /// Protocol variant's label (`leotp`, `leotp-no-innet`, a kernel control, ...).
    pub variant: String,
    /// Hops of the chain.
    pub hops: usize,
    /// Random loss per hop.
    pub loss: f64,
    /// Median capacity per hop, Mbit/s.
    pub mbps: f64,
    /// Seed of the hop traces and of the emulator's loss.
    pub seed: u64,
    /// Seconds of transfer.
    pub duration_s: f64,
    /// Flows of the protocol at once (rows from before this field are one-flow runs).
    #[serde(default = "one")]
    pub flows: usize,
    /// Why the run failed; a failed run has no measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,

    /// Goodput summed over the flows, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thr_mbps: Option<f64>,
    /// Retransmissions the senders counted, summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// Each flow's goodput (runs of several flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_mbps: Option<Vec<f64>>,
    /// Jain's index over them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jain: Option<f64>,
    /// Each flow as its endpoint reported it (runs of several flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows_detail: Option<Vec<EndpointFlow>>,
    /// The endpoints' mean one-way delay (the mean over flows), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_endpoint_mean_ms: Option<f64>,
    /// Their 95th percentile (the mean over flows), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_endpoint_p95_ms: Option<f64>,
    /// How the endpoints measure it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_endpoint_method: Option<String>,
    /// Mean over the run of the narrowest hop's downlink capacity, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck_mbps: Option<f64>,
    /// Each hop's summary line from the emulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Vec<String>>,

    /// How the path's one-way delay is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_method: Option<String>,
    /// Mean one-way delay over every delivered data packet, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_mean_ms: Option<f64>,
    /// Its 95th percentile, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_p95_ms: Option<f64>,
    /// Mean in-order delay (what a stream reader waits, head-of-line blocking included), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inorder_mean_ms: Option<f64>,
    /// Its 95th percentile, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inorder_p95_ms: Option<f64>,
    /// Data packets delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_pkts: Option<u64>,
    /// Of them, retransmitted copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retx_pkts: Option<u64>,
    /// Retransmitted / delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retx_share: Option<f64>,
    /// The retransmitted packets' mean one-way delay, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retx_owd_mean_ms: Option<f64>,
    /// Their delay's quantiles 0 %, 5 %, .., 100 %, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retx_owd_quantiles_ms: Option<Vec<f64>>,
    /// Bytes the server sent per byte delivered (1 = nothing sent twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_traffic_ratio: Option<f64>,
    /// Packets seen at one end of the chain and not the other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_unmatched_pkts: Option<u64>,
}

fn one() -> usize {
    1
}

impl LeotpRecord {
    /// Whether the run measured something (it did not fail).
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Puts the flows' endpoint results in: goodput summed; delays and retransmissions of a
    /// single flow as they are, of several the mean delay over flows and the total
    /// retransmissions, with each flow's result and Jain's index over their goodput.
    pub fn set_endpoints(&mut self, flows: Vec<EndpointFlow>, method: &str) {
        let thr: Vec<f64> = flows.iter().map(|f| f.thr_mbps).collect();
        self.thr_mbps = Some(thr.iter().sum());
        self.owd_endpoint_method = Some(method.into());
        if let [f] = flows.as_slice() {
            self.owd_endpoint_mean_ms = f.owd_mean_ms;
            self.owd_endpoint_p95_ms = f.owd_p95_ms;
            self.retransmits = f.retransmits;
            return;
        }
        let mean_of = |g: fn(&EndpointFlow) -> Option<f64>| mean(&flows.iter().filter_map(g).collect::<Vec<_>>());
        self.owd_endpoint_mean_ms = mean_of(|f| f.owd_mean_ms);
        self.owd_endpoint_p95_ms = mean_of(|f| f.owd_p95_ms);
        self.retransmits = Some(flows.iter().filter_map(|f| f.retransmits).sum());
        self.jain = Some(jain(&thr));
        self.flow_mbps = Some(thr);
        self.flows_detail = Some(flows);
    }

    /// Puts the path's one-way delay in (the same measurement for every protocol): mean and
    /// p95 over every delivered data packet, the same for the in-order delay, the
    /// retransmitted packets' share, mean and quantiles (Fig. 10), and the sender's traffic
    /// per delivered byte (Fig. 11).
    pub fn set_path_delay(&mut self, p: &PathDelay) {
        let all = sorted(&p.owd_ms);
        let retx = sorted(&p.retx_owd_ms);
        let inorder = sorted(&p.inorder_ms);
        self.owd_method = Some(PATH_OWD_METHOD.into());
        self.owd_mean_ms = mean(&all);
        self.owd_p95_ms = quantile_nearest_rank(&all, 0.95);
        self.inorder_mean_ms = mean(&inorder);
        self.inorder_p95_ms = quantile_nearest_rank(&inorder, 0.95);
        self.delivered_pkts = Some(p.delivered_pkts);
        self.retx_pkts = Some(p.retx_owd_ms.len() as u64);
        self.retx_share = (p.delivered_pkts > 0).then(|| p.retx_owd_ms.len() as f64 / p.delivered_pkts as f64);
        self.retx_owd_mean_ms = mean(&retx);
        self.retx_owd_quantiles_ms = (!retx.is_empty()).then(|| {
            (0..RETX_QUANTILES)
                .filter_map(|k| quantile_nearest_rank(&retx, k as f64 / (RETX_QUANTILES - 1) as f64))
                .collect()
        });
        self.sender_traffic_ratio = p.sender_traffic_ratio();
        self.path_unmatched_pkts = Some(p.unmatched);
    }

    /// The row as results.jsonl holds it (keys in name order, as rows always were).
    pub fn to_line(&self) -> String {
        serde_json::to_value(self).expect("a LEOTP record always serialises").to_string()
    }
}

/// The records of a results file; none when it does not exist. A line that is not a record
/// (not JSON, a misspelt or missing field, a newer schema) is an error naming file and line.
pub fn read(path: &Path) -> Result<Vec<LeotpRecord>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
    };
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let r: LeotpRecord = serde_json::from_str(l)
            .with_context(|| format!("{}:{}: not a LEOTP run record", path.display(), i + 1))?;
        if r.schema > SCHEMA {
            bail!("{}:{}: written by a newer leocc (row schema {}; this one reads up to {SCHEMA})", path.display(), i + 1, r.schema);
        }
        out.push(r);
    }
    Ok(out)
}

/// Writes the records to a results file at once (a reader never sees half of it).
pub fn write(path: &Path, rows: &[LeotpRecord]) -> Result<()> {
    let text: String = rows.iter().map(|r| r.to_line() + "\n").collect();
    leocc_base::out::write_atomic(path, text.as_bytes()).map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(thr: f64, owd: f64, retx: u64) -> EndpointFlow {
        EndpointFlow { thr_mbps: thr, owd_mean_ms: Some(owd), owd_p95_ms: Some(owd * 1.5), retransmits: Some(retx) }
    }

    #[test]
    fn one_flow_is_kept_as_it_is_and_several_are_combined() {
        let mut one = LeotpRecord::default();
        one.set_endpoints(vec![flow(10.0, 50.0, 3)], "m");
        assert_eq!((one.thr_mbps, one.owd_endpoint_mean_ms, one.retransmits, one.jain), (Some(10.0), Some(50.0), Some(3), None));
        assert!(one.flows_detail.is_none() && one.owd_mean_ms.is_none(), "the path's measurement, not the endpoints', fills owd_mean_ms");
        let mut two = LeotpRecord::default();
        two.set_endpoints(vec![flow(12.0, 40.0, 1), flow(4.0, 60.0, 2)], "m");
        assert_eq!((two.thr_mbps, two.owd_endpoint_mean_ms, two.retransmits), (Some(16.0), Some(50.0), Some(3)));
        assert!((two.jain.unwrap() - 256.0 / (2.0 * 160.0)).abs() < 1e-12);
        assert_eq!(two.flow_mbps, Some(vec![12.0, 4.0]));
    }

    #[test]
    fn rows_read_back_as_written_and_bad_rows_name_their_line() {
        let dir = std::env::temp_dir().join(format!("leotp-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("results.jsonl");
        assert!(read(&p).unwrap().is_empty(), "no file: no rows");
        let mut ok = LeotpRecord { schema: SCHEMA, experiment: "headline".into(), variant: "leotp".into(), hops: 6, loss: 0.015, mbps: 30.0, seed: 1, duration_s: 20.0, flows: 1, ..Default::default() };
        ok.set_endpoints(vec![flow(10.0, 50.0, 3)], "m");
        let failed = LeotpRecord { error: Some("iperf3: boom".into()), ..ok.clone() };
        write(&p, &[ok.clone(), failed.clone()]).unwrap();
        assert_eq!(read(&p).unwrap(), [ok.clone(), failed]);
        let line = ok.to_line();
        assert!(!line.contains("jain") && !line.contains("error"), "absent values stay out: {line}");

        // A row from before the schema and flows fields, with nulls where nothing was measured.
        std::fs::write(&p, "{\"experiment\":\"loss\",\"variant\":\"bbr\",\"hops\":6,\"loss\":0.0,\"mbps\":30.0,\"seed\":1,\"duration_s\":20.0,\"thr_mbps\":9.0,\"retx_owd_mean_ms\":null}\n").unwrap();
        let old = read(&p).unwrap().remove(0);
        assert_eq!((old.schema, old.flows, old.thr_mbps, old.retx_owd_mean_ms), (0, 1, Some(9.0), None));

        let bad = ok.to_line().replace("thr_mbps", "thr_mpbs");
        std::fs::write(&p, format!("{}\n{bad}\n", ok.to_line())).unwrap();
        let e = format!("{:#}", read(&p).unwrap_err());
        assert!(e.contains("results.jsonl:2") && e.contains("thr_mpbs"), "{e}");
        let newer = ok.to_line().replace(&format!("\"schema\":{SCHEMA}"), &format!("\"schema\":{}", SCHEMA + 1));
        std::fs::write(&p, newer).unwrap();
        let e = format!("{:#}", read(&p).unwrap_err());
        assert!(e.contains("results.jsonl:1") && e.contains("newer"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
