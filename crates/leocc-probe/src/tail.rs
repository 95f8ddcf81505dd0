//! How unlikely a value is given the stream's own recent values: a decaying histogram with an
//! exponential tail beyond the data.
//!
//! The detector asks "how often does a normal interval of this stream have a send gap (or an
//! RTT step) at least this large?". The answer comes from the stream itself: every interval
//! that is not an outage is added to a histogram of 1 ms bins whose counts halve every
//! `half_life` samples, so the statistics follow the path (a congested hour, a noisier
//! terminal) without keeping samples. Where the histogram has enough samples at or above the
//! value, the tail probability is the empirical share. Beyond that (the values an outage
//! produces are usually beyond anything normal) it is extrapolated with the
//! peaks-over-threshold method: above a threshold u the excesses are taken as exponential
//! with the mean excess observed above u, P(X ≥ x) = P(X ≥ u) · exp(−(x − u) / mean excess).
//! An exponential tail is what a geometric number of lost probes (a Gilbert–Elliott bad state)
//! or a memoryless queue produces; a heavier real tail makes the estimate too small, which is
//! why the detector also weighs the schedule prior.
//!
//! Cost: adding is O(1); the halving is O(bins) every `half_life` samples; a tail query is
//! O(bins) and runs only for intervals that are candidates (RI above the floor).

/// Width of a bin, ns: 1 ms resolves the jitter of every path we have seen (sd ≥ 4 ms).
const BIN_NS: u64 = 1_000_000;
/// Number of bins: 0..1023 ms; larger values go into the last bin (and count as ≥ it).
pub const BINS: usize = 1024;
/// The empirical share is trusted when at least this many (decayed) samples lie at or above
/// the value; otherwise the tail is extrapolated from the highest threshold that has them.
const MIN_TAIL_SAMPLES: f64 = 16.0;
/// The tail's scale beyond u is estimated from at least this many samples strictly above u.
const MIN_SCALE_SAMPLES: f64 = 4.0;

/// A decaying histogram of non-negative durations with tail probabilities.
#[derive(Clone, Debug)]
pub struct TailHistogram {
    bins: Box<[f32; BINS]>,
    total: f64,
    since_halving: u32,
    half_life: u32,
}

impl TailHistogram {
    /// An empty histogram whose counts halve every `half_life` samples.
    pub fn new(half_life: u32) -> Self {
        TailHistogram { bins: Box::new([0.0; BINS]), total: 0.0, since_halving: 0, half_life: half_life.max(1) }
    }

    /// Number of (decayed) samples held.
    pub fn weight(&self) -> f64 {
        self.total
    }

    fn bin(x_ns: u64) -> usize {
        ((x_ns / BIN_NS) as usize).min(BINS - 1)
    }

    /// Adds one sample, ns.
    pub fn add(&mut self, x_ns: u64) {
        self.bins[Self::bin(x_ns)] += 1.0;
        self.total += 1.0;
        self.since_halving += 1;
        if self.since_halving >= self.half_life {
            self.since_halving = 0;
            for b in self.bins.iter_mut() {
                *b *= 0.5;
            }
            self.total *= 0.5;
        }
    }

    /// P(X ≥ x) for a normal sample, in (0, 1]; `None` while the histogram is empty.
    pub fn tail(&self, x_ns: u64) -> Option<f64> {
        if self.total <= 0.0 {
            return None;
        }
        let k = Self::bin(x_ns);
        let (u, at_or_above) = self.threshold_bin(k);
        let Some(u) = u else {
            // Fewer than MIN_TAIL_SAMPLES in all: as likely as the data says, no extrapolation.
            return Some((at_or_above / self.total).max(1.0 / (self.total + 1.0)).min(1.0));
        };
        let p_u = (at_or_above / self.total).min(1.0);
        if u == k {
            return Some(p_u);
        }
        Some((p_u * (-((k - u) as f64) / self.tail_scale(u, p_u)).exp()).clamp(f64::MIN_POSITIVE, 1.0))
    }

