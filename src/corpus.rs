//! Reading documents: files, directories (walked), standard input, and JSONL corpora.
//!
//! [`Documents`] is a streaming iterator: it holds one file (or one JSONL line) at a time,
//! so a corpus of any size is read in memory bounded by its largest document.
//!
//! Bad input is reported, never dropped silently: invalid UTF-8 is an error naming the
//! file and byte offset (or replaced by U+FFFD with `lossy`); a binary file met while
//! walking a directory is skipped and counted in [`ReadStats::skipped_binary`], while a
//! binary file named explicitly is an error; a JSONL line that is not an object with a
//! string text field is an error naming the file and line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// One document: an id and its UTF-8 text. Every span seamcut produces is a byte range of
/// `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub id: String,
    pub text: String,
}

/// How input files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// A whole file is one document; its id is the path.
    #[default]
    Text,
    /// One JSON object per line, with an id field and a text field.
    Jsonl,
}

/// Options for reading a corpus.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    pub format: InputFormat,
    pub id_field: String,
    pub text_field: String,
    /// Replace invalid UTF-8 with U+FFFD instead of failing. Offsets then refer to the
    /// repaired text.
    pub lossy: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self { format: InputFormat::Text, id_field: "id".into(), text_field: "text".into(), lossy: false }
    }
}

/// What reading saw besides documents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub files: usize,
    pub documents: usize,
    pub bytes: u64,
    /// Binary files skipped during directory walks.
    pub skipped_binary: usize,
    /// Paths of the first skipped binary files (at most 10), for the warning.
    pub skipped_examples: Vec<String>,
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

/// Files in directory walks: text formats only.
fn wanted(path: &Path, format: InputFormat) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match format {
        InputFormat::Text => matches!(ext.as_deref(), Some("txt" | "md" | "markdown" | "text")),
        InputFormat::Jsonl => matches!(ext.as_deref(), Some("jsonl" | "ndjson")),
    }
}

/// Bytes inspected for NUL when deciding whether a file is binary.
const BINARY_SNIFF: usize = 8192;

enum Source {
    /// A file (or stdin) to read whole as one text document.
    Text { label: String, explicit: bool, path: Option<PathBuf> },
    /// A JSONL stream being read line by line.
    Jsonl { label: String, reader: Box<dyn BufRead>, line: usize },
}

/// Streaming iterator over the documents of some inputs.
pub struct Documents {
    opts: ReadOptions,
    /// Inputs not yet expanded, in reverse order (popped from the end).
    pending: Vec<Input>,
    /// Files found by walking a directory, in reverse order.
    walked: Vec<PathBuf>,
    current: Option<Source>,
    stats: ReadStats,
    buf: Vec<u8>,
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
            buf: Vec::new(),
        }
    }

    #[must_use]
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    fn decode(&self, label: &str, bytes: Vec<u8>) -> Result<String> {
        match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) if self.opts.lossy => Ok(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Err(e) => {
                Err(Error::InvalidUtf8 { path: label.to_string(), offset: e.utf8_error().valid_up_to() })
            }
        }
    }

    /// Open the next source; `Ok(false)` when every input is done.
    fn advance(&mut self) -> Result<bool> {
        loop {
            if let Some(path) = self.walked.pop() {
                self.open_file(path, false)?;
                return Ok(true);
            }
            let Some(input) = self.pending.pop() else { return Ok(false) };
            match input {
                Input::Stdin => {
                    self.current = Some(match self.opts.format {
                        InputFormat::Text => {
                            Source::Text { label: "stdin".into(), explicit: true, path: None }
                        }
                        InputFormat::Jsonl => Source::Jsonl {
                            label: "stdin".into(),
                            reader: Box::new(BufReader::with_capacity(1 << 20, std::io::stdin())),
                            line: 0,
                        },
                    });
                    return Ok(true);
                }
                Input::Path(p) => {
                    let meta = std::fs::metadata(&p).map_err(|e| Error::io(&p, e))?;
                    if meta.is_dir() {
                        let mut files = Vec::new();
                        for entry in walkdir::WalkDir::new(&p).sort_by_file_name() {
                            let entry = entry.map_err(|e| {
                                let path = e.path().map_or_else(|| p.clone(), Path::to_path_buf);
                                Error::io(path, e.into())
                            })?;
                            if entry.file_type().is_file() && wanted(entry.path(), self.opts.format) {
                                files.push(entry.into_path());
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
        self.current = Some(match self.opts.format {
            InputFormat::Text => Source::Text { label, explicit, path: Some(path) },
            InputFormat::Jsonl => {
                let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
                Source::Jsonl { label, reader: Box::new(BufReader::with_capacity(1 << 20, f)), line: 0 }
            }
        });
        Ok(())
    }

    /// Read a whole text source. `Ok(None)` means a skipped binary file.
    fn read_text(
        &mut self,
        label: String,
        explicit: bool,
        path: Option<PathBuf>,
    ) -> Result<Option<Document>> {
        let mut bytes = Vec::new();
        match &path {
            Some(p) => {
                File::open(p).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(|e| Error::io(p, e))?;
            }
            None => {
                std::io::stdin().lock().read_to_end(&mut bytes).map_err(|e| Error::io("stdin", e))?;
            }
        }
        if let Some(offset) = memchr::memchr(0, &bytes[..bytes.len().min(BINARY_SNIFF)]) {
            if explicit {
                return Err(Error::Binary { path: label, offset });
            }
            self.stats.skipped_binary += 1;
            if self.stats.skipped_examples.len() < 10 {
                self.stats.skipped_examples.push(label);
            }
            return Ok(None);
        }
        self.stats.bytes += bytes.len() as u64;
        let text = self.decode(&label, bytes)?;
        Ok(Some(Document { id: label, text }))
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
            let raw = trim_ascii(&self.buf);
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
                        "invalid UTF-8 at byte {} of the line (use --lossy to replace invalid bytes)",
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
            return Ok(Some(Document { id, text }));
        }
    }
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

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &b[start..end]
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
                Some(Source::Text { label, explicit, path }) => self.read_text(label, explicit, path),
                Some(src @ Source::Jsonl { .. }) => {
                    self.current = Some(src);
                    let r = self.read_jsonl();
                    if matches!(r, Ok(None)) {
                        self.current = None;
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
                Err(e) => {
                    self.current = None;
                    return Some(Err(e));
                }
            }
        }
    }
}
