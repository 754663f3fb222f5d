//! `POST /v1/chunk`: the request, the lanes that batch it, and the response records.
//!
//! A lane is one chunker spec (the server's, or the server's with a request's overrides)
//! with the embeddings mode asked: its chunker, built once, and its own batching queue, so
//! only requests that share a spec and a mode are batched together. Lanes are kept in a
//! bounded LRU cache (`cached_chunkers`); an evicted lane lives on until its last request is
//! answered. A batch is one call of the library's batch path
//! ([`crate::pipeline::chunk_texts`]: units, embedding, rules, chunk vectors; the model-error
//! policy inside), on a blocking thread.
//!
//! Records are the CLI's ([`crate::output::ChunkRecord`]: the same fields, in the same order,
//! with the same values; `start`/`end` are UTF-8 byte offsets), plus `embedding` when asked.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use serde::de::{Error as _, IntoDeserializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::embedding::{Encoding, Vector};
use super::error::ApiError;
use super::metrics::Metrics;
use super::queue::Queue;
use crate::chunkers::{Chunker, DocChunks};
use crate::corpus::Document;
use crate::embed::LongInput;
use crate::output::{contexts, ChunkRecord};
use crate::pipeline::{chunk_texts, EmbeddingMode, VectorPlan};
use crate::spec::{ChunkerSpec, MACHINE_FIELDS};
use crate::{Error, Result};

/// `POST /v1/chunk`. A chunker setting goes in `spec`; at the top level it is refused with a
/// word on where it goes ([`ChunkRequest::check_fields`]).
#[derive(Deserialize)]
pub(crate) struct ChunkRequest {
    pub documents: Vec<DocIn>,
    /// `"none"` (the default), or a mode of the library's [`EmbeddingMode`] by its name.
    #[serde(default)]
    pub embeddings: Vectors,
    #[serde(default)]
    pub encoding_format: Encoding,
    /// Flat chunker parameters over the server's spec, as `seamcut.Chunker(**params)` takes
    /// them (`{"max_tokens": 128, "hard_thr": 0.5}`).
    #[serde(default)]
    pub spec: Option<Map<String, Value>>,
    /// Any other field: refused.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl ChunkRequest {
    /// The request names only its own fields: a chunker setting at the top level
    /// (`max_tokens`) is refused with where it goes (`"spec": {"max_tokens": ...}`).
    ///
    /// # Errors
    /// The first unknown field.
    pub fn check_fields(&self) -> std::result::Result<(), ApiError> {
        let Some(k) = self.rest.keys().next() else { return Ok(()) };
        let own = "documents, embeddings, encoding_format, spec";
        let setting =
            ChunkerSpec::default().with_params(Map::from_iter([(k.clone(), self.rest[k].clone())])).is_ok();
        Err(ApiError::invalid(if setting {
            format!("{k} is a chunker setting: give it in \"spec\" ({{\"spec\": {{\"{k}\": ...}}}}); a request's own fields are {own}")
        } else {
            format!("unknown field {k:?}; a request's fields are {own}")
        }))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DocIn {
    /// Default: the document's position in the request, from 0.
    #[serde(default)]
    pub id: Option<String>,
    pub text: String,
}

/// The `embeddings` field: `none`, or a library mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Vectors(pub Option<EmbeddingMode>);

impl<'de> Deserialize<'de> for Vectors {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match Option::<String>::deserialize(d)?.as_deref() {
            None | Some("none") => Ok(Self(None)),
            Some(s) => EmbeddingMode::deserialize(s.into_deserializer()).map(|m| Self(Some(m))).map_err(
                // The field's name is the caller's to add (the request's path, `embeddings: ...`).
                |e: serde::de::value::Error| D::Error::custom(format!("{e}, or `none`")),
            ),
        }
    }
}

/// One spec and mode: its chunker, how its vectors are made, and its queue.
pub(crate) struct Lane {
    pub chunker: Arc<dyn Chunker>,
    queue: Queue<Vec<String>, Vec<Result<DocChunks>>>,
}

impl Lane {
    /// Chunk one request's texts in the lane's next batch; `None` if the work was lost.
    pub async fn chunk(&self, texts: Vec<String>) -> Option<Vec<Result<DocChunks>>> {
        // About 4 bytes a token: a chunking batch holds about as much text as an embedding
        // batch holds tokens, without counting tokens twice.
        let cost = texts.iter().map(|t| t.len() / 4 + 1).sum();
        self.queue.submit(texts, cost).await
    }
}

/// The lanes, by spec and mode.
pub(crate) struct Lanes {
    base: ChunkerSpec,
    long: LongInput,
    budget: usize,
    metrics: Arc<Metrics>,
    cache: Mutex<lru::LruCache<String, Arc<Lane>>>,
}

impl Lanes {
    pub fn new(
        base: ChunkerSpec,
        long: LongInput,
        budget: usize,
        size: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        let size = NonZeroUsize::new(size).unwrap_or(NonZeroUsize::MIN);
        Self { base, long, budget, metrics, cache: Mutex::new(lru::LruCache::new(size)) }
    }

