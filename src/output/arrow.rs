//! Chunks as Arrow record batches: the schema every columnar output shares (Parquet files,
//! tables handed to the Python bindings), the builder that fills it, and [`ArrowSink`],
//! which keeps the batches in memory for a caller.

use std::sync::Arc;

use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{ChunkSink, Columns, FieldKind, CHUNK_FIELDS, WINDOW_FIELDS};
use crate::chunk::ChunkSpan;
use crate::corpus::Document;
use crate::{Error, Result};

/// Rows per record batch: what an [`ArrowSink`] hands its caller and the Parquet writer is
/// given ([`super::parquet`]), so that batches (and files) depend only on the chunks.
pub const BATCH_ROWS: usize = 4096;

/// The schema of a chunk table: `id, doc_id, index, start, end, text, tokens, sentences, context`,
/// `window_start, window_end, window_text` with windows, the metadata fields (strings; JSON
/// text for non-string values), and `embedding` (a fixed-size list of float32) when `dim` is
/// given.
#[must_use]
pub fn schema(columns: &Columns) -> SchemaRef {
    let arrow_field = |f: &super::Field| {
        let ty = match f.kind {
            FieldKind::Text => DataType::Utf8,
            FieldKind::Count | FieldKind::Offset => DataType::Int64,
        };
        Field::new(f.name, ty, false)
    };
    let mut fields: Vec<Field> = CHUNK_FIELDS.iter().map(arrow_field).collect();
    if columns.windows {
        fields.extend(WINDOW_FIELDS.iter().map(arrow_field));
    }
    fields.extend(columns.meta_fields.iter().map(|f| Field::new(f, DataType::Utf8, true)));
    if let Some(d) = columns.dim {
        fields.push(Field::new("embedding", DataType::FixedSizeList(item_field(), d as i32), false));
    }
    Arc::new(Schema::new(fields))
}

fn item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Float32, false))
}

/// Fills the columns of [`schema`] one document at a time and hands them out as a record
/// batch whenever the caller asks.
pub struct BatchBuilder {
    schema: SchemaRef,
    dim: Option<usize>,
    rows: usize,
    id: StringBuilder,
    doc_id: StringBuilder,
    ints: [Int64Builder; 5],
    text: StringBuilder,
    context: StringBuilder,
    /// `window_start`, `window_end`, `window_text`, when the schema has windows.
    windows: Option<(Int64Builder, Int64Builder, StringBuilder)>,
    meta: Vec<StringBuilder>,
    embedding: Option<FixedSizeListBuilder<Float32Builder>>,
}

impl BatchBuilder {
    #[must_use]
    pub fn new(columns: &Columns) -> Self {
        let dim = columns.dim;
        Self {
            schema: schema(columns),
            dim,
            rows: 0,
            id: StringBuilder::new(),
            doc_id: StringBuilder::new(),
            ints: Default::default(),
            text: StringBuilder::new(),
            context: StringBuilder::new(),
            windows: columns.windows.then(Default::default),
            meta: columns.meta_fields.iter().map(|_| StringBuilder::new()).collect(),
            embedding: dim
                .map(|d| FixedSizeListBuilder::new(Float32Builder::new(), d as i32).with_field(item_field())),
        }
    }

    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows appended since the last [`Self::finish`].
    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Append chunk `index` of `doc` (its embedding, `dim` floats, when the schema has one).
    fn append(
        &mut self,
        doc: &Document,
        meta: &[Option<String>],
        index: usize,
        c: &ChunkSpan,
        context: &str,
        embedding: Option<&[f32]>,
    ) -> Result<()> {
        if let Some(b) = &mut self.embedding {
            let e = embedding.ok_or_else(|| Error::Internal(format!("no embeddings for {}", doc.id)))?;
            b.values().append_slice(e);
            b.append(true);
        }
        let text = &doc.text[c.start..c.end];
        let (start, end) = (doc.source_offset(c.start), doc.source_offset(c.end));
        self.id.append_value(crate::chunk::chunk_id(&doc.id, start, end, text));
        self.doc_id.append_value(&doc.id);
        for (b, v) in self.ints.iter_mut().zip([index, start, end, c.tokens, c.sentences]) {
            b.append_value(v as i64);
        }
        self.text.append_value(text);
        self.context.append_value(context);
        if let Some((start, end, text)) = &mut self.windows {
            let w = c.window_span();
            start.append_value(doc.source_offset(w.start) as i64);
            end.append_value(doc.source_offset(w.end) as i64);
            text.append_value(&doc.text[w.start..w.end]);
        }
        for (b, v) in self.meta.iter_mut().zip(meta.iter().chain(std::iter::repeat(&None))) {
            b.append_option(v.as_deref());
        }
        self.rows += 1;
        Ok(())
    }

