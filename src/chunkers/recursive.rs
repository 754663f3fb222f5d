//! Recursive separators, as LangChain's RecursiveCharacterTextSplitter and chonkie's
//! RecursiveChunker do it, with seamcut's own segmenter at each level:
//! paragraph → line → sentence → word → token.
//!
//! A span over the cap is split at the current level; parts that fit are packed greedily
//! with their neighbours; a part still over the cap is split at the next level, and its
//! pieces are packed among themselves only (a barrier on each side), so a chunk never mixes
//! the end of one oversize paragraph with the start of the next.

use std::sync::Arc;

use super::pack::{fill_sentence_counts, merge_small, pack};
use super::units::BYTES_PER_TOKEN_BOUND;
use super::{ChunkOptions, Chunker};
use crate::chunk::ChunkSpan;
use crate::segment::Segmenter;
use crate::sizer::cut::{cut, CutMode};
use crate::sizer::Sizer;
use crate::span::{covering, Span};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Paragraph,
    Line,
    Sentence,
    Word,
    Token,
}

impl Level {
    fn next(self) -> Self {
        match self {
            Self::Paragraph => Self::Line,
            Self::Line => Self::Sentence,
            Self::Sentence => Self::Word,
            Self::Word | Self::Token => Self::Token,
        }
    }
}

pub struct RecursiveChunker {
    sizer: Arc<dyn Sizer>,
    opts: ChunkOptions,
    segmenter: Segmenter,
}

struct Atoms {
    spans: Vec<Span>,
    counts: Vec<usize>,
    barrier: Vec<bool>,
}

impl RecursiveChunker {
    #[must_use]
    pub fn new(sizer: Arc<dyn Sizer>, opts: ChunkOptions) -> Self {
        Self { sizer, opts, segmenter: Segmenter::default() }
    }

    /// Tokens in `span`, or `None` when it is certainly or probably over the cap (too long
    /// to be worth counting; see [`BYTES_PER_TOKEN_BOUND`]).
    fn count_if_fits(&self, text: &str, span: Span, cap: usize) -> Option<usize> {
        if span.len() > cap.saturating_mul(BYTES_PER_TOKEN_BOUND) {
            return None;
        }
        let n = self.sizer.count(span.text(text));
        (n <= cap).then_some(n)
    }

    /// Covering parts of `span` at `level`.
    fn split(&self, text: &str, span: Span, level: Level) -> Vec<Span> {
        let sub = span.text(text);
        let trimmed: Vec<Span> = match level {
            Level::Paragraph => self.segmenter.paragraphs(sub),
            Level::Line => {
                let mut v = Vec::new();
                let mut pos = 0;
                for line in sub.split_inclusive('\n') {
                    let t = crate::span::trim(sub, Span::new(pos, pos + line.len()));
                    if !t.is_empty() {
                        v.push(t);
                    }
                    pos += line.len();
                }
                v
            }
            Level::Sentence => self.segmenter.sentences(sub),
            Level::Word => {
                let mut v = Vec::new();
                let mut start = None;
                for (i, c) in sub.char_indices() {
                    match (c.is_whitespace(), start) {
                        (false, None) => start = Some(i),
                        (true, Some(s)) => {
                            v.push(Span::new(s, i));
                            start = None;
                        }
                        _ => {}
                    }
                }
                if let Some(s) = start {
                    v.push(Span::new(s, sub.len()));
                }
                v
            }
            Level::Token => unreachable!("token level is cut, not split"),
        };
        covering(&trimmed, sub.len()).into_iter().map(|s| s.offset(span.start)).collect()
    }

    fn recurse(&self, text: &str, span: Span, level: Level, cap: usize, atoms: &mut Atoms) {
        if level == Level::Token {
            let pieces = cut(text, span, self.sizer.as_ref(), cap, CutMode::WordBoundary);
            for (k, p) in pieces.into_iter().enumerate() {
                atoms.spans.push(p.span);
                atoms.counts.push(p.tokens);
                atoms.barrier.push(k == 0);
            }
            return;
        }
        let parts = self.split(text, span, level);
        if parts.len() <= 1 {
            self.recurse(text, span, level.next(), cap, atoms);
            return;
        }
        let mut after_split = true; // the first part of a split region starts a group
        for p in parts {
            match self.count_if_fits(text, p, cap) {
                Some(n) => {
                    atoms.spans.push(p);
                    atoms.counts.push(n);
                    atoms.barrier.push(after_split);
                    after_split = false;
                }
                None => {
                    self.recurse(text, p, level.next(), cap, atoms);
                    after_split = true;
                }
            }
        }
    }
}

impl Chunker for RecursiveChunker {
    fn kind(&self) -> super::ChunkerKind {
        super::ChunkerKind::Recursive
    }

    fn chunk(&self, text: &str) -> crate::Result<Vec<ChunkSpan>> {
        Ok(self.spans(text))
    }
}

impl RecursiveChunker {
    /// The chunks of `text` (this chunker cannot fail).
    #[must_use]
    pub fn spans(&self, text: &str) -> Vec<ChunkSpan> {
        if text.trim().is_empty() {
            return Vec::new();
        }
        let cap = self.opts.cap.limit();
        let whole = Span::new(0, text.len());
        let mut atoms = Atoms { spans: Vec::new(), counts: Vec::new(), barrier: Vec::new() };
        match self.count_if_fits(text, whole, cap) {
            Some(n) => {
                atoms.spans.push(whole);
                atoms.counts.push(n);
                atoms.barrier.push(true);
            }
            None => self.recurse(text, whole, Level::Paragraph, cap, &mut atoms),
        }
        let chunks = pack(text, &atoms.spans, &atoms.counts, |i| atoms.barrier[i], self.sizer.as_ref(), cap);
        let mut chunks = merge_small(text, chunks, self.sizer.as_ref(), self.opts.min_tokens, cap);
        let starts: Vec<usize> = self.segmenter.sentences(text).iter().map(|s| s.start).collect();
        fill_sentence_counts(&mut chunks, &starts);
        chunks
    }
}
