//! Chunks as JSONL, one object per chunk, and their embeddings as raw float32.

use std::io::Write;

use super::{ChunkRecord, ChunkSink, JsonlWriter};
use crate::chunk::ChunkSpan;
use crate::corpus::Document;
use crate::{Error, Result};

/// Writes chunk records as JSONL; embeddings, when given, go to a second stream as
/// little-endian float32 rows (the data of a `.npy`, whose header the job writes once the
/// row count is known).
pub struct JsonlSink {
    out: JsonlWriter,
    embeddings: Option<std::io::BufWriter<Box<dyn Write + Send>>>,
    meta_fields: Vec<String>,
}

impl JsonlSink {
    #[must_use]
    pub fn new(
        out: Box<dyn Write + Send>,
        embeddings: Option<Box<dyn Write + Send>>,
        meta_fields: Vec<String>,
    ) -> Self {
        Self {
            out: JsonlWriter::new(out),
            embeddings: embeddings.map(|e| std::io::BufWriter::with_capacity(1 << 20, e)),
            meta_fields,
        }
    }
}

impl ChunkSink for JsonlSink {
    fn write_doc(&mut self, doc: &Document, chunks: &[ChunkSpan], embeddings: Option<&[f32]>) -> Result<()> {
        let contexts = super::contexts(doc, chunks);
        for (index, (span, context)) in chunks.iter().zip(&contexts).enumerate() {
            self.out.write(&ChunkRecord { doc, meta_fields: &self.meta_fields, index, span, context })?;
        }
        if let (Some(w), Some(e)) = (&mut self.embeddings, embeddings) {
            for v in e {
                w.write_all(&v.to_le_bytes()).map_err(Error::Write)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.out.flush()?;
        if let Some(w) = &mut self.embeddings {
            w.flush().map_err(Error::Write)?;
        }
        Ok(())
    }
}
