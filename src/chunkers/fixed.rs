//! Fixed token windows: exactly `max_tokens` tokens per chunk (the last may be shorter),
//! cut wherever the token count says, even inside a word. Overlap is not this chunker's:
//! with `overlap`, every chunker's chunks get windows into their neighbours
//! ([`super::windows`]), and the chunks themselves still tile the document.

use std::sync::Arc;

use super::pack::fill_sentence_counts;
use super::{ChunkOptions, Chunker};
use crate::chunk::ChunkSpan;
use crate::segment::Segmenter;
use crate::sizer::cut::{cut, CutMode};
use crate::sizer::Sizer;
use crate::span::Span;

pub struct FixedChunker {
    sizer: Arc<dyn Sizer>,
    opts: ChunkOptions,
    segmenter: Segmenter,
}

impl FixedChunker {
    #[must_use]
    pub fn new(sizer: Arc<dyn Sizer>, opts: ChunkOptions) -> Self {
        Self { sizer, opts, segmenter: Segmenter::default() }
    }
}

impl Chunker for FixedChunker {
    fn kind(&self) -> super::ChunkerKind {
        super::ChunkerKind::Fixed
    }

    fn chunk(&self, text: &str) -> crate::Result<Vec<ChunkSpan>> {
        Ok(self.spans(text))
    }
}

impl FixedChunker {
    /// The chunks of `text` (this chunker cannot fail).
    #[must_use]
    pub fn spans(&self, text: &str) -> Vec<ChunkSpan> {
        if text.trim().is_empty() {
            return Vec::new();
        }
        let sizer = self.sizer.as_ref();
        let mut chunks: Vec<ChunkSpan> =
            cut(text, Span::new(0, text.len()), sizer, self.opts.cap.limit(), CutMode::Exact)
                .into_iter()
                .map(|p| ChunkSpan::new(p.span.start, p.span.end, p.tokens, 0))
                .collect();
        let starts: Vec<usize> = self.segmenter.sentences(text).iter().map(|s| s.start).collect();
        fill_sentence_counts(&mut chunks, &starts);
        chunks
    }
}
