//! Characters as tokens (Unicode scalar values), whitespace included, as chonkie's
//! `"character"` tokenizer counts them.

use super::Sizer;

#[derive(Debug, Clone, Copy, Default)]
pub struct CharSizer;

impl Sizer for CharSizer {
    fn additive_at_whitespace(&self) -> bool {
        true
    }

    fn count(&self, text: &str) -> usize {
        if text.is_ascii() {
            text.len()
        } else {
            text.chars().count()
        }
    }

    fn token_starts(&self, text: &str) -> Vec<usize> {
        text.char_indices().map(|(i, _)| i).collect()
    }

    fn name(&self) -> String {
        "chars".into()
    }
}
