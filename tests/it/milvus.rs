//! Corpus jobs into a real Milvus (`-o milvus://HOST:PORT/COLLECTION`), read back with
//! pymilvus: reruns, `--replace`, the stored vectors, the index, and faults. `tests/run.sh`
//! starts the server (`tests/db/milvus.sh start`: milvus-lite's gRPC server) and sets
//! `SEAMCUT_TEST_MILVUS` to its URL; each test writes collections of its own. kill -9, a
//! dropped or emptied collection, the server's restart and concurrent shards are in the fault
//! matrix (`faults.rs`).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

use super::db_jobs::{corpus, job_records_in, one_line, seamcut, stderr};

/// The tests' server: `milvus://127.0.0.1:PORT`.
pub(super) fn base() -> String {
    std::env::var("SEAMCUT_TEST_MILVUS").unwrap_or_else(|_| {
        panic!("SEAMCUT_TEST_MILVUS is not set: start a server with `tests/db/milvus.sh start` and export its URL")
    })
}

/// pymilvus in a process of its own (`tests/db/milvus_probe.py`), one request at a time.
struct Probe {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn probe() -> &'static Mutex<Probe> {
    static P: OnceLock<Mutex<Probe>> = OnceLock::new();
    P.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new(root.join(".venv-milvus/bin/python"))
            .arg(root.join("tests/db/milvus_probe.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("pymilvus in .venv-milvus (tests/db/milvus.sh start makes it)");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Mutex::new(Probe { _child: child, stdin, stdout })
    })
}

/// One request to the probe about collection `name` on the server at `base`.
fn ask(base: &str, op: &str, name: &str) -> Value {
    ask_with(base, op, name, json!({}))
}

/// [`ask`] with more of the request's fields.
fn ask_with(base: &str, op: &str, name: &str, more: Value) -> Value {
    let uri = base.replacen("milvus://", "http://", 1);
    let mut req = json!({"uri": uri, "op": op, "name": name});
    req.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
    let mut p = probe().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    writeln!(p.stdin, "{req}").unwrap();
    let mut line = String::new();
    p.stdout.read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("the probe's answer {line:?}: {e}"));
    match v.get("ok") {
        Some(ok) => ok.clone(),
        None => panic!("pymilvus, {op} {name}: {}", v["error"]),
    }
}

/// Every row as text (vectors by their floats' bits), sorted: equal dumps, equal collections.
pub(super) fn dump_at(base: &str, name: &str) -> Vec<String> {
    let rows = ask(base, "dump", name);
    let mut out: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let bits: Vec<u32> = r["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| (x.as_f64().unwrap() as f32).to_bits())
                .collect();
            format!(
                "{} {} {} {} {} {} {} {} {} {bits:?}",
                r["id"],
                r["doc_id"],
                r["index"],
                r["start"],
                r["end"],
                r["text"],
                r["tokens"],
                r["context"],
                r["lang"]
            )
        })
        .collect();
    out.sort();
    out
}

fn dump(name: &str) -> Vec<String> {
    dump_at(&base(), name)
}

/// The progress records of the jobs writing the collection (its `seamcut.job.*` properties):
/// `{"totals": ..., "complete": ...}` each.
pub(super) fn job_records_at(base: &str, name: &str) -> Vec<Value> {
    job_records_in(&ask(base, "describe", name)["properties"], "seamcut.job.")
}

pub(super) fn drop_at(base: &str, name: &str) {
    ask(base, "drop", name);
}

/// Every row deleted, the collection and its properties kept.
pub(super) fn empty_at(base: &str, name: &str) {
    assert!(ask(base, "empty", name).as_u64().unwrap() > 0);
    assert!(dump_at(base, name).is_empty());
}

fn job(input: &Path, collection: &str, extra: &[&str]) -> Output {
    let url = format!("{}/{collection}", base());
    let mut args = vec!["chunk", input.to_str().unwrap(), "--chunker", "maxmin", "--embeddings", "mean"];
    args.extend(["--meta-field", "lang", "-o", &url, "-q"]);
    args.extend(extra);
    seamcut(&args)
}

