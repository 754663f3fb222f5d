//! Paragraphs: one chunk per paragraph (blank-line separated). A paragraph over the cap is
//! packed by sentences; with `min_tokens`, short paragraphs (headings) join a neighbour.

use std::sync::Arc;

use super::pack::{fill_sentence_counts, merge_small, pack};
use super::units::sentence_units;
use super::{ChunkOptions, Chunker};
use crate::chunk::ChunkSpan;
use crate::segment::Segmenter;
use crate::sizer::Sizer;

pub struct ParagraphChunker {
    sizer: Arc<dyn Sizer>,
    opts: ChunkOptions,
    segmenter: Segmenter,
}

impl ParagraphChunker {
    #[must_use]
    pub fn new(sizer: Arc<dyn Sizer>, opts: ChunkOptions) -> Self {
        Self { sizer, opts, segmenter: Segmenter::default() }
    }
}

impl Chunker for ParagraphChunker {
    fn kind(&self) -> super::ChunkerKind {
        super::ChunkerKind::Paragraph
    }

    fn chunk(&self, text: &str) -> crate::Result<Vec<ChunkSpan>> {
        Ok(self.spans(text))
    }
}

impl ParagraphChunker {
    /// The chunks of `text` (this chunker cannot fail).
    #[must_use]
    pub fn spans(&self, text: &str) -> Vec<ChunkSpan> {
        if text.trim().is_empty() {
            return Vec::new();
        }
        let cap = self.opts.cap.limit();
        let units = sentence_units(text, &self.segmenter, self.sizer.as_ref(), cap);
        // A unit starts a paragraph when a paragraph's first byte lies in it. Units are
        // sentences (never crossing paragraphs) or pieces of one, so each paragraph start
        // falls in exactly one unit: the barrier is that unit.
        let paras = self.segmenter.paragraphs(text);
        let mut starts_para = vec![false; units.len()];
        let mut u = 0;
        for p in &paras {
            while u < units.len() && units.spans[u].end <= p.start {
                u += 1;
            }
            if u < units.len() {
                starts_para[u] = true;
            }
        }
        let chunks = pack(text, &units.spans, &units.tokens, |i| starts_para[i], self.sizer.as_ref(), cap);
        let mut chunks = merge_small(text, chunks, self.sizer.as_ref(), self.opts.min_tokens, cap);
        fill_sentence_counts(&mut chunks, &units.sentence_starts);
        chunks
    }
}
