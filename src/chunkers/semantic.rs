//! Embedding-first chunkers: Max–Min, the global rule, minima and breakpoints over one set
//! of unit vectors.
//!
//! For each document: paragraphs (or sentences) as size-capped units, each within the cap
//! and the model's window ([`super::units`]) → one vector per unit ([`crate::embed`]) → a
//! similarity band ([`crate::similarity`]; on a GPU computed there, [`crate::kernels`]) → the
//! rule's chunk starts ([`crate::rules`], pure functions) → the sizing pass (cap and minimum,
//! [`crate::rules::sizing`]) → chunks with exact token counts. Many documents go through as
//! one batch ([`super::batch`]): their units share one embedding pass, and a document whose
//! pass fails gets what [`ModelErrorPolicy`] says. This module is the only chunker that
//! holds a model for its rules; the rules it calls do not.

use std::sync::Arc;

use rayon::prelude::*;

use std::borrow::Cow;

use super::batch::{ChunkVectors, DeviceTime, DocChunks, Pending, StagedBatch, UnitBatch};
use super::pack::fill_sentence_counts;
use super::units::{paragraph_units, paragraph_units_ids, sentence_units, spans_to_units, UnitIds, Units};
use super::{ChunkOptions, Chunker, ChunkerKind};
use crate::band::Band;
use crate::cap::Cap;
use crate::chunk::ChunkSpan;
use crate::device::Compute;
use crate::embed::late::{self, LateDoc, LateOptions, LatePrepared, LateVectors};
use crate::embed::{embed_texts, EmbedOptions, Embedder};
use crate::rules::breakpoint::{breakpoints, BreakpointParams};
use crate::rules::global::{global, GlobalParams};
use crate::rules::maxmin::{maxmin, MaxMinParams};
use crate::rules::minima::{skip_and_merge, split_groups, split_starts, MinimaParams};
use crate::rules::sizing;
use crate::segment::structure::heading_prior;
use crate::segment::{delimiters, Segmenter};
use crate::similarity;
use crate::sizer::Sizer;
use crate::span::trim;

/// How a window of sentences is embedded for minima and breakpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum WindowMode {
    /// The mean of the sentences' vectors: no extra model calls.
    #[default]
    Mean,
    /// Re-embed the window's text, as chonkie and LangChain do: (W+1)× the model work.
    Concat,
}

/// What a document gets when its model pass fails (a device error, a model that cannot
/// take its text): the caller's choice, counted in job summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum ModelErrorPolicy {
    /// As `Sentence`, except that an LLM server that cannot be reached at all (no request to
    /// it answered: a wrong URL, a server not started) ends the job with that error, rather
    /// than chunk every document by the fallback.
    #[default]
    Auto,
    /// Chunk it by sentence packing under the same cap and minimum, so no text is lost;
    /// jobs count and list such documents.
    Sentence,
    /// Report the error for that document (a corpus job then skips it or stops, as its
    /// error setting says).
    Fail,
}

impl ModelErrorPolicy {
    /// What a document whose model pass failed with `err` gets: sentence packing under the
    /// chunker's sizer and options (counted in `fallbacks`; the reason in
    /// [`DocChunks::fallback`]), or the error back.
    ///
    /// # Errors
    /// `err`, under [`ModelErrorPolicy::Fail`], and under `Auto` for an unreachable LLM server.
    pub fn apply(
        self,
        text: &str,
        err: crate::Error,
        sizer: &Arc<dyn Sizer>,
        opts: ChunkOptions,
        fallbacks: &std::sync::atomic::AtomicU64,
    ) -> crate::Result<DocChunks> {
        match (self, &err) {
            (Self::Fail, _) | (Self::Auto, crate::Error::LlmUnreachable(_)) => Err(err),
            (Self::Auto | Self::Sentence, _) => {
                fallbacks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let spans = super::sentence::SentenceChunker::new(sizer.clone(), opts).spans(text);
                Ok(DocChunks { fallback: Some(err.to_string()), ..DocChunks::spans(spans) })
            }
        }
    }
}

