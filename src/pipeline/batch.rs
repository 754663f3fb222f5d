//! A batch of documents through the chunker's stages plus chunk vectors: what a corpus job's
//! prepare, device and finish stages run ([`super::stages`]), and what a caller with a batch
//! in hand runs in one call ([`chunk_texts`], e.g. a server answering requests).
//!
//! The chunker's own batch path ([`crate::chunkers::batch`]) gives each document's spans and,
//! for `mean`, its chunk vectors; what still needs the model (every chunk under `reembed`,
//! a fallback document's chunks under `mean`) is embedded here in one pass over the batch,
//! document by document when that pass fails.

use std::sync::Arc;

use super::EmbeddingMode;
use crate::chunkers::{ChunkVectors, Chunker, DocChunks, Pending};
use crate::embed::late::{self, LateDoc, LateOptions};
use crate::embed::{self, EmbedOptions, Embedder, LongInput};
use crate::{Error, Result};

/// How a batch's chunk vectors are made: the mode (resolved) and the model.
#[derive(Clone)]
pub struct VectorPlan {
    pub mode: EmbeddingMode,
    pub model: Arc<dyn Embedder>,
    /// Chunks past the model's window under `reembed`.
    pub long: LongInput,
    /// The late pass under `late`.
    pub late: LateOptions,
    /// Chunk texts embedded here (`reembed`) get their context in front, `Title > Heading`
    /// and a line break ([`crate::segment::structure::contexts`], with no id for a title:
    /// a document's id is seldom words a question uses).
    pub context_prefix: bool,
}

impl VectorPlan {
    /// The plan for `mode` with `chunker`: `auto` becomes `mean` where the chunker has unit
    /// vectors, else `reembed`; the model is `model`, else the chunker's own; the late pass's
    /// options are `late`, else the model's defaults ([`LateOptions::for_model`]).
    ///
    /// # Errors
    /// `mean` with a chunker without unit vectors, no model to embed with, or late options the
    /// model cannot take.
    pub fn new(
        chunker: &dyn Chunker,
        mode: Option<EmbeddingMode>,
        model: Option<Arc<dyn Embedder>>,
        long: LongInput,
        late: Option<LateOptions>,
    ) -> Result<Option<Self>> {
        let Some(mode) = mode else { return Ok(None) };
        let own = chunker.unit_model();
        let mode = mode.resolve(own.is_some());
        if mode == EmbeddingMode::Mean && own.is_none() {
            return Err(Error::setting(
                "embeddings",
                format!(
                    "mean needs an embedding chunker ({} has no unit vectors); use reembed",
                    chunker.name()
                ),
            ));
        }
        let model = model
            .or_else(|| own.cloned())
            .ok_or_else(|| Error::setting("embeddings", "needs a model to embed chunks with"))?;
        let late = late.unwrap_or_else(|| LateOptions::for_model(model.as_ref()));
        if matches!(mode, EmbeddingMode::Late | EmbeddingMode::Blend) {
            late.validate(model.as_ref())?;
        }
        Ok(Some(Self { mode, model, long, late, context_prefix: false }))
    }

    /// What the chunker's own pass is asked for: nothing when the plan embeds with another
    /// model than the chunker's (its vectors are then all made here).
    fn wanted(&self, chunker: &dyn Chunker) -> ChunkVectors {
        if !chunker.unit_model().is_some_and(|m| Arc::ptr_eq(m, &self.model)) {
            return ChunkVectors::None;
        }
        match self.mode {
            EmbeddingMode::Mean => ChunkVectors::Mean,
            EmbeddingMode::Late | EmbeddingMode::Blend => ChunkVectors::Late(self.late),
            EmbeddingMode::Reembed | EmbeddingMode::Auto => ChunkVectors::None,
        }
    }

    /// The plan for `mode` with `chunker` built from `spec`: the chunker's own model where it
    /// has unit vectors, else the spec's model (loaded once per process); the late pass as the
    /// spec says ([`crate::spec::ChunkerSpec::late_options`]). What a caller with a spec in hand
    /// (a binding, a server) uses.
    ///
    /// # Errors
    /// As [`Self::new`], and the model's load error.
    pub fn for_spec(
        spec: &crate::spec::ChunkerSpec,
        chunker: &dyn Chunker,
        mode: Option<EmbeddingMode>,
        long: LongInput,
    ) -> Result<Option<Self>> {
        if mode.is_none() {
            return Ok(None);
        }
        let model = spec.load_model()?;
        let late = spec.late_options(&model)?;
        let own = chunker.unit_model().is_some();
        Self::new(chunker, mode, (!own).then(|| model.embedder.clone()), long, Some(late))
    }

