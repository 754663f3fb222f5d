//! Large language models for the LLM chunkers ([`crate::chunkers::lumber`]).
//!
//! One trait, [`LlmBackend`] (a chat completion: messages in, text and token counts out),
//! with two implementations: [`http::OpenAiChat`], any OpenAI-compatible chat-completions
//! server (vLLM, llama.cpp's server, Ollama, hosted APIs), and [`gguf::GgufChat`], a quantized
//! GGUF chat model run in-process on candle (CPU or CUDA). [`LlmClient`] wraps a backend with
//! what every caller wants: an answer cache keyed by the request ([`cache::AnswerCache`]), so
//! a rerun or a resumed job costs nothing, and cost counters ([`LlmCost`]) that corpus jobs
//! report. [`LlmSpec`] (part of [`crate::spec::ChunkerSpec`]) says which backend and how.
//!
//! This module knows nothing of chunking: prompts and the parsing of answers live with the
//! chunkers.

pub mod cache;
pub mod gguf;
pub mod http;
pub mod spm;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl Message {
    #[must_use]
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        Self { role: role.into(), content: content.into() }
    }
}

/// A chat-completion request as a backend receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub temperature: f64,
    /// Most tokens to generate; `None`: the server's default (HTTP) or 32 (in-process).
    pub max_tokens: Option<u32>,
    /// Sampling seed for in-process models (HTTP servers get none: the request stays the
    /// one the paper sends).
    pub seed: u64,
}

/// A backend's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Reply {
    pub text: String,
    /// As the backend counted them (HTTP: the response's `usage`, 0 when absent).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// A chat model.
pub trait LlmBackend: Send + Sync {
    /// One completion. Transient failures (HTTP 429 and 5xx, timeouts) are retried inside;
    /// what comes back as an error has used up its retries.
    ///
    /// # Errors
    /// [`Error::Llm`] when the model cannot answer.
    fn complete(&self, req: &ChatRequest) -> Result<Reply>;

    /// The model's identity: part of every cache key, and what reports name.
    fn id(&self) -> String;

    /// How many requests are worth having in flight at once (documents are chunked
    /// concurrently up to this).
    fn concurrency(&self) -> usize;

    /// Transient failures retried so far.
    fn retries(&self) -> u64 {
        0
    }
}

/// What the LLM work of a job cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmCost {
    /// Requests answered by the backend (not from the cache).
    pub calls: u64,
    /// Requests answered from the cache.
    pub cache_hits: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens of the requests the cache answered (what a cold run would have sent).
    pub cached_prompt_tokens: u64,
    /// Transient failures retried (429, 5xx, timeouts).
    pub retries: u64,
    /// Answers a chunker could not use (unparsable, out of range) and asked again.
    pub invalid_answers: u64,
    /// Groups kept whole because no usable answer came within the retries.
    pub fallbacks: u64,
    /// Documents chunked by sentence packing because their requests failed (the chunker's
    /// `on_model_error: sentence`).
    pub documents_by_sentences: u64,
}

impl LlmCost {
    /// One line for job summaries.
    #[must_use]
    pub fn summary(&self) -> String {
        format!(
            "LLM: {} calls ({} prompt + {} completion tokens), {} cache hits ({} prompt tokens saved), {} retries, {} unusable answers, {} groups kept whole, {} documents by sentence packing after failed requests",
            self.calls,
            self.prompt_tokens,
            self.completion_tokens,
            self.cache_hits,
            self.cached_prompt_tokens,
            self.retries,
            self.invalid_answers,
            self.fallbacks,
            self.documents_by_sentences
        )
    }

    /// What was spent since `before` (a chunker's client may serve several jobs).
    #[must_use]
    pub fn since(&self, before: &Self) -> Self {
        Self {
            calls: self.calls - before.calls,
            cache_hits: self.cache_hits - before.cache_hits,
            prompt_tokens: self.prompt_tokens - before.prompt_tokens,
            completion_tokens: self.completion_tokens - before.completion_tokens,
            cached_prompt_tokens: self.cached_prompt_tokens - before.cached_prompt_tokens,
            retries: self.retries - before.retries,
            invalid_answers: self.invalid_answers - before.invalid_answers,
            fallbacks: self.fallbacks - before.fallbacks,
            documents_by_sentences: self.documents_by_sentences - before.documents_by_sentences,
        }
    }

    /// Requests of either kind.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.calls + self.cache_hits
    }
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    cache_hits: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    cached_prompt_tokens: AtomicU64,
    invalid_answers: AtomicU64,
    fallbacks: AtomicU64,
}

/// A backend with an answer cache and cost counters: what chunkers hold.
pub struct LlmClient {
    backend: Box<dyn LlmBackend>,
    cache: Option<cache::AnswerCache>,
    temperature: f64,
    max_tokens: Option<u32>,
    seed: u64,
    counters: Counters,
}

impl LlmClient {
    #[must_use]
    pub fn new(backend: Box<dyn LlmBackend>, cache: Option<cache::AnswerCache>, spec: &LlmSpec) -> Self {
        Self {
            backend,
            cache,
            temperature: spec.temperature,
            max_tokens: spec.max_tokens,
            seed: spec.seed,
            counters: Counters::default(),
        }
    }

