//! Corpus jobs: read documents, chunk them in overlapped stages, write results in order.
//!
//! [`chunk_corpus`] runs five stages on their own threads, connected by bounded channels
//! (depth [`JobOptions::channel_depth`], in document batches of [`JobOptions::batch_bytes`],
//! 8 MB by default):
//!
//! ```text
//! read (shard filter, resume skip) ─▶ prepare (units, tokenize, plan; rayon)
//!   ─▶ device (embed the batch's units) ─▶ finish (band, rule, sizing, chunk vectors; rayon)
//!   ─▶ write (in input order; commit a part per batch)
//! ```
//!
//! For the baselines, prepare chunks the documents and the device stage only re-embeds
//! chunks when `--embeddings reembed` asks. Each stage handles one batch at a time in input
//! order, so the output is the same whatever the thread count, batch budget or channel
//! depth; memory is bounded by about `4 × channel_depth + 5` batches (each channel full,
//! one batch in each stage) plus the largest document. Documents with problems are listed and skipped, or stop the job
//! ([`OnError`]); model failures on one document fall back to sentence packing when the
//! chunker's policy says so, and are counted.

pub mod batch;
pub mod commit;
mod stages;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::cap::Cap;
use crate::chunkers::units::sentence_units;
use crate::chunkers::Chunker;
use crate::corpus::{Document, Documents, Input, ReadOptions};
use crate::embed::{Embedder, LongInput};
use crate::output::{JsonlWriter, OutputFormat, SentenceRecord};
use crate::segment::Segmenter;
use crate::sizer::Sizer;
use crate::span::trim;
use crate::spec::ChunkerSpec;
use crate::{Error, Result};

use crate::totals::Totals;
use crate::wording::plural;
pub use batch::{chunk_texts, VectorPlan};

/// What to do with a document that cannot be chunked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum OnError {
    /// List it (with its location and why) in the errors file and go on.
    #[default]
    Skip,
    /// Stop the job with its error; the output committed so far stays, so that the job can
    /// be resumed.
    Stop,
}

/// Vectors written with each chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum EmbeddingMode {
    /// The re-normalised mean of the chunk's unit vectors (embedding chunkers; no extra model
    /// work).
    Mean,
    /// The chunk's text embedded again (a text past the model's window truncated, or averaged
    /// over windows: the long-input setting).
    Reembed,
    /// `mean` for an embedding chunker, `reembed` for a baseline.
    Auto,
    /// Each chunk pooled from its tokens' states in a late pass over its whole document: a
    /// vector that carries its document's context. Any chunker; an embedding chunker with late
    /// unit vectors gives them from the pass that found its seams.
    Late,
    /// The normalised sum of `late` and `reembed` (under the context prefix, `reembed` is the
    /// mean of the text alone and with its context in front): what the chunk says on its own
    /// and within its document; on the broad benchmark the strongest dense vectors
    /// (benches/RESULTS.md).
    Blend,
}

impl EmbeddingMode {
    /// `Auto` resolved for a chunker that has unit vectors (`semantic`) or not.
    #[must_use]
    pub fn resolve(self, semantic: bool) -> Self {
        match self {
            Self::Auto if semantic => Self::Mean,
            Self::Auto => Self::Reembed,
            m => m,
        }
    }
}

/// A document shard: documents whose id hashes to `index` modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Parse `I/N` (0 ≤ I < N).
    ///
    /// # Errors
    /// On anything else.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || {
            Error::setting(
                "shard",
                format!("{s:?}: expected I/N with 0 <= I < N (0-based: 16 shards are 0/16 to 15/16)"),
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) =
            (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Self { index, count })
    }

    /// Whether the document with this id belongs to the shard.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        fnv1a(id.as_bytes()) % self.count == self.index
    }
}

