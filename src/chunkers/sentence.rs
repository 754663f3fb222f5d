//! Sentence packing: consecutive sentences fill a chunk up to the token cap.

use std::sync::Arc;

use super::pack::{fill_sentence_counts, merge_small, pack};
use super::units::sentence_units;
use super::{ChunkOptions, Chunker};
use crate::chunk::ChunkSpan;
use crate::segment::Segmenter;
use crate::sizer::Sizer;

pub struct SentenceChunker {
    sizer: Arc<dyn Sizer>,
    opts: ChunkOptions,
    segmenter: Segmenter,
}

impl SentenceChunker {
    #[must_use]
    pub fn new(sizer: Arc<dyn Sizer>, opts: ChunkOptions) -> Self {
        Self { sizer, opts, segmenter: Segmenter::default() }
    }
}

impl Chunker for SentenceChunker {
    fn kind(&self) -> super::ChunkerKind {
        super::ChunkerKind::Sentence
    }

    fn chunk(&self, text: &str) -> crate::Result<Vec<ChunkSpan>> {
        Ok(self.spans(text))
    }
}

impl SentenceChunker {
    /// The chunks of `text` (this chunker cannot fail).
    #[must_use]
    pub fn spans(&self, text: &str) -> Vec<ChunkSpan> {
        if text.trim().is_empty() {
            return Vec::new();
        }
        let cap = self.opts.cap.limit();
        let units = sentence_units(text, &self.segmenter, self.sizer.as_ref(), cap);
        let chunks = pack(text, &units.spans, &units.tokens, |_| false, self.sizer.as_ref(), cap);
        let mut chunks = merge_small(text, chunks, self.sizer.as_ref(), self.opts.min_tokens, cap);
        fill_sentence_counts(&mut chunks, &units.sentence_starts);
        chunks
    }
}