    /// Append all of a document's chunks (`embeddings`: `chunks.len() × dim` floats).
    ///
    /// # Errors
    /// If the schema has embeddings and none are given.
    pub fn append_doc(
        &mut self,
        doc: &Document,
        chunks: &[ChunkSpan],
        embeddings: Option<&[f32]>,
    ) -> Result<()> {
        let meta = meta_strings(doc);
        let contexts = super::contexts(doc, chunks);
        for (i, (c, context)) in chunks.iter().zip(&contexts).enumerate() {
            let e = match (self.dim, embeddings) {
                (Some(d), Some(e)) => Some(&e[i * d..(i + 1) * d]),
                _ => None,
            };
            self.append(doc, &meta, i, c, context, e)?;
        }
        Ok(())
    }

    /// The rows appended so far as one batch (`None` if there are none); the builder starts
    /// empty again.
    ///
    /// # Errors
    /// Never in practice (the columns are built to the schema).
    pub fn finish(&mut self) -> Result<Option<RecordBatch>> {
        if self.rows == 0 {
            return Ok(None);
        }
        let mut cols: Vec<ArrayRef> = vec![Arc::new(self.id.finish()), Arc::new(self.doc_id.finish())];
        let [index, start, end, tokens, sentences] = &mut self.ints;
        cols.push(Arc::new(index.finish()));
        cols.push(Arc::new(start.finish()));
        cols.push(Arc::new(end.finish()));
        cols.push(Arc::new(self.text.finish()));
        cols.push(Arc::new(tokens.finish()));
        cols.push(Arc::new(sentences.finish()));
        cols.push(Arc::new(self.context.finish()));
        if let Some((start, end, text)) = &mut self.windows {
            cols.push(Arc::new(start.finish()));
            cols.push(Arc::new(end.finish()));
            cols.push(Arc::new(text.finish()));
        }
        cols.extend(self.meta.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
        if let Some(e) = &mut self.embedding {
            cols.push(Arc::new(e.finish()));
        }
        self.rows = 0;
        RecordBatch::try_new(self.schema.clone(), cols).map(Some).map_err(|e| Error::Internal(e.to_string()))
    }
}

/// A document's metadata values as column strings: strings as they are, other JSON values as
/// JSON text, null as null.
pub(crate) fn meta_strings(doc: &Document) -> Vec<Option<String>> {
    doc.meta
        .iter()
        .map(|v| match v {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        })
        .collect()
}

/// Keeps a job's chunks in memory as record batches of [`schema`] (one per
/// [`ChunkSink::write_doc`] call, at most; a caller may concatenate them).
pub struct ArrowSink {
    builder: BatchBuilder,
    batches: Vec<RecordBatch>,
}

impl ArrowSink {
    #[must_use]
    pub fn new(columns: &Columns) -> Self {
        Self { builder: BatchBuilder::new(columns), batches: Vec::new() }
    }

    #[must_use]
    pub fn schema(&self) -> SchemaRef {
        self.builder.schema().clone()
    }

    /// The batches written so far; the sink starts empty again.
    pub fn take(&mut self) -> Vec<RecordBatch> {
        std::mem::take(&mut self.batches)
    }
}

impl ChunkSink for ArrowSink {
    fn write_doc(&mut self, doc: &Document, chunks: &[ChunkSpan], embeddings: Option<&[f32]>) -> Result<()> {
        self.builder.append_doc(doc, chunks, embeddings)?;
        if self.builder.rows() >= BATCH_ROWS {
            self.batches.extend(self.builder.finish()?);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.batches.extend(self.builder.finish()?);
        Ok(())
    }
}
