//! Retrieval quality by the GutenQA protocol (LumberChunker, Duarte et al. 2024): rank a
//! document's chunks by cosine to each question; a hit is the first retrieved chunk that
//! contains the question's `must_contain` string (compared case-insensitively, runs of
//! whitespace as one space, and all of ' " ‘ ’ “ ” as one character). DCG@k is the mean
//! over questions of `1 / log2(rank + 1)` for a hit within `k` (binary relevance), Recall@k
//! the share of questions with a hit within `k`.

use std::sync::Arc;

use crate::embed::{embed_texts, Embedder};
use crate::sizer::Sizer;
use crate::Result;

/// The cut-offs reported.
pub const KS: [usize; 5] = [1, 2, 5, 10, 20];

/// One question: its text, the string the retrieved chunk must contain, and optionally
/// the byte spans of its document that answer it (for the span metrics).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Question {
    pub question: String,
    pub must_contain: String,
    #[serde(default)]
    pub evidence: Vec<[usize; 2]>,
}

/// One document's chunks with the questions asked of it. Each question ranks only the
/// chunks of its own document, as in GutenQA (one book at a time). `spans` are the chunks'
/// byte ranges in the document, when known (the span metrics need them).
#[derive(Debug, Clone)]
pub struct Case<'a> {
    pub chunks: Vec<String>,
    pub spans: Vec<(usize, usize)>,
    pub questions: &'a [Question],
    /// The document the chunks come from (`""` when unknown): what a late pass reads.
    pub document: &'a str,
    /// Each chunk's context ([`crate::segment::structure::contexts`]) when the index keeps it
    /// with the text: BM25 indexes `context` and the text, a dense retriever embeds them
    /// together; `None`: the text alone.
    pub contexts: Option<Vec<String>>,
    /// The byte ranges a late pass pools for each chunk when they are not `spans` (with
    /// overlap, `spans` are the windows an index returns and these the chunks under them).
    pub pooled: Option<Vec<(usize, usize)>>,
    /// Chunk vectors made elsewhere (`chunks × dim`, e.g. another tool's late chunker), used by
    /// a dense retriever instead of embedding the chunks.
    pub vectors: Option<Vec<f32>>,
}

impl<'a> Case<'a> {
    /// Chunks and their byte spans in `document`, for `questions`, indexed as text.
    #[must_use]
    pub fn new(document: &'a str, spans: Vec<(usize, usize)>, questions: &'a [Question]) -> Self {
        let chunks = spans.iter().map(|&(s, e)| document[s..e].to_string()).collect();
        Self { chunks, spans, questions, document, contexts: None, pooled: None, vectors: None }
    }

    /// What the index holds for each chunk: its text, with its context in front when it has one.
    fn indexed(&self) -> Vec<String> {
        match &self.contexts {
            Some(c) => c.iter().zip(&self.chunks).map(|(c, t)| format!("{c}\n{t}")).collect(),
            None => self.chunks.clone(),
        }
    }
}

/// How a dense retriever gets its chunk vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ChunkVectorSource {
    /// Each chunk's text embedded on its own (cut at the model's window).
    #[default]
    Text,
    /// Each chunk pooled from a late pass over its document with the same model.
    Late,
    /// The normalised sum of the two: what the chunk says alone and in its document.
    Blend,
}

/// What ranks chunks for a question.
#[derive(Clone, Copy)]
pub enum Retriever<'a> {
    /// Cosine of embeddings by a model (chunks cut at its window, as sentence-transformers
    /// does): the chunks' model, then the questions' (the same model with its query prompt,
    /// for an asymmetric one: [`crate::embed::tuned::Role`]).
    Dense(&'a dyn Embedder, &'a dyn Embedder),
    /// Cosine of embeddings by a model, each chunk's vector pooled from a late pass over its
    /// document ([`crate::embed::late`]; chunks need their spans and the document).
    DenseLate(&'a std::sync::Arc<dyn Embedder>, &'a dyn Embedder, crate::embed::late::LateOptions),
    /// Cosine of embeddings by a model, each chunk's vector the normalised sum of its text's
    /// ([`Self::Dense`]) and its late one ([`Self::DenseLate`]).
    DenseBlend(&'a std::sync::Arc<dyn Embedder>, &'a dyn Embedder, crate::embed::late::LateOptions),
    /// Okapi BM25 over lower-cased words ([`super::bm25`]).
    Bm25,
}

