//! The one home of the summary statistics every crate reports: quantiles, means, medians and
//! Jain's fairness index.
//!
//! Quantiles take `q` in 0..=1 (a percentile `p` is `p / 100.0`; the division is exact to the
//! last bit, so a caller that used to compute `p / 100.0 * n` gets the same numbers).
//! Functions that take a slice expect it sorted ascending (by [`f64::total_cmp`] for floats,
//! see [`sorted`], so NaNs sort to the ends instead of breaking the order) and return `None`
//! for an empty slice.
//!
//! Four quantile definitions are in use, and each site keeps the one it had (switching would
//! change published numbers):
//!
//! | function | order statistic (1-based) | used by |
//! |---|---|---|
//! | [`quantile_nearest_rank`] / [`nearest_rank`] | ⌈q·n⌉, at least the 1st | simulator and emulator histograms, eval's emu engine, leotp and across-trace reports, robust bench, probe replay |
//! | [`quantile_linear`] | interpolated at 1 + q·(n−1) | `leocc trace stat` (numpy's default) |
//! | [`quantile_rounded`] | 1 + round(q·(n−1)) | emulator queue-delay summary, probe stream statistics, eval's leotp endpoint p95 |
//! | [`quantile_floor`] | 1 + ⌊q·n⌋ | the report's base-delay p95 |

/// A copy of `v` sorted ascending by [`f64::total_cmp`] (a total order: NaNs go to the ends).
pub fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

/// The nearest rank of the q-quantile among `n` values: ⌈q·n⌉ clamped to 1..=n (1-based;
/// 0 when `n` is 0). The textbook "nearest-rank method": the result is always one of the
/// values, and the p95 of 100 values is the 95th. Histograms use it to walk their buckets.
pub fn nearest_rank(n: usize, q: f64) -> usize {
    if n == 0 {
        return 0;
    }
    ((q * n as f64).ceil() as usize).clamp(1, n)
}

/// The q-quantile of sorted `v` by nearest rank (see [`nearest_rank`]); `None` when empty.
/// The definition of every latency percentile the simulator and the evaluation report
/// (a measured value, never an interpolated one, as the kernel's and iperf's own reports do).
pub fn quantile_nearest_rank<T: Copy>(v: &[T], q: f64) -> Option<T> {
    v.get(nearest_rank(v.len(), q).checked_sub(1)?).copied()
}

/// The q-quantile of `n` sorted values by linear interpolation between order statistics:
/// position q·(n−1) (0-based), `nth(k)` the k-th value, the result
/// `nth(lo) + (nth(hi) − nth(lo)) · (pos − lo)`. This is numpy's default (Hyndman-Fan type 7).
/// `n` must be at least 1. `nth` lets run-length encoded data use it without expanding.
pub fn quantile_linear_by(n: usize, q: f64, nth: impl Fn(usize) -> f64) -> f64 {
    let pos = q * (n - 1) as f64;
    let (lo, hi) = (nth(pos.floor() as usize), nth(pos.ceil() as usize));
    lo + (hi - lo) * (pos - pos.floor())
}

/// The q-quantile of sorted `v` by linear interpolation (see [`quantile_linear_by`]); `None`
/// when empty. `leocc trace stat` uses it: trace statistics describe a distribution, and the
/// interpolated percentile moves smoothly as the trace changes.
pub fn quantile_linear(v: &[f64], q: f64) -> Option<f64> {
    (!v.is_empty()).then(|| quantile_linear_by(v.len(), q, |k| v[k]))
}

/// The q-quantile of sorted `v` at the rounded interpolation position: the value at 0-based
/// index round(q·(n−1)) (ties away from zero, so not numpy's `nearest`, which rounds ties to
/// even); `None` when empty. The emulator's queue-delay summary, the probe's stream
/// statistics and eval's LEOTP endpoint p95 use it.
pub fn quantile_rounded<T: Copy>(v: &[T], q: f64) -> Option<T> {
    let last = v.len().checked_sub(1)?;
    Some(v[((q * last as f64).round() as usize).min(last)])
}

/// The q-quantile of sorted `v` at 0-based index ⌊q·n⌋ (clamped to the last value); `None`
/// when empty. For q < 1 it is the nearest rank one above [`quantile_nearest_rank`] whenever
/// q·n is a whole number. The report's base one-way delay p95 uses it.
pub fn quantile_floor<T: Copy>(v: &[T], q: f64) -> Option<T> {
    let last = v.len().checked_sub(1)?;
    Some(v[((q * v.len() as f64) as usize).min(last)])
}

/// The arithmetic mean of `v`: the sum in slice order divided by the count; `None` when empty
/// (callers choose what an empty list reports: 0, NaN or JSON null). NaNs propagate.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The median of `v`: the middle value, or the mean of the two middle values, `(a + b) / 2`,
/// for an even count; NaN when empty. Sorts a copy by [`f64::total_cmp`].
pub fn median(v: &[f64]) -> f64 {
    median_with(v, &mut Vec::new())
}

