//! The run record: what one run of either engine reports, as the simulator's `--json` and the
//! emulator engine's `emu-run --json` print it and `leocc eval` reads it back (the child
//! protocol: the last line of the child's stdout that starts with `{`), before it adds the
//! run's identity and [`SCHEMA`] and appends it to results.jsonl.
//!
//! Definitions (DESIGN.md "Results", crates/leocc-sim/src/metrics.rs for the simulator's,
//! crates/leocc-eval/src/emu_engine.rs for the emulator's): throughput is what left the
//! bottleneck in the data direction (the emulator counts it per 5-tuple, the simulator per
//! arrival), goodput what the receiver got, utilisation the unique data delivered over the
//! capacity offered while the run used it; RTT and queueing delay in ms; rates as fractions.
//! Percentiles and means come from [`crate::metrics`]. A field only one engine can measure is
//! an `Option`, left out of the JSON when absent; every other field both engines fill.

use serde::{Deserialize, Serialize};

/// The version of results.jsonl's rows: bumped when a field changes meaning or goes away
/// (adding an optional field does not bump it). Readers refuse rows of a newer version.
pub const SCHEMA: u32 = 1;

/// One flow of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRecord {
    /// Flow index, in the order the run's flows were given.
    pub flow: usize,
    /// Congestion control.
    pub cc: String,
    /// Configured start, s.
    pub start_s: f64,
    /// Configured stop, s.
    pub stop_s: f64,
    /// When the flow's first data left (emulator: the tools start about a second late), s of
    /// trace time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_start_s: Option<f64>,
    /// Data that left the bottleneck (or reached the receiver), on the wire, Mbit/s.
    pub throughput_mbps: f64,
    /// Unique payload delivered per second, Mbit/s.
    pub goodput_mbps: f64,
    /// Unique data delivered / capacity offered.
    pub utilization: f64,
    /// Bytes of the flow's connection that left the bottleneck (emulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck_bytes: Option<u64>,
    /// Packets of it (emulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck_pkts: Option<u64>,
    /// Mean RTT, ms.
    pub rtt_avg_ms: f64,
    /// Median RTT, ms.
    pub rtt_p50_ms: f64,
    /// 95th percentile RTT, ms.
    pub rtt_p95_ms: f64,
    /// 99th percentile RTT, ms.
    pub rtt_p99_ms: f64,
    /// 95th percentile one-way delay, ms.
    pub owd_p95_ms: f64,
    /// Mean queueing delay, ms.
    pub qdelay_avg_ms: f64,
    /// 95th percentile queueing delay, ms.
    pub qdelay_p95_ms: f64,
    /// Network drops / packets sent (simulator: it sees every drop of a flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_rate: Option<f64>,
    /// Retransmissions / packets sent.
    pub retrans_rate: f64,
    /// Data packets sent (simulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_sent: Option<u64>,
    /// Retransmission timeouts (simulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtos: Option<u64>,
    /// CPU seconds of the QUIC endpoints per MB delivered (emulator, QUIC flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s_per_mb: Option<f64>,
}

/// One run: its identity as the engine knows it, the totals, and the flows. `D` is the
/// detector's score (the simulator's `DetectionScore`; read back, a JSON value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord<D = serde_json::Value> {
    /// `sim` or `emu`.
    pub engine: String,
    /// The control (or the flows' controls joined with '+').
    pub cc: String,
    /// The trace's path or name.
    pub trace: String,
    /// Seed.
    pub seed: u64,
    /// Run length, s.
    pub duration_s: f64,
    /// Total throughput, Mbit/s.
    pub throughput_mbps: f64,
    /// Total goodput, Mbit/s.
    pub goodput_mbps: f64,
    /// Total utilisation.
    pub utilization: f64,
    /// Mean RTT over all samples, ms.
    pub rtt_avg_ms: f64,
    /// Median RTT, ms.
    pub rtt_p50_ms: f64,
    /// 95th percentile RTT, ms.
    pub rtt_p95_ms: f64,
    /// 99th percentile RTT, ms.
    pub rtt_p99_ms: f64,
    /// 95th percentile one-way delay over all packets, ms.
    pub owd_p95_ms: f64,
    /// Mean queueing delay, ms.
    pub qdelay_avg_ms: f64,
    /// 95th percentile queueing delay, ms.
    pub qdelay_p95_ms: f64,
    /// 95th percentile of the senders' smoothed RTT sampled every 100 ms, ms (simulator): the
    /// statistic the emulator's `rtt_p95_ms` is (tcpi_rtt every 100 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_p95_ms: Option<f64>,
    /// Mean of those samples minus the base RTT, ms (simulator; the emulator's
    /// `qdelay_avg_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_qdelay_avg_ms: Option<f64>,
    /// Drops / sent over all flows.
    pub loss_rate: f64,
    /// Retransmissions / sent over all flows.
    pub retrans_rate: f64,
    /// Jain's fairness index over flow throughputs (1 for one flow).
    pub jain: f64,
    /// Reconfigurations the detector reported or the oracle fed (simulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconfigs_detected: Option<u64>,
    /// The detector's precision and recall against the trace's true reconfigurations
    /// (simulator, when the detector runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detection: Option<D>,
    /// The bottleneck queue limit as given (`500`, `750000b`, `150ms`).
    pub queue: String,
    /// The queue limit in bytes (a packet limit counts 1500 bytes a packet).
    pub queue_bytes: u64,
    /// The queue limit in ms of the data direction's mean capacity.
    pub queue_ms: f64,
    /// The queue discipline (`droptail`, `dropfront`, `codel`).
    pub qdisc: String,
    /// Each sender's send buffer, bytes (`tcp_wmem[2]`).
    pub sndbuf_bytes: u64,
    /// Everything that left the bottleneck in the data direction, the tools' control
    /// connections included (emulator): what the flows' `bottleneck_bytes` add up to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck_departed_bytes: Option<u64>,
    /// Per-flow results.
    pub flows: Vec<FlowRecord>,
}

