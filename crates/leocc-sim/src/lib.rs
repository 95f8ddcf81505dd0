//! A deterministic, packet-level, discrete-event simulator of TCP over LEO satellite paths.
//!
//! The model, outside in:
//! - **Links** come from `leocc-trace`'s `LinkModel` (the same one the emulator replays):
//!   delivery opportunities (mahimahi semantics), per-direction one-way delay, random loss,
//!   ground-truth outages, and an optional terrestrial segment as a second bottleneck. Each
//!   capacity hop has a FIFO limited in packets or bytes ([`QueueLimit`]) under a queue
//!   discipline ([`Qdisc`]: drop-tail by default, drop-front or CoDel); see `sim`.
//! - **TCP** (`tcp`): a Linux-like sender (tcp_rate.c delivery-rate samples, SACK scoreboard,
//!   RACK loss detection, fast retransmit, RTO with backoff, pacing, cwnd) and a receiver
//!   with delayed ACKs and SACK blocks. MSS 1448 payload bytes in 1500-byte packets.
//! - **Congestion controls** (`cc`): one file each, behind one trait.
//! - **The detector** (`detector`): LeoCC's 10 ms ICMP probe to the PoP on its own queue,
//!   with jitter and loss fitted to real recordings, fed to the daemon's own detection core
//!   (`leocc_probe::detect`); its events carry their confidence into the core. With data
//!   flowing down (the default) an event reaches the sender on the next ACK, confidence as a
//!   grade, as the TCP-option carrier does. `probe_trace` drives the same stream and detector
//!   alone over a trace, without flows (`leocc probe simulate`, clean by default).
//! - **Events** (`event`): one binary heap ordered by (time, sequence number); all randomness
//!   from one seed (`rng`). The same scenario and seed give the same result, bit for bit.
//!
//! Entry point: [`run`] (or [`run_with_progress`]) on a [`Scenario`] returns a [`RunResult`]
//! that serialises to the JSON line DESIGN.md specifies.

#![warn(missing_docs)]

pub mod cc;
pub mod detector;
pub mod event;
pub mod metrics;
pub mod probe_trace;
pub use leocc_trace::qdisc::{Qdisc, QDISC_HELP, QDISC_NAMES};
pub use leocc_base::rng;
pub mod sim;
pub mod tcp;

use std::sync::Arc;

use leocc_trace::{Capacity, DelaySeries, Dir, DirTrace, Loss, Meta, Span, Trace};

pub use metrics::{FlowResult, RunResult, TsRow};
pub use sim::World;

/// Default bottleneck queue: 500 packets, as the LeoCC authors' replayer uses.
pub const DEFAULT_QUEUE_PACKETS: u64 = 500;
/// Parses a send-buffer size: bytes (`4194304`), or with a unit `KiB`, `MiB`, `kB`, `MB`
/// (`4MiB`, `64MiB`).
pub fn parse_sndbuf(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult = match unit.trim() {
        "" | "b" | "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "kB" => 1e3,
        "MB" => 1e6,
        u => return Err(format!("send buffer '{s}': unknown unit '{u}' (bytes, KiB, MiB, kB or MB)")),
    };
    let v: f64 = num.parse().map_err(|_| format!("send buffer '{s}': expected a size such as 4MiB or 4194304"))?;
    let bytes = (v * mult).round();
    if !(bytes >= MIN_SNDBUF_BYTES as f64 && bytes <= (1u64 << 40) as f64) {
        return Err(format!("send buffer '{s}' must be between {MIN_SNDBUF_BYTES} bytes and 1 TiB"));
    }
    Ok(bytes as u64)
}

/// The smallest send buffer Linux allows (SOCK_MIN_SNDBUF: two 2 kB skbs' truesize, rounded up).
pub const MIN_SNDBUF_BYTES: u64 = 4608;
/// Default delayed-ACK threshold: every 2 full segments (RFC 1122 / Linux).
pub const DEFAULT_DELACK_SEGS: u32 = 2;
/// Default delayed-ACK timeout: Linux's minimum ATO, 40 ms (TCP_DELACK_MIN).
pub const DEFAULT_DELACK_TIMEOUT_US: u64 = 40_000;