    /// The spec a request's overrides make: the server's spec with them applied. Fields that
    /// name the machine's files, hosts or hardware are refused, and so is a switch to an LLM
    /// chunker the server was not started with (it would ask the server's LLM).
    pub fn spec_for(
        &self,
        overrides: Option<Map<String, Value>>,
    ) -> std::result::Result<ChunkerSpec, ApiError> {
        let Some(params) = overrides else { return Ok(self.base.clone()) };
        if let Some(k) = params.keys().find(|k| MACHINE_FIELDS.contains(&k.as_str())) {
            return Err(ApiError::invalid(format!(
                "spec: {k} is the server's to choose (not settable per request: {})",
                MACHINE_FIELDS.join(", ")
            )));
        }
        let spec = self.base.with_request_params(params)?;
        if spec.chunker.is_llm() && spec.chunker != self.base.chunker {
            return Err(ApiError::invalid(format!(
                "spec: chunker {} asks an LLM; this server runs {} (start one with --chunker {})",
                spec.chunker, self.base.chunker, spec.chunker
            )));
        }
        Ok(spec)
    }

    /// The lane for `spec` and `mode`, built on first use (on a blocking thread: building an
    /// embedding chunker loads its tokenizer and calibration).
    ///
    /// # Errors
    /// The library's, for a spec or mode that does not make a chunker (a configuration or
    /// setting error: 422 to a client, a usage error at start-up).
    pub async fn lane(&self, spec: ChunkerSpec, mode: Option<EmbeddingMode>) -> Result<Arc<Lane>> {
        let key = format!("{}\u{0}{mode:?}", serde_json::to_string(&spec).unwrap_or_default());
        if let Some(l) = self.cache.lock().map_err(|_| poisoned())?.get(&key) {
            return Ok(l.clone());
        }
        let long = self.long;
        let (chunker, plan) = tokio::task::spawn_blocking(move || -> Result<_> {
            let chunker: Arc<dyn Chunker> = spec.build()?.into();
            // As for a corpus job: the chunker's own model, else the spec's; its late pass.
            let plan = VectorPlan::for_spec(&spec, chunker.as_ref(), mode, long)?;
            Ok((chunker, plan))
        })
        .await
        .map_err(|_| Error::Internal("building the chunker panicked".into()))??;
        let c = chunker.clone();
        let queue = Queue::start(self.budget, self.metrics.queue("chunk"), move |jobs: Vec<Vec<String>>| {
            let sizes: Vec<usize> = jobs.iter().map(Vec::len).collect();
            let texts: Vec<&str> = jobs.iter().flatten().map(String::as_str).collect();
            let mut results = chunk_texts(c.as_ref(), &texts, plan.as_ref()).into_iter();
            sizes.into_iter().map(|n| results.by_ref().take(n).collect()).collect()
        });
        let lane = Arc::new(Lane { chunker, queue });
        let mut cache = self.cache.lock().map_err(|_| poisoned())?;
        // Another request may have built the same lane meanwhile: one queue per spec.
        if let Some(l) = cache.get(&key) {
            return Ok(l.clone());
        }
        cache.put(key, lane.clone());
        Ok(lane)
    }
}

fn poisoned() -> Error {
    Error::Internal("the chunker cache was poisoned by a panic".into())
}

/// The response: every chunk as the CLI writes it, documents in request order.
#[derive(Serialize)]
pub(crate) struct ChunkResponse<'a> {
    pub model: &'a str,
    /// The chunker's name (`maxmin`), the same whatever its settings.
    pub chunker: &'static str,
    /// Its settings line: model, rule parameters, calibration (as `/info` gives it).
    pub chunker_description: String,
    pub chunks: Vec<ChunkOut<'a>>,
    /// Documents chunked by sentence packing after a model error (`on_model_error`).
    pub fallbacks: Vec<Fallback<'a>>,
    pub usage: ChunkUsage,
}

#[derive(Serialize)]
pub(crate) struct ChunkOut<'a> {
    #[serde(flatten)]
    pub record: ChunkRecord<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vector<'a>>,
}