impl Retriever<'_> {
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Dense(m, _) => m.describe(),
            Self::DenseLate(m, _, o) => {
                format!("{}, late chunk vectors (windows of {o})", m.describe())
            }
            Self::DenseBlend(m, _, o) => {
                format!("{}, text + late chunk vectors (windows of {o})", m.describe())
            }
            Self::Bm25 => "bm25 (k1 1.5, b 0.75)".into(),
        }
    }

    /// The late-pooling plan of a [`Self::DenseLate`] retriever, for chunkers that can give
    /// its vectors from their own pass ([`crate::pipeline::chunk_texts`]).
    #[must_use]
    pub fn late_plan(&self) -> Option<crate::pipeline::VectorPlan> {
        match self {
            Self::DenseLate(model, _, opts) => Some(crate::pipeline::VectorPlan {
                mode: crate::pipeline::EmbeddingMode::Late,
                model: Arc::clone(model),
                long: crate::embed::LongInput::Truncate,
                late: *opts,
                context_prefix: false,
            }),
            _ => None,
        }
    }

    /// Chunk indices in rank order for each of the case's questions.
    fn rankings(&self, case: &Case<'_>) -> Result<Vec<Vec<usize>>> {
        let questions = case.questions;
        let queries = match self {
            Self::Dense(_, q) | Self::DenseLate(_, q, _) | Self::DenseBlend(_, q, _) => Some(*q),
            Self::Bm25 => None,
        };
        let dense = |_chunks: &dyn Embedder, cv: &[f32]| -> Result<Vec<Vec<usize>>> {
            let q_refs: Vec<&str> = questions.iter().map(|q| q.question.as_str()).collect();
            let model =
                queries.ok_or_else(|| crate::Error::Internal("a dense ranking without a model".into()))?;
            let (qv, _) = embed_texts(model, &q_refs, Default::default())?;
            if cv.len() != case.chunks.len() * qv.dim {
                return Err(crate::Error::Config(format!(
                    "{} chunk vectors of dimension {} for {} chunks",
                    cv.len() / qv.dim.max(1),
                    qv.dim,
                    case.chunks.len()
                )));
            }
            Ok((0..questions.len()).map(|i| rank(cv, qv.dim, qv.row(i))).collect())
        };
        match (self, &case.vectors) {
            (Self::Dense(model, _), Some(v)) => dense(*model, v),
            (Self::DenseLate(model, _, _) | Self::DenseBlend(model, _, _), Some(v)) => {
                dense(model.as_ref(), v)
            }
            (Self::Dense(model, _), None) => {
                let texts = case.indexed();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                dense(*model, &embed_texts(*model, &refs, Default::default())?.0.data)
            }
            (Self::DenseLate(model, _, opts) | Self::DenseBlend(model, _, opts), None) => {
                let pooled = case.pooled.as_ref().unwrap_or(&case.spans);
                let spans: Vec<crate::span::Span> =
                    pooled.iter().map(|&(s, e)| crate::span::Span::new(s, e)).collect();
                if spans.len() != case.chunks.len() || case.document.is_empty() {
                    return Err(crate::Error::Config(
                        "late chunk vectors need the document and each chunk's span".into(),
                    ));
                }
                let doc = crate::embed::late::LateDoc { text: case.document, spans: &spans };
                let (v, _) = crate::embed::late::late_pool(model.as_ref(), &[doc], *opts)?;
                let mut cv: Vec<f32> = (0..v.len()).flat_map(|k| v.aggregate(k..k + 1)).collect();
                if let Self::DenseBlend(..) = self {
                    // The text half as the pipeline makes it: the chunk alone, and with its
                    // context in front where the index keeps contexts.
                    let embed = |texts: &[String]| -> Result<Vec<f32>> {
                        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                        Ok(embed_texts(model.as_ref(), &refs, Default::default())?.0.data)
                    };
                    let alone = embed(&case.chunks)?;
                    let parts = match &case.contexts {
                        Some(_) => vec![alone, embed(&case.indexed())?],
                        None => vec![alone],
                    };
                    let refs: Vec<&[f32]> = parts.iter().map(Vec::as_slice).collect();
                    crate::pipeline::batch::blend(&mut cv, &refs, v.dim);
                }
                dense(model.as_ref(), &cv)
            }
            (Self::Bm25, _) => {
                let idx = super::bm25::Bm25::new(&case.indexed());
                Ok(questions.iter().map(|q| idx.rank(&q.question)).collect())
            }
        }
    }
}

/// The cut-off of the span metrics.
pub const SPAN_K: usize = 5;

/// Span metrics of one question's top-k chunks against its evidence bytes: recall (share of
/// evidence bytes retrieved), precision (share of retrieved bytes that are evidence), IoU.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SpanScores {
    pub recall: f64,
    pub precision: f64,
    pub iou: f64,
}

