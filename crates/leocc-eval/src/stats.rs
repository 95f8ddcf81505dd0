//! Statistics over a cell's repeated runs, in one place for the report (`leocc report`, its
//! `--markdown` table, the across-traces summary), the sweep's page and table, and `leocc bench
//! fidelity`:
//!
//! - [`Stat`]: mean, spread and count of one metric over a cell's runs, with the 95 %
//!   confidence interval of the mean ([`Stat::ci95_half`], Student's t with n − 1 degrees of
//!   freedom);
//! - [`ratio_interval`]: the 95 % interval of a ratio of two cells' means, on the log scale by
//!   the delta method with Welch–Satterthwaite degrees of freedom;
//! - [`change`]: a change between two cells ("p95 RTT vs bbr −31 %") and whether it is beyond
//!   the run-to-run noise: it is when that ratio's interval excludes 1, which is Welch's t-test
//!   at 5 % on the log of the means;
//! - [`mean_change`]: the same for the mean over several cells of such ratios (a sweep's
//!   average gain over traces and buffers);
//! - [`ci_caption`]: what a table's cells are ("mean ± 95 % CI, n=3", or single runs).

/// Mean, spread and count of one metric over the runs of a cell.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stat {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// The population standard deviation (divided by n); [`Stat::sample_sd`] divides by n − 1.
    pub sd: f64,
    pub n: usize,
}

impl Stat {
    /// Summarises the values; None when there are none.
    pub fn of(values: &[f64]) -> Option<Stat> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = leocc_base::metrics::mean(values)?;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        Some(Stat {
            mean,
            min: values.iter().cloned().fold(f64::INFINITY, f64::min),
            max: values.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            sd: var.sqrt(),
            n,
        })
    }

    /// The sample standard deviation (n − 1); 0 for one value.
    pub fn sample_sd(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            self.sd * (self.n as f64 / (self.n as f64 - 1.0)).sqrt()
        }
    }

    /// Half the width of the 95 % confidence interval of the mean, t(0.975, n − 1) · s / √n;
    /// None for a single run, whose spread is unknown.
    pub fn ci95_half(&self) -> Option<f64> {
        (self.n >= 2).then(|| t975((self.n - 1) as f64) * self.sample_sd() / (self.n as f64).sqrt())
    }

    /// The mean scaled, with ± the half-width of its 95 % confidence interval ("61.2 ± 3.1"); a
    /// single run is its value alone ("61.2"), which tables mark through their runs column.
    pub fn fmt_ci(&self, scale: f64, decimals: usize) -> String {
        match self.ci95_half() {
            Some(h) => format!(
                "{:.d$} ± {:.d$}",
                self.mean * scale,
                h * scale,
                d = decimals
            ),
            None => format!("{:.d$}", self.mean * scale, d = decimals),
        }
    }
}

/// Student's t, 97.5 % quantile, for `df` degrees of freedom (interpolated in 1/df between
/// tabulated values; within 0.002 of the exact quantile for integer df).
pub fn t975(df: f64) -> f64 {
    const T: [(f64, f64); 14] = [
        (1.0, 12.706),
        (2.0, 4.303),
        (3.0, 3.182),
        (4.0, 2.776),
        (5.0, 2.571),
        (6.0, 2.447),
        (7.0, 2.365),
        (8.0, 2.306),
        (9.0, 2.262),
        (10.0, 2.228),
        (15.0, 2.131),
        (20.0, 2.086),
        (30.0, 2.042),
        (f64::INFINITY, 1.960),
    ];
    if df.is_nan() || df < 1.0 {
        return T[0].1;
    }
    for w in T.windows(2) {
        let ((d0, t0), (d1, t1)) = (w[0], w[1]);
        if df <= d1 {
            let (x0, x1, x) = (
                1.0 / d0,
                if d1.is_finite() { 1.0 / d1 } else { 0.0 },
                1.0 / df,
            );
            return t0 + (t1 - t0) * (x0 - x) / (x0 - x1);
        }
    }
    1.960
}

