//! Token counting: the [`Sizer`] trait and its implementations, one file each.
//!
//! A chunk's size is measured by the same tokenizer that will embed it
//! ([`hf::HfSizer`], from a model's `tokenizer.json`), or by a cheap stand-in when no
//! tokenizer is given ([`chars::CharSizer`], [`words::WordSizer`]). [`cut`] splits a span
//! that is over a token cap at token boundaries.
//!
//! Counts never include special tokens (`[CLS]`, `[SEP]`): a cap of 512 means 512 tokens
//! of text, as chonkie counts them. No counted token stands for an unbounded run of text: a
//! word a tokenizer reads as one unknown token because it is over its word limit counts one
//! token per started 100 characters ([`hf`]), so a cap bounds a chunk's text too.

pub mod chars;
pub mod cut;
pub mod hf;
pub mod words;

pub use chars::CharSizer;
pub use hf::HfSizer;
pub use words::WordSizer;

use std::sync::Arc;

/// Measures text in tokens. Implementations are cheap to share between threads.
pub trait Sizer: Send + Sync + std::fmt::Debug {
    /// Number of tokens in `text`.
    fn count(&self, text: &str) -> usize;

    /// Byte offsets (into `text`, ascending, on char boundaries) at which each token starts.
    /// `token_starts(t).len() == count(t)`. Used to cut text at token boundaries.
    fn token_starts(&self, text: &str) -> Vec<usize>;

    /// A short name for reports (`chars`, `words`, `tokenizer:PATH`).
    fn name(&self) -> String;

    /// Whether counts add up across a split made right after whitespace:
    /// `count(a + b) == count(a) + count(b)` whenever `a` ends with whitespace. True for
    /// words, characters and BERT WordPiece (its pre-tokenizer splits at whitespace and its
    /// normaliser is per character), false for byte-level BPE (which glues a space to the
    /// next word); chunkers then sum unit counts instead of counting a chunk's text again.
    fn additive_at_whitespace(&self) -> bool {
        false
    }

    /// Whether whitespace never adds tokens: `count(t) == count(t.trim())`. True for words
    /// and BERT WordPiece (its normaliser drops whitespace), false for characters and
    /// byte-level BPE; units then reuse a trimmed span's count for the span with its
    /// surrounding whitespace instead of counting it again.
    fn whitespace_free(&self) -> bool {
        false
    }

    /// The token ids `count` counts, where this sizer is a tokenizer (`ids(t).len() ==
    /// count(t)`); `None` for sizers without ids (characters, words) or where the tokenizer
    /// fails. For callers that would tokenize the same text again for a model sharing this
    /// tokenizer (the semantic chunkers' units, [`crate::embed::prepare_known`]).
    fn ids(&self, _text: &str) -> Option<Vec<u32>> {
        None
    }

    /// [`Self::ids`] of many texts, in parallel when there are many; `None` if any is `None`.
    fn ids_many(&self, texts: &[&str]) -> Option<Vec<Vec<u32>>> {
        use rayon::prelude::*;
        if texts.len() >= 256 {
            texts.par_iter().with_min_len(64).map(|t| self.ids(t)).collect()
        } else {
            texts.iter().map(|t| self.ids(t)).collect()
        }
    }

    /// Count many texts. The default runs them in parallel with rayon when there are many.
    fn count_many(&self, texts: &[&str]) -> Vec<usize> {
        use rayon::prelude::*;
        if texts.len() >= 256 {
            texts.par_iter().with_min_len(64).map(|t| self.count(t)).collect()
        } else {
            texts.iter().map(|t| self.count(t)).collect()
        }
    }
}

/// Which sizer to build; what the CLI's `--sizer`/`--tokenizer` flags map to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SizerSpec {
    /// The default model's tokenizer (embedded in the binary).
    #[default]
    Default,
    Chars,
    Words,
    Tokenizer(std::path::PathBuf),
}

impl SizerSpec {
    /// Parse the CLI's `--sizer` value: `default`, `chars`, `words`, or a path to a
    /// `tokenizer.json` (or a model directory holding one).
    #[must_use]
    pub fn parse(s: &str) -> Self {
        match s {
            "default" => Self::Default,
            "chars" => Self::Chars,
            "words" => Self::Words,
            path => Self::Tokenizer(path.into()),
        }
    }

    /// Build the sizer.
    ///
    /// # Errors
    /// If a tokenizer file cannot be read or parsed.
    pub fn build(&self) -> crate::Result<Arc<dyn Sizer>> {
        Ok(match self {
            Self::Default => Arc::new(HfSizer::default_model()),
            Self::Chars => Arc::new(CharSizer),
            Self::Words => Arc::new(WordSizer),
            Self::Tokenizer(path) => Arc::new(HfSizer::from_file(path)?),
        })
    }
}

impl std::fmt::Display for SizerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::Chars => f.write_str("chars"),
            Self::Words => f.write_str("words"),
            Self::Tokenizer(p) => write!(f, "{}", p.display()),
        }
    }
}

impl std::str::FromStr for SizerSpec {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::parse(s))
    }
}

crate::serde_text::serde_as_text!(SizerSpec);
