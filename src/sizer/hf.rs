//! Tokens of a Hugging Face `tokenizer.json` (the HF `tokenizers` crate), counted without
//! special tokens and without the truncation or padding the file may configure.
//!
//! Counts are the tokenizer's, except for one case: an unknown token that stands for more
//! than the tokenizer's word limit (BERT WordPiece makes one `[UNK]` of any word over 100
//! characters) counts one token per started 100-character piece, and the pieces are token
//! starts, so a cap bounds the text of a chunk even when it is one 10 MB word
//! ([`TextTokenizer::sizing_count`]; the rule and why are in `src/wordpiece.rs`).

use std::path::Path;

use tokenizers::Tokenizer;

use super::Sizer;
use crate::wordpiece::TextTokenizer;
use crate::{Error, Result};

#[derive(Debug, Clone)]
pub struct HfSizer {
    tokenizer: TextTokenizer,
    name: String,
}

impl HfSizer {
    /// Load `tokenizer.json`, or the `tokenizer.json` inside a model directory.
    ///
    /// # Errors
    /// If the file is missing or not a valid tokenizer.
    pub fn from_file(path: &Path) -> Result<Self> {
        let file = if path.is_dir() { path.join("tokenizer.json") } else { path.to_path_buf() };
        let tokenizer = crate::tokenizer_json::from_file(&file)
            .map_err(|e| Error::Tokenizer { path: file.clone(), message: e.to_string() })?;
        Ok(Self { tokenizer: TextTokenizer::new(tokenizer), name: format!("tokenizer:{}", file.display()) })
    }

    /// The tokenizer of seamcut's default model (`models/default/tokenizer.json`, the
    /// WordPiece vocabulary of all-MiniLM-L6-v2), compiled into the binary so that a fresh
    /// install counts tokens the way the default model embeds them.
    ///
    /// # Panics
    /// Never in practice: the embedded file is checked by a unit test.
    #[must_use]
    pub fn default_model() -> Self {
        static JSON: &[u8] = include_bytes!("../../models/default/tokenizer.json");
        let tokenizer = crate::tokenizer_json::from_bytes(JSON).expect("embedded default tokenizer parses");
        Self::new(tokenizer, "tokenizer:default")
    }

    /// Share a tokenizer already wrapped (a model's), fast path included.
    #[must_use]
    pub fn from_text_tokenizer(tokenizer: TextTokenizer, name: impl Into<String>) -> Self {
        Self { tokenizer, name: name.into() }
    }

    /// Wrap an already loaded tokenizer (its truncation and padding are switched off).
    #[must_use]
    pub fn new(tokenizer: Tokenizer, name: impl Into<String>) -> Self {
        Self { tokenizer: TextTokenizer::new(tokenizer), name: name.into() }
    }

    #[must_use]
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }
}

impl Sizer for HfSizer {
    fn ids(&self, text: &str) -> Option<Vec<u32>> {
        // `None` for a text with an over-long word: its ids are fewer than its count.
        self.tokenizer.sizing_ids(text)
    }

    fn additive_at_whitespace(&self) -> bool {
        self.tokenizer.has_fast_path()
    }

    fn whitespace_free(&self) -> bool {
        // The fast path is BERT WordPiece, whose normaliser turns whitespace into splits.
        self.tokenizer.has_fast_path()
    }

    fn count(&self, text: &str) -> usize {
        self.tokenizer.sizing_count(text)
    }

    fn token_starts(&self, text: &str) -> Vec<usize> {
        self.tokenizer.sizing_token_starts(text)
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_model_counts_wordpieces() {
        let s = HfSizer::default_model();
        // "unaffable" is split into word pieces; no [CLS]/[SEP] are counted.
        assert_eq!(s.count("Hello world"), 2);
        assert!(s.count("unaffable") > 1);
        assert_eq!(s.count(""), 0);
        let long = "word ".repeat(1000);
        assert_eq!(s.count(&long), 1000, "truncation from tokenizer.json must be off");
        let t = "Hello, world! 你好";
        let starts = s.token_starts(t);
        assert_eq!(starts.len(), s.count(t));
        assert!(starts.windows(2).all(|w| w[0] <= w[1]));
        assert!(starts.iter().all(|&o| t.is_char_boundary(o)));
    }

    #[test]
    fn an_over_long_word_counts_one_token_per_started_hundred_characters() {
        let s = HfSizer::default_model();
        assert_eq!(s.tokenizer().long_token_chars(), 100);
        // Fast path (ASCII), its Latin branch, and the HF pipeline (Greek), alone and in
        // context: the tokenizer says one [UNK] each time; the sizer says its pieces.
        for letter in ["a", "é", "λ"] {
            let word = letter.repeat(250);
            assert_eq!(s.tokenizer().count(&word), 1, "{letter}");
            assert_eq!(s.count(&word), 3, "{letter}");
            let starts = s.token_starts(&word);
            let l = letter.len();
            assert_eq!(starts, vec![0, 100 * l, 200 * l], "{letter}");
            assert_eq!(s.ids(&word), None, "{letter}: ids would be fewer than the count");
            let text = format!("Hello {word} world");
            assert_eq!(s.count(&text), 5, "{letter}");
            assert_eq!(s.token_starts(&text), vec![0, 6, 6 + 100 * l, 6 + 200 * l, 7 + 250 * l]);
            // Exactly at the limit a word is the tokenizer's own.
            let word = letter.repeat(100);
            assert_eq!(s.count(&word), s.tokenizer().count(&word), "{letter}");
            assert_eq!(s.ids(&word).map(|i| i.len()), Some(s.count(&word)));
        }
        // With a `[` the text takes the HF pipeline even for ASCII: the same counts.
        let word = "b".repeat(1001);
        assert_eq!(s.count(&word), 11);
        assert_eq!(s.count(&format!("[x] {word}")), 3 + 11);
        assert_eq!(s.token_starts(&format!("[x] {word}"))[3..5], [4, 104]);
    }
}