#[derive(Serialize)]
pub(crate) struct Fallback<'a> {
    pub doc_id: &'a str,
    pub error: &'a str,
}

#[derive(Serialize)]
pub(crate) struct ChunkUsage {
    pub documents: usize,
    pub chunks: usize,
    pub tokens: usize,
}

/// The request's documents as the library's, ids filled in.
pub(crate) fn documents(docs: Vec<DocIn>) -> Vec<Document> {
    docs.into_iter()
        .enumerate()
        .map(|(i, d)| Document::new(d.id.unwrap_or_else(|| i.to_string()), d.text))
        .collect()
}

/// Each document's chunk contexts (its title and the headings above each chunk), as the
/// CLI's records carry them; none for a failed document.
pub(crate) fn contexts_of(docs: &[Document], results: &[Result<DocChunks>]) -> Vec<Vec<String>> {
    docs.iter()
        .zip(results)
        .map(|(d, r)| r.as_ref().map(|c| contexts(d, &c.spans)).unwrap_or_default())
        .collect()
}

/// Build the response from each document's result and contexts; the first failed document
/// fails the request (500, naming it).
pub(crate) fn response<'a>(
    model: &'a str,
    chunker: &dyn Chunker,
    docs: &'a [Document],
    results: &'a [Result<DocChunks>],
    contexts: &'a [Vec<String>],
    encoding: Encoding,
) -> std::result::Result<ChunkResponse<'a>, ApiError> {
    let mut chunks = Vec::new();
    let mut fallbacks = Vec::new();
    let mut tokens = 0;
    for ((doc, r), ctx) in docs.iter().zip(results).zip(contexts) {
        let c = r.as_ref().map_err(|e| ApiError::internal(format!("document {:?}: {e}", doc.id)))?;
        if let Some(why) = &c.fallback {
            fallbacks.push(Fallback { doc_id: &doc.id, error: why });
        }
        let dim = c.vectors.as_ref().map_or(0, |v| v.len() / c.spans.len().max(1));
        for (index, (span, context)) in c.spans.iter().zip(ctx).enumerate() {
            tokens += span.tokens;
            let embedding =
                c.vectors.as_ref().map(|v| Vector::new(&v[index * dim..(index + 1) * dim], encoding));
            let record = ChunkRecord { doc, meta_fields: &[], index, span, context };
            chunks.push(ChunkOut { record, embedding });
        }
    }
    Ok(ChunkResponse {
        model,
        chunker: chunker.kind().name(),
        chunker_description: chunker.describe(),
        usage: ChunkUsage { documents: docs.len(), chunks: chunks.len(), tokens },
        chunks,
        fallbacks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunkers::ChunkerKind;

    #[test]
    fn the_embeddings_field_takes_none_or_a_library_mode() {
        let v = |s: &str| serde_json::from_str::<Vectors>(s);
        assert_eq!(v("\"none\"").unwrap(), Vectors(None));
        assert_eq!(v("null").unwrap(), Vectors(None));
        assert_eq!(v("\"mean\"").unwrap(), Vectors(Some(EmbeddingMode::Mean)));
        assert_eq!(v("\"reembed\"").unwrap(), Vectors(Some(EmbeddingMode::Reembed)));
        let e = v("\"meen\"").unwrap_err().to_string();
        assert!(e.contains("meen") && e.contains("reembed") && e.contains("none"), "{e}");
    }

    #[test]
    fn requests_cannot_name_the_machines_files_hosts_or_hardware() {
        let lanes = Lanes::new(
            ChunkerSpec::new(ChunkerKind::Maxmin),
            LongInput::Truncate,
            1000,
            2,
            Arc::new(Metrics::new()),
        );
        let o = |j: &str| serde_json::from_str::<Map<String, Value>>(j).unwrap();
        for bad in [
            r#"{"model": "/etc"}"#,
            r#"{"sizer": "/tmp/t.json"}"#,
            r#"{"llm": {"url": "http://x"}}"#,
            r#"{"device": "cuda"}"#,
            r#"{"chunker": "lumber"}"#,
        ] {
            assert_eq!(lanes.spec_for(Some(o(bad))).unwrap_err().status.as_u16(), 422, "{bad}");
        }
        let s = lanes.spec_for(Some(o(r#"{"max_tokens": 64, "hard_thr": 0.5}"#))).unwrap();
        assert_eq!((s.chunker, s.max_tokens), (ChunkerKind::Maxmin, crate::cap::Cap::new(64)));
        assert_eq!(lanes.spec_for(Some(o(r#"{"max_tokenz": 64}"#))).unwrap_err().status.as_u16(), 422);
    }
}
