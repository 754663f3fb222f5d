//! Vector databases as a corpus job's output: the same committed batches a file gets, written
//! into a table with their vectors, so that a team needs no loader of its own.
//!
//! ```text
//! -o postgresql://USER@HOST:PORT/DB?table=NAME ──parse──▶ DbTarget ──open──▶ postgres::PgWriter
//!   write stage: a finished batch ──Rows (ChunkSink)──▶ Overlapped ──(its own thread)──▶
//!   one transaction: COPY into a staging table, upsert by id, (replace: delete the batch's
//!   documents' other rows), the job's progress row ──commit──▶ the next batch
//! ```
//!
//! [`Overlapped`] commits a batch while the write stage builds the next one's rows (their
//! ids, contexts and vectors), one batch in flight at most.
//!
//! What makes a rerun safe: a chunk's id comes from the chunk (its document id, offsets and
//! text), never from its place in a batch ([`crate::chunk::chunk_id`]), so writes are upserts and a second
//! run of the same job leaves the same rows; the job's progress (items consumed, totals) is
//! a row of the same database written in the batch's own transaction, so after a kill the
//! table and the progress agree and `--resume` goes on from there. The vectors are the job's
//! (`--embeddings`), never a second embedding by the database.

pub mod chroma;
#[cfg(feature = "lancedb")]
pub mod lance;
pub mod milvus;
pub mod postgres;

use crate::chunk::{chunk_id, ChunkSpan};
use crate::corpus::Document;
use crate::output::{ChunkSink, Columns};
use crate::totals::Totals;
use crate::{Error, Result};

/// A database to write a job's chunks into, as `-o` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbTarget {
    /// PostgreSQL with pgvector.
    Postgres(postgres::PgTarget),
    /// A Chroma server's collection.
    Chroma(chroma::ChromaTarget),
    /// A LanceDB table (`DIR/NAME.lance`).
    #[cfg(feature = "lancedb")]
    Lance(lance::LanceTarget),
    /// A Milvus server's collection.
    Milvus(milvus::MilvusTarget),
}

/// A job's writer into a database: what the job's write stage asks of it. What the job had
/// committed when the writer opened the table is the [`Progress`] its backend's `open` gives
/// beside it.
pub trait DbWriter: Send {
    /// Write one batch's rows, with the job's totals after it.
    ///
    /// # Errors
    /// A failure that is not transient, or one that lasts past the retries.
    fn commit(&mut self, rows: &Rows, totals: &Totals) -> Result<()>;
    /// The job is done (and, where asked, the vector index built).
    ///
    /// # Errors
    /// As [`Self::commit`].
    fn finish(&mut self, totals: &Totals) -> Result<()>;
}

/// What a job had committed when its writer opened the table or collection: a resumed job's
/// progress, as every backend reads it from the record it keeps with its data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub committed: Totals,
    /// The job had finished (a resumed finished job has nothing left to do).
    pub complete: bool,
}

impl Progress {
    /// A job's progress as Chroma, Milvus and LanceDB keep it beside the data (one JSON text
    /// under the job's key): its totals, and whether it finished.
    #[must_use]
    pub fn record(totals: &Totals, complete: bool) -> String {
        serde_json::json!({"totals": totals, "complete": complete}).to_string()
    }

    /// [`Self::record`]'s text read back, as [`Self::of_record`] and [`Self::unless_stale`]
    /// take it: (finished, totals as JSON). An unreadable text reads as an unfinished run
    /// without totals, which [`Self::of_record`] refuses in words.
    #[must_use]
    pub fn read_record(p: &str) -> (bool, serde_json::Value) {
        let p: serde_json::Value = serde_json::from_str(p).unwrap_or_default();
        (p["complete"].as_bool().unwrap_or(false), p["totals"].clone())
    }

