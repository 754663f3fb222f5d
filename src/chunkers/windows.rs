//! Overlap windows: each chunk's bytes plus up to `overlap` tokens of each neighbouring chunk,
//! the other way (besides late pooling) to give a chunk's vector its context.
//!
//! The chunks still tile the document (`start..end`, lossless); a window only adds
//! `window_start..window_end` beside them, for the text an index embeds (`--embeddings
//! reembed`) or hands a reader. A window reaches into the previous chunk by its last
//! `overlap` tokens, moved forward to the first sentence start among them so that it takes
//! whole sentences where one fits, and into the next chunk by its first `overlap` tokens, moved
//! back to the last sentence end among them. A neighbour of at most `overlap` tokens is taken
//! whole. Windows never reach past a neighbour, so a window holds at most the chunk's tokens
//! plus `2 × overlap` (as counted on each piece; the cap bounds the chunk, not its window).

use std::sync::Arc;

use rayon::prelude::*;

use super::batch::SpanPass;
use super::{ChunkVectors, Chunker, ChunkerKind, Pending};
use crate::chunk::ChunkSpan;
use crate::segment::Segmenter;
use crate::sizer::Sizer;
use crate::span::Span;

/// How a chunker's chunks get windows: the overlap in tokens of its sizer.
#[derive(Clone)]
pub struct Windows {
    sizer: Arc<dyn Sizer>,
    overlap: usize,
}

impl Windows {
    /// Windows of `overlap` tokens counted by `sizer`; `None` for no overlap.
    #[must_use]
    pub fn new(sizer: &Arc<dyn Sizer>, overlap: usize) -> Option<Self> {
        (overlap > 0).then(|| Self { sizer: sizer.clone(), overlap })
    }

    /// The overlap in tokens.
    #[must_use]
    pub fn overlap(&self) -> usize {
        self.overlap
    }

    /// Give each of a document's chunks (contiguous, as a chunker returns them) its window.
    pub fn apply(&self, text: &str, chunks: &mut [ChunkSpan]) {
        if chunks.is_empty() {
            return;
        }
        let sentences = Segmenter::default().sentences(text);
        let starts: Vec<usize> = sentences.iter().map(|s| s.start).collect();
        let ends: Vec<usize> = sentences.iter().map(|s| s.end).collect();
        let spans: Vec<Span> = chunks.iter().map(ChunkSpan::span).collect();
        for (i, c) in chunks.iter_mut().enumerate() {
            let start = if i > 0 { self.reach_back(text, spans[i - 1], c.start, &starts) } else { c.start };
            let end = spans.get(i + 1).map_or(c.end, |&next| self.reach_forward(text, c.end, next, &ends));
            c.window = Some(Span::new(start, end));
        }
    }

    /// Where a window starting at `at` begins in the previous chunk `prev`.
    fn reach_back(&self, text: &str, prev: Span, at: usize, sentence_starts: &[usize]) -> usize {
        let tokens = self.sizer.token_starts(prev.text(text));
        if tokens.len() <= self.overlap {
            return prev.start;
        }
        let limit = prev.start + tokens[tokens.len() - self.overlap];
        // The first sentence start at or after the limit, if the chunk does not start first.
        let k = sentence_starts.partition_point(|&s| s < limit);
        match sentence_starts.get(k) {
            Some(&s) if s < at => s,
            _ => word_start_from(text, limit, at),
        }
    }

    /// Where a window ending at `at` ends in the next chunk `next`.
    fn reach_forward(&self, text: &str, at: usize, next: Span, sentence_ends: &[usize]) -> usize {
        let tokens = self.sizer.token_starts(next.text(text));
        if tokens.len() <= self.overlap {
            return next.end;
        }
        let limit = next.start + tokens[self.overlap];
        // The last sentence end at or before the limit, if it is past the chunk's end.
        let k = sentence_ends.partition_point(|&e| e <= limit);
        match k.checked_sub(1).map(|k| sentence_ends[k]) {
            Some(e) if e > at => e,
            _ => word_end_before(text, at, limit),
        }
    }
}

impl SpanPass for Windows {
    fn apply(&self, text: &str, chunks: &mut [ChunkSpan]) {
        Windows::apply(self, text, chunks);
    }
}

/// `pos` moved forward to the start of a word (past the next whitespace) when it is inside
/// one and a word starts before `at`; else `pos`.
fn word_start_from(text: &str, pos: usize, at: usize) -> usize {
    if text[..pos].chars().next_back().is_none_or(char::is_whitespace) {
        return pos;
    }
    match text[pos..at].find(char::is_whitespace) {
        Some(ws) => {
            let rest = &text[pos + ws..at];
            let word = pos + ws + (rest.len() - rest.trim_start().len());
            if word < at {
                word
            } else {
                pos
            }
        }
        None => pos,
    }
}

/// `limit` moved back to the end of the last whole word after `at` when it is inside a word;
/// trailing whitespace dropped.
fn word_end_before(text: &str, at: usize, limit: usize) -> usize {
    let piece = &text[at..limit];
    let inside = text[limit..].chars().next().is_some_and(|c| !c.is_whitespace());
    let end = match piece.rfind(char::is_whitespace) {
        Some(ws) if inside => at + piece[..ws].trim_end().len(),
        _ => at + piece.trim_end().len(),
    };
    if end > at {
        end
    } else {
        at + piece.trim_end().len()
    }
}

