//! The chunk model.
//!
//! A chunker returns [`ChunkSpan`]s for one document: ordered, contiguous byte ranges that
//! together cover the document (see [`crate::span::covering`] for who owns the whitespace
//! between units). The pipeline writes them as [`crate::output::ChunkRecord`]s carrying the
//! document id, the chunk's index and its text. Nothing is lost or duplicated: for a document with any
//! non-whitespace content, concatenating `text[start..end]` over its chunks gives the
//! document back byte for byte; a document of only whitespace has no chunks. With overlap
//! (`--overlap N`, any chunker), each chunk also carries a window: its own bytes plus up to `N`
//! tokens of each neighbour ([`crate::chunkers::windows`]); the chunks still tile.

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
    /// With overlap, the chunk's window: `start..end` plus up to the overlap's tokens of each
    /// neighbouring chunk ([`crate::chunkers::windows`]); `None` without overlap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Span>,
}

impl ChunkSpan {
    /// A chunk without a window.
    #[must_use]
    pub fn new(start: usize, end: usize, tokens: usize, sentences: usize) -> Self {
        Self { start, end, tokens, sentences, window: None }
    }

    #[must_use]
    pub fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }

    /// The text an index embeds for the chunk: its window where it has one, else itself.
    #[must_use]
    pub fn window_span(&self) -> Span {
        self.window.unwrap_or_else(|| self.span())
    }
}

/// Check the chunk invariants for `text` (used by tests and by `--check`): spans in bounds
/// and on char boundaries, exact coverage (each chunk starts where the previous ended), and
/// each window, where there is one, around its chunk, in bounds and on char boundaries.
/// Returns a description of the first violation.
///
/// # Errors
/// Describes the first invariant that does not hold.
pub fn verify(text: &str, chunks: &[ChunkSpan]) -> Result<(), String> {
    if text.trim().is_empty() {
        return if chunks.is_empty() { Ok(()) } else { Err("chunks for an empty document".into()) };
    }
    let Some(first) = chunks.first() else { return Err("no chunks".into()) };
    if first.start != 0 {
        return Err(format!("first chunk starts at {}", first.start));
    }
    let mut prev_end = 0;
    for (i, c) in chunks.iter().enumerate() {
        if c.start >= c.end || c.end > text.len() {
            return Err(format!("chunk {i}: bad range {}..{}", c.start, c.end));
        }
        if !text.is_char_boundary(c.start) || !text.is_char_boundary(c.end) {
            return Err(format!("chunk {i}: {}..{} not on char boundaries", c.start, c.end));
        }
        if c.start != prev_end {
            return Err(format!("chunk {i}: starts at {} but previous ended at {prev_end}", c.start));
        }
        if let Some(w) = c.window {
            if w.start > c.start || w.end < c.end || w.end > text.len() {
                return Err(format!(
                    "chunk {i}: window {}..{} not around {}..{}",
                    w.start, w.end, c.start, c.end
                ));
            }
            if !text.is_char_boundary(w.start) || !text.is_char_boundary(w.end) {
                return Err(format!("chunk {i}: window {}..{} not on char boundaries", w.start, w.end));
            }
        }
        prev_end = c.end;
    }
    if prev_end != text.len() {
        return Err(format!("chunks end at {prev_end}, document at {}", text.len()));
    }
    Ok(())
}

/// A chunk's id, the same on every run for the same chunk: the first 128 bits of SHA-256 of
/// its document's id, its byte offsets and the SHA-256 of its text, in hex. Never its position
/// in a batch, so that a rerun upserts the rows it wrote before. Every chunk record carries it (`id`:
/// JSONL, Parquet, the Python table, the server's chunks, a database's rows).
#[must_use]
pub fn chunk_id(doc_id: &str, start: usize, end: usize, text: &str) -> String {
    use sha2::{Digest, Sha256};
    let text_hash = Sha256::digest(text.as_bytes());
    let mut h = Sha256::new();
    h.update((doc_id.len() as u64).to_le_bytes());
    h.update(doc_id.as_bytes());
    h.update((start as u64).to_le_bytes());
    h.update((end as u64).to_le_bytes());
    h.update(text_hash);
    // Hex by table, not `format!` per byte: every chunk record computes an id, and 16
    // formatted strings a chunk cost the write stage a quarter of its time.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(32);
    for b in &h.finalize()[..16] {
        id.push(char::from(HEX[usize::from(b >> 4)]));
        id.push(char::from(HEX[usize::from(b & 15)]));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_the_chunk_and_nothing_else() {
        let a = chunk_id("doc", 0, 5, "Hello");
        assert_eq!(a, chunk_id("doc", 0, 5, "Hello"));
        assert_eq!(a.len(), 32);
        for other in [
            chunk_id("doc2", 0, 5, "Hello"),
            chunk_id("doc", 1, 5, "Hello"),
            chunk_id("doc", 0, 6, "Hello"),
            chunk_id("doc", 0, 5, "Hellp"),
            // The id's length is in the hash: ("ab", "c…") and ("a", "bc…") differ.
            chunk_id("d", 0, 5, "Hello"),
        ] {
            assert_ne!(a, other);
        }
        // Fixed: the same chunk has this id in every version (rows written before an upgrade
        // are upserted, not duplicated). Python's hashlib gives the same: sha256(u64le(3) +
        // b"doc" + u64le(0) + u64le(5) + sha256(b"Hello")), its first 16 bytes.
        assert_eq!(a, "6dd22377facb28c0cdf748fd4b9be479");
    }
}
