//! Comparing chunkers: one run plan shared by `eval topics` and `eval retrieval`.
//!
//! Embedding chunkers run first (Max–Min once per swept `hard_thr`), then the baselines, so
//! that under `match_size` each baseline gets the cap at which its mean chunk size comes
//! closest to the first embedding chunker's ([`super::retrieval::cap_for_mean`]): comparing
//! chunkers at different sizes would measure size, not seams.

use crate::cap::Cap;
use crate::chunk::ChunkSpan;
use crate::chunkers::ChunkerKind;
use crate::eval::retrieval::{cap_for_mean, evaluate, Case, Question, Report, Retriever};
use crate::eval::segmentation::{score, unit_starts_of};
use crate::eval::topics::TopicDoc;
use crate::sizer::Sizer;
use crate::spec::{ChunkerSpec, HardThr};
use crate::{Error, Result};

/// Which chunkers to compare, on top of a base spec (model, units, rule parameters, cap).
#[derive(Debug, Clone)]
pub struct Plan {
    pub base: ChunkerSpec,
    pub chunkers: Vec<ChunkerKind>,
    /// Max–Min runs once per value (none: once, with the base spec's `hard_thr`).
    pub hard_thr_sweep: Vec<f64>,
    /// Baselines at the first embedding chunker's mean chunk size.
    pub match_size: bool,
}

/// One run's result.
#[derive(Debug, Clone)]
pub struct Run<T> {
    /// The chunker's name, and the swept `hard_thr` if any.
    pub label: String,
    pub spec: ChunkerSpec,
    pub result: T,
}

impl Plan {
    /// The runs in order: (spec, label) with caps still at the base's.
    fn runs(&self) -> Vec<(ChunkerSpec, String)> {
        let embedding = self.chunkers.iter().filter(|c| !c.is_baseline());
        let baselines = self.chunkers.iter().filter(|c| c.is_baseline());
        let mut runs = Vec::new();
        for &c in embedding.chain(baselines) {
            let spec = ChunkerSpec { chunker: c, ..self.base.clone() };
            if c == ChunkerKind::Maxmin && !self.hard_thr_sweep.is_empty() {
                for &t in &self.hard_thr_sweep {
                    let mut s = spec.clone();
                    s.maxmin.hard_thr = HardThr::Fixed(t);
                    runs.push((s, format!("{c} hard_thr={t}")));
                }
            } else {
                runs.push((spec, c.to_string()));
            }
        }
        runs
    }

    /// Run every chunker with `run`; `mean_tokens` gives a result's mean chunk size.
    ///
    /// # Errors
    /// The first run's error; a configuration error for `match_size` without an embedding
    /// chunker.
    pub fn execute<T>(
        &self,
        mut run: impl FnMut(&ChunkerSpec) -> Result<T>,
        mean_tokens: impl Fn(&T) -> f64,
    ) -> Result<Vec<Run<T>>> {
        let mut target: Option<f64> = None;
        let mut out = Vec::new();
        for (mut spec, label) in self.runs() {
            if spec.chunker.is_baseline() && self.match_size {
                let t = target.ok_or_else(|| {
                    Error::setting(
                        "match_size",
                        "needs an embedding chunker (maxmin, minima, breakpoint, global)",
                    )
                })?;
                let hi = spec.max_tokens.max_tokens().max(8);
                spec.max_tokens = Cap::new(cap_for_mean(t, 8, hi, |cap| {
                    run(&ChunkerSpec { max_tokens: Cap::new(cap), ..spec.clone() })
                        .map_or(f64::NAN, |r| mean_tokens(&r))
                }));
            }
            let result = run(&spec)?;
            if !spec.chunker.is_baseline() && target.is_none() {
                target = Some(mean_tokens(&result));
            }
            out.push(Run { label, spec, result });
        }
        Ok(out)
    }
}

/// Mean `tokens` over chunks.
#[must_use]
pub fn mean_chunk_tokens(results: &[Vec<ChunkSpan>]) -> f64 {
    let n: usize = results.iter().map(Vec::len).sum();
    results.iter().flatten().map(|c| c.tokens).sum::<usize>() as f64 / n.max(1) as f64
}

/// One chunker's scores on the topic-shift documents (means over documents).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct TopicScores {
    pub chunks_per_doc: f64,
    pub mean_tokens: f64,
    pub pk: f64,
    pub window_diff: f64,
    pub f1: f64,
    pub ami: f64,
}

