//! A global segmentation rule: every cut of a document chosen at once, by dynamic
//! programming over the similarity band, where Max–Min, minima and breakpoints decide each
//! seam from a few neighbours.
//!
//! A chunk's coherence is the length of the sum of its unit vectors,
//! `‖Σ v_i‖ = sqrt(Σ_{i,j} cos(i, j))`, which is also `Σ_i v_i·ĉ`, the summed similarity of
//! its units to the chunk's centroid direction: `k` units saying the same thing score `k`,
//! `k` unrelated ones about `√k`. The rule maximises
//!
//! ```text
//!   Σ_chunks ( ‖Σ_{i ∈ chunk} v_i‖ − λ )      subject to: every chunk within the token cap
//! ```
//!
//! Splitting never lowers the first term (the norm is subadditive), and the split between
//! two groups gains `‖A‖ + ‖B‖ − ‖A + B‖`: nothing for groups pointing the same way, most
//! for unrelated ones; a split is made where its gain beats the penalty λ. Everything comes
//! from the band: `‖Σ v‖²` of a chunk is the sum of its pairwise cosines, kept incrementally,
//! so one pass is `O(n·L)` for `n` units and chunks of at most `L` units (the band's width
//! and the cap bound `L`). The penalty is found by bisection so that the document's chunk
//! count gives the mean chunk size asked for (`target_tokens`): the rule then places that
//! many chunks where the seams are, exactly optimal for its objective (checked against
//! brute force in the tests). Unlike the text-tiling family (C99, Utiyama–Isahara's
//! probabilistic DP) nothing is estimated from word counts: the embedding does that work.
//!
//! A size prior can be added (`size_weight` μ): each chunk then also pays
//! `μ · ((t − T) / T)²` for its `t` tokens against the target `T`, so that among cuts of
//! similar coherence the DP prefers chunks near the size the retriever is given, as
//! recursive splitting's even packing does; the DP stays exact (the term depends on the
//! chunk alone).
//!
//! A seam term can be added (`depth_weight` β, `block` k): each cut also earns β times its
//! TextTiling depth score (Hearst 1997) — the cosine between the summed vectors of the `k`
//! units before and after the seam, and how far that dips below the nearest peaks on either
//! side — so that the DP weighs the local evidence for a seam (what Max–Min, minima and
//! breakpoints see) against the chunks' coherence. Block cosines come from the band too
//! (`‖Σ v‖²` and the cross terms are pairwise cosines within `2k − 1` units), and the term
//! depends on the cut alone, so the DP stays exact.
//!
//! Pure: a band and token counts in, chunk starts out.

use crate::band::Band;
use crate::cap::Cap;

/// Parameters of the global rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GlobalParams {
    /// The mean chunk size to aim for, in tokens; 0 means "no target": use `penalty`.
    pub target_tokens: usize,
    /// λ when there is no target.
    pub penalty: f64,
    /// μ, the weight of the size prior `μ · ((t − T) / T)²` per chunk of `t` tokens, `T`
    /// being `target_tokens` (or, without a target, the cap); 0 turns it off.
    pub size_weight: f64,
    /// β, the weight of each cut's depth score ([`depth_scores`]); 0 turns it off.
    pub depth_weight: f64,
    /// Units per block on each side of a seam for its depth score (at least 1; the band's
    /// width limits it to `(width + 1) / 2`).
    pub block: usize,
    /// γ, the weight of the structure prior: not read by the rule itself; the chunker turns it
    /// into the `prior` it passes ([`crate::segment::structure::heading_prior`]).
    pub heading_weight: f64,
}

impl Default for GlobalParams {
    fn default() -> Self {
        Self {
            target_tokens: 192,
            penalty: 0.5,
            size_weight: 0.0,
            depth_weight: 0.0,
            block: 2,
            heading_weight: 0.0,
        }
    }
}

/// The size prior: a chunk of `t` tokens pays `weight · ((t − target) / target)²`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizePrior {
    /// Tokens a chunk should hold.
    pub target: f64,
    /// μ; 0 is no prior.
    pub weight: f64,
}

impl SizePrior {
    /// No prior.
    pub const NONE: Self = Self { target: 1.0, weight: 0.0 };

    fn cost(self, tokens: usize) -> f64 {
        if self.weight == 0.0 {
            return 0.0;
        }
        let d = (tokens as f64 - self.target) / self.target;
        self.weight * d * d
    }
}

