//! Byte ranges into a document's UTF-8 text.
//!
//! Every unit seamcut derives from a document (paragraph, sentence, chunk) is a [`Span`]:
//! a half-open byte range `start..end` that always lies on `char` boundaries of the text it
//! was taken from. Spans are plain `Copy` values so that stages can pass millions of them
//! around without touching the text.

use serde::Serialize;

/// A half-open byte range `start..end` into a document's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    #[inline]
    #[must_use]
    pub const fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    #[inline]
    #[must_use]
    pub const fn len(&self) -> usize {
        self.end - self.start
    }

    #[inline]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// The text this span covers. Panics if the span is not on char boundaries of `text`,
    /// which every span produced by seamcut is.
    #[inline]
    #[must_use]
    pub fn text<'a>(&self, text: &'a str) -> &'a str {
        &text[self.start..self.end]
    }

    /// The same range shifted by `base` bytes (for spans computed on a sub-slice).
    #[inline]
    #[must_use]
    pub const fn offset(self, base: usize) -> Self {
        Self::new(self.start + base, self.end + base)
    }
}

/// Turn trimmed unit spans (sentences, paragraphs) into *covering* spans: unit `i` owns the
/// whitespace that follows it, and the first unit also owns any leading whitespace, so the
/// covering spans are contiguous and together equal `0..text_len`.
///
/// This is the one rule by which seamcut attributes the gaps between units; every chunk
/// inherits it, which is why concatenating the chunks of a document gives the document back.
#[must_use]
pub fn covering(units: &[Span], text_len: usize) -> Vec<Span> {
    let n = units.len();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let start = if i == 0 { 0 } else { units[i].start };
        let end = if i + 1 == n { text_len } else { units[i + 1].start };
        out.push(Span::new(start, end));
    }
    out
}

/// Trim Unicode whitespace from both ends of `span` in `text`. Returns an empty span at
/// `span.start` if the span is all whitespace.
#[must_use]
pub fn trim(text: &str, span: Span) -> Span {
    let s = span.text(text);
    let t = s.trim_start();
    let start = span.start + (s.len() - t.len());
    let t = t.trim_end();
    Span::new(start, start + t.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covering_owns_gaps() {
        let text = "  a b.  c d.\n\ne";
        let units = [Span::new(2, 6), Span::new(8, 12), Span::new(14, 15)];
        let cov = covering(&units, text.len());
        assert_eq!(cov, vec![Span::new(0, 8), Span::new(8, 14), Span::new(14, 15)]);
        let joined: String = cov.iter().map(|s| s.text(text)).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn trim_handles_all_whitespace() {
        assert_eq!(trim("   ", Span::new(0, 3)), Span::new(3, 3));
        assert_eq!(trim(" ab\u{3000}", Span::new(0, 6)), Span::new(1, 3));
    }
}
