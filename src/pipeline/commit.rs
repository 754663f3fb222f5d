//! Committed output: what makes a job with `-o FILE` survive `kill -9`.
//!
//! The job writes into `FILE.seamcut-partial/`, one part per document batch: the part's
//! files are written under temporary names, fsync'd and renamed, then a small manifest
//! (`manifest.json`: parts committed, input items consumed, running totals, and the job's
//! fingerprint) is written the same way. A kill at any moment leaves the last manifest and
//! its parts intact; parts past it are deleted on resume, and the reader skips the items the
//! manifest counts. When every batch is committed the parts are assembled into `FILE`
//! (JSONL: concatenated, or a single part hard-linked in place; Parquet: re-batched into
//! one file; embeddings: one `.npy`; errors: one `.errors.jsonl`), each written under a
//! temporary name and renamed, and the folder is removed. The assembled bytes depend only
//! on the sequence of chunks, so a resumed job's output equals an uninterrupted one's byte
//! for byte.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::output::{ChunkSink, Columns, JsonlSink, JsonlWriter, OutputFormat, ParquetSink};
use crate::totals::Totals;
use crate::{Error, Result};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    version: u32,
    /// What the job is: spec, inputs, shard, output settings. A resume must match it.
    job: String,
    parts: u64,
    totals: Totals,
    /// Every batch is committed; only the assembly is left.
    complete: bool,
}

const MANIFEST: &str = "manifest.json";

/// The committed-output folder of one job.
pub struct Committer {
    dir: PathBuf,
    out: PathBuf,
    format: OutputFormat,
    columns: Columns,
    manifest: Manifest,
    /// The output is whole already, written by this same job ([`Record`]): nothing to do.
    finished: bool,
}

/// What a finished job leaves beside its output (`FILE.seamcut.json`, [`record_path`]): the
/// job that wrote it, the output's size then, and its totals, so that `--resume` knows a
/// finished output of its own (nothing to do) from another job's (refused).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    version: u32,
    job: String,
    bytes: u64,
    totals: Totals,
}

/// One part being written.
pub struct Part {
    pub sink: Box<dyn ChunkSink>,
    pub errors: JsonlWriter,
    index: u64,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

/// Create `path` for writing, as a file that will be fsync'd before it is renamed.
fn create(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path).map_err(io(path))
}

/// A file handle that fsyncs on drop-free close: `Box<dyn Write>` for sinks, with the
/// handle kept so the part can be synced before its rename.
struct Synced(std::fs::File);

