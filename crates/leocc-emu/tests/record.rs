//! Root-only end-to-end test of the recorder: record through the emulator replaying a known
//! trace and compare the recording with the original (LeoReplayer's record-and-replay loop).

mod common;

use common::*;
use leocc_emu::emulator::Side;
use leocc_emu::record::{self, RecordConfig};
use leocc_emu::{Emulator, SERVER_ADDR};
use leocc_trace::{DelaySeries, Dir, LinkModel};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Capacity steps (Mbit/s), 200 ms each, a 2 s period.
const STEPS_MBPS: [f64; 10] = [20.0, 60.0, 35.0, 80.0, 45.0, 25.0, 70.0, 50.0, 30.0, 65.0];
const STEP_US: u64 = 200_000;
const BIN_US: u64 = 100_000;
const PORT: u16 = 9400;

fn known_trace() -> leocc_trace::Trace {
    let mut times = Vec::new();
    for (k, r) in STEPS_MBPS.iter().enumerate() {
        let gap = 12_000.0 / r; // µs per 1500-byte opportunity
        let n = (STEP_US as f64 / gap) as u64;
        times.extend((1..=n).map(|i| k as u64 * STEP_US + (i as f64 * gap) as u64));
    }
    // One-way delay 20, 30, 40 ms, changing every 500 ms.
    let delay: Vec<u64> = (0..200u64).map(|i| 20_000 + 10_000 * ((i / 50) % 3)).collect();
    trace_with(times, 2_000_000, DelaySeries { interval_us: 10_000, values_us: delay.into() })
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Original opportunities per 100 ms bin starting at emulator time `start`.
fn original_bins(m: &LinkModel, start: u64, n: usize) -> Vec<f64> {
    (0..n as u64).map(|k| (m.count_before(start + (k + 1) * BIN_US) - m.count_before(start + k * BIN_US)) as f64).collect()
}

#[test]
fn a_downlink_recording_through_the_emulator_matches_the_replayed_trace() {
    if can_run("record_roundtrip_down", &[]) {
        roundtrip(Dir::Down, PORT);
    }
}

#[test]
fn an_uplink_recording_through_the_emulator_matches_the_replayed_trace() {
    if can_run("record_roundtrip_up", &[]) {
        roundtrip(Dir::Up, PORT + 1);
    }
}

fn roundtrip(dir: Dir, port: u16) {
    let _g = serial();
    let trace = known_trace();
    let link = trace.link(dir);
    let emu = Emulator::start(&config(&trace)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        emu.spawn_in(Side::Server, "record-server", move || record::serve(port, true, &stop)).unwrap()
    };
    std::thread::sleep(Duration::from_millis(200));
    let cfg = RecordConfig {
        server: SocketAddr::new(SERVER_ADDR.into(), port),
        duration: Duration::from_secs(6),
        dir,
        rate_bps: 120_000_000,
        ping: None,
        name: "roundtrip".into(),
    };
    let t0 = emu.clock().t0_mono_ns();
    let rec = emu.spawn_in(Side::Client, "recorder", move || record::record(&cfg)).unwrap().join().unwrap().unwrap().unwrap();
    server.join().unwrap().unwrap().unwrap();
    stop_and_check(emu);

    // Trace time 0 of the recording is this emulator time (same monotonic clock).
    let offset_us = (rec.origin_mono_ns - t0) / 1000;
    let cap = rec.trace.capacity(dir).expect("recorded capacity");
    let n_bins = ((cap.period_us() - 500_000) / BIN_US) as usize;
    let mut recorded = vec![0.0; n_bins];
    for &t in cap.times_us() {
        if let Some(b) = recorded.get_mut((t / BIN_US) as usize) {
            *b += 1.0;
        }
    }
    // Align within +-30 ms (the recorder's delay correction is an estimate), as one would
    // align any recording with its reference.
    let (lag, corr) = (0..=60u64)
        .map(|l| {
            let start = (offset_us + l * 1000).saturating_sub(30_000);
            (l as i64 - 30, correlation(&recorded[1..], &original_bins(&link, start + BIN_US, n_bins - 1)))
        })
        .fold((0, f64::MIN), |best, x| if x.1 > best.1 { x } else { best });
    let total_orig: f64 = original_bins(&link, offset_us, n_bins).iter().sum();
    let total_rec: f64 = recorded.iter().sum();
    eprintln!("{}: capacity: correlation {corr:.3} at lag {lag} ms; recorded {total_rec} vs original {total_orig} opportunities", dir.as_str());

    let delay = rec.trace.delay(dir);
    let mut errs: Vec<f64> = (0..delay.values_us.len() as u64)
        .map(|i| {
            let t = i * delay.interval_us;
            (delay.at(t) as f64 - link.delay_us(offset_us + t) as f64).abs() / 1000.0
        })
        .collect();
    errs.sort_by(f64::total_cmp);
    let median = errs[errs.len() / 2];
    eprintln!("delay: median error {median:.3} ms over {} intervals; pings {}/{}", errs.len(), rec.pings_answered, rec.pings_sent);
    assert!(corr >= 0.95, "per-100 ms capacity correlation {corr:.3} < 0.95");
    assert!((total_rec / total_orig - 1.0).abs() < 0.03, "recorded {total_rec} vs {total_orig} opportunities");
    assert!(median < 1.0, "median one-way delay error {median:.3} ms >= 1 ms");
}