/// Errors from building or running a scenario.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A bad option or scenario.
    #[error("{0}")]
    Config(String),
}

/// Size limit of a bottleneck queue (what the queue discipline enforces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    /// At most this many packets.
    Packets(u64),
    /// At most this many bytes.
    Bytes(u64),
    /// This many µs of the trace's mean capacity in the data direction; resolved to bytes
    /// with [`QueueLimit::resolve`] before a run (the simulator does it in `World::new`).
    Time(u64),
}

/// The grammar of a queue limit, for help texts and errors.
pub const QUEUE_GRAMMAR: &str = "packets (500, 500p), bytes (750000b, 750kB, 1MB) or time at the trace's mean capacity (150ms)";

/// Bytes one packet occupies when a packet limit is expressed in bytes or time.
pub const QUEUE_PACKET_BYTES: u64 = 1500;

impl std::str::FromStr for QueueLimit {
    type Err = String;
    /// `500` or `500p` (packets), `750000b` / `750kB` / `1MB` (bytes), `150ms` (time).
    fn from_str(s: &str) -> Result<QueueLimit, String> {
        let t = s.trim();
        let bad = || format!("bad queue size '{s}': expected {QUEUE_GRAMMAR}");
        if let Some(n) = t.strip_suffix("ms") {
            let ms: f64 = n.trim().parse().map_err(|_| bad())?;
            if !ms.is_finite() || ms <= 0.0 {
                return Err(format!("bad queue size '{s}': must be positive"));
            }
            if ms > 1e7 {
                return Err(format!("bad queue size '{s}': too large"));
            }
            let us = (ms * 1000.0).round() as u64;
            return if us == 0 { Err(format!("bad queue size '{s}': must be at least 1 µs")) } else { Ok(QueueLimit::Time(us)) };
        }
        let (num, mult, bytes) = if let Some(n) = t.strip_suffix("MB") {
            (n, 1_000_000, true)
        } else if let Some(n) = t.strip_suffix("kB") {
            (n, 1_000, true)
        } else if let Some(n) = t.strip_suffix('b').or_else(|| t.strip_suffix('B')) {
            (n, 1, true)
        } else {
            (t.strip_suffix('p').unwrap_or(t), 1, false)
        };
        let v: u64 = num.trim().parse().map_err(|_| bad())?;
        if v == 0 {
            return Err(format!("bad queue size '{s}': must be positive"));
        }
        if bytes {
            v.checked_mul(mult).map(QueueLimit::Bytes).ok_or_else(|| format!("bad queue size '{s}': too large"))
        } else {
            Ok(QueueLimit::Packets(v))
        }
    }
}

impl std::fmt::Display for QueueLimit {
    /// The canonical form, which parses back to the same limit: `500`, `750000b`, `150ms`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            QueueLimit::Packets(n) => write!(f, "{n}"),
            QueueLimit::Bytes(b) => write!(f, "{b}b"),
            QueueLimit::Time(us) if us % 1000 == 0 => write!(f, "{}ms", us / 1000),
            QueueLimit::Time(us) => write!(f, "{}ms", us as f64 / 1000.0),
        }
    }
}

/// A queue limit as given and as it applies to one trace and direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResolvedQueue {
    /// As given (`Time` stays `Time` here).
    pub given: QueueLimit,
    /// What the hops enforce: `Packets` or `Bytes`, never `Time`.
    pub limit: QueueLimit,
    /// The limit in bytes (packets count `QUEUE_PACKET_BYTES` each).
    pub bytes: u64,
    /// How long the limit takes to drain at the mean capacity, ms.
    pub ms: f64,
    /// The mean capacity of the data direction over one period of the trace, bit/s.
    pub mean_capacity_bps: f64,
}

