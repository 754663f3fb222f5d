//! The one batch path: many documents through a chunker in three stages.
//!
//! ```text
//! Chunker::prepare_batch (CPU: units, tokenize, plan)  ─Pending─▶  Pending::embed (the device)
//!   ─Pending─▶  Pending::finish (CPU: bands, rules, sizing, mean vectors; the model-error policy)
//!   ─▶ Vec<Result<DocChunks>>, one per document, in input order
//! ```
//!
//! A corpus job runs each stage on its own thread ([`crate::pipeline`]), so that the device
//! embeds batch k while the CPU prepares batch k+1 and finishes batch k−1;
//! [`super::Chunker::chunk_batch`] and a service's batch ([`crate::pipeline::chunk_texts`])
//! run the same three calls in a row. Chunkers without a model pass (the baselines, the LLM
//! chunkers) chunk in `prepare_batch`; the embedding chunkers ([`super::semantic`]) carry a
//! [`UnitBatch`] through the stages. [`UnitBatch`] is also what the guided LLM chunker
//! embeds its units with: the loop that gathers many documents' units and their known token
//! ids into one embedding pass, and the recovery when that pass fails (each document's units
//! embedded on their own, so one bad document does not cost the others), live here once.
//!
//! This module stands below the chunkers that use it: a chunker with a model pass hands
//! [`Pending`] its batch as a [`StagedBatch`], and a wrapper that works on finished chunks
//! (overlap windows) as a [`SpanPass`], so the batch path imports neither.

use std::borrow::Cow;

use rayon::prelude::*;

use super::units::{unit_texts, UnitIds, Units};
use crate::chunk::ChunkSpan;
use crate::embed::{self, EmbedOptions, Embedder};
use crate::Result;

/// The chunk vectors a chunker's own pass is asked for ([`super::Chunker::prepare_batch`]);
/// what it cannot give (a baseline's, a fallback document's) the caller embeds
/// ([`crate::pipeline::batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChunkVectors {
    #[default]
    None,
    /// The mean of each chunk's unit vectors.
    Mean,
    /// Each chunk pooled from its tokens' states in the late pass over its document.
    Late(crate::embed::late::LateOptions),
}

/// One document's chunks from the batch path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocChunks {
    pub spans: Vec<ChunkSpan>,
    /// The chunks' vectors, `spans.len() × dim` floats, L2-normalised, when they were asked
    /// for and came out of the chunker's own pass ([`ChunkVectors`]).
    pub vectors: Option<Vec<f32>>,
    /// Why the document was chunked by the model-error fallback
    /// ([`super::semantic::ModelErrorPolicy::Sentence`]), if it was.
    pub fallback: Option<String>,
}

impl DocChunks {
    /// Chunks with nothing else.
    #[must_use]
    pub fn spans(spans: Vec<ChunkSpan>) -> Self {
        Self { spans, ..Self::default() }
    }
}

/// Seconds of a device stage that went into something worth its own line in a job summary.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeviceTime {
    /// Computing the bands on the device and copying them back (the GPU path; 0 elsewhere).
    pub bands: f64,
}

/// A chunker's batch with a model pass, between its stages (the embedding chunkers'
/// batch, [`super::semantic`]).
pub trait StagedBatch: Send {
    /// The device stage; a failure is kept for [`Self::finish`].
    fn embed(&mut self) -> DeviceTime;
    /// Units the batch embeds.
    fn units(&self) -> usize;
    /// One result per document of `texts` (the texts the batch was prepared from), in order.
    fn finish(self: Box<Self>, texts: &[&str]) -> Vec<Result<DocChunks>>;
}

/// Work on a document's finished chunks that [`Pending::finish`] runs last, after any
/// chunker (the overlap windows, [`super::windows`]).
pub trait SpanPass: Send + Sync {
    fn apply(&self, text: &str, chunks: &mut [ChunkSpan]);
}

/// A batch of documents between a chunker's stages: made by
/// [`super::Chunker::prepare_batch`], embedded by [`Self::embed`], finished by
/// [`Self::finish`] with the same texts.
pub struct Pending<'c> {
    inner: Inner<'c>,
    /// What [`Self::finish`] does to each document's chunks last (windows).
    pass: Option<Box<dyn SpanPass + 'c>>,
}

enum Inner<'c> {
    /// Chunked already (no model pass).
    Done(Vec<Result<DocChunks>>),
    Staged(Box<dyn StagedBatch + 'c>),
}

impl<'c> Pending<'c> {
    /// A batch chunked in the prepare stage: one result per document.
    #[must_use]
    pub fn done(results: Vec<Result<DocChunks>>) -> Self {
        Self { inner: Inner::Done(results), pass: None }
    }

    /// A batch whose model pass is still to run.
    #[must_use]
    pub fn staged(batch: Box<dyn StagedBatch + 'c>) -> Self {
        Self { inner: Inner::Staged(batch), pass: None }
    }

    /// The batch with `pass` run over every document's chunks when it finishes.
    #[must_use]
    pub fn with_pass(mut self, pass: impl SpanPass + 'c) -> Self {
        self.pass = Some(Box::new(pass));
        self
    }

