//! The stages of a corpus job, each on its own thread, and the channels between them.
//! See the module doc of [`super`] for the picture.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

use super::batch::{self, VectorPlan};
use super::commit::Committer;
use super::{peak_rss, EmbeddingMode, Job, JobStats, OnError, StageSeconds, Target};
use crate::chunk::ChunkSpan;
use crate::chunkers::{DocChunks, Pending};
use crate::corpus::Document;
use crate::output::{ChunkSink, Columns, JsonlSink, JsonlWriter};
use crate::totals::Totals;
use crate::{Error, Result};

/// One input item: a document, or a document that could not be read.
enum Item {
    Doc(Document),
    Bad(Error),
}

struct Batch {
    items: Vec<Item>,
    /// Text bytes of the batch's documents.
    bytes: u64,
}

impl Batch {
    /// The texts of the batch's documents (bad items have none), in order.
    fn texts(&self) -> Vec<&str> {
        self.items
            .iter()
            .filter_map(|it| match it {
                Item::Doc(d) => Some(d.text.as_str()),
                Item::Bad(_) => None,
            })
            .collect()
    }
}

/// A batch between the prepare and finish stages.
struct Staged<'c> {
    batch: Batch,
    pending: Pending<'c>,
}

enum Outcome {
    Chunks(DocChunks),
    Failed(Error),
}

struct Finished {
    batch: Batch,
    /// One per item.
    outcomes: Vec<Outcome>,
    units: u64,
}

type Msg<T> = Result<T>;

/// Receive messages until the channel closes, passing errors on untouched, and add the
/// busy time of `f` (not the waiting) to the stage's seconds.
fn stage<A, B>(rx: &Receiver<Msg<A>>, tx: &SyncSender<Msg<B>>, mut f: impl FnMut(A) -> Result<B>) -> f64 {
    let mut busy = 0.0;
    for msg in rx {
        let t0 = Instant::now();
        let out = msg.and_then(&mut f);
        busy += t0.elapsed().as_secs_f64();
        let fatal = out.is_err();
        if tx.send(out).is_err() || fatal {
            break;
        }
    }
    busy
}

/// Where the write stage puts a finished batch: a committed part of an output file, the
/// caller's sink, or JSONL on stdout (or nowhere).
enum Writer<'a> {
    Commit(Committer),
    Caller(std::sync::MutexGuard<'a, dyn ChunkSink + 'static>),
    Stream(JsonlSink),
    /// A database's table, a batch a transaction (its bad documents listed on stderr).
    #[cfg(feature = "db")]
    Database(crate::db::Overlapped, &'a crate::db::DbTarget, Columns),
}

impl<'a> Writer<'a> {
    fn open(target: &'a Target, job: &Job<'_>, dim: Option<usize>) -> Result<Self> {
        let meta = job.opts.meta_fields.clone();
        Ok(match target {
            Target::Sink(s) => {
                Self::Caller(s.lock().map_err(|_| Error::Internal("the caller's sink is poisoned".into()))?)
            }
            Target::File { path, format, resume } => {
                let columns = Columns { meta_fields: meta, dim, windows: job.chunker.windows().is_some() };
                Self::Commit(Committer::open(path, *format, columns, job.fingerprint.clone(), *resume)?)
            }
            #[cfg(feature = "db")]
            Target::Database { target, opts } => {
                let columns = Columns { meta_fields: meta, dim, windows: false };
                let writer = target.open(columns.clone(), &job.fingerprint, opts.clone())?;
                Self::Database(crate::db::Overlapped::new(writer), target, columns)
            }
            Target::Stdout if dim.is_some() => {
                return Err(Error::setting(
                    "embeddings",
                    format!("needs an output file ({})", crate::error::named("output")),
                ));
            }
            Target::Stdout => Self::Stream(JsonlSink::new(Box::new(std::io::stdout()), None, meta)),
            Target::Discard => Self::Stream(JsonlSink::new(Box::new(std::io::sink()), None, meta)),
        })
    }

    /// What a resumed job has committed already.
    fn totals(&self) -> Totals {
        match self {
            Self::Commit(c) => c.totals().clone(),
            #[cfg(feature = "db")]
            Self::Database(w, ..) => w.committed().clone(),
            _ => Totals::default(),
        }
    }

    /// Whether the output is this job's, whole already: a resumed finished job, with
    /// nothing to read or write.
    fn finished(&self) -> bool {
        match self {
            Self::Commit(c) => c.finished(),
            #[cfg(feature = "db")]
            Self::Database(w, ..) => w.complete(),
            _ => false,
        }
    }

    /// Whether the output is complete already (a resumed job that had finished).
    fn complete(&self) -> bool {
        match self {
            Self::Commit(c) => c.complete(),
            #[cfg(feature = "db")]
            Self::Database(w, ..) => w.complete(),
            _ => false,
        }
    }

