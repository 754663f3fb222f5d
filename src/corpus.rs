//! Reading documents: files, directories (walked), standard input, JSONL and Parquet
//! corpora, plain or compressed with gzip (`.gz`) or zstd (`.zst`).
//!
//! [`Documents`] is a streaming iterator: it holds one file, one JSONL line or one Parquet
//! record batch at a time, so a corpus of any size is read in memory bounded by its largest
//! document.
//!
//! Bad input is reported, never dropped silently. Problems with one document inside a
//! corpus (a bad JSONL line or Parquet row, a binary, undecodable or unreadable file met in
//! a directory walk) come as errors for which [`Error::is_per_document`] is true, and the
//! iterator goes on with the next document: a corpus job then skips and lists them, or stops
//! (`--on-error`). Problems with an input named explicitly (a missing file, a binary or
//! invalid UTF-8 file given by name) end that input and are fatal. With `lossy`, invalid
//! UTF-8 is replaced by U+FFFD instead.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::{Error, Result};

/// One document: an id, its UTF-8 text, and the metadata fields carried from its record
/// (in the order of [`ReadOptions::meta_fields`]; `null` where a record lacks one). Every
/// span seamcut produces is a byte range of `text`; the offsets a chunk record carries are
/// [`Document::source_offset`]s, byte offsets into the input as it was read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Document {
    pub id: String,
    pub text: String,
    pub meta: Vec<serde_json::Value>,
    /// Where a lossy read of a text file replaced invalid bytes (`None`: the text is the
    /// file's bytes).
    pub replaced: Option<std::sync::Arc<Replaced>>,
}

impl Document {
    #[must_use]
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self { id: id.into(), text: text.into(), meta: Vec::new(), replaced: None }
    }

    /// The byte offset in the input that `at` (a char boundary of `text`) stands for: `at`
    /// itself, unless a lossy read put U+FFFD (3 bytes) where the input had 1 to 3 invalid
    /// bytes before it. Slicing the file as read at two such offsets gives the chunk's bytes.
    #[must_use]
    pub fn source_offset(&self, at: usize) -> usize {
        self.replaced.as_ref().map_or(at, |r| r.source(at))
    }
}

/// Where a lossy read replaced invalid UTF-8: the text offset of each U+FFFD it wrote, and the
/// running difference between input and text offsets after it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Replaced {
    at: Vec<usize>,
    shift: Vec<isize>,
}

impl Replaced {
    fn source(&self, at: usize) -> usize {
        match self.at.partition_point(|&a| a < at) {
            0 => at,
            k => at.saturating_add_signed(self.shift[k - 1]),
        }
    }
}

/// `bytes` as UTF-8 with each maximal invalid sequence replaced by U+FFFD (the text
/// [`String::from_utf8_lossy`] gives), and where it did so (`None` where nothing was).
#[must_use]
pub fn decode_lossy(bytes: &[u8]) -> (String, Option<Replaced>) {
    let mut text = String::with_capacity(bytes.len());
    let mut r = Replaced::default();
    let mut shift = 0isize;
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        let bad = chunk.invalid();
        if !bad.is_empty() {
            r.at.push(text.len());
            shift += bad.len() as isize - '\u{FFFD}'.len_utf8() as isize;
            r.shift.push(shift);
            text.push('\u{FFFD}');
        }
    }
    (text, (!r.at.is_empty()).then_some(r))
}

/// How input files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum InputFormat {
    /// By extension (after any `.gz`/`.zst`): `.jsonl`/`.ndjson` as JSONL, `.parquet` as
    /// Parquet, anything else (and stdin) as text. Directory walks take text (`.txt`, `.md`,
    /// `.markdown`, `.text`), JSONL and Parquet files.
    #[default]
    Auto,
    /// A whole file is one document; its id is the path.
    Text,
    /// One JSON object per line, with an id field and a text field.
    Jsonl,
    /// A Parquet file with an id column and a text column.
    Parquet,
}

