//! `POST /v1/embeddings` (OpenAI's shape) and `POST /embed` (text-embeddings-inference's):
//! the requests read into texts, and the batch work their queue runs.
//!
//! A handler tokenizes its texts (on a blocking thread) so that its cost in tokens is exact,
//! then queues them; the batch hands the ids on to [`embed::prepare_known`], so no text is
//! tokenized twice, and [`embed::run`] embeds every text of the batch in token-budget passes.
//! Vectors are L2-normalised and do not depend on their batch mates, so batching across
//! requests changes no answer. If a batch fails, each of its requests is run again alone, so
//! that a model error costs only the request that causes it.

use std::time::Instant;

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use super::error::ApiError;
use super::metrics::Metrics;
use crate::embed::{self, EmbedOptions, Embedder};
use crate::Result;

/// One request's texts and their token ids (the tokenizer's, as [`embed::prepare_known`]
/// takes them).
pub(crate) struct EmbedJob {
    pub texts: Vec<String>,
    pub ids: Vec<Vec<u32>>,
}

impl EmbedJob {
    /// Tokenize `texts` for `model`.
    pub fn new(model: &dyn Embedder, texts: Vec<String>) -> Self {
        let ids = texts.iter().map(|t| model.tokenizer().ids(t)).collect();
        Self { texts, ids }
    }

    /// The job's cost against `--max-batch-tokens`: its tokens as the model will see them,
    /// each text cut at the window.
    pub fn cost(&self, model: &dyn Embedder) -> usize {
        let (pre, post) = model.special_ids();
        let window = model.max_tokens().unwrap_or(usize::MAX);
        self.ids.iter().map(|ids| (ids.len() + pre.len() + post.len()).min(window)).sum()
    }
}

/// One request's answer: `texts × dim` floats, and the tokens it was billed.
pub(crate) struct EmbedOut {
    pub data: Vec<f32>,
    /// Floats per vector.
    pub dim: usize,
    pub tokens: usize,
}

/// Embed a batch of requests: one answer per request, in order.
pub(crate) fn run_batch(
    model: &dyn Embedder,
    opts: EmbedOptions,
    metrics: &Metrics,
    jobs: Vec<EmbedJob>,
) -> Vec<Result<EmbedOut>> {
    let sizes: Vec<usize> = jobs.iter().map(|j| j.texts.len()).collect();
    let (texts, ids): (Vec<Vec<String>>, Vec<Vec<Vec<u32>>>) =
        jobs.into_iter().map(|j| (j.texts, j.ids)).unzip();
    let all: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
    let known: Vec<Option<Vec<u32>>> = ids.into_iter().flatten().map(Some).collect();
    let t0 = Instant::now();
    let prepared = embed::prepare_known(model, &all, known, opts);
    let billed = prepared.text_tokens();
    let (emb, stats) = match embed::run(model, &prepared) {
        Ok(r) => r,
        Err(e) if sizes.len() == 1 => return vec![Err(e)],
        // Which request failed is not known: each alone, so only it fails.
        Err(_) => {
            return texts
                .iter()
                .map(|t| {
                    let t: Vec<&str> = t.iter().map(String::as_str).collect();
                    let t0 = Instant::now();
                    let (e, s) = embed::embed_texts(model, &t, opts)?;
                    metrics.embedded("embed", s.texts, s.tokens, t0.elapsed().as_secs_f64());
                    Ok(EmbedOut { data: e.data, dim: e.dim, tokens: s.tokens })
                })
                .collect()
        }
    };
    metrics.embedded("embed", stats.texts, stats.tokens, t0.elapsed().as_secs_f64());
    let dim = emb.dim;
    let mut out = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for n in sizes {
        out.push(Ok(EmbedOut {
            data: emb.data[at * dim..(at + n) * dim].to_vec(),
            dim,
            tokens: billed[at..at + n].iter().sum(),
        }));
        at += n;
    }
    out
}

/// How vectors are written: JSON numbers, or base64 of little-endian float32 (OpenAI's
/// `encoding_format`; its Python client asks for base64 by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Encoding {
    #[default]
    Float,
    Base64,
}

/// One vector as a response writes it.
pub(crate) enum Vector<'a> {
    Float(&'a [f32]),
    Base64(String),
}

impl<'a> Vector<'a> {
    pub fn new(row: &'a [f32], encoding: Encoding) -> Self {
        match encoding {
            Encoding::Float => Self::Float(row),
            Encoding::Base64 => {
                let bytes: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
                Self::Base64(base64::engine::general_purpose::STANDARD.encode(bytes))
            }
        }
    }
}

impl serde::Serialize for Vector<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Float(v) => v.serialize(s),
            Self::Base64(b) => s.serialize_str(b),
        }
    }
}

