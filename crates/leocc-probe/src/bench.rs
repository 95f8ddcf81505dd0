//! The detector's benchmark grid (`leocc probe bench`): generated ping streams over both path
//! kinds, four reconfiguration grids, 1–3 % bursty loss and 10–20 ms probe spacing, scored with
//! both scorings against the streams' ground truth.

use crate::detect::{DetectorConfig, Scoring};
use crate::gen::{generate, GenConfig, Grid, PathKind, ONEWEB_PERIOD_S, SHIFT_EVERY_S};
use crate::replay::{score_generated, Score, Totals};

/// Mean loss rates of the streams (Gilbert-Elliott, bursts of 2): issue 7's 1–3 %.
pub const LOSS: [f64; 3] = [0.01, 0.02, 0.03];
/// Probe spacings, ms: issue 7's 10–20 ms.
pub const SPACING_MS: [f64; 3] = [10.0, 15.0, 20.0];
/// The scorings compared, in the order of [`Group::totals`].
pub const SCORINGS: [Scoring; 2] = [Scoring::Threshold, Scoring::Evidence];
/// The path kinds, by name.
pub const PATHS: [(&str, PathKind); 2] = [("bentpipe", PathKind::BentPipe), ("isl", PathKind::Isl)];
/// The reconfiguration grids, by name.
pub const GRIDS: [(&str, Grid); 4] = [
    ("starlink", Grid::Starlink),
    ("oneweb", Grid::Period(ONEWEB_PERIOD_S)),
    ("shifting", Grid::Shifting { shift_every_s: SHIFT_EVERY_S }),
    ("none", Grid::None),
];

/// One stream of the grid scored with one scoring.
pub struct Cell<'a> {
    /// Path kind name.
    pub path: &'a str,
    /// Grid name.
    pub grid: &'a str,
    /// Mean loss rate.
    pub loss: f64,
    /// Probe spacing, ms.
    pub spacing_ms: f64,
    /// Generator seed.
    pub seed: u64,
    /// The scoring.
    pub scoring: Scoring,
    /// Its score.
    pub score: &'a Score,
}

/// The totals of one path kind and grid, per scoring (the order of [`SCORINGS`]).
pub struct Group {
    /// Path kind name.
    pub path: &'static str,
    /// Grid name.
    pub grid: &'static str,
    /// Totals per scoring.
    pub totals: [Totals; 2],
}

/// Runs the grid over seeds 1..=`seeds` with streams of `duration_s`, every detector seeded
/// with Starlink's slots when `seed_schedule` (also on the other grids, where the seed is
/// wrong); `each` sees every scored cell as it is done. Returns the groups and the totals
/// over everything.
pub fn run(seeds: u64, duration_s: f64, seed_schedule: bool, mut each: impl FnMut(&Cell)) -> Result<(Vec<Group>, [Totals; 2]), String> {
    let mut groups = Vec::new();
    let mut all: [Totals; 2] = Default::default();
    for (path_name, path) in PATHS {
        for (grid_name, grid) in GRIDS {
            let mut totals: [Totals; 2] = Default::default();
            for &loss in &LOSS {
                for &spacing_ms in &SPACING_MS {
                    for seed in 1..=seeds {
                        let c = GenConfig { grid, loss, spacing_ms, duration_s, ..GenConfig::new(path, seed) };
                        let stream = generate(&c)?;
                        for (i, &scoring) in SCORINGS.iter().enumerate() {
                            let r = score_generated(&stream, DetectorConfig { scoring, seed_schedule, ..DetectorConfig::default() });
                            each(&Cell { path: path_name, grid: grid_name, loss, spacing_ms, seed, scoring, score: &r.score });
                            totals[i].add(&r.score);
                            all[i].add(&r.score);
                        }
                    }
                }
            }
            groups.push(Group { path: path_name, grid: grid_name, totals });
        }
    }
    Ok((groups, all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_is_counted_once_in_its_group_and_in_the_total() {
        let mut cells = 0;
        let (groups, all) = run(1, 40.0, false, |_| cells += 1).unwrap();
        assert_eq!(groups.len(), PATHS.len() * GRIDS.len());
        assert_eq!(cells, groups.len() * LOSS.len() * SPACING_MS.len() * SCORINGS.len());
        for (i, total) in all.iter().enumerate() {
            assert_eq!(groups.iter().map(|g| g.totals[i].detections).sum::<usize>(), total.detections);
            assert_eq!(groups.iter().map(|g| g.totals[i].truth).sum::<usize>(), total.truth);
        }
        // Grids with reconfigurations have true events; the detector finds most of them.
        let starlink = groups.iter().find(|g| g.path == "bentpipe" && g.grid == "starlink").unwrap();
        assert!(starlink.totals[0].truth > 0 && starlink.totals[0].recall().unwrap() > 0.5);
    }
}