/// `chunker` with windows of `overlap` tokens counted by `sizer` on every chunk it gives
/// (`chunk`, `chunk_batch`, the batch path); `chunker` itself when `overlap` is 0.
#[must_use]
pub fn windowed(chunker: Box<dyn Chunker>, sizer: &Arc<dyn Sizer>, overlap: usize) -> Box<dyn Chunker> {
    match Windows::new(sizer, overlap) {
        Some(windows) => Box::new(Windowed { inner: chunker, windows }),
        None => chunker,
    }
}

/// A chunker whose chunks get windows ([`windowed`]).
struct Windowed {
    inner: Box<dyn Chunker>,
    windows: Windows,
}

impl Chunker for Windowed {
    fn kind(&self) -> ChunkerKind {
        self.inner.kind()
    }

    fn chunk(&self, text: &str) -> crate::Result<Vec<ChunkSpan>> {
        let mut chunks = self.inner.chunk(text)?;
        self.windows.apply(text, &mut chunks);
        Ok(chunks)
    }

    fn chunk_batch(&self, texts: &[&str]) -> Vec<crate::Result<Vec<ChunkSpan>>> {
        let mut results = self.inner.chunk_batch(texts);
        results.par_iter_mut().zip(texts).for_each(|(r, text)| {
            if let Ok(chunks) = r {
                self.windows.apply(text, chunks);
            }
        });
        results
    }

    fn prepare_batch<'c>(&'c self, texts: &[&str], vectors: ChunkVectors) -> Pending<'c> {
        self.inner.prepare_batch(texts, vectors).with_pass(self.windows.clone())
    }

    fn unit_model(&self) -> Option<&Arc<dyn crate::embed::Embedder>> {
        self.inner.unit_model()
    }

    fn windows(&self) -> Option<&Windows> {
        Some(&self.windows)
    }

    fn semantic(&self) -> Option<&super::semantic::SemanticChunker> {
        self.inner.semantic()
    }

    fn describe(&self) -> String {
        format!(
            "{}; windows reach {} tokens into each neighbour",
            self.inner.describe(),
            self.windows.overlap
        )
    }

    fn llm_cost(&self) -> Option<crate::llm::LlmCost> {
        self.inner.llm_cost()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizer::{CharSizer, WordSizer};

    fn chunk(text: &str, start: usize, end: usize) -> ChunkSpan {
        ChunkSpan::new(start, end, WordSizer.count(&text[start..end]), 0)
    }

    fn windows<'a>(text: &'a str, cuts: &[usize], overlap: usize, sizer: Arc<dyn Sizer>) -> Vec<&'a str> {
        let bounds: Vec<usize> = std::iter::once(0).chain(cuts.iter().copied()).chain([text.len()]).collect();
        let mut chunks: Vec<ChunkSpan> = bounds.windows(2).map(|b| chunk(text, b[0], b[1])).collect();
        Windows::new(&sizer, overlap).unwrap().apply(text, &mut chunks);
        crate::chunk::verify(text, &chunks).unwrap();
        chunks.iter().map(|c| c.window.unwrap().text(text)).collect()
    }

    #[test]
    fn whole_sentences_where_they_fit() {
        let text = "One two three. Four five. Six seven eight nine. Ten eleven. Twelve.";
        let cut = text.find("Six").unwrap();
        // Overlap 3: the previous chunk's last sentence (2 words) fits whole; the next
        // chunk's first sentence (4 words) does not, so its first 3 words.
        assert_eq!(
            windows(text, &[cut], 3, Arc::new(WordSizer)),
            [
                "One two three. Four five. Six seven eight",
                "Four five. Six seven eight nine. Ten eleven. Twelve."
            ]
        );
        // Overlap 6: the next chunk's first two sentences (6 words) fit whole, the third not.
        let w = windows(text, &[cut], 6, Arc::new(WordSizer));
        assert_eq!(w[0], "One two three. Four five. Six seven eight nine. Ten eleven.");
    }

    #[test]
    fn a_neighbour_under_the_overlap_is_taken_whole_and_no_further() {
        let text = "Alpha beta. Gamma. Delta epsilon zeta.";
        let cuts = [text.find("Gamma").unwrap(), text.find("Delta").unwrap()];
        let w = windows(text, &cuts, 4, Arc::new(WordSizer));
        assert_eq!(w[1], "Alpha beta. Gamma. Delta epsilon zeta.");
        assert_eq!(w[0], "Alpha beta. Gamma. ");
        assert_eq!(w[2], "Gamma. Delta epsilon zeta.");
    }

    #[test]
    fn inside_a_long_sentence_windows_cut_at_tokens() {
        let text = "abcdefghij";
        assert_eq!(windows(text, &[4, 7], 2, Arc::new(CharSizer)), ["abcdef", "cdefghi", "fghij"]);
    }

    #[test]
    fn no_overlap_no_windows() {
        assert!(Windows::new(&(Arc::new(WordSizer) as Arc<dyn Sizer>), 0).is_none());
    }
}
