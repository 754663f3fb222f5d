//! The stages of a corpus job, each on its own thread, and the channels between them.
//! See the module doc of [`super`] for the picture.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use super::commit::{Committer, Totals};
use super::{peak_rss, EmbeddingMode, Job, JobStats, OnError, StageSeconds, Target};
use crate::band::Band;
use crate::chunk::ChunkSpan;
use crate::chunkers::semantic::{known_ids_for, unit_texts, SemanticChunker};
use crate::chunkers::units::{UnitIds, Units};
use crate::corpus::Document;
use crate::embed::{self, EmbedOptions, Embedder};
use crate::output::{ChunkSink, JsonlSink, JsonlWriter};
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

/// What the prepare stage hands the device stage.
enum Work {
    /// Baselines: chunked already, one result per item.
    Chunked(Vec<Result<Vec<ChunkSpan>>>),
    /// Embedding chunkers: each document's units and where its vectors start, and the
    /// batch's unit texts tokenized and planned.
    Semantic { units: Vec<Units>, offsets: Vec<usize>, prepared: embed::Prepared },
}

struct Staged {
    batch: Batch,
    work: Work,
    /// The batch's unit vectors, after the device stage.
    vectors: Option<Result<Vec<f32>>>,
    /// Or, on the device path ([`SemanticChunker::uses_device_bands`]), each document's band.
    bands: Option<Result<Vec<Band>>>,
}

enum Outcome {
    Chunks { spans: Vec<ChunkSpan>, embeddings: Option<Vec<f32>>, fallback: Option<String> },
    Failed(Error),
}

struct Finished {
    batch: Batch,
    outcomes: Vec<Outcome>,
    units: u64,
}

type Msg<T> = Result<T>;

/// A document's chunks, their vectors if computed, and the reason for a fallback if any.
type DocResult = Result<(Vec<ChunkSpan>, Option<Vec<f32>>, Option<String>)>;

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