/// Options for reading a corpus.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    pub format: InputFormat,
    /// JSONL field / Parquet column with the document id (missing: `FILE:LINE` or `FILE:ROW`).
    pub id_field: String,
    /// JSONL field / Parquet column with the text.
    pub text_field: String,
    /// Fields (columns) carried from each record into its chunks.
    pub meta_fields: Vec<String>,
    /// Replace invalid UTF-8 with U+FFFD instead of failing. A text file's chunk offsets
    /// still index the file's bytes ([`Document::source_offset`]); a JSONL record's index its
    /// text field as decoded, replacement characters included.
    pub lossy: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            format: InputFormat::Auto,
            id_field: "id".into(),
            text_field: "text".into(),
            meta_fields: Vec::new(),
            lossy: false,
        }
    }
}

/// What reading saw besides documents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub files: usize,
    pub documents: usize,
    /// Bytes of text read (decompressed).
    pub bytes: u64,
}

/// An input named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    Path(PathBuf),
}

impl Input {
    #[must_use]
    pub fn parse(s: &str) -> Self {
        if s == "-" {
            Self::Stdin
        } else {
            Self::Path(PathBuf::from(s))
        }
    }
}

/// A file's compression, by its name (`.gz`, `.zst`): what inputs are read with and what a
/// JSONL output is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

/// A file's compression and the extension under it, in lower case.
#[must_use]
pub fn classify(path: &Path) -> (Compression, Option<String>) {
    let ext = |p: &Path| p.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext(path).as_deref() {
        Some("gz") => (Compression::Gzip, ext(&path.with_extension(""))),
        Some("zst" | "zstd") => (Compression::Zstd, ext(&path.with_extension(""))),
        e => (Compression::None, e.map(str::to_string)),
    }
}

/// The format a file is read in.
fn format_of(path: &Path, asked: InputFormat) -> InputFormat {
    if asked != InputFormat::Auto {
        return asked;
    }
    match classify(path).1.as_deref() {
        Some("jsonl" | "ndjson") => InputFormat::Jsonl,
        Some("parquet") => InputFormat::Parquet,
        _ => InputFormat::Text,
    }
}

/// Files taken from directory walks.
fn wanted(path: &Path, format: InputFormat) -> bool {
    let text = |e: &str| matches!(e, "txt" | "md" | "markdown" | "text");
    let jsonl = |e: &str| matches!(e, "jsonl" | "ndjson");
    let Some(ext) = classify(path).1 else { return false };
    match format {
        InputFormat::Auto => text(&ext) || jsonl(&ext) || ext == "parquet",
        InputFormat::Text => text(&ext),
        InputFormat::Jsonl => jsonl(&ext),
        InputFormat::Parquet => ext == "parquet",
    }
}

/// What a directory walk takes (under the default input format), in words.
pub const WALKED_KINDS: &str = ".txt, .md, .jsonl, .ndjson or .parquet, plain, .gz or .zst";

/// The sum of the sizes of the files the inputs name or contain (compressed sizes as they
/// are), for progress bars; `None` with stdin.
#[must_use]
pub fn total_bytes(inputs: &[Input], format: InputFormat) -> Option<u64> {
    let mut total = 0;
    for input in inputs {
        let Input::Path(p) = input else { return None };
        let meta = std::fs::metadata(p).ok()?;
        if meta.is_dir() {
            for e in
                walkdir::WalkDir::new(p).follow_links(true).into_iter().filter_map(std::result::Result::ok)
            {
                if e.file_type().is_file() && wanted(e.path(), format) {
                    total += e.metadata().map_or(0, |m| m.len());
                }
            }
        } else {
            total += meta.len();
        }
    }
    Some(total)
}

/// Whether `path` is a symbolic link (not followed).
fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Bytes inspected for NUL when deciding whether a file is binary.
const BINARY_SNIFF: usize = 8192;

/// Rows per record batch read from Parquet inputs.
const PARQUET_BATCH_ROWS: usize = 1024;

enum Source {
    /// A file (or stdin) to read whole as one text document.
    Text { label: String, explicit: bool, path: Option<PathBuf> },
    /// A JSONL stream being read line by line.
    Jsonl { label: String, reader: Box<dyn BufRead + Send>, line: usize },
    /// Record batches (a Parquet file, or Arrow data handed in) read batch by batch.
    Parquet { label: String, reader: BatchStream, batch: Option<RecordBatch>, next: usize, row: usize },
}

