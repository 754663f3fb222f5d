//! What a job leaves in its output: never another job's rows in place of a user's file, a
//! finished output left alone by `--resume`, a replaced file whole until the new one is, no
//! folder made for `-o`, and offsets that slice the input as it was read (`--lossy` too).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::db_jobs::killed_after_progress;

fn seamcut(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seamcut")).args(args).stdin(Stdio::null()).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(args: &[&str]) -> Output {
    let o = seamcut(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

/// Twelve plain-text documents of a few paragraphs each.
fn corpus(dir: &Path) -> PathBuf {
    corpus_of(dir, 12)
}

/// `n` plain-text documents of a few paragraphs each.
fn corpus_of(dir: &Path, n: usize) -> PathBuf {
    let sentences: Vec<&str> = include_str!("../../benches/data-sentences.txt").lines().collect();
    let root = dir.join("corpus");
    std::fs::create_dir(&root).unwrap();
    let mut k = 0;
    for d in 0..n {
        let mut text = String::new();
        for p in 0..3 + d % 3 {
            for _ in 0..3 + p % 2 {
                text.push_str(sentences[k % sentences.len()]);
                text.push(' ');
                k += 1;
            }
            text.push_str("\n\n");
        }
        std::fs::write(root.join(format!("doc-{d:04}.txt")), text).unwrap();
    }
    root
}

fn parquet_rows(path: &Path) -> (usize, Vec<String>) {
    let f = std::fs::File::open(path).unwrap();
    let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    let cols = b.schema().fields().iter().map(|f| f.name().clone()).collect();
    (b.build().unwrap().map(|r| r.unwrap().num_rows()).sum(), cols)
}

#[test]
fn resume_refuses_another_jobs_output_and_leaves_its_own_finished_one_alone() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    let input = input.to_str().unwrap();
    let out = dir.path().join("d.parquet");
    let o = out.to_str().unwrap();
    ok(&["chunk", input, "--chunker", "maxmin", "--embeddings", "mean", "-o", o, "-q"]);
    let (rows, cols) = parquet_rows(&out);
    assert!(rows > 12 && cols.iter().any(|c| c == "embedding"), "{rows} {cols:?}");
    let written = std::fs::read(&out).unwrap();
    let modified = std::fs::metadata(&out).unwrap().modified().unwrap();

    // Another job (another chunker, no vectors) with --resume: refused in one line that names
    // what differs and the way out; the file untouched.
    let r = seamcut(&["chunk", input, "--chunker", "recursive", "-o", o, "--resume", "-q"]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    let err = stderr(&r);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("another job") && err.contains("chunker") && err.contains("recursive"), "{err}");
    assert!(err.contains("embeddings") && err.contains("without --resume"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), written);

    // The same job with --resume: nothing to do, said so, the file as it was (not rewritten).
    let r = ok(&["chunk", input, "--chunker", "maxmin", "--embeddings", "mean", "-o", o, "--resume"]);
    assert!(stderr(&r).contains("nothing to do"), "{}", stderr(&r));
    assert_eq!(std::fs::read(&out).unwrap(), written);
    assert_eq!(std::fs::metadata(&out).unwrap().modified().unwrap(), modified);

    // A file the job did not write (or that changed since) is not resumed either.
    let foreign = dir.path().join("mine.jsonl");
    std::fs::write(&foreign, "{\"a user's\": \"file\"}\n").unwrap();
    let f = foreign.to_str().unwrap();
    let r = seamcut(&["chunk", input, "-o", f, "--resume", "-q"]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(stderr(&r).contains("not written by a seamcut job"), "{}", stderr(&r));
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "{\"a user's\": \"file\"}\n");
    let edited = dir.path().join("e.jsonl");
    let e = edited.to_str().unwrap();
    ok(&["chunk", input, "-o", e, "-q"]);
    std::fs::write(&edited, std::fs::read_to_string(&edited).unwrap() + "\n").unwrap();
    let r = seamcut(&["chunk", input, "-o", e, "--resume", "-q"]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(stderr(&r).contains("changed after this job wrote it"), "{}", stderr(&r));

    // Without --resume a run replaces the output, as -o does elsewhere.
    ok(&["chunk", input, "--chunker", "recursive", "-o", o, "-q"]);
    let (_, cols) = parquet_rows(&out);
    assert!(!cols.iter().any(|c| c == "embedding"), "{cols:?}");
    // The output deleted, --resume rebuilds it whole.
    let reference = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    ok(&["chunk", input, "--chunker", "recursive", "-o", o, "--resume", "-q"]);
    assert_eq!(std::fs::read(&out).unwrap(), reference);
}

#[test]
fn a_replacing_run_leaves_the_old_file_whole_until_the_new_one_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus_of(dir.path(), 300);
    let input = input.to_str().unwrap();
    let out = dir.path().join("out.jsonl");
    let o = out.to_str().unwrap();
    ok(&["chunk", input, "--chunker", "sentence", "-o", o, "-q"]);
    let old = std::fs::read(&out).unwrap();
    // A replacing run, one document a batch, killed once it has committed a part.
    let partial = dir.path().join("out.jsonl.seamcut-partial");
    let args = ["chunk", input, "--chunker", "recursive", "--batch-bytes", "1", "-o", o, "-q"];
    let killed = killed_after_progress(&args, || u64::from(partial.join("manifest.json").is_file()));
    assert!(killed, "the run was killed mid-job (300 batches, each committed with fsync)");
    assert_eq!(std::fs::read(&out).unwrap(), old, "the killed run left the old output whole");
    // The interrupted replacement goes on with --resume and gives the fresh run's bytes.
    ok(&[&args[..], &["--resume"]].concat());
    let fresh = dir.path().join("fresh.jsonl");
    ok(&["chunk", input, "--chunker", "recursive", "-o", fresh.to_str().unwrap(), "-q"]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&fresh).unwrap());
}

