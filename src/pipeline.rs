//! Jobs over a corpus: read documents, process them in parallel, write results in order.
//!
//! Documents are read in batches bounded by a byte budget ([`JobOptions::batch_bytes`]),
//! each batch goes to [`Chunker::chunk_batch`] (baselines: one document per rayon task;
//! embedding chunkers: the sentences of the whole batch embedded together, then each
//! document's rule in parallel), and results are written in input order before the next
//! batch is read. Peak memory is therefore about two batches plus the
//! largest document, whatever the corpus size.

use std::time::Instant;

use rayon::prelude::*;

use crate::chunk::{Chunk, ChunkSpan};
use crate::chunkers::units::sentence_units;
use crate::chunkers::Chunker;
use crate::corpus::{Document, Documents, ReadStats};
use crate::output::{JsonlWriter, SentenceRecord};
use crate::segment::Segmenter;
use crate::sizer::Sizer;
use crate::span::trim;
use crate::Result;

/// Options shared by corpus jobs.
#[derive(Debug, Clone, Copy)]
pub struct JobOptions {
    /// Read documents until this many bytes are buffered, then process the batch.
    pub batch_bytes: usize,
    /// Verify the chunk invariants of every document (coverage, order, cap) and fail on a
    /// violation. Cheap; on by default in debug builds.
    pub check: bool,
}

impl Default for JobOptions {
    fn default() -> Self {
        Self { batch_bytes: 32 << 20, check: cfg!(debug_assertions) }
    }
}

/// What a job did.
#[derive(Debug, Clone, Default)]
pub struct JobStats {
    pub read: ReadStats,
    /// Records written (chunks or sentences).
    pub records: u64,
    pub seconds: f64,
}

impl JobStats {
    /// One line for stderr.
    #[must_use]
    pub fn summary(&self, what: &str) -> String {
        let mb = self.read.bytes as f64 / 1e6;
        let mut s = format!(
            "seamcut: {} documents, {} {what}, {:.1} MB in {:.2} s ({:.1} MB/s)",
            self.read.documents,
            self.records,
            mb,
            self.seconds,
            mb / self.seconds.max(1e-9)
        );
        if self.read.skipped_binary > 0 {
            s.push_str(&format!(
                "; skipped {} binary file(s): {}",
                self.read.skipped_binary,
                self.read.skipped_examples.join(", ")
            ));
        }
        s
    }
}

fn for_each_batch(
    docs: &mut Documents,
    opts: JobOptions,
    mut f: impl FnMut(&[Document]) -> Result<()>,
) -> Result<()> {
    let mut batch: Vec<Document> = Vec::new();
    let mut bytes = 0usize;
    for doc in docs.by_ref() {
        let doc = doc?;
        bytes += doc.text.len();
        batch.push(doc);
        if bytes >= opts.batch_bytes {
            f(&batch)?;
            batch.clear();
            bytes = 0;
        }
    }
    if !batch.is_empty() {
        f(&batch)?;
    }
    Ok(())
}

/// Chunk every document and write one JSON object per chunk.
///
/// # Errors
/// On the first unreadable input, or a failing writer.
pub fn chunk_corpus(
    mut docs: Documents,
    chunker: &dyn Chunker,
    cap: usize,
    writer: &mut JsonlWriter,
    opts: JobOptions,
) -> Result<JobStats> {
    let t0 = Instant::now();
    for_each_batch(&mut docs, opts, |batch| {
        let texts: Vec<&str> = batch.iter().map(|d| d.text.as_str()).collect();
        let results: Vec<Vec<ChunkSpan>> = chunker.chunk_batch(&texts);
        for (doc, chunks) in batch.iter().zip(&results) {
            if opts.check {
                check_chunks(doc, chunks, chunker, cap)?;
            }
            for (i, c) in chunks.iter().enumerate() {
                writer.write(&Chunk::new(&doc.id, &doc.text, i, c))?;
            }
        }
        Ok(())
    })?;
    writer.flush()?;
    Ok(JobStats { read: docs.stats().clone(), records: writer.written, seconds: t0.elapsed().as_secs_f64() })
}

fn check_chunks(doc: &Document, chunks: &[ChunkSpan], chunker: &dyn Chunker, cap: usize) -> Result<()> {
    crate::chunk::verify(&doc.text, chunks, chunker.overlapping())
        .map_err(|m| crate::Error::Internal(format!("chunk invariant broken on {}: {m}", doc.id)))?;
    // The one allowed excess: a single character that alone counts more than the cap.
    if let Some(c) =
        chunks.iter().find(|c| c.tokens > cap && doc.text[c.start..c.end].chars().nth(1).is_some())
    {
        return Err(crate::Error::Internal(format!(
            "chunk invariant broken on {}: chunk {}..{} has {} tokens > {cap}",
            doc.id, c.start, c.end, c.tokens
        )));
    }
    Ok(())
}

/// Write the sentence units the engine uses (trimmed, cut at `cap`), one per line.
///
/// # Errors
/// On the first unreadable input, or a failing writer.
pub fn segment_corpus(
    mut docs: Documents,
    sizer: &dyn Sizer,
    cap: usize,
    writer: &mut JsonlWriter,
    opts: JobOptions,
) -> Result<JobStats> {
    let t0 = Instant::now();
    let segmenter = Segmenter::default();
    for_each_batch(&mut docs, opts, |batch| {
        let results: Vec<_> = batch
            .par_iter()
            .with_max_len(1)
            .map(|d| sentence_units(&d.text, &segmenter, sizer, cap))
            .collect();
        for (doc, units) in batch.iter().zip(&results) {
            let mut index = 0;
            for s in &units.spans {
                let t = trim(&doc.text, *s);
                if t.is_empty() {
                    continue;
                }
                writer.write(&SentenceRecord {
                    doc_id: &doc.id,
                    index,
                    start: t.start,
                    end: t.end,
                    text: t.text(&doc.text),
                })?;
                index += 1;
            }
        }
        Ok(())
    })?;
    writer.flush()?;
    Ok(JobStats { read: docs.stats().clone(), records: writer.written, seconds: t0.elapsed().as_secs_f64() })
}