    fn write(
        &mut self,
        f: Finished,
        totals: &mut Totals,
        stats: &mut JobStats,
        on_error: OnError,
    ) -> Result<()> {
        match self {
            Self::Commit(c) => {
                let commit = || {
                    let mut part = c.begin()?;
                    let errors = ErrorsTo::File(&mut part.errors);
                    write_batch(f, &mut *part.sink, errors, totals, stats, on_error)?;
                    c.commit(part, totals.clone())
                };
                commit().map_err(super::commit::out_of_room)
            }
            Self::Caller(s) => write_batch(f, &mut **s, ErrorsTo::Stats, totals, stats, on_error),
            Self::Stream(s) => write_batch(f, s, ErrorsTo::Stderr, totals, stats, on_error),
            #[cfg(feature = "db")]
            Self::Database(w, target, columns) => {
                let f = unstorable_to_failed(f, target);
                let mut rows = crate::db::Rows::new(columns.clone());
                write_batch(f, &mut rows, ErrorsTo::Stderr, totals, stats, on_error)?;
                w.commit(rows, totals.clone())
            }
        }
    }

    /// Finish the output; the seconds a database's commits took (0 for the others).
    fn finish(self, totals: &Totals) -> Result<f64> {
        // The totals go with a database's last transaction; a file's are in its manifest.
        let _ = totals;
        match self {
            Self::Commit(c) => c.finish().map(|()| 0.0).map_err(super::commit::out_of_room),
            Self::Caller(mut s) => s.finish().map(|()| 0.0),
            Self::Stream(mut s) => s.finish().map(|()| 0.0),
            #[cfg(feature = "db")]
            Self::Database(w, ..) => w.finish(totals),
        }
    }
}

/// The job: five stages on scoped threads, connected by bounded channels; wiring only.
pub(super) fn run(
    docs: impl Iterator<Item = Result<Document>> + Send,
    job: &Job<'_>,
    target: &Target,
) -> Result<JobStats> {
    let t0 = Instant::now();
    let opts = &job.opts;
    let plan = VectorPlan::new(job.chunker, opts.embeddings, job.embedder.clone(), opts.long, opts.late)?
        .map(|p| VectorPlan { context_prefix: opts.context_prefix, ..p });
    let mut writer = Writer::open(target, job, plan.as_ref().map(VectorPlan::dim))?;
    // A resumed job goes on after what its output holds; a finished one has nothing to read.
    let mut totals = writer.totals();
    let done_before = writer.finished();
    // A finished file has nothing left to do; a database's finish still runs (`--hnsw`).
    if done_before && matches!(writer, Writer::Commit(_)) {
        let chunker = job.chunker.describe();
        let seconds = t0.elapsed().as_secs_f64();
        return Ok(JobStats { totals, chunker, done_before, seconds, ..JobStats::default() });
    }
    let skip = if writer.complete() { u64::MAX } else { totals.items };
    let depth = opts.channel_depth.max(1);
    let (tx_read, rx_read) = sync_channel::<Msg<Batch>>(depth);
    let (tx_prep, rx_prep) = sync_channel::<Msg<Staged<'_>>>(depth);
    let (tx_dev, rx_dev) = sync_channel::<Msg<Staged<'_>>>(depth);
    let (tx_fin, rx_fin) = sync_channel::<Msg<Finished>>(depth);
    let progress = progress_bar(opts.progress, opts.total_bytes);
    let mut stats = JobStats { chunker: job.chunker.describe(), done_before, ..JobStats::default() };
    if let Some(p) = plan.as_ref().filter(|p| matches!(p.mode, EmbeddingMode::Late | EmbeddingMode::Blend)) {
        // The late windows may depend on the model and the cap (`Model::late_options`): say which.
        stats.chunker += &format!("; late windows {}", p.late);
    }
    let llm_before = job.chunker.llm_cost();
    let plan = plan.as_ref();
    let mut band_busy = 0.0;
    let result = std::thread::scope(|s| -> Result<()> {
        let reader = s.spawn(move || read(docs, opts, skip, &tx_read));
        let prep = s.spawn(move || {
            stage(&rx_read, &tx_prep, |batch| {
                let pending = batch::prepare(job.chunker, &batch.texts(), plan);
                Ok(Staged { batch, pending })
            })
        });
        let band_busy = &mut band_busy;
        let dev = s.spawn(move || {
            stage(&rx_prep, &tx_dev, |mut st: Staged<'_>| {
                *band_busy += st.pending.embed().bands;
                Ok(st)
            })
        });
        let fin = s.spawn(move || stage(&rx_dev, &tx_fin, |st| finish(job, plan, st)));
        let (outcome, write_busy) =
            write_all(&rx_fin, &mut writer, &mut totals, &mut stats, progress.as_ref(), opts.on_error);
        // Closing the last receiver stops the stages upstream at their next send.
        drop(rx_fin);
        let busy = |h: std::thread::ScopedJoinHandle<'_, f64>| {
            h.join().map_err(|_| Error::Internal("a stage panicked".into()))
        };
        let (read, prepare, device, finish) = (busy(reader)?, busy(prep)?, busy(dev)?, busy(fin)?);
        stats.stages =
            StageSeconds { read, prepare, device, band: 0.0, finish, write: write_busy, database: 0.0 };
        outcome
    });
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    result?;
    stats.stages.database = writer.finish(&totals)?;
    stats.stages.band = band_busy;
    stats.totals = totals;
    stats.seconds = t0.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss();
    stats.llm = job.chunker.llm_cost().zip(llm_before).map(|(now, before)| now.since(&before));
    Ok(stats)
}

