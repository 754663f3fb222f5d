//! The fault matrix: every output kind through the same faults, each compared with a clean,
//! uninterrupted run row for row (files: every record, the `.npy` and the errors list in
//! order; databases: every row with its vector, sorted by id).
//!
//! | fault | JSONL | JSONL.zst | Parquet | pgvector | Chroma | Milvus |
//! |---|---|---|---|---|---|---|
//! | kill -9 at seeded moments (5 landed mid-job), then `--resume` | [`kill_9`] | ✓ | ✓ | ✓ | ✓ | ✓ |
//! | the output removed, then `--resume` | [`removed`] | ✓ | ✓ | dropped, truncated | deleted, emptied | dropped, emptied |
//! | an edited corpus rerun (`--replace` for databases) | [`edited`] | ✓ | ✓ | ✓ | ✓ | ✓ |
//! | a full disk (a small tmpfs, or `RLIMIT_FSIZE`) | [`full_disk`] | ✓ | ✓ | – | – | – |
//! | the server killed mid-job and restarted | – | – | – | [`server_restart`] | ✓ | ✓ |
//! | four `--shard i/4` at once, then all four again with `--replace` after an edit | – | – | – | [`concurrent_shards`] | ✓ | ✓ |
//!
//! A build with the `lancedb` feature runs LanceDB tables through the same cases, beside
//! pgvector and Chroma (kill -9, removed (deleted, emptied), edited, concurrent shards). Each
//! case prints its cell (`fault × output: result, rounds`); `SEAMCUT_FAULT_SEED` replays a
//! run's kill moments.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::db_jobs::{corpus, one_line, seamcut, stderr, OwnServer};
use super::{chroma, milvus, pgvector};

/// The job every case runs: a model chunker with vectors and a metadata field, in batches
/// small enough that a run commits a few dozen of them.
const JOB: [&str; 9] =
    ["--chunker", "maxmin", "--embeddings", "mean", "--meta-field", "lang", "--batch-bytes", "1500", "-q"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Jsonl,
    JsonlZst,
    Parquet,
    Pg,
    Chroma,
    Milvus,
    #[cfg(feature = "lancedb")]
    Lance,
}

const FILES: [Kind; 3] = [Kind::Jsonl, Kind::JsonlZst, Kind::Parquet];

/// The outputs that many writers may share: the databases, LanceDB's tables where the build
/// has them.
fn databases() -> Vec<Kind> {
    let kinds = vec![Kind::Pg, Kind::Chroma, Kind::Milvus];
    #[cfg(feature = "lancedb")]
    let kinds = [kinds, vec![Kind::Lance]].concat();
    kinds
}

/// Every output kind.
fn all() -> Vec<Kind> {
    [&FILES[..], &databases()].concat()
}

impl Kind {
    fn ext(self) -> &'static str {
        match self {
            Kind::Jsonl => "jsonl",
            Kind::JsonlZst => "jsonl.zst",
            Kind::Parquet => "parquet",
            Kind::Pg => "pgvector",
            Kind::Chroma => "chroma",
            Kind::Milvus => "milvus",
            #[cfg(feature = "lancedb")]
            Kind::Lance => "lance",
        }
    }
}

/// One output a job writes: a file in `dir`, a table or a collection named `name`, on the
/// tests' server or on `server` (a URL) where the case runs one of its own.
struct Out {
    kind: Kind,
    name: String,
    dir: PathBuf,
    server: Option<String>,
}

impl Out {
    fn new(kind: Kind, dir: &Path, case: &str) -> Self {
        let name = match kind {
            Kind::Pg | Kind::Milvus => format!("fm_{case}"),
            Kind::Chroma => format!("fm-{}", case.replace('_', "-")),
            _ => format!("{case}.{}", kind.ext()),
        };
        let out = Self { kind, name, dir: dir.to_path_buf(), server: None };
        out.wipe();
        out
    }

    /// The output on the server at `server` (a URL), wiped there.
    fn at(mut self, server: &str) -> Self {
        self.server = Some(server.to_string());
        self.wipe();
        self
    }

    fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    fn pg(&self) -> String {
        self.server.clone().unwrap_or_else(pgvector::base_url)
    }

    fn chroma(&self) -> String {
        self.server.clone().unwrap_or_else(chroma::base)
    }

    fn milvus(&self) -> String {
        self.server.clone().unwrap_or_else(milvus::base)
    }

