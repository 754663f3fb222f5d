//! The library's error type. Every fallible public function returns [`Result`].

use std::path::PathBuf;

/// Errors seamcut reports to its callers. Each variant renders as one line that names the
/// input (file, line, byte offset) so a user of a corpus job can find the bad record.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{path}: invalid UTF-8 at byte {offset} (the lossy read option replaces invalid bytes with U+FFFD)"
    )]
    InvalidUtf8 { path: String, offset: usize },

    #[error("{path}: looks like a binary file (NUL byte at {offset}); not text")]
    Binary { path: String, offset: usize },

    #[error("{path}:{line}: {message}")]
    Record { path: String, line: usize, message: String },

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot load tokenizer {path}: {message}")]
    Tokenizer { path: PathBuf, message: String },

    #[error("model {path}: {message}")]
    Model { path: String, message: String },

    #[error("embedding failed: {0}")]
    Compute(String),

    /// An LLM request that failed after its retries (one document's).
    #[error("LLM request failed: {0}")]
    Llm(String),

    #[error("invalid configuration: {0}")]
    Config(String),

    /// A setting with a value that does not fit (alone or with the others). `setting` is its
    /// name in a chunker spec or job (`min_tokens`, `lumber.theta`, `embeddings`), so that a
    /// front end can name it its own way: the CLI shows its flag, Python its keyword.
    #[error("{setting}: {message}")]
    Setting { setting: &'static str, message: String },

    #[error("internal error (please report): {0}")]
    Internal(String),

    #[error("write failed: {0}")]
    Write(#[source] std::io::Error),

    /// A problem with one file met in a directory walk (binary, invalid UTF-8, unreadable).
    #[error("{0}")]
    InWalk(Box<Error>),

    /// A corpus job stopped on a document's error (`--on-error stop`).
    #[error("{0} (stopped: on_error is stop; the default, skip, lists such documents and goes on)")]
    Stopped(Box<Error>),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        // candle errors may carry a backtrace: keep the first line.
        Self::Compute(e.to_string().lines().next().unwrap_or_default().to_string())
    }
}

impl Error {
    /// Whether this error concerns one document of a corpus (a bad JSONL line or Parquet
    /// row, a bad file met in a directory walk, a model failure on one document), so that
    /// a corpus job may skip that document and go on; errors with an input named
    /// explicitly, a writer or the configuration are not.
    #[must_use]
    pub fn is_per_document(&self) -> bool {
        matches!(self, Self::Record { .. } | Self::InWalk(_) | Self::Compute(_) | Self::Llm(_))
    }

    /// A short word for what went wrong, for summaries (`binary`, `utf-8`, `record`, ...).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InWalk(e) | Self::Stopped(e) => e.kind(),
            Self::InvalidUtf8 { .. } => "invalid UTF-8",
            Self::Binary { .. } => "binary",
            Self::Record { .. } => "bad record",
            Self::Io { .. } => "unreadable",
            Self::Tokenizer { .. } | Self::Model { .. } | Self::Compute(_) => "model",
            Self::Llm(_) => "LLM",
            Self::Config(_) | Self::Setting { .. } => "configuration",
            Self::Internal(_) => "internal",
            Self::Write(_) => "write",
        }
    }

    /// The message without the setting's name (for a caller that names the setting itself).
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            Self::Setting { message, .. } => message.clone(),
            e => e.to_string(),
        }
    }

    /// A [`Error::Setting`].
    pub(crate) fn setting(setting: &'static str, message: impl std::fmt::Display) -> Self {
        Self::Setting { setting, message: message.to_string() }
    }

    pub(crate) fn model(path: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self::Model { path: path.to_string(), message: message.to_string() }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { path: path.into(), source }
    }
}
