//! The handlers: each reads its request under the limits ([`super::limits::read_json`]),
//! checks it, hands the work to a queue and writes the answer. No chunking or embedding
//! decision is made here.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::chunking::{contexts_of, documents, response, ChunkRequest};
use super::embedding::{
    texts_of, EmbedAllRequest, EmbedJob, EmbedOut, Encoding, OpenAiRequest, TeiRequest, TokenizeRequest,
    Vector,
};
use super::error::ApiError;
use super::limits::read_json;
use super::AppState;
use crate::embed::inspect;
use crate::embed::tuned::{PromptChoice, Role};

type Answer = Result<Response, ApiError>;

fn json<T: Serialize>(value: &T) -> Answer {
    let body =
        serde_json::to_vec(value).map_err(|e| ApiError::internal(format!("cannot write the answer: {e}")))?;
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body)
        .into_response())
}

/// `GET /health`: the server is up and answering (no key needed, for load balancers).
pub(crate) async fn health() -> Answer {
    json(&serde_json::json!({"status": "ok"}))
}

/// `GET /info`: the model, its dimension and window, the chunker spec, the limits.
pub(crate) async fn info(State(st): State<Arc<AppState>>) -> Answer {
    let c = &st.config;
    json(&serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "model": c.spec.model,
        "served_model_names": st.model_names(),
        "model_description": st.model.describe(),
        "dim": st.model.dim(),
        "max_positions": st.model.max_tokens(),
        "chunker": c.spec,
        "chunker_description": st.chunker_description,
        "max_batch_tokens": c.max_batch_tokens,
        "max_concurrent_requests": c.limits.max_concurrent_requests,
        "max_body_bytes": c.limits.max_body_bytes,
        "max_inputs": c.limits.max_inputs,
        "request_timeout_s": c.limits.request_timeout.as_secs_f64(),
        "auth": st.key_digest.is_some(),
    }))
}

/// `GET /v1/models`, as OpenAI's API: the names the model is served under.
pub(crate) async fn models(State(st): State<Arc<AppState>>) -> Answer {
    let data: Vec<serde_json::Value> = st
        .model_names()
        .iter()
        .map(|id| serde_json::json!({"id": id, "object": "model", "created": st.started, "owned_by": "seamcut"}))
        .collect();
    json(&serde_json::json!({"object": "list", "data": data}))
}

/// `GET /metrics`: Prometheus (OpenMetrics) text.
pub(crate) async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let ct = HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8");
    (StatusCode::OK, [(header::CONTENT_TYPE, ct)], st.metrics.encode()).into_response()
}

/// Tokenize (on a blocking thread), queue, wait.
/// Embed one request's texts through the shared queue, with the prompt it names (else the
/// model's default prompt) in front of each, and its vectors cut to `dims`
/// ([`crate::embed::tuned`]: the CLI's `--prompt-name` and `--dims` give the same vectors).
async fn embed(
    st: &AppState,
    texts: Vec<String>,
    prompt_name: Option<&str>,
    dims: Option<usize>,
) -> Result<EmbedOut, ApiError> {
    let dim = st.model.dim();
    let spec = &st.config.spec;
    let dims = dims.or(spec.dims);
    if dims.is_some_and(|d| d == 0 || d > dim) {
        return Err(ApiError::invalid(format!(
            "dimensions: {} is not between 1 and this model's {dim}",
            dims.unwrap_or(0)
        )));
    }
    let texts = with_prompt(st, texts, prompt_name)?;
    let mut out = embed_texts(st, texts).await?;
    if let Some(d) = dims.filter(|&d| d != dim) {
        out.data = crate::embed::tuned::truncate_rows(&out.data, dim, d);
        out.dim = d;
    }
    Ok(out)
}