    /// Ask `messages`. `attempt` numbers the asks of one question (0 first): a retry after
    /// an unusable answer is another cache entry and, in-process, another sampling seed, so
    /// retries can differ while a rerun replays exactly the same answers from the cache.
    ///
    /// # Errors
    /// The backend's, after its retries.
    pub fn ask(&self, messages: Vec<Message>, attempt: u32) -> Result<Reply> {
        let req = ChatRequest {
            messages,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            seed: self.seed.wrapping_add(u64::from(attempt)),
        };
        let key = self.cache.as_ref().map(|_| cache::key(&self.backend.id(), &req, attempt));
        if let (Some(c), Some(k)) = (&self.cache, &key) {
            if let Some(r) = c.get(k) {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                self.counters.cached_prompt_tokens.fetch_add(r.prompt_tokens, Ordering::Relaxed);
                return Ok(r);
            }
        }
        let reply = self.backend.complete(&req)?;
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        self.counters.prompt_tokens.fetch_add(reply.prompt_tokens, Ordering::Relaxed);
        self.counters.completion_tokens.fetch_add(reply.completion_tokens, Ordering::Relaxed);
        if let (Some(c), Some(k)) = (&self.cache, key) {
            c.put(k, &reply)?;
        }
        Ok(reply)
    }

    /// Count an answer the caller could not use.
    pub fn note_invalid(&self) {
        self.counters.invalid_answers.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a group kept whole for want of a usable answer.
    pub fn note_fallback(&self) {
        self.counters.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// The costs so far.
    #[must_use]
    pub fn cost(&self) -> LlmCost {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LlmCost {
            calls: get(&c.calls),
            cache_hits: get(&c.cache_hits),
            prompt_tokens: get(&c.prompt_tokens),
            completion_tokens: get(&c.completion_tokens),
            cached_prompt_tokens: get(&c.cached_prompt_tokens),
            retries: self.backend.retries(),
            invalid_answers: get(&c.invalid_answers),
            fallbacks: get(&c.fallbacks),
            documents_by_sentences: 0,
        }
    }

    /// Requests worth having in flight at once.
    #[must_use]
    pub fn concurrency(&self) -> usize {
        self.backend.concurrency().max(1)
    }

    /// The model, for reports.
    #[must_use]
    pub fn id(&self) -> String {
        self.backend.id()
    }
}

/// Which LLM, and how to talk to it (the `llm` part of a chunker spec).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSpec {
    /// An OpenAI-compatible API's base URL (`http://127.0.0.1:8000/v1`; `/chat/completions`
    /// is appended unless the URL ends with it). Empty: run `model` in-process.
    pub url: String,
    /// With `url`, the model name the server knows; without, a GGUF file run in-process.
    pub model: String,
    /// The environment variable holding the API key (sent as a bearer token when set).
    pub api_key_env: String,
    /// Sampling temperature (the paper: 0.1).
    pub temperature: f64,
    /// Most tokens to generate; unset: the server's default (in-process: 32).
    pub max_tokens: Option<u32>,
    /// Seconds before a request is abandoned (and retried).
    pub timeout_s: f64,
    /// Retries of a request after a 429, a 5xx, a timeout or a dropped connection, with
    /// exponential backoff from `backoff_ms` (a `Retry-After` header is honoured).
    pub retries: u32,
    pub backoff_ms: u64,
    /// Requests in flight at once over HTTP (documents are chunked concurrently); an
    /// in-process model takes one at a time.
    pub concurrency: usize,
    /// The answer cache: `auto` (`$SEAMCUT_CACHE_DIR`, else `$XDG_CACHE_HOME/seamcut`, else
    /// `~/.cache/seamcut`, file `llm-answers.jsonl`), `none`, or a file.
    pub cache: String,
    /// In-process sampling seed.
    pub seed: u64,
}

impl Default for LlmSpec {
    fn default() -> Self {
        Self {
            url: String::new(),
            model: String::new(),
            api_key_env: "OPENAI_API_KEY".into(),
            temperature: 0.1,
            max_tokens: None,
            timeout_s: 120.0,
            retries: 5,
            backoff_ms: 500,
            concurrency: 8,
            cache: "auto".into(),
            seed: 299_792_458,
        }
    }
}

impl LlmSpec {
    /// The cache file, if any.
    #[must_use]
    pub fn cache_path(&self) -> Option<PathBuf> {
        match self.cache.as_str() {
            "none" | "" => None,
            "auto" => {
                let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
                let dir = env("SEAMCUT_CACHE_DIR")
                    .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("seamcut")))
                    .or_else(|| env("HOME").map(|h| h.join(".cache").join("seamcut")))?;
                Some(dir.join("llm-answers.jsonl"))
            }
            p => Some(PathBuf::from(p)),
        }
    }

    /// Connect to (or load) the model this spec names.
    ///
    /// # Errors
    /// [`Error::Setting`] when no model is named or settings are out of range; a GGUF load
    /// error; the cache file's I/O error.
    /// `compute` is where an in-process model runs (the spec's device; quantized models
    /// keep their own weight types).
    pub fn build(&self, compute: &crate::device::Compute) -> Result<Arc<LlmClient>> {
        if self.model.is_empty() {
            return Err(Error::setting(
                "llm.model",
                format!(
                    "the LLM chunkers need one: a model name with {} (an OpenAI-compatible server), or a GGUF file (run in-process)",
                    crate::error::named("llm.url")
                ),
            ));
        }
        if !(0.0..=2.0).contains(&self.temperature) || self.timeout_s.is_nan() || self.timeout_s <= 0.0 {
            return Err(Error::setting(
                "llm",
                format!(
                    "temperature must be in 0..=2 and timeout_s > 0 (got {} and {})",
                    self.temperature, self.timeout_s
                ),
            ));
        }
        let backend: Box<dyn LlmBackend> = if self.url.is_empty() {
            Box::new(gguf::GgufChat::load(std::path::Path::new(&self.model), &compute.device)?)
        } else {
            Box::new(http::OpenAiChat::new(self)?)
        };
        let cache = self.cache_path().map(|p| cache::AnswerCache::open(&p)).transpose()?;
        Ok(Arc::new(LlmClient::new(backend, cache, self)))
    }
}
