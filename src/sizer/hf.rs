//! Tokens of a Hugging Face `tokenizer.json` (the HF `tokenizers` crate), counted without
//! special tokens and without the truncation or padding the file may configure.

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
        self.tokenizer.try_ids(text)
    }

    fn additive_at_whitespace(&self) -> bool {
        self.tokenizer.has_fast_path()
    }

    fn whitespace_free(&self) -> bool {
        // The fast path is BERT WordPiece, whose normaliser turns whitespace into splits.
        self.tokenizer.has_fast_path()
    }

    fn count(&self, text: &str) -> usize {
        self.tokenizer.count(text)
    }

    fn token_starts(&self, text: &str) -> Vec<usize> {
        self.tokenizer.token_starts(text)
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
}