impl Write for Synced {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()?;
        self.0.sync_all()
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Write `bytes` to `path` atomically: a temporary file, fsync, rename, fsync the folder.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_name(path);
    let mut f = create(&tmp)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    sync_dir(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
}

/// The record of the finished job that wrote `out`, where that is `job`.
///
/// # Errors
/// `out` was written by another job (the settings that differ are named), by none that left a
/// record, or has changed since.
fn finished_by(out: &Path, job: &str) -> Result<Record> {
    let afresh =
        format!("run without {} to replace it, or write another file", crate::error::named("resume"));
    let record: Option<Record> =
        std::fs::read(record_path(out)).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let Some(record) = record else {
        return Err(Error::Config(format!(
            "{}: there is nothing of this job's to resume: the file was not written by a seamcut job (no {}); {afresh}",
            out.display(),
            record_path(out).display()
        )));
    };
    if record.job != job {
        return Err(Error::Config(format!(
            "{}: the file was written by another job ({}); {afresh}",
            out.display(),
            differences(&record.job, job)
        )));
    }
    let bytes = std::fs::metadata(out).map_err(io(out))?.len();
    if bytes != record.bytes {
        return Err(Error::Config(format!(
            "{}: the file changed after this job wrote it ({bytes} bytes, not {}); {afresh}",
            out.display(),
            record.bytes
        )));
    }
    Ok(record)
}

/// A write that failed for want of room (a full disk, a quota, a file-size limit), told as
/// such: what is kept and the way on. Any other error as it was.
pub fn out_of_room(e: Error) -> Error {
    use std::io::ErrorKind;
    const HINT: &str =
        "the committed batches are kept: free some space, then run the same command with --resume";
    let full = |e: &std::io::Error| {
        matches!(e.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded | ErrorKind::FileTooLarge)
    };
    match e {
        Error::Io { path, source } if full(&source) => {
            Error::io(path, std::io::Error::new(source.kind(), format!("{source}; {HINT}")))
        }
        Error::Write(source) if full(&source) => {
            Error::Write(std::io::Error::new(source.kind(), format!("{source}; {HINT}")))
        }
        // Parquet's writer keeps only the text of the I/O error under it.
        Error::Write(source)
            if ["No space left on device", "File too large", "quota exceeded"]
                .iter()
                .any(|m| source.to_string().contains(m)) =>
        {
            Error::Write(std::io::Error::other(format!("{source}; {HINT}")))
        }
        e => e,
    }
}

fn tmp_name(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// `path` with `suffix` appended to its file name.
#[must_use]
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Where a job writing `out` lists its skipped and fallback documents: `out`'s whole name
/// with `.errors.jsonl` after it (`out.jsonl.errors.jsonl`), so that jobs writing
/// `out.jsonl` and `out.parquet` keep their own lists.
#[must_use]
pub fn errors_path(out: &Path) -> PathBuf {
    with_suffix(out, ".errors.jsonl")
}

/// Where a finished job's [`Record`] lies: `out`'s whole name with `.seamcut.json` after it.
#[must_use]
pub fn record_path(out: &Path) -> PathBuf {
    with_suffix(out, ".seamcut.json")
}

/// The settings in which two jobs' fingerprints differ, in words (`chunker "maxmin" → "recursive"`),
/// for an error that says why an output is not this job's.
#[must_use]
pub fn differences(theirs: &str, ours: &str) -> String {
    use serde_json::Value;
    let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
    let (a, b) = (parse(theirs), parse(ours));
    // The job's settings one level down (`spec` is the chunker's), each under its own name.
    let flat = |v: &Value| -> Vec<(String, Value)> {
        let mut out = Vec::new();
        if let Value::Object(m) = v {
            for (k, v) in m {
                match v {
                    Value::Object(inner) if k == "spec" || k == "read" => {
                        out.extend(inner.iter().map(|(k2, v2)| (k2.clone(), v2.clone())));
                    }
                    _ => out.push((k.clone(), v.clone())),
                }
            }
        }
        out
    };
    let (fa, fb) = (flat(&a), flat(&b));
    let get = |f: &[(String, Value)], k: &str| {
        f.iter().find(|(n, _)| n == k).map_or(Value::Null, |(_, v)| v.clone())
    };
    let mut keys: Vec<&String> = fa.iter().chain(&fb).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let shown = |v: &Value| {
        let t = if v.is_null() { "unset".to_string() } else { v.to_string() };
        if t.chars().count() > 60 {
            format!("{}…", t.chars().take(59).collect::<String>())
        } else {
            t
        }
    };
    let diffs: Vec<String> = keys
        .into_iter()
        .filter_map(|k| {
            let (x, y) = (get(&fa, k), get(&fb, k));
            (x != y).then(|| format!("{k} {} → {}", shown(&x), shown(&y)))
        })
        .collect();
    if diffs.is_empty() {
        "the same settings, written by another seamcut".into()
    } else {
        diffs.join(", ")
    }
}

/// Where a JSONL job writing `out` puts its chunk embeddings: `out` with `.npy` in place of
/// its extension and any compression's (`out.jsonl.zst` → `out.npy`).
#[must_use]
pub fn npy_path(out: &Path) -> PathBuf {
    match crate::corpus::classify(out).0 {
        crate::corpus::Compression::None => out.with_extension("npy"),
        _ => out.with_extension("").with_extension("npy"),
    }
}

impl Committer {
    /// Open the committed output of a job writing `out`. A folder left by an interrupted
    /// job is continued with `resume` (and must be the same job), and is an error without.
    ///
    /// # Errors
    /// On a folder from an interrupted job without `resume`, a folder from another job, or
    /// an I/O failure.
    pub fn open(
        out: &Path,
        format: OutputFormat,
        columns: Columns,
        job: String,
        resume: bool,
    ) -> Result<Self> {
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(p) = parent.filter(|p| !p.is_dir()) {
            return Err(Error::Config(format!(
                "{}: the folder {} does not exist (seamcut makes no folders for {}: create it first)",
                out.display(),
                p.display(),
                crate::error::named("output")
            )));
        }
        let dir = with_suffix(out, ".seamcut-partial");
        // A finished job's folder, renamed for deletion when a kill stopped that: garbage.
        let done = with_suffix(out, ".seamcut-done");
        if done.is_dir() {
            std::fs::remove_dir_all(&done).map_err(io(&done))?;
        }
        let fresh =
            Manifest { version: 1, job: job.clone(), parts: 0, totals: Totals::default(), complete: false };
        let mut finished = false;
        let manifest = if dir.is_dir() {
            if !resume {
                return Err(Error::Config(format!(
                    "{} holds an interrupted job's output: resume it (the same job with {}), or delete the folder",
                    dir.display(),
                    crate::error::named("resume")
                )));
            }
            match std::fs::read(dir.join(MANIFEST)) {
                // Killed before the first commit: nothing to keep.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => fresh,
                Err(e) => return Err(Error::io(dir.join(MANIFEST), e)),
                Ok(bytes) => {
                    let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
                        Error::Config(format!(
                            "{}: unreadable manifest ({e}); delete the folder to start over",
                            dir.display()
                        ))
                    })?;
                    if m.job != job {
                        return Err(Error::Config(format!(
                            "{} was written by another job ({}): resume that job, or delete the folder",
                            dir.display(),
                            differences(&m.job, &job)
                        )));
                    }
                    m
                }
            }
        } else {
            if resume && out.exists() {
                let record = finished_by(out, &job)?;
                finished = true;
                Manifest { totals: record.totals, complete: true, ..fresh }
            } else {
                // No folder and no output (deleted, or never written): the whole job, afresh.
                std::fs::create_dir(&dir).map_err(io(&dir))?;
                fresh
            }
        };
        let c = Self { dir, out: out.to_path_buf(), format, columns, manifest, finished };
        if !finished {
            c.remove_uncommitted()?;
        }
        Ok(c)
    }