/// Record batches from a Parquet file or an Arrow stream.
type BatchStream =
    Box<dyn Iterator<Item = std::result::Result<RecordBatch, arrow_schema::ArrowError>> + Send>;

/// Streaming iterator over the documents of some inputs.
pub struct Documents {
    opts: ReadOptions,
    /// Inputs not yet expanded, in reverse order (popped from the end).
    pending: Vec<Input>,
    /// Files found by walking a directory, in reverse order.
    walked: Vec<PathBuf>,
    current: Option<Source>,
    stats: ReadStats,
    /// Files directory walks passed over (not of a kind the inputs take), shared with
    /// whoever asked for it before the iterator moved to its reading thread.
    passed_over: std::sync::Arc<std::sync::atomic::AtomicU64>,
    buf: Vec<u8>,
}

/// Open a file, decompressing by its extension.
fn open_reader(path: &Path) -> Result<Box<dyn Read + Send>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(match classify(path).0 {
        Compression::None => Box::new(f),
        Compression::Gzip => {
            Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, f)))
        }
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(f).map_err(|e| Error::io(path, e))?),
    })
}

impl Documents {
    #[must_use]
    pub fn new(inputs: Vec<Input>, opts: ReadOptions) -> Self {
        let mut pending = inputs;
        pending.reverse();
        Self {
            opts,
            pending,
            walked: Vec::new(),
            current: None,
            stats: ReadStats::default(),
            passed_over: std::sync::Arc::default(),
            buf: Vec::new(),
        }
    }

    /// The count of files the directory walks pass over, as the walks go (read it after the
    /// documents are read).
    #[must_use]
    pub fn passed_over(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        self.passed_over.clone()
    }

    /// The documents of Arrow record batches (an Arrow table handed in by a caller, e.g.
    /// the Python bindings): one per row, read as Parquet rows are (`opts.text_field`,
    /// `opts.id_field` and `opts.meta_fields` name the columns; a row without an id is
    /// `LABEL:ROW`). A row whose text is null or not a string is a per-document error.
    #[must_use]
    pub fn from_batches(
        label: impl Into<String>,
        batches: impl Iterator<Item = std::result::Result<RecordBatch, arrow_schema::ArrowError>> + Send + 'static,
        opts: ReadOptions,
    ) -> Self {
        let mut docs = Self::new(Vec::new(), opts);
        docs.current = Some(Source::Parquet {
            label: label.into(),
            reader: Box::new(batches),
            batch: None,
            next: 0,
            row: 0,
        });
        docs
    }

    /// Check that record batches of `schema` have the columns `opts` names: the text
    /// column and every metadata column, and the id column unless `opts.id_field` is empty
    /// (then rows are numbered). For callers that hand in a table, where a misspelt column
    /// should be one error rather than every row skipped.
    ///
    /// # Errors
    /// A [`Error::Config`] naming the missing column and the ones there are.
    pub fn check_columns(schema: &arrow_schema::Schema, opts: &ReadOptions) -> Result<()> {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let mut wanted = vec![("text", opts.text_field.as_str())];
        if !opts.id_field.is_empty() {
            wanted.push(("id", opts.id_field.as_str()));
        }
        wanted.extend(opts.meta_fields.iter().map(|m| ("metadata", m.as_str())));
        match wanted.into_iter().find(|(_, c)| !names.contains(c)) {
            Some((what, c)) => Err(Error::Config(format!(
                "no {what} column {c:?} in the table (columns: {})",
                names.join(", ")
            ))),
            None => Ok(()),
        }
    }

    #[must_use]
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    fn decode(&self, label: &str, bytes: Vec<u8>) -> Result<(String, Option<Replaced>)> {
        match String::from_utf8(bytes) {
            Ok(s) => Ok((s, None)),
            Err(e) if self.opts.lossy => Ok(decode_lossy(e.as_bytes())),
            Err(e) => {
                Err(Error::InvalidUtf8 { path: label.to_string(), offset: e.utf8_error().valid_up_to() })
            }
        }
    }