/// FNV-1a, 64-bit: a hash that is the same on every machine, version and run (std's and
/// rustc-hash's are not promised to be), so shards agree across a cluster. Written out
/// because it is four lines.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Text bytes per batch by default: 8 MB is about two million tokens, full batches for any
/// device, while the derived data in flight (unit vectors are about five times the text for
/// a 240-d model) stays within a few hundred MB: with 32 MB batches a 2 GB corpus peaked at
/// 1054 MB (benches/RESULTS.md).
pub const DEFAULT_BATCH_BYTES: usize = 8 << 20;

/// Options of a corpus job.
#[derive(Debug, Clone)]
pub struct JobOptions {
    /// Read documents until this many bytes are buffered, then pass the batch on.
    pub batch_bytes: usize,
    /// Batches in flight between two stages.
    pub channel_depth: usize,
    /// Verify the chunk invariants of every document (coverage, order, cap) and fail on a
    /// violation. Cheap; on by default in debug builds.
    pub check: bool,
    pub on_error: OnError,
    pub shard: Option<Shard>,
    pub embeddings: Option<EmbeddingMode>,
    /// Long chunks under `reembed`.
    pub long: LongInput,
    /// The late pass's window and stride under `late` (`None`: the model's defaults).
    pub late: Option<crate::embed::late::LateOptions>,
    /// Chunks embedded again (`reembed`) get their context (title and headings) in front.
    pub context_prefix: bool,
    /// Carried from JSONL/Parquet records into every chunk.
    pub meta_fields: Vec<String>,
    /// A progress bar on stderr.
    pub progress: bool,
    /// Input bytes in all, for the progress bar's ETA.
    pub total_bytes: Option<u64>,
}

impl JobOptions {
    /// The job's own settings within their range (the chunker's are [`ChunkerSpec::check_ranges`]).
    ///
    /// # Errors
    /// A batch of no bytes, or no batch in flight.
    pub fn check_ranges(&self) -> Result<()> {
        if self.batch_bytes == 0 {
            return Err(Error::setting("batch_bytes", "must be at least 1 byte (got 0)"));
        }
        if self.channel_depth == 0 {
            return Err(Error::setting("channel_depth", "must be at least 1 batch (got 0)"));
        }
        Ok(())
    }
}

impl Default for JobOptions {
    fn default() -> Self {
        Self {
            batch_bytes: DEFAULT_BATCH_BYTES,
            channel_depth: 2,
            check: cfg!(debug_assertions),
            on_error: OnError::Skip,
            shard: None,
            embeddings: None,
            long: LongInput::Truncate,
            late: None,
            context_prefix: false,
            meta_fields: Vec::new(),
            progress: false,
            total_bytes: None,
        }
    }
}

/// A sink the caller holds on to (see [`Target::Sink`]).
pub type SharedSink = Arc<std::sync::Mutex<dyn crate::output::ChunkSink>>;

/// Where a job's chunks go.
#[derive(Clone)]
pub enum Target {
    /// JSONL on standard output, streamed (no resume, no embeddings).
    Stdout,
    /// Nowhere: the records are serialised and dropped (for `seamcut bench`).
    Discard,
    /// A file, committed in parts ([`commit`]); `resume` continues an interrupted job.
    File { path: PathBuf, format: OutputFormat, resume: bool },
    /// A sink of the caller's, e.g. an [`crate::output::ArrowSink`] whose batches become
    /// a table for the Python bindings (no resume; bad documents go to the job's stats).
    Sink(SharedSink),
    /// A vector database's table ([`crate::db`]): each batch one transaction, with the job's
    /// progress, so that `resume` continues where a killed job stopped.
    #[cfg(feature = "db")]
    Database { target: crate::db::DbTarget, opts: crate::db::DbOptions },
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdout => f.write_str("Stdout"),
            Self::Discard => f.write_str("Discard"),
            Self::File { path, format, resume } => f
                .debug_struct("File")
                .field("path", path)
                .field("format", format)
                .field("resume", resume)
                .finish(),
            Self::Sink(_) => f.write_str("Sink"),
            #[cfg(feature = "db")]
            Self::Database { target, opts } => {
                f.debug_struct("Database").field("target", &target.shown()).field("opts", opts).finish()
            }
        }
    }
}