/// The variance of ln(mean) of a cell by the delta method, s² / (n m²), and its runs (its
/// degrees of freedom are n − 1; a single run contributes no variance).
fn log_var(s: &Stat) -> (f64, usize) {
    let sd = s.sample_sd();
    (sd * sd / (s.n as f64 * s.mean * s.mean), s.n)
}

/// The 95 % interval around `center` of a quantity whose log has the variance Σ parts, each
/// part with its runs: Student's t with Welch–Satterthwaite degrees of freedom.
fn log_interval(center: f64, parts: &[(f64, usize)]) -> (f64, f64) {
    let var: f64 = parts.iter().map(|p| p.0).sum();
    if var <= 0.0 {
        return (center, center);
    }
    let dof_part: f64 = parts
        .iter()
        .filter(|p| p.1 >= 2)
        .map(|&(v, n)| v * v / (n as f64 - 1.0))
        .sum();
    let df = var * var / dof_part.max(f64::MIN_POSITIVE);
    let half = t975(df) * var.sqrt();
    (center * (-half).exp(), center * half.exp())
}

/// 95 % interval of mean(a) / mean(b) from the runs' spread: on the log scale, the delta
/// method (var ln m ≈ s² / (n m²)) with Welch–Satterthwaite degrees of freedom. A side with one
/// run counts as exact. None when neither side has two runs, or a mean is not positive.
pub fn ratio_interval(a: &Stat, b: &Stat) -> Option<(f64, f64)> {
    if a.mean <= 0.0 || b.mean <= 0.0 || (a.n < 2 && b.n < 2) {
        return None;
    }
    Some(log_interval(a.mean / b.mean, &[log_var(a), log_var(b)]))
}

/// "0.92 [0.85–0.99]", or the ratio alone without an interval.
pub fn fmt_ratio(ratio: f64, interval: Option<(f64, f64)>) -> String {
    match interval {
        Some((lo, hi)) => format!("{ratio:.2} [{lo:.2}–{hi:.2}]"),
        None => format!("{ratio:.2}"),
    }
}

/// Whether a difference between two cells stands out from their runs' spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Noise {
    /// The 95 % interval of the ratio of the means excludes 1.
    Beyond,
    /// It includes 1.
    Within,
    /// A side has a single run (no spread of its own), or a mean is not positive.
    Unknown,
}

/// One cell's mean against another's.
#[derive(Clone, Copy, Debug)]
pub struct Change {
    /// ours / theirs.
    pub ratio: f64,
    /// 95 % interval of the ratio ([`ratio_interval`]), when both sides have two runs or more.
    pub interval: Option<(f64, f64)>,
    pub noise: Noise,
    /// Runs on each side.
    pub n: (usize, usize),
}

/// `ours` against `theirs`; None when their mean is zero (no relative change). The verdict
/// needs at least two runs on each side: a single run says nothing about its own noise.
pub fn change(ours: &Stat, theirs: &Stat) -> Option<Change> {
    mean_change(&[(*ours, *theirs)])
}

/// The mean over several cells (traces, buffers) of ours / theirs, each pair a cell: the
/// average gain a sweep chooses its setting on. Its 95 % interval is the same method as
/// [`change`]'s (which is this with one cell): the delta method on the log scale, var ln R̄ ≈
/// Σ (r_i / (k R̄))² (var ln ours_i + var ln theirs_i), Welch–Satterthwaite degrees of freedom
/// over all the parts. A verdict needs two runs or more on both sides of every cell; `n` is the
/// fewest runs of a cell on each side. None without cells or when a rival's mean is zero.
pub fn mean_change(pairs: &[(Stat, Stat)]) -> Option<Change> {
    if pairs.is_empty() || pairs.iter().any(|(_, t)| t.mean.abs() < 1e-12) {
        return None;
    }
    let k = pairs.len() as f64;
    let ratios: Vec<f64> = pairs.iter().map(|(o, t)| o.mean / t.mean).collect();
    let ratio = ratios.iter().sum::<f64>() / k;
    let n = (
        pairs.iter().map(|p| p.0.n).min().unwrap_or(0),
        pairs.iter().map(|p| p.1.n).min().unwrap_or(0),
    );
    let measurable = n.0 >= 2
        && n.1 >= 2
        && ratio > 0.0
        && pairs.iter().all(|(o, t)| o.mean > 0.0 && t.mean > 0.0);
    let interval = measurable.then(|| {
        let parts: Vec<(f64, usize)> = pairs
            .iter()
            .zip(&ratios)
            .flat_map(|((o, t), r)| {
                let w = (r / (k * ratio)).powi(2);
                let ((vo, no), (vt, nt)) = (log_var(o), log_var(t));
                [(w * vo, no), (w * vt, nt)]
            })
            .collect();
        log_interval(ratio, &parts)
    });
    let noise = match interval {
        Some((lo, hi)) if lo > 1.0 || hi < 1.0 => Noise::Beyond,
        Some(_) => Noise::Within,
        None => Noise::Unknown,
    };
    Some(Change {
        ratio,
        interval,
        noise,
        n,
    })
}