pub(super) fn run(
    docs: impl Iterator<Item = Result<Document>> + Send,
    job: &Job<'_>,
    target: &Target,
) -> Result<JobStats> {
    let t0 = Instant::now();
    let opts = &job.opts;
    let semantic = job.chunker.semantic();
    let embedder: Option<Arc<dyn Embedder>> =
        job.embedder.clone().or_else(|| semantic.map(|s| s.embedder().clone()));
    let dim = match opts.embeddings {
        None => None,
        Some(EmbeddingMode::Mean) if semantic.is_none() => {
            return Err(Error::Config(format!(
            "--embeddings mean needs an embedding chunker ({} has no unit vectors); use --embeddings reembed",
            job.chunker.name()
        )))
        }
        Some(_) => {
            Some(embedder.as_ref().ok_or_else(|| Error::Config("--embeddings needs a model".into()))?.dim())
        }
    };
    let mut committer = match target {
        Target::Sink(_) => None,
        Target::Stdout | Target::Discard => {
            if dim.is_some() && matches!(target, Target::Stdout) {
                return Err(Error::Config("--embeddings needs an output file (-o)".into()));
            }
            None
        }
        Target::File { path, format, resume } => Some(Committer::open(
            path,
            *format,
            opts.meta_fields.clone(),
            dim,
            job.fingerprint.clone(),
            *resume,
        )?),
    };
    let mut totals = committer.as_ref().map(|c| c.totals().clone()).unwrap_or_default();
    let skip = totals.items;
    let done = committer.as_ref().is_some_and(Committer::complete);

    let depth = opts.channel_depth.max(1);
    let (tx_read, rx_read) = sync_channel::<Msg<Batch>>(depth);
    let (tx_prep, rx_prep) = sync_channel::<Msg<Staged>>(depth);
    let (tx_dev, rx_dev) = sync_channel::<Msg<Staged>>(depth);
    let (tx_fin, rx_fin) = sync_channel::<Msg<Finished>>(depth);
    let sink: Box<dyn std::io::Write + Send> = if matches!(target, Target::Discard) {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stdout())
    };
    let mut stdout_sink = JsonlSink::new(sink, None, opts.meta_fields.clone());
    let mut caller_sink = match target {
        Target::Sink(s) => {
            Some(s.lock().map_err(|_| Error::Internal("the caller's sink is poisoned".into()))?)
        }
        _ => None,
    };
    let progress = progress_bar(opts.progress, opts.total_bytes);
    let mut stats = JobStats { chunker: job.chunker.describe(), ..JobStats::default() };
    let llm_before = job.chunker.llm_cost();

    // Seconds the device stage spent on bands (device path only), out of its busy time.
    let band_busy = std::sync::Mutex::new(0.0f64);
    let result = std::thread::scope(|s| -> Result<()> {
        let reader = s.spawn(move || read(docs, opts, if done { u64::MAX } else { skip }, &tx_read));
        let prep = s.spawn(move || stage(&rx_read, &tx_prep, |b| Ok(prepare(job, semantic, b))));
        let emb = embedder.clone();
        // Rules that read only the band get it from the device, unless the unit vectors are
        // wanted on the host anyway (`--embeddings mean`).
        let device_bands =
            semantic.filter(|sc| sc.uses_device_bands() && opts.embeddings != Some(EmbeddingMode::Mean));
        let band_busy = &band_busy;
        let dev = s.spawn(move || {
            stage(&rx_prep, &tx_dev, |mut st: Staged| {
                if let (Work::Semantic { prepared, units, .. }, Some(e)) = (&mut st.work, &emb) {
                    let on_device = match device_bands {
                        Some(sc) => embed::run_tensor(e.as_ref(), prepared).and_then(|v| {
                            let Some((v, _)) = v else { return Ok(None) };
                            // The encoder's work is queued asynchronously: wait for it, so
                            // that the band's time is its own.
                            v.device().synchronize()?;
                            let t = Instant::now();
                            let bands = sc.bands_of(&v, units);
                            *band_busy.lock().unwrap_or_else(std::sync::PoisonError::into_inner) +=
                                t.elapsed().as_secs_f64();
                            bands.map(Some)
                        }),
                        None => Ok(None),
                    };
                    match on_device {
                        Ok(Some(bands)) => st.bands = Some(Ok(bands)),
                        Err(err) => st.bands = Some(Err(err)),
                        // Not applicable (a unit spans several windows): the host path.
                        Ok(None) => st.vectors = Some(embed::run(e.as_ref(), prepared).map(|(v, _)| v.data)),
                    }
                    // The token ids are done with: free them before the batch waits downstream.
                    *prepared = embed::Prepared::default();
                }
                Ok(st)
            })
        });
        let emb = embedder.clone();
        let fin = s.spawn(move || stage(&rx_dev, &tx_fin, |st| finish(job, semantic, emb.as_deref(), st)));

        let mut write_busy = 0.0;
        let mut outcome = Ok(());
        for msg in &rx_fin {
            let t = Instant::now();
            let r = msg.and_then(|f| {
                stats.units += f.units;
                let processed = f.batch.bytes;
                match committer.as_mut() {
                    Some(c) => {
                        let mut part = c.begin()?;
                        write_batch(
                            f,
                            &mut *part.sink,
                            ErrorsTo::File(&mut part.errors),
                            &mut totals,
                            &mut stats,
                            opts.on_error,
                        )?;
                        c.commit(part, totals.clone())
                    }
                    None => {
                        let (sink, errors): (&mut dyn ChunkSink, _) = match caller_sink.as_deref_mut() {
                            Some(s) => (s, ErrorsTo::Stats),
                            None => (&mut stdout_sink, ErrorsTo::Stderr),
                        };
                        write_batch(f, sink, errors, &mut totals, &mut stats, opts.on_error)
                    }
                }
                .map(|()| {
                    if let Some(p) = &progress {
                        p.inc(processed);
                        p.set_message(format!("{} docs, {} chunks", totals.documents, totals.chunks));
                    }
                })
            });
            write_busy += t.elapsed().as_secs_f64();
            if r.is_err() {
                outcome = r;
                break;
            }
        }
        // Closing the last receiver stops the stages upstream at their next send.
        drop(rx_fin);
        let read_busy = reader.join().map_err(|_| Error::Internal("the reader panicked".into()))?;
        let busy = |h: std::thread::ScopedJoinHandle<'_, f64>| {
            h.join().map_err(|_| Error::Internal("a stage panicked".into()))
        };
        stats.stages = StageSeconds {
            read: read_busy,
            prepare: busy(prep)?,
            device: busy(dev)?,
            band: *band_busy.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
            finish: busy(fin)?,
            write: write_busy,
        };
        outcome
    });
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    result?;
    match committer {
        Some(c) => c.finish()?,
        None => match caller_sink.as_deref_mut() {
            Some(s) => s.finish()?,
            None => stdout_sink.finish()?,
        },
    }
    stats.totals = totals;
    stats.seconds = t0.elapsed().as_secs_f64();
    stats.peak_rss = peak_rss();
    stats.llm = job.chunker.llm_cost().zip(llm_before).map(|(now, before)| now.since(&before));
    Ok(stats)
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