    /// The vectors' dimension.
    #[must_use]
    pub fn dim(&self) -> usize {
        self.model.dim()
    }
}

/// The prepare stage: the chunker's first stage, asking for mean vectors where the plan does.
#[must_use]
pub fn prepare<'c>(chunker: &'c dyn Chunker, texts: &[&str], plan: Option<&VectorPlan>) -> Pending<'c> {
    chunker.prepare_batch(texts, plan.map_or(ChunkVectors::None, |p| p.wanted(chunker)))
}

/// The finish stage: the chunker's last stage, then the chunk vectors that still need the
/// model.
#[must_use]
pub fn finish(pending: Pending<'_>, texts: &[&str], plan: Option<&VectorPlan>) -> Vec<Result<DocChunks>> {
    let mut results = pending.finish(texts);
    if let Some(plan) = plan {
        fill_vectors(&mut results, texts, plan);
    }
    results
}

/// Chunk `texts` as one batch, with chunk vectors as `plan` says: the three stages in a row.
/// One result per text, in order; a document's failure does not cost the others.
#[must_use]
pub fn chunk_texts(
    chunker: &dyn Chunker,
    texts: &[&str],
    plan: Option<&VectorPlan>,
) -> Vec<Result<DocChunks>> {
    let mut pending = prepare(chunker, texts, plan);
    pending.embed();
    finish(pending, texts, plan)
}

/// Embed every chunk that has no vector yet (each chunk under `reembed`, a fallback
/// document's under `mean`, a chunker's without unit vectors under `late`): the batch's chunks
/// in one pass; if that fails, each document's alone, and a document whose own pass fails gets
/// its error.
fn fill_vectors(results: &mut [Result<DocChunks>], texts: &[&str], plan: &VectorPlan) {
    match plan.mode {
        EmbeddingMode::Late => fill_late(results, texts, plan),
        EmbeddingMode::Blend => {
            // Each chunk's late vector (the chunker's own, or pooled here), then its text's
            // (under the context prefix, the mean of the text alone and with its context in
            // front), summed and normalised.
            fill_late(results, texts, plan);
            let late: Vec<Option<Vec<f32>>> =
                results.iter_mut().map(|r| r.as_mut().ok().and_then(|c| c.vectors.take())).collect();
            fill_text(results, texts, plan, true);
            let dim = plan.model.dim();
            for (r, late) in results.iter_mut().zip(late) {
                if let (Ok(DocChunks { vectors: Some(v), .. }), Some(mut late)) = (r, late) {
                    blend(&mut late, &[v], dim);
                    *v = late;
                }
            }
        }
        EmbeddingMode::Mean | EmbeddingMode::Reembed | EmbeddingMode::Auto => {
            fill_text(results, texts, plan, false)
        }
    }
}

/// The documents that have chunks and no vectors yet.
fn without_vectors(results: &[Result<DocChunks>]) -> Vec<usize> {
    results
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Ok(c) if c.vectors.is_none() && !c.spans.is_empty()))
        .map(|(i, _)| i)
        .collect()
}