/// A table's caption for cells over these numbers of runs: "mean ± 95 % CI, n=3";
/// "mean ± 95 % CI, n=1–3 (runs column; a value without ± is a single run)"; or, when every
/// cell is one run, "single runs, n=1: no interval, no difference is claimed beyond noise".
pub fn ci_caption(runs: impl IntoIterator<Item = usize>) -> String {
    let (mut lo, mut hi) = (usize::MAX, 0);
    for n in runs {
        lo = lo.min(n);
        hi = hi.max(n);
    }
    if hi == 0 {
        String::new()
    } else if hi <= 1 {
        "single runs, n=1: no interval, no difference is claimed beyond noise".into()
    } else if lo == hi {
        format!("mean ± 95 % CI, n={hi}")
    } else {
        format!("mean ± 95 % CI, n={lo}–{hi} (runs column; a value without ± is a single run)")
    }
}

impl Change {
    /// The change in percent, "+85 %" / "-31 %".
    pub fn pct(&self) -> String {
        format!("{:+.0} %", (self.ratio - 1.0) * 100.0)
    }

    /// The 95 % interval of the change in percent, "[-36, -26] %".
    pub fn pct_interval(&self) -> Option<String> {
        self.interval
            .map(|(lo, hi)| format!("[{:+.0}, {:+.0}] %", (lo - 1.0) * 100.0, (hi - 1.0) * 100.0))
    }

    /// The runs behind the verdict: "n=3", or "n=3 vs 1" when the sides differ.
    pub fn runs(&self) -> String {
        if self.n.0 == self.n.1 {
            format!("n={}", self.n.0)
        } else {
            format!("n={} vs {}", self.n.0, self.n.1)
        }
    }

    /// The verdict in words: "beyond noise", "within noise, n=3", "single run" (or
    /// "noise unknown, n=3 vs 1" when only one side is a single run).
    pub fn verdict(&self) -> String {
        match self.noise {
            Noise::Beyond => "beyond noise".into(),
            Noise::Within => format!("within noise, {}", self.runs()),
            Noise::Unknown if self.n.0 <= 1 && self.n.1 <= 1 => "single run".into(),
            Noise::Unknown => format!("noise unknown, {}", self.runs()),
        }
    }

    /// "-31 % (beyond noise)", "-4 % (within noise, n=3)", "-23 % (single run)".
    pub fn text(&self) -> String {
        format!("{} ({})", self.pct(), self.verdict())
    }
}

/// What the report and the markdown table say about their numbers.
pub const CI_LEGEND: &str = "± is the 95 % confidence interval of the mean over the cell's runs \
(Student's t, n − 1 degrees of freedom); a value without ± is a single run.";

