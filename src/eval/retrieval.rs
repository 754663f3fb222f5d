//! Retrieval quality by the GutenQA protocol (LumberChunker, Duarte et al. 2024): rank a
//! document's chunks by cosine to each question; a hit is the first retrieved chunk that
//! contains the question's `must_contain` string (compared case-insensitively, runs of
//! whitespace as one space, and all of ' " ‘ ’ “ ” as one character). DCG@k is the mean
//! over questions of `1 / log2(rank + 1)` for a hit within `k` (binary relevance), Recall@k
//! the share of questions with a hit within `k`.

/// The cut-offs reported.
pub const KS: [usize; 5] = [1, 2, 5, 10, 20];

/// Normalise text for the containment test.
#[must_use]
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        match c {
            '\'' | '"' | '\u{2018}' | '\u{2019}' | '\u{201C}' | '\u{201D}' => out.push('"'),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// The 1-based rank of the first chunk (in `ranking` order) whose normalised text contains
/// `needle` (already normalised), if any.
#[must_use]
pub fn hit_rank(ranking: &[usize], chunks_normalized: &[String], needle: &str) -> Option<usize> {
    ranking.iter().position(|&c| chunks_normalized[c].contains(needle)).map(|p| p + 1)
}

/// DCG@k and Recall@k (×100) for each k in [`KS`], from the hit ranks of all questions.
#[must_use]
pub fn scores(ranks: &[Option<usize>]) -> Vec<(usize, f64, f64)> {
    let q = ranks.len().max(1) as f64;
    KS.iter()
        .map(|&k| {
            let (mut dcg, mut rec) = (0.0, 0.0);
            for r in ranks.iter().flatten() {
                if *r <= k {
                    dcg += 1.0 / ((*r as f64) + 1.0).log2();
                    rec += 1.0;
                }
            }
            (k, 100.0 * dcg / q, 100.0 * rec / q)
        })
        .collect()
}

/// Chunk indices sorted by descending cosine to `query` (vectors L2-normalised, `dim` wide).
#[must_use]
pub fn rank(chunk_vectors: &[f32], dim: usize, query: &[f32]) -> Vec<usize> {
    let n = chunk_vectors.len().checked_div(dim).unwrap_or(0);
    let sims: Vec<f32> = (0..n)
        .map(|i| chunk_vectors[i * dim..(i + 1) * dim].iter().zip(query).map(|(a, b)| a * b).sum())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| sims[b].total_cmp(&sims[a]).then(a.cmp(&b)));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_and_scores() {
        assert_eq!(normalize("It’s  “Done”\n now"), "it\"s \"done\" now");
        let chunks: Vec<String> =
            ["alpha beta", "gamma \"delta\"", "epsilon"].iter().map(|s| normalize(s)).collect();
        assert_eq!(hit_rank(&[2, 1, 0], &chunks, &normalize("“Delta”")), Some(2));
        assert_eq!(hit_rank(&[2, 1, 0], &chunks, "zeta"), None);
        // Ranks 1, 3 and a miss: DCG@1 = 1/3, DCG@5 = (1 + 1/log2(4)) / 3 = 0.5; R@2 = 1/3.
        let s = scores(&[Some(1), Some(3), None]);
        assert!((s[0].1 - 100.0 / 3.0).abs() < 1e-9);
        assert!((s[2].1 - 50.0).abs() < 1e-9);
        assert!((s[1].2 - 100.0 / 3.0).abs() < 1e-9);
        assert!((s[2].2 - 200.0 / 3.0).abs() < 1e-9);
    }
}