/// The cap a unit must fit for `embedder`: `cap`, and the model's window less its special
/// tokens where the model has one.
#[must_use]
pub fn unit_cap(cap: Cap, embedder: &dyn Embedder) -> Cap {
    let (pre, post) = embedder.special_ids();
    match embedder.max_tokens() {
        Some(m) => cap.min(m.saturating_sub(pre.len() + post.len())),
        None => cap,
    }
}

/// A boundary rule and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    MaxMin(MaxMinParams),
    Global(GlobalParams),
    Minima(MinimaParams, WindowMode),
    Breakpoint { params: BreakpointParams, buffer: usize, window: WindowMode },
}

impl Rule {
    /// The chunker this rule makes.
    #[must_use]
    pub fn kind(&self) -> ChunkerKind {
        match self {
            Self::MaxMin(_) => ChunkerKind::Maxmin,
            Self::Global(_) => ChunkerKind::Global,
            Self::Minima(..) => ChunkerKind::Minima,
            Self::Breakpoint { .. } => ChunkerKind::Breakpoint,
        }
    }

    /// Whether the rule reads nothing but the band (so the band can come from the device).
    fn band_only(&self) -> bool {
        matches!(self, Self::MaxMin(_) | Self::Global(_))
    }
}

/// How a document is split into the sentences the rules see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Splitter {
    /// seamcut's segmenter (abbreviations, numbers, CJK, lists).
    Segmenter,
    /// chonkie's delimiter splitter, merging segments under `min_bytes` (chonkie: 24).
    Delimiters { min_bytes: usize },
    /// Whole paragraphs (blank-line separated) as the units; a paragraph over the cap or the
    /// model's window falls back to its sentences. The default: the rules then group the
    /// author's paragraphs and never cut one that fits, which on the first retrieval
    /// benchmark (two books) lifted Max–Min from 2–9 DCG@10 points below size-matched
    /// recursive splitting (benches/RESULTS.md); on the broad benchmark it ties it. Text
    /// without blank lines, or whose paragraphs are over the cap, gets sentence units.
    #[default]
    Paragraphs,
}

/// The longest chunk, in sentences, Max–Min may grow (the band's width).
pub const MAX_CHUNK_SENTENCES: usize = 256;

/// An embedding-first chunker: Max–Min, the global rule, minima or breakpoints over unit
/// vectors.
///
/// [`Chunker::chunk`] and [`Chunker::chunk_batch`] run every stage through the batch path
/// ([`Chunker::prepare_batch`], [`super::batch`]); a caller that embeds elsewhere (a GPU
/// service, another process) drives the per-document steps one by one:
///
/// 1. [`Self::units`]: the document's units (covering spans with token counts);
/// 2. [`unit_texts`]: the text of each unit, what to embed;
/// 3. vectors: [`crate::embed::prepare`] + [`crate::embed::run`] with [`Self::embedder`] and
///    [`Self::embed_options`], or any L2-normalised vectors of the same model, `n × dim`;
/// 4. [`Self::chunk_with_vectors`]: the band of similarities, the rule's chunk starts, the
///    sizing pass (cap and minimum) and exact token counts, giving chunk spans and the unit
///    range of each chunk.
///
/// ```
/// use seamcut::chunkers::semantic::unit_texts;
/// use seamcut::spec::ChunkerSpec;
/// let spec: ChunkerSpec = serde_json::from_str(r#"{"chunker": "maxmin"}"#).unwrap();
/// let chunker = spec.build().unwrap();
/// let sc = chunker.semantic().unwrap();
/// let text = "Cats purr. Cats sleep.\n\nTax law is complex. Taxes are due in April.";
/// let units = sc.units(text);
/// let texts = unit_texts(text, &units);
/// let (vectors, _) = seamcut::embed::embed_texts(sc.embedder().as_ref(), &texts, sc.embed_options()).unwrap();
/// let chunks = sc.chunk_with_vectors(text, &units, &vectors.data).unwrap();
/// assert_eq!(chunks.spans, chunker.chunk(text).unwrap());
/// ```
pub struct SemanticChunker {
    embedder: Arc<dyn Embedder>,
    sizer: Arc<dyn Sizer>,
    compute: Compute,
    rule: Rule,
    opts: ChunkOptions,
    segmenter: Segmenter,
    splitter: Splitter,
    embed_opts: EmbedOptions,
    policy: ModelErrorPolicy,
    description: String,
    fallbacks: std::sync::atomic::AtomicU64,
    device_bands: bool,
    shared_tokenizer: bool,
    /// Unit vectors from the late pass with these options (`None`: each unit on its own).
    late_units: Option<LateOptions>,
}

