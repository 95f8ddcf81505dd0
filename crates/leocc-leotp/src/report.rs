//! The consumer's report, shaped like iperf3's `-J` output (`start`, `intervals[].sum`,
//! `end.sum_received`) so scripts that read iperf3 read it too, plus LEOTP's own fields.

use crate::counters::Counters;
use serde::Serialize;
use serde_json::json;

/// One reporting interval.
#[derive(Debug, Clone, Serialize)]
pub struct Interval {
    /// Start, s since the transfer began.
    pub start: f64,
    /// End, s.
    pub end: f64,
    /// Length, s.
    pub seconds: f64,
    /// Payload bytes received in the interval.
    pub bytes: u64,
    /// Goodput, bit/s.
    pub bits_per_second: f64,
}

impl Interval {
    /// From µs bounds and a byte count.
    pub fn new(start_us: u64, end_us: u64, bytes: u64) -> Interval {
        let seconds = end_us.saturating_sub(start_us) as f64 / 1e6;
        Interval { start: start_us as f64 / 1e6, end: end_us as f64 / 1e6, seconds, bytes, bits_per_second: if seconds > 0.0 { bytes as f64 * 8.0 / seconds } else { 0.0 } }
    }
}

/// A finished transfer.
#[derive(Debug, Clone)]
pub struct Report {
    /// "LEOTP".
    pub protocol: &'static str,
    /// The first hop's address.
    pub first_hop: String,
    /// Content name.
    pub name: String,
    /// Transfer time, s.
    pub seconds: f64,
    /// Payload bytes received (each segment once).
    pub bytes: u64,
    /// Whether the content arrived complete: `Some(true)` / `Some(false)` for content with an
    /// end (a file), `None` for an endless source (`bulk`), which has no end to reach: its
    /// transfer runs for the consumer's duration and is not an incomplete one.
    pub complete: Option<bool>,
    /// The source said it has no end (`bulk`).
    pub endless: bool,
    /// Segments of the file (None for bulk).
    pub total_segments: Option<u32>,
    /// Per-interval goodput.
    pub intervals: Vec<Interval>,
    /// Mean one-way delay producer → consumer, ms (every segment).
    pub owd_mean_ms: Option<f64>,
    /// Median one-way delay, ms.
    pub owd_p50_ms: Option<f64>,
    /// 95th percentile one-way delay, ms.
    pub owd_p95_ms: Option<f64>,
    /// 99th percentile one-way delay, ms.
    pub owd_p99_ms: Option<f64>,
    /// End-to-end retransmissions (consumer timeouts).
    pub timeouts: u64,
    /// Minimum RTT of the first hop, ms.
    pub hop_rtt_min_ms: Option<f64>,
    /// The first hop's cwnd at the end, segments.
    pub final_cwnd: f64,
    /// The consumer's counters.
    pub counters: Counters,
}

impl Report {
    /// Mean goodput, bit/s.
    pub fn bits_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 * 8.0 / self.seconds
        } else {
            0.0
        }
    }

    /// The iperf3-like JSON document.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "start": {
                "connected": [{ "remote": self.first_hop }],
                "test_start": { "protocol": self.protocol, "name": self.name },
            },
            "intervals": self.intervals.iter().map(|i| json!({ "sum": i })).collect::<Vec<_>>(),
            "end": {
                "sum_received": { "start": 0.0, "end": self.seconds, "seconds": self.seconds, "bytes": self.bytes, "bits_per_second": self.bits_per_second() },
                "complete": self.complete,
                "endless": self.endless,
                "total_segments": self.total_segments,
                "one_way_delay_ms": { "mean": self.owd_mean_ms, "p50": self.owd_p50_ms, "p95": self.owd_p95_ms, "p99": self.owd_p99_ms },
                "retransmits": self.timeouts,
                "first_hop": { "rtt_min_ms": self.hop_rtt_min_ms, "cwnd_segments": self.final_cwnd },
                "counters": self.counters,
            }
        })
    }
}
