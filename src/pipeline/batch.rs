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
use crate::chunkers::{Chunker, DocChunks, Pending};
use crate::embed::{self, EmbedOptions, Embedder, LongInput};
use crate::{Error, Result};

/// How a batch's chunk vectors are made: the mode (resolved) and the model.
#[derive(Clone)]
pub struct VectorPlan {
    pub mode: EmbeddingMode,
    pub model: Arc<dyn Embedder>,
    /// Chunks past the model's window under `reembed`.
    pub long: LongInput,
}

impl VectorPlan {
    /// The plan for `mode` with `chunker`: `auto` becomes `mean` where the chunker has unit
    /// vectors, else `reembed`; the model is `model`, else the chunker's own.
    ///
    /// # Errors
    /// `mean` with a chunker without unit vectors, or no model for `reembed`.
    pub fn new(
        chunker: &dyn Chunker,
        mode: Option<EmbeddingMode>,
        model: Option<Arc<dyn Embedder>>,
        long: LongInput,
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
        Ok(Some(Self { mode, model, long }))
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
    chunker.prepare_batch(texts, plan.is_some_and(|p| p.mode == EmbeddingMode::Mean))
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
/// document's under `mean`): the batch's chunks in one pass; if that fails, each document's
/// alone, and a document whose own pass fails gets its error.
fn fill_vectors(results: &mut [Result<DocChunks>], texts: &[&str], plan: &VectorPlan) {
    let model = plan.model.as_ref();
    let opts = EmbedOptions { long: plan.long, ..EmbedOptions::default() };
    let want: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Ok(c) if c.vectors.is_none() && !c.spans.is_empty()))
        .map(|(i, _)| i)
        .collect();
    let texts_of = |i: usize, r: &Result<DocChunks>| -> Vec<&str> {
        match r {
            Ok(c) => c.spans.iter().map(|s| &texts[i][s.start..s.end]).collect(),
            Err(_) => Vec::new(),
        }
    };
    let all: Vec<&str> = want.iter().flat_map(|&i| texts_of(i, &results[i])).collect();
    let whole = embed::embed_texts(model, &all, opts).map(|(e, _)| e.data);
    let dim = model.dim();
    let mut at = 0;
    for &i in &want {
        let chunk_texts = texts_of(i, &results[i]);
        let v = match &whole {
            Ok(w) => Ok(w[at * dim..(at + chunk_texts.len()) * dim].to_vec()),
            Err(_) => embed::embed_texts(model, &chunk_texts, opts).map(|(e, _)| e.data),
        };
        at += chunk_texts.len();
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