/// The chunks of one document and, for each, the range of units it groups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SemanticChunks {
    pub spans: Vec<ChunkSpan>,
    pub unit_ranges: Vec<std::ops::Range<usize>>,
}

pub use super::units::unit_texts;

/// Chunks from chunk starts over `units`, with exact token counts: the sum of a chunk's
/// units' counts where the sizer adds up across the chunk's unit boundaries (each right
/// after whitespace), else its text counted again; a chunk counted over `cap` is split again
/// at its weakest seam (`seam[i]`: the similarity of units `i − 1` and `i`; lowest first).
#[must_use]
pub fn exact_chunks(
    text: &str,
    units: &Units,
    starts: &[usize],
    seam: &[f32],
    sizer: &dyn Sizer,
    cap: Cap,
) -> SemanticChunks {
    let n = units.len();
    let additive = sizer.additive_at_whitespace();
    let after_space = |pos: usize| text[..pos].chars().next_back().is_some_and(char::is_whitespace);
    let mut out = SemanticChunks::default();
    let mut stack: Vec<(usize, usize)> =
        starts.iter().enumerate().rev().map(|(k, &s)| (s, starts.get(k + 1).copied().unwrap_or(n))).collect();
    while let Some((a, b)) = stack.pop() {
        let (start, end) = (units.spans[a].start, units.spans[b - 1].end);
        let tokens = if b - a == 1 {
            units.tokens[a]
        } else if additive && (a + 1..b).all(|k| after_space(units.spans[k].start)) {
            units.tokens[a..b].iter().sum()
        } else {
            sizer.count(&text[start..end])
        };
        if !cap.admits(tokens) && b - a > 1 {
            let cut = (a + 1..b).min_by(|&x, &y| seam[x].total_cmp(&seam[y])).unwrap_or(a + 1);
            stack.push((cut, b));
            stack.push((a, cut));
            continue;
        }
        out.spans.push(ChunkSpan::new(start, end, tokens, 0));
        out.unit_ranges.push(a..b);
    }
    fill_sentence_counts(&mut out.spans, &units.sentence_starts);
    out
}

impl SemanticChunker {
    #[must_use]
    pub fn new(
        embedder: Arc<dyn Embedder>,
        sizer: Arc<dyn Sizer>,
        compute: Compute,
        rule: Rule,
        opts: ChunkOptions,
    ) -> Self {
        let description = format!("{} on {}", rule.kind(), embedder.describe());
        Self {
            embedder,
            sizer,
            rule,
            opts,
            segmenter: Segmenter::default(),
            splitter: Splitter::default(),
            embed_opts: EmbedOptions::default(),
            policy: ModelErrorPolicy::default(),
            description,
            fallbacks: std::sync::atomic::AtomicU64::new(0),
            device_bands: compute.bands_on_device(),
            compute,
            shared_tokenizer: false,
            late_units: None,
        }
    }

    /// Declare that the sizer counts with the embedder's own tokenizer (the spec's `sizer:
    /// default`), so the ids that counted a unit can be embedded without tokenizing it again
    /// ([`Self::units_with_ids`]). Declaring it for another sizer would embed the wrong ids.
    #[must_use]
    pub fn with_shared_tokenizer(mut self, shared: bool) -> Self {
        self.shared_tokenizer = shared;
        self
    }

    /// Whether rules that read only the band (Max–Min, global) get it from the device: the
    /// unit vectors stay where the model computed them, the bands of all documents of a batch
    /// come from one kernel launch, and only they are copied back. On by default on CUDA, off
    /// on the CPU (where the host code is faster); turned on for a CPU model it runs the same
    /// path's plumbing on the CPU (the bands by the host code), which is how it is tested
    /// without a GPU.
    #[must_use]
    pub fn with_device_bands(mut self, on: bool) -> Self {
        self.device_bands = on;
        self
    }