    /// Whether the output was whole already, written by this same job: a resumed finished
    /// job, which reads and writes nothing.
    #[must_use]
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Totals of the batches committed so far (all zero for a new job).
    #[must_use]
    pub fn totals(&self) -> &Totals {
        &self.manifest.totals
    }

    /// Whether every batch was committed by an earlier run (only the assembly is left).
    #[must_use]
    pub fn complete(&self) -> bool {
        self.manifest.complete
    }

    fn part_path(&self, i: u64, what: &str) -> PathBuf {
        self.dir.join(format!("part-{i:06}.{what}"))
    }

    fn data_ext(&self) -> &'static str {
        self.format.extension()
    }

    /// Delete files of parts past the manifest and temporary files.
    fn remove_uncommitted(&self) -> Result<()> {
        for e in std::fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let e = e.map_err(io(&self.dir))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let stale = name.ends_with(".tmp")
                || name
                    .strip_prefix("part-")
                    .and_then(|r| r.get(..6))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|i| i >= self.manifest.parts);
            if stale {
                std::fs::remove_file(e.path()).map_err(io(&e.path()))?;
            }
        }
        Ok(())
    }

    /// Start the next part.
    ///
    /// # Errors
    /// If its files cannot be created.
    pub fn begin(&self) -> Result<Part> {
        let i = self.manifest.parts;
        let data = Box::new(Synced(create(&tmp_name(&self.part_path(i, self.data_ext())))?));
        let sink: Box<dyn ChunkSink> = match self.format {
            OutputFormat::Jsonl => {
                let emb: Option<Box<dyn Write + Send>> = match self.columns.dim {
                    Some(_) => Some(Box::new(Synced(create(&tmp_name(&self.part_path(i, "f32")))?))),
                    None => None,
                };
                Box::new(JsonlSink::new(data, emb, self.columns.meta_fields.clone()))
            }
            OutputFormat::Parquet => Box::new(ParquetSink::new(data, &self.columns)?),
        };
        let errors =
            JsonlWriter::new(Box::new(Synced(create(&tmp_name(&self.part_path(i, "errors.jsonl")))?)));
        Ok(Part { sink, errors, index: i })
    }

    /// Commit a finished part with the totals after it.
    ///
    /// # Errors
    /// On an I/O failure (the part is then not committed).
    pub fn commit(&mut self, mut part: Part, totals: Totals) -> Result<()> {
        part.sink.finish()?;
        part.errors.flush()?;
        drop(part.sink);
        drop(part.errors.into_inner()?);
        let i = part.index;
        let mut names = vec![self.data_ext(), "errors.jsonl"];
        if self.columns.dim.is_some() && self.format == OutputFormat::Jsonl {
            names.push("f32");
        }
        for what in names {
            let p = self.part_path(i, what);
            std::fs::rename(tmp_name(&p), &p).map_err(io(&p))?;
        }
        sync_dir(&self.dir)?;
        self.manifest.parts = i + 1;
        self.manifest.totals = totals;
        self.write_manifest()
    }

    fn write_manifest(&self) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(&self.manifest).map_err(|e| Error::Internal(e.to_string()))?;
        write_atomic(&self.dir.join(MANIFEST), &bytes)
    }

    /// Assemble the parts into the output files and remove the folder.
    ///
    /// # Errors
    /// On an I/O failure; the folder is then kept and `--resume` assembles again.
    pub fn finish(mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        if !self.manifest.complete {
            self.manifest.complete = true;
            self.write_manifest()?;
        }
        let parts: Vec<u64> = (0..self.manifest.parts).collect();
        let data: Vec<PathBuf> = parts.iter().map(|&i| self.part_path(i, self.data_ext())).collect();
        match self.format {
            OutputFormat::Jsonl => match crate::corpus::classify(&self.out).0 {
                crate::corpus::Compression::None => concat(&data, &self.out, &[])?,
                c => concat_compressed(&data, &self.out, c)?,
            },
            OutputFormat::Parquet => {
                let tmp = tmp_name(&self.out);
                let f = Synced(create(&tmp)?);
                crate::output::parquet::merge(
                    &data,
                    Box::new(f),
                    crate::output::parquet::schema(&self.columns),
                )?;
                std::fs::rename(&tmp, &self.out).map_err(io(&self.out))?;
            }
        }
        if let (Some(dim), OutputFormat::Jsonl) = (self.columns.dim, self.format) {
            let emb: Vec<PathBuf> = parts.iter().map(|&i| self.part_path(i, "f32")).collect();
            let header = crate::npy::header_f32(self.manifest.totals.chunks as usize, dim);
            concat(&emb, &npy_path(&self.out), &header)?;
        }
        let errors = errors_path(&self.out);
        if self.manifest.totals.skipped_total() + self.manifest.totals.fallbacks > 0 {
            let files: Vec<PathBuf> = parts.iter().map(|&i| self.part_path(i, "errors.jsonl")).collect();
            concat(&files, &errors, &[])?;
        } else if errors.is_file() {
            // A stale list from an earlier run of this output would mislead.
            std::fs::remove_file(&errors).map_err(io(&errors))?;
        }
        let parent = self.out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let bytes = std::fs::metadata(&self.out).map_err(io(&self.out))?.len();
        let record = Record {
            version: 1,
            job: self.manifest.job.clone(),
            bytes,
            totals: self.manifest.totals.clone(),
        };
        let record = serde_json::to_vec_pretty(&record).map_err(|e| Error::Internal(e.to_string()))?;
        write_atomic(&record_path(&self.out), &record)?;
        // Out of the way in one atomic step before deleting: a kill while the folder's files
        // are being removed (in no set order) must not leave a manifest without its parts.
        let done = with_suffix(&self.out, ".seamcut-done");
        let _ = std::fs::remove_dir_all(&done);
        std::fs::rename(&self.dir, &done).map_err(io(&self.dir))?;
        sync_dir(parent)?;
        std::fs::remove_dir_all(&done).map_err(io(&done))
    }
}

