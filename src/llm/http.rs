//! An OpenAI-compatible chat-completions client (vLLM, llama.cpp's server, Ollama's `/v1`,
//! hosted APIs), on `ureq` (blocking; concurrency comes from the chunker's worker threads).
//!
//! The request body is `{"model", "messages", "temperature"}` plus `max_tokens` only when set,
//! so a server receives exactly what the LumberChunker code sends. 429, 5xx, timeouts and
//! dropped connections are retried with exponential backoff (a `Retry-After` header in
//! seconds is honoured, up to a minute); other 4xx are errors at once. A server that no
//! request has reached yet and that refuses connections (or whose name does not resolve)
//! after the retries is [`Error::LlmUnreachable`]: the job's problem, not a document's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::Deserialize;

use super::{ChatRequest, LlmBackend, LlmSpec, Reply};
use crate::{Error, Result};

/// A chat-completions endpoint.
pub struct OpenAiChat {
    agent: ureq::Agent,
    url: String,
    model: String,
    key: Option<String>,
    retries: u32,
    backoff: Duration,
    concurrency: usize,
    retried: AtomicU64,
    /// Whether any request has reached the server.
    reached: AtomicBool,
}

/// A failed attempt: whether to retry it, what happened, how long the server asked to wait,
/// and whether the connection itself failed (refused, or the host not found).
struct Failure {
    transient: bool,
    message: String,
    wait: Option<Duration>,
    no_connection: bool,
}

impl Failure {
    fn new(transient: bool, message: String) -> Self {
        Self { transient, message, wait: None, no_connection: false }
    }
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl OpenAiChat {
    /// A client for `spec.url` and `spec.model`; the key is read from `spec.api_key_env`.
    ///
    /// # Errors
    /// [`Error::Setting`] for a URL that is not http(s).
    pub fn new(spec: &LlmSpec) -> Result<Self> {
        let base = spec.url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::setting(
                "llm.url",
                format!("{:?}: expected an http:// or https:// URL", spec.url),
            ));
        }
        let url = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs_f64(spec.timeout_s))
            .max_idle_connections_per_host(spec.concurrency.max(1))
            .build();
        let key = std::env::var(&spec.api_key_env).ok().filter(|k| !k.is_empty());
        Ok(Self {
            agent,
            url,
            model: spec.model.clone(),
            key,
            retries: spec.retries,
            backoff: Duration::from_millis(spec.backoff_ms),
            concurrency: spec.concurrency.max(1),
            retried: AtomicU64::new(0),
            reached: AtomicBool::new(false),
        })
    }

    /// The JSON body a request sends.
    #[must_use]
    pub fn body(&self, req: &ChatRequest) -> serde_json::Value {
        let mut body = serde_json::json!({
            "model": self.model,
            "messages": req.messages,
            "temperature": req.temperature,
        });
        if let Some(m) = req.max_tokens {
            body["max_tokens"] = m.into();
        }
        body
    }

    fn once(&self, body: &serde_json::Value) -> std::result::Result<Reply, Failure> {
        let mut r = self.agent.post(&self.url).set("Content-Type", "application/json");
        if let Some(k) = &self.key {
            r = r.set("Authorization", &format!("Bearer {k}"));
        }
        match r.send_string(&body.to_string()) {
            Ok(resp) => {
                self.reached.store(true, Ordering::Relaxed);
                let text = resp
                    .into_string()
                    .map_err(|e| Failure::new(true, format!("reading the response: {e}")))?;
                let parsed: Response = serde_json::from_str(&text).map_err(|e| {
                    Failure::new(false, format!("not a chat-completions response ({e}): {}", excerpt(&text)))
                })?;
                let content =
                    parsed.choices.into_iter().next().and_then(|c| c.message.content).ok_or_else(|| {
                        Failure::new(false, format!("no message in the response: {}", excerpt(&text)))
                    })?;
                let usage = parsed.usage.unwrap_or_default();
                Ok(Reply {
                    text: content,
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                })
            }
            Err(ureq::Error::Status(code, resp)) => {
                self.reached.store(true, Ordering::Relaxed);
                let wait = resp
                    .header("Retry-After")
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .map(|s| Duration::from_secs_f64(s.clamp(0.0, 60.0)));
                let body = resp.into_string().unwrap_or_default();
                let transient = code == 429 || code >= 500;
                Err(Failure { wait, ..Failure::new(transient, format!("HTTP {code}: {}", excerpt(&body))) })
            }
            Err(e) => {
                let no_connection =
                    matches!(e.kind(), ureq::ErrorKind::ConnectionFailed | ureq::ErrorKind::Dns);
                Err(Failure { no_connection, ..Failure::new(true, e.to_string()) })
            }
        }
    }
}

fn excerpt(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl LlmBackend for OpenAiChat {
    fn complete(&self, req: &ChatRequest) -> Result<Reply> {
        let body = self.body(req);
        let mut attempt = 0u32;
        loop {
            match self.once(&body) {
                Ok(r) => return Ok(r),
                Err(Failure { transient, message: msg, wait, no_connection }) => {
                    if !transient || attempt >= self.retries {
                        let tries = if transient {
                            format!(" after {}", crate::wording::plural(u64::from(attempt), "retry"))
                        } else {
                            String::new()
                        };
                        if no_connection && !self.reached.load(Ordering::Relaxed) {
                            return Err(Error::LlmUnreachable(format!(
                                "{}{tries}: {msg} (is the server running at that URL?)",
                                self.url
                            )));
                        }
                        return Err(Error::Llm(format!("{}{tries}: {msg}", self.url)));
                    }
                    let backoff =
                        self.backoff.saturating_mul(1 << attempt.min(10)).min(Duration::from_secs(60));
                    std::thread::sleep(wait.unwrap_or(backoff));
                    self.retried.fetch_add(1, Ordering::Relaxed);
                    attempt += 1;
                }
            }
        }
    }

    fn id(&self) -> String {
        self.model.clone()
    }

    fn concurrency(&self) -> usize {
        self.concurrency
    }

    fn retries(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }
}