/// Busy seconds per stage.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct StageSeconds {
    pub read: f64,
    pub prepare: f64,
    pub device: f64,
    /// Of `device`: computing the bands on the device and copying them back (the GPU path;
    /// 0 on the CPU, where the bands are part of `finish`).
    pub band: f64,
    pub finish: f64,
    pub write: f64,
    /// A database output's commits, on their own thread beside `write` (which builds the
    /// rows and waits for the commit before).
    pub database: f64,
}

/// What a job did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct JobStats {
    pub totals: Totals,
    pub seconds: f64,
    pub stages: StageSeconds,
    /// Peak resident memory of the process, bytes (Linux; 0 elsewhere).
    pub peak_rss: u64,
    /// Units embedded (embedding chunkers).
    pub units: u64,
    /// Examples of skipped documents: location and why (at most 10).
    pub skipped_examples: Vec<String>,
    /// Examples of documents chunked by sentence packing after a model error: id and why
    /// (at most 10).
    pub fallback_examples: Vec<String>,
    /// The chunker's settings line (`Chunker::describe`).
    pub chunker: String,
    /// Files met in directory walks and passed over: not of a kind the inputs take, or links
    /// that lead nowhere (broken, or back up the tree).
    pub passed_over: u64,
    /// What this job's LLM requests cost (LLM chunkers).
    pub llm: Option<crate::llm::LlmCost>,
    /// The output held this job's finished run already (`--resume` had nothing to do); the
    /// totals are that run's.
    pub done_before: bool,
}

impl JobStats {
    /// One line for stderr; `what` names the records in the singular (`chunk`, `sentence`).
    #[must_use]
    pub fn summary(&self, what: &str) -> String {
        let t = &self.totals;
        let mb = t.bytes as f64 / 1e6;
        if self.done_before {
            return format!(
                "seamcut: nothing to do: the output holds this job's finished run ({}, {}, {mb:.1} MB), left as it is",
                plural(t.documents, "document"),
                plural(t.chunks, what),
            );
        }
        let mut s = format!(
            "seamcut: {}, {}, {mb:.1} MB, {} in {:.2} s ({:.1} MB/s)",
            plural(t.documents, "document"),
            plural(t.chunks, what),
            plural(t.tokens, "token"),
            self.seconds,
            mb / self.seconds.max(1e-9)
        );
        let st = &self.stages;
        if st.device > 0.0 || st.prepare > 0.0 {
            s.push_str(&format!(
                "; busy s: read {:.2}, prepare {:.2}, device {:.2}, finish {:.2}, write {:.2}",
                st.read, st.prepare, st.device, st.finish, st.write
            ));
            if st.database > 0.0 {
                s.push_str(&format!(", database {:.2}", st.database));
            }
            if st.band > 0.0 {
                s.push_str(&format!(" (of device: bands {:.2})", st.band));
            }
        }
        if self.peak_rss > 0 {
            s.push_str(&format!("; peak RSS {} MB", self.peak_rss >> 20));
        }
        if t.fallbacks > 0 {
            s.push_str(&format!(
                "; {} chunked by sentence packing after a model error",
                plural(t.fallbacks, "document")
            ));
        }
        if t.skipped_total() > 0 {
            let kinds: Vec<String> = t
                .skipped
                .iter()
                .map(|(k, n)| if k.ends_with("record") { plural(*n, k) } else { format!("{n} {k}") })
                .collect();
            s.push_str(&format!(
                "; skipped {} ({}): {}",
                plural(t.skipped_total(), "document"),
                kinds.join(", "),
                self.skipped_examples.join("; ")
            ));
        }
        if self.passed_over > 0 {
            s.push_str(&format!(
                "; passed over {} in directories (not {}, or links that lead nowhere)",
                plural(self.passed_over, "file"),
                crate::corpus::WALKED_KINDS
            ));
        }
        if !self.chunker.is_empty() {
            s.push_str(&format!("; {}", self.chunker));
        }
        if let Some(c) = &self.llm {
            s.push_str(&format!("; {}", c.summary()));
            if t.bytes > 0 {
                let per_mb = |x: u64| x as f64 / mb;
                s.push_str(&format!(
                    " ({:.0} requests and {:.0} prompt tokens per MB)",
                    per_mb(c.requests()),
                    per_mb(c.prompt_tokens + c.cached_prompt_tokens)
                ));
            }
        }
        s
    }
}