    /// Does this chunker take its bands from the device ([`Self::with_device_bands`], and a rule
    /// that reads nothing but the band)?
    #[must_use]
    pub fn uses_device_bands(&self) -> bool {
        self.device_bands && self.rule.band_only()
    }

    /// Take the unit vectors from the late pass over each document with `opts`
    /// ([`crate::embed::late`]; validated by the caller), or (`None`) embed each unit on its
    /// own. With the late pass, late chunk vectors come from the same pass.
    #[must_use]
    pub fn with_late_units(mut self, opts: Option<LateOptions>) -> Self {
        self.late_units = opts;
        self
    }

    /// Choose the sentence splitter.
    #[must_use]
    pub fn with_splitter(mut self, splitter: Splitter) -> Self {
        self.splitter = splitter;
        self
    }

    /// Choose what a document whose model pass fails gets.
    #[must_use]
    pub fn with_model_error_policy(mut self, policy: ModelErrorPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The line [`Chunker::describe`] returns.
    #[must_use]
    pub fn with_description(mut self, d: String) -> Self {
        self.description = d;
        self
    }

    /// The model that embeds the units.
    #[must_use]
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Batching options for stage 3.
    #[must_use]
    pub fn embed_options(&self) -> EmbedOptions {
        self.embed_opts
    }

    /// The sizer chunks are counted with.
    #[must_use]
    pub fn sizer(&self) -> &Arc<dyn Sizer> {
        &self.sizer
    }

    /// Documents chunked by the sentence-packing fallback so far (by any path through this
    /// chunker).
    #[must_use]
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn embed(&self, texts: &[&str]) -> crate::Result<Vec<f32>> {
        Ok(embed_texts(self.embedder.as_ref(), texts, self.embed_opts)?.0.data)
    }

    fn starts(
        &self,
        unit_texts: &[&str],
        tokens: &[usize],
        vectors: &[f32],
        band: &crate::band::Band,
    ) -> crate::Result<Vec<usize>> {
        let dim = self.embedder.dim();
        let n = tokens.len();
        Ok(match self.rule {
            Rule::MaxMin(p) => maxmin(band, tokens, self.opts.cap, &p),
            Rule::Global(p) => {
                let prior = heading_prior(unit_texts, p.heading_weight);
                global(band, tokens, self.opts.cap, &prior, &p)
            }
            Rule::Minima(p, mode) => {
                let w = p.similarity_window;
                let sims = match mode {
                    WindowMode::Mean => similarity::window_series_mean(vectors, dim, w),
                    WindowMode::Concat if n > w => {
                        let windows: Vec<String> =
                            (0..n - w).map(|i| unit_texts[i..i + w].concat()).collect();
                        let refs: Vec<&str> = windows.iter().map(String::as_str).collect();
                        let wv = self.embed(&refs)?;
                        (0..n - w)
                            .map(|i| {
                                similarity::dot(
                                    &wv[i * dim..(i + 1) * dim],
                                    &vectors[(i + w) * dim..(i + w + 1) * dim],
                                )
                            })
                            .collect()
                    }
                    WindowMode::Concat => Vec::new(),
                };
                let mut starts = split_starts(n, &sims, &p);
                if p.skip_window > 0 && starts.len() > 1 {
                    let groups: Vec<String> = (0..starts.len())
                        .map(|g| unit_texts[starts[g]..starts.get(g + 1).copied().unwrap_or(n)].concat())
                        .collect();
                    let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
                    let gv = self.embed(&refs)?;
                    let sim = |a: usize, b: usize| {
                        similarity::dot(&gv[a * dim..(a + 1) * dim], &gv[b * dim..(b + 1) * dim])
                    };
                    starts = skip_and_merge(&starts, &p, sim);
                }
                split_groups(&starts, tokens, self.opts.cap)
            }
            Rule::Breakpoint { params, buffer, window } => {
                let distances = match window {
                    WindowMode::Mean => similarity::combined_distances_mean(vectors, dim, buffer),
                    WindowMode::Concat => {
                        let combined: Vec<String> = (0..n)
                            .map(|i| unit_texts[i.saturating_sub(buffer)..(i + buffer + 1).min(n)].join(" "))
                            .collect();
                        let refs: Vec<&str> = combined.iter().map(String::as_str).collect();
                        let cv = self.embed(&refs)?;
                        (0..n.saturating_sub(1))
                            .map(|i| {
                                1.0 - similarity::dot(
                                    &cv[i * dim..(i + 1) * dim],
                                    &cv[(i + 1) * dim..(i + 2) * dim],
                                )
                            })
                            .collect()
                    }
                };
                let chars: Vec<usize> = unit_texts.iter().map(|t| t.chars().count()).collect();
                breakpoints(&distances, &chars, &params)
            }
        })
    }

    /// Stage 1: the document's units, each within the cap and the model's window.
    #[must_use]
    pub fn units(&self, text: &str) -> Units {
        let cap = unit_cap(self.opts.cap, self.embedder.as_ref()).limit();
        match self.splitter {
            Splitter::Segmenter => sentence_units(text, &self.segmenter, self.sizer.as_ref(), cap),
            Splitter::Paragraphs => paragraph_units(text, &self.segmenter, self.sizer.as_ref(), cap),
            Splitter::Delimiters { min_bytes } => {
                let cover = delimiters::split(text, &delimiters::CHONKIE_DELIMITERS, min_bytes);
                let mut u = spans_to_units(text, &cover, self.sizer.as_ref(), cap);
                u.sentence_starts = cover.iter().map(|s| trim(text, *s).start).collect();
                u
            }
        }
    }

    /// [`Self::units`], and where the sizer is the embedder's tokenizer
    /// ([`Self::with_shared_tokenizer`]) and units are paragraphs, the token ids of the units
    /// that are whole paragraphs, for [`crate::embed::prepare_known`]; else no ids.
    #[must_use]
    pub fn units_with_ids(&self, text: &str) -> (Units, UnitIds) {
        match self.splitter {
            Splitter::Paragraphs if self.shared_tokenizer => {
                let cap = unit_cap(self.opts.cap, self.embedder.as_ref()).limit();
                paragraph_units_ids(text, &self.segmenter, self.sizer.as_ref(), cap, true)
            }
            _ => (self.units(text), Vec::new()),
        }
    }

    /// Stage 4: everything after embedding (band, rule, sizing, exact counts) for one
    /// document's units and their vectors (`units.len() × dim`, L2-normalised).
    ///
    /// # Errors
    /// If the vectors do not match the units, or the device fails computing the band (or
    /// re-embedding windows with [`WindowMode::Concat`]).
    pub fn chunk_with_vectors(
        &self,
        text: &str,
        units: &Units,
        vectors: &[f32],
    ) -> crate::Result<SemanticChunks> {
        let n = units.len();
        if vectors.len() != n * self.embedder.dim() {
            return Err(crate::Error::Config(format!(
                "{} vectors of dimension {} for {n} units",
                vectors.len() / self.embedder.dim().max(1),
                self.embedder.dim()
            )));
        }
        if n == 0 {
            return Ok(SemanticChunks::default());
        }
        let band = similarity::band(vectors, self.embedder.dim(), self.band_width(units), &self.compute)?;
        self.chunks_from_band(text, units, vectors, &band)
    }

    /// The look-back the band of `units` needs: Max–Min and the global rule compare a unit with
    /// the rest of its chunk, so no more width than the most units a chunk can hold under the
    /// cap (with paragraph units and a 256 cap, a few dozen rather than 256: a quarter of the
    /// model-free time of a Max–Min job went into band products past any chunk); the other
    /// rules read adjacent units only.
    #[must_use]
    pub fn band_width(&self, units: &Units) -> usize {
        let chunk = || {
            MAX_CHUNK_SENTENCES
                .min(units.len().max(1))
                .min(sizing::max_units(&units.tokens, self.opts.cap))
                .max(1)
        };
        match self.rule {
            Rule::MaxMin(_) => chunk(),
            // Depth scores compare `block` units on each side of a seam: the band reaches that
            // far too (the DP itself still looks no further than a chunk can hold).
            Rule::Global(p) if p.depth_weight > 0.0 => chunk().max(2 * p.block.max(1) - 1),
            Rule::Global(_) => chunk(),
            _ => 1,
        }
    }

    /// Stage 4 from a band computed elsewhere (the device path, [`Self::bands_of`]): for the
    /// rules that read only the band.
    ///
    /// # Errors
    /// If the rule needs the unit vectors too, or the band does not match the units.
    pub fn chunk_with_band(&self, text: &str, units: &Units, band: &Band) -> crate::Result<SemanticChunks> {
        if !self.rule.band_only() {
            return Err(crate::Error::Config(format!(
                "{} needs the unit vectors, not only the band",
                self.rule.kind()
            )));
        }
        if band.len() != units.len() {
            return Err(crate::Error::Config(format!(
                "a band of {} rows for {} units",
                band.len(),
                units.len()
            )));
        }
        self.chunks_from_band(text, units, &[], band)
    }

    /// The bands of documents whose unit vectors are the rows of `vectors` (on any device),
    /// document `d` owning the next `units[d].len()` rows; one launch, only the bands come back.
    ///
    /// # Errors
    /// If the rows do not match the units, or the device fails.
    pub fn bands_of(&self, vectors: &candle_core::Tensor, units: &[Units]) -> crate::Result<Vec<Band>> {
        let mut offsets = vec![0];
        for u in units {
            offsets.push(offsets.last().copied().unwrap_or(0) + u.len());
        }
        let widths: Vec<usize> = units.iter().map(|u| self.band_width(u)).collect();
        similarity::bands_many(vectors, &offsets, &widths)
    }

    fn chunks_from_band(
        &self,
        text: &str,
        units: &Units,
        vectors: &[f32],
        band: &Band,
    ) -> crate::Result<SemanticChunks> {
        let n = units.len();
        if n == 0 {
            return Ok(SemanticChunks::default());
        }
        let unit_texts = unit_texts(text, units);
        let starts = self.starts(&unit_texts, &units.tokens, vectors, band)?;
        let seam: Vec<f32> = (0..n).map(|i| if i == 0 { 0.0 } else { band.sim(i, i - 1) }).collect();
        let starts = sizing::size(&starts, &units.tokens, &seam, self.opts.cap, self.opts.min_tokens);
        Ok(exact_chunks(text, units, &starts, &seam, self.sizer.as_ref(), self.opts.cap))
    }

    /// The chunks a document gets when its model pass failed with `err`: sentence packing
    /// under the same cap and minimum, with the reason ([`ModelErrorPolicy::apply`]), or the
    /// error back.
    ///
    /// # Errors
    /// `err`, under [`ModelErrorPolicy::Fail`].
    pub fn fallback(&self, text: &str, err: crate::Error) -> crate::Result<DocChunks> {
        self.policy.apply(text, err, &self.sizer, self.opts, &self.fallbacks)
    }

    /// The prepare stage: every document's units, tokenized and planned for one embedding
    /// pass (units of all documents batched together by token budget, so a GPU sees full
    /// batches even for short documents), and the documents planned for the late pass when
    /// unit or chunk vectors come from it.
    fn prepare(&self, texts: &[&str], want: ChunkVectors) -> SemanticBatch {
        let model = self.embedder.as_ref();
        let units = match self.late_units {
            None => UnitBatch::new(texts, |t| self.units_with_ids(t), Some((model, self.embed_opts))),
            Some(_) => UnitBatch::new(texts, |t| (self.units(t), Vec::new()), None),
        };
        let late_opts = match (self.late_units, want) {
            (Some(o), _) | (None, ChunkVectors::Late(o)) => Some(o),
            _ => None,
        };
        let late = late_opts.map(|o| {
            let docs: Vec<LateDoc<'_>> =
                texts.iter().zip(&units.units).map(|(t, u)| LateDoc { text: t, spans: &u.spans }).collect();
            (late::prepare(model, &docs, o), o)
        });
        SemanticBatch { units, want, late, late_out: None, embedded: None }
    }

    /// The device stage: the batch's unit vectors (each unit on its own, or pooled by the late
    /// pass), or, where the rule reads only the band and the unit vectors are not wanted on the
    /// host, every document's band computed where the vectors are
    /// ([`Self::uses_device_bands`]); and the late pass's span sums for late chunk vectors.
    pub(crate) fn embed_batch(&self, b: &mut SemanticBatch) -> DeviceTime {
        let model = self.embedder.as_ref();
        let mut time = DeviceTime::default();
        let bands_here = self.uses_device_bands() && b.want != ChunkVectors::Mean;
        let mut bands_of = |v: candle_core::Tensor, units: &[Units]| -> crate::Result<Vec<Band>> {
            // The encoder's work is queued asynchronously: wait for it, so that the band's
            // time is its own.
            v.device().synchronize()?;
            let t = std::time::Instant::now();
            let bands = self.bands_of(&v, units);
            time.bands += t.elapsed().as_secs_f64();
            bands
        };
        if let Some((prepared, _)) = b.late.take() {
            let late_chunks = matches!(b.want, ChunkVectors::Late(_));
            let out = prepared.and_then(|p| late::run_tensor(model, &p)).and_then(|(t, _)| {
                if self.late_units.is_some() && bands_here {
                    b.embedded = Some(match t.unit_vectors().and_then(|v| bands_of(v, &b.units.units)) {
                        Ok(bands) => Embedded::Bands(bands),
                        // Recovered on the host, document by document.
                        Err(e) => Embedded::Vectors(Err(e)),
                    });
                    if !late_chunks {
                        return Ok(LateVectors::default());
                    }
                }
                t.to_host()
            });
            b.late_out = Some(out);
        }
        if self.late_units.is_some() {
            return time;
        }
        if bands_here {
            let bands =
                b.units.run_tensor(model).and_then(|v| v.map(|v| bands_of(v, &b.units.units)).transpose());
            match bands {
                Ok(Some(bands)) => {
                    b.embedded = Some(Embedded::Bands(bands));
                    return time;
                }
                // A failed device pass: recovered on the host, document by document.
                Err(e) => {
                    b.embedded = Some(Embedded::Vectors(Err(e)));
                    return time;
                }
                // Not applicable (a unit spans several model windows): the host path.
                Ok(None) => {}
            }
        }
        b.embedded = Some(Embedded::Vectors(b.units.run(model)));
        time
    }

    /// The finish stage: bands, rules, sizing and exact counts per document (in parallel),
    /// chunk vectors when asked for, and [`ModelErrorPolicy`] for a document whose model pass
    /// failed (its units are first embedded on their own when the batch's pass failed).
    pub(crate) fn finish_batch(&self, texts: &[&str], b: SemanticBatch) -> Vec<crate::Result<DocChunks>> {
        let SemanticBatch { units, want, late_out, embedded, .. } = b;
        let model = self.embedder.as_ref();
        let dim = model.dim();
        // Late unit vectors, every span's, normalised once for the batch.
        let late_units = match (&late_out, self.late_units) {
            (Some(Ok(v)), Some(_)) if !matches!(embedded, Some(Embedded::Bands(_))) => Some(v.unit_vectors()),
            _ => None,
        };
        texts
            .par_iter()
            .with_max_len(1)
            .enumerate()
            .map(|(d, text)| {
                let u = &units.units[d];
                // This document's late pass: its part of the batch's, or its own when that
                // failed.
                let late_of = || -> crate::Result<(Cow<'_, LateVectors>, usize)> {
                    match &late_out {
                        Some(Ok(v)) => Ok((Cow::Borrowed(v), v.doc(d).start)),
                        _ => {
                            let opts = match (self.late_units, want) {
                                (Some(o), _) | (None, ChunkVectors::Late(o)) => o,
                                _ => return Err(crate::Error::Internal("no late pass".into())),
                            };
                            let doc = LateDoc { text, spans: &u.spans };
                            Ok((Cow::Owned(late::late_pool(model, &[doc], opts)?.0), 0))
                        }
                    }
                };
                let unit_vectors = || -> crate::Result<Cow<'_, [f32]>> {
                    if self.late_units.is_none() {
                        let all = match &embedded {
                            Some(Embedded::Vectors(all)) => all,
                            _ => return Err(crate::Error::Internal("no unit vectors".into())),
                        };
                        return units.vectors_of(d, all, text, model, self.embed_opts);
                    }
                    match &late_units {
                        Some(e) => {
                            let a = units.first(d);
                            Ok(Cow::Borrowed(&e.data[a * dim..(a + u.len()) * dim]))
                        }
                        None => {
                            let (v, first) = late_of()?;
                            let rows = v.unit_vectors();
                            Ok(Cow::Owned(rows.data[first * dim..(first + u.len()) * dim].to_vec()))
                        }
                    }
                };
                let chunked = (|| -> crate::Result<DocChunks> {
                    let (c, units_v) = match &embedded {
                        Some(Embedded::Bands(bands)) => (self.chunk_with_band(text, u, &bands[d])?, None),
                        _ => {
                            let v = unit_vectors()?;
                            (self.chunk_with_vectors(text, u, &v)?, Some(v))
                        }
                    };
                    let vectors = match (want, units_v) {
                        (ChunkVectors::Mean, Some(v)) => {
                            Some(crate::embed::mean_rows(&v, dim, &c.unit_ranges))
                        }
                        (ChunkVectors::Late(_), _) => {
                            let (lv, first) = late_of()?;
                            Some(
                                c.unit_ranges
                                    .iter()
                                    .flat_map(|r| lv.aggregate(first + r.start..first + r.end))
                                    .collect(),
                            )
                        }
                        _ => None,
                    };
                    Ok(DocChunks { spans: c.spans, vectors, fallback: None })
                })();
                chunked.or_else(|e| self.fallback(text, e))
            })
            .collect()
    }
}

