//! The minima rule, boundary-identical to chonkie 1.7.0's `SemanticChunker` given the
//! same similarities:
//!
//! 1. `sims[i]` = cos(window of sentences `i .. i+W`, sentence `i+W`), `n − W` values
//!    (computed by the similarity stage, by re-embedding the window text or averaging
//!    the sentence vectors);
//! 2. no split when `n <= W` or fewer than `filter_window` values;
//! 3. candidates from Savitzky–Golay derivatives ([`super::savgol::local_minima`]);
//! 4. keep candidates at or below the `threshold` percentile of the candidate values, at
//!    least `min_sentences` apart; a kept index `i` starts a chunk at sentence `i + W`;
//! 5. optionally merge groups whose similarity reaches `threshold` within `skip_window`;
//! 6. greedily re-split any group over the cap (chonkie's `chunk_size`) tokens.

use super::savgol::local_minima;
use super::stats::percentile;
use crate::cap::Cap;

/// chonkie's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinimaParams {
    /// Percentile of candidate minima (0..1) at or below which a split is kept; also the
    /// absolute similarity for the skip-window merge.
    pub threshold: f64,
    pub similarity_window: usize,
    pub min_sentences: usize,
    pub filter_window: usize,
    pub filter_polyorder: usize,
    pub filter_tolerance: f64,
    pub skip_window: usize,
}

impl Default for MinimaParams {
    fn default() -> Self {
        Self {
            threshold: 0.8,
            similarity_window: 3,
            min_sentences: 1,
            filter_window: 5,
            filter_polyorder: 3,
            filter_tolerance: 0.2,
            skip_window: 0,
        }
    }
}

/// chonkie's `_get_split_indices` followed by `_group_sentences`: group starts (first 0)
/// for `n` sentences and their window similarities.
#[must_use]
pub fn split_starts(n: usize, sims: &[f64], p: &MinimaParams) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let mut starts = vec![0];
    if n <= p.similarity_window || sims.is_empty() || sims.len() < p.filter_window {
        return starts;
    }
    let (idx, val) = local_minima(sims, p.filter_window, p.filter_polyorder, p.filter_tolerance);
    if idx.is_empty() {
        return starts;
    }
    let thr = percentile(&val, p.threshold * 100.0);
    let mut last: Option<usize> = None;
    for (&i, &v) in idx.iter().zip(&val) {
        if v <= thr && last.is_none_or(|l| i >= l + p.min_sentences) {
            last = Some(i);
            let s = i + p.similarity_window;
            if s > *starts.last().unwrap_or(&0) && s < n {
                starts.push(s);
            }
        }
    }
    starts
}

/// chonkie's `_skip_and_merge`: `group_sim(a, b)` is the similarity of groups `a` and `b`
/// (of the groups given by `starts`). Returns the merged starts.
#[must_use]
pub fn skip_and_merge(
    starts: &[usize],
    p: &MinimaParams,
    group_sim: impl Fn(usize, usize) -> f64,
) -> Vec<usize> {
    let g = starts.len();
    if g <= 1 || p.skip_window == 0 {
        return starts.to_vec();
    }
    let mut out = Vec::with_capacity(g);
    let mut i = 0;
    while i < g {
        if i == g - 1 {
            out.push(starts[i]);
            break;
        }
        let skip = (i + p.skip_window + 1).min(g - 1);
        let (mut best, mut best_j) = (-1.0f64, None);
        for j in i + 1..=skip.min(g - 1) {
            let s = group_sim(i, j);
            if s >= p.threshold && s > best {
                best = s;
                best_j = Some(j);
            }
        }
        out.push(starts[i]);
        i = best_j.map_or(i + 1, |j| j + 1);
    }
    out
}

/// chonkie's `_split_groups`: re-split groups over the cap (chonkie's `chunk_size`, 2048 by
/// default there) greedily.
#[must_use]
pub fn split_groups(starts: &[usize], tokens: &[usize], cap: Cap) -> Vec<usize> {
    let n = tokens.len();
    let cap = cap.limit();
    let mut out = Vec::with_capacity(starts.len());
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(n);
        let total: usize = tokens[s..e].iter().sum();
        out.push(s);
        if total <= cap {
            continue;
        }
        let mut cur = 0usize;
        let mut cur_len = 0usize;
        for (i, &t) in tokens.iter().enumerate().take(e).skip(s) {
            if cur.saturating_add(t) <= cap {
                cur += t;
                cur_len += 1;
            } else {
                if cur_len > 0 && i != s {
                    out.push(i);
                }
                cur = t;
                cur_len = 1;
            }
        }
    }
    out.dedup();
    out
}

/// The whole rule without the skip-window merge: chunk starts for `n` sentences.
#[must_use]
pub fn minima(sims: &[f64], tokens: &[usize], cap: Cap, p: &MinimaParams) -> Vec<usize> {
    let starts = split_starts(tokens.len(), sims, p);
    split_groups(&starts, tokens, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_sentences_or_points_give_one_chunk() {
        let p = MinimaParams::default();
        assert_eq!(minima(&[], &[1, 1, 1], Cap::NONE, &p), vec![0]);
        assert_eq!(minima(&[0.5, 0.4, 0.3], &[1; 6], Cap::NONE, &p), vec![0]);
        assert!(minima(&[], &[], Cap::NONE, &p).is_empty());
    }

    #[test]
    fn a_valley_splits() {
        // A clear dip at index 5 → a chunk starts at sentence 5 + W = 8.
        let sims = [0.9, 0.88, 0.86, 0.6, 0.3, 0.1, 0.3, 0.6, 0.86, 0.88, 0.9, 0.9];
        let p = MinimaParams { threshold: 0.5, ..MinimaParams::default() };
        let s = minima(&sims, &[1; 15], Cap::NONE, &p);
        assert!(s.contains(&8), "{s:?}");
    }

    #[test]
    fn groups_over_the_cap_are_repacked() {
        assert_eq!(split_groups(&[0], &[3, 3, 3, 3], Cap::new(6)), vec![0, 2]);
        assert_eq!(split_groups(&[0, 2], &[10, 1, 1, 1], Cap::new(5)), vec![0, 1, 2]);
    }
}