/// What the report and the markdown table say about their comparisons.
pub const NOISE_LEGEND: &str = "A change is beyond noise when the 95 % interval of the ratio of \
the two means (log scale, delta method, Welch's degrees of freedom; Welch's t-test at 5 % on the \
log of the means) excludes 1 (no change); with a single run on either side the noise is unknown.";

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() < tol
    }

    #[test]
    fn stat_summarises() {
        let s = Stat::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert!(close(s.sd, (2.0f64 / 3.0).sqrt(), 1e-12));
        assert!(close(s.sample_sd(), 1.0, 1e-12));
        assert!(Stat::of(&[]).is_none());
    }

    #[test]
    fn t_quantiles() {
        assert!(close(t975(2.0), 4.303, 1e-9));
        assert!(close(t975(1e9), 1.96, 1e-3));
        assert!(t975(2.5) < 4.303 && t975(2.5) > 3.182);
        // Interpolated between tabulated df, close to the exact quantiles.
        assert!(close(t975(12.0), 2.179, 0.003), "{}", t975(12.0));
        assert!(close(t975(60.0), 2.000, 0.003), "{}", t975(60.0));
        assert_eq!(t975(0.5), 12.706);
    }

    #[test]
    fn confidence_interval_of_the_mean() {
        // mean 2, s = 1, t(0.975, 2) = 4.303: 2 ± 4.303 / √3 = 2 ± 2.484.
        let s = Stat::of(&[1.0, 2.0, 3.0]).unwrap();
        assert!(close(s.ci95_half().unwrap(), 2.484, 1e-3));
        assert_eq!(s.fmt_ci(1.0, 3), "2.000 ± 2.484");
        assert_eq!(s.fmt_ci(100.0, 0), "200 ± 248");
        // Two runs: t(0.975, 1) = 12.706, s = √2 / 2 · |a − b|.
        let two = Stat::of(&[10.0, 12.0]).unwrap();
        assert!(close(two.ci95_half().unwrap(), 12.706, 1e-9));
        let one = Stat::of(&[61.23]).unwrap();
        assert!(one.ci95_half().is_none());
        assert_eq!(one.fmt_ci(1.0, 1), "61.2", "a single run: its value alone");
        let flat = Stat::of(&[5.0, 5.0, 5.0]).unwrap();
        assert_eq!(flat.fmt_ci(1.0, 1), "5.0 ± 0.0");
    }

    #[test]
    fn ratio_interval_by_the_delta_method() {
        let a = Stat::of(&[120.0, 130.0, 140.0]).unwrap();
        let b = Stat::of(&[60.0, 70.0, 80.0]).unwrap();
        let (lo, hi) = ratio_interval(&a, &b).unwrap();
        let r = 130.0 / 70.0;
        assert!(lo < r && r < hi && lo > 1.0, "{lo} {hi}");
        // Symmetric on the log scale.
        assert!(close((r / lo).ln(), (hi / r).ln(), 1e-12));
        // var ln = (10²/(3·130²) + 10²/(3·70²)), df by Welch–Satterthwaite.
        let (va, vb) = (
            100.0 / (3.0 * 130.0f64.powi(2)),
            100.0 / (3.0 * 70.0f64.powi(2)),
        );
        let df = (va + vb).powi(2) / (va * va / 2.0 + vb * vb / 2.0);
        assert!(close((hi / r).ln(), t975(df) * (va + vb).sqrt(), 1e-12));
        let one = Stat::of(&[1.0]).unwrap();
        assert!(ratio_interval(&one, &one).is_none(), "one run each");
        let zero = Stat::of(&[0.0, 0.0]).unwrap();
        assert!(
            ratio_interval(&zero, &a).is_none(),
            "a mean that is not positive"
        );
        assert_eq!(fmt_ratio(r, Some((lo, hi))).matches('–').count(), 1);
        assert_eq!(fmt_ratio(1.0, None), "1.00");
    }

    #[test]
    fn a_clear_difference_is_beyond_noise() {
        // LeoCC 60 ± a little against BBR 88 ± a little: -31 %, far outside the runs' spread.
        let ours = Stat::of(&[60.0, 61.0, 62.0]).unwrap();
        let theirs = Stat::of(&[87.0, 88.0, 89.0]).unwrap();
        let c = change(&ours, &theirs).unwrap();
        assert_eq!(c.noise, Noise::Beyond);
        assert_eq!(c.text(), "-31 % (beyond noise)");
        let (lo, hi) = c.interval.unwrap();
        assert!(hi < 1.0 && lo < c.ratio && c.ratio < hi);
        assert!(
            c.pct_interval().unwrap().starts_with("[-3"),
            "{:?}",
            c.pct_interval()
        );
    }

    #[test]
    fn a_difference_inside_the_spread_is_within_noise() {
        // -4 % with runs that spread by ±10 %: not distinguishable.
        let ours = Stat::of(&[52.0, 58.0, 63.0]).unwrap();
        let theirs = Stat::of(&[54.0, 60.0, 67.0]).unwrap();
        let c = change(&ours, &theirs).unwrap();
        assert_eq!(c.noise, Noise::Within);
        assert_eq!(c.text(), "-4 % (within noise, n=3)");
        let (lo, hi) = c.interval.unwrap();
        assert!(lo < 1.0 && hi > 1.0);
        let two = Stat::of(&[54.0, 67.0]).unwrap();
        assert_eq!(
            change(&ours, &two).unwrap().verdict(),
            "within noise, n=3 vs 2"
        );
    }

    #[test]
    fn a_single_run_has_no_verdict() {
        let ours = Stat::of(&[62.1]).unwrap();
        let theirs = Stat::of(&[90.6]).unwrap();
        let c = change(&ours, &theirs).unwrap();
        assert_eq!(c.noise, Noise::Unknown);
        assert!(c.interval.is_none());
        assert_eq!(c.text(), "-31 % (single run)");
        // Three runs against one: the single run's own noise is unknown, so no verdict either
        // (the fidelity table's ratio_interval would treat it as exact).
        let three = Stat::of(&[60.0, 61.0, 62.0]).unwrap();
        let c = change(&three, &theirs).unwrap();
        assert_eq!(c.noise, Noise::Unknown);
        assert_eq!(c.verdict(), "noise unknown, n=3 vs 1");
        assert!(change(&three, &Stat::of(&[0.0]).unwrap()).is_none());
    }

    #[test]
    fn identical_runs_make_any_difference_beyond_noise() {
        let a = Stat::of(&[10.0, 10.0]).unwrap();
        let b = Stat::of(&[11.0, 11.0]).unwrap();
        assert_eq!(change(&a, &b).unwrap().noise, Noise::Beyond);
        assert_eq!(change(&a, &a).unwrap().noise, Noise::Within);
    }

    #[test]
    fn a_mean_over_cells_is_one_cells_change_when_alone() {
        let a = Stat::of(&[120.0, 130.0, 140.0]).unwrap();
        let b = Stat::of(&[60.0, 70.0, 80.0]).unwrap();
        let one = mean_change(&[(a, b)]).unwrap();
        let c = change(&a, &b).unwrap();
        assert_eq!(one.interval, c.interval);
        assert_eq!(c.interval, ratio_interval(&a, &b));
        // Two cells: +10 % with little spread and +0 % with a lot: the mean +5 %, and the
        // interval is wider than the quiet cell's alone.
        let q = Stat::of(&[110.0, 110.5, 109.5]).unwrap();
        let d = Stat::of(&[100.0, 100.5, 99.5]).unwrap();
        let loud = Stat::of(&[80.0, 100.0, 120.0]).unwrap();
        let quiet = mean_change(&[(q, d)]).unwrap();
        let both = mean_change(&[(q, d), (loud, d)]).unwrap();
        assert!((both.ratio - 1.05).abs() < 1e-12);
        assert_eq!(quiet.noise, Noise::Beyond);
        assert_eq!(both.noise, Noise::Within);
        assert_eq!(both.text(), "+5 % (within noise, n=3)");
        // One cell with a single run: no verdict for the mean either.
        let single = Stat::of(&[100.0]).unwrap();
        let c = mean_change(&[(q, d), (q, single)]).unwrap();
        assert_eq!(c.verdict(), "noise unknown, n=3 vs 1");
        assert!(mean_change(&[]).is_none());
        assert!(mean_change(&[(q, Stat::of(&[0.0, 0.0]).unwrap())]).is_none());
    }

    #[test]
    fn captions_say_how_many_runs() {
        assert_eq!(ci_caption([3, 3]), "mean ± 95 % CI, n=3");
        assert!(ci_caption([1, 3]).starts_with("mean ± 95 % CI, n=1–3 (runs column"));
        assert!(ci_caption([1]).starts_with("single runs, n=1"));
        assert_eq!(ci_caption([]), "");
    }
}
