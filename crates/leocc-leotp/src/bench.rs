//! `leocc bench leotp`: how fast one mid-node forwards on one core. A producer, one mid-node
//! and a consumer run over loopback, each on its own thread; the consumer pulls `bulk` as
//! fast as the hop controllers allow, and the mid-node's forwarded bytes are divided by the
//! CPU time of its thread (not wall time: the three threads share the machine's cores).

use crate::consumer::{self, ConsumerConfig};
use crate::hopcc::HopCcConfig;
use crate::mid::{Mid, MidConfig};
use crate::producer::{Producer, BULK_NAME};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the benchmark measured.
#[derive(Debug, Clone)]
pub struct ForwardingBench {
    /// Wall time of the transfer, s.
    pub seconds: f64,
    /// Consumer goodput, Mbit/s.
    pub goodput_mbps: f64,
    /// Payload the mid-node forwarded, bytes.
    pub forwarded_bytes: u64,
    /// CPU the mid-node's thread used, s.
    pub mid_cpu_s: f64,
    /// Forwarded payload per CPU second of the mid-node, Mbit/s: its one-core forwarding speed.
    pub mbps_per_core: f64,
}

/// Runs the benchmark for `duration`.
pub fn mid_forwarding(duration: Duration) -> Result<ForwardingBench, String> {
    let lo: SocketAddr = "127.0.0.1:0".parse().expect("literal address");
    let stop = Arc::new(AtomicBool::new(false));
    let mut p = Producer::bind(lo, &[])?;
    let mut m = Mid::bind(MidConfig::new(lo, p.local_addr()))?;
    let first_hop = m.local_addr();
    let (s1, s2) = (stop.clone(), stop.clone());
    let pt = std::thread::spawn(move || p.run(&s1));
    let mt = std::thread::spawn(move || {
        m.run(&s2);
        m
    });
    let cfg = ConsumerConfig { first_hop, name: BULK_NAME.into(), output: None, duration: Some(duration), cc: HopCcConfig::default(), innet_retx: true, interval: Duration::from_secs(1), progress: false };
    let r = consumer::run(&cfg, &AtomicBool::new(false));
    stop.store(true, Ordering::Relaxed);
    let m = mt.join().map_err(|_| "mid-node thread panicked".to_string())?;
    pt.join().map_err(|_| "producer thread panicked".to_string())?;
    let r = r?;
    let mid_cpu_s = m.cpu_us as f64 / 1e6;
    Ok(ForwardingBench {
        seconds: r.seconds,
        goodput_mbps: r.bits_per_second() / 1e6,
        forwarded_bytes: m.forwarded_bytes,
        mid_cpu_s,
        mbps_per_core: if mid_cpu_s > 0.0 { m.forwarded_bytes as f64 * 8.0 / mid_cpu_s / 1e6 } else { 0.0 },
    })
}