#[test]
fn an_output_in_a_missing_folder_is_refused_and_no_folder_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    let missing = dir.path().join("no/such/dir");
    for name in ["out.jsonl", "out.parquet"] {
        let out = missing.join(name);
        let r = seamcut(&["chunk", input.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
        assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
        let err = stderr(&r);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("does not exist") && err.contains(missing.to_str().unwrap()), "{err}");
        assert!(!dir.path().join("no").exists(), "no folder is made");
    }
}

/// Each record's `start..end` sliced out of the raw bytes, decoded as `--lossy` decodes, is
/// the record's text; the records tile the file.
fn assert_offsets_slice(raw: &[u8], records: &[serde_json::Value]) {
    let mut at = 0;
    for r in records {
        let (s, e) = (r["start"].as_u64().unwrap() as usize, r["end"].as_u64().unwrap() as usize);
        assert_eq!(s, at, "{records:?}");
        assert!(e <= raw.len(), "chunk ends at {e}, past the file's {} bytes", raw.len());
        assert_eq!(String::from_utf8_lossy(&raw[s..e]), r["text"].as_str().unwrap(), "{s}..{e}");
        let id = seamcut::chunk::chunk_id(r["doc_id"].as_str().unwrap(), s, e, r["text"].as_str().unwrap());
        assert_eq!(r["id"].as_str().unwrap(), id, "the id is made from the offsets written");
        at = e;
    }
    assert_eq!(at, raw.len());
}

#[test]
fn lossy_offsets_are_byte_offsets_into_the_file_as_read() {
    let dir = tempfile::tempdir().unwrap();
    // Invalid sequences of one, two and three bytes (each one U+FFFD), before and between
    // sentences, and a real U+FFFD, which is not a replacement.
    let mut raw = b"Bad \xff byte here. ".to_vec();
    raw.extend_from_slice(b"A cut \xe2\x82 sequence. Four \xf0\x9f\x98 bytes cut. ");
    raw.extend_from_slice("Real \u{FFFD} stays. ".as_bytes());
    raw.extend_from_slice(b"Last one \xc3 \xc3.\n");
    let file = dir.path().join("bad.txt");
    std::fs::write(&file, &raw).unwrap();
    let f = file.to_str().unwrap();
    let records = |o: &Output| -> Vec<serde_json::Value> {
        String::from_utf8(o.stdout.clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for chunker in
        [&["--chunker", "sentence", "--max-tokens", "6"][..], &["--chunker", "fixed", "--max-tokens", "4"]]
    {
        let o = ok(&[&["chunk", f, "--lossy", "-q"][..], chunker].concat());
        let got = records(&o);
        assert!(got.len() > 3, "{got:?}");
        assert_offsets_slice(&raw, &got);
    }
    // The sentences `segment` writes slice the file too (they do not tile: whitespace between).
    let o = ok(&["segment", f, "--lossy", "-q"]);
    for r in records(&o) {
        let (s, e) = (r["start"].as_u64().unwrap() as usize, r["end"].as_u64().unwrap() as usize);
        assert_eq!(String::from_utf8_lossy(&raw[s..e]), r["text"].as_str().unwrap());
    }
    // Into a Parquet file the same offsets.
    let out = dir.path().join("bad.parquet");
    ok(&[
        "chunk",
        f,
        "--lossy",
        "--chunker",
        "sentence",
        "--max-tokens",
        "6",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    let file = std::fs::File::open(&out).unwrap();
    let batches: Vec<_> = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    use arrow_array::cast::AsArray;
    let mut rows = Vec::new();
    for b in &batches {
        let col = |n: &str| b.column(b.schema().index_of(n).unwrap()).clone();
        let (start, end) = (col("start"), col("end"));
        let (start, end) = (
            start.as_primitive::<arrow_array::types::Int64Type>(),
            end.as_primitive::<arrow_array::types::Int64Type>(),
        );
        let (text, id, doc) = (col("text"), col("id"), col("doc_id"));
        for i in 0..b.num_rows() {
            rows.push(serde_json::json!({
                "start": start.value(i), "end": end.value(i),
                "text": text.as_string::<i32>().value(i), "id": id.as_string::<i32>().value(i),
                "doc_id": doc.as_string::<i32>().value(i),
            }));
        }
    }
    assert_offsets_slice(&raw, &rows);
}