/// `files` concatenated into `out` through `compression`'s encoder (the parts stay plain, so
/// resuming works as for a plain output; the output is one gzip member or zstd frame).
fn concat_compressed(files: &[PathBuf], out: &Path, compression: crate::corpus::Compression) -> Result<()> {
    use crate::corpus::Compression;
    let tmp = tmp_name(out);
    let file = create(&tmp)?;
    let copy = |w: &mut dyn Write| -> std::io::Result<()> {
        for f in files {
            std::io::copy(&mut std::fs::File::open(f)?, w)?;
        }
        Ok(())
    };
    let file = match compression {
        Compression::Gzip => {
            let mut w = flate2::write::GzEncoder::new(file, flate2::Compression::default());
            copy(&mut w).and_then(|()| w.finish())
        }
        // Level 3, zstd's default: about gzip's ratio at several times its speed.
        Compression::Zstd | Compression::None => zstd::stream::write::Encoder::new(file, 3)
            .and_then(|mut w| copy(&mut w).and_then(|()| w.finish())),
    }
    .map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, out).map_err(io(out))
}

/// Write `head` then the files' bytes, in order, to `out` (through a temporary file).
fn concat(files: &[PathBuf], out: &Path, head: &[u8]) -> Result<()> {
    let tmp = tmp_name(out);
    if let ([only], []) = (files, head) {
        // One committed part is already the output's bytes, fsync'd: link it in place of a
        // copy (a job's one batch, the common case for a single file; `seamcut chunk` on a
        // 3.7 MB novel wrote and synced 3.9 MB twice). The part keeps its own name until the
        // folder goes, so a kill before that still resumes; the caller syncs the folder.
        // Where links are not supported, the copy below.
        let _ = std::fs::remove_file(&tmp);
        if std::fs::hard_link(only, &tmp).is_ok() {
            std::fs::rename(&tmp, out).map_err(io(out))?;
            // Renaming a link onto another link of the same file (a resumed assembly) is a
            // no-op that leaves the temporary name.
            let _ = std::fs::remove_file(&tmp);
            return Ok(());
        }
    }
    let mut w = create(&tmp)?;
    w.write_all(head).map_err(io(&tmp))?;
    for f in files {
        let mut r = std::fs::File::open(f).map_err(io(f))?;
        std::io::copy(&mut r, &mut w).map_err(io(&tmp))?;
    }
    w.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, out).map_err(io(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_links_a_single_part_and_copies_several() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.part");
        let b = dir.path().join("b.part");
        std::fs::write(&a, b"one\n").unwrap();
        std::fs::write(&b, b"two\n").unwrap();
        let out = dir.path().join("out.jsonl");
        std::fs::write(&out, b"stale").unwrap();
        concat(std::slice::from_ref(&a), &out, &[]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"one\n");
        assert!(a.is_file(), "the part stays until its folder goes");
        assert!(!tmp_name(&out).exists());
        // Assembling again (a resume after a kill before the folder was removed): same bytes,
        // no temporary name left behind although the output already is the part's file.
        concat(std::slice::from_ref(&a), &out, &[]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"one\n");
        assert!(!tmp_name(&out).exists());
        std::fs::remove_file(&a).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"one\n");
        concat(std::slice::from_ref(&b), &out, b"head:").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"head:two\n");
        std::fs::write(&a, b"one\n").unwrap();
        concat(&[a, b], &out, &[]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"one\ntwo\n");
    }

    #[test]
    fn a_finished_jobs_folder_goes_and_a_leftover_one_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.jsonl");
        let done = with_suffix(&out, ".seamcut-done");
        std::fs::create_dir(&done).unwrap();
        std::fs::write(done.join("manifest.json"), b"{}").unwrap();
        let c = Committer::open(&out, OutputFormat::Jsonl, Columns::default(), "job".into(), false).unwrap();
        assert!(!done.exists(), "a killed deletion's leftovers are removed");
        c.finish().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"");
        assert!(!with_suffix(&out, ".seamcut-partial").exists() && !done.exists());
    }
}