/// The write stage, on the job's own thread: each finished batch into the output, in order,
/// until the batches end or one fails; the outcome, and the seconds it was busy.
fn write_all(
    rx: &Receiver<Msg<Finished>>,
    writer: &mut Writer,
    totals: &mut Totals,
    stats: &mut JobStats,
    progress: Option<&indicatif::ProgressBar>,
    on_error: OnError,
) -> (Result<()>, f64) {
    let mut busy = 0.0;
    for msg in rx {
        let t = Instant::now();
        let r = msg.and_then(|f| {
            stats.units += f.units;
            let processed = f.batch.bytes;
            writer.write(f, totals, stats, on_error)?;
            if let Some(p) = progress {
                p.inc(processed);
                p.set_message(format!(
                    "{}, {}",
                    crate::wording::plural(totals.documents, "doc"),
                    crate::wording::plural(totals.chunks, "chunk")
                ));
            }
            Ok(())
        });
        busy += t.elapsed().as_secs_f64();
        if r.is_err() {
            return (r, busy);
        }
    }
    (Ok(()), busy)
}

fn progress_bar(on: bool, total: Option<u64>) -> Option<indicatif::ProgressBar> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if !on {
        return None;
    }
    let (bar, template) = match total {
        Some(n) => (
            ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
            "{bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}  {msg}",
        ),
        None => (
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            "{spinner} {bytes} {bytes_per_sec}  {msg}",
        ),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}

/// The read stage: documents in batches of about `batch_bytes`, the shard's only, past
/// the `skip` items a resumed job has already committed. A fatal input error ends it.
fn read(
    docs: impl Iterator<Item = Result<Document>>,
    opts: &super::JobOptions,
    skip: u64,
    tx: &SyncSender<Msg<Batch>>,
) -> f64 {
    let mut busy = 0.0;
    let mut batch = Batch { items: Vec::new(), bytes: 0 };
    let mut seen = 0u64;
    let mut weight = 0usize;
    let mut t = Instant::now();
    for item in docs {
        let item = match item {
            Ok(d) if opts.shard.is_some_and(|s| !s.contains(&d.id)) => continue,
            Ok(d) => Item::Doc(d),
            // A bad record belongs to the shard its message hashes to, so that exactly one
            // shard reports it.
            Err(e) if e.is_per_document() => {
                if opts.shard.is_some_and(|s| !s.contains(&e.to_string())) {
                    continue;
                }
                Item::Bad(e)
            }
            Err(e) => {
                busy += t.elapsed().as_secs_f64();
                let _ = tx.send(Err(e));
                return busy;
            }
        };
        seen += 1;
        if seen <= skip {
            continue;
        }
        match &item {
            Item::Doc(d) => {
                batch.bytes += d.text.len() as u64;
                weight += d.text.len().max(1);
            }
            Item::Bad(_) => weight += 1,
        }
        batch.items.push(item);
        if weight >= opts.batch_bytes {
            busy += t.elapsed().as_secs_f64();
            if tx.send(Ok(std::mem::replace(&mut batch, Batch { items: Vec::new(), bytes: 0 }))).is_err() {
                return busy;
            }
            weight = 0;
            t = Instant::now();
        }
    }
    busy += t.elapsed().as_secs_f64();
    if !batch.items.is_empty() {
        let _ = tx.send(Ok(batch));
    }
    busy
}

