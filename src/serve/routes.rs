//! The handlers: each reads its request under the limits ([`super::limits::read_json`]),
//! checks it, hands the work to a queue and writes the answer. No chunking or embedding
//! decision is made here.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::chunking::{contexts_of, documents, response, ChunkRequest};
use super::embedding::{texts_of, EmbedJob, EmbedOut, Encoding, OpenAiRequest, TeiRequest, Vector};
use super::error::ApiError;
use super::limits::read_json;
use super::AppState;
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
    // The request's prompt, else the server's (`seamcut serve --prompt-name`), else the
    // model's default.
    let choice = match prompt_name {
        Some(n) => PromptChoice::Name(n.to_string()),
        None => PromptChoice::from_settings(spec.prompt_name.as_deref(), spec.prompt.as_deref())?,
    };
    let prompt = st.model.prompts().resolve(&choice, Role::Plain)?;
    let texts = match prompt {
        Some(p) => texts.iter().map(|t| crate::embed::tuned::prompted(Some(&p), t).into_owned()).collect(),
        None => texts,
    };
    let mut out = embed_texts(st, texts).await?;
    if let Some(d) = dims.filter(|&d| d != dim) {
        out.data = crate::embed::tuned::truncate_rows(&out.data, dim, d);
        out.dim = d;
    }
    Ok(out)
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
    let served = st.config.spec.model.as_str();
    if let Some(asked) = r.model.as_deref().filter(|m| !m.is_empty()) {
        let base = std::path::Path::new(served.trim_end_matches('/')).file_name().and_then(|n| n.to_str());
        if asked != served && Some(asked) != base {
            return Err(ApiError::no_such_model(asked, served));
        }
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
        model: &st.config.spec.model,
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

/// `POST /v1/chunk`: `{"documents": [{"id", "text"}], "embeddings", "encoding_format", "spec"}`.
pub(crate) async fn chunk(State(st): State<Arc<AppState>>, req: Request) -> Answer {
    let r: ChunkRequest = read_json(&st, req).await?;
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
    json(&response(&st.config.spec.model, lane.chunker.as_ref(), &docs, &results, &contexts, encoding)?)
}