    /// The tail's threshold u for the largest values, ns: the lowest value of the highest bin
    /// with [`MIN_TAIL_SAMPLES`] at or above it (beyond it [`Self::tail`] extrapolates); 0 while
    /// no bin has.
    pub fn tail_threshold(&self) -> u64 {
        self.threshold_bin(BINS - 1).0.map_or(0, |b| b as u64 * BIN_NS)
    }

    /// The threshold bin u: the highest bin at or below `max_bin` with [`MIN_TAIL_SAMPLES`] at
    /// or above it (`None` if none has), and the samples at or above it (all of them when none).
    fn threshold_bin(&self, max_bin: usize) -> (Option<usize>, f64) {
        let mut at_or_above = 0.0f64;
        for b in (0..BINS).rev() {
            at_or_above += f64::from(self.bins[b]);
            if b <= max_bin && at_or_above >= MIN_TAIL_SAMPLES {
                return (Some(b), at_or_above);
            }
        }
        (None, at_or_above)
    }

    /// Scale (in bins) of the exponential tail above bin u: the larger (the more cautious) of
    /// two estimates. (a) The median excess of the samples strictly above u, / ln 2: strictly
    /// above, because for lattice data (whole lost probes) the mass sitting at u would drag the
    /// estimate to zero; the median rather than the mean, because the few outages that went
    /// undetected are in the histogram too and must not fatten the tail that judges the next
    /// ones. Needs [`MIN_SCALE_SAMPLES`] above u. (b) The exponential through the median and
    /// u: scale = (u − median) / ln(P(X ≥ median) / P(X ≥ u)), which a young histogram always
    /// has. At least one bin.
    fn tail_scale(&self, u: usize, p_u: f64) -> f64 {
        let mut scale: f64 = 1.0;
        let above: f64 = self.bins[u + 1..].iter().map(|&c| f64::from(c)).sum();
        if above >= MIN_SCALE_SAMPLES {
            let mut cum = 0.0;
            for (i, &c) in self.bins[u + 1..].iter().enumerate() {
                cum += f64::from(c);
                if cum >= above / 2.0 {
                    // Excess of bin u+1+i over u is i+1 bins.
                    scale = scale.max((i + 1) as f64 / std::f64::consts::LN_2);
                    break;
                }
            }
        }
        let (mut cum, mut median) = (0.0, 0usize);
        for (b, &c) in self.bins.iter().enumerate() {
            cum += f64::from(c);
            if cum >= self.total / 2.0 {
                median = b;
                break;
            }
        }
        let p_median: f64 = self.bins[median..].iter().map(|&c| f64::from(c)).sum::<f64>() / self.total;
        if u > median && p_median > p_u {
            scale = scale.max((u - median) as f64 / (p_median / p_u).ln());
        }
        scale
    }
}

/// How likely a run of k lost probes is: a Gilbert–Elliott channel estimated from the
/// stream. A run starts after a received probe with probability p (the loss-burst rate) and
/// continues with probability q (the burstiness), so P(K ≥ k) = p · q^(k−1) for k ≥ 1. Both are
/// counted from the stream's normal intervals with the same halving as the histograms, and
/// start from weak priors (Beta pseudo-counts) so that a young stream is not overconfident:
/// one burst per 50 intervals (the lossiest 2–5 % streams), q = 1/3 (a mean burst of
/// 1.5 probes).
#[derive(Clone, Debug)]
pub struct LossRuns {
    intervals: f64,
    runs: f64,
    continuations: f64,
    since_halving: u32,
    half_life: u32,
}

/// Prior pseudo-counts of [`LossRuns`]: one run in 50 intervals (a 2 % burst rate) ...
const PRIOR_RUNS: f64 = 1.0;
const PRIOR_INTERVALS: f64 = 50.0;
/// ... and one continuation for two stops (q = 1/3).
const PRIOR_CONTINUATIONS: f64 = 1.0;
const PRIOR_STOPS: f64 = 2.0;

impl LossRuns {
    /// No data yet; counts halve every `half_life` intervals.
    pub fn new(half_life: u32) -> Self {
        LossRuns { intervals: 0.0, runs: 0.0, continuations: 0.0, since_halving: 0, half_life: half_life.max(1) }
    }

