//! Measurements and the run's results.
//!
//! Definitions (DESIGN.md "Results"; Pantheon's analysis for throughput and one-way delay):
//! - throughput: bytes of data packets that reached the receiver (the wire size, 1500 B, every
//!   arrival including retransmissions, as Pantheon's tunnel logs count them) over the flow's
//!   active time at the receiver (first to last arrival), Mbit/s;
//! - goodput: unique payload bytes delivered over the same time;
//! - utilization: unique data packets delivered, on the wire (×1500 B), over the capacity the
//!   data-direction bottleneck(s) offered from the first to the last opportunity those packets
//!   used, both ends included (`LinkModel::mean_capacity_bps`); never above 1 on one bottleneck;
//! - one-way delay: arrival − send time of every data packet that reached the receiver,
//!   95th percentile (Pantheon's "95th percentile per-packet one-way delay");
//! - RTT: the sender's per-ACK RTT samples (Karn: never from retransmissions); queueing delay
//!   = RTT − the trace's base RTT at the time the sampled packet was sent;
//! - loss rate: data packets dropped in the network / data packets sent; retransmission rate:
//!   retransmissions / data packets sent; Jain's index over per-flow throughput.
//!
//! Distributions go into log-linear histograms (<0.4 % relative error, fixed small memory),
//! so memory stays flat however long a run is.

use leocc_base::record::RunRecord;
use serde::Serialize;

/// Histogram resolution: values below 2^8 µs are exact, above it each power of two is cut
/// into 128 buckets (relative bucket width < 0.8 %, midpoint error < 0.4 %).
const SUB_BITS: u32 = 8;
/// Number of exact buckets.
const SUB: u64 = 1 << SUB_BITS;
/// Buckets per power of two above `SUB`.
const HALF: u64 = SUB / 2;

/// A log-linear histogram of non-negative integer values (µs).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    counts: Vec<u32>,
    n: u64,
    sum: f64,
}

fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - (SUB_BITS - 1);
    (SUB + (shift as u64 - 1) * HALF + ((v >> shift) - HALF)) as usize
}

fn bucket_value(i: usize) -> f64 {
    let i = i as u64;
    if i < SUB {
        return i as f64;
    }
    let shift = (i - SUB) / HALF + 1;
    let mant = (i - SUB) % HALF + HALF;
    let lo = mant << shift;
    lo as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
}

impl Histogram {
    /// Record one value.
    pub fn add(&mut self, v: u64) {
        let b = bucket_of(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.n += 1;
        self.sum += v as f64;
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Exact mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.n == 0 { 0.0 } else { self.sum / self.n as f64 }
    }

    /// The q-quantile (0 ≤ q ≤ 1), nearest rank ([`leocc_base::metrics::nearest_rank`]) over
    /// the buckets; 0 when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = leocc_base::metrics::nearest_rank(self.n as usize, q) as u64;
        let mut acc = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c as u64;
            if acc >= rank {
                return bucket_value(i);
            }
        }
        bucket_value(self.counts.len() - 1)
    }

    /// Merge another histogram into this one.
    pub fn merge(&mut self, o: &Histogram) {
        if o.counts.len() > self.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.n += o.n;
        self.sum += o.sum;
    }
}

/// Raw per-flow measurements collected during a run.
#[derive(Clone, Debug, Default)]
pub struct FlowStats {
    /// Data packets that arrived at the receiver (duplicates included).
    pub arrived: u64,
    /// New segments that arrived.
    pub arrived_unique: u64,
    /// First and last data arrival at the receiver.
    pub first_arrival_us: Option<u64>,
    /// Last data arrival.
    pub last_arrival_us: u64,
    /// First and last bottleneck service time of a new segment that arrived: the
    /// opportunities those segments used all lie within [first, last], inclusive.
    pub served_us: Option<(u64, u64)>,
    /// Data packets dropped by a full queue.
    pub dropped_queue: u64,
    /// Data packets dropped by random loss.
    pub dropped_random: u64,
    /// Data packets dropped during a ground-truth outage.
    pub dropped_outage: u64,
    /// ACKs the receiver sent.
    pub acks_sent: u64,
    /// ACKs dropped anywhere.
    pub acks_dropped: u64,
    /// One-way delay of each arrival, µs.
    pub owd: Histogram,
    /// RTT samples, µs.
    pub rtt: Histogram,
    /// Queueing delay samples, µs.
    pub qdelay: Histogram,
    /// The sender's smoothed RTT every 100 ms while the flow is active, µs (what the emulator
    /// engine reports as RTT: the kernel's tcpi_rtt every 100 ms).
    pub srtt: Histogram,
    /// Those samples minus the path's base RTT, µs.
    pub srtt_qdelay: Histogram,
}

/// Results of one flow: the run record's ([`leocc_base::record`]); the simulator fills
/// `loss_rate`, `packets_sent` and `rtos`, which only it can count.
pub type FlowResult = leocc_base::record::FlowRecord;

/// The record of a simulated run: what either engine reports ([`RunRecord`]; the simulator
/// fills its smoothed-RTT statistic, the detector's count and score), plus the per-100 ms time
/// series when asked for, which is not part of the JSON line. It reads as the record
/// (`r.utilization`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunResult {
    /// The record (the `--json` line).
    #[serde(flatten)]
    pub record: RunRecord<crate::detector::DetectionScore>,
    /// Per-100 ms time series, when asked for.
    #[serde(skip)]
    pub timeseries: Vec<TsRow>,
}

impl std::ops::Deref for RunResult {
    type Target = RunRecord<crate::detector::DetectionScore>;
    fn deref(&self) -> &Self::Target {
        &self.record
    }
}

impl std::ops::DerefMut for RunResult {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.record
    }
}

/// One time-series row: one flow over one 100 ms interval.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TsRow {
    /// End of the interval, s.
    pub t_s: f64,
    /// Flow index.
    pub flow: usize,
    /// Unique payload delivered in the interval, Mbit/s.
    pub throughput_mbps: f64,
    /// Mean RTT sample in the interval, ms (0: none).
    pub rtt_ms: f64,
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Pacing rate, Mbit/s (0: not paced).
    pub pacing_mbps: f64,
    /// Packets in flight.
    pub inflight: u32,
    /// Controller state (for leocc: mode, bBW_a, bBW_m, bRTT_l, bRTT_h, bRTT_latest, target).
    pub state: Vec<(String, f64)>,
}

/// Mbit/s of `bytes` over `us` microseconds (0 for an empty interval).
pub fn mbps(bytes: f64, us: u64) -> f64 {
    if us == 0 { 0.0 } else { bytes * 8.0 / us as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_within_half_percent() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.add(v);
        }
        for q in [0.5, 0.95, 0.99] {
            let exact = q * 100_000.0;
            let got = h.quantile(q);
            assert!((got - exact).abs() / exact < 0.005, "q{q}: {got} vs {exact}");
        }
        assert!((h.mean() - 50_000.5).abs() < 1e-6);
    }

    #[test]
    fn bucket_boundaries_are_monotone() {
        let mut last = 0usize;
        for v in 0..100_000u64 {
            let b = bucket_of(v);
            assert!(b >= last && b <= last + 1);
            assert!(bucket_value(b) >= 0.0);
            last = b;
        }
    }
}