/// TextTiling depth scores from the band: entry `g` (for `1 <= g < n`; entry 0 is 0) scores a
/// cut before unit `g`. The gap's similarity is the cosine between the sums of the `block`
/// units before and after it (fewer at the document's ends; `block` is limited to what the
/// band reaches, `(width + 1) / 2`); its depth is how far that lies below the highest
/// similarity reached climbing monotonically to the left, plus the same to the right
/// (Hearst 1997). Deep gaps are seams between two locally coherent stretches.
#[must_use]
pub fn depth_scores(band: &Band, block: usize) -> Vec<f64> {
    let n = band.len();
    if n < 2 || band.width() == 0 {
        return vec![0.0; n];
    }
    let k = block.max(1).min(band.width().div_ceil(2));
    // Gap similarities for g = 1..n (index g − 1).
    let sq = |a: usize, b: usize| -> f64 {
        // ‖Σ_{a..b} v‖²: b − a plus twice the pairwise cosines.
        let mut q = (b - a) as f64;
        for i in a..b {
            for j in a..i {
                q += 2.0 * f64::from(band.sim(i, j));
            }
        }
        q.max(1e-12)
    };
    let sims: Vec<f64> = (1..n)
        .map(|g| {
            let (a, b) = (g.saturating_sub(k), (g + k).min(n));
            let mut cross = 0f64;
            for i in g..b {
                for j in a..g {
                    cross += f64::from(band.sim(i, j));
                }
            }
            cross / (sq(a, g) * sq(g, b)).sqrt()
        })
        .collect();
    // The peak reached climbing left while values do not fall is the previous gap's when it
    // is at least this one's, else this value: one pass each way, O(n) also on flat runs.
    let m = sims.len();
    let mut left = sims.clone();
    for x in 1..m {
        if sims[x - 1] >= sims[x] {
            left[x] = left[x - 1];
        }
    }
    let mut right = sims.clone();
    for x in (0..m.saturating_sub(1)).rev() {
        if sims[x + 1] >= sims[x] {
            right[x] = right[x + 1];
        }
    }
    let mut depth = vec![0f64; n];
    for (x, &s) in sims.iter().enumerate() {
        depth[x + 1] = (left[x] - s) + (right[x] - s);
    }
    depth
}

/// Units a chunk may hold: the band reaches `width` back, and no run of units from any
/// start fits the cap past [`super::sizing::max_units`].
fn max_units(band: &Band, tokens: &[usize], cap: Cap) -> usize {
    super::sizing::max_units(tokens, cap).min(band.width() + 1).max(1)
}

/// Prefix sums of each band row over its first `l − 1` entries: `pre[e·l + k]` is
/// `Σ_{m=1..k} cos(e, e−m)`.
fn row_prefix(band: &Band, l: usize) -> Vec<f64> {
    let n = band.len();
    let mut pre = vec![0f64; n * l];
    for e in 0..n {
        let row = band.row(e);
        let mut s = 0f64;
        for k in 1..l.min(e + 1) {
            s += f64::from(row[k - 1]);
            pre[e * l + k] = s;
        }
    }
    pre
}

/// The best segmentation for penalty `lambda`, size prior `size` and seam bonuses `seam`
/// (`seam[g]` earned by a cut before unit `g`; empty for none): chunk starts and the
/// objective's value. Ties go to the earlier start (deterministic).
#[must_use]
pub fn segment(
    band: &Band,
    tokens: &[usize],
    cap: Cap,
    lambda: f64,
    size: SizePrior,
    seam: &[f64],
) -> (Vec<usize>, f64) {
    let n = tokens.len();
    if n == 0 {
        return (Vec::new(), 0.0);
    }
    let l = max_units(band, tokens, cap);
    let pre = row_prefix(band, l);
    segment_with(&pre, l, tokens, cap.limit(), lambda, size, seam)
}

