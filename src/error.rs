//! The library's error type. Every fallible public function returns [`Result`].

use std::path::PathBuf;

/// Errors seamcut reports to its callers. Each variant renders as one line that names the
/// input (file, line, byte offset) so a user of a corpus job can find the bad record.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: invalid UTF-8 at byte {offset} (use --lossy to replace invalid bytes with U+FFFD)")]
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

    #[error("invalid configuration: {0}")]
    Config(String),

    #[error("internal error (please report): {0}")]
    Internal(String),

    #[error("write failed: {0}")]
    Write(#[source] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        // candle errors may carry a backtrace: keep the first line.
        Self::Compute(e.to_string().lines().next().unwrap_or_default().to_string())
    }
}

impl Error {
    pub(crate) fn model(path: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self::Model { path: path.to_string(), message: message.to_string() }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { path: path.into(), source }
    }
}
