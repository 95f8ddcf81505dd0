//! "Did you mean" hints for mistyped names (parameters here; controls, files and parameters of
//! other controls in the crates above, which use these through `leocc_sim::cc`). It lives in
//! the lowest crate that both `leocc kernel params` and the simulator reach.

/// Edit distance between `a` and `b` (in chars) counting a swap of two neighbours as one edit
/// (optimal string alignment), for "did you mean" hints: `cubci` is one edit from `cubic`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for j in 0..=b.len() {
        d[0][j] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j - 1] + cost)
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The name of `known` closest to `word` when it is close enough to be a typo (at most a
/// third of its letters wrong, at least one), for a "did you mean" hint.
pub fn closest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|k| (edit_distance(&word.to_lowercase(), k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// ` (did you mean X?)` when `word` is a likely typo of one of `known`, else empty: appended to
/// an "unknown NAME" error so that the fix is in the message.
pub fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, known).map_or_else(String::new, |k| format!(" (did you mean {k}?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swap_is_one_edit_and_strangers_get_no_hint() {
        assert_eq!(edit_distance("cubci", "cubic"), 1);
        assert_eq!(edit_distance("bbr", "bbr3"), 1);
        assert_eq!(
            did_you_mean("delta_rtt", ["delta_rtt_us", "cycle_len"]),
            " (did you mean delta_rtt_us?)"
        );
        assert_eq!(did_you_mean("quic", ["cubic", "bbr"]), "");
    }
}
