//! Chunkers: a document's text in, [`ChunkSpan`]s out.
//!
//! One file per chunker. They share three pieces of machinery:
//! [`units`] (sentences as contiguous, size-capped units), [`pack`] (greedy packing under a
//! token cap, with exact re-counting, and the merge of chunks under a minimum) and
//! [`crate::sizer::cut`]. Every chunker guarantees the invariants checked by
//! [`crate::chunk::verify`] and that no chunk is over `max_tokens` tokens.
//!
//! ```
//! use std::sync::Arc;
//! use seamcut::chunkers::{build, ChunkerKind, ChunkOptions};
//! use seamcut::sizer::WordSizer;
//! let chunker = build(ChunkerKind::Sentence, Arc::new(WordSizer), ChunkOptions::new(8)).unwrap();
//! let text = "One two three. Four five six. Seven eight nine ten.";
//! let chunks = chunker.chunk(text).unwrap();
//! assert_eq!(chunks.len(), 2);
//! assert!(chunks.iter().all(|c| c.tokens <= 8));
//! ```

pub mod batch;
pub mod fixed;
pub mod lumber;
pub mod pack;
pub mod paragraph;
pub mod recursive;
pub mod semantic;
pub mod sentence;
pub mod units;
pub mod windows;

use std::sync::Arc;

pub use batch::{ChunkVectors, DeviceTime, DocChunks, Pending};

use crate::cap::Cap;
use crate::chunk::ChunkSpan;
use crate::sizer::Sizer;
use crate::{Error, Result};

/// Sizes every chunker honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkOptions {
    /// Hard cap on tokens per chunk.
    pub cap: Cap,
    /// Chunks under this many tokens are merged into a neighbour when the cap allows.
    pub min_tokens: usize,
    /// Tokens each chunk's window reaches into each neighbour ([`windows`]); `0`: no windows.
    pub overlap: usize,
}

impl ChunkOptions {
    /// A cap of `max_tokens` tokens (`0`: none), no minimum, no overlap.
    #[must_use]
    pub fn new(max_tokens: usize) -> Self {
        Self { cap: Cap::new(max_tokens), min_tokens: 0, overlap: 0 }
    }

    #[must_use]
    pub fn with_min_tokens(mut self, min: usize) -> Self {
        self.min_tokens = min;
        self
    }

    #[must_use]
    pub fn with_overlap(mut self, overlap: usize) -> Self {
        self.overlap = overlap;
        self
    }

    pub(crate) fn validate(&self, kind: ChunkerKind) -> Result<()> {
        if !self.cap.admits(self.min_tokens) {
            return Err(Error::setting(
                "min_tokens",
                format!(
                    "{} is larger than the cap, {} {}",
                    self.min_tokens,
                    crate::error::named("max_tokens"),
                    self.cap
                ),
            ));
        }
        if kind == ChunkerKind::Fixed && self.cap.is_none() {
            return Err(Error::setting("max_tokens", "the fixed chunker needs a cap (a value above 0)"));
        }
        Ok(())
    }
}

/// The chunkers seamcut offers, as the CLI and chunker specs name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum ChunkerKind {
    /// Runs of exactly the cap's number of tokens, cut even inside a word.
    Fixed,
    /// Recursive separators: paragraph → line → sentence → word → token.
    Recursive,
    /// Sentences packed greedily up to the cap.
    #[default]
    Sentence,
    /// One chunk per paragraph; a paragraph over the cap is packed by sentences.
    Paragraph,
    /// Max–Min semantic chunking over unit embeddings (Kiss, Nagy, Szilágyi 2025).
    Maxmin,
    /// Savitzky–Golay minima of window-to-unit similarity (chonkie's SemanticChunker).
    Minima,
    /// Breakpoints on neighbour distances (LangChain/LlamaIndex SemanticChunker).
    Breakpoint,
    /// Every cut at once: the segmentation that maximises within-chunk coherence under the
    /// cap, at the mean chunk size asked for (seamcut's own rule).
    Global,
    /// LumberChunker (Duarte et al. 2024): an LLM picks where content shifts in each group
    /// of paragraphs.
    Lumber,
    /// LumberChunker guided by the embedding band: the LLM judges the band's weakest seams,
    /// many per request.
    LumberGuided,
}

impl ChunkerKind {
    pub const ALL: [Self; 10] = [
        Self::Fixed,
        Self::Recursive,
        Self::Sentence,
        Self::Paragraph,
        Self::Maxmin,
        Self::Minima,
        Self::Breakpoint,
        Self::Global,
        Self::Lumber,
        Self::LumberGuided,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::Recursive => "recursive",
            Self::Sentence => "sentence",
            Self::Paragraph => "paragraph",
            Self::Maxmin => "maxmin",
            Self::Minima => "minima",
            Self::Breakpoint => "breakpoint",
            Self::Global => "global",
            Self::Lumber => "lumber",
            Self::LumberGuided => "lumber-guided",
        }
    }

    /// Whether the chunker sizes text only (no model): fixed, recursive, sentence, paragraph.
    #[must_use]
    pub fn is_baseline(self) -> bool {
        matches!(self, Self::Fixed | Self::Recursive | Self::Sentence | Self::Paragraph)
    }

    /// Whether the chunker asks an LLM: lumber, lumber-guided.
    #[must_use]
    pub fn is_llm(self) -> bool {
        matches!(self, Self::Lumber | Self::LumberGuided)
    }
}