/// Peak resident set size of this process in bytes (`VmHWM`), 0 where unknown.
#[must_use]
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// A corpus job: the chunker, the model for `--embeddings reembed` with a baseline, and a
/// fingerprint of everything that decides its output (what a resume must match).
pub struct Job<'a> {
    pub chunker: &'a dyn Chunker,
    /// The model that embeds chunks for [`EmbeddingMode::Reembed`]; embedding chunkers use
    /// their own when this is `None`.
    pub embedder: Option<Arc<dyn Embedder>>,
    pub fingerprint: String,
    pub opts: JobOptions,
}

/// Chunk every document and write its chunks to `target`.
///
/// # Errors
/// On a fatal input error (an input named explicitly that cannot be read), a document's
/// error under [`OnError::Stop`], a failing writer, or settings that do not fit (Parquet or
/// embeddings on stdout, `mean` embeddings with a baseline).
pub fn chunk_corpus(
    docs: impl Iterator<Item = Result<Document>> + Send,
    job: &Job<'_>,
    target: &Target,
) -> Result<JobStats> {
    stages::run(docs, job, target)
}

/// A whole corpus job as one value: what the CLI's `seamcut chunk` (and a service or a
/// binding) maps its arguments to. [`CorpusJob::run`] builds the chunker from the spec,
/// loads the model `--embeddings reembed` needs for a baseline, reads the inputs and runs
/// [`chunk_corpus`].
#[derive(Debug, Clone)]
pub struct CorpusJob {
    pub spec: ChunkerSpec,
    /// Files, directories, or `-` for stdin.
    pub inputs: Vec<String>,
    pub read: ReadOptions,
    pub opts: JobOptions,
    pub target: Target,
}