#[test]
fn milvus_reruns_replace_the_npy_and_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 30);
    let c = "seamcut_twice";
    drop_at(&base(), c);
    let o = job(&input, c, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = dump(c);
    assert!(first.len() > 30, "{}", first.len());
    // What made the vectors is recorded with the collection, beside its fields.
    let d = ask(&base(), "describe", c);
    let props = &d["properties"];
    assert_eq!(props["seamcut.dim"], "240", "{d}");
    assert!(props["seamcut.vectors"].as_str().unwrap().contains(r#""embeddings":"mean""#), "{d}");
    let index = ask(&base(), "index", c);
    assert!(index.to_string().contains("AUTOINDEX"), "{index}");
    // A rerun changes nothing and adds nothing.
    assert!(job(&input, c, &[]).status.success());
    assert_eq!(dump(c), first);
    // Rows whose metadata changed are rewritten, and only those.
    let text = std::fs::read_to_string(&input).unwrap();
    let relabelled = dir.path().join("relabelled.jsonl");
    std::fs::write(&relabelled, text.replacen("\"lang\":\"en\"", "\"lang\":\"de\"", 1)).unwrap();
    assert!(job(&relabelled, c, &[]).status.success());
    let now = dump(c);
    let changed: Vec<&String> = now.iter().filter(|r| !first.contains(r)).collect();
    assert!(!changed.is_empty() && changed.iter().all(|r| r.contains("\"de\"")), "{changed:?}");
    assert_eq!(now.len(), first.len());
    // --hnsw builds Milvus's HNSW index in place of the AUTOINDEX.
    let o = job(&input, c, &["--hnsw"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(dump(c), first, "and back");
    let index = ask(&base(), "index", c);
    assert!(index.to_string().contains("HNSW") && index.to_string().contains("COSINE"), "{index}");
    // Vectors made another way do not go into it.
    let late = ["chunk", input.to_str().unwrap(), "--chunker", "maxmin", "--embeddings", "late"];
    let url = format!("{}/{c}", base());
    let e = one_line(&seamcut(&[&late[..], &["--meta-field", "lang", "-q", "-o", &url]].concat()));
    assert!(e.contains("made another way"), "{e}");
    assert_eq!(dump(c), first, "nothing written");
    // The stored vectors are the ones `-o out.jsonl` writes to its .npy, chunk for chunk.
    let jsonl = dir.path().join("out.jsonl");
    let mut args = vec!["chunk", input.to_str().unwrap(), "--chunker", "maxmin", "--embeddings", "mean"];
    args.extend(["--meta-field", "lang", "-o", jsonl.to_str().unwrap(), "-q"]);
    assert!(seamcut(&args).status.success());
    let (npy, n, dim) = seamcut::npy::read_f32(&dir.path().join("out.npy")).unwrap();
    let records: Vec<Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let stored = ask(&base(), "dump", c);
    let stored = stored.as_array().unwrap();
    assert_eq!(stored.len(), n);
    for r in stored {
        let k = records.iter().position(|x| x["id"] == r["id"]).unwrap();
        assert_eq!(
            (&records[k]["doc_id"], &records[k]["start"], &records[k]["end"]),
            (&r["doc_id"], &r["start"], &r["end"])
        );
        assert_eq!(records[k]["text"], r["text"]);
        let v: Vec<f32> =
            r["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert_eq!(v, &npy[k * dim..(k + 1) * dim], "{}", r["id"]);
    }
    // --replace after an edit leaves exactly the new chunks: equal to a fresh load.
    let mut lines: Vec<String> =
        std::fs::read_to_string(&input).unwrap().lines().map(str::to_string).collect();
    lines[2] =
        json!({"id": "doc-002", "text": "One new paragraph.\n\nAnother, shorter.", "lang": "en"}).to_string();
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let o = job(&input, c, &["--replace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    drop_at(&base(), "seamcut_fresh");
    assert!(job(&input, "seamcut_fresh", &[]).status.success());
    let (replaced, fresh) = (dump(c), dump("seamcut_fresh"));
    assert_ne!(replaced, first);
    assert_eq!(replaced, fresh);
}

#[test]
fn milvus_faults_are_one_line_errors_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 3);
    // No vectors asked for.
    let url = format!("{}/seamcut_novectors", base());
    let e = one_line(&seamcut(&["chunk", input.to_str().unwrap(), "-o", &url, "-q"]));
    assert!(e.contains("--embeddings"), "{e}");
    // A name Milvus refuses (milvus-lite takes it): refused before any request, in one line.
    let e = one_line(&job(&input, "bad-name!", &[]));
    assert!(e.contains("bad-name!") && e.contains("not a name Milvus takes"), "{e}");
    // TLS is refused in words, not tried.
    let e =
        one_line(&seamcut(&["chunk", input.to_str().unwrap(), "-o", "milvus+https://127.0.0.1:1/c", "-q"]));
    assert!(e.contains("TLS"), "{e}");
    // A collection of another model: nothing written into it.
    let c = "seamcut_other_model";
    drop_at(&base(), c);
    assert!(job(&input, c, &[]).status.success());
    let before = dump(c);
    ask_with(&base(), "alter", c, json!({"properties": {"seamcut.model": "another (abc)"}}));
    let e = one_line(&job(&input, c, &[]));
    assert!(e.contains("another model"), "{e}");
    assert_eq!(dump(c), before);
    // A corpus that repeats a document: each chunk stored once.
    let dup = dir.path().join("dup.jsonl");
    let line = "{\"id\": \"same\", \"text\": \"Repeated text here.\\n\\nTwice over.\", \"lang\": \"en\"}\n";
    std::fs::write(&dup, format!("{line}{line}")).unwrap();
    drop_at(&base(), "seamcut_dup");
    let o = job(&dup, "seamcut_dup", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = dump("seamcut_dup");
    assert!(!rows.is_empty());
    let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r.split(' ').next().unwrap()).collect();
    assert_eq!(ids.len(), rows.len());
    // A server that does not answer: one line naming it and the way on, after retries.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("milvus://127.0.0.1:{port}/c");
    let mut args = vec!["chunk", input.to_str().unwrap(), "--chunker", "maxmin", "--embeddings", "mean"];
    args.extend(["-o", &url, "-q"]);
    let e = one_line(&seamcut(&args));
    assert!(e.contains(&format!("127.0.0.1:{port}")) && e.contains("--resume"), "{e}");
    // A chunk longer than a VARCHAR holds: that document is skipped and reported, the others
    // stored.
    let long = dir.path().join("long.jsonl");
    let big = "A sentence of a long paragraph. ".repeat(2_200);
    std::fs::write(
        &long,
        format!(
            "{}\n{}\n",
            json!({"id": "short", "text": "Short text here.", "lang": "en"}),
            json!({"id": "long", "text": big, "lang": "en"})
        ),
    )
    .unwrap();
    let c = "seamcut_long";
    drop_at(&base(), c);
    let url = format!("{}/{c}", base());
    let o = seamcut(&[
        "chunk",
        long.to_str().unwrap(),
        "--chunker",
        "paragraph",
        "--max-tokens",
        "0",
        "--embeddings",
        "reembed",
        "--meta-field",
        "lang",
        "-o",
        &url,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("longer than a Milvus VARCHAR holds"), "{}", stderr(&o));
    let rows = dump(c);
    assert!(rows.len() == 1 && rows[0].contains("\"short\""), "{rows:?}");
}
