//! The library's error type. Every fallible public function returns [`Result`].

use std::path::PathBuf;

/// Errors seamcut reports to its callers. Each variant renders as one line that names the
/// input (file, line, byte offset) so a user of a corpus job can find the bad record.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}", self.render(&|s| s.to_string()))]
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

    #[error("{}", self.render(&|s| s.to_string()))]
    Model { path: String, message: String },

    #[error("embedding failed: {0}")]
    Compute(String),

    /// An LLM request that failed after its retries (one document's).
    #[error("LLM request failed: {0}")]
    Llm(String),

    /// An LLM server that could not be reached at all (no request to it ever answered):
    /// the job's problem, not a document's.
    #[error("LLM server unreachable: {0}")]
    LlmUnreachable(String),

    /// A configuration that does not work; other settings it names are marked ([`named`]).
    #[error("{}", self.render(&|s| s.to_string()))]
    Config(String),

    /// A setting with a value that does not fit (alone or with the others). `setting` is its
    /// name in a chunker spec or job (`min_tokens`, `lumber.theta`, `embeddings`), so that a
    /// front end can name it its own way: the CLI shows its flag, Python its keyword. Other
    /// settings the message names are marked ([`named`]) for the same reason.
    #[error("{}", self.render(&|s| s.to_string()))]
    Setting { setting: &'static str, message: String },

    /// A database output that failed while the job ran: the server unreachable, a write
    /// refused after its retries (the URL is in the message).
    #[error("{}", self.render(&|s| s.to_string()))]
    Database(String),

    #[error("internal error (please report): {0}")]
    Internal(String),

    #[error("write failed: {0}")]
    Write(#[source] std::io::Error),

    /// A problem with one file met in a directory walk (binary, invalid UTF-8, unreadable).
    #[error("{}", self.render(&|s| s.to_string()))]
    InWalk(Box<Error>),

    /// A document an output cannot store as it is (a database's text type and a NUL).
    #[error("{0}")]
    Rejected(String),

    /// A corpus job stopped on a document's error (`--on-error stop`).
    #[error("{}", self.render(&|s| s.to_string()))]
    Stopped(Box<Error>),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A setting named inside an error message, marked so that each front end renders it in its
/// own words ([`Error::render`]: the spec's name by default, the CLI's flag): a message that
/// says "larger than the cap, {max_tokens}" reads `--max-tokens` in the CLI and `max_tokens` in
/// Python and the server.
pub(crate) fn named(setting: &str) -> String {
    format!("{START}{setting}{END}")
}

// Control characters no message text holds: the markers around a setting's name.
const START: char = '\u{1}';
const END: char = '\u{2}';

/// `message` with each [`named`] setting rendered by `name`.
fn render_names(message: &str, name: &dyn Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find(START) {
        out.push_str(&rest[..i]);
        let after = &rest[i + START.len_utf8()..];
        match after.find(END) {
            Some(j) => {
                out.push_str(&name(&after[..j]));
                rest = &after[j + END.len_utf8()..];
            }
            None => {
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

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
        matches!(
            self,
            Self::Record { .. } | Self::InWalk(_) | Self::Compute(_) | Self::Llm(_) | Self::Rejected(_)
        )
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
            Self::Llm(_) | Self::LlmUnreachable(_) => "LLM",
            Self::Config(_) | Self::Setting { .. } => "configuration",
            Self::Rejected(_) => "unstorable",
            Self::Internal(_) => "internal",
            Self::Write(_) => "write",
            Self::Database(_) => "database",
        }
    }

    /// The message without the setting's name (for a caller that names the setting itself).
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            Self::Setting { message, .. } => render_names(message, &|s| s.to_string()),
            e => e.to_string(),
        }
    }

    /// The one-line message with every setting it names (the setting of an
    /// [`Error::Setting`], and those marked in a message) named by `name`: a front end's
    /// words for a spec or job setting (the CLI: `max_tokens` → `--max-tokens`). `Display`
    /// names them as the spec does.
    #[must_use]
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        match self {
            Self::Setting { setting, message } => {
                format!("{}: {}", name(setting), render_names(message, name))
            }
            Self::Config(m) => format!("invalid configuration: {}", render_names(m, name)),
            Self::Database(m) => render_names(m, name),
            Self::Model { path, message } => format!("model {path}: {}", render_names(message, name)),
            Self::InvalidUtf8 { path, offset } => format!(
                "{path}: invalid UTF-8 at byte {offset} ({} replaces invalid bytes with U+FFFD)",
                name("lossy")
            ),
            Self::InWalk(e) => e.render(name),
            Self::Stopped(e) => format!(
                "{} (stopped: {} is stop; the default, skip, lists such documents and goes on)",
                e.render(name),
                name("on_error")
            ),
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
