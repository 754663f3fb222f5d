//! Writing results as JSONL, one object per line.

use std::io::Write;

use serde::Serialize;

use crate::{Error, Result};

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