    /// The progress of this job where the table records some (`recorded`: whether that run
    /// finished, and its totals as JSON), as the job's options take it: a finished run is
    /// done for `--resume` and starts over otherwise (its upserts change nothing); an
    /// interrupted one is resumed, or refused without `--resume`, in one line naming the
    /// table (`shown`, a `what`) and how to start afresh where that takes more (`afresh`).
    ///
    /// # Errors
    /// An interrupted run without `resume`; totals that do not read.
    pub fn of_record(
        recorded: Option<(bool, serde_json::Value)>,
        opts: &DbOptions,
        shown: &str,
        what: &str,
        afresh: Option<&str>,
    ) -> Result<Self> {
        let Some((done, totals)) = recorded else { return Ok(Self::default()) };
        if !done && !opts.resume {
            let afresh = afresh.map(|a| format!(", or run it afresh after {a}")).unwrap_or_default();
            return Err(Error::Config(format!(
                "{shown}: an interrupted run of this job wrote part of the {what}: resume it (the same job with {}){afresh}",
                crate::error::named("resume")
            )));
        }
        if !opts.resume {
            return Ok(Self::default());
        }
        let committed = serde_json::from_value(totals)
            .map_err(|e| Error::Config(format!("{shown}: unreadable progress of this job: {e}")))?;
        Ok(Self { committed, complete: done })
    }

    /// A recorded progress that is not this output's: one of some chunks where the output
    /// holds none (`empty`: its rows deleted since, a table truncated), or one kept beside
    /// another output (`other`: a table dropped and created again, a restored dump). It is set
    /// aside, with a line on stderr naming the output (`shown`, a `what`) and where the record
    /// is kept (`kept`), and the job starts afresh rather than finding itself done.
    #[must_use]
    pub fn unless_stale(
        recorded: Option<(bool, serde_json::Value)>,
        shown: &str,
        what: &str,
        kept: &str,
        empty: bool,
        other: bool,
    ) -> Option<(bool, serde_json::Value)> {
        let (_, totals) = recorded.as_ref()?;
        let chunks = totals["chunks"].as_u64().unwrap_or(0);
        if !(other || (empty && chunks > 0)) {
            return recorded;
        }
        let why = if other {
            format!("the {what} is not the one it describes")
        } else {
            format!("the {what} is empty")
        };
        eprintln!(
            "seamcut: {shown}: the job's progress in {kept} says {} written, but {why} (dropped, emptied or restored since): the job starts afresh",
            crate::wording::plural(chunks, "chunk")
        );
        None
    }
}

/// How a database output is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbOptions {
    /// After a document's new chunks are written, delete its rows from earlier runs that this
    /// run did not write (in the same transaction: a reader never sees it without chunks).
    pub replace: bool,
    /// Continue the interrupted job that was writing this table.
    pub resume: bool,
    /// Build the vector index (HNSW, cosine) after the load.
    pub index: bool,
    /// The environment variable holding the password, when the URL has none
    /// (default `PGPASSWORD`, libpq's).
    pub password_env: Option<String>,
    /// The embedding model (its name and weights' fingerprint), recorded with the table.
    pub model: String,
    /// How the vectors were made besides the model (`--embeddings`, prompt, dimensions, ...;
    /// JSON), recorded with the table: a job that makes them another way is refused.
    pub vectors: String,
}

impl DbTarget {
    /// The database `output` names, or `None` when it is a file name.
    ///
    /// # Errors
    /// A database URL that is not well formed (no table, a table name the database refuses).
    pub fn parse(output: &str) -> Option<Result<Self>> {
        if std::path::Path::new(output).extension().is_some_and(|e| e == "lance") && !output.contains("://") {
            #[cfg(feature = "lancedb")]
            return Some(Ok(Self::Lance(lance::LanceTarget::new(output))));
            #[cfg(not(feature = "lancedb"))]
            return Some(Err(Error::Config(format!(
                "{output}: this seamcut was built without LanceDB (build it with `--features lancedb`)"
            ))));
        }
        let scheme = output.split_once("://")?.0.to_ascii_lowercase();
        Some(match scheme.as_str() {
            "postgresql" | "postgres" => postgres::PgTarget::parse(output).map(Self::Postgres),
            "chroma+http" | "chroma+https" => chroma::ChromaTarget::parse(output).map(Self::Chroma),
            "milvus" | "milvus+http" | "milvus+https" => milvus::MilvusTarget::parse(output).map(Self::Milvus),
            s => Err(Error::Config(format!(
                "{output}: {s}:// is not an output seamcut writes (postgresql:// for pgvector, chroma+http:// for Chroma, milvus:// for Milvus, or a file name)"
            ))),
        })
    }

