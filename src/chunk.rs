//! The chunk model.
//!
//! A chunker returns [`ChunkSpan`]s for one document: ordered, contiguous byte ranges that
//! together cover the document (see [`crate::span::covering`] for who owns the whitespace
//! between units). The pipeline writes them as [`crate::output::ChunkRecord`]s carrying the
//! document id, the chunk's index and its text. Nothing is lost or duplicated: for a document with any
//! non-whitespace content, concatenating `text[start..end]` over its chunks gives the
//! document back byte for byte; a document of only whitespace has no chunks. With overlap
//! (fixed windows only), `start` still increases strictly and each chunk extends past the
//! next one's start by the overlap.

use serde::Serialize;

use crate::span::Span;

/// A chunk as a chunker produces it: a byte range of the document plus its sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChunkSpan {
    pub start: usize,
    pub end: usize,
    /// Tokens in `text[start..end]`, counted by the job's sizer.
    pub tokens: usize,
    /// Sentences (segmenter units) that start inside the chunk.
    pub sentences: usize,
}

impl ChunkSpan {
    #[must_use]
    pub fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }
}

/// Check the chunk invariants for `text` (used by tests and by `--check`): spans in bounds
/// and on char boundaries, strictly increasing starts, and exact coverage when
/// `overlapping` is false. Returns a description of the first violation.
///
/// # Errors
/// Describes the first invariant that does not hold.
pub fn verify(text: &str, chunks: &[ChunkSpan], overlapping: bool) -> Result<(), String> {
    if text.trim().is_empty() {
        return if chunks.is_empty() { Ok(()) } else { Err("chunks for an empty document".into()) };
    }
    let Some(first) = chunks.first() else { return Err("no chunks".into()) };
    if first.start != 0 {
        return Err(format!("first chunk starts at {}", first.start));
    }
    let mut prev_end = 0;
    let mut prev_start: Option<usize> = None;
    for (i, c) in chunks.iter().enumerate() {
        if c.start >= c.end || c.end > text.len() {
            return Err(format!("chunk {i}: bad range {}..{}", c.start, c.end));
        }
        if !text.is_char_boundary(c.start) || !text.is_char_boundary(c.end) {
            return Err(format!("chunk {i}: {}..{} not on char boundaries", c.start, c.end));
        }
        if prev_start.is_some_and(|p| c.start <= p) {
            return Err(format!("chunk {i}: start {} does not increase", c.start));
        }
        if !overlapping && c.start != prev_end {
            return Err(format!("chunk {i}: starts at {} but previous ended at {prev_end}", c.start));
        }
        if overlapping && c.start > prev_end {
            return Err(format!("chunk {i}: gap {prev_end}..{}", c.start));
        }
        prev_end = prev_end.max(c.end);
        prev_start = Some(c.start);
    }
    if prev_end != text.len() {
        return Err(format!("chunks end at {prev_end}, document at {}", text.len()));
    }
    Ok(())
}
