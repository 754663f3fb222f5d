//! A stand-in for the library's batch path (`pipeline::chunk_texts`, `VectorPlan`,
//! `chunkers::DocChunks`) until it lands on main: spans through `Chunker::chunk_batch`, no
//! chunk vectors. Deleted at the merge.

use std::sync::Arc;

use crate::chunk::ChunkSpan;
use crate::chunkers::Chunker;
use crate::embed::{Embedder, LongInput};
use crate::pipeline::EmbeddingMode;
use crate::{Error, Result};

pub(crate) struct DocChunks {
    pub spans: Vec<ChunkSpan>,
    pub vectors: Option<Vec<f32>>,
    pub fallback: Option<String>,
}

pub(crate) struct VectorPlan;

impl VectorPlan {
    pub fn new(
        _chunker: &dyn Chunker,
        mode: Option<EmbeddingMode>,
        _model: Option<Arc<dyn Embedder>>,
        _long: LongInput,
    ) -> Result<Option<Self>> {
        match mode {
            None => Ok(None),
            Some(_) => Err(Error::Config("embeddings: chunk vectors are not served yet".into())),
        }
    }
}

pub(crate) fn chunk_texts(
    chunker: &dyn Chunker,
    texts: &[&str],
    _plan: Option<&VectorPlan>,
) -> Vec<Result<DocChunks>> {
    chunker
        .chunk_batch(texts)
        .into_iter()
        .map(|r| r.map(|spans| DocChunks { spans, vectors: None, fallback: None }))
        .collect()
}