/// `texts` with the prompt in front of each: the request's (by name), else the server's
/// (`seamcut serve --prompt-name`), else the model's default, else none.
fn with_prompt(
    st: &AppState,
    texts: Vec<String>,
    prompt_name: Option<&str>,
) -> Result<Vec<String>, ApiError> {
    let spec = &st.config.spec;
    let choice = match prompt_name {
        Some(n) => PromptChoice::Name(n.to_string()),
        None => PromptChoice::from_settings(spec.prompt_name.as_deref(), spec.prompt.as_deref())?,
    };
    Ok(match st.model.prompts().resolve(&choice, Role::Plain)? {
        Some(p) => texts.iter().map(|t| crate::embed::tuned::prompted(Some(&p), t).into_owned()).collect(),
        None => texts,
    })
}

async fn embed_texts(st: &AppState, texts: Vec<String>) -> Result<EmbedOut, ApiError> {
    let model = st.model.clone();
    let (job, cost) = tokio::task::spawn_blocking(move || {
        let job = EmbedJob::new(model.as_ref(), texts);
        let cost = job.cost(model.as_ref());
        (job, cost)
    })
    .await
    .map_err(|_| ApiError::internal("tokenizing panicked"))?;
    let out = st
        .embed_queue
        .submit(job, cost)
        .await
        .ok_or_else(|| ApiError::internal("the embedding batch was lost"))?;
    Ok(out?)
}

#[derive(Serialize)]
struct OpenAiResponse<'a> {
    object: &'static str,
    data: Vec<OpenAiItem<'a>>,
    model: &'a str,
    usage: OpenAiUsage,
}

#[derive(Serialize)]
struct OpenAiItem<'a> {
    object: &'static str,
    index: usize,
    embedding: Vector<'a>,
}

#[derive(Serialize)]
struct OpenAiUsage {
    prompt_tokens: usize,
    total_tokens: usize,
}

/// `POST /v1/embeddings`, as OpenAI's API: `{"input": str | [str], "model", "encoding_format"}`.
pub(crate) async fn openai_embeddings(State(st): State<Arc<AppState>>, req: Request) -> Answer {
    let r: OpenAiRequest = read_json(&st, req).await?;
    if let Some(asked) = r.model.as_deref().filter(|m| !st.serves(m)) {
        return Err(ApiError::no_such_model(asked, &st.model_names()));
    }
    let texts = texts_of(r.input, "input", st.config.limits.max_inputs)?;
    let out = embed(&st, texts, None, r.dimensions).await?;
    let dim = out.dim;
    let data = out
        .data
        .chunks_exact(dim)
        .enumerate()
        .map(|(index, row)| OpenAiItem {
            object: "embedding",
            index,
            embedding: Vector::new(row, r.encoding_format),
        })
        .collect();
    json(&OpenAiResponse {
        object: "list",
        data,
        model: st.model_name(),
        usage: OpenAiUsage { prompt_tokens: out.tokens, total_tokens: out.tokens },
    })
}

/// `POST /embed`, as text-embeddings-inference: `{"inputs": str | [str]}` → `[[f32]]`.
pub(crate) async fn tei_embed(State(st): State<Arc<AppState>>, req: Request) -> Answer {
    let r: TeiRequest = read_json(&st, req).await?;
    if r.normalize == Some(false) {
        return Err(ApiError::invalid("normalize: seamcut's vectors are always L2-normalised"));
    }
    let texts = texts_of(r.inputs, "inputs", st.config.limits.max_inputs)?;
    let out = embed(&st, texts, r.prompt_name.as_deref(), r.dimensions).await?;
    let rows: Vec<&[f32]> = out.data.chunks_exact(out.dim).collect();
    json(&rows)
}

/// `POST /tokenize`, as text-embeddings-inference: `{"inputs": str | [str],
/// "add_special_tokens": true, "prompt_name"}` → per input, its tokens
/// (`{"id", "text", "special", "start", "stop"}`, byte offsets into the input as tokenized,
/// the prompt included), not cut at the window.
pub(crate) async fn tei_tokenize(State(st): State<Arc<AppState>>, req: Request) -> Answer {
    let r: TokenizeRequest = read_json(&st, req).await?;
    let texts = texts_of(r.inputs, "inputs", st.config.limits.max_inputs)?;
    let texts = with_prompt(&st, texts, r.prompt_name.as_deref())?;
    let (model, special) = (st.model.clone(), r.add_special_tokens);
    let tokens = tokio::task::spawn_blocking(move || {
        texts.iter().map(|t| inspect::tokens(model.as_ref(), t, special)).collect::<crate::Result<Vec<_>>>()
    })
    .await
    .map_err(|_| ApiError::internal("tokenizing panicked"))??;
    json(&tokens)
}