    /// Why `doc` cannot be stored as it is, cut into `chunks`, if it cannot (it is then
    /// skipped and counted): PostgreSQL's `text` holds no NUL; Chroma's documents and metadata
    /// are JSON, which does; Milvus's `VARCHAR` holds at most [`milvus::VARCHAR_BYTES`].
    #[must_use]
    pub fn rejects(&self, doc: &Document, chunks: &[ChunkSpan]) -> Option<String> {
        match self {
            Self::Postgres(_) => unstorable(doc),
            Self::Chroma(_) => None,
            Self::Milvus(_) => milvus::rejects(doc, chunks),
            // Arrow's strings hold NUL.
            #[cfg(feature = "lancedb")]
            Self::Lance(_) => None,
        }
    }

    /// The URL without its password, to show.
    #[must_use]
    pub fn shown(&self) -> String {
        match self {
            Self::Postgres(t) => t.shown(),
            Self::Chroma(t) => t.shown(),
            #[cfg(feature = "lancedb")]
            Self::Lance(t) => t.shown(),
            Self::Milvus(t) => t.shown(),
        }
    }

    /// Connect and open the table or collection for a job (`job`: its fingerprint): its writer,
    /// and what the job had committed there.
    ///
    /// # Errors
    /// As the backend's `open`.
    pub fn open(
        &self,
        columns: Columns,
        job: &str,
        opts: DbOptions,
    ) -> Result<(Box<dyn DbWriter>, Progress)> {
        fn boxed<W: DbWriter + 'static>((w, p): (W, Progress)) -> (Box<dyn DbWriter>, Progress) {
            (Box::new(w), p)
        }
        Ok(match self {
            Self::Postgres(t) => boxed(postgres::PgWriter::open(t, columns, job.to_string(), opts)?),
            Self::Chroma(t) => boxed(chroma::ChromaWriter::open(t, columns, job, opts)?),
            #[cfg(feature = "lancedb")]
            Self::Lance(t) => boxed(lance::LanceWriter::open(t, columns, job, opts)?),
            Self::Milvus(t) => boxed(milvus::MilvusWriter::open(t, columns, job, opts)?),
        })
    }
}

/// A [`DbWriter`] on a thread of its own: [`Self::commit`] hands a batch's rows over and
/// returns once the batch before it is committed, so the job builds a batch's rows (ids,
/// contexts, vectors: about a fifth of the write stage in `benches/db_load.sh`) while the
/// database takes the one before. One batch is in flight at most (memory stays bounded), and
/// a failed commit stops the job at the next batch, with the batches before it kept.
pub struct Overlapped {
    progress: Progress,
    tx: Option<std::sync::mpsc::SyncSender<(Rows, Totals)>>,
    thread: Option<std::thread::JoinHandle<Result<Stopped>>>,
}

/// The database thread's end: its writer back, and the seconds its commits took.
type Stopped = (Box<dyn DbWriter>, f64);

impl Overlapped {
    #[must_use]
    pub fn new((mut writer, progress): (Box<dyn DbWriter>, Progress)) -> Self {
        // A rendezvous channel: a send waits until the thread has taken the batch, that is
        // until the batch before it is committed.
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Rows, Totals)>(0);
        let thread = std::thread::spawn(move || {
            let mut busy = 0.0;
            for (rows, totals) in rx {
                let t = std::time::Instant::now();
                writer.commit(&rows, &totals)?;
                busy += t.elapsed().as_secs_f64();
            }
            Ok((writer, busy))
        });
        Self { progress, tx: Some(tx), thread: Some(thread) }
    }

    /// What the job had committed when it was opened.
    #[must_use]
    pub fn committed(&self) -> &Totals {
        &self.progress.committed
    }

    /// Whether the job was complete when it was opened.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.progress.complete
    }

    /// Hand a batch's rows over, with the job's totals after it.
    ///
    /// # Errors
    /// The failure of an earlier batch's commit.
    pub fn commit(&mut self, rows: Rows, totals: Totals) -> Result<()> {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send((rows, totals)).is_ok());
        if sent {
            Ok(())
        } else {
            // The thread stopped on a failed commit: its error is the job's.
            self.join().map(|_| ())
        }
    }

    fn join(&mut self) -> Result<Stopped> {
        self.tx = None;
        let thread =
            self.thread.take().ok_or_else(|| Error::Internal("the database writer has stopped".into()))?;
        thread.join().map_err(|_| Error::Internal("the database writer panicked".into()))?
    }

    /// Wait for the last commit, then finish the job ([`DbWriter::finish`]); the seconds the
    /// database's commits took.
    ///
    /// # Errors
    /// A failed commit, or the finish's own failure.
    pub fn finish(mut self, totals: &Totals) -> Result<f64> {
        let (mut writer, busy) = self.join()?;
        writer.finish(totals)?;
        Ok(busy)
    }
}

