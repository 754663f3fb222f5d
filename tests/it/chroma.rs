//! Corpus jobs into a real Chroma server (`-o chroma+http://HOST:PORT/COLLECTION`): reruns,
//! `--replace`, kill -9 and `--resume`, the stored vectors, and faults. `tests/run.sh` starts
//! the server (`tests/db/chroma.sh start`) and sets `SEAMCUT_TEST_CHROMA` to its base URL;
//! each test writes collections of its own.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use super::db_jobs::{corpus, job_records_in, one_line, seamcut, stderr};

pub(super) fn base() -> String {
    std::env::var("SEAMCUT_TEST_CHROMA").unwrap_or_else(|_| {
        panic!("SEAMCUT_TEST_CHROMA is not set: start a server with `tests/db/chroma.sh start` and export its URL")
    })
}

pub(super) fn collections() -> String {
    collections_at(&base())
}

/// The collections' URL of the server at `base` (`chroma+http://HOST:PORT`).
pub(super) fn collections_at(base: &str) -> String {
    format!(
        "{}/api/v2/tenants/default_tenant/databases/default_database/collections",
        base.trim_start_matches("chroma+")
    )
}

/// The progress records of the jobs writing the collection on the server at `base` (its
/// metadata's `seamcut_job_*` keys): `{"totals": ..., "complete": ...}` each; none while it
/// cannot be read.
pub(super) fn job_records_at(base: &str, name: &str) -> Vec<Value> {
    let url = format!("{}/{name}", collections_at(base));
    let Some(v) = ureq::get(&url).call().ok().and_then(|r| r.into_json::<Value>().ok()) else {
        return Vec::new();
    };
    job_records_in(&v["metadata"], "seamcut_job_")
}

pub(super) fn drop_collection(name: &str) {
    let _ = ureq::delete(&format!("{}/{name}", collections())).call();
}

/// The collection's id, if it exists.
pub(super) fn collection_id(name: &str) -> Option<String> {
    collection_id_at(&base(), name)
}

/// [`collection_id`] on the server at `base`.
pub(super) fn collection_id_at(base: &str, name: &str) -> Option<String> {
    let v: Value = ureq::get(&format!("{}/{name}", collections_at(base))).call().ok()?.into_json().ok()?;
    v["id"].as_str().map(str::to_string)
}

/// Every record as text (id, document, metadata, vector), sorted by id.
fn dump(name: &str) -> Vec<String> {
    dump_at(&base(), name)
}

/// [`dump`] on the server at `base` (`chroma+http://HOST:PORT`).
pub(super) fn dump_at(base: &str, name: &str) -> Vec<String> {
    let collections = collections_at(base);
    let id = collection_id_at(base, name).unwrap();
    let v: Value = ureq::post(&format!("{collections}/{id}/get"))
        .send_json(json!({"include": ["documents", "metadatas", "embeddings"]}))
        .unwrap()
        .into_json()
        .unwrap();
    let mut out: Vec<String> = (0..v["ids"].as_array().unwrap().len())
        .map(|i| {
            // Keys sorted: a build whose serde_json keeps maps in their order (the lancedb
            // feature's dependencies turn on `preserve_order`) would show Chroma's order,
            // which differs between records of equal metadata.
            let meta: std::collections::BTreeMap<&String, &Value> =
                v["metadatas"][i].as_object().map(|m| m.iter().collect()).unwrap_or_default();
            format!("{} {} {meta:?} {}", v["ids"][i], v["documents"][i], v["embeddings"][i])
        })
        .collect();
    out.sort();
    out
}

