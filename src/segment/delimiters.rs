//! chonkie's sentence splitter, for parity with its SemanticChunker (`--splitter
//! delimiters`): literal delimiters (default `". "`, `"! "`, `"? "`, `"\n"`) matched
//! leftmost-first without overlap, each ending a segment that keeps it (`include_delim =
//! "prev"`), then segments merged while the running piece or the next segment is shorter
//! than `min_bytes` (chonkie's `min_characters_per_sentence`, counted in UTF-8 bytes).
//! Unlike seamcut's own segmenter it knows no abbreviations, numbers or CJK punctuation.

use crate::span::Span;

/// chonkie's default delimiters.
pub const CHONKIE_DELIMITERS: [&str; 4] = [". ", "! ", "? ", "\n"];

/// Covering segments of `text` (contiguous, from 0 to `text.len()`; empty text gives none).
#[must_use]
pub fn split(text: &str, delimiters: &[&str], min_bytes: usize) -> Vec<Span> {
    let b = text.as_bytes();
    let mut raw = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        // Leftmost-first: at the earliest position, the first listed delimiter that matches.
        match delimiters.iter().find(|d| !d.is_empty() && b[i..].starts_with(d.as_bytes())) {
            Some(d) => {
                i += d.len();
                if i > start {
                    raw.push(Span::new(start, i));
                }
                start = i;
            }
            None => i += 1,
        }
    }
    if start < b.len() {
        raw.push(Span::new(start, b.len()));
    }
    let mut out: Vec<Span> = Vec::with_capacity(raw.len());
    for s in raw {
        match out.last_mut() {
            Some(acc) if acc.len() < min_bytes || s.len() < min_bytes => acc.end = s.end,
            _ => out.push(s),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_merges_like_chonkie() {
        let t = "Hi. This is a longer sentence here. Ok! And another long sentence ends.\nx";
        let got: Vec<&str> = split(t, &CHONKIE_DELIMITERS, 24).iter().map(|s| s.text(t)).collect();
        assert_eq!(got, ["Hi. This is a longer sentence here. Ok! ", "And another long sentence ends.\nx"]);
        assert_eq!(got.concat(), t);
        assert!(split("", &CHONKIE_DELIMITERS, 24).is_empty());
    }
}