/// Score each chunker of `plan` on topic-shift documents (boundaries ±1 sentence).
///
/// # Errors
/// A chunker's build or model error.
pub fn topics(plan: &Plan, docs: &[TopicDoc]) -> Result<Vec<Run<TopicScores>>> {
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let runs = plan.execute(
        |spec| spec.build()?.chunk_batch(&texts).into_iter().collect::<Result<Vec<_>>>(),
        |r| mean_chunk_tokens(r),
    )?;
    Ok(runs
        .into_iter()
        .map(|r| {
            let mut s = TopicScores { mean_tokens: mean_chunk_tokens(&r.result), ..TopicScores::default() };
            for (d, chunks) in docs.iter().zip(&r.result) {
                let starts: Vec<usize> = chunks.iter().map(|c| c.start).collect();
                let hyp = unit_starts_of(&starts, &d.sentence_starts);
                let sc = score(&d.boundaries, &hyp, d.sentence_starts.len(), 1);
                s.chunks_per_doc += chunks.len() as f64;
                s.pk += sc.pk;
                s.window_diff += sc.window_diff;
                s.f1 += sc.f1;
                s.ami += sc.ami;
            }
            let n = docs.len().max(1) as f64;
            for v in [&mut s.chunks_per_doc, &mut s.pk, &mut s.window_diff, &mut s.f1, &mut s.ami] {
                *v /= n;
            }
            Run { label: r.label, spec: r.spec, result: s }
        })
        .collect())
}

/// Score each chunker of `plan` by retrieval: each document is chunked and its questions
/// rank only its own chunks, embedded by `retriever`; `sizer` measures mean chunk sizes; with
/// `context`, each chunk is indexed with its context (title and headings) in front. With
/// overlap, a chunk's window stands for it throughout (indexed, returned, sized, scored),
/// except that a late vector pools the chunk's own tokens.
///
/// # Errors
/// A chunker's build or model error, or the retriever's.
pub fn retrieval(
    plan: &Plan,
    documents: &[String],
    questions: &[Vec<Question>],
    retriever: Retriever<'_>,
    sizer: &dyn Sizer,
    context: bool,
) -> Result<Vec<Run<Report>>> {
    if documents.len() != questions.len() {
        return Err(Error::setting(
            "questions",
            format!("{} file(s) for {} document(s): give one per document", questions.len(), documents.len()),
        ));
    }
    // Per document: chunk byte spans, and for a late retriever the chunk vectors of an
    // embedding chunker's own pass (its seams and vectors from one pass when its unit vectors
    // are late and its model is the retriever's; baselines, which the size search chunks many
    // times, are pooled when scored).
    type Chunked = Vec<(Vec<crate::chunk::ChunkSpan>, Option<Vec<f32>>)>;
    let late_plan = retriever.late_plan();
    let chunk_spans = |spec: &ChunkerSpec| -> Result<Chunked> {
        let c = spec.build()?;
        let texts: Vec<&str> = documents.iter().map(String::as_str).collect();
        match &late_plan {
            Some(plan) if !spec.chunker.is_baseline() => {
                crate::pipeline::chunk_texts(c.as_ref(), &texts, Some(plan))
                    .into_iter()
                    .map(|r| r.map(|d| (d.spans, d.vectors)))
                    .collect()
            }
            _ => c.chunk_batch(&texts).into_iter().map(|r| Ok((r?, None))).collect(),
        }
    };
    let mean = |docs: &Chunked| {
        let n: usize = docs.iter().map(|d| d.0.len()).sum();
        let tokens: usize = docs
            .iter()
            .zip(documents)
            .flat_map(|(d, t)| d.0.iter().map(|c| sizer.count(c.window_span().text(t))))
            .sum();
        tokens as f64 / n.max(1) as f64
    };
    let runs = plan.execute(chunk_spans, mean)?;
    runs.into_iter()
        .map(|r| {
            let cases: Vec<Case<'_>> = r
                .result
                .into_iter()
                .zip(documents)
                .zip(questions)
                .map(|(((chunks, vectors), d), q)| {
                    let starts: Vec<usize> = chunks.iter().map(|c| c.start).collect();
                    // With overlap, each chunk's window is what the index holds and returns
                    // (and what is sized and scored); a late vector still pools the chunk.
                    let windows = chunks.iter().map(|c| c.window_span()).map(|w| (w.start, w.end)).collect();
                    let mut case = Case::new(d, windows, q);
                    if chunks.iter().any(|c| c.window.is_some()) {
                        case.pooled = Some(chunks.iter().map(|c| (c.start, c.end)).collect());
                    }
                    case.vectors = vectors;
                    if context {
                        // No id to fall back on: a document without headings has no title.
                        case.contexts = Some(crate::segment::structure::contexts("", d, &starts));
                    }
                    case
                })
                .collect();
            Ok(Run { label: r.label, spec: r.spec, result: evaluate(retriever, &cases, sizer)? })
        })
        .collect()
}