impl QueueLimit {
    /// Resolves the limit for `trace` with data flowing in `dir`: a time becomes the bytes the
    /// satellite link's mean capacity in that direction (over one period of the trace) carries
    /// in that time, at least one packet. Packets and bytes stay as they are.
    pub fn resolve(self, trace: &Trace, dir: Dir) -> Result<ResolvedQueue, String> {
        let link = trace.link(dir);
        let mean = link.mean_capacity_bps(0, link.period_us().max(1));
        self.resolve_at(mean)
    }

    /// As [`QueueLimit::resolve`], given the mean capacity in bit/s.
    pub fn resolve_at(self, mean_capacity_bps: f64) -> Result<ResolvedQueue, String> {
        let bytes_per_ms = mean_capacity_bps / 8.0 / 1000.0;
        let (limit, bytes) = match self {
            QueueLimit::Packets(n) => (self, n.saturating_mul(QUEUE_PACKET_BYTES)),
            QueueLimit::Bytes(b) => (self, b),
            QueueLimit::Time(us) => {
                if !(mean_capacity_bps.is_finite() && mean_capacity_bps > 0.0) {
                    return Err(format!("queue {self}: the trace offers no capacity in the data direction to size it by"));
                }
                let b = ((bytes_per_ms * us as f64 / 1000.0).round() as u64).max(QUEUE_PACKET_BYTES);
                (QueueLimit::Bytes(b), b)
            }
        };
        let ms = if bytes_per_ms > 0.0 && bytes_per_ms.is_finite() { bytes as f64 / bytes_per_ms } else { 0.0 };
        Ok(ResolvedQueue { given: self, limit, bytes, ms, mean_capacity_bps })
    }
}

/// One flow: its congestion control and when it sends.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    /// Congestion control name.
    pub cc: String,
    /// Start, µs.
    pub start_us: u64,
    /// Stop, µs (clipped to the run's duration).
    pub stop_us: u64,
}

/// The grammar of `--flows`, for help texts.
pub const FLOWS_GRAMMAR: &str = "SPEC = N | ITEM[,ITEM...]; ITEM = [K*]CC[@START[-STOP]] (seconds). \
N: N flows of each --cc, all from 0 to the end. Examples: 'cubic@0-60,leocc@20-80', '2*bbr,cubic@10'.";

