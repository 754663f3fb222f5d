//! Max–Min semantic chunking (Kiss, Nagy, Szilágyi, "Max–Min semantic chunking of
//! documents for RAG application", Discover Computing 2025; the authors'
//! `maxmin_chunker.py`), exactly:
//!
//! ```text
//! current = [s0]; pairwise_min = -inf
//! for i in 1..n:
//!   if |C| > 1:
//!     sims = cos(e_i, C); adjusted = pairwise_min · c · σ(|C| − 1)   (min before update)
//!     new_sim = max(sims); pairwise_min = min(min(sims), pairwise_min)
//!   else:
//!     adjusted = 0; pairwise_min = cos(e_i, C); new_sim = init_const · pairwise_min
//!   if new_sim > max(adjusted, hard_thr): append s_i
//!   else: close the chunk; current = [s_i]; pairwise_min = -inf
//! ```
//!
//! Product extensions, all off by default so the reference result is unchanged: a hard
//! token cap ([`Cap`], none in the reference), and the band's width as the longest chunk in sentences (a
//! chunk that reaches it is closed; with a full band, `width >= n`, it never binds).

use crate::band::Band;
use crate::cap::Cap;

/// Max–Min parameters; the defaults are the paper's (tuned for bge-base-en-v1.5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxMinParams {
    pub c: f64,
    pub hard_thr: f64,
    pub init_const: f64,
}

impl Default for MaxMinParams {
    fn default() -> Self {
        Self { c: 0.9, hard_thr: 0.6, init_const: 1.5 }
    }
}

#[inline]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Chunk starts (sentence indices, first 0) for a document of `band.len()` sentences.
/// `tokens[i]` is sentence `i`'s token count (only read under a cap); no chunk grows past
/// `cap` tokens.
#[must_use]
pub fn maxmin(band: &Band, tokens: &[usize], cap: Cap, p: &MaxMinParams) -> Vec<usize> {
    let n = band.len();
    if n == 0 {
        return Vec::new();
    }
    let cap = cap.limit();
    let mut starts = vec![0];
    let mut start = 0;
    let mut pairwise_min = f64::NEG_INFINITY;
    let mut chunk_tokens = tokens.first().copied().unwrap_or(0);
    // c·σ(|C|−1) for every chunk size the band allows: no exp() in the loop.
    let factor: Vec<f64> = (0..=band.width().max(1)).map(|s| p.c * sigmoid(s as f64 - 1.0)).collect();
    for i in 1..n {
        let size = i - start;
        let t = tokens.get(i).copied().unwrap_or(0);
        let room = size < band.width() && chunk_tokens.saturating_add(t) <= cap;
        let (new_sim, adjusted) = if size > 1 {
            let adjusted = pairwise_min * factor[size.min(factor.len() - 1)];
            // The row holds cos(i, i-1), cos(i, i-2), …; the chunk is the first `size`.
            let row = &band.row(i)[..size.min(band.width())];
            let (mut mx, mut mn) = (f32::NEG_INFINITY, f32::INFINITY);
            for &s in row {
                mx = mx.max(s);
                mn = mn.min(s);
            }
            pairwise_min = pairwise_min.min(f64::from(mn));
            (f64::from(mx), adjusted)
        } else {
            pairwise_min = f64::from(band.sim(i, i - 1));
            (p.init_const * pairwise_min, 0.0)
        };
        if room && new_sim > adjusted.max(p.hard_thr) {
            chunk_tokens += t;
        } else {
            starts.push(i);
            start = i;
            pairwise_min = f64::NEG_INFINITY;
            chunk_tokens = t;
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        // s0–s1 similar (0.5·1.5 = 0.75 > 0.6), s2 similar to both, s3 unrelated.
        let sims = [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.8, 0.7, 0.0], [0.1, 0.2, 0.1]];
        let band = Band::from_fn(4, 3, |i, j| sims[i][i - 1 - j]);
        // i=2: |C|=2, adjusted = 0.5·0.9·σ(1) = 0.329; max(0.8, 0.7) = 0.8 > 0.6 → join.
        // i=3: |C|=3, adjusted = 0.5·0.9·σ(2) = 0.396; max = 0.2 ≤ 0.6 → new chunk.
        assert_eq!(maxmin(&band, &[1; 4], Cap::NONE, &MaxMinParams::default()), vec![0, 3]);
        // A cap of 2 tokens closes the first chunk after two sentences.
        assert_eq!(maxmin(&band, &[1; 4], Cap::new(2), &MaxMinParams::default()), vec![0, 2, 3]);
        assert!(maxmin(&Band::from_fn(0, 3, |_, _| 0.0), &[], Cap::NONE, &MaxMinParams::default()).is_empty());
    }
}