impl Drop for Overlapped {
    /// A job stopped by an error: the batch in flight is committed (or fails) before the
    /// job's error is reported, and the job is not marked complete.
    fn drop(&mut self) {
        if self.thread.is_some() {
            drop(self.join());
        }
    }
}

/// What a job lost its server on keeps, and how it goes on: the one wording of every backend's
/// error for a server that went away mid-job (`what`: the batches, the rows).
#[must_use]
pub fn kept_until_back(what: &str) -> String {
    format!("{what}: run the same job with {} once the server is back", crate::error::named("resume"))
}

/// Whether a table's recorded model (`name (fingerprint)`, as [`DbOptions::model`] holds it)
/// is this job's: by the weights' fingerprint where both have one, so the same weights named
/// by another path (`static384`, `/data/static384`) are the same model; else by the whole text.
#[must_use]
pub fn same_model(recorded: &str, ours: &str) -> bool {
    let fingerprint = |m: &str| {
        m.strip_suffix(')')
            .and_then(|m| m.rsplit_once(" ("))
            .map(|(_, f)| f.to_string())
            .filter(|f| f != "no fingerprint")
    };
    match (fingerprint(recorded), fingerprint(ours)) {
        (Some(a), Some(b)) => a == b,
        _ => recorded == ours,
    }
}

/// The vectors' dimension a database output stores (the job must make them).
///
/// # Errors
/// A job without `--embeddings`.
pub fn dim(columns: &Columns) -> Result<usize> {
    columns.dim.ok_or_else(|| {
        Error::setting("embeddings", "a database output stores each chunk's vector: choose how to make it")
    })
}

/// Check what a table or collection (`what`, shown as `shown`) records against this job: its
/// model by the weights' fingerprint ([`same_model`]), and how its vectors were made exactly. A
/// table written before seamcut recorded the second has none, and takes this job's.
///
/// # Errors
/// No model recorded (not seamcut's), another model, or vectors made another way.
pub fn check_recorded(
    shown: &str,
    what: &str,
    model: Option<&str>,
    vectors: Option<&str>,
    opts: &DbOptions,
) -> Result<()> {
    let refuse = |why: String| Err(Error::Config(format!("{shown}: {why}; write another {what}")));
    match model {
        None => refuse(format!("the {what} was not written by seamcut (it records no model)")),
        Some(m) if !same_model(m, &opts.model) => {
            refuse(format!("the {what} holds vectors of another model ({m}; this job's: {})", opts.model))
        }
        _ => match vectors {
            Some(v) if v != opts.vectors => refuse(format!(
                "the {what}'s vectors were made another way ({v}; this job's: {})",
                opts.vectors
            )),
            _ => Ok(()),
        },
    }
}

/// One chunk as a database row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: String,
    pub doc_id: String,
    pub index: i32,
    pub start: i64,
    pub end: i64,
    pub text: String,
    pub tokens: i32,
    pub context: String,
    pub meta: Vec<Option<String>>,
    pub embedding: Vec<f32>,
}

/// A batch's rows, gathered as a [`ChunkSink`] by the job's write stage; `docs` are the
/// batch's documents that were chunked (with or without chunks), for `replace`.
#[derive(Debug, Default)]
pub struct Rows {
    pub columns: Columns,
    pub rows: Vec<Row>,
    pub docs: Vec<String>,
    /// Text bytes in `rows`.
    pub bytes: usize,
}

impl Rows {
    #[must_use]
    pub fn new(columns: Columns) -> Self {
        Self { columns, ..Self::default() }
    }

