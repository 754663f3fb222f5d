//! Sentences as contiguous, size-capped units: what sentence-based chunkers (and the
//! semantic rules) pack.
//!
//! The segmenter's trimmed sentences are turned into covering spans (each owns the
//! whitespace after it), counted, and any unit over the cap is cut at token boundaries, so
//! that every unit fits and the units tile the document.

use crate::segment::Segmenter;
use crate::sizer::cut::{cut_into, CutMode};
use crate::sizer::Sizer;
use crate::span::{covering, Span};

/// Contiguous units tiling a document, with their token counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Units {
    /// Covering spans: `spans[0].start == 0`, `spans[i].end == spans[i+1].start`,
    /// last `end == text.len()`.
    pub spans: Vec<Span>,
    /// Tokens in each covering span.
    pub tokens: Vec<usize>,
    /// Byte offsets where the segmenter's sentences start (before any cutting), ascending;
    /// what a chunk's `sentences` count is measured against.
    pub sentence_starts: Vec<usize>,
}

impl Units {
    #[must_use]
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// Spans longer than this many bytes per token of cap are cut without counting first:
/// no tokenizer makes fewer than one token per this many bytes of ordinary text, and
/// cutting a span that would have fitted is harmless (the pieces are packed again).
pub(crate) const BYTES_PER_TOKEN_BOUND: usize = 64;

/// Sentences of `text` as size-capped covering units.
#[must_use]
pub fn sentence_units(text: &str, segmenter: &Segmenter, sizer: &dyn Sizer, cap: usize) -> Units {
    let sentences = segmenter.sentences(text);
    let mut units = spans_to_units(text, &covering(&sentences, text.len()), sizer, cap);
    units.sentence_starts = sentences.iter().map(|s| s.start).collect();
    units
}

/// Count covering spans and cut those over `cap`.
#[must_use]
pub fn spans_to_units(text: &str, cover: &[Span], sizer: &dyn Sizer, cap: usize) -> Units {
    let limit = cap.saturating_mul(BYTES_PER_TOKEN_BOUND);
    let texts: Vec<&str> = cover.iter().map(|s| if s.len() > limit { "" } else { s.text(text) }).collect();
    let counts = sizer.count_many(&texts);
    let mut units = Units {
        spans: Vec::with_capacity(cover.len()),
        tokens: Vec::with_capacity(cover.len()),
        sentence_starts: Vec::new(),
    };
    let mut pieces = Vec::new();
    for (s, &n) in cover.iter().zip(&counts) {
        if s.len() <= limit && n <= cap {
            units.spans.push(*s);
            units.tokens.push(n);
        } else {
            pieces.clear();
            cut_into(text, *s, sizer, cap, CutMode::WordBoundary, &mut pieces);
            for p in &pieces {
                units.spans.push(p.span);
                units.tokens.push(p.tokens);
            }
        }
    }
    units
}
