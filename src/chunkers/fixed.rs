//! Fixed token windows: exactly `max_tokens` tokens per chunk (the last may be shorter),
//! cut wherever the token count says, even inside a word. With `overlap = k`, each chunk
//! also takes the first `k` tokens of the next window, so consecutive chunks share `k`
//! tokens and every chunk still has at most `max_tokens`.

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

    fn overlapping(&self) -> bool {
        self.opts.overlap > 0
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
        let k = self.opts.overlap;
        let step = self.opts.cap.limit() - k;
        let windows: Vec<Span> = cut(text, Span::new(0, text.len()), sizer, step, CutMode::Exact)
            .into_iter()
            .map(|p| p.span)
            .collect();
        let mut chunks: Vec<ChunkSpan> = Vec::with_capacity(windows.len());
        for (i, w) in windows.iter().enumerate() {
            let mut end = w.end;
            if k > 0 {
                if let Some(next) = windows.get(i + 1) {
                    end = extend_by_tokens(text, *next, sizer, k);
                }
            }
            let mut tokens = sizer.count(&text[w.start..end]);
            // The extension was measured on the next window alone; in context it can count
            // more. Give back tokens until the chunk fits.
            while tokens > self.opts.cap.limit() && end > w.end {
                end = shrink_one_token(text, Span::new(next_start(&windows, i), end), sizer).max(w.end);
                tokens = sizer.count(&text[w.start..end]);
            }
            chunks.push(ChunkSpan { start: w.start, end, tokens, sentences: 0 });
        }
        let starts: Vec<usize> = self.segmenter.sentences(text).iter().map(|s| s.start).collect();
        fill_sentence_counts(&mut chunks, &starts);
        chunks
    }
}

fn next_start(windows: &[Span], i: usize) -> usize {
    windows.get(i + 1).map_or(windows[i].end, |w| w.start)
}

/// End offset of the first `k` tokens of `span` (or its end if it has fewer).
fn extend_by_tokens(text: &str, span: Span, sizer: &dyn Sizer, k: usize) -> usize {
    let starts = sizer.token_starts(span.text(text));
    starts.get(k).map_or(span.end, |&s| span.start + s)
}

/// `span.end` moved back by one token of `span`.
fn shrink_one_token(text: &str, span: Span, sizer: &dyn Sizer) -> usize {
    let starts = sizer.token_starts(span.text(text));
    match starts.last() {
        Some(&s) if s > 0 => span.start + s,
        _ => span.start,
    }
}
