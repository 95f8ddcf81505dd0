//! ISL-chain profiles: one trace per hop of a multi-hop LEO path, for the emulator's chain
//! (`leocc chain`) and LEOTP's evaluation. Hop 0 is the ground-to-satellite link of the user
//! terminal, hops 1..H−2 are inter-satellite links, hop H−1 is the satellite-to-ground-station
//! link; the server sits at the ground station.
//!
//! Geometry sets the delays: a shell at `ALTITUDE_KM`; a ground link's slant range follows
//! the serving satellite's elevation, which rises and falls over each serving interval and
//! jumps at a handover (every `HANDOVER_PERIOD_MS`, with an outage as Starlink's
//! reconfigurations, seed 000); an ISL's length drifts slowly around the in-plane spacing of a
//! 22-satellite plane. Capacity fluctuates on every hop: a log-normal level per second times
//! a smooth variation, each hop independent, so the bottleneck moves along the chain. Traces
//! are symmetric (the uplink mirrors the downlink).

use crate::gen::{opportunities, smooth};
use crate::model::{DelaySeries, DirTrace, Loss, Measured, Meta, Span, Trace};
use leocc_base::rng::Rng;

/// Shell altitude, km (Starlink's 550 km shell).
pub const ALTITUDE_KM: f64 = 550.0;
/// Earth radius, km.
const EARTH_KM: f64 = 6371.0;
/// Speed of light in vacuum (ISLs) and, to first order, in air (ground links), km/ms.
const C_KM_PER_MS: f64 = 299.792;
/// Lowest elevation a terminal serves from, degrees (Starlink's minimum, 25°).
const MIN_ELEVATION_DEG: f64 = 25.0;
/// Satellites per orbital plane; in-plane ISL length is the plane's circumference over this.
const SATS_PER_PLANE: f64 = 22.0;
/// ISL length varies by ± this fraction around the in-plane spacing (cross-plane links
/// change length with latitude).
const ISL_LENGTH_SPREAD: f64 = 0.25;
/// Serving-satellite reassignment period of a ground link, ms (Starlink: 15 s).
pub const HANDOVER_PERIOD_MS: u64 = 15_000;
/// Outage at a ground-link handover, ms (seed 000: 45-130 ms).
const HANDOVER_OUTAGE_MS: (f64, f64) = (45.0, 130.0);
/// Log-sd of a hop's per-second capacity level.
const LEVEL_LOG_SD: f64 = 0.3;
/// Capacity level changes this often, ms.
const LEVEL_PERIOD_MS: usize = 1000;
/// Sd of the smooth capacity variation within a level.
const WIGGLE_SD: f64 = 0.1;
/// Delay series resolution, µs (LeoReplayer's 10 ms).
const DELAY_INTERVAL_US: u64 = 10_000;
/// Fewest and most hops of a chain (the seed evaluates 3-10).
pub const HOPS: (usize, usize) = (2, 16);

/// What chain to generate.
#[derive(Debug, Clone, Copy)]
pub struct ChainSpec {
    /// Number of hops (links); nodes = hops + 1.
    pub hops: usize,
    /// Trace length, ms.
    pub duration_ms: u64,
    /// Median capacity of every hop, Mbit/s.
    pub median_mbps: f64,
    /// Random loss on every hop.
    pub loss: f64,
    /// Seed.
    pub seed: u64,
}

/// Slant range from a ground point to a satellite at `elevation_deg`, km.
pub fn slant_range_km(elevation_deg: f64) -> f64 {
    let e = elevation_deg.to_radians();
    let r = EARTH_KM + ALTITUDE_KM;
    (r * r - (EARTH_KM * e.cos()).powi(2)).sqrt() - EARTH_KM * e.sin()
}

/// Generates one trace per hop. Errors name the bad parameter.
pub fn chain(spec: &ChainSpec) -> Result<Vec<Trace>, String> {
    if !(HOPS.0..=HOPS.1).contains(&spec.hops) {
        return Err(format!("hops {}: must be {}..={}", spec.hops, HOPS.0, HOPS.1));
    }
    if !(1000..=crate::gen::MAX_DURATION_MS).contains(&spec.duration_ms) {
        return Err(format!("duration {} ms: must be 1 s..{} s", spec.duration_ms, crate::gen::MAX_DURATION_MS / 1000));
    }
    if !(spec.median_mbps.is_finite() && spec.median_mbps > 0.1 && spec.median_mbps <= 10_000.0) {
        return Err(format!("capacity {} Mbit/s: must be in (0.1, 10000]", spec.median_mbps));
    }
    if !(0.0..1.0).contains(&spec.loss) {
        return Err(format!("loss {}: must be in [0, 1)", spec.loss));
    }
    (0..spec.hops).map(|i| hop(spec, i)).collect()
}