    /// What `-o` names.
    fn arg(&self) -> String {
        match self.kind {
            Kind::Pg => format!("{}?table={}", self.pg(), self.name),
            Kind::Chroma => format!("{}/{}", self.chroma(), self.name),
            Kind::Milvus => format!("{}/{}", self.milvus(), self.name),
            _ => self.path().to_str().unwrap().to_string(),
        }
    }

    /// The job's arguments into this output.
    fn args(&self, input: &Path, extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = ["chunk", input.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
        a.extend(JOB.iter().map(|s| s.to_string()));
        a.extend(["-o".to_string(), self.arg()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    fn run(&self, input: &Path, extra: &[&str]) -> Output {
        let a = self.args(input, extra);
        seamcut(&a.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn ok(&self, input: &Path, extra: &[&str]) {
        let o = self.run(input, extra);
        assert!(o.status.success(), "{:?} {extra:?}: {}", self.kind, stderr(&o));
    }

    fn spawn(&self, input: &Path, extra: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_seamcut"))
            .args(self.args(input, extra))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Everything the output holds, as text: the records in order, the vectors and the errors
    /// list for files; every row with its vector, sorted, for databases.
    fn rows(&self) -> Vec<String> {
        match self.kind {
            Kind::Pg => pgvector::dump_at(&self.pg(), &self.name),
            Kind::Chroma => chroma::dump_at(&self.chroma(), &self.name),
            Kind::Milvus => milvus::dump_at(&self.milvus(), &self.name),
            #[cfg(feature = "lancedb")]
            Kind::Lance => super::lance::dump(&self.dir, self.table()),
            _ => {
                let path = self.path();
                // The file's bytes too: a resumed file is byte for byte the clean run's.
                let bytes = std::fs::read(&path).unwrap();
                let digest = {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    bytes.hash(&mut h);
                    format!("{} bytes, hash {:016x}", bytes.len(), h.finish())
                };
                let mut rows = match self.kind {
                    Kind::Jsonl => lines(&bytes),
                    Kind::JsonlZst => lines(&zstd::decode_all(bytes.as_slice()).unwrap()),
                    _ => parquet_rows(&path),
                };
                rows.push(digest);
                let npy = seamcut::pipeline::commit::npy_path(&path);
                if npy.exists() {
                    let (v, n, dim) = seamcut::npy::read_f32(&npy).unwrap();
                    rows.push(format!("npy {n}x{dim}"));
                    rows.extend(v.chunks(dim.max(1)).map(|r| format!("{r:?}")));
                }
                let errors = seamcut::pipeline::commit::errors_path(&path);
                rows.push("errors".to_string());
                rows.extend(lines(&std::fs::read(errors).unwrap_or_default()));
                rows
            }
        }
    }

    /// The progress records of the jobs writing a database output, `{"totals": ...,
    /// "complete": ...}` each, as the output keeps them (pgvector's progress rows; Chroma's
    /// collection metadata; Milvus's collection properties; LanceDB's table config).
    fn job_records(&self) -> Vec<Value> {
        match self.kind {
            Kind::Pg => pgvector::job_records_at(&self.pg(), &self.name),
            Kind::Chroma => chroma::job_records_at(&self.chroma(), &self.name),
            Kind::Milvus => milvus::job_records_at(&self.milvus(), &self.name),
            #[cfg(feature = "lancedb")]
            Kind::Lance => super::lance::job_records(&self.dir, self.table()),
            _ => Vec::new(),
        }
    }

    fn partial(&self) -> PathBuf {
        PathBuf::from(format!("{}.seamcut-partial", self.path().display()))
    }

    /// How far the job writing this output has got: committed parts (files), items consumed
    /// (databases).
    fn progress(&self) -> u64 {
        if FILES.contains(&self.kind) {
            return std::fs::read(self.partial().join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|m| m["parts"].as_u64())
                .unwrap_or(0);
        }
        self.job_records().iter().map(|p| p["totals"]["items"].as_u64().unwrap_or(0)).sum()
    }

    /// Whether the job writing this output had finished it: a file in place with nothing
    /// partial beside it; a database whose job records say complete. A kill that lands after
    /// that (before the process exits) interrupts nothing.
    fn finished(&self) -> bool {
        if FILES.contains(&self.kind) {
            return self.path().exists() && !self.partial().exists();
        }
        let records = self.job_records();
        !records.is_empty() && records.iter().all(|p| p["complete"].as_bool() == Some(true))
    }

    /// A LanceDB table's name (the file name without `.lance`).
    #[cfg(feature = "lancedb")]
    fn table(&self) -> &str {
        self.name.trim_end_matches(".lance")
    }

    /// The output gone as a user or an operator removes it: the file deleted (what seamcut
    /// keeps beside it stays), the table dropped, the collection deleted.
    fn remove(&self) {
        match self.kind {
            Kind::Pg => {
                let mut c = postgres::Client::connect(&self.pg(), postgres::NoTls).unwrap();
                c.batch_execute(&format!("DROP TABLE IF EXISTS \"{}\"", self.name)).unwrap();
            }
            Kind::Chroma => {
                let _ =
                    ureq::delete(&format!("{}/{}", chroma::collections_at(&self.chroma()), self.name)).call();
            }
            Kind::Milvus => milvus::drop_at(&self.milvus(), &self.name),
            #[cfg(feature = "lancedb")]
            Kind::Lance => super::lance::drop_table(&self.dir, self.table()),
            _ => {
                let _ = std::fs::remove_file(self.path());
            }
        }
    }

    /// The database output emptied and kept (a table truncated, every row or record deleted),
    /// with whatever it records beside its rows.
    fn empty(&self) {
        match self.kind {
            Kind::Pg => {
                let mut db = postgres::Client::connect(&self.pg(), postgres::NoTls).unwrap();
                db.batch_execute(&format!("TRUNCATE \"{}\"", self.name)).unwrap();
            }
            Kind::Chroma => chroma::empty_collection_at(&self.chroma(), &self.name),
            Kind::Milvus => milvus::empty_at(&self.milvus(), &self.name),
            #[cfg(feature = "lancedb")]
            Kind::Lance => super::lance::delete_rows(&self.dir, self.table()),
            _ => unreachable!("files are not emptied"),
        }
    }

    /// Wipe everything of the output, what seamcut keeps beside it and its progress included.
    fn wipe(&self) {
        self.remove();
        match self.kind {
            Kind::Pg => {
                let mut c = postgres::Client::connect(&self.pg(), postgres::NoTls).unwrap();
                let _ = c.batch_execute(&format!("DELETE FROM seamcut_jobs WHERE tbl = '{}'", self.name));
            }
            Kind::Chroma | Kind::Milvus => {}
            #[cfg(feature = "lancedb")]
            Kind::Lance => {}
            _ => {
                let p = self.path();
                for q in [
                    seamcut::pipeline::commit::npy_path(&p),
                    seamcut::pipeline::commit::errors_path(&p),
                    seamcut::pipeline::commit::record_path(&p),
                ] {
                    let _ = std::fs::remove_file(q);
                }
                let _ = std::fs::remove_dir_all(self.partial());
            }
        }
    }
}

fn lines(b: &[u8]) -> Vec<String> {
    String::from_utf8(b.to_vec()).unwrap().lines().map(str::to_string).collect()
}

/// Every row of a Parquet file, each column's value as arrow prints it.
fn parquet_rows(path: &Path) -> Vec<String> {
    let f = std::fs::File::open(path).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        for i in 0..batch.num_rows() {
            let cells: Vec<String> = batch.columns().iter().map(|c| format!("{:?}", c.slice(i, 1))).collect();
            rows.push(cells.join(" | "));
        }
    }
    rows
}

/// The corpora every case reads: `corpus.jsonl` (60 documents and a bad line), and
/// `edited.jsonl`, the same with one document rewritten, one shortened, and two new ones.
struct Corpora {
    _dir: tempfile::TempDir,
    input: PathBuf,
    edited: PathBuf,
}

fn corpora() -> &'static Corpora {
    static C: OnceLock<Corpora> = OnceLock::new();
    C.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let base = corpus(dir.path(), 60);
        let mut text = std::fs::read_to_string(&base).unwrap();
        text.push_str("{\"id\": \"broken\", \"text\": 42}\n");
        let input = dir.path().join("input.jsonl");
        std::fs::write(&input, &text).unwrap();
        let mut docs: Vec<String> = text.lines().map(str::to_string).collect();
        docs[3] = json!({"id": "doc-003", "text": "A new first paragraph.\n\nAnd a second one, rather shorter.", "lang": "en"})
            .to_string();
        let mut d7: Value = serde_json::from_str(&docs[7]).unwrap();
        let t = d7["text"].as_str().unwrap().to_string();
        d7["text"] = t[..t.find("\n\n").unwrap()].into();
        docs[7] = d7.to_string();
        for id in ["doc-900", "doc-901"] {
            docs.push(json!({"id": id, "text": "Added later.\n\nWith a second paragraph.", "lang": "en"}).to_string());
        }
        let edited = dir.path().join("edited.jsonl");
        std::fs::write(&edited, docs.join("\n") + "\n").unwrap();
        Corpora { _dir: dir, input, edited }
    })
}

/// What a clean, uninterrupted run into `kind` holds, of the corpus or of the edited one.
fn clean(kind: Kind, edited: bool) -> &'static Vec<String> {
    type Refs = Vec<(Kind, bool, &'static Vec<String>)>;
    static REFS: OnceLock<std::sync::Mutex<Refs>> = OnceLock::new();
    let refs = REFS.get_or_init(Default::default);
    let mut refs = refs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, _, r)) = refs.iter().find(|(k, e, _)| *k == kind && *e == edited) {
        return r;
    }
    let c = corpora();
    let dir = tempfile::tempdir().unwrap();
    let out = Out::new(kind, dir.path(), if edited { "clean_edited" } else { "clean" });
    out.ok(if edited { &c.edited } else { &c.input }, &[]);
    let rows: &'static Vec<String> = Box::leak(Box::new(out.rows()));
    assert!(rows.len() > 60, "{kind:?}: {} rows", rows.len());
    refs.push((kind, edited, rows));
    rows
}

/// A small seeded generator (splitmix64) for the kill moments.
struct Moments(u64);

impl Moments {
    fn seeded() -> Self {
        let seed =
            std::env::var("SEAMCUT_FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
            });
        eprintln!("faults: kill moments from SEAMCUT_FAULT_SEED={seed}");
        Self(seed)
    }

    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    }
}