    /// Open the next source; `Ok(false)` when every input is done.
    fn advance(&mut self) -> Result<bool> {
        loop {
            if let Some(path) = self.walked.pop() {
                return self.open_file(path, false).map(|()| true).map_err(|e| Error::InWalk(Box::new(e)));
            }
            let Some(input) = self.pending.pop() else { return Ok(false) };
            match input {
                Input::Stdin => {
                    self.current = Some(match self.opts.format {
                        InputFormat::Jsonl => Source::Jsonl {
                            label: "stdin".into(),
                            reader: Box::new(BufReader::with_capacity(1 << 20, std::io::stdin())),
                            line: 0,
                        },
                        InputFormat::Parquet => {
                            return Err(Error::Config(
                                "Parquet cannot be read from stdin; name the file".into(),
                            ))
                        }
                        _ => Source::Text { label: "stdin".into(), explicit: true, path: None },
                    });
                    return Ok(true);
                }
                Input::Path(p) => {
                    let meta = std::fs::metadata(&p).map_err(|e| Error::io(&p, e))?;
                    if meta.is_dir() {
                        let mut files = Vec::new();
                        // Links are followed, as `grep -R` does: a corpus of links (a hub
                        // cache's snapshot is one) is read, not passed over in silence. A link
                        // that leads nowhere or back up the tree is passed over and counted.
                        for entry in walkdir::WalkDir::new(&p).follow_links(true).sort_by_file_name() {
                            let entry = match entry {
                                Ok(entry) => entry,
                                Err(e) if e.loop_ancestor().is_some() || e.path().is_some_and(is_link) => {
                                    self.passed_over.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    continue;
                                }
                                Err(e) => {
                                    let path = e.path().map_or_else(|| p.clone(), Path::to_path_buf);
                                    return Err(Error::io(path, e.into()));
                                }
                            };
                            if !entry.file_type().is_file() {
                                continue;
                            }
                            if wanted(entry.path(), self.opts.format) {
                                files.push(entry.into_path());
                            } else {
                                self.passed_over.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                        files.reverse();
                        self.walked = files;
                        continue;
                    }
                    self.open_file(p, true)?;
                    return Ok(true);
                }
            }
        }
    }

    fn open_file(&mut self, path: PathBuf, explicit: bool) -> Result<()> {
        let label = path.display().to_string();
        self.stats.files += 1;
        self.current = Some(match format_of(&path, self.opts.format) {
            InputFormat::Jsonl => Source::Jsonl {
                label,
                reader: Box::new(BufReader::with_capacity(1 << 20, open_reader(&path)?)),
                line: 0,
            },
            InputFormat::Parquet => {
                let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
                let bad = |e: parquet::errors::ParquetError| Error::Record {
                    path: label.clone(),
                    line: 0,
                    message: format!("not a readable Parquet file: {e}"),
                };
                let builder = ParquetRecordBatchReaderBuilder::try_new(f).map_err(bad)?;
                let schema = builder.parquet_schema();
                let mut wanted_cols = vec![self.opts.text_field.as_str(), self.opts.id_field.as_str()];
                wanted_cols.extend(self.opts.meta_fields.iter().map(String::as_str));
                let columns: Vec<usize> = (0..schema.num_columns())
                    .filter(|&i| {
                        let c = schema.column(i);
                        c.path().parts().len() == 1 && wanted_cols.contains(&c.name())
                    })
                    .collect();
                let mask = parquet::arrow::ProjectionMask::leaves(schema, columns);
                let reader =
                    builder.with_projection(mask).with_batch_size(PARQUET_BATCH_ROWS).build().map_err(bad)?;
                Source::Parquet { label, reader: Box::new(reader), batch: None, next: 0, row: 0 }
            }
            _ => Source::Text { label, explicit, path: Some(path) },
        });
        Ok(())
    }

    /// Read a whole text source.
    fn read_text(&mut self, label: String, path: Option<PathBuf>) -> Result<Document> {
        let mut bytes = Vec::new();
        match &path {
            Some(p) => {
                open_reader(p)?.read_to_end(&mut bytes).map_err(|e| Error::io(p, e))?;
            }
            None => {
                std::io::stdin().lock().read_to_end(&mut bytes).map_err(|e| Error::io("stdin", e))?;
            }
        }
        if let Some(offset) = memchr::memchr(0, &bytes[..bytes.len().min(BINARY_SNIFF)]) {
            return Err(Error::Binary { path: label, offset });
        }
        self.stats.bytes += bytes.len() as u64;
        let (text, replaced) = self.decode(&label, bytes)?;
        Ok(Document {
            id: label,
            text,
            meta: vec![serde_json::Value::Null; self.opts.meta_fields.len()],
            replaced: replaced.map(std::sync::Arc::new),
        })
    }

    /// Next document of a JSONL source; `Ok(None)` at its end.
    fn read_jsonl(&mut self) -> Result<Option<Document>> {
        let Some(Source::Jsonl { label, reader, line }) = &mut self.current else { return Ok(None) };
        loop {
            self.buf.clear();
            let n = reader.read_until(b'\n', &mut self.buf).map_err(|e| Error::io(label.as_str(), e))?;
            if n == 0 {
                return Ok(None);
            }
            *line += 1;
            let raw = self.buf.trim_ascii();
            if raw.is_empty() {
                continue;
            }
            self.stats.bytes += n as u64;
            let record_err = |message: String| Error::Record { path: label.clone(), line: *line, message };
            let owned;
            let raw = match std::str::from_utf8(raw) {
                Ok(s) => s,
                Err(e) if !self.opts.lossy => {
                    return Err(record_err(format!(
                        "invalid UTF-8 at byte {} of the line (a lossy read replaces invalid bytes)",
                        e.valid_up_to()
                    )))
                }
                Err(_) => {
                    owned = String::from_utf8_lossy(raw).into_owned();
                    owned.as_str()
                }
            };
            let mut value: serde_json::Value =
                serde_json::from_str(raw).map_err(|e| record_err(format!("invalid JSON: {e}")))?;
            let serde_json::Value::Object(obj) = &mut value else {
                return Err(record_err("expected a JSON object".into()));
            };
            let text = match obj.remove(&self.opts.text_field) {
                Some(serde_json::Value::String(s)) => s,
                Some(serde_json::Value::Null) | None => {
                    return Err(record_err(format!("no string field {:?}", self.opts.text_field)))
                }
                Some(other) => {
                    return Err(record_err(format!(
                        "field {:?} is {}, not a string",
                        self.opts.text_field,
                        kind(&other)
                    )))
                }
            };
            let id = match obj.get(&self.opts.id_field) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Number(n)) => n.to_string(),
                _ => format!("{label}:{line}"),
            };
            let meta = self.opts.meta_fields.iter().map(|f| obj.remove(f).unwrap_or_default()).collect();
            return Ok(Some(Document { id, text, meta, replaced: None }));
        }
    }

