//! Chunks as Parquet: the JSONL fields as columns, carried metadata fields as string
//! columns, and embeddings as a fixed-size list of float32.
//!
//! Rows are buffered and handed to the Parquet writer in record batches of exactly
//! [`BATCH_ROWS`] rows (row groups of [`ROW_GROUP_ROWS`]), whatever the sizes of the
//! documents given to [`ParquetSink::write_doc`]; the file's bytes therefore depend only on
//! the sequence of chunks, which is what makes a resumed job's file equal an uninterrupted
//! one's. Memory stays bounded by one row group.

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::ChunkSink;
use crate::chunk::ChunkSpan;
use crate::corpus::Document;
use crate::{Error, Result};

/// Rows per record batch handed to the writer.
pub const BATCH_ROWS: usize = 4096;
/// Rows per row group (a multiple of [`BATCH_ROWS`]).
pub const ROW_GROUP_ROWS: usize = 4 * BATCH_ROWS;

/// The schema of a chunk file: `doc_id, index, start, end, text, tokens, sentences`, the
/// metadata fields (strings; JSON text for non-string values), and `embedding` when `dim` is
/// given.
#[must_use]
pub fn schema(meta_fields: &[String], dim: Option<usize>) -> SchemaRef {
    let mut fields = vec![
        Field::new("doc_id", DataType::Utf8, false),
        Field::new("index", DataType::Int64, false),
        Field::new("start", DataType::Int64, false),
        Field::new("end", DataType::Int64, false),
        Field::new("text", DataType::Utf8, false),
        Field::new("tokens", DataType::Int64, false),
        Field::new("sentences", DataType::Int64, false),
    ];
    fields.extend(meta_fields.iter().map(|f| Field::new(f, DataType::Utf8, true)));
    if let Some(d) = dim {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        fields.push(Field::new("embedding", DataType::FixedSizeList(item, d as i32), false));
    }
    Arc::new(Schema::new(fields))
}

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
    schema: SchemaRef,
    dim: Option<usize>,
    rows: usize,
    doc_id: StringBuilder,
    ints: [Int64Builder; 5],
    text: StringBuilder,
    meta: Vec<StringBuilder>,
    embedding: Option<FixedSizeListBuilder<Float32Builder>>,
}

impl ParquetSink {
    /// A sink writing to `out`.
    ///
    /// # Errors
    /// If the writer cannot be created.
    pub fn new(out: Box<dyn Write + Send>, meta_fields: &[String], dim: Option<usize>) -> Result<Self> {
        let schema = schema(meta_fields, dim);
        Ok(Self {
            out: Rebatcher::new(out, schema.clone())?,
            schema,
            dim,
            rows: 0,
            doc_id: StringBuilder::new(),
            ints: Default::default(),
            text: StringBuilder::new(),
            meta: meta_fields.iter().map(|_| StringBuilder::new()).collect(),
            embedding: dim.map(|d| {
                FixedSizeListBuilder::new(Float32Builder::with_capacity(BATCH_ROWS * d), d as i32)
                    .with_field(Arc::new(Field::new("item", DataType::Float32, false)))
            }),
        })
    }

    fn flush_batch(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut cols: Vec<ArrayRef> = vec![Arc::new(self.doc_id.finish())];
        let [index, start, end, tokens, sentences] = &mut self.ints;
        cols.push(Arc::new(index.finish()));
        cols.push(Arc::new(start.finish()));
        cols.push(Arc::new(end.finish()));
        cols.push(Arc::new(self.text.finish()));
        cols.push(Arc::new(tokens.finish()));
        cols.push(Arc::new(sentences.finish()));
        cols.extend(self.meta.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
        if let Some(e) = &mut self.embedding {
            cols.push(Arc::new(e.finish()));
        }
        let batch =
            RecordBatch::try_new(self.schema.clone(), cols).map_err(|e| Error::Internal(e.to_string()))?;
        self.rows = 0;
        self.out.push(batch)
    }
}

impl ChunkSink for ParquetSink {
    fn write_doc(&mut self, doc: &Document, chunks: &[ChunkSpan], embeddings: Option<&[f32]>) -> Result<()> {
        if self.dim.is_some() && embeddings.is_none() && !chunks.is_empty() {
            return Err(Error::Internal(format!("no embeddings for {}", doc.id)));
        }
        let meta: Vec<Option<String>> = doc
            .meta
            .iter()
            .map(|v| match v {
                serde_json::Value::Null => None,
                serde_json::Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            })
            .collect();
        for (i, c) in chunks.iter().enumerate() {
            self.doc_id.append_value(&doc.id);
            for (b, v) in self.ints.iter_mut().zip([i, c.start, c.end, c.tokens, c.sentences]) {
                b.append_value(v as i64);
            }
            self.text.append_value(&doc.text[c.start..c.end]);
            for (b, v) in self.meta.iter_mut().zip(meta.iter().chain(std::iter::repeat(&None))) {
                b.append_option(v.as_deref());
            }
            if let (Some(b), Some(d), Some(e)) = (&mut self.embedding, self.dim, embeddings) {
                b.values().append_slice(&e[i * d..(i + 1) * d]);
                b.append(true);
            }
            self.rows += 1;
            if self.rows == BATCH_ROWS {
                self.flush_batch()?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.flush_batch()?;
        self.out.finish()
    }
}