/// `POST /v1/embeddings`.
#[derive(Deserialize)]
pub(crate) struct OpenAiRequest {
    pub input: Value,
    /// The served model's name (as `/info` and the answers give it, or its directory's
    /// name); another is 404. Empty or absent: the served model.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub encoding_format: Encoding,
    /// Keep the first this many dimensions of each vector, then normalise (Matryoshka models).
    #[serde(default)]
    pub dimensions: Option<usize>,
}

/// `POST /embed`.
#[derive(Deserialize)]
pub(crate) struct TeiRequest {
    pub inputs: Value,
    /// Vectors are always L2-normalised: `false` is refused.
    #[serde(default)]
    pub normalize: Option<bool>,
    /// Accepted and ignored: inputs past the window are cut (`--long`), as with `true`.
    #[serde(default)]
    #[allow(dead_code)]
    pub truncate: Option<bool>,
    /// One of the model's prompts, by name (`config_sentence_transformers.json`), put in front
    /// of every input; absent: the model's default prompt, if it has one.
    #[serde(default)]
    pub prompt_name: Option<String>,
    /// As OpenAI's `dimensions`.
    #[serde(default)]
    pub dimensions: Option<usize>,
}

/// `POST /tokenize`.
#[derive(Deserialize)]
pub(crate) struct TokenizeRequest {
    pub inputs: Value,
    /// The model's special tokens around each input (`[CLS]` … `[SEP]`), as TEI's default.
    #[serde(default = "yes")]
    pub add_special_tokens: bool,
    /// As `/embed`'s: the prompt's tokens are counted, as the model would read them.
    #[serde(default)]
    pub prompt_name: Option<String>,
}

fn yes() -> bool {
    true
}

/// `POST /embed_all`.
#[derive(Deserialize)]
pub(crate) struct EmbedAllRequest {
    pub inputs: Value,
    /// Cut an input past the model's window there; otherwise such an input is 413 (TEI's rule).
    #[serde(default)]
    pub truncate: Option<bool>,
    #[serde(default)]
    pub prompt_name: Option<String>,
}

/// The texts of `input` (a string or a list of strings), checked: not empty, none empty,
/// at most `max_inputs`.
pub(crate) fn texts_of(
    input: Value,
    field: &str,
    max_inputs: usize,
) -> std::result::Result<Vec<String>, ApiError> {
    let texts = match input {
        Value::String(s) => vec![s],
        Value::Array(items) => {
            if items.len() > max_inputs {
                return Err(ApiError::too_large(format!(
                    "{} inputs in one request; the limit is {max_inputs} (--max-inputs)",
                    items.len()
                )));
            }
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s),
                    Value::Number(_) | Value::Array(_) => Err(ApiError::invalid(format!(
                        "{field}[{i}]: token ids are not accepted, only text (LangChain's OpenAIEmbeddings: \
                         pass check_embedding_ctx_length=False)"
                    ))),
                    other => Err(ApiError::invalid(format!(
                        "{field}[{i}]: expected a string, got {}",
                        kind(&other)
                    ))),
                })
                .collect::<std::result::Result<_, _>>()?
        }
        other => {
            return Err(ApiError::invalid(format!(
                "{field}: expected a string or a list of strings, got {}",
                kind(&other)
            )))
        }
    };
    if texts.is_empty() {
        return Err(ApiError::invalid(format!("{field} is empty")));
    }
    if let Some(i) = texts.iter().position(String::is_empty) {
        return Err(ApiError::invalid(format!("{field}[{i}] is an empty string")));
    }
    Ok(texts)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_a_string_or_a_list_of_non_empty_strings() {
        let t = |v: &str| texts_of(serde_json::from_str(v).unwrap(), "input", 3);
        assert_eq!(t("\"a\"").unwrap(), vec!["a"]);
        assert_eq!(t("[\"a\", \"b\"]").unwrap(), vec!["a", "b"]);
        let status = |v: &str| t(v).unwrap_err().status.as_u16();
        assert_eq!(status("[]"), 422);
        assert_eq!(status("\"\""), 422);
        assert_eq!(status("[\"a\", \"\"]"), 422);
        assert_eq!(status("[[1, 2]]"), 422);
        assert_eq!(status("5"), 422);
        assert_eq!(status("[\"a\", \"b\", \"c\", \"d\"]"), 413);
        assert!(t("[[1, 2]]").unwrap_err().message.contains("check_embedding_ctx_length"));
    }

    #[test]
    fn base64_vectors_are_little_endian_float32() {
        let Vector::Base64(b) = Vector::new(&[1.0, -0.5], Encoding::Base64) else { panic!() };
        let bytes = base64::engine::general_purpose::STANDARD.decode(b).unwrap();
        assert_eq!(bytes, [1.0f32.to_le_bytes(), (-0.5f32).to_le_bytes()].concat());
    }
}