    /// The device stage: the model pass, if the chunker has one (nothing otherwise). A
    /// failure is kept for [`Self::finish`], which recovers document by document.
    pub fn embed(&mut self) -> DeviceTime {
        match &mut self.inner {
            Inner::Done(_) => DeviceTime::default(),
            Inner::Staged(b) => b.embed(),
        }
    }

    /// Units the batch embeds (embedding chunkers; 0 for the others).
    #[must_use]
    pub fn units(&self) -> usize {
        match &self.inner {
            Inner::Done(_) => 0,
            Inner::Staged(b) => b.units(),
        }
    }

    /// The last stage: one result per document of `texts` (the texts the batch was prepared
    /// from), in order.
    #[must_use]
    pub fn finish(self, texts: &[&str]) -> Vec<Result<DocChunks>> {
        let mut results = match self.inner {
            Inner::Done(r) => r,
            Inner::Staged(b) => b.finish(texts),
        };
        if let Some(w) = &self.pass {
            results.par_iter_mut().zip(texts).for_each(|(r, text)| {
                if let Ok(c) = r {
                    w.apply(text, &mut c.spans);
                }
            });
        }
        results
    }
}

/// The units of many documents, tokenized and planned for one embedding pass: document `d`
/// owns units `offsets[d]..offsets[d + 1]` of the pass.
#[derive(Debug, Default)]
pub struct UnitBatch {
    /// Each document's units.
    pub units: Vec<Units>,
    offsets: Vec<usize>,
    prepared: embed::Prepared,
}

impl UnitBatch {
    /// The units of every text (`units_of`, in parallel; a text of only whitespace has none),
    /// with the token ids that counted them where `units_of` gives them
    /// ([`crate::embed::prepare_known`]: each unit is tokenized once), planned for `model`;
    /// with no model, the units alone (their vectors come from elsewhere, the late pass).
    #[must_use]
    pub fn new(
        texts: &[&str],
        units_of: impl Fn(&str) -> (Units, UnitIds) + Sync,
        model: Option<(&dyn Embedder, EmbedOptions)>,
    ) -> Self {
        let (units, ids): (Vec<Units>, Vec<UnitIds>) = texts
            .par_iter()
            .with_max_len(1)
            .map(|t| if t.trim().is_empty() { (Units::default(), Vec::new()) } else { units_of(t) })
            .unzip();
        let mut all: Vec<&str> = Vec::new();
        let mut known: UnitIds = Vec::new();
        let mut offsets = Vec::with_capacity(texts.len() + 1);
        for ((t, u), ids) in texts.iter().zip(&units).zip(ids) {
            offsets.push(all.len());
            all.extend(unit_texts(t, u));
            if ids.len() == u.len() {
                known.extend(ids);
            } else {
                known.extend(std::iter::repeat_n(None, u.len()));
            }
        }
        offsets.push(all.len());
        let prepared = match model {
            Some((model, opts)) => embed::prepare_known(model, &all, known, opts),
            None => embed::Prepared::default(),
        };
        Self { units, offsets, prepared }
    }

    /// Document `d`'s units in the pass: `first..first + units[d].len()`.
    #[must_use]
    pub fn first(&self, d: usize) -> usize {
        self.offsets[d]
    }

    /// Units in the batch.
    #[must_use]
    pub fn total_units(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// Embed every unit on the host (`total_units × dim` floats); the token ids are freed.
    ///
    /// # Errors
    /// On a model failure.
    pub fn run(&mut self, model: &dyn Embedder) -> Result<Vec<f32>> {
        let prepared = std::mem::take(&mut self.prepared);
        Ok(embed::run(model, &prepared)?.0.data)
    }

    /// Embed every unit with the vectors left on the model's device
    /// ([`crate::embed::run_tensor`]); `None` (the ids kept, for [`Self::run`]) when a unit
    /// spans several model windows.
    ///
    /// # Errors
    /// On a model failure.
    pub fn run_tensor(&mut self, model: &dyn Embedder) -> Result<Option<candle_core::Tensor>> {
        let out = embed::run_tensor(model, &self.prepared)?.map(|(t, _)| t);
        if out.is_some() {
            self.prepared = embed::Prepared::default();
        }
        Ok(out)
    }

    /// Document `d`'s unit vectors: its rows of the batch's pass, or, when that pass failed,
    /// its own pass (so that one bad document does not cost the others).
    ///
    /// # Errors
    /// When the document's own pass fails too.
    pub fn vectors_of<'v>(
        &self,
        d: usize,
        batch: &'v Result<Vec<f32>>,
        text: &str,
        model: &dyn Embedder,
        opts: EmbedOptions,
    ) -> Result<Cow<'v, [f32]>> {
        let dim = model.dim();
        match batch {
            Ok(v) => Ok(Cow::Borrowed(&v[self.offsets[d] * dim..self.offsets[d + 1] * dim])),
            Err(_) => {
                let texts = unit_texts(text, &self.units[d]);
                Ok(Cow::Owned(embed::embed_texts(model, &texts, opts)?.0.data))
            }
        }
    }
}