/// Parse `--flows`. A bare number N gives N flows of `cc` over the whole run; otherwise items
/// `[K*]CC[@START[-STOP]]` separated by commas (times in seconds; STOP defaults to the end).
pub fn parse_flows(spec: &str, cc: &str, duration_us: u64) -> Result<Vec<FlowSpec>, String> {
    let spec = spec.trim();
    if let Ok(n) = spec.parse::<u32>() {
        if n == 0 || n > 1000 {
            return Err(format!("--flows {n}: need 1 to 1000 flows"));
        }
        return Ok((0..n).map(|_| FlowSpec { cc: cc.to_string(), start_us: 0, stop_us: duration_us }).collect());
    }
    let mut out = Vec::new();
    for item in spec.split(',') {
        let item = item.trim();
        let err = |why: &str| format!("--flows item '{item}': {why} ({FLOWS_GRAMMAR})");
        let (count, rest) = match item.split_once('*') {
            Some((k, r)) => (k.trim().parse::<u32>().map_err(|_| err("bad count before '*'"))?, r),
            None => (1, item),
        };
        let (name, times) = match rest.split_once('@') {
            Some((n, t)) => (n.trim(), Some(t)),
            None => (rest.trim(), None),
        };
        if !cc::known(name) {
            return Err(err(&cc::unknown_cc(name)));
        }
        let secs = |s: &str| -> Result<u64, String> {
            let v: f64 = s.trim().parse().map_err(|_| err(&format!("'{s}' is not a number of seconds")))?;
            if !(0.0..=1e7).contains(&v) {
                return Err(err("time out of range"));
            }
            Ok((v * 1e6).round() as u64)
        };
        let (start, stop) = match times {
            None => (0, duration_us),
            Some(t) => match t.split_once('-') {
                Some((a, b)) => (secs(a)?, secs(b)?),
                None => (secs(t)?, duration_us),
            },
        };
        if stop <= start {
            return Err(err("stop must be after start"));
        }
        if start >= duration_us {
            return Err(err("starts after the end of the run (see --duration)"));
        }
        for _ in 0..count.max(1) {
            out.push(FlowSpec { cc: name.to_string(), start_us: start, stop_us: stop.min(duration_us) });
        }
    }
    if out.is_empty() || out.len() > 1000 {
        return Err("--flows: need 1 to 1000 flows".into());
    }
    Ok(out)
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The path.
    pub trace: Arc<Trace>,
    /// Its name in the results (usually the file path).
    pub trace_name: String,
    /// The flows.
    pub flows: Vec<FlowSpec>,
    /// Simulated time, µs.
    pub duration_us: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Queue limit of every capacity hop.
    pub queue: QueueLimit,
    /// Queue discipline of every capacity hop (drop-tail by default).
    pub qdisc: Qdisc,
    /// Random loss added on the data direction's satellite hop (on top of the trace's).
    pub loss: f64,
    /// Each sender's send buffer, bytes of skb memory: Linux's `tcp_wmem[2]` (4 MiB by default,
    /// [`tcp::SNDBUF_BYTES`]). On a path whose BDP approaches it, it, not the congestion
    /// control, bounds the data in flight (`leocc sim --sndbuf`).
    pub sndbuf_bytes: u64,
    /// Direction of the data: Down (server to satellite user, the default) or Up.
    pub data_dir: Dir,
    /// Receiver ACKs every this many in-order segments.
    pub delack_segs: u32,
    /// ... or after this long.
    pub delack_timeout_us: u64,
    /// The receiving host merges up to this many in-order segments that reach it in the same
    /// instant into one skb (Linux GRO, as the emulator's output coalescer hands them to the
    /// kernel) and ACKs per skb: one ACK for a burst one delivery opportunity released, not
    /// one per `delack_segs`. 1 = per segment.
    pub gro_segs: u32,
    /// Run the detector's probes.
    pub detector: bool,
    /// Probe interval.
    pub probe_interval_us: u64,
    /// Response interval that means a reconfiguration (the detector's Δoutage).
    pub outage_threshold_us: u64,
    /// How long the detector's daemon has been probing when the run starts, µs (rounded up to
    /// whole loops of the trace): its statistics and learned schedule are warm, as on a host
    /// where the daemon runs all the time (`leocc sim --detector-warmup`).
    pub detector_warmup_us: u64,
    /// How the detector judges a long response interval: the daemon's default evidence scoring,
    /// or the paper's rule (every RI above Δoutage is an event, full confidence).
    pub detector_scoring: leocc_probe::detect::Scoring,
    /// Noise on the probe stream (jitter and loss fitted to real recordings; `leocc sim
    /// --probe-noise`).
    pub probe_noise: detector::ProbeNoiseModel,
    /// The detector also declares a false event every this many µs (0: none): what a noisy
    /// detector costs a flow (`leocc sim --false-events MS`).
    pub false_event_interval_us: u64,
    /// Feed the trace's ground-truth reconfigurations instead of detected ones.
    pub oracle_reconfig: bool,
    /// Include the terrestrial segment when the trace has one.
    pub terrestrial: bool,
    /// Collect the per-100 ms time series.
    pub timeseries: bool,
    /// Controller parameter settings: (control name, `NAME=VALUE`), applied to every flow of
    /// that control (`leocc sim --param leocc.delta_rtt_us=0`).
    pub cc_params: Vec<(String, String)>,
}

