//! What a server is started with: [`ServeConfig`] (the chunker spec, where to listen, the
//! key) and its [`Limits`]. Plain data; `seamcut serve` maps its flags onto it.

use std::time::Duration;

use crate::embed::LongInput;
use crate::spec::ChunkerSpec;

/// Everything `seamcut serve` needs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The chunker `/v1/chunk` runs (requests may override its rule settings, never the
    /// fields of [`crate::spec::MACHINE_FIELDS`]); its `model` is the one `/v1/embeddings`
    /// and `/embed` run, loaded once.
    pub spec: ChunkerSpec,
    /// The address to bind. `127.0.0.1` by default: another host must be asked for.
    pub host: String,
    /// The port; 0 takes a free one (the address is printed on stderr either way).
    pub port: u16,
    /// Requests must carry `Authorization: Bearer KEY` (all routes but `/health`).
    pub api_key: Option<String>,
    pub limits: Limits,
    /// Tokens one embedding pass takes across requests (as text-embeddings-inference's
    /// `--max-batch-tokens`); chunking batches take about as much text (4 bytes a token).
    pub max_batch_tokens: usize,
    /// Distinct chunker specs (the server's plus requests' overrides) kept built.
    pub cached_chunkers: usize,
    /// Embedding inputs past the model's window (as `seamcut embed --long`).
    pub long: LongInput,
    /// The names the model is served under (`--served-model-name`, as TEI and vLLM have it):
    /// what `GET /v1/models` lists, what a request's `model` may say, and the first is what
    /// answers carry. Empty: the model as `spec.model` names it (or its directory's name).
    pub served_model_names: Vec<String>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            spec: ChunkerSpec::default(),
            host: "127.0.0.1".into(),
            port: 8080,
            api_key: None,
            limits: Limits::default(),
            max_batch_tokens: 16_384,
            cached_chunkers: 16,
            long: LongInput::Truncate,
            served_model_names: Vec::new(),
        }
    }
}

/// What one request may ask and how long it may take. Every limit answers with a status
/// code and a one-line JSON error; none stops the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Requests admitted at once (waiting, batched or running); past it, 429 with
    /// `Retry-After`. This bounds the queues and so the server's memory.
    pub max_concurrent_requests: usize,
    /// Bytes of a request body; past it, 413.
    pub max_body_bytes: usize,
    /// Inputs (`/v1/embeddings`, `/embed`) or documents (`/v1/chunk`) in one request; past
    /// it, 413.
    pub max_inputs: usize,
    /// From the end of the headers to the answer; past it, 503 and the request's queued work
    /// is dropped.
    pub request_timeout: Duration,
    /// For a client to send its request headers; past it, the connection is closed.
    pub header_timeout: Duration,
    /// For a client to send its request body; past it, 408.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_concurrent_requests: 512,
            max_body_bytes: 2 << 20,
            max_inputs: 512,
            request_timeout: Duration::from_secs(60),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
        }
    }
}
