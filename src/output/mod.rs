//! Writing results: JSONL (one object per line) and Parquet, with chunk embeddings.
//!
//! [`ChunkSink`] takes one document's chunks at a time; [`jsonl::JsonlSink`] writes the
//! JSONL schema (and embeddings as raw float32 for a `.npy` beside it), and
//! [`parquet::ParquetSink`] the same fields as Parquet columns (embeddings as a fixed-size
//! list of float32). Both write exactly what they are given, in order: the bytes depend only
//! on the sequence of chunks, never on how the job batched its work.

pub mod arrow;
pub mod jsonl;
pub mod parquet;

use std::io::Write;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::chunk::ChunkSpan;
use crate::corpus::Document;
use crate::{Error, Result};

#[cfg(feature = "db")]
pub(crate) use arrow::meta_strings;
pub use arrow::ArrowSink;
pub use jsonl::JsonlSink;
pub use parquet::ParquetSink;

/// A field of a chunk record: its name and kind. This one list describes the record for every
/// output (JSONL keys, Parquet's and LanceDB's columns, pgvector's table), so that a new field is
/// added once; each output maps the kinds to its own types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub kind: FieldKind,
    /// Whether a database row holds it (the sentence count is the file records' alone).
    pub in_db: bool,
}

/// What a [`Field`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    /// A small count (an index, a number of tokens): 32 bits in SQL, 64 in Arrow.
    Count,
    /// A byte offset: 64 bits everywhere.
    Offset,
}

const fn field(name: &'static str, kind: FieldKind, in_db: bool) -> Field {
    Field { name, kind, in_db }
}

/// The fields of every chunk record, in order (JSONL keys, Parquet columns; a database row
/// holds those marked `in_db`, then the metadata fields and `embedding`).
/// `id` is [`crate::chunk::chunk_id`]: the same on every run for the same chunk, so a loader
/// can upsert by it.
pub const CHUNK_FIELDS: [Field; 9] = [
    field("id", FieldKind::Text, true),
    field("doc_id", FieldKind::Text, true),
    field("index", FieldKind::Count, true),
    field("start", FieldKind::Offset, true),
    field("end", FieldKind::Offset, true),
    field("text", FieldKind::Text, true),
    field("tokens", FieldKind::Count, true),
    field("sentences", FieldKind::Count, false),
    field("context", FieldKind::Text, true),
];

/// The fields a chunk record adds when its chunks have windows (`overlap`), after `context`.
pub const WINDOW_FIELDS: [Field; 3] = [
    field("window_start", FieldKind::Offset, false),
    field("window_end", FieldKind::Offset, false),
    field("window_text", FieldKind::Text, false),
];

/// The fields a database row holds before its metadata and vector, in order.
pub fn db_fields() -> impl Iterator<Item = &'static Field> {
    CHUNK_FIELDS.iter().filter(|f| f.in_db)
}

/// What a job's records hold besides the fixed fields: carried metadata fields, chunk
/// vectors of `dim` floats, and windows ([`WINDOW_FIELDS`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns {
    pub meta_fields: Vec<String>,
    pub dim: Option<usize>,
    pub windows: bool,
}

/// The context of each of a document's chunks: its title and the headings above the chunk
/// ([`crate::segment::structure::contexts`]).
#[must_use]
pub fn contexts(doc: &Document, chunks: &[ChunkSpan]) -> Vec<String> {
    let starts: Vec<usize> = chunks.iter().map(|c| c.start).collect();
    crate::segment::structure::contexts(&doc.id, &doc.text, &starts)
}

/// Where a job's chunks go.
pub trait ChunkSink: Send {
    /// Write one document's chunks; `embeddings` holds `chunks.len() × dim` floats when the
    /// job asked for them.
    ///
    /// # Errors
    /// If the sink fails (a full disk, a closed pipe).
    fn write_doc(&mut self, doc: &Document, chunks: &[ChunkSpan], embeddings: Option<&[f32]>) -> Result<()>;

    /// Flush and close; the output is complete when this returns.
    ///
    /// # Errors
    /// If the sink fails.
    fn finish(&mut self) -> Result<()>;
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    #[default]
    Jsonl,
    Parquet,
}

