//! Okapi BM25 (k1 = 1.5, b = 0.75) over lower-cased word tokens: the lexical retriever of
//! `eval retrieval --retriever bm25`, so chunkers are also compared under a retriever that
//! no embedding model shares a bias with.
//!
//! Tokens are maximal runs of alphanumeric characters, lower-cased; each CJK character is a
//! token of its own (those scripts are written without spaces). The idf is Lucene's,
//! `ln(1 + (N − df + 0.5) / (df + 0.5))`, never negative. Hand-written: forty lines, and
//! the crates that offer BM25 bring their own tokenizers and indexes we do not want.

use rustc_hash::FxHashMap;

const K1: f64 = 1.5;
const B: f64 = 0.75;

/// Lower-cased word tokens of `text`.
#[must_use]
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if crate::segment::is_cjk(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// An index over one document's chunks.
pub struct Bm25 {
    /// Term frequencies of each chunk.
    tf: Vec<FxHashMap<String, u32>>,
    len: Vec<f64>,
    df: FxHashMap<String, u32>,
    avg: f64,
}

impl Bm25 {
    #[must_use]
    pub fn new(chunks: &[String]) -> Self {
        let mut df: FxHashMap<String, u32> = FxHashMap::default();
        let mut tf = Vec::with_capacity(chunks.len());
        let mut len = Vec::with_capacity(chunks.len());
        for c in chunks {
            let toks = tokens(c);
            len.push(toks.len() as f64);
            let mut m: FxHashMap<String, u32> = FxHashMap::default();
            for t in toks {
                *m.entry(t).or_default() += 1;
            }
            for t in m.keys() {
                *df.entry(t.clone()).or_default() += 1;
            }
            tf.push(m);
        }
        let avg = len.iter().sum::<f64>() / len.len().max(1) as f64;
        Self { tf, len, df, avg: avg.max(1e-9) }
    }

    /// BM25 score of every chunk for `query`.
    #[must_use]
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.tf.len() as f64;
        let q = tokens(query);
        (0..self.tf.len())
            .map(|i| {
                q.iter()
                    .map(|t| {
                        let Some(&f) = self.tf[i].get(t) else { return 0.0 };
                        let df = f64::from(self.df.get(t).copied().unwrap_or(0));
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        let f = f64::from(f);
                        idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * self.len[i] / self.avg))
                    })
                    .sum()
            })
            .collect()
    }

    /// Chunk indices by descending score (ties: earlier chunk first).
    #[must_use]
    pub fn rank(&self, query: &str) -> Vec<usize> {
        let s = self.scores(query);
        let mut order: Vec<usize> = (0..s.len()).collect();
        order.sort_by(|&a, &b| s[b].total_cmp(&s[a]).then(a.cmp(&b)));
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_ranking() {
        assert_eq!(tokens("Hello, World! x2 中文"), ["hello", "world", "x2", "中", "文"]);
        let chunks: Vec<String> = ["the cat sat on the mat", "dogs bark at night", "a cat and a dog"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let idx = Bm25::new(&chunks);
        assert_eq!(idx.rank("barking dogs")[0], 1);
        assert_eq!(idx.rank("cat mat")[0], 0);
        // A hand-computed score: "night" appears once, in chunk 1 of length 4.
        let n = 3.0f64;
        let idf = (1.0 + (n - 1.0 + 0.5) / (1.0 + 0.5)).ln();
        let avg = (6.0 + 4.0 + 5.0) / 3.0;
        let want = idf * 2.5 / (1.0 + 1.5 * (0.25 + 0.75 * 4.0 / avg));
        assert!((idx.scores("night")[1] - want).abs() < 1e-12);
    }
}
