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
//! let chunks = chunker.chunk(text);
//! assert_eq!(chunks.len(), 2);
//! assert!(chunks.iter().all(|c| c.tokens <= 8));
//! ```

pub mod fixed;
pub mod pack;
pub mod paragraph;
pub mod recursive;
pub mod semantic;
pub mod sentence;
pub mod units;

use std::sync::Arc;

use crate::chunk::ChunkSpan;
use crate::sizer::Sizer;
use crate::{Error, Result};

/// Sizes every chunker honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkOptions {
    /// Hard cap on tokens per chunk; 0 means no cap.
    pub max_tokens: usize,
    /// Chunks under this many tokens are merged into a neighbour when the cap allows.
    pub min_tokens: usize,
    /// Tokens shared by consecutive chunks (fixed windows only).
    pub overlap: usize,
}

impl ChunkOptions {
    #[must_use]
    pub fn new(max_tokens: usize) -> Self {
        Self { max_tokens, min_tokens: 0, overlap: 0 }
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

    /// The cap as a number (`usize::MAX` when uncapped).
    #[must_use]
    pub fn cap(&self) -> usize {
        if self.max_tokens == 0 {
            usize::MAX
        } else {
            self.max_tokens
        }
    }

    fn validate(&self, kind: ChunkerKind) -> Result<()> {
        if self.max_tokens != 0 && self.min_tokens > self.max_tokens {
            return Err(Error::Config(format!(
                "--min-tokens {} is larger than --max-tokens {}",
                self.min_tokens, self.max_tokens
            )));
        }
        if self.overlap > 0 {
            if kind != ChunkerKind::Fixed {
                return Err(Error::Config("--overlap is only supported by the fixed chunker".into()));
            }
            if self.max_tokens == 0 || self.overlap >= self.max_tokens {
                return Err(Error::Config(format!(
                    "--overlap {} must be smaller than --max-tokens {}",
                    self.overlap, self.max_tokens
                )));
            }
        }
        if kind == ChunkerKind::Fixed && self.max_tokens == 0 {
            return Err(Error::Config("the fixed chunker needs --max-tokens > 0".into()));
        }
        Ok(())
    }
}

/// The chunkers seamcut offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkerKind {
    /// Fixed windows of `max_tokens` tokens, optionally overlapping.
    Fixed,
    /// Recursive separators: paragraph → line → sentence → word → token.
    Recursive,
    /// Sentences packed greedily up to the cap.
    Sentence,
    /// One chunk per paragraph; a paragraph over the cap is packed by sentences.
    Paragraph,
}

impl ChunkerKind {
    pub const ALL: [Self; 4] = [Self::Fixed, Self::Recursive, Self::Sentence, Self::Paragraph];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::Recursive => "recursive",
            Self::Sentence => "sentence",
            Self::Paragraph => "paragraph",
        }
    }
}

impl std::str::FromStr for ChunkerKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            Error::Config(format!("unknown chunker {s:?} (known: fixed, recursive, sentence, paragraph)"))
        })
    }
}

/// Turns one document's text into chunks.
pub trait Chunker: Send + Sync {
    /// The chunker's name as the CLI spells it.
    fn name(&self) -> &'static str;

    /// Chunk one document. Never panics; an empty or whitespace-only text gives no chunks.
    fn chunk(&self, text: &str) -> Vec<ChunkSpan>;

    /// Chunk many documents; results in input order. The default runs [`Self::chunk`] on
    /// each in parallel; embedding chunkers override it to embed all sentences together.
    fn chunk_batch(&self, texts: &[&str]) -> Vec<Vec<ChunkSpan>> {
        use rayon::prelude::*;
        texts.par_iter().with_max_len(1).map(|t| self.chunk(t)).collect()
    }

    /// Whether consecutive chunks may overlap (only with fixed windows and `overlap > 0`).
    fn overlapping(&self) -> bool {
        false
    }
}

/// Build a chunker.
///
/// # Errors
/// If the options do not make sense for this chunker (e.g. overlap ≥ cap).
pub fn build(kind: ChunkerKind, sizer: Arc<dyn Sizer>, opts: ChunkOptions) -> Result<Box<dyn Chunker>> {
    opts.validate(kind)?;
    Ok(match kind {
        ChunkerKind::Fixed => Box::new(fixed::FixedChunker::new(sizer, opts)),
        ChunkerKind::Recursive => Box::new(recursive::RecursiveChunker::new(sizer, opts)),
        ChunkerKind::Sentence => Box::new(sentence::SentenceChunker::new(sizer, opts)),
        ChunkerKind::Paragraph => Box::new(paragraph::ParagraphChunker::new(sizer, opts)),
    })
}
