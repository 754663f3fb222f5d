//! The hard token cap on chunks: [`Cap`].
//!
//! Every chunker, rule and sizing pass honours one cap, held in [`crate::chunkers::ChunkOptions`]
//! and passed to the rules as an argument. As a setting it is a number of tokens, `0` meaning
//! no cap (the spec's `max_tokens`, `--max-tokens`); in code it is this type, so "no cap" is
//! a state of the value rather than a sentinel each caller turns into `usize::MAX` (as
//! text-splitter's `ChunkCapacity` makes a capacity a type).
//!
//! ```
//! use seamcut::cap::Cap;
//! let cap = Cap::new(256);
//! assert!(cap.admits(256) && !cap.admits(257));
//! assert!(Cap::NONE.admits(usize::MAX));
//! assert_eq!(cap.min(100), Cap::new(100));
//! assert_eq!(serde_json::to_string(&Cap::NONE).unwrap(), "0");
//! ```

use std::num::NonZeroUsize;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// At most this many tokens per chunk, or no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Cap(Option<NonZeroUsize>);

impl Cap {
    /// No cap.
    pub const NONE: Self = Self(None);

    /// A cap of `max_tokens` tokens; `0` means no cap (the setting's spelling).
    #[must_use]
    pub const fn new(max_tokens: usize) -> Self {
        Self(NonZeroUsize::new(max_tokens))
    }

    /// The limit, `None` when uncapped.
    #[must_use]
    pub fn get(self) -> Option<usize> {
        self.0.map(NonZeroUsize::get)
    }

    /// The setting's number: the limit, or `0` when uncapped.
    #[must_use]
    pub fn max_tokens(self) -> usize {
        self.get().unwrap_or(0)
    }

    /// The limit as a bound for comparisons and `min`: `usize::MAX` when uncapped.
    #[must_use]
    pub fn limit(self) -> usize {
        self.get().unwrap_or(usize::MAX)
    }

    #[must_use]
    pub fn is_none(self) -> bool {
        self.0.is_none()
    }

    /// Whether `tokens` fit under the cap.
    #[must_use]
    pub fn admits(self, tokens: usize) -> bool {
        tokens <= self.limit()
    }

    /// The tighter of this cap and `limit` tokens (a model's window, an LLM group's budget);
    /// `limit` is at least 1.
    #[must_use]
    pub fn min(self, limit: usize) -> Self {
        Self::new(self.limit().min(limit.max(1)))
    }
}

impl std::fmt::Display for Cap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("none"),
        }
    }
}

impl Serialize for Cap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.max_tokens() as u64)
    }
}

impl<'de> Deserialize<'de> for Cap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        usize::deserialize(d).map(Self::new)
    }
}

impl std::str::FromStr for Cap {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().parse::<usize>() {
            Ok(n) => Ok(Self::new(n)),
            Err(_) if s.trim().starts_with('-') => {
                Err(format!("{s:?} is negative: give a number of tokens >= 0 (0 means no cap)"))
            }
            Err(_) => Err(format!("{s:?} is not a number of tokens (0 means no cap)")),
        }
    }
}
