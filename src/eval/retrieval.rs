//! Retrieval quality by the GutenQA protocol (LumberChunker, Duarte et al. 2024): rank a
//! document's chunks by cosine to each question; a hit is the first retrieved chunk that
//! contains the question's `must_contain` string (compared case-insensitively, runs of
//! whitespace as one space, and all of ' " ‘ ’ “ ” as one character). DCG@k is the mean
//! over questions of `1 / log2(rank + 1)` for a hit within `k` (binary relevance), Recall@k
//! the share of questions with a hit within `k`.

use crate::embed::{embed_texts, Embedder};
use crate::sizer::Sizer;
use crate::Result;

/// The cut-offs reported.
pub const KS: [usize; 5] = [1, 2, 5, 10, 20];

/// One question: its text and the string the retrieved chunk must contain.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Question {
    pub question: String,
    pub must_contain: String,
}

/// One document's chunks with the questions asked of it. Each question ranks only the
/// chunks of its own document, as in GutenQA (one book at a time).
#[derive(Debug, Clone)]
pub struct Case<'a> {
    pub chunks: Vec<String>,
    pub questions: &'a [Question],
}

/// Scores over all questions of all cases.
#[derive(Debug, Clone)]
pub struct Report {
    pub chunks: usize,
    /// Mean tokens per chunk, by the sizer given.
    pub mean_tokens: f64,
    pub questions: usize,
    /// The 1-based rank of each question's first hit (in case order), if any.
    pub ranks: Vec<Option<usize>>,
    /// (k, DCG@k, Recall@k), metrics ×100, for each k in [`KS`].
    pub scores: Vec<(usize, f64, f64)>,
}

/// Embed every case's chunks and questions with `retriever` (chunk text past its window is
/// cut, as sentence-transformers does), rank each document's chunks per question, and score.
pub fn evaluate(retriever: &dyn Embedder, cases: &[Case<'_>], sizer: &dyn Sizer) -> Result<Report> {
    let mut ranks = Vec::new();
    let (mut chunks, mut tokens) = (0, 0);
    for case in cases {
        let q_refs: Vec<&str> = case.questions.iter().map(|q| q.question.as_str()).collect();
        let (qv, _) = embed_texts(retriever, &q_refs, Default::default())?;
        let refs: Vec<&str> = case.chunks.iter().map(String::as_str).collect();
        let (cv, _) = embed_texts(retriever, &refs, Default::default())?;
        let norm: Vec<String> = case.chunks.iter().map(|t| normalize(t)).collect();
        for (i, q) in case.questions.iter().enumerate() {
            ranks.push(hit_rank(&rank(&cv.data, cv.dim, qv.row(i)), &norm, &normalize(&q.must_contain)));
        }
        chunks += case.chunks.len();
        tokens += case.chunks.iter().map(|t| sizer.count(t)).sum::<usize>();
    }
    Ok(Report {
        chunks,
        mean_tokens: tokens as f64 / chunks.max(1) as f64,
        questions: ranks.len(),
        scores: scores(&ranks),
        ranks,
    })
}

/// The cap in `lo..=hi` at which `mean_at(cap)` (a chunker's mean chunk size at that cap,
/// roughly increasing in it) comes closest to `target`: bisection, then the better of the
/// two neighbours. Used to compare baselines with an embedding chunker at the same mean
/// chunk size.
pub fn cap_for_mean(target: f64, lo: usize, hi: usize, mut mean_at: impl FnMut(usize) -> f64) -> usize {
    let (mut a, mut b) = (lo.max(1), hi.max(lo.max(1)));
    while b - a > 1 {
        let mid = a + (b - a) / 2;
        if mean_at(mid) < target {
            a = mid;
        } else {
            b = mid;
        }
    }
    let (ma, mb) = (mean_at(a), mean_at(b));
    if (ma - target).abs() <= (mb - target).abs() {
        a
    } else {
        b
    }
}

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

/// Read a JSONL file of `T` records, naming the file and its line on a bad record; blank
/// lines are skipped.
///
/// # Errors
/// If the file cannot be read or a line is not a `T` (`what` says what one needs).
pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &std::path::Path, what: &str) -> Result<Vec<T>> {
    let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| crate::Error::Record {
                path: path.display().to_string(),
                line: i + 1,
                message: format!("{what}: {e}"),
            })
        })
        .collect()
}

/// Score a chunk file (any JSONL with a `text` field: seamcut's or another tool's) on one
/// question set.
///
/// # Errors
/// If the file cannot be read, or there is not exactly one question set.
pub fn evaluate_chunk_file(
    path: &std::path::Path,
    questions: &[Vec<Question>],
    retriever: &dyn Embedder,
    sizer: &dyn Sizer,
) -> Result<Report> {
    #[derive(serde::Deserialize)]
    struct ChunkText {
        text: String,
    }
    let [questions] = questions else {
        return Err(crate::Error::Config(format!(
            "{} --questions file(s) for one --chunks file: give one",
            questions.len()
        )));
    };
    let records: Vec<ChunkText> = read_jsonl(path, "a chunk needs a string \"text\"")?;
    let chunks = records.into_iter().map(|r| r.text).collect();
    evaluate(retriever, &[Case { chunks, questions }], sizer)
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

    #[test]
    fn cap_search_finds_the_closest_mean() {
        // Mean chunk size 0.8 × cap, as a packing chunker roughly gives.
        let mut calls = 0;
        let cap = cap_for_mean(100.0, 8, 1024, |c| {
            calls += 1;
            0.8 * c as f64
        });
        assert_eq!(cap, 125);
        assert!(calls <= 14, "{calls} evaluations");
        // Out of range: the nearest end.
        assert_eq!(cap_for_mean(5000.0, 8, 1024, |c| c as f64), 1024);
        assert_eq!(cap_for_mean(1.0, 8, 1024, |c| c as f64), 8);
        // A step function: the step nearest the target.
        assert_eq!(cap_for_mean(47.0, 1, 100, |c| (c / 10 * 10) as f64), 50);
    }
}