/// Run the job, SIGKILL it `delay_ms` after its progress has moved `steps` times; whether it
/// was stopped before it finished.
fn killed(out: &Out, input: &Path, extra: &[&str], steps: u64, delay_ms: u64) -> bool {
    let mut child = out.spawn(input, extra);
    let (mut seen, mut moved) = (out.progress(), 0);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let now = out.progress();
        if now > seen {
            seen = now;
            moved += 1;
            if moved >= steps {
                std::thread::sleep(std::time::Duration::from_millis(delay_ms));
                let _ = child.kill();
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    !child.wait().unwrap().success()
}

/// kill -9 at seeded moments until five kills an output have landed mid-job, each run after
/// the first resumed; then a last `--resume` to the end gives the clean run's rows. A run that
/// finishes before its kill, or whose output was whole when the kill landed (its last commit
/// made, the process not yet gone), is checked against the clean run there, and the next
/// starts a new job (a resumed job near its end may well finish first).
#[test]
fn kill_9() {
    let c = corpora();
    let mut moments = Moments::seeded();
    for kind in all() {
        let dir = tempfile::tempdir().unwrap();
        let out = Out::new(kind, dir.path(), "kill");
        let (mut log, mut landed, mut fresh) = (Vec::new(), 0, true);
        while landed < 5 {
            assert!(log.len() < 25, "{kind:?}: the kills did not land mid-job ({log:?})");
            let (steps, ms) = (1 + moments.next(3), moments.next(15));
            let extra: &[&str] = if fresh { &[] } else { &["--resume"] };
            let stopped = killed(&out, &c.input, extra, steps, ms);
            if stopped && !out.finished() {
                log.push(format!("{steps} commits + {ms} ms"));
                landed += 1;
                if fresh {
                    // Without --resume, an interrupted job is refused, naming the flag.
                    let e = one_line(&out.run(&c.input, &[]));
                    assert!(e.contains("--resume"), "{kind:?}: {e}");
                }
                fresh = false;
            } else {
                let when = if stopped { "killed once its output was whole" } else { "finished first" };
                log.push(format!("{steps} commits + {ms} ms: {when}"));
                assert_eq!(&out.rows(), clean(kind, false), "{kind:?}: resumed to the end after {log:?}");
                out.wipe();
                fresh = true;
            }
        }
        // The loop ends on a landed kill: the job is interrupted here.
        out.ok(&c.input, &["--resume"]);
        eprintln!("faults: kill-9 × {}: 5 kills landed mid-job, {} runs: {log:?}", kind.ext(), log.len());
        assert_eq!(&out.rows(), clean(kind, false), "{kind:?}: resumed after kills at {log:?}");
    }
}

/// The output removed after a finished run (and, for a table, truncated), then the same job
/// with `--resume`: rebuilt whole, never taken for done. A file's job is refused in one line
/// when the file it wrote was replaced by something else.
#[test]
fn removed() {
    let c = corpora();
    for kind in all() {
        let dir = tempfile::tempdir().unwrap();
        let out = Out::new(kind, dir.path(), "removed");
        out.ok(&c.input, &[]);
        type Fault<'a> = (&'static str, Box<dyn Fn() + 'a>);
        let mut faults: Vec<Fault> = vec![("removed", Box::new(|| out.remove()))];
        if !FILES.contains(&kind) {
            faults.push(("emptied", Box::new(|| out.empty())));
        }
        for (fault, apply) in &faults {
            apply();
            let o = out.run(&c.input, &["--resume"]);
            assert!(o.status.success(), "{kind:?} {fault}: {}", stderr(&o));
            if kind == Kind::Pg || *fault == "emptied" {
                // A progress that outlives its rows is never taken for this job's.
                assert!(stderr(&o).contains("starts afresh"), "{kind:?} {fault}: {}", stderr(&o));
            }
            assert_eq!(&out.rows(), clean(kind, false), "{kind:?} {fault}: rebuilt whole");
            // Rebuilt, the output is this job's again: a further --resume changes nothing.
            let o = out.run(&c.input, &["--resume"]);
            assert!(o.status.success() && !stderr(&o).contains("afresh"), "{kind:?}: {}", stderr(&o));
            assert_eq!(&out.rows(), clean(kind, false), "{kind:?} {fault}: a second --resume");
            eprintln!("faults: {fault} × {}: rebuilt whole by --resume", kind.ext());
        }
        if FILES.contains(&kind) {
            // Something else in the file's place: refused in one line, left as it is.
            std::fs::write(out.path(), b"someone else's file\n").unwrap();
            let e = one_line(&out.run(&c.input, &["--resume"]));
            assert!(e.contains("changed after this job wrote it") && e.contains("without --resume"), "{e}");
            assert_eq!(std::fs::read(out.path()).unwrap(), b"someone else's file\n");
            eprintln!("faults: replaced by another file × {}: refused in one line", kind.ext());
        }
    }
}

/// An edited corpus rerun (files: a plain run; databases: `--replace`) holds exactly what a
/// fresh run of the edited corpus holds: no stale chunk of a rewritten document kept.
#[test]
fn edited() {
    let c = corpora();
    for kind in all() {
        let dir = tempfile::tempdir().unwrap();
        let out = Out::new(kind, dir.path(), "edited");
        out.ok(&c.input, &[]);
        let replace: &[&str] = if FILES.contains(&kind) { &[] } else { &["--replace"] };
        out.ok(&c.edited, replace);
        assert_eq!(&out.rows(), clean(kind, true), "{kind:?}: the edited rerun equals a fresh run");
        eprintln!("faults: edited rerun × {}: equals a fresh run", kind.ext());
    }
}

/// A filesystem of `bytes` for files at `dir`: a tmpfs where the test may mount one (root),
/// else none (and the job runs under `RLIMIT_FSIZE` instead).
struct SmallDisk {
    dir: PathBuf,
    mounted: bool,
}

impl SmallDisk {
    fn new(dir: PathBuf, bytes: u64) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs", dir.to_str().unwrap()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Self { dir, mounted }
    }

    /// Free space: the tmpfs grown to 256 MB.
    fn grow(&self) {
        if self.mounted {
            let s = Command::new("mount")
                .args(["-o", "remount,size=268435456", self.dir.to_str().unwrap()])
                .status()
                .unwrap();
            assert!(s.success());
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.dir).status();
        }
    }
}