fn hop(spec: &ChainSpec, i: usize) -> Result<Trace, String> {
    let mut rng = Rng::derive(spec.seed, i as u64 + 1);
    let n = spec.duration_ms as usize;
    let ground = i == 0 || i + 1 == spec.hops;
    let mut outages = Vec::new();
    let mut delay_ms = vec![0.0; n];
    if ground {
        // Each serving interval: elevation follows a pass from `a` up to a peak and down.
        let phase = rng.below(HANDOVER_PERIOD_MS);
        let mut start = 0usize;
        let mut next = phase as usize;
        while start < n {
            let end = next.min(n);
            let (lo, peak) = (rng.range(MIN_ELEVATION_DEG, 50.0), rng.range(50.0, 90.0));
            let len = (end - start).max(1) as f64;
            for (k, d) in delay_ms[start..end].iter_mut().enumerate() {
                let x = k as f64 / len;
                let elev = lo + (peak - lo) * (std::f64::consts::PI * x).sin();
                *d = slant_range_km(elev) / C_KM_PER_MS;
            }
            if end < n && end > 0 {
                let len_ms = rng.range(HANDOVER_OUTAGE_MS.0, HANDOVER_OUTAGE_MS.1).round() as u64;
                if end as u64 + len_ms < spec.duration_ms {
                    outages.push(Span { start_us: end as u64 * 1000, len_us: len_ms * 1000 });
                }
            }
            start = end;
            next = end + HANDOVER_PERIOD_MS as usize;
        }
    } else {
        let spacing = 2.0 * std::f64::consts::PI * (EARTH_KM + ALTITUDE_KM) / SATS_PER_PLANE;
        let base = spacing * (1.0 + ISL_LENGTH_SPREAD * (2.0 * rng.unit() - 1.0));
        let drift = smooth(&mut rng, spec.duration_ms, 0.05);
        for (d, w) in delay_ms.iter_mut().zip(&drift) {
            *d = base * w / C_KM_PER_MS;
        }
    }
    let wiggle = smooth(&mut rng, spec.duration_ms, WIGGLE_SD);
    let mut rate = vec![0.0; n];
    for (k, chunk) in rate.chunks_mut(LEVEL_PERIOD_MS).enumerate() {
        let level = spec.median_mbps * (LEVEL_LOG_SD * rng.normal()).exp();
        for (j, r) in chunk.iter_mut().enumerate() {
            *r = level * wiggle[k * LEVEL_PERIOD_MS + j];
        }
    }
    let per = (DELAY_INTERVAL_US / 1000) as usize;
    let values: Vec<u64> = delay_ms.chunks(per).map(|c| (leocc_base::metrics::mean(c).unwrap_or(0.0) * 1000.0).round() as u64).collect();
    let kind = if i == 0 { "terminal-satellite" } else if ground { "satellite-ground station" } else { "inter-satellite" };
    let t = Trace {
        meta: Meta {
            name: format!("isl-chain-{}h-hop{i}", spec.hops),
            source: format!("leocc isl chain: hops {} duration {} ms median {} Mbit/s loss {} seed {}", spec.hops, spec.duration_ms, spec.median_mbps, spec.loss, spec.seed),
            licence: "MIT".into(),
            direction: Measured::Down,
            resolution_us: 1000,
            notes: format!("hop {i} of {} ({kind}); the uplink mirrors the downlink", spec.hops),
            pop_rtt_us: None,
        },
        up: DirTrace::default(),
        down: DirTrace { capacity: Some(opportunities(&rate, &outages)), delay: Some(DelaySeries { interval_us: DELAY_INTERVAL_US, values_us: values.into() }), loss: Loss::Constant(spec.loss) },
        reconfigurations: outages.iter().map(|o| o.start_us).collect(),
        outages,
        terrestrial: None,
    };
    t.validate()?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Dir;

    #[test]
    fn geometry_gives_the_expected_delays() {
        assert!((slant_range_km(90.0) - ALTITUDE_KM).abs() < 1e-6);
        let low = slant_range_km(MIN_ELEVATION_DEG);
        assert!((1000.0..1200.0).contains(&low), "{low}");
    }

    #[test]
    fn a_chain_has_ground_links_at_both_ends_and_isls_between() {
        let spec = ChainSpec { hops: 6, duration_ms: 40_000, median_mbps: 40.0, loss: 0.01, seed: 3 };
        let hops = chain(&spec).unwrap();
        assert_eq!(hops.len(), 6);
        for (i, t) in hops.iter().enumerate() {
            let l = t.link(Dir::Down);
            let d: Vec<u64> = (0..40).map(|s| l.delay_us(s * 1_000_000)).collect();
            let ground = i == 0 || i == 5;
            let (lo, hi) = if ground { (1_800, 3_800) } else { (4_500, 9_500) };
            assert!(d.iter().all(|&x| (lo..=hi).contains(&x)), "hop {i}: {d:?}");
            // 40 s crosses at least two handovers on ground links, none on ISLs.
            assert_eq!(t.outages.len() >= 2, ground, "hop {i}: {:?}", t.outages);
            let mbps = l.mean_capacity_bps(0, 40_000_000) / 1e6;
            assert!((20.0..80.0).contains(&mbps), "hop {i}: {mbps}");
            assert!((l.loss_prob(1000) - 0.01).abs() < 1e-12);
        }
        // Same seed, same chain; another seed, another chain.
        assert_eq!(chain(&spec).unwrap(), hops);
        assert_ne!(chain(&ChainSpec { seed: 4, ..spec }).unwrap(), hops);
        assert!(chain(&ChainSpec { hops: 1, ..spec }).unwrap_err().contains("hops"));
        assert!(chain(&ChainSpec { loss: 1.0, ..spec }).unwrap_err().contains("loss"));
    }
}