impl Scenario {
    /// A scenario with the defaults: one flow of `cc` over the whole run.
    pub fn new(trace: Arc<Trace>, trace_name: &str, cc: &str, duration_us: u64) -> Scenario {
        Scenario {
            trace,
            trace_name: trace_name.to_string(),
            flows: vec![FlowSpec { cc: cc.to_string(), start_us: 0, stop_us: duration_us }],
            duration_us,
            seed: 1,
            queue: QueueLimit::Packets(DEFAULT_QUEUE_PACKETS),
            qdisc: Qdisc::DropTail,
            loss: 0.0,
            sndbuf_bytes: tcp::SNDBUF_BYTES,
            data_dir: Dir::Down,
            delack_segs: DEFAULT_DELACK_SEGS,
            delack_timeout_us: DEFAULT_DELACK_TIMEOUT_US,
            gro_segs: tcp::GRO_MAX_SEGS,
            detector: true,
            probe_interval_us: detector::PROBE_INTERVAL_US,
            outage_threshold_us: detector::OUTAGE_THRESHOLD_US,
            probe_noise: detector::ProbeNoiseModel::default(),
            detector_warmup_us: detector::DEFAULT_WARMUP_US,
            detector_scoring: leocc_probe::detect::Scoring::Evidence,
            false_event_interval_us: 0,
            oracle_reconfig: false,
            terrestrial: true,
            timeseries: false,
            cc_params: Vec::new(),
        }
    }

    fn validate(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Config(m));
        if self.duration_us == 0 {
            return bad("duration must be positive".into());
        }
        if !(0.0..1.0).contains(&self.loss) {
            return bad(format!("loss rate {} must be in [0, 1)", self.loss));
        }
        if self.sndbuf_bytes < MIN_SNDBUF_BYTES {
            return bad(format!("send buffer {} bytes is below Linux's minimum of {MIN_SNDBUF_BYTES}", self.sndbuf_bytes));
        }
        if self.flows.is_empty() {
            return bad("no flows".into());
        }
        if self.flows.len() > u16::MAX as usize {
            return bad("too many flows".into());
        }
        if self.probe_interval_us == 0 {
            return bad("probe interval must be positive".into());
        }
        Ok(())
    }
}

/// Run a scenario to the end.
pub fn run(sc: &Scenario) -> Result<RunResult, SimError> {
    run_with_progress(sc, &mut |_| {})
}

/// Run a scenario, calling `progress(simulated µs)` about once per simulated second.
pub fn run_with_progress(sc: &Scenario, progress: &mut dyn FnMut(u64)) -> Result<RunResult, SimError> {
    sc.validate()?;
    let mut w = World::new(sc)?;
    w.run(progress);
    Ok(w.result(sc))
}