/// [`median`] using `buf` for the sorted copy (no allocation in a loop).
pub fn median_with(v: &[f64], buf: &mut Vec<f64>) -> f64 {
    buf.clear();
    buf.extend_from_slice(v);
    buf.sort_by(f64::total_cmp);
    let n = buf.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => buf[n / 2],
        _ => (buf[n / 2 - 1] + buf[n / 2]) / 2.0,
    }
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²), 1 when all are equal, 1/n when one has
/// everything. 1 for an empty list or all zeros (nobody is treated worse than anybody); NaN
/// when an element is NaN.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * s2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_to(n: u32) -> Vec<f64> {
        (1..=n).map(f64::from).collect()
    }

    #[test]
    fn nearest_rank_is_the_ceiling_of_q_n() {
        assert_eq!(nearest_rank(0, 0.5), 0);
        assert_eq!(nearest_rank(1, 0.0), 1);
        assert_eq!(nearest_rank(100, 0.95), 95);
        assert_eq!(nearest_rank(10, 0.91), 10);
        assert_eq!(nearest_rank(10, 1.5), 10);
        assert_eq!(nearest_rank(10, f64::NAN), 1);
        let v = one_to(100);
        assert_eq!(quantile_nearest_rank(&v, 0.95), Some(95.0));
        assert_eq!(quantile_nearest_rank(&v, 0.5), Some(50.0));
        assert_eq!(quantile_nearest_rank(&v, 0.0), Some(1.0));
        assert_eq!(quantile_nearest_rank(&v, 1.0), Some(100.0));
        assert_eq!(quantile_nearest_rank(&[7i64], 0.99), Some(7));
        assert_eq!(quantile_nearest_rank::<f64>(&[], 0.5), None);
        let v = one_to(10);
        assert_eq!(
            [0.1, 0.5, 0.9].map(|q| quantile_nearest_rank(&v, q).unwrap()),
            [1.0, 5.0, 9.0]
        );
    }

    #[test]
    fn linear_interpolates_between_order_statistics() {
        let v = one_to(10);
        assert_eq!(quantile_linear(&v, 0.5), Some(5.5));
        assert!((quantile_linear(&v, 0.95).unwrap() - 9.55).abs() < 1e-12);
        assert_eq!(quantile_linear(&v, 0.0), Some(1.0));
        assert_eq!(quantile_linear(&v, 1.0), Some(10.0));
        assert_eq!(quantile_linear(&[3.0], 0.3), Some(3.0));
        assert_eq!(quantile_linear(&[], 0.5), None);
        // Run-length data: [1, 1, 1, 4] expanded.
        let nth = |k: usize| if k < 3 { 1.0 } else { 4.0 };
        assert_eq!(quantile_linear_by(4, 0.5, nth), 1.0);
        assert_eq!(quantile_linear_by(4, 5.0 / 6.0, nth), 2.5);
    }

    #[test]
    fn rounded_and_floor_indices() {
        let v = one_to(10);
        // 0.5·9 = 4.5 rounds away from zero to index 5.
        assert_eq!(quantile_rounded(&v, 0.5), Some(6.0));
        assert_eq!(quantile_rounded(&v, 0.95), Some(10.0));
        assert_eq!(quantile_rounded(&v, 0.0), Some(1.0));
        assert_eq!(quantile_rounded(&[9u32], 0.5), Some(9));
        assert_eq!(quantile_rounded::<u32>(&[], 0.5), None);
        let v = one_to(100);
        assert_eq!(quantile_floor(&v, 0.95), Some(96.0));
        assert_eq!(quantile_floor(&v, 1.0), Some(100.0));
        assert_eq!(quantile_floor(&[2.0], 0.95), Some(2.0));
        assert_eq!(quantile_floor::<f64>(&[], 0.95), None);
    }

    #[test]
    fn sorted_puts_nan_last() {
        let s = sorted(&[3.0, f64::NAN, 1.0]);
        assert_eq!(&s[..2], &[1.0, 3.0]);
        assert!(s[2].is_nan());
    }

    #[test]
    fn means_and_medians() {
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[4.0]), Some(4.0));
        assert_eq!(mean(&[1.0, 3.0]), Some(2.0));
        assert!(mean(&[1.0, f64::NAN]).unwrap().is_nan());
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[5.0]), 5.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        let mut buf = Vec::new();
        assert_eq!(median_with(&[2.0, 8.0], &mut buf), 5.0);
        assert_eq!(median_with(&[7.0], &mut buf), 7.0);
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[]), 1.0);
        assert_eq!(jain(&[0.0, 0.0]), 1.0);
        assert_eq!(jain(&[3.0]), 1.0);
        assert_eq!(jain(&[5.0, 5.0]), 1.0);
        assert!((jain(&[10.0, 0.0]) - 0.5).abs() < 1e-12);
        assert!((jain(&[200.0, 200.0, 100.0]) - 250_000.0 / 270_000.0).abs() < 1e-12);
        assert!(jain(&[1.0, f64::NAN]).is_nan());
    }
}