fn docs_of(batch: &Batch) -> impl Iterator<Item = (usize, &Document)> {
    batch.items.iter().enumerate().filter_map(|(i, it)| match it {
        Item::Doc(d) => Some((i, d)),
        Item::Bad(_) => None,
    })
}

/// The prepare stage: baselines chunk here; embedding chunkers find units and tokenize.
fn prepare(job: &Job<'_>, semantic: Option<&SemanticChunker>, batch: Batch) -> Staged {
    let Some(sc) = semantic else {
        let texts: Vec<&str> = docs_of(&batch).map(|(_, d)| d.text.as_str()).collect();
        let mut chunked = job.chunker.chunk_batch(&texts).into_iter();
        let results = batch
            .items
            .iter()
            .map(|it| match it {
                Item::Doc(_) => {
                    chunked.next().unwrap_or_else(|| Err(Error::Internal("a result per document".into())))
                }
                Item::Bad(_) => Ok(Vec::new()),
            })
            .collect();
        return Staged { batch, work: Work::Chunked(results), vectors: None, bands: None };
    };
    // Units with the ids that counted them, where the sizer is the model's tokenizer: each
    // unit is then tokenized once, not once to count and again to embed.
    let (units, ids): (Vec<Units>, Vec<UnitIds>) = batch
        .items
        .par_iter()
        .with_max_len(1)
        .map(|it| match it {
            Item::Doc(d) if !d.text.trim().is_empty() => sc.units_with_ids(&d.text),
            _ => (Units::default(), Vec::new()),
        })
        .unzip();
    let mut all: Vec<&str> = Vec::new();
    let mut known: UnitIds = Vec::new();
    let mut offsets = Vec::with_capacity(units.len());
    for ((it, u), ids) in batch.items.iter().zip(&units).zip(ids) {
        offsets.push(all.len());
        if let Item::Doc(d) = it {
            all.extend(unit_texts(&d.text, u));
            known_ids_for(&mut known, u, ids);
        }
    }
    let prepared = embed::prepare_known(sc.embedder().as_ref(), &all, known, sc.embed_options());
    drop(all);
    Staged { batch, work: Work::Semantic { units, offsets, prepared }, vectors: None, bands: None }
}