impl<D: Serialize> RunRecord<D> {
    /// The record as a JSON object, for the row results.jsonl adds the run's identity to.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a run record always serialises")
    }
}

/// Parses the record a child run printed (`line` is its JSON), naming what is wrong.
pub fn parse(line: &str) -> Result<RunRecord, String> {
    serde_json::from_str(line).map_err(|e| format!("the run's JSON result is not a run record: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowRecord {
        FlowRecord {
            flow: 0,
            cc: "cubic".into(),
            start_s: 0.0,
            stop_s: 10.0,
            data_start_s: Some(0.8),
            throughput_mbps: 9.5,
            goodput_mbps: 9.2,
            utilization: 0.95,
            bottleneck_bytes: Some(11_875_000),
            bottleneck_pkts: Some(7917),
            rtt_avg_ms: 50.0,
            rtt_p50_ms: 48.0,
            rtt_p95_ms: 70.0,
            rtt_p99_ms: 80.0,
            owd_p95_ms: 45.0,
            qdelay_avg_ms: 8.0,
            qdelay_p95_ms: 25.0,
            loss_rate: None,
            retrans_rate: 0.01,
            packets_sent: None,
            rtos: None,
            cpu_s_per_mb: None,
        }
    }

    #[test]
    fn a_record_reads_back_as_written_and_absent_fields_stay_out() {
        let r: RunRecord = RunRecord {
            engine: "emu".into(),
            cc: "cubic".into(),
            trace: "t".into(),
            seed: 1,
            duration_s: 10.0,
            throughput_mbps: 9.5,
            goodput_mbps: 9.2,
            utilization: 0.95,
            rtt_avg_ms: 50.0,
            rtt_p50_ms: 48.0,
            rtt_p95_ms: 70.0,
            rtt_p99_ms: 80.0,
            owd_p95_ms: 45.0,
            qdelay_avg_ms: 8.0,
            qdelay_p95_ms: 25.0,
            srtt_p95_ms: None,
            srtt_qdelay_avg_ms: None,
            loss_rate: 0.001,
            retrans_rate: 0.01,
            jain: 1.0,
            reconfigs_detected: None,
            detection: None,
            queue: "150ms".into(),
            queue_bytes: 187_500,
            queue_ms: 150.0,
            qdisc: "droptail".into(),
            sndbuf_bytes: 4 << 20,
            bottleneck_departed_bytes: Some(11_900_000),
            flows: vec![flow()],
        };
        let line = serde_json::to_string(&r).unwrap();
        assert!(!line.contains("srtt_p95_ms") && !line.contains("\"rtos\""), "{line}");
        assert_eq!(parse(&line).unwrap(), r);
    }

    #[test]
    fn a_misspelt_or_missing_field_is_an_error_naming_it() {
        let mut v = serde_json::to_value(flow()).unwrap();
        v["throughput_mpbs"] = 1.0.into();
        let e = serde_json::from_value::<FlowRecord>(v.clone()).unwrap_err().to_string();
        assert!(e.contains("throughput_mpbs"), "{e}");
        v.as_object_mut().unwrap().remove("throughput_mpbs");
        v.as_object_mut().unwrap().remove("utilization");
        let e = serde_json::from_value::<FlowRecord>(v).unwrap_err().to_string();
        assert!(e.contains("utilization"), "{e}");
    }
}