impl OutputFormat {
    /// By the output file's name: `.parquet` is Parquet; anything else JSONL, compressed as
    /// `.gz` or `.zst` says (the job writes what the name says).
    ///
    /// # Errors
    /// A name it cannot write as it says: a compressed Parquet name (`x.parquet.gz`: Parquet
    /// compresses its own columns), or a compression other than gzip and zstd (`.bz2`, `.xz`).
    pub fn for_path(path: &std::path::Path) -> Result<Self> {
        use crate::corpus::{classify, Compression};
        let (compression, ext) = classify(path);
        let shown = path.display();
        match (compression, ext.as_deref()) {
            (Compression::None, Some("parquet")) => Ok(Self::Parquet),
            (_, Some("parquet")) => Err(Error::Config(format!(
                "{shown}: Parquet compresses its own columns (zstd); name the output .parquet"
            ))),
            (Compression::None, Some(e @ ("bz2" | "xz" | "lz4" | "zip" | "7z" | "br" | "lzma"))) => {
                Err(Error::Config(format!(
                    "{shown}: seamcut does not write .{e} files; JSONL output is written plain, or compressed as .gz or .zst"
                )))
            }
            _ => Ok(Self::Jsonl),
        }
    }

    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Parquet => "parquet",
        }
    }
}

/// Metadata field names that would collide with the chunk record's own fields.
///
/// # Errors
/// A configuration error naming the first such field.
pub fn check_meta_fields(fields: &[String]) -> Result<()> {
    let own = |f: &str| CHUNK_FIELDS.iter().chain(&WINDOW_FIELDS).any(|c| c.name == f) || f == "embedding";
    if let Some(f) = fields.iter().find(|f| own(f)) {
        return Err(Error::setting("meta_fields", format!("{f:?} is one of the chunk record's own fields")));
    }
    Ok(())
}

/// One chunk as a JSONL record: the fixed fields, then each carried metadata field.
pub struct ChunkRecord<'a> {
    pub doc: &'a Document,
    pub meta_fields: &'a [String],
    pub index: usize,
    pub span: &'a ChunkSpan,
    /// The chunk's context ([`contexts`]).
    pub context: &'a str,
}

impl Serialize for ChunkRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let c = self.span;
        let text = &self.doc.text[c.start..c.end];
        let (start, end) = (self.doc.source_offset(c.start), self.doc.source_offset(c.end));
        let mut m = s.serialize_map(Some(CHUNK_FIELDS.len() + self.meta_fields.len()))?;
        m.serialize_entry("id", &crate::chunk::chunk_id(&self.doc.id, start, end, text))?;
        m.serialize_entry("doc_id", &self.doc.id)?;
        m.serialize_entry("index", &self.index)?;
        m.serialize_entry("start", &start)?;
        m.serialize_entry("end", &end)?;
        m.serialize_entry("text", text)?;
        m.serialize_entry("tokens", &c.tokens)?;
        m.serialize_entry("sentences", &c.sentences)?;
        m.serialize_entry("context", self.context)?;
        if let Some(w) = c.window {
            m.serialize_entry("window_start", &self.doc.source_offset(w.start))?;
            m.serialize_entry("window_end", &self.doc.source_offset(w.end))?;
            m.serialize_entry("window_text", &self.doc.text[w.start..w.end])?;
        }
        for (k, v) in self.meta_fields.iter().zip(&self.doc.meta) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A buffered JSONL writer over any sink (a file, stdout).
pub struct JsonlWriter {
    out: std::io::BufWriter<Box<dyn Write + Send>>,
    /// Records written.
    pub written: u64,
}

impl JsonlWriter {
    #[must_use]
    pub fn new(sink: Box<dyn Write + Send>) -> Self {
        Self { out: std::io::BufWriter::with_capacity(1 << 20, sink), written: 0 }
    }

    /// Write one record and a newline.
    ///
    /// # Errors
    /// If the sink fails (a full disk, a closed pipe).
    pub fn write<T: Serialize>(&mut self, record: &T) -> Result<()> {
        serde_json::to_writer(&mut self.out, record).map_err(|e| Error::Write(e.into()))?;
        self.out.write_all(b"\n").map_err(Error::Write)?;
        self.written += 1;
        Ok(())
    }

    /// Flush buffered records.
    ///
    /// # Errors
    /// If the sink fails.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(Error::Write)
    }

    /// Flush and return the underlying writer.
    ///
    /// # Errors
    /// If the sink fails.
    pub fn into_inner(self) -> Result<Box<dyn Write + Send>> {
        self.out.into_inner().map_err(|e| Error::Write(e.into_error()))
    }
}

/// A sentence (unit) as `seamcut segment` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct SentenceRecord<'a> {
    pub doc_id: &'a str,
    pub index: usize,
    pub start: usize,
    pub end: usize,
    pub text: &'a str,
}