/// Merge byte ranges into sorted disjoint ones.
fn union(mut r: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    r.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(r.len());
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

fn total(r: &[(usize, usize)]) -> usize {
    r.iter().map(|(a, b)| b - a).sum()
}

/// Span metrics of retrieved byte ranges against evidence byte ranges.
#[must_use]
pub fn span_scores(retrieved: &[(usize, usize)], evidence: &[(usize, usize)]) -> SpanScores {
    let (r, e) = (union(retrieved.to_vec()), union(evidence.to_vec()));
    let mut inter = 0;
    let (mut i, mut j) = (0, 0);
    while i < r.len() && j < e.len() {
        let (a, b) = (r[i].0.max(e[j].0), r[i].1.min(e[j].1));
        inter += b.saturating_sub(a);
        if r[i].1 < e[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    let (tr, te) = (total(&r), total(&e));
    let ratio = |n: usize, d: usize| if d == 0 { 0.0 } else { 100.0 * n as f64 / d as f64 };
    SpanScores { recall: ratio(inter, te), precision: ratio(inter, tr), iou: ratio(inter, tr + te - inter) }
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
    /// Each question's span metrics at [`SPAN_K`] (`None` without evidence or spans).
    pub spans: Vec<Option<SpanScores>>,
    /// Means of `spans` over the questions that have them.
    pub span_mean: Option<SpanScores>,
}

/// Rank every case's chunks for each of its questions with `retriever`, and score.
///
/// # Errors
/// On a model failure.
pub fn evaluate(retriever: Retriever<'_>, cases: &[Case<'_>], sizer: &dyn Sizer) -> Result<Report> {
    let mut ranks = Vec::new();
    let mut spans = Vec::new();
    let (mut chunks, mut tokens) = (0, 0);
    for case in cases {
        let rankings = retriever.rankings(case)?;
        let norm: Vec<String> = case.chunks.iter().map(|t| normalize(t)).collect();
        for (q, order) in case.questions.iter().zip(&rankings) {
            ranks.push(hit_rank(order, &norm, &normalize(&q.must_contain)));
            spans.push((!q.evidence.is_empty() && case.spans.len() == case.chunks.len()).then(|| {
                let top: Vec<(usize, usize)> = order.iter().take(SPAN_K).map(|&c| case.spans[c]).collect();
                let ev: Vec<(usize, usize)> = q.evidence.iter().map(|e| (e[0], e[1])).collect();
                span_scores(&top, &ev)
            }));
        }
        chunks += case.chunks.len();
        tokens += case.chunks.iter().map(|t| sizer.count(t)).sum::<usize>();
    }
    let with: Vec<&SpanScores> = spans.iter().flatten().collect();
    let span_mean = (!with.is_empty()).then(|| {
        let n = with.len() as f64;
        SpanScores {
            recall: with.iter().map(|s| s.recall).sum::<f64>() / n,
            precision: with.iter().map(|s| s.precision).sum::<f64>() / n,
            iou: with.iter().map(|s| s.iou).sum::<f64>() / n,
        }
    });
    Ok(Report {
        chunks,
        mean_tokens: tokens as f64 / chunks.max(1) as f64,
        questions: ranks.len(),
        scores: scores(&ranks),
        ranks,
        spans,
        span_mean,
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
/// question set; with `vectors` (a float32 `.npy`, a row per chunk), a dense retriever ranks
/// those chunk vectors instead of embedding the texts (another tool's late chunker).
///
/// # Errors
/// If the file cannot be read, or there is not exactly one question set.
pub fn evaluate_chunk_file(
    path: &std::path::Path,
    vectors: Option<&std::path::Path>,
    questions: &[Vec<Question>],
    retriever: Retriever<'_>,
    sizer: &dyn Sizer,
) -> Result<Report> {
    #[derive(serde::Deserialize)]
    struct ChunkText {
        text: String,
        start: Option<usize>,
        end: Option<usize>,
    }
    let [questions] = questions else {
        return Err(crate::Error::setting(
            "questions",
            format!("{} file(s) for one chunks file: give one", questions.len()),
        ));
    };
    let records: Vec<ChunkText> = read_jsonl(path, "a chunk needs a string \"text\"")?;
    let spans = records.iter().map_while(|r| Some((r.start?, r.end?))).collect();
    let chunks = records.into_iter().map(|r| r.text).collect();
    let vectors = match vectors {
        Some(p) => Some(crate::npy::read_f32(p)?.0),
        None => None,
    };
    evaluate(
        retriever,
        &[Case { chunks, spans, questions, document: "", contexts: None, pooled: None, vectors }],
        sizer,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn span_metrics_count_evidence_bytes() {
        // Evidence 10..20; retrieved 0..15 and 18..30 (overlapping retrieved ranges count once).
        let s = super::span_scores(&[(0, 15), (18, 30), (25, 30)], &[(10, 20)]);
        assert!((s.recall - 70.0).abs() < 1e-9, "{s:?}");
        assert!((s.precision - 100.0 * 7.0 / 27.0).abs() < 1e-9, "{s:?}");
        assert!((s.iou - 100.0 * 7.0 / 30.0).abs() < 1e-9, "{s:?}");
        assert_eq!(super::span_scores(&[(0, 5)], &[(5, 9)]).recall, 0.0);
    }

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