/// An embedding chunker's batch between its stages (see [`super::batch`]).
pub struct SemanticBatch {
    units: UnitBatch,
    /// The chunk vectors asked for.
    want: ChunkVectors,
    /// The late pass, planned (with its options), until the device stage runs it.
    late: Option<(crate::Result<LatePrepared>, LateOptions)>,
    /// The late pass's span sums (all spans of the batch, in document order).
    late_out: Option<crate::Result<LateVectors>>,
    embedded: Option<Embedded>,
}

impl SemanticBatch {
    /// Units in the batch.
    #[must_use]
    pub fn units(&self) -> usize {
        self.units.total_units()
    }
}

/// An embedding chunker's batch with the chunker, for the batch path.
struct Staged<'c> {
    chunker: &'c SemanticChunker,
    batch: SemanticBatch,
}

impl StagedBatch for Staged<'_> {
    fn embed(&mut self) -> DeviceTime {
        self.chunker.embed_batch(&mut self.batch)
    }

    fn units(&self) -> usize {
        self.batch.units()
    }

    fn finish(self: Box<Self>, texts: &[&str]) -> Vec<crate::Result<DocChunks>> {
        self.chunker.finish_batch(texts, self.batch)
    }
}

/// What the device stage leaves for the finish stage.
enum Embedded {
    Vectors(crate::Result<Vec<f32>>),
    Bands(Vec<Band>),
}

impl Chunker for SemanticChunker {
    fn kind(&self) -> ChunkerKind {
        self.rule.kind()
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn semantic(&self) -> Option<&SemanticChunker> {
        Some(self)
    }

    fn unit_model(&self) -> Option<&Arc<dyn Embedder>> {
        Some(&self.embedder)
    }

    fn prepare_batch<'c>(&'c self, texts: &[&str], vectors: ChunkVectors) -> Pending<'c> {
        Pending::staged(Box::new(Staged { chunker: self, batch: self.prepare(texts, vectors) }))
    }

    fn chunk_batch(&self, texts: &[&str]) -> Vec<crate::Result<Vec<ChunkSpan>>> {
        let mut pending = self.prepare_batch(texts, ChunkVectors::None);
        pending.embed();
        pending.finish(texts).into_iter().map(|r| r.map(|c| c.spans)).collect()
    }

    fn chunk(&self, text: &str) -> crate::Result<Vec<ChunkSpan>> {
        self.chunk_batch(&[text]).pop().unwrap_or_else(|| Ok(Vec::new()))
    }
}
