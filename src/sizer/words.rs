//! Whitespace-separated words as tokens. Whitespace itself counts zero.

use super::Sizer;

#[derive(Debug, Clone, Copy, Default)]
pub struct WordSizer;

impl Sizer for WordSizer {
    fn additive_at_whitespace(&self) -> bool {
        true
    }

    fn whitespace_free(&self) -> bool {
        true
    }

    fn count(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }

    fn token_starts(&self, text: &str) -> Vec<usize> {
        let mut out = Vec::new();
        let mut in_word = false;
        for (i, c) in text.char_indices() {
            let ws = c.is_whitespace();
            if !ws && !in_word {
                out.push(i);
            }
            in_word = !ws;
        }
        out
    }

    fn name(&self) -> String {
        "words".into()
    }
}