impl CorpusJob {
    /// What decides the job's output bytes: a resumed job must match it.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        let (format, path) = match &self.target {
            Target::File { format, path, .. } => (Some(format.extension()), Some(path.display().to_string())),
            #[cfg(feature = "db")]
            Target::Database { target, .. } => (Some("database"), Some(target.shown())),
            _ => (None, None),
        };
        serde_json::json!({
            "seamcut": env!("CARGO_PKG_VERSION"),
            "spec": self.spec,
            "inputs": self.inputs,
            "read": {
                "format": format!("{:?}", self.read.format),
                "id_field": self.read.id_field,
                "text_field": self.read.text_field,
                "meta_fields": self.read.meta_fields,
                "lossy": self.read.lossy,
            },
            "shard": self.opts.shard,
            "embeddings": self.opts.embeddings,
            "long": format!("{:?}", self.opts.long),
            "context_prefix": self.opts.context_prefix,
            "output": [format, path],
        })
        .to_string()
    }

    /// How the job makes its vectors besides the model (a database records it: vectors made
    /// another way are not comparable with them). Each setting only where it changes them.
    #[cfg(feature = "db")]
    fn vectors(&self, chunker: &dyn Chunker, opts: &JobOptions) -> String {
        let mode = opts.embeddings.map(|m| m.resolve(chunker.unit_model().is_some()));
        let reembeds = matches!(mode, Some(EmbeddingMode::Reembed | EmbeddingMode::Blend));
        let late = matches!(mode, Some(EmbeddingMode::Late | EmbeddingMode::Blend));
        let mut v = serde_json::json!({"embeddings": mode});
        if let Some(p) = &self.spec.prompt_name {
            v["prompt_name"] = p.as_str().into();
        }
        if let Some(p) = &self.spec.prompt {
            v["prompt"] = p.as_str().into();
        }
        if let Some(d) = self.spec.dims {
            v["dims"] = d.into();
        }
        if reembeds {
            v["long"] = format!("{:?}", opts.long).to_lowercase().into();
            v["context_prefix"] = opts.context_prefix.into();
        }
        if let Some(l) = opts.late.as_ref().filter(|_| late) {
            v["late"] = serde_json::json!({"window": l.window, "stride": l.stride});
        }
        v.to_string()
    }

    /// Run the job on its inputs.
    ///
    /// # Errors
    /// As [`ChunkerSpec::build`] and [`chunk_corpus`].
    pub fn run(&self) -> Result<JobStats> {
        let docs = Documents::new(self.inputs.iter().map(|s| Input::parse(s)).collect(), self.read.clone());
        let passed_over = docs.passed_over();
        let mut stats = self.run_on(docs)?;
        stats.passed_over = passed_over.load(std::sync::atomic::Ordering::Relaxed);
        Ok(stats)
    }

    /// Run the job on documents from elsewhere (a generated corpus, another reader) instead
    /// of its inputs; everything else as [`Self::run`].
    ///
    /// # Errors
    /// As [`Self::run`].
    pub fn run_on(&self, docs: impl Iterator<Item = Result<Document>> + Send) -> Result<JobStats> {
        self.run_with(self.spec.build()?.as_ref(), docs)
    }

    /// [`Self::run_on`] with a chunker the caller built from `self.spec` already (a service
    /// or a binding that keeps one chunker for many calls).
    ///
    /// # Errors
    /// As [`Self::run`].
    pub fn run_with(
        &self,
        chunker: &dyn Chunker,
        docs: impl Iterator<Item = Result<Document>> + Send,
    ) -> Result<JobStats> {
        crate::output::check_meta_fields(&self.read.meta_fields)?;
        self.opts.check_ranges()?;
        let embedder = match self.opts.embeddings {
            Some(_) if chunker.unit_model().is_none() => Some(self.spec.load_model()?.embedder.clone()),
            _ => None,
        };
        let mut opts = self.opts.clone();
        opts.meta_fields.clone_from(&self.read.meta_fields);
        if matches!(opts.embeddings, Some(EmbeddingMode::Late | EmbeddingMode::Blend)) && opts.late.is_none()
        {
            opts.late = Some(self.spec.late_options(&*self.spec.load_model()?)?);
        }
        if opts.progress && opts.total_bytes.is_none() {
            let inputs: Vec<Input> = self.inputs.iter().map(|s| Input::parse(s)).collect();
            opts.total_bytes = crate::corpus::total_bytes(&inputs, self.read.format);
        }
        let job = Job { chunker, embedder, fingerprint: self.fingerprint(), opts };
        #[cfg(feature = "db")]
        if let Target::Database { target, opts } = &self.target {
            // The table records the model its vectors come from, and how they were made.
            let m = self.spec.load_model()?;
            let model = format!("{} ({})", m.name, m.fingerprint.as_deref().unwrap_or("no fingerprint"));
            let vectors = self.vectors(chunker, &job.opts);
            let target = Target::Database {
                target: target.clone(),
                opts: crate::db::DbOptions { model, vectors, ..opts.clone() },
            };
            return chunk_corpus(docs, &job, &target);
        }
        chunk_corpus(docs, &job, &self.target)
    }
}