    /// Adds a normal interval during which `k` probes were lost.
    pub fn add(&mut self, k: u64) {
        self.intervals += 1.0;
        if k > 0 {
            self.runs += 1.0;
            self.continuations += (k - 1) as f64;
        }
        self.since_halving += 1;
        if self.since_halving >= self.half_life {
            self.since_halving = 0;
            self.intervals *= 0.5;
            self.runs *= 0.5;
            self.continuations *= 0.5;
        }
    }

    /// (p, q): the burst rate and the continuation probability.
    pub fn params(&self) -> (f64, f64) {
        let p = (self.runs + PRIOR_RUNS) / (self.intervals + PRIOR_INTERVALS);
        let q = (self.continuations + PRIOR_CONTINUATIONS) / (self.continuations + self.runs + PRIOR_CONTINUATIONS + PRIOR_STOPS);
        (p.min(1.0), q.min(1.0))
    }

    /// P(K ≥ k) in a normal interval.
    pub fn tail(&self, k: u64) -> f64 {
        if k == 0 {
            return 1.0;
        }
        let (p, q) = self.params();
        (p * q.powi((k - 1).min(i32::MAX as u64) as i32)).clamp(f64::MIN_POSITIVE, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn empirical_share_where_there_is_data() {
        let mut h = TailHistogram::new(1 << 20);
        for i in 0..1000u64 {
            h.add((i % 100) * MS); // uniform 0..99 ms
        }
        assert!((h.tail(0).unwrap() - 1.0).abs() < 1e-9);
        assert!((h.tail(50 * MS).unwrap() - 0.5).abs() < 1e-9);
        assert!((h.tail(90 * MS).unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn exponential_extrapolation_beyond_the_data() {
        // Exponential samples of mean 5 ms: the extrapolated tail at 80 ms should be close to
        // exp(-16) in order of magnitude, far below 1/n.
        let mut h = TailHistogram::new(1 << 20);
        let mut r = leocc_base::rng::Rng::new(1);
        for _ in 0..20_000 {
            h.add((r.exp(5.0) * MS as f64) as u64);
        }
        let p = h.tail(80 * MS).unwrap();
        let truth = (-80.0f64 / 5.0).exp();
        assert!(p < 1e-5 && p > truth / 100.0 && p < truth * 100.0, "p {p:e} vs {truth:e}");
        // Monotone.
        assert!(h.tail(100 * MS).unwrap() < p);
        assert!(h.tail(20 * MS).unwrap() > p);
    }

    #[test]
    fn loss_runs_follow_the_channel_and_start_cautious() {
        let young = LossRuns::new(4096);
        // Before any data: a 2 % burst rate, q = 1/3: five lost probes are 1 in 4050.
        assert!((young.tail(5) - 0.02 / 81.0).abs() < 1e-9);
        let mut l = LossRuns::new(1 << 20);
        let mut r = leocc_base::rng::Rng::new(2);
        // Bursts start with probability 0.01 and continue with 0.5.
        for _ in 0..200_000 {
            let mut k = 0;
            if r.chance(0.01) {
                k = 1;
                while r.chance(0.5) {
                    k += 1;
                }
            }
            l.add(k);
        }
        let (p, q) = l.params();
        assert!((p - 0.01).abs() < 0.001 && (q - 0.5).abs() < 0.03, "p {p} q {q}");
        assert!(l.tail(30) < 1e-10, "an inter-satellite outage is no loss burst");
    }

    #[test]
    fn halving_forgets_old_samples() {
        let mut h = TailHistogram::new(100);
        for _ in 0..100 {
            h.add(60 * MS);
        }
        for _ in 0..1000 {
            h.add(10 * MS);
        }
        // The 60 ms samples have halved ten times: they are a tiny share now.
        assert!(h.tail(60 * MS).unwrap() < 1e-3);
        assert!(h.weight() < 200.0);
        assert!(TailHistogram::new(10).tail(0).is_none());
    }
}