/// A synthetic trace for tests and benchmarks, built through `leocc-trace`'s types: constant
/// capacity `mbps` in both directions (1500-byte opportunities spread evenly, µs resolution),
/// constant one-way delay, and optional outages (start, length) in µs during which the
/// satellite offers no opportunity; each outage is also a ground-truth reconfiguration.
pub fn constant_trace(mbps: f64, one_way_delay_us: u64, period_us: u64, outages: &[(u64, u64)]) -> Trace {
    let per_opp_us = 1500.0 * 8.0 / mbps; // µs between opportunities
    let mut times = Vec::new();
    let mut k = 0u64;
    loop {
        let t = (k as f64 * per_opp_us).round() as u64;
        if t >= period_us {
            break;
        }
        if !outages.iter().any(|&(s, l)| t >= s && t < s + l) {
            times.push(t);
        }
        k += 1;
    }
    let cap = Capacity::new(times, Some(period_us)).expect("sorted times within the period");
    let dir = DirTrace { capacity: Some(cap), delay: Some(DelaySeries::constant(one_way_delay_us)), loss: Loss::Constant(0.0) };
    Trace {
        meta: Meta { name: format!("constant-{mbps}mbps"), resolution_us: 1, ..Meta::default() },
        up: dir.clone(),
        down: dir,
        reconfigurations: outages.iter().map(|&(s, _)| s).collect(),
        outages: outages.iter().map(|&(s, l)| Span { start_us: s, len_us: l }).collect(),
        terrestrial: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_grammar() {
        let f = parse_flows("cubic@0-60,2*leocc@20", "x", 100_000_000).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(f[0], FlowSpec { cc: "cubic".into(), start_us: 0, stop_us: 60_000_000 });
        assert_eq!(f[2], FlowSpec { cc: "leocc".into(), start_us: 20_000_000, stop_us: 100_000_000 });
        assert_eq!(parse_flows("3", "bbr", 5).unwrap().len(), 3);
        assert!(parse_flows("foo@1", "x", 10).unwrap_err().contains("unknown congestion control"));
        assert!(parse_flows("cubic@5-2", "x", 10_000_000).unwrap_err().contains("stop must be after start"));
        assert!(parse_flows("cubic@x", "x", 10).is_err());
    }

    #[test]
    fn queue_limits_parse() {
        assert_eq!("500".parse::<QueueLimit>().unwrap(), QueueLimit::Packets(500));
        assert_eq!("750kB".parse::<QueueLimit>().unwrap(), QueueLimit::Bytes(750_000));
        assert_eq!("1MB".parse::<QueueLimit>().unwrap(), QueueLimit::Bytes(1_000_000));
        assert_eq!(parse_sndbuf("4MiB"), Ok(4 << 20));
        assert_eq!(parse_sndbuf("4194304"), Ok(4 << 20));
        assert_eq!(parse_sndbuf("1.5MB"), Ok(1_500_000));
        assert!(parse_sndbuf("4GiB").is_err());
        assert!(parse_sndbuf("12").is_err());
        assert!(parse_sndbuf("MiB").is_err());
        assert!("0".parse::<QueueLimit>().is_err());
        assert!("lots".parse::<QueueLimit>().is_err());
        assert!("99999999999999999MB".parse::<QueueLimit>().is_err());
        assert_eq!("150ms".parse::<QueueLimit>().unwrap(), QueueLimit::Time(150_000));
        assert_eq!(" 12.5ms".parse::<QueueLimit>().unwrap(), QueueLimit::Time(12_500));
        assert!("0ms".parse::<QueueLimit>().is_err());
        assert!("-5ms".parse::<QueueLimit>().is_err());
        assert!("fastms".parse::<QueueLimit>().is_err());
        for q in ["500", "750000b", "150ms", "12.5ms"] {
            let l: QueueLimit = q.parse().unwrap();
            assert_eq!(l.to_string().parse::<QueueLimit>().unwrap(), l, "{q} round-trips");
        }
        assert_eq!("500p".parse::<QueueLimit>().unwrap().to_string(), "500");
    }

    #[test]
    fn a_time_queue_is_the_mean_capacity_times_the_time() {
        // 24 Mbit/s = 3000 bytes per ms: 150 ms = 450 kB; 500 packets = 750 kB = 250 ms.
        let t = constant_trace(24.0, 10_000, 1_000_000, &[]);
        let r = QueueLimit::Time(150_000).resolve(&t, Dir::Down).unwrap();
        assert_eq!(r.limit, QueueLimit::Bytes(450_000));
        assert_eq!(r.bytes, 450_000);
        assert!((r.ms - 150.0).abs() < 1e-9);
        let p = QueueLimit::Packets(500).resolve(&t, Dir::Down).unwrap();
        assert_eq!((p.limit, p.bytes), (QueueLimit::Packets(500), 750_000));
        assert!((p.ms - 250.0).abs() < 1e-9);
        // Outages count: 20 % of the period without capacity lowers the mean by 20 %.
        let t = constant_trace(24.0, 10_000, 1_000_000, &[(0, 200_000)]);
        let r = QueueLimit::Time(100_000).resolve(&t, Dir::Up).unwrap();
        assert_eq!(r.limit, QueueLimit::Bytes(240_000));
        // A tiny time still holds one packet; no capacity is an error.
        assert_eq!(QueueLimit::Time(1).resolve_at(1e6).unwrap().bytes, QUEUE_PACKET_BYTES);
        assert!(QueueLimit::Time(1000).resolve_at(0.0).is_err());
    }

    #[test]
    fn constant_trace_has_the_rate() {
        let t = constant_trace(24.0, 10_000, 1_000_000, &[]);
        let l = t.link(Dir::Down);
        assert!((l.mean_capacity_bps(0, 1_000_000) / 24e6 - 1.0).abs() < 0.01);
    }
}