/// The finish stage: the chunker's last stage and the chunk vectors (the batch path), then
/// the invariant check; one outcome per item.
fn finish(job: &Job<'_>, plan: Option<&VectorPlan>, st: Staged<'_>) -> Result<Finished> {
    let Staged { batch, pending } = st;
    let units = pending.units() as u64;
    let texts = batch.texts();
    let mut results = batch::finish(pending, &texts, plan).into_iter();
    drop(texts);
    let mut outcomes = Vec::with_capacity(batch.items.len());
    for it in &batch.items {
        outcomes.push(match it {
            Item::Bad(_) => Outcome::Failed(Error::Internal("a bad item has no outcome".into())),
            Item::Doc(d) => match results.next() {
                Some(Ok(c)) => {
                    if job.opts.check {
                        check_chunks(d, &c.spans)?;
                    }
                    Outcome::Chunks(c)
                }
                // The job's own problem (an LLM server that cannot be reached): it ends here.
                Some(Err(e @ Error::LlmUnreachable(_))) => return Err(e),
                Some(Err(e)) => Outcome::Failed(e),
                None => Outcome::Failed(Error::Internal("a result per document".into())),
            },
        });
    }
    Ok(Finished { batch, outcomes, units })
}

fn check_chunks(doc: &Document, chunks: &[ChunkSpan]) -> Result<()> {
    crate::chunk::verify(&doc.text, chunks)
        .map_err(|m| Error::Internal(format!("chunk invariant broken on {}: {m}", doc.id)))
}

enum ErrorsTo<'a> {
    File(&'a mut JsonlWriter),
    Stderr,
    /// Only in the job's stats (a caller's sink: the caller reports them).
    Stats,
}

/// A document a database cannot store as it is (a NUL in its text) fails, counted and listed
/// as a skipped document, rather than fail its batch's transaction.
#[cfg(feature = "db")]
fn unstorable_to_failed(mut f: Finished, db: &crate::db::DbTarget) -> Finished {
    for (item, outcome) in f.batch.items.iter().zip(f.outcomes.iter_mut()) {
        if let (Item::Doc(d), Outcome::Chunks(c)) = (item, &*outcome) {
            if let Some(why) = db.rejects(d, &c.spans) {
                *outcome = Outcome::Failed(Error::Rejected(why));
            }
        }
    }
    f
}

/// A line of the errors file.
#[derive(serde::Serialize)]
struct ErrorRecord<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    doc_id: Option<&'a str>,
    kind: &'a str,
    error: String,
    action: &'a str,
}

fn write_batch(
    f: Finished,
    sink: &mut dyn ChunkSink,
    mut errors: ErrorsTo<'_>,
    totals: &mut Totals,
    stats: &mut JobStats,
    on_error: OnError,
) -> Result<()> {
    let Finished { batch, outcomes, .. } = f;
    for (item, outcome) in batch.items.into_iter().zip(outcomes) {
        let (doc_id, err) = match (item, outcome) {
            (Item::Doc(d), Outcome::Chunks(DocChunks { spans, vectors, fallback })) => {
                sink.write_doc(&d, &spans, vectors.as_deref())?;
                totals.documents += 1;
                totals.chunks += spans.len() as u64;
                totals.bytes += d.text.len() as u64;
                totals.tokens += spans.iter().map(|c| c.tokens as u64).sum::<u64>();
                totals.items += 1;
                if let Some(why) = fallback {
                    totals.fallbacks += 1;
                    let rec = ErrorRecord {
                        doc_id: Some(&d.id),
                        kind: "model",
                        error: why,
                        action: "sentence-packing",
                    };
                    match &mut errors {
                        ErrorsTo::File(w) => w.write(&rec)?,
                        ErrorsTo::Stderr => eprintln!(
                            "seamcut: warning: {}: {}; chunked by sentence packing",
                            d.id, rec.error
                        ),
                        ErrorsTo::Stats => {
                            if stats.fallback_examples.len() < 10 {
                                stats.fallback_examples.push(format!("{}: {}", d.id, rec.error));
                            }
                        }
                    }
                }
                continue;
            }
            (Item::Doc(d), Outcome::Failed(e)) => (Some(d.id), e),
            (Item::Bad(e), _) => (None, e),
        };
        if on_error == OnError::Stop {
            let e = match doc_id {
                Some(id) => Error::Compute(format!("{id}: {err}")),
                None => err,
            };
            return Err(Error::Stopped(Box::new(e)));
        }
        totals.items += 1;
        *totals.skipped.entry(err.kind().to_string()).or_default() += 1;
        let msg = match &doc_id {
            Some(id) => format!("{id}: {err}"),
            None => err.to_string(),
        };
        if stats.skipped_examples.len() < 10 {
            stats.skipped_examples.push(msg.clone());
        }
        let rec = ErrorRecord {
            doc_id: doc_id.as_deref(),
            kind: err.kind(),
            error: err.to_string(),
            action: "skipped",
        };
        match &mut errors {
            ErrorsTo::File(w) => w.write(&rec)?,
            ErrorsTo::Stderr => eprintln!("seamcut: skipped {msg}"),
            ErrorsTo::Stats => {}
        }
    }
    Ok(())
}