    /// Next document of a Parquet source; `Ok(None)` at its end.
    fn read_parquet(&mut self) -> Result<Option<Document>> {
        let Some(Source::Parquet { label, reader, batch, next, row }) = &mut self.current else {
            return Ok(None);
        };
        loop {
            if batch.as_ref().is_none_or(|b| *next >= b.num_rows()) {
                match reader.next() {
                    None => return Ok(None),
                    Some(Ok(b)) => {
                        *batch = Some(b);
                        *next = 0;
                    }
                    Some(Err(e)) => {
                        return Err(Error::io(label.as_str(), std::io::Error::other(e.to_string())));
                    }
                }
                continue;
            }
            let b = batch.as_ref().expect("a batch is loaded");
            let (i, r) = (*next, *row + 1);
            *next += 1;
            *row += 1;
            let record_err = |message: String| Error::Record { path: label.clone(), line: r, message };
            let column = |name: &str| b.column_by_name(name);
            let text_col = column(&self.opts.text_field).ok_or_else(|| {
                record_err(format!("no column {:?} (the text field setting names it)", self.opts.text_field))
            })?;
            let text = match cell(text_col.as_ref(), i) {
                Some(serde_json::Value::String(s)) => s,
                None | Some(serde_json::Value::Null) => {
                    return Err(record_err(format!("null {:?}", self.opts.text_field)))
                }
                Some(other) => {
                    return Err(record_err(format!(
                        "column {:?} is {}, not a string",
                        self.opts.text_field,
                        kind(&other)
                    )))
                }
            };
            self.stats.bytes += text.len() as u64;
            let id = match column(&self.opts.id_field).and_then(|c| cell(c.as_ref(), i)) {
                Some(serde_json::Value::String(s)) => s,
                Some(serde_json::Value::Number(n)) => n.to_string(),
                _ => format!("{label}:{r}"),
            };
            let meta = self
                .opts
                .meta_fields
                .iter()
                .map(|f| column(f).and_then(|c| cell(c.as_ref(), i)).unwrap_or_default())
                .collect();
            return Ok(Some(Document { id, text, meta, replaced: None }));
        }
    }
}