/// `POST /embed_all`, as text-embeddings-inference: `{"inputs": str | [str], "truncate",
/// "prompt_name"}` → per input, the final state of each of its tokens (special tokens
/// included, not pooled, not normalised), for a client that pools them itself. An input past
/// the model's window is 413 unless `"truncate": true` cuts it there.
pub(crate) async fn tei_embed_all(State(st): State<Arc<AppState>>, req: Request) -> Answer {
    let r: EmbedAllRequest = read_json(&st, req).await?;
    let texts = texts_of(r.inputs, "inputs", st.config.limits.max_inputs)?;
    let texts = with_prompt(&st, texts, r.prompt_name.as_deref())?;
    let (model, metrics) = (st.model.clone(), st.metrics.clone());
    let (truncate, budget) = (r.truncate.unwrap_or(false), st.config.max_batch_tokens);
    let blocks = tokio::task::spawn_blocking(move || -> Result<Vec<(Vec<f32>, usize)>, ApiError> {
        let (pre, post) = model.special_ids();
        let extra = pre.len() + post.len();
        let mut contents = Vec::with_capacity(texts.len());
        for (i, t) in texts.iter().enumerate() {
            let mut ids = model.content_ids(t);
            if let Some(room) = model.max_tokens().map(|w| w.saturating_sub(extra)).filter(|&r| ids.len() > r) {
                if !truncate {
                    return Err(ApiError::too_large(format!(
                        "inputs[{i}] is {} tokens, past the model's window of {} (send \"truncate\": true to cut it there)",
                        ids.len() + extra,
                        room + extra
                    )));
                }
                ids.truncate(room);
            }
            contents.push(ids);
        }
        let t0 = std::time::Instant::now();
        let states = inspect::token_states(model.as_ref(), &contents, budget)?;
        let lens: Vec<usize> = contents.iter().map(|c| c.len() + extra).collect();
        metrics.embedded("embed_all", lens.len(), lens.iter().sum(), t0.elapsed().as_secs_f64());
        Ok(states.into_iter().zip(lens).collect())
    })
    .await
    .map_err(|_| ApiError::internal("the token pass panicked"))??;
    let rows: Vec<Vec<&[f32]>> =
        blocks.iter().map(|(b, n)| b.chunks_exact((b.len() / n.max(&1)).max(1)).collect()).collect();
    json(&rows)
}

/// `POST /v1/chunk`: `{"documents": [{"id", "text"}], "embeddings", "encoding_format", "spec"}`.
pub(crate) async fn chunk(State(st): State<Arc<AppState>>, req: Request) -> Answer {
    let r: ChunkRequest = read_json(&st, req).await?;
    r.check_fields()?;
    let max = st.config.limits.max_inputs;
    if r.documents.is_empty() {
        return Err(ApiError::invalid("documents is empty"));
    }
    if r.documents.len() > max {
        return Err(ApiError::too_large(format!(
            "{} documents in one request; the limit is {max} (--max-inputs)",
            r.documents.len()
        )));
    }
    let spec = st.lanes.spec_for(r.spec)?;
    let lane = st.lanes.lane(spec, r.embeddings.0).await?;
    let docs = documents(r.documents);
    let texts: Vec<String> = docs.iter().map(|d| d.text.clone()).collect();
    let results = lane.chunk(texts).await.ok_or_else(|| ApiError::internal("the chunking batch was lost"))?;
    let contexts = contexts_of(&docs, &results);
    let encoding: Encoding = r.encoding_format;
    json(&response(st.model_name(), lane.chunker.as_ref(), &docs, &results, &contexts, encoding)?)
}
