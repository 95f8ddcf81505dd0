//! Starting a trace at another point of its loop: `rotate(trace, t)` is the same trace as
//! replayed from `t` (every engine loops a trace, so the rotated trace is that replay, wrapped
//! round). `leocc eval --start-when` uses it to start runs at the moments an expression picks.

use crate::model::{Capacity, DelaySeries, DirTrace, Loss, Segment, Span, Trace};
use std::sync::Arc;

fn rotate_times(c: &Capacity, off_us: u64) -> Capacity {
    let p = c.period_us();
    let off = off_us % p;
    let mut t: Vec<u64> = c.times_us().iter().map(|&t| if t >= off { t - off } else { t + p - off }).collect();
    t.sort_unstable();
    // The times stay within [0, period) and sorted, so this cannot fail; keep the original if
    // it somehow did rather than panic.
    Capacity::new(t, Some(p)).unwrap_or_else(|_| c.clone())
}

fn rotate_slice<T: Copy>(v: &[T], by: usize) -> Arc<[T]> {
    if v.is_empty() {
        return v.into();
    }
    let by = by % v.len();
    v[by..].iter().chain(&v[..by]).copied().collect::<Vec<_>>().into()
}

fn rotate_delay(d: &DelaySeries, off_us: u64) -> DelaySeries {
    let by = (off_us / d.interval_us.max(1)) as usize;
    DelaySeries { interval_us: d.interval_us, values_us: rotate_slice(&d.values_us, by) }
}

fn rotate_loss(l: &Loss, off_us: u64) -> Loss {
    match l {
        Loss::Constant(p) => Loss::Constant(*p),
        Loss::Series { interval_us, values } => {
            Loss::Series { interval_us: *interval_us, values: rotate_slice(values, (off_us / (*interval_us).max(1)) as usize) }
        }
    }
}

fn rotate_dir(d: &DirTrace, off_us: u64) -> DirTrace {
    DirTrace {
        capacity: d.capacity.as_ref().map(|c| rotate_times(c, off_us)),
        delay: d.delay.as_ref().map(|x| rotate_delay(x, off_us)),
        loss: rotate_loss(&d.loss, off_us),
    }
}

/// The trace replayed from `off_us` (reduced modulo its loop length): capacities, delays,
/// losses, ground-truth reconfigurations and outages all move together; what lay before
/// `off_us` follows the end. Series with fixed intervals move by whole intervals, so pick
/// `off_us` on the delay grid (10 ms for LeoReplayer traces) for an exact rotation.
pub fn rotate(trace: &Trace, off_us: u64) -> Trace {
    let d = trace.duration_us().max(1);
    let off = off_us % d;
    let shift = |t: u64| if t >= off { t - off } else { t + d - off };
    let mut reconfigurations: Vec<u64> = trace.reconfigurations.iter().map(|&t| shift(t)).collect();
    reconfigurations.sort_unstable();
    let mut outages = Vec::new();
    for s in &trace.outages {
        let (a, b) = (s.start_us, s.end_us());
        // An outage across the new start is split into its two ends.
        if a < off && b > off {
            outages.push(Span { start_us: 0, len_us: b - off });
            outages.push(Span { start_us: a + d - off, len_us: off - a });
        } else {
            outages.push(Span { start_us: shift(a), len_us: s.len_us });
        }
    }
    outages.sort_by_key(|s| s.start_us);
    let mut meta = trace.meta.clone();
    meta.notes = format!("{} [started at {:.3} s of {}]", meta.notes, off as f64 / 1e6, meta.name).trim().to_string();
    Trace {
        meta,
        up: rotate_dir(&trace.up, off),
        down: rotate_dir(&trace.down, off),
        reconfigurations,
        outages,
        terrestrial: trace.terrestrial.as_ref().map(|s| Segment {
            capacity: rotate_times(&s.capacity, off),
            delay: rotate_delay(&s.delay, off),
            loss: rotate_loss(&s.loss, off),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_moves_everything_together_and_round_trips() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces/starlink-down-60s.trace");
        let t = Trace::load(std::path::Path::new(path)).unwrap();
        let d = t.duration_us();
        let off = 12_340_000;
        let r = rotate(&t, off);
        r.validate().unwrap();
        assert_eq!(r.duration_us(), d);
        let (a, b) = (t.delay(crate::Dir::Down), r.delay(crate::Dir::Down));
        assert_eq!(b.at(0), a.at(off));
        assert_eq!(b.at(5_000_000), a.at(off + 5_000_000));
        let first = t.reconfigurations.iter().find(|&&x| x >= off).unwrap();
        assert!(r.reconfigurations.contains(&(first - off)));
        assert_eq!(r.reconfigurations.len(), t.reconfigurations.len());
        assert_eq!(r.capacity(crate::Dir::Down).unwrap().times_us().len(), t.capacity(crate::Dir::Down).unwrap().times_us().len());
        let back = rotate(&r, d - off);
        // An opportunity on the loop boundary (time = period) comes back at time 0: the same
        // replay. Compared folded, and without printing a million times on failure.
        let folded = |tr: &Trace| {
            let c = tr.capacity(crate::Dir::Down).unwrap();
            let mut v: Vec<u64> = c.times_us().iter().map(|x| x % c.period_us()).collect();
            v.sort_unstable();
            v
        };
        assert!(folded(&back) == folded(&t), "capacity changed by a round trip");
        assert_eq!(back.delay(crate::Dir::Down), t.delay(crate::Dir::Down));
        assert_eq!(back.reconfigurations, t.reconfigurations);
        assert!(rotate(&t, 0).down == t.down);
    }
}