impl std::fmt::Display for ChunkerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ChunkerKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let known: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
            Error::Config(format!("unknown chunker {s:?} (known: {})", known.join(", ")))
        })
    }
}

/// Turns one document's text into chunks.
pub trait Chunker: Send + Sync {
    /// Which chunker this is.
    fn kind(&self) -> ChunkerKind;

    /// The chunker's name, as specs and the CLI spell it.
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Chunk one document. An empty or whitespace-only text gives no chunks. Baselines
    /// never fail; an embedding chunker fails when its model does (see
    /// [`semantic::ModelErrorPolicy`] for the sentence-packing fallback a caller may choose).
    ///
    /// # Errors
    /// When the model fails on this document.
    fn chunk(&self, text: &str) -> Result<Vec<ChunkSpan>>;

    /// Chunk many documents; one result per document, in input order. The default runs
    /// [`Self::chunk`] on each in parallel; embedding chunkers run the batch path
    /// ([`Self::prepare_batch`]) to embed all units together.
    fn chunk_batch(&self, texts: &[&str]) -> Vec<Result<Vec<ChunkSpan>>> {
        use rayon::prelude::*;
        texts.par_iter().with_max_len(1).map(|t| self.chunk(t)).collect()
    }

    /// The first stage of the batch path ([`batch`]): what can be done for `texts` before the
    /// device's part. Chunkers without a model pass chunk here (the default:
    /// [`Self::chunk_batch`]); embedding chunkers find and tokenize units. `vectors` asks for
    /// chunk vectors from the chunker's own pass, which only chunkers with unit vectors give
    /// ([`Self::unit_model`]); the others leave them to the caller.
    fn prepare_batch<'c>(&'c self, texts: &[&str], vectors: ChunkVectors) -> Pending<'c> {
        let _ = vectors;
        Pending::done(self.chunk_batch(texts).into_iter().map(|r| r.map(DocChunks::spans)).collect())
    }

    /// The model whose unit vectors the chunker computes (the embedding chunkers), which mean
    /// chunk vectors come from; `None` for chunkers without unit vectors.
    fn unit_model(&self) -> Option<&Arc<dyn crate::embed::Embedder>> {
        None
    }

    /// The windows its chunks get (`overlap > 0`, [`windows::windowed`]); `None`: none.
    fn windows(&self) -> Option<&windows::Windows> {
        None
    }

    /// The embedding chunker's per-document steps (units → your vectors → band → starts →
    /// chunks), for a caller that embeds elsewhere; `None` for the other chunkers.
    fn semantic(&self) -> Option<&semantic::SemanticChunker> {
        None
    }

    /// One line on the settings that matter for reports: the name, and for embedding
    /// chunkers the model and any calibrated threshold and where it came from.
    fn describe(&self) -> String {
        self.name().to_string()
    }

    /// What the chunker's LLM requests have cost so far (LLM chunkers only).
    fn llm_cost(&self) -> Option<crate::llm::LlmCost> {
        None
    }
}

/// Build a baseline chunker (fixed, recursive, sentence, paragraph) from a sizer. Embedding
/// chunkers need a model: build them from a [`crate::spec::ChunkerSpec`].
///
/// # Errors
/// If the options do not make sense for this chunker (e.g. overlap ≥ cap), or `kind` is an
/// embedding chunker.
pub fn build(kind: ChunkerKind, sizer: Arc<dyn Sizer>, opts: ChunkOptions) -> Result<Box<dyn Chunker>> {
    opts.validate(kind)?;
    let chunker: Box<dyn Chunker> = match kind {
        ChunkerKind::Fixed => Box::new(fixed::FixedChunker::new(sizer.clone(), opts)),
        ChunkerKind::Recursive => Box::new(recursive::RecursiveChunker::new(sizer.clone(), opts)),
        ChunkerKind::Sentence => Box::new(sentence::SentenceChunker::new(sizer.clone(), opts)),
        ChunkerKind::Paragraph => Box::new(paragraph::ParagraphChunker::new(sizer.clone(), opts)),
        ChunkerKind::Maxmin
        | ChunkerKind::Minima
        | ChunkerKind::Breakpoint
        | ChunkerKind::Global
        | ChunkerKind::Lumber
        | ChunkerKind::LumberGuided => {
            return Err(Error::Config(format!(
                "{kind} needs a model: build it from a ChunkerSpec (seamcut::spec)"
            )))
        }
    };
    Ok(windows::windowed(chunker, &sizer, opts.overlap))
}