/// [`fill_vectors`] by each chunk's text, or its window's where it has one (with its context
/// in front under `context_prefix`). With `alone_too`, a chunk with a context gets the mean
/// of its text embedded alone and with its context in front (the text half of `blend`).
fn fill_text(results: &mut [Result<DocChunks>], texts: &[&str], plan: &VectorPlan, alone_too: bool) {
    let model = plan.model.as_ref();
    let opts = EmbedOptions { long: plan.long, ..EmbedOptions::default() };
    let want = without_vectors(results);
    // Each document's texts to embed, and how many of them are each chunk's.
    let texts_of = |i: usize, r: &Result<DocChunks>| -> (Vec<String>, Vec<usize>) {
        let Ok(c) = r else { return (Vec::new(), Vec::new()) };
        // A chunk's window where it has one (`overlap`), else its own text.
        let text = |s: &crate::chunk::ChunkSpan| s.window_span().text(texts[i]).to_string();
        if !plan.context_prefix {
            return (c.spans.iter().map(text).collect(), vec![1; c.spans.len()]);
        }
        let starts: Vec<usize> = c.spans.iter().map(|s| s.start).collect();
        let contexts = crate::segment::structure::contexts("", texts[i], &starts);
        let (mut all, mut counts) = (Vec::new(), Vec::new());
        for (s, ctx) in c.spans.iter().zip(contexts) {
            if ctx.is_empty() {
                all.push(text(s));
                counts.push(1);
            } else {
                if alone_too {
                    all.push(text(s));
                }
                all.push(format!("{ctx}\n{}", text(s)));
                counts.push(1 + usize::from(alone_too));
            }
        }
        (all, counts)
    };
    // Each document's chunk texts once (with a context prefix, its headings are found once).
    let per_doc: Vec<(Vec<String>, Vec<usize>)> = want.iter().map(|&i| texts_of(i, &results[i])).collect();
    let all: Vec<&str> = per_doc.iter().flat_map(|d| &d.0).map(String::as_str).collect();
    let whole = embed::embed_texts(model, &all, opts).map(|(e, _)| e.data);
    let dim = model.dim();
    let mut at = 0;
    for (&i, (chunk_texts, counts)) in want.iter().zip(&per_doc) {
        let v = match &whole {
            Ok(w) => Ok(w[at * dim..(at + chunk_texts.len()) * dim].to_vec()),
            Err(_) => {
                let refs: Vec<&str> = chunk_texts.iter().map(String::as_str).collect();
                embed::embed_texts(model, &refs, opts).map(|(e, _)| e.data)
            }
        };
        at += chunk_texts.len();
        match v {
            Ok(v) => {
                if let Ok(c) = &mut results[i] {
                    c.vectors = Some(mean_groups(&v, counts, dim));
                }
            }
            Err(e) => results[i] = Err(e),
        }
    }
}

/// Rows of `dim` averaged in consecutive groups of `counts` (a group of one is its row).
fn mean_groups(rows: &[f32], counts: &[usize], dim: usize) -> Vec<f32> {
    if counts.iter().all(|&c| c == 1) {
        return rows.to_vec();
    }
    let mut out = Vec::with_capacity(counts.len() * dim);
    let mut at = 0;
    for &n in counts {
        let group = &rows[at * dim..(at + n) * dim];
        out.extend((0..dim).map(|d| group.iter().skip(d).step_by(dim).sum::<f32>() / n as f32));
        at += n;
    }
    out
}

/// The blend of chunk vectors: each row of `late` becomes the normalised sum of itself and
/// the chunk's text vector, the mean of the rows `text` has for it (`text[k]` is a
/// `chunks × dim` matrix: the chunk embedded alone, and with its context in front).
/// `--embeddings blend`'s one rule, in the pipeline and in the retrieval evaluation.
pub fn blend(late: &mut [f32], text: &[&[f32]], dim: usize) {
    let dim = dim.max(1);
    let n = text.len().max(1) as f32;
    for (k, row) in late.chunks_mut(dim).enumerate() {
        for t in text {
            row.iter_mut().zip(&t[k * dim..(k + 1) * dim]).for_each(|(a, b)| *a += b / n);
        }
        embed::normalize(row);
    }
}

/// [`fill_vectors`] under `late`: one late pass over the documents whose chunks have no
/// vector, each chunk a span of it.
fn fill_late(results: &mut [Result<DocChunks>], texts: &[&str], plan: &VectorPlan) {
    let model = plan.model.as_ref();
    let want = without_vectors(results);
    let spans: Vec<Vec<crate::span::Span>> = want
        .iter()
        .map(|&i| match &results[i] {
            Ok(c) => c.spans.iter().map(crate::chunk::ChunkSpan::span).collect(),
            Err(_) => Vec::new(),
        })
        .collect();
    let pool = |docs: &[LateDoc<'_>]| late::late_pool(model, docs, plan.late).map(|(v, _)| v);
    let docs: Vec<LateDoc<'_>> =
        want.iter().zip(&spans).map(|(&i, s)| LateDoc { text: texts[i], spans: s }).collect();
    let whole = pool(&docs);
    for (k, (&i, doc)) in want.iter().zip(&docs).enumerate() {
        let v = match &whole {
            Ok(v) => Ok(v.doc(k).flat_map(|s| v.aggregate(s..s + 1)).collect::<Vec<f32>>()),
            Err(_) => pool(std::slice::from_ref(doc))
                .map(|v| (0..v.len()).flat_map(|s| v.aggregate(s..s + 1)).collect()),
        };
        match v {
            Ok(v) => {
                if let Ok(c) = &mut results[i] {
                    c.vectors = Some(v);
                }
            }
            Err(e) => results[i] = Err(e),
        }
    }
}
