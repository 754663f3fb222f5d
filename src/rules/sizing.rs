//! The sizing pass shared by every semantic rule: split any chunk over the token cap at
//! its weakest internal seam (the lowest similarity between neighbouring sentences), and
//! merge chunks under the minimum into the more similar neighbour when the cap allows.
//! Pure: chunk starts, per-unit token counts and seam similarities in; chunk starts out.

use crate::cap::Cap;

/// The most units any chunk can hold under `cap`: the longest run of consecutive units whose
/// tokens fit, at least 1. Rules that compare a unit with the rest of its chunk need a band
/// no wider than this.
#[must_use]
pub fn max_units(tokens: &[usize], cap: Cap) -> usize {
    let n = tokens.len();
    let Some(max_tokens) = cap.get() else {
        return n.max(1);
    };
    let mut longest = 1;
    let (mut b, mut sum) = (0usize, 0usize);
    for a in 0..n {
        if b < a {
            b = a;
            sum = 0;
        }
        while b < n && (b == a || sum + tokens[b] <= max_tokens) {
            sum += tokens[b];
            b += 1;
        }
        longest = longest.max(b - a);
        sum -= tokens[a];
    }
    longest
}

/// `seam[i]` is the similarity between unit `i − 1` and unit `i` (`seam[0]` unused).
#[must_use]
pub fn size(starts: &[usize], tokens: &[usize], seam: &[f32], cap: Cap, min_tokens: usize) -> Vec<usize> {
    let n = tokens.len();
    if n == 0 {
        return Vec::new();
    }
    let cap = cap.limit();
    let mut prefix = vec![0usize; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i].saturating_add(tokens[i]);
    }
    let sum = |a: usize, b: usize| prefix[b] - prefix[a];
    // Split: every chunk over the cap at its weakest seam, recursively.
    let mut out = Vec::with_capacity(starts.len());
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(n);
        stack.push((s, e));
        while let Some((a, b)) = stack.pop() {
            if sum(a, b) <= cap || b - a <= 1 {
                out.push(a);
                continue;
            }
            let cut =
                (a + 1..b).min_by(|&x, &y| seam[x].total_cmp(&seam[y]).then(y.cmp(&x))).unwrap_or(a + 1);
            // Process the left part first: push right, then left.
            stack.push((cut, b));
            stack.push((a, cut));
        }
    }
    if min_tokens == 0 || out.len() < 2 {
        return out;
    }
    // Merge: a chunk under the minimum joins the neighbour across the stronger seam. The
    // chunks form a doubly linked list over indices, so that each merge is O(1) (removing
    // from a Vec made this pass quadratic on documents with many small chunks).
    let m = out.len();
    let mut end: Vec<usize> = (0..m).map(|k| out.get(k + 1).copied().unwrap_or(n)).collect();
    let mut next: Vec<usize> = (1..=m).collect(); // m = none
    let mut prev: Vec<usize> = (0..m).map(|k| k.wrapping_sub(1)).collect(); // usize::MAX = none
    let mut alive = m;
    let mut k = 0;
    while k < m {
        let (a, b) = (out[k], end[k]);
        if sum(a, b) >= min_tokens || alive < 2 {
            k = next[k];
            continue;
        }
        let p = prev[k];
        let q = next[k];
        let left = (p != usize::MAX).then(|| (seam[a], sum(out[p], b)));
        let right = (q < m).then(|| (seam[out[q]], sum(a, end[q])));
        let pick = match (left, right) {
            (Some((ls, lt)), Some((rs, rt))) => {
                if ls >= rs && lt <= cap {
                    Some(false)
                } else if rt <= cap {
                    Some(true)
                } else if lt <= cap {
                    Some(false)
                } else {
                    None
                }
            }
            (Some((_, lt)), None) => (lt <= cap).then_some(false),
            (None, Some((_, rt))) => (rt <= cap).then_some(true),
            (None, None) => None,
        };
        match pick {
            Some(true) => {
                // k absorbs q; look at k again.
                end[k] = end[q];
                next[k] = next[q];
                if next[q] < m {
                    prev[next[q]] = k;
                }
                alive -= 1;
            }
            Some(false) => {
                // p absorbs k; look at p again.
                end[p] = b;
                next[p] = q;
                if q < m {
                    prev[q] = p;
                }
                alive -= 1;
                k = p;
            }
            None => k = q,
        }
    }
    let mut starts = Vec::with_capacity(alive);
    let mut k = 0;
    while k < m {
        starts.push(out[k]);
        k = next[k];
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_weakest_seam_and_merges_small() {
        let tokens = [4, 4, 4, 4];
        let seam = [0.0, 0.9, 0.2, 0.8];
        assert_eq!(size(&[0], &tokens, &seam, Cap::new(8), 0), vec![0, 2]);
        // A 4-token chunk under min 5 joins the side with the stronger seam.
        assert_eq!(size(&[0, 1, 2], &[4, 4, 8], &[0.0, 0.9, 0.2], Cap::new(8), 5), vec![0, 2]);
        assert_eq!(size(&[0], &[20], &[0.0], Cap::new(8), 0), vec![0], "a single unit is never split");
        // Merges cascade: three 2-token chunks under min 5 become one, then stop at the cap.
        assert_eq!(size(&[0, 1, 2, 3], &[2, 2, 2, 9], &[0.0, 0.5, 0.5, 0.1], Cap::new(9), 5), vec![0, 3]);
    }

    #[test]
    fn merging_many_small_chunks_is_linear() {
        // 400k one-token sentences, each its own chunk: merging into 8-token chunks must not
        // be quadratic (this took minutes when merges removed from a Vec; a regression shows
        // as a test that takes minutes). Its time is measured, not asserted:
        // `cargo bench --bench rules -- worst_cases`.
        let n = 400_000;
        let tokens = vec![1; n];
        let seam: Vec<f32> = (0..n).map(|i| (i % 7) as f32 / 7.0).collect();
        let starts: Vec<usize> = (0..n).collect();
        let out = size(&starts, &tokens, &seam, Cap::new(64), 8);
        assert!(out.windows(2).all(|w| w[1] - w[0] >= 8 || w[1] == n), "every chunk reaches the minimum");
        assert_eq!(out[0], 0);
    }
}
