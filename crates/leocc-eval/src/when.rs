//! Trigger expressions over a trace instead of a live probe stream, for `leocc eval
//! --start-when`: the moments of a trace's loop at which an expression holds become the start
//! times of runs, to compare with random starts (seed 004's triggered-vs-random experiment).
//!
//! What a trace says at time t, sampled every [`STEP_US`] (the daemon's probe interval) over
//! one loop, as the daemon would have measured it with an idle link:
//! - `rtt`: the path's base RTT, one-way delays of both directions (and the terrestrial
//!   segment's, both ways) at t, ms; no queueing, as nothing else is sent;
//! - `ri`: time since the previous sample, ms: 10 normally, longer after an outage of the
//!   trace (no sample falls inside an outage: no probe would come back);
//! - `event`: 1 at the first sample at or after a ground-truth reconfiguration, `confidence`
//!   100 there (the trace's truth is certain), 0 elsewhere;
//! - `loss`: the trace's random-loss probability of the data (down) direction at t;
//! - `capacity`: the data direction's capacity over the next [`CAPACITY_WINDOW_US`], Mbit/s;
//! - `srtt` and `min_rtt`: the same as `rtt` (a single idle path has no smoothing to do).

use leocc_probe::trigger::{Expr, Sample};
use leocc_trace::{Dir, Trace, OPPORTUNITY_BYTES};

/// Sampling step over a trace: the daemon's default probe interval.
pub const STEP_US: u64 = 10_000;
/// Window of the `capacity` variable: 100 ms, long enough to hold several opportunities on
/// the slowest bundled links (about 1 Mbit/s = 8 opportunities per 100 ms).
pub const CAPACITY_WINDOW_US: u64 = 100_000;

/// The samples of one loop of `trace`.
pub fn samples(trace: &Trace) -> Vec<Sample> {
    let d = trace.duration_us();
    let (down, up) = (trace.delay(Dir::Down), trace.delay(Dir::Up));
    let terr = trace.terrestrial.as_ref();
    let cap = trace.capacity(Dir::Down);
    let mut reconf = trace.reconfigurations.iter().peekable();
    let mut out = Vec::new();
    let mut last: Option<u64> = None;
    let mut t = 0;
    while t < d {
        if trace.outages.iter().any(|o| o.start_us <= t && t < o.end_us()) {
            t += STEP_US;
            continue;
        }
        let mut s = Sample::at(t * 1000);
        let terr_us = terr.map_or(0, |g| 2 * g.delay.at(t));
        s.rtt = (down.at(t) + up.at(t) + terr_us) as f64 / 1000.0;
        s.srtt = s.rtt;
        s.min_rtt = s.rtt;
        s.ri = last.map_or(f64::NAN, |l| (t - l) as f64 / 1000.0);
        last = Some(t);
        if reconf.peek().is_some_and(|&&r| r <= t) {
            while reconf.peek().is_some_and(|&&r| r <= t) {
                reconf.next();
            }
            s.event = 1.0;
            s.confidence = 100.0;
        }
        s.loss = trace.dir(Dir::Down).loss.at(t);
        s.capacity = cap.map_or(f64::NAN, |c| {
            let times = c.times_us();
            let n = times.partition_point(|&x| x < t + CAPACITY_WINDOW_US) - times.partition_point(|&x| x < t);
            n as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / CAPACITY_WINDOW_US as f64
        });
        out.push(s);
        t += STEP_US;
    }
    out
}

/// Up to `n` start times (µs) within `[0, latest_us]` at which `expr` holds over `trace`, at
/// least `min_gap_us` apart (so that runs of that length do not start in each other).
pub fn start_times(trace: &Trace, expr: &mut Expr, n: usize, min_gap_us: u64, latest_us: u64) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for s in samples(trace) {
        let t = s.t_ns / 1000;
        // Every sample goes through, so the moving windows see the whole past.
        let hit = expr.eval(&s).is_some();
        if hit && t <= latest_us && out.last().is_none_or(|&l| t >= l + min_gap_us) && out.len() < n {
            out.push(t);
        }
    }
    out
}

/// `n` random start times within `[0, latest_us]` on the [`STEP_US`] grid, from `seed`
/// (splitmix64: reproducible, no dependency).
pub fn random_starts(n: usize, latest_us: u64, seed: u64) -> Vec<u64> {
    let mut x = seed;
    let steps = latest_us / STEP_US + 1;
    let mut out: Vec<u64> = (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) % steps * STEP_US
        })
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> Trace {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces/starlink-down-60s.trace");
        Trace::load(std::path::Path::new(p)).unwrap()
    }

    #[test]
    fn samples_show_the_traces_events_outages_and_capacity() {
        let t = trace();
        let s = samples(&t);
        let events: Vec<u64> = s.iter().filter(|x| x.event == 1.0).map(|x| x.t_ns / 1000).collect();
        assert_eq!(events.len(), t.reconfigurations.len());
        for (e, r) in events.iter().zip(&t.reconfigurations) {
            assert!(*e >= *r && *e < r + STEP_US + t.outages.iter().map(|o| o.len_us).max().unwrap_or(0), "{e} vs {r}");
        }
        // An outage shows as a long response interval.
        if let Some(o) = t.outages.first() {
            assert!(s.iter().any(|x| x.ri * 1000.0 >= o.len_us as f64), "no RI covers the outage {o:?}");
        }
        assert!(s.iter().all(|x| x.rtt > 0.0 && x.capacity >= 0.0));
        assert!(s.iter().map(|x| x.capacity).fold(0.0, f64::max) > 1.0);
    }

    #[test]
    fn starts_follow_the_expression_and_keep_their_distance() {
        let t = trace();
        let mut e: Expr = "event == 1".parse().unwrap();
        let st = start_times(&t, &mut e, 3, 15_000_000, 40_000_000);
        assert!(!st.is_empty());
        assert!(st.windows(2).all(|w| w[1] >= w[0] + 15_000_000));
        assert!(st.iter().all(|&x| x <= 40_000_000 && t.reconfigurations.iter().any(|&r| r <= x && x < r + 200_000)));
        let mut never: Expr = "rtt < 0".parse().unwrap();
        assert!(start_times(&t, &mut never, 3, 0, 60_000_000).is_empty());
        let r = random_starts(5, 40_000_000, 7);
        assert_eq!(r, random_starts(5, 40_000_000, 7));
        assert!(r.iter().all(|&x| x <= 40_000_000 && x % STEP_US == 0));
        assert_ne!(r, random_starts(5, 40_000_000, 8));
    }
}