/// Run the job with files limited to `bytes` (`RLIMIT_FSIZE`, with SIGXFSZ ignored so that a
/// write past it fails with EFBIG as a full disk fails with ENOSPC).
fn run_limited(out: &Out, input: &Path, bytes: u64) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seamcut"));
    cmd.args(out.args(input, &[]));
    // SAFETY: setrlimit and signal are async-signal-safe, called between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit { rlim_cur: bytes, rlim_max: libc::RLIM_INFINITY };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// A full disk while writing files: one line naming the file and the way on, the committed
/// part kept, and `--resume` once there is room completes the job as a clean run would.
#[test]
fn full_disk() {
    let c = corpora();
    for kind in FILES {
        let root = tempfile::tempdir().unwrap();
        // About half of what the finished output needs (its parts, then the assembled file).
        let need: u64 = clean(kind, false).iter().map(|r| r.len() as u64).sum();
        let disk = SmallDisk::new(root.path().join("disk"), (need / 3).max(64 << 10));
        let out = Out::new(kind, &disk.dir, "full");
        let o = if disk.mounted { out.run(&c.input, &[]) } else { run_limited(&out, &c.input, need / 6) };
        let e = one_line(&o);
        let how = if disk.mounted { "No space left on device" } else { "File too large" };
        assert!(e.contains(how) && e.contains("--resume"), "{kind:?}: {e}");
        assert!(out.progress() > 0, "{kind:?}: the committed part is kept: {e}");
        disk.grow();
        out.ok(&c.input, &["--resume"]);
        assert_eq!(&out.rows(), clean(kind, false), "{kind:?}: resumed once there is room");
        let fs = if disk.mounted { "a full tmpfs" } else { "RLIMIT_FSIZE" };
        eprintln!(
            "faults: full disk ({fs}) × {}: one line, committed part kept, --resume completes",
            kind.ext()
        );
    }
}