/// Every record of the collection deleted, the collection and its metadata kept.
pub(super) fn empty_collection_at(base: &str, name: &str) {
    let collections = collections_at(base);
    let id = collection_id_at(base, name).unwrap();
    let v: Value = ureq::post(&format!("{collections}/{id}/get"))
        .send_json(json!({"include": []}))
        .unwrap()
        .into_json()
        .unwrap();
    let ids = v["ids"].clone();
    assert!(ids.as_array().is_some_and(|i| !i.is_empty()), "{v}");
    ureq::post(&format!("{collections}/{id}/delete")).send_json(json!({"ids": ids})).unwrap();
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
fn chroma_reruns_replace_and_the_vectors_of_the_npy() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 20);
    let c = "seamcut-twice";
    drop_collection(c);
    let o = job(&input, c, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = dump(c);
    assert!(first.len() > 20);
    assert!(job(&input, c, &[]).status.success());
    assert_eq!(dump(c), first, "a rerun changes nothing and adds nothing");
    // A rerun sends only the rows the collection holds otherwise: a record whose metadata
    // was changed behind the job's back is written again, one whose metadata is as the job
    // writes it is not (its document, changed here by hand, stays as it is).
    let id = collection_id(c).unwrap();
    let records: Value = ureq::post(&format!("{}/{id}/get", collections()))
        .send_json(json!({"include": ["metadatas"], "limit": 2}))
        .unwrap()
        .into_json()
        .unwrap();
    let (a, b) = (records["ids"][0].clone(), records["ids"][1].clone());
    let mut tampered = records["metadatas"][0].clone();
    tampered["context"] = "tampered".into();
    let update =
        json!({"ids": [a, b], "metadatas": [tampered, records["metadatas"][1]], "documents": ["x", "y"]});
    ureq::post(&format!("{}/{id}/update", collections())).send_json(update).unwrap();
    assert!(job(&input, c, &[]).status.success());
    let now = dump(c);
    let changed: Vec<&String> = now.iter().filter(|r| !first.contains(r)).collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].starts_with(&format!("{b} \"y\"")), "{changed:?}");
    drop_collection(c);
    assert!(job(&input, c, &[]).status.success());
    assert_eq!(dump(c), first);
    // Vectors made another way (late chunking) do not go into it.
    let url = format!("{}/{c}", base());
    let late = ["chunk", input.to_str().unwrap(), "--chunker", "maxmin", "--embeddings", "late"];
    let e = one_line(&seamcut(&[&late[..], &["--meta-field", "lang", "-q", "-o", &url]].concat()));
    assert!(e.contains("made another way"), "{e}");
    assert_eq!(dump(c), first, "nothing written");
    // The stored vectors are the .npy's, chunk for chunk.
    let out = dir.path().join("out.jsonl");
    let args = [
        "chunk",
        input.to_str().unwrap(),
        "--chunker",
        "maxmin",
        "--embeddings",
        "mean",
        "-o",
        out.to_str().unwrap(),
        "-q",
    ];
    assert!(seamcut(&args).status.success());
    let (npy, rows, dim) = seamcut::npy::read_f32(&dir.path().join("out.npy")).unwrap();
    let records: Vec<Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), rows);
    let id = collection_id(c).unwrap();
    let v: Value = ureq::post(&format!("{}/{id}/get", collections()))
        .send_json(json!({"include": ["documents", "metadatas", "embeddings"]}))
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(v["ids"].as_array().unwrap().len(), rows);
    for i in 0..rows {
        let m = &v["metadatas"][i];
        // The file's records carry the collection's ids.
        let k = records.iter().position(|r| r["id"] == v["ids"][i]).unwrap();
        assert_eq!((&records[k]["doc_id"], &records[k]["index"]), (&m["doc_id"], &m["index"]));
        assert_eq!(records[k]["text"], v["documents"][i]);
        assert_eq!(m["lang"], "en");
        let got: Vec<f32> =
            v["embeddings"][i].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        // Chroma keeps a cosine collection's vectors normalised again in f32: the .npy's row to
        // its last bit or so.
        let want = &npy[k * dim..(k + 1) * dim];
        let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(got.len() == dim && worst <= 1e-6, "{m}: {worst}");
    }
    // --replace after an edit leaves exactly the new chunks: equal to a fresh load.
    let text = std::fs::read_to_string(&input).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[2] =
        json!({"id": "doc-002", "text": "One new paragraph.\n\nAnother, shorter.", "lang": "en"}).to_string();
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let o = job(&input, c, &["--replace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fresh = "seamcut-fresh";
    drop_collection(fresh);
    assert!(job(&input, fresh, &[]).status.success());
    assert_eq!(dump(c), dump(fresh));
}

#[test]
fn chroma_faults_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 2);
    // A server that is not there.
    let down = "chroma+http://127.0.0.1:9/c-down";
    let e = one_line(&seamcut(&[
        "chunk",
        input.to_str().unwrap(),
        "--embeddings",
        "mean",
        "--chunker",
        "maxmin",
        "-o",
        down,
    ]));
    assert!(e.contains("cannot reach the server"), "{e}");
    // A collection name Chroma refuses: its own words.
    let e = one_line(&job(&input, "x", &[]));
    assert!(e.contains("HTTP 4") && e.contains("name"), "{e}");
    // A collection of another model, or not written by seamcut.
    drop_collection("seamcut-other");
    ureq::post(&collections())
        .send_json(json!({"name": "seamcut-other", "metadata": {"seamcut_model": "another (abc)", "seamcut_dim": 240}}))
        .unwrap();
    let e = one_line(&job(&input, "seamcut-other", &[]));
    assert!(e.contains("another model"), "{e}");
    assert!(dump("seamcut-other").is_empty(), "nothing written before the check");
    // A corpus that repeats a document: each chunk stored once.
    let dup = dir.path().join("dup.jsonl");
    let line = "{\"id\": \"same\", \"text\": \"Repeated text here.\\n\\nTwice over.\"}\n";
    std::fs::write(&dup, format!("{line}{line}")).unwrap();
    drop_collection("seamcut-dup");
    let url = format!("{}/seamcut-dup", base());
    let o = seamcut(&[
        "chunk",
        dup.to_str().unwrap(),
        "--chunker",
        "maxmin",
        "--embeddings",
        "mean",
        "-q",
        "-o",
        &url,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = dump("seamcut-dup");
    assert!(!rows.is_empty());
    let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r.split(' ').next().unwrap()).collect();
    assert_eq!(ids.len(), rows.len());
}
