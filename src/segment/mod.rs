//! Segmentation: a document's text in, paragraph and sentence [`Span`]s out.
//!
//! Owns the rules for where paragraphs, hard line breaks and sentences end. Spans are
//! trimmed (no leading or trailing whitespace); [`crate::span::covering`] turns them into
//! contiguous spans when a chunker needs to account for every byte.
//!
//! The segmenter knows nothing about tokens or models. Sentences longer than a token cap are
//! split afterwards by [`crate::sizer::cut`], so a rule never sees an oversize unit.
//!
//! ```
//! use seamcut::segment::Segmenter;
//! let text = "Dr. Smith paid $3.14 for it. Then he left!\n\n这是第一句。这是第二句。";
//! let seg = Segmenter::default();
//! let sentences: Vec<&str> = seg.sentences(text).iter().map(|s| s.text(text)).collect();
//! assert_eq!(sentences, ["Dr. Smith paid $3.14 for it.", "Then he left!", "这是第一句。", "这是第二句。"]);
//! ```

mod abbrev;
pub mod delimiters;
mod lines;
mod sentences;
pub mod structure;

pub use sentences::is_cjk;

use crate::span::Span;

/// Splits text into paragraphs and sentences. Cheap to construct and `Sync`; one instance
/// can serve every thread.
#[derive(Debug, Clone, Default)]
pub struct Segmenter {
    _private: (),
}

impl Segmenter {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Paragraphs: maximal runs of non-blank lines (a blank line holds only whitespace).
    /// Spans are trimmed. CRLF and LF line endings are both understood.
    #[must_use]
    pub fn paragraphs(&self, text: &str) -> Vec<Span> {
        let mut out = Vec::new();
        lines::paragraphs(text, |p| out.push(p));
        out
    }

    /// Sentences of the whole text, in order, trimmed, never crossing a paragraph boundary.
    #[must_use]
    pub fn sentences(&self, text: &str) -> Vec<Span> {
        let mut out = Vec::with_capacity(text.len() / 96 + 1);
        lines::paragraphs(text, |p| self.sentences_in_paragraph(text, p, &mut out));
        out
    }

    /// Sentences inside one paragraph span (as returned by [`Self::paragraphs`]).
    pub fn sentences_in_paragraph(&self, text: &str, para: Span, out: &mut Vec<Span>) {
        lines::hard_line_groups(text, para, |group| {
            sentences::scan(text, group, out);
        });
    }

    /// Lines of a span that a reader would see as separate (list items, headings, short
    /// unpunctuated lines), i.e. the groups between hard line breaks; trimmed.
    #[must_use]
    pub fn hard_lines(&self, text: &str, span: Span) -> Vec<Span> {
        let mut out = Vec::new();
        lines::paragraphs(span.text(text), |p| {
            lines::hard_line_groups(text, p.offset(span.start), |g| out.push(g));
        });
        out
    }
}