/// One Parquet cell as JSON: strings, integers, floats and booleans; anything else as null
/// (`None` for a type we do not read).
fn cell(col: &dyn Array, i: usize) -> Option<serde_json::Value> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
    use arrow_schema::DataType as D;
    if col.is_null(i) {
        return Some(serde_json::Value::Null);
    }
    Some(match col.data_type() {
        D::Utf8 => col.as_string::<i32>().value(i).into(),
        D::LargeUtf8 => col.as_string::<i64>().value(i).into(),
        D::Utf8View => col.as_string_view().value(i).into(),
        D::Int64 => col.as_primitive::<Int64Type>().value(i).into(),
        D::Int32 => col.as_primitive::<Int32Type>().value(i).into(),
        D::UInt64 => col.as_primitive::<UInt64Type>().value(i).into(),
        D::UInt32 => col.as_primitive::<UInt32Type>().value(i).into(),
        D::Float64 => col.as_primitive::<Float64Type>().value(i).into(),
        D::Float32 => f64::from(col.as_primitive::<Float32Type>().value(i)).into(),
        D::Boolean => col.as_boolean().value(i).into(),
        _ => return None,
    })
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl Iterator for Documents {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                match self.advance() {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => return Some(Err(e)),
                }
            }
            let result = match self.current.take() {
                Some(Source::Text { label, explicit, path }) => self
                    .read_text(label, path)
                    .map(Some)
                    .map_err(|e| if explicit { e } else { Error::InWalk(Box::new(e)) }),
                Some(src @ (Source::Jsonl { .. } | Source::Parquet { .. })) => {
                    let parquet = matches!(src, Source::Parquet { .. });
                    self.current = Some(src);
                    let r = if parquet { self.read_parquet() } else { self.read_jsonl() };
                    match &r {
                        // A bad record: go on with the next one.
                        Err(Error::Record { .. }) => {}
                        Ok(None) | Err(_) => self.current = None,
                        Ok(Some(_)) => {}
                    }
                    r
                }
                None => continue,
            };
            match result {
                Ok(Some(doc)) => {
                    self.stats.documents += 1;
                    return Some(Ok(doc));
                }
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The lossy text is `from_utf8_lossy`'s, and every char boundary maps to an input
        /// offset such that the bytes between two boundaries decode to the text between them.
        #[test]
        fn lossy_offsets_map_text_back_to_the_input(bytes in proptest::collection::vec(
            prop_oneof![Just(0xffu8), Just(0xe2), Just(0x82), Just(0xc3), Just(0xa9), 0x20u8..0x7f], 0..60)) {
            let (text, replaced) = decode_lossy(&bytes);
            prop_assert_eq!(&text, &String::from_utf8_lossy(&bytes));
            let doc = Document { replaced: replaced.map(std::sync::Arc::new), ..Document::new("d", text.clone()) };
            let cuts: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
            prop_assert_eq!(doc.source_offset(text.len()), bytes.len());
            for w in cuts.windows(2) {
                let (a, b) = (doc.source_offset(w[0]), doc.source_offset(w[1]));
                prop_assert_eq!(String::from_utf8_lossy(&bytes[a..b]), &text[w[0]..w[1]]);
            }
        }
    }

    #[test]
    fn valid_text_has_no_map() {
        assert_eq!(decode_lossy("héllo \u{FFFD}".as_bytes()).1, None);
        assert_eq!(Document::new("d", "abc").source_offset(2), 2);
    }
}