/// Use `n` threads for the CPU stages (rayon's global pool); 0 keeps the default (one per
/// core). Call before any work: the pool can be set once per process.
///
/// # Errors
/// If the pool was already set up.
pub fn set_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| Error::Config(format!("cannot set {n} threads: {e}")))?;
    // candle's CPU backend sizes its own pool and its matrix products from these variables,
    // not from rayon's global pool: without them `-j 1` (or one thread per Ray actor) would
    // still run the encoder on every core. Set once, before any model runs (the global pool
    // being new says no work has run yet).
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
    Ok(())
}

/// Write the sentence units the engine uses (trimmed, cut at `cap`), one per line. A bad
/// document (a JSONL line or Parquet row that is not valid, a bad file met in a directory
/// walk) is skipped as a corpus job skips it: counted, and listed in `errors` (one JSON
/// object a line, as a job's errors file) or, without, on stderr; `on_error` stop stops.
///
/// # Errors
/// On an unreadable input named explicitly, a bad document under [`OnError::Stop`], or a
/// failing writer.
pub fn segment_corpus(
    docs: impl Iterator<Item = Result<Document>>,
    sizer: &dyn Sizer,
    cap: Cap,
    writer: &mut JsonlWriter,
    on_error: OnError,
    mut errors: Option<&mut JsonlWriter>,
) -> Result<JobStats> {
    let t0 = Instant::now();
    let segmenter = Segmenter::default();
    let mut totals = Totals::default();
    let mut batch = Vec::new();
    let mut bytes = 0;
    let mut skipped_examples = Vec::new();
    let mut docs = docs.peekable();
    while docs.peek().is_some() {
        while let Some(d) = docs.next_if(|_| bytes < DEFAULT_BATCH_BYTES) {
            let d = match d {
                Ok(d) => d,
                Err(e) if e.is_per_document() && on_error == OnError::Skip => {
                    *totals.skipped.entry(e.kind().to_string()).or_default() += 1;
                    if skipped_examples.len() < 10 {
                        skipped_examples.push(e.to_string());
                    }
                    let rec =
                        serde_json::json!({"kind": e.kind(), "error": e.to_string(), "action": "skipped"});
                    match errors.as_deref_mut() {
                        Some(w) => w.write(&rec)?,
                        None => eprintln!("seamcut: skipped {e}"),
                    }
                    continue;
                }
                Err(e) if e.is_per_document() => return Err(Error::Stopped(Box::new(e))),
                Err(e) => return Err(e),
            };
            bytes += d.text.len();
            batch.push(d);
        }
        let results: Vec<_> = batch
            .par_iter()
            .with_max_len(1)
            .map(|d| sentence_units(&d.text, &segmenter, sizer, cap.limit()))
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
                    start: doc.source_offset(t.start),
                    end: doc.source_offset(t.end),
                    text: t.text(&doc.text),
                })?;
                index += 1;
            }
            totals.documents += 1;
            totals.bytes += doc.text.len() as u64;
            totals.tokens += units.tokens.iter().map(|&t| t as u64).sum::<u64>();
        }
        totals.chunks = writer.written;
        batch.clear();
        bytes = 0;
    }
    writer.flush()?;
    if let Some(w) = errors {
        w.flush()?;
    }
    Ok(JobStats {
        totals,
        seconds: t0.elapsed().as_secs_f64(),
        peak_rss: peak_rss(),
        skipped_examples,
        ..JobStats::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_ids_and_parse_strictly() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        for id in ["a", "b", "doc-17", "", "книга"] {
            assert_eq!(shards.iter().filter(|s| s.contains(id)).count(), 1, "{id}");
        }
        // The hash is fixed: these values must never change (shards across versions).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert!(Shard::parse("3/3").is_err() && Shard::parse("1/0").is_err() && Shard::parse("x").is_err());
        assert_eq!(Shard::parse("1/4").unwrap(), Shard { index: 1, count: 4 });
    }
}