    /// The rows, each id once (its first row): a corpus that repeats a chunk (the same
    /// document twice) has it twice in a batch, which an upsert request cannot take.
    #[must_use]
    pub fn unique(&self) -> Vec<&Row> {
        let mut seen = std::collections::HashSet::new();
        self.rows.iter().filter(|r| seen.insert(r.id.as_str())).collect()
    }
}

impl ChunkSink for Rows {
    fn write_doc(&mut self, doc: &Document, chunks: &[ChunkSpan], embeddings: Option<&[f32]>) -> Result<()> {
        let dim =
            self.columns.dim.ok_or_else(|| Error::Internal("a database row needs its vector".into()))?;
        let embeddings =
            embeddings.ok_or_else(|| Error::Internal("a database row needs its vector".into()))?;
        let contexts = crate::output::contexts(doc, chunks);
        let meta = crate::output::meta_strings(doc);
        self.docs.push(doc.id.clone());
        for (i, (c, context)) in chunks.iter().zip(contexts).enumerate() {
            let text = &doc.text[c.start..c.end];
            let (start, end) = (doc.source_offset(c.start), doc.source_offset(c.end));
            let to_i32 = |n: usize| i32::try_from(n).map_err(|_| Error::Internal(format!("{n} is past i32")));
            self.bytes += text.len();
            self.rows.push(Row {
                id: chunk_id(&doc.id, start, end, text),
                doc_id: doc.id.clone(),
                index: to_i32(i)?,
                start: start as i64,
                end: end as i64,
                text: text.to_string(),
                tokens: to_i32(c.tokens)?,
                context,
                meta: meta.clone(),
                embedding: embeddings[i * dim..(i + 1) * dim].to_vec(),
            });
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Why a document cannot be stored in PostgreSQL as its chunks are (`None`: it can): its
/// `text` holds no NUL character, and seamcut never changes a chunk's text to fit.
#[must_use]
pub fn unstorable(doc: &Document) -> Option<String> {
    if doc.text.contains('\0') {
        return Some("its text holds a NUL character, which a database text column cannot store".into());
    }
    doc.meta.iter().find_map(|v| match v {
        serde_json::Value::String(s) if s.contains('\0') => {
            Some("a metadata field holds a NUL character, which a database text column cannot store".into())
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_known_by_its_weights_not_by_the_path_that_named_it() {
        assert!(same_model("/data/static384 (d7505d5bf6fb9547)", "static384 (d7505d5bf6fb9547)"));
        assert!(!same_model("static384 (d7505d5bf6fb9547)", "static384 (0000000000000000)"));
        assert!(same_model("m (no fingerprint)", "m (no fingerprint)"));
        assert!(!same_model("a (no fingerprint)", "b (no fingerprint)"));
        assert!(!same_model("a (no fingerprint)", "a (d7505d5bf6fb9547)"));
    }

    #[test]
    fn database_urls_are_told_from_file_names() {
        assert!(DbTarget::parse("out.parquet").is_none());
        assert!(DbTarget::parse("postgresql://u@localhost:5432/db?table=chunks").unwrap().is_ok());
        let e = DbTarget::parse("mysql://u@h/db").unwrap().unwrap_err().to_string();
        assert!(e.contains("mysql://"), "{e}");
        // A LanceDB table is a path ending in .lance: written by a build with the feature,
        // refused by one without (never a JSONL file of that name).
        let lance = DbTarget::parse("index/chunks.lance").unwrap();
        #[cfg(feature = "lancedb")]
        {
            let Ok(DbTarget::Lance(t)) = lance else { panic!("{lance:?}") };
            assert_eq!((t.dir.to_str(), t.table.as_str()), (Some("index"), "chunks"));
            let Some(Ok(DbTarget::Lance(here))) = DbTarget::parse("t.lance") else { panic!() };
            assert_eq!(here.dir.to_str(), Some("."));
        }
        #[cfg(not(feature = "lancedb"))]
        {
            let e = lance.unwrap_err().to_string();
            assert!(e.contains("--features lancedb"), "{e}");
        }
        assert!(DbTarget::parse("out.lance.jsonl").is_none());
    }
}