/// The finish stage: rules and sizing from the vectors, fallbacks, chunk embeddings and the
/// invariant check.
fn finish(
    job: &Job<'_>,
    semantic: Option<&SemanticChunker>,
    embedder: Option<&dyn Embedder>,
    st: Staged,
) -> Result<Finished> {
    let Staged { batch, work, vectors, bands } = st;
    let mut units_total = 0;
    // Per item: spans, unit vectors and unit ranges (for mean embeddings), fallback reason.
    let mut results: Vec<DocResult> = match work {
        Work::Chunked(r) => r.into_iter().map(|r| r.map(|s| (s, None, None))).collect(),
        Work::Semantic { units, offsets, .. } => {
            let sc =
                semantic.ok_or_else(|| Error::Internal("semantic work without a semantic chunker".into()))?;
            let dim = sc.embedder().dim();
            units_total = units.iter().map(|u| u.len() as u64).sum();
            let (bands, vectors) = match bands {
                Some(Ok(b)) => (Some(b), Ok(Vec::new())),
                Some(Err(e)) => (None, Err(e)),
                None => (None, vectors.unwrap_or_else(|| Err(Error::Internal("no vectors".into())))),
            };
            let mean = job.opts.embeddings == Some(EmbeddingMode::Mean);
            batch
                .items
                .par_iter()
                .with_max_len(1)
                .zip(&units)
                .zip(&offsets)
                .enumerate()
                .map(|(i, ((it, u), &off))| {
                    let Item::Doc(d) = it else { return Ok((Vec::new(), None, None)) };
                    if let Some(b) = &bands {
                        return match sc.chunk_with_band(&d.text, u, &b[i]) {
                            Ok(c) => Ok((c.spans, None, None)),
                            Err(e) => {
                                let why = e.to_string();
                                sc.fallback(&d.text, e).map(|s| (s, None, Some(why)))
                            }
                        };
                    }
                    // The batch's vectors, or this document's own pass when the batch failed
                    // (so that one bad document does not cost the others).
                    let own;
                    let v: Result<&[f32]> = match &vectors {
                        Ok(v) => Ok(&v[off * dim..(off + u.len()) * dim]),
                        Err(_) => {
                            own = embed::embed_texts(
                                sc.embedder().as_ref(),
                                &unit_texts(&d.text, u),
                                sc.embed_options(),
                            );
                            own.as_ref()
                                .map(|(e, _)| e.data.as_slice())
                                .map_err(|e| Error::Compute(e.to_string()))
                        }
                    };
                    match v.and_then(|v| sc.chunk_with_vectors(&d.text, u, v).map(|c| (c, v))) {
                        Ok((c, v)) => {
                            let emb = mean.then(|| mean_vectors(v, dim, &c.unit_ranges));
                            Ok((c.spans, emb, None))
                        }
                        Err(e) => {
                            let why = e.to_string();
                            sc.fallback(&d.text, e).map(|s| (s, None, Some(why)))
                        }
                    }
                })
                .collect()
        }
    };
    // Chunk vectors that still need the model: every chunk under `reembed`, fallback
    // documents' chunks under `mean`.
    if job.opts.embeddings.is_some() {
        let model = embedder.ok_or_else(|| Error::Config("--embeddings needs a model".into()))?;
        let want: Vec<usize> = results
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, Ok((s, None, _)) if !s.is_empty()))
            .map(|(i, _)| i)
            .collect();
        let opts = EmbedOptions { long: job.opts.long, ..EmbedOptions::default() };
        let texts_of = |i: usize| -> Vec<&str> {
            match (&batch.items[i], &results[i]) {
                (Item::Doc(d), Ok((s, _, _))) => s.iter().map(|c| &d.text[c.start..c.end]).collect(),
                _ => Vec::new(),
            }
        };
        let all: Vec<&str> = want.iter().flat_map(|&i| texts_of(i)).collect();
        let whole = embed::embed_texts(model, &all, opts).map(|(e, _)| e.data);
        let dim = model.dim();
        let mut at = 0;
        let mut fills = Vec::with_capacity(want.len());
        for &i in &want {
            let texts = texts_of(i);
            let v = match &whole {
                Ok(w) => Ok(w[at * dim..(at + texts.len()) * dim].to_vec()),
                Err(_) => embed::embed_texts(model, &texts, opts).map(|(e, _)| e.data),
            };
            at += texts.len();
            fills.push((i, v));
        }
        for (i, v) in fills {
            let r = std::mem::replace(&mut results[i], Ok((Vec::new(), None, None)));
            results[i] = match (r, v) {
                (Ok((s, _, f)), Ok(v)) => Ok((s, Some(v), f)),
                (Ok(_), Err(e)) => Err(e),
                (Err(e), _) => Err(e),
            };
        }
    }
    let mut outcomes = Vec::with_capacity(batch.items.len());
    for (it, r) in batch.items.iter().zip(results) {
        outcomes.push(match (it, r) {
            (Item::Bad(_), _) => Outcome::Failed(Error::Internal("unreachable".into())),
            (Item::Doc(_), Err(e)) => Outcome::Failed(e),
            (Item::Doc(d), Ok((spans, embeddings, fallback))) => {
                if job.opts.check {
                    check_chunks(d, &spans, job.chunker)?;
                }
                Outcome::Chunks { spans, embeddings, fallback }
            }
        });
    }
    Ok(Finished { batch, outcomes, units: units_total })
}

/// The re-normalised mean of each chunk's unit vectors.
fn mean_vectors(vectors: &[f32], dim: usize, ranges: &[std::ops::Range<usize>]) -> Vec<f32> {
    let mut out = vec![0f32; ranges.len() * dim];
    for (row, r) in out.chunks_exact_mut(dim).zip(ranges) {
        for u in r.clone() {
            for (o, v) in row.iter_mut().zip(&vectors[u * dim..(u + 1) * dim]) {
                *o += v;
            }
        }
        embed::normalize(row);
    }
    out
}

fn check_chunks(doc: &Document, chunks: &[ChunkSpan], chunker: &dyn crate::chunkers::Chunker) -> Result<()> {
    crate::chunk::verify(&doc.text, chunks, chunker.overlapping())
        .map_err(|m| Error::Internal(format!("chunk invariant broken on {}: {m}", doc.id)))
}

enum ErrorsTo<'a> {
    File(&'a mut JsonlWriter),
    Stderr,
    /// Only in the job's stats (a caller's sink: the caller reports them).
    Stats,
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
            (Item::Doc(d), Outcome::Chunks { spans, embeddings, fallback }) => {
                sink.write_doc(&d, &spans, embeddings.as_deref())?;
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
