//! Cutting a span that is over a token cap into pieces that fit.
//!
//! Used wherever a unit would be too large: a "sentence" of 50 MB with no punctuation, a
//! paragraph over the cap in the recursive chunker, and the fixed-window chunker itself.
//! The text is tokenized in windows of bounded size, so memory stays proportional to the
//! cap, not to the span.

use super::Sizer;
use crate::span::Span;

/// How to choose the cut inside a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutMode {
    /// Exactly `cap` tokens per piece (fixed token windows); may cut inside a word.
    Exact,
    /// Prefer the last word start in the second half of the window, so words stay whole.
    WordBoundary,
}

/// A piece of a cut span and its token count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub span: Span,
    pub tokens: usize,
}

/// Split `span` of `text` into contiguous pieces, each of at most `cap` tokens as counted by
/// `sizer`, that together cover `span` exactly. A span that fits is returned as is.
///
/// The one case a piece can exceed `cap` is a single character that alone counts more
/// (e.g. an emoji that a byte-level BPE spells in 3 tokens with `cap < 3`); it is emitted
/// alone rather than dropped or split inside the character.
#[must_use]
pub fn cut(text: &str, span: Span, sizer: &dyn Sizer, cap: usize, mode: CutMode) -> Vec<Piece> {
    let mut out = Vec::new();
    cut_into(text, span, sizer, cap, mode, &mut out);
    out
}

/// [`cut`] appending to `out`.
pub fn cut_into(text: &str, span: Span, sizer: &dyn Sizer, cap: usize, mode: CutMode, out: &mut Vec<Piece>) {
    let cap = cap.max(1);
    let mut pos = span.start;
    // Start with a window that usually holds well over `cap` tokens of prose, then size
    // windows from the bytes per token seen so far (a third more than the cap needs), so a
    // long span is tokenized about 1.3 times rather than 8.
    let mut next_window = cap.saturating_mul(8).max(256);
    while pos < span.end {
        let mut wlen = next_window;
        loop {
            let wend = floor_boundary(text, (pos + wlen).min(span.end));
            let wend = if wend <= pos { ceil_boundary(text, pos + 1) } else { wend };
            let window = &text[pos..wend];
            let starts = sizer.token_starts(window);
            let at_end = wend >= span.end;
            if at_end && starts.len() <= cap {
                out.push(Piece { span: Span::new(pos, span.end), tokens: starts.len() });
                pos = span.end;
                break;
            }
            // Cut only once the (cap+1)-th token is certainly whole: either another token
            // follows it inside the window or the window reaches the span's end.
            if starts.len() > cap + 1 || (at_end && starts.len() > cap) {
                let c = choose_cut(window, &starts, cap, mode);
                let (c, tokens) = shrink_to_fit(window, &starts, c, sizer, cap);
                out.push(Piece { span: Span::new(pos, pos + c), tokens });
                pos += c;
                let bytes_per_token = window.len() as f64 / starts.len() as f64;
                next_window = ((cap as f64 * 1.34 + 4.0) * bytes_per_token) as usize + 16;
                break;
            }
            wlen = wlen.saturating_mul(2);
        }
    }
}

/// Where to cut inside the window (relative byte offset, > 0).
fn choose_cut(window: &str, starts: &[usize], cap: usize, mode: CutMode) -> usize {
    let b = window.as_bytes();
    let mut c = starts[cap];
    if mode == CutMode::WordBoundary {
        for k in (cap / 2 + 1..=cap).rev() {
            let s = starts[k];
            if s > 0
                && (b[s - 1].is_ascii_whitespace() || !b[s - 1].is_ascii_alphanumeric() && b[s - 1] < 0x80)
            {
                c = s;
                break;
            }
        }
    }
    if c == 0 {
        // The first token starts the window (cap tokens began at 0): move past one char.
        c = ceil_boundary(window, 1);
    }
    c
}

/// Re-count the piece and move the cut back until it fits: tokenizing a piece on its own
/// can differ from its tokens in context (a word cut in two, a merge across the cut).
/// Returns the cut and the piece's token count.
fn shrink_to_fit(
    window: &str,
    starts: &[usize],
    mut c: usize,
    sizer: &dyn Sizer,
    cap: usize,
) -> (usize, usize) {
    loop {
        let n = sizer.count(&window[..c]);
        if n <= cap {
            return (c, n);
        }
        let prev = starts.iter().rev().copied().find(|&s| s < c && s > 0);
        c = match prev {
            Some(p) => p,
            None => {
                // Down to one token: cut by characters; a lone char is always emitted.
                let mut x = floor_boundary(window, c - 1);
                while x > 0 && sizer.count(&window[..x]) > cap {
                    x = floor_boundary(window, x - 1);
                }
                if x == 0 {
                    let one = ceil_boundary(window, 1);
                    return (one, sizer.count(&window[..one]));
                }
                x
            }
        };
    }
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizer::{CharSizer, WordSizer};

    fn check(text: &str, sizer: &dyn Sizer, cap: usize, mode: CutMode) -> Vec<Span> {
        let pieces = cut(text, Span::new(0, text.len()), sizer, cap, mode);
        for p in &pieces {
            assert_eq!(p.tokens, sizer.count(p.span.text(text)));
        }
        let pieces: Vec<Span> = pieces.iter().map(|p| p.span).collect();
        let joined: String = pieces.iter().map(|p| p.text(text)).collect();
        assert_eq!(joined, text);
        for p in &pieces {
            assert!(sizer.count(p.text(text)) <= cap, "{:?} over {cap}", p.text(text));
        }
        pieces
    }

    #[test]
    fn exact_char_windows() {
        let p = check("abcdefghij", &CharSizer, 3, CutMode::Exact);
        assert_eq!(p.len(), 4);
    }

    #[test]
    fn word_boundaries_kept() {
        let text = "alpha beta gamma delta epsilon zeta eta theta";
        let p = check(text, &CharSizer, 12, CutMode::WordBoundary);
        for piece in &p[..p.len() - 1] {
            assert!(piece.text(text).ends_with(' '), "{:?}", piece.text(text));
        }
        check(text, &WordSizer, 3, CutMode::WordBoundary);
    }

    #[test]
    fn long_text_is_windowed() {
        let text = "word ".repeat(100_000);
        let p = check(&text, &WordSizer, 100, CutMode::WordBoundary);
        assert_eq!(p.len(), 1000);
    }
}