fn segment_with(
    pre: &[f64],
    l: usize,
    tokens: &[usize],
    cap: usize,
    lambda: f64,
    size: SizePrior,
    seam: &[f64],
) -> (Vec<usize>, f64) {
    let n = tokens.len();
    let mut best = vec![f64::NEG_INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for a in 0..n {
        if best[a] == f64::NEG_INFINITY {
            continue;
        }
        let base = best[a] + if a > 0 { seam.get(a).copied().unwrap_or(0.0) } else { 0.0 };
        let (mut q, mut tok) = (0f64, 0usize);
        for e in a + 1..=(a + l).min(n) {
            let u = e - 1;
            tok = tok.saturating_add(tokens[u]);
            // A single unit over the cap is its own chunk (units are cut to the cap before).
            if tok > cap && e > a + 1 {
                break;
            }
            q += 1.0 + 2.0 * pre[u * l + (u - a)];
            let v = base + q.max(0.0).sqrt() - lambda - size.cost(tok);
            if v > best[e] {
                best[e] = v;
                from[e] = a;
            }
        }
    }
    let mut starts = Vec::new();
    let mut e = n;
    while e > 0 {
        e = from[e];
        starts.push(e);
    }
    starts.reverse();
    (starts, best[n])
}

/// The objective of a segmentation for penalty `lambda`, size prior `size` and seam bonuses
/// `seam`, computed directly from the band (for tests and reports).
#[must_use]
pub fn objective(
    band: &Band,
    tokens: &[usize],
    starts: &[usize],
    lambda: f64,
    size: SizePrior,
    seam: &[f64],
) -> f64 {
    let n = band.len();
    let cuts: f64 = starts.iter().filter(|&&g| g > 0).map(|&g| seam.get(g).copied().unwrap_or(0.0)).sum();
    cuts + (0..starts.len())
        .map(|k| {
            let (a, b) = (starts[k], starts.get(k + 1).copied().unwrap_or(n));
            let mut q = (b - a) as f64;
            for i in a..b {
                for j in a..i {
                    q += 2.0 * f64::from(band.sim(i, j));
                }
            }
            q.max(0.0).sqrt() - lambda - size.cost(tokens[a..b].iter().sum())
        })
        .sum::<f64>()
}

/// Chunk starts (unit indices, first 0) for a document of `band.len()` units with
/// `tokens[i]` tokens each: the optimal segmentation under the penalty whose chunk count
/// comes closest to `total tokens / target_tokens` (the fewer chunks on a tie). `prior[g]`
/// (empty for none) is added to the bonus of a cut before unit `g`: seam evidence from
/// outside the band, such as structure.
#[must_use]
pub fn global(band: &Band, tokens: &[usize], cap: Cap, prior: &[f64], p: &GlobalParams) -> Vec<usize> {
    let n = tokens.len();
    if n == 0 {
        return Vec::new();
    }
    let l = max_units(band, tokens, cap);
    let pre = row_prefix(band, l);
    // The prior's target: the size asked for, else the cap; neither, no prior.
    let size = match if p.target_tokens > 0 { p.target_tokens } else { cap.max_tokens() } {
        0 => SizePrior::NONE,
        t => SizePrior { target: t as f64, weight: p.size_weight },
    };
    let mut seam: Vec<f64> = if p.depth_weight > 0.0 {
        depth_scores(band, p.block).into_iter().map(|d| p.depth_weight * d).collect()
    } else {
        Vec::new()
    };
    if !prior.is_empty() {
        seam.resize(n, 0.0);
        for (s, q) in seam.iter_mut().zip(prior) {
            *s += q;
        }
    }
    if p.target_tokens == 0 {
        return segment_with(&pre, l, tokens, cap.limit(), p.penalty, size, &seam).0;
    }
    let total: usize = tokens.iter().sum();
    let want = (total as f64 / p.target_tokens as f64).round().max(1.0);
    // The chunk count falls as λ grows; a split can gain at most n in coherence, plus what it
    // saves of the size prior (a chunk of t ≤ total tokens pays at most the larger of the
    // prior at 0 and at total tokens), plus the largest seam bonus.
    // A negative bonus (a prior against a cut) is made up for by a negative penalty.
    let top = seam.iter().copied().fold(0f64, f64::max);
    let bottom = seam.iter().copied().fold(0f64, f64::min);
    let (mut lo, mut hi) = (bottom, n as f64 + 1.0 + size.cost(total).max(size.cost(0)) + top);
    let mut pick = segment_with(&pre, l, tokens, cap.limit(), hi, size, &seam).0;
    let score = |s: &[usize]| (s.len() as f64 - want).abs();
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        let s = segment_with(&pre, l, tokens, cap.limit(), mid, size, &seam).0;
        let better = score(&s) < score(&pick) || (score(&s) == score(&pick) && s.len() < pick.len());
        if s.len() as f64 > want {
            lo = mid;
        } else {
            hi = mid;
        }
        if better {
            pick = s;
        }
        if score(&pick) == 0.0 {
            break;
        }
    }
    pick
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: &mut u64) -> f64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed % 10_000) as f64 / 10_000.0
    }

    /// A band from random unit vectors in a few topics, so that seams exist.
    fn random_case(seed: &mut u64, n: usize) -> (Band, Vec<usize>) {
        let dim = 4;
        let mut v = Vec::new();
        let mut topic = 0;
        for _ in 0..n {
            if rng(seed) < 0.3 {
                topic = (topic + 1) % dim;
            }
            let mut x: Vec<f64> = (0..dim).map(|_| rng(seed) * 0.6).collect();
            x[topic] += 1.0;
            let norm = x.iter().map(|a| a * a).sum::<f64>().sqrt();
            v.extend(x.iter().map(|a| (a / norm) as f32));
        }
        let tokens = (0..n).map(|_| 1 + (rng(seed) * 6.0) as usize).collect();
        (Band::from_vectors(&v, dim, n.max(1)), tokens)
    }

    #[test]
    fn the_dynamic_program_finds_the_brute_force_optimum() {
        let mut seed = 0x2545_F491_4F6C_DD1D;
        for case in 0..400 {
            let n = 1 + case % 9;
            let (band, tokens) = random_case(&mut seed, n);
            let cap = [0, 6, 9, 14][case % 4];
            let lambda = rng(&mut seed) * 2.0;
            // Half the cases with a size prior (targets around a few units' tokens).
            let size = if case % 2 == 0 {
                SizePrior::NONE
            } else {
                SizePrior { target: 2.0 + rng(&mut seed) * 10.0, weight: rng(&mut seed) * 3.0 }
            };
            // A third of the cases with depth-score seam bonuses.
            let seam: Vec<f64> = if case % 3 == 0 {
                let w = rng(&mut seed) * 2.0;
                // Plus a signed prior (structure can argue against a cut).
                depth_scores(&band, 1 + case % 3).into_iter().map(|d| w * d + rng(&mut seed) - 0.5).collect()
            } else {
                Vec::new()
            };
            let (starts, value) = segment(&band, &tokens, Cap::new(cap), lambda, size, &seam);
            assert!((objective(&band, &tokens, &starts, lambda, size, &seam) - value).abs() < 1e-9);
            let mut best = f64::NEG_INFINITY;
            for mask in 0u32..(1 << (n - 1)) {
                let s: Vec<usize> =
                    std::iter::once(0).chain((1..n).filter(|&i| mask & (1 << (i - 1)) != 0)).collect();
                let fits = (0..s.len()).all(|k| {
                    let (a, b) = (s[k], s.get(k + 1).copied().unwrap_or(n));
                    b - a == 1 || Cap::new(cap).admits(tokens[a..b].iter().sum::<usize>())
                });
                if fits {
                    best = best.max(objective(&band, &tokens, &s, lambda, size, &seam));
                }
            }
            assert!((best - value).abs() < 1e-9, "case {case}: dp {value} vs brute force {best}");
        }
    }

    #[test]
    fn cuts_cover_respect_the_cap_and_land_on_topic_changes() {
        let mut seed = 7;
        for n in [1, 2, 5, 40, 300] {
            let (band, tokens) = random_case(&mut seed, n);
            for target in [0, 4, 12, 40] {
                let p = GlobalParams {
                    target_tokens: target,
                    penalty: 0.3,
                    size_weight: 1.0,
                    depth_weight: if n % 2 == 0 { 2.0 } else { 0.0 },
                    block: 2,
                    heading_weight: 0.0,
                };
                let s = global(&band, &tokens, Cap::new(24), &[], &p);
                assert_eq!(s[0], 0);
                assert!(s.windows(2).all(|w| w[0] < w[1]) && *s.last().unwrap() < n);
                for k in 0..s.len() {
                    let (a, b) = (s[k], s.get(k + 1).copied().unwrap_or(n));
                    assert!(b - a == 1 || tokens[a..b].iter().sum::<usize>() <= 24);
                }
            }
        }
        // Two clean topics: one cut, exactly between them.
        let v: Vec<f32> = (0..10).flat_map(|i| if i < 6 { [1.0, 0.0] } else { [0.0, 1.0] }).collect();
        let band = Band::from_vectors(&v, 2, 10);
        let s = global(
            &band,
            &[10; 10],
            Cap::NONE,
            &[],
            &GlobalParams { target_tokens: 50, penalty: 0.0, ..GlobalParams::default() },
        );
        assert_eq!(s, vec![0, 6]);
        // A strong size prior with a target of half the text moves the cut to the middle.
        let s = global(
            &band,
            &[10; 10],
            Cap::NONE,
            &[],
            &GlobalParams { target_tokens: 50, penalty: 0.0, size_weight: 100.0, ..GlobalParams::default() },
        );
        assert_eq!(s, vec![0, 5]);
    }

    #[test]
    fn the_target_sets_the_chunk_count() {
        let mut seed = 99;
        let (band, tokens) = random_case(&mut seed, 200);
        let total: usize = tokens.iter().sum();
        for target in [10, 20, 40] {
            let s = global(
                &band,
                &tokens,
                Cap::NONE,
                &[],
                &GlobalParams { target_tokens: target, penalty: 0.0, ..GlobalParams::default() },
            );
            let want = (total as f64 / target as f64).round();
            assert!(
                (s.len() as f64 - want).abs() <= want * 0.15 + 1.0,
                "target {target}: {} chunks, want {want}",
                s.len()
            );
        }
    }

    #[test]
    fn a_size_prior_evens_chunk_sizes_at_the_same_count() {
        let mut seed = 5;
        let (band, tokens) = random_case(&mut seed, 300);
        let spread = |w: f64| {
            let p =
                GlobalParams { target_tokens: 20, penalty: 0.0, size_weight: w, ..GlobalParams::default() };
            let s = global(&band, &tokens, Cap::new(40), &[], &p);
            let sizes: Vec<f64> = (0..s.len())
                .map(|k| tokens[s[k]..s.get(k + 1).copied().unwrap_or(300)].iter().sum::<usize>() as f64)
                .collect();
            let mean = sizes.iter().sum::<f64>() / sizes.len() as f64;
            (s.len(), (sizes.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / sizes.len() as f64).sqrt())
        };
        let (n0, sd0) = spread(0.0);
        let (n1, sd1) = spread(4.0);
        assert!((n0 as f64 - n1 as f64).abs() <= 0.1 * n0 as f64, "{n0} vs {n1} chunks");
        assert!(sd1 < 0.8 * sd0, "size spread {sd1} with the prior, {sd0} without");
    }

    #[test]
    fn depth_scores_peak_at_the_topic_change() {
        // Units 0..6 on one topic, 6..12 on another, with a little noise inside each.
        let v: Vec<f32> = (0..12)
            .flat_map(|i| {
                let e = 0.1 * (i % 3) as f32;
                let x = if i < 6 { [1.0, e, 0.0] } else { [0.0, e, 1.0] };
                let norm = x.iter().map(|a| a * a).sum::<f32>().sqrt();
                x.map(|a| a / norm)
            })
            .collect();
        for (width, block) in [(11, 1), (11, 2), (11, 3), (3, 5)] {
            let band = Band::from_vectors(&v, 3, width);
            let d = depth_scores(&band, block);
            assert_eq!(d.len(), 12);
            assert_eq!(d[0], 0.0);
            assert!(d.iter().all(|&x| x >= 0.0));
            let top = (1..12).max_by(|&a, &b| d[a].total_cmp(&d[b])).unwrap();
            assert_eq!(top, 6, "width {width}, block {block}: {d:?}");
            assert!(d[6] > 1.5, "{d:?}");
        }
        assert_eq!(depth_scores(&Band::from_vectors(&[1.0], 1, 1), 2), vec![0.0]);
        assert!(depth_scores(&Band::from_vectors(&[], 1, 1), 2).is_empty());
    }

    #[test]
    fn a_depth_weight_moves_the_cut_to_the_deepest_seam() {
        // Coherence alone would cut the 12 units evenly at the target; a large depth weight
        // cuts at the topic change (unit 4), keeping the cap.
        let v: Vec<f32> = (0..12).flat_map(|i| if i < 4 { [1.0, 0.0] } else { [0.6, 0.8] }).collect();
        let band = Band::from_vectors(&v, 2, 11);
        let p = GlobalParams {
            target_tokens: 60,
            penalty: 0.0,
            size_weight: 50.0,
            depth_weight: 0.0,
            block: 2,
            heading_weight: 0.0,
        };
        assert_eq!(global(&band, &[10; 12], Cap::NONE, &[], &p), vec![0, 6]);
        assert_eq!(
            global(&band, &[10; 12], Cap::NONE, &[], &GlobalParams { depth_weight: 100.0, ..p }),
            vec![0, 4]
        );
    }

    #[test]
    fn a_prior_moves_cuts_and_a_negative_one_keeps_them_away() {
        // Uniform vectors: coherence is indifferent to where the one cut goes (ties go early).
        let v: Vec<f32> = (0..10).flat_map(|_| [1.0, 0.0]).collect();
        let band = Band::from_vectors(&v, 2, 9);
        let p = GlobalParams { target_tokens: 50, penalty: 0.0, ..GlobalParams::default() };
        let plain = global(&band, &[10; 10], Cap::new(70), &[], &p);
        assert_eq!(plain.len(), 2);
        let mut prior = vec![0.0; 10];
        prior[7] = 1.0;
        assert_eq!(global(&band, &[10; 10], Cap::new(70), &prior, &p), vec![0, 7]);
        // Against a cut at 3, 4, 5 and 6: the cap (7 units) leaves only 7 … 3; 7 wins.
        let mut prior = vec![0.0; 10];
        prior[3..7].fill(-1.0);
        assert_eq!(global(&band, &[10; 10], Cap::new(70), &prior, &p), vec![0, 7]);
    }

    /// Hearst's climb, one gap at a time (the definition the one-pass version must equal).
    fn depth_naive(sims: &[f64]) -> Vec<f64> {
        (0..sims.len())
            .map(|x| {
                let (mut left, mut i) = (sims[x], x);
                while i > 0 && sims[i - 1] >= left {
                    left = sims[i - 1];
                    i -= 1;
                }
                let (mut right, mut i) = (sims[x], x);
                while i + 1 < sims.len() && sims[i + 1] >= right {
                    right = sims[i + 1];
                    i += 1;
                }
                (left - sims[x]) + (right - sims[x])
            })
            .collect()
    }

    #[test]
    fn depth_scores_equal_the_climb_and_stay_linear_on_flat_runs() {
        let mut seed = 11;
        for n in [2, 3, 10, 60] {
            let (band, _) = random_case(&mut seed, n);
            for block in [1, 2, 3] {
                // Block similarities (block 1: adjacent cosines) through the naive climb.
                let d = depth_scores(&band, block);
                let k = block.min(band.width().div_ceil(2));
                let sims: Vec<f64> = (1..n)
                    .map(|g| {
                        let (a, b) = (g.saturating_sub(k), (g + k).min(n));
                        let sq = |lo: usize, hi: usize| {
                            let mut q = (hi - lo) as f64;
                            for i in lo..hi {
                                for j in lo..i {
                                    q += 2.0 * f64::from(band.sim(i, j));
                                }
                            }
                            q.max(1e-12)
                        };
                        let cross: f64 = (g..b)
                            .flat_map(|i| (a..g).map(move |j| (i, j)))
                            .map(|(i, j)| f64::from(band.sim(i, j)))
                            .sum();
                        cross / (sq(a, g) * sq(g, b)).sqrt()
                    })
                    .collect();
                let want: Vec<f64> = std::iter::once(0.0).chain(depth_naive(&sims)).collect();
                assert!(d.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-12), "n {n} block {block}");
            }
        }
        // A long flat document (identical units): all depths 0 (in linear time: a quadratic
        // climb shows as a test that takes minutes; the time is measured, not asserted, by
        // `cargo bench --bench rules -- worst_cases`).
        let v: Vec<f32> = (0..200_000).flat_map(|_| [1.0f32, 0.0]).collect();
        let band = Band::from_vectors(&v, 2, 3);
        // A quadratic climb shows as a hang here; measured: `cargo bench --bench rules -- worst_cases`.
        assert!(depth_scores(&band, 2).iter().all(|&x| x.abs() < 1e-9));
        // No look-back at all: no scores, no panic.
        assert_eq!(depth_scores(&Band::from_parts(3, 0, Vec::new()), 2), vec![0.0; 3]);
    }
}