/// The database server killed mid-job (every connection cut, as a crash): the job stops with
/// one line naming the server and `--resume` (or rides it out); once the server is back,
/// `--resume` leaves what a clean run leaves. Each case runs a server of its own.
#[test]
fn server_restart() {
    let c = corpora();
    let dir = tempfile::tempdir().unwrap();
    let pg = OwnServer::postgres("faults");
    let chroma = OwnServer::chroma("faults");
    let milvus = OwnServer::milvus("faults");
    for (kind, server) in [(Kind::Pg, &pg), (Kind::Chroma, &chroma), (Kind::Milvus, &milvus)] {
        let out = Out::new(kind, dir.path(), "restart").at(&server.url);
        let mut child = out.spawn(&c.input, &[]);
        let child_pid = child.id();
        while out.progress() == 0 {
            if child.try_wait().unwrap().is_some() {
                panic!(
                    "{kind:?}: the job ended before its first batch landed: {}",
                    stderr(&child.wait_with_output().unwrap())
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        server.run("kill");
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        let outcome = if o.status.success() {
            "rode it out".to_string()
        } else {
            let last = err.lines().last().unwrap_or_default().to_string();
            assert!(last.contains("127.0.0.1") && last.contains("--resume"), "{kind:?} ({child_pid}): {err}");
            last
        };
        server.run("restart");
        if !o.status.success() {
            assert!(!out.rows().is_empty(), "{kind:?}: the acknowledged batches are kept");
        }
        out.ok(&c.input, &["--resume"]);
        assert_eq!(&out.rows(), clean(kind, false), "{kind:?}: after the server's restart");
        eprintln!(
            "faults: server killed × {}: {outcome}; --resume after its restart equals a clean run",
            kind.ext()
        );
    }
}

/// Four shards at once into one table or collection, then all four again at once with
/// `--replace` after an edit: the union is one unsharded run's, with no row duplicated or lost
/// and no stale row kept.
#[test]
fn concurrent_shards() {
    let c = corpora();
    for kind in databases() {
        let dir = tempfile::tempdir().unwrap();
        let out = Out::new(kind, dir.path(), "shards");
        for (input, edited, extra) in [(&c.input, false, &[][..]), (&c.edited, true, &["--replace"][..])] {
            let shards: Vec<String> = (0..4).map(|i| format!("{i}/4")).collect();
            let children: Vec<Child> = shards
                .iter()
                .map(|s| out.spawn(input, &[&["--shard", s.as_str()][..], extra].concat()))
                .collect();
            for (i, child) in children.into_iter().enumerate() {
                let o = child.wait_with_output().unwrap();
                assert!(o.status.success(), "{kind:?} shard {i}/4: {}", stderr(&o));
            }
            assert_eq!(&out.rows(), clean(kind, edited), "{kind:?} edited={edited}: the shards' union");
            let what = if edited { "the edited corpus with --replace" } else { "a first load" };
            eprintln!("faults: 4 concurrent shards × {} ({what}): equals one unsharded run", kind.ext());
        }
    }
}
