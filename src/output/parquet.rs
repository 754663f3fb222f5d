//! Chunks as Parquet: the JSONL fields as columns, carried metadata fields as string
//! columns, and embeddings as a fixed-size list of float32.
//!
//! Rows are buffered and handed to the Parquet writer in record batches of exactly
//! [`BATCH_ROWS`] rows (row groups of [`ROW_GROUP_ROWS`]), whatever the sizes of the
//! documents given to [`ParquetSink::write_doc`]; the file's bytes therefore depend only on
//! the sequence of chunks, which is what makes a resumed job's file equal an uninterrupted
//! one's. Memory stays bounded by one row group.

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::arrow::BatchBuilder;
use super::ChunkSink;
use crate::chunk::ChunkSpan;
use crate::corpus::Document;
use crate::{Error, Result};

pub use super::arrow::BATCH_ROWS;

/// Rows per row group (a multiple of [`BATCH_ROWS`]).
pub const ROW_GROUP_ROWS: usize = 4 * BATCH_ROWS;

pub use super::arrow::schema;

fn pq(e: parquet::errors::ParquetError) -> Error {
    Error::Write(std::io::Error::other(e.to_string()))
}

/// Hands record batches of any size to the Parquet writer as batches of exactly
/// [`BATCH_ROWS`] rows (the last may be shorter).
pub struct Rebatcher {
    writer: Option<ArrowWriter<Box<dyn Write + Send>>>,
    schema: SchemaRef,
    pending: Vec<RecordBatch>,
    rows: usize,
}

impl Rebatcher {
    /// A writer of `schema` to `out`.
    ///
    /// # Errors
    /// If the writer cannot be created.
    pub fn new(out: Box<dyn Write + Send>, schema: SchemaRef) -> Result<Self> {
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("seamcut {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props)).map_err(pq)?;
        Ok(Self { writer: Some(writer), schema, pending: Vec::new(), rows: 0 })
    }

    /// Queue a batch; full batches of [`BATCH_ROWS`] go to the writer.
    ///
    /// # Errors
    /// If the batch's schema differs or the writer fails.
    pub fn push(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows();
        self.pending.push(batch);
        if self.rows >= BATCH_ROWS {
            let all = arrow_select::concat::concat_batches(&self.schema, &self.pending)
                .map_err(|e| Error::Internal(format!("parquet batches do not fit the schema: {e}")))?;
            self.pending.clear();
            let mut at = 0;
            while all.num_rows() - at >= BATCH_ROWS {
                self.write(&all.slice(at, BATCH_ROWS))?;
                at += BATCH_ROWS;
            }
            self.rows = all.num_rows() - at;
            if self.rows > 0 {
                self.pending.push(all.slice(at, self.rows));
            }
        }
        Ok(())
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer
            .as_mut()
            .ok_or_else(|| Error::Internal("parquet writer used after finish".into()))?
            .write(batch)
            .map_err(pq)
    }

    /// Write what is pending and the footer.
    ///
    /// # Errors
    /// If the writer fails.
    pub fn finish(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            let all = arrow_select::concat::concat_batches(&self.schema, &self.pending)
                .map_err(|e| Error::Internal(e.to_string()))?;
            self.pending.clear();
            self.write(&all)?;
        }
        if let Some(w) = self.writer.take() {
            let mut inner = w.into_inner().map_err(pq)?;
            inner.flush().map_err(Error::Write)?;
        }
        Ok(())
    }
}

/// Copy Parquet files (all of one schema, as [`ParquetSink`] writes them) into one, in order,
/// through a [`Rebatcher`].
///
/// # Errors
/// If a part cannot be read or the output written.
pub fn merge(parts: &[std::path::PathBuf], out: Box<dyn Write + Send>, schema: SchemaRef) -> Result<()> {
    let mut w = Rebatcher::new(out, schema)?;
    for p in parts {
        let f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .and_then(|b| b.with_batch_size(BATCH_ROWS).build())
            .map_err(pq)?;
        for batch in reader {
            w.push(batch.map_err(|e| Error::Internal(e.to_string()))?)?;
        }
    }
    w.finish()
}

/// Buffers rows as Arrow builders and writes them in fixed-size batches.
pub struct ParquetSink {
    out: Rebatcher,
    rows: BatchBuilder,
}

impl ParquetSink {
    /// A sink writing to `out`.
    ///
    /// # Errors
    /// If the writer cannot be created.
    pub fn new(out: Box<dyn Write + Send>, columns: &super::Columns) -> Result<Self> {
        Ok(Self { out: Rebatcher::new(out, schema(columns))?, rows: BatchBuilder::new(columns) })
    }

    fn flush_batch(&mut self) -> Result<()> {
        match self.rows.finish()? {
            Some(batch) => self.out.push(batch),
            None => Ok(()),
        }
    }
}

impl ChunkSink for ParquetSink {
    fn write_doc(&mut self, doc: &Document, chunks: &[ChunkSpan], embeddings: Option<&[f32]>) -> Result<()> {
        self.rows.append_doc(doc, chunks, embeddings)?;
        if self.rows.rows() >= BATCH_ROWS {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.flush_batch()?;
        self.out.finish()
    }
}
