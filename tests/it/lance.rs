//! Corpus jobs into LanceDB tables (`-o DIR/NAME.lance`, feature `lancedb`), read back with
//! LanceDB's own client: reruns, `--replace`, kill -9 then `--resume`, the `.npy`'s vectors, and
//! the faults a table can meet.

use std::path::Path;
use std::process::Output;

use futures::TryStreamExt;
use lancedb::arrow::arrow_array::{
    Array, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray,
};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema};
use lancedb::query::ExecutableQuery;

use super::db_jobs::{corpus, killed_rounds, one_line, seamcut, stderr};

pub(super) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

pub(super) fn table(dir: &Path, name: &str) -> Option<lancedb::Table> {
    rt().block_on(async {
        let db = lancedb::connect(dir.to_str().unwrap()).execute().await.unwrap();
        db.open_table(name).execute().await.ok()
    })
}

/// Every row as text (vectors by their floats' bits), sorted: equal dumps, equal tables.
pub(super) fn dump(dir: &Path, name: &str) -> Vec<String> {
    let Some(t) = table(dir, name) else { return Vec::new() };
    let batches: Vec<RecordBatch> =
        rt().block_on(async { t.query().execute().await.unwrap().try_collect().await.unwrap() });
    let mut rows = Vec::new();
    for b in &batches {
        let s =
            |c: &str| b.column_by_name(c).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
        let (id, doc, text, context, lang) = (s("id"), s("doc_id"), s("text"), s("context"), s("lang"));
        let i64s =
            |c: &str| b.column_by_name(c).unwrap().as_any().downcast_ref::<Int64Array>().unwrap().clone();
        let (index, tokens, start, end) = (i64s("index"), i64s("tokens"), i64s("start"), i64s("end"));
        let v = b.column_by_name("embedding").unwrap().as_any().downcast_ref::<FixedSizeListArray>().unwrap();
        for r in 0..b.num_rows() {
            let bits: Vec<u32> = vector(v, r).iter().map(|x| x.to_bits()).collect();
            rows.push(format!(
                "{} {} {} {} {} {:?} {} {:?} {:?} {bits:?}",
                id.value(r),
                doc.value(r),
                index.value(r),
                start.value(r),
                end.value(r),
                text.value(r),
                tokens.value(r),
                context.value(r),
                lang.is_valid(r).then(|| lang.value(r)),
            ));
        }
    }
    rows.sort();
    rows
}

fn vector(v: &FixedSizeListArray, r: usize) -> Vec<f32> {
    v.value(r).as_any().downcast_ref::<Float32Array>().unwrap().values().to_vec()
}

const JOB: [&str; 6] = ["--chunker", "maxmin", "--embeddings", "mean", "--meta-field", "lang"];

fn job(input: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["chunk", input.to_str().unwrap()];
    args.extend(JOB);
    args.extend(["-o", out.to_str().unwrap(), "-q"]);
    args.extend(extra);
    seamcut(&args)
}

#[test]
fn lancedb_reruns_replace_the_npy_and_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 40);
    let db = dir.path().join("db");
    let out = db.join("chunks.lance");
    let o = job(&input, &out, &["--hnsw"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = dump(&db, "chunks");
    assert!(first.len() > 40, "{}", first.len());
    let data = data_bytes(&out);
    assert!(job(&input, &out, &[]).status.success());
    assert_eq!(dump(&db, "chunks"), first, "a rerun changes nothing and adds nothing");
    assert_eq!(data_bytes(&out), data, "a rerun rewrites no row");
    // A row whose metadata changed is rewritten, and only those rows.
    let text = std::fs::read_to_string(&input).unwrap();
    let relabelled = text.replacen("\"lang\":\"en\"", "\"lang\":\"de\"", 1);
    assert_ne!(relabelled, text);
    let relabelled_input = dir.path().join("relabelled.jsonl");
    std::fs::write(&relabelled_input, relabelled).unwrap();
    assert!(job(&relabelled_input, &out, &[]).status.success());
    let now = dump(&db, "chunks");
    let changed = now.iter().filter(|r| !first.contains(r)).count();
    assert!(changed > 0 && now.iter().filter(|r| r.contains("\"de\"")).count() == changed, "{changed}");
    assert_eq!(now.len(), first.len());
    assert!(data_bytes(&out) > data && data_bytes(&out) < 2 * data, "only the changed rows are rewritten");
    assert!(job(&input, &out, &[]).status.success());
    assert_eq!(dump(&db, "chunks"), first, "and back");
    // The vector index was built after the load, and the table says what made its vectors.
    let t = table(&db, "chunks").unwrap();
    let indices = rt().block_on(t.list_indices()).unwrap();
    assert!(indices.iter().any(|i| i.columns == ["embedding"]), "{indices:?}");
    let schema = rt().block_on(t.schema()).unwrap();
    let record = &schema.metadata()["seamcut"];
    assert!(record.contains("\"dim\":240") && record.contains(r#"\"embeddings\":\"mean\""#), "{record}");
    // Vectors made another way (late chunking) do not go into it.
    let late = ["chunk", input.to_str().unwrap(), "--chunker", "maxmin", "--embeddings", "late"];
    let e = one_line(&seamcut(
        &[&late[..], &["--meta-field", "lang", "-q", "-o", out.to_str().unwrap()]].concat(),
    ));
    assert!(e.contains("made another way"), "{e}");
    assert_eq!(dump(&db, "chunks"), first, "nothing written");
    // The stored vectors are the ones `-o out.jsonl` writes to its .npy, chunk for chunk.
    let jsonl = dir.path().join("out.jsonl");
    assert!(job(&input, &jsonl, &[]).status.success());
    let (npy, rows, dim) = seamcut::npy::read_f32(&dir.path().join("out.npy")).unwrap();
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let batches: Vec<RecordBatch> =
        rt().block_on(async { t.query().execute().await.unwrap().try_collect().await.unwrap() });
    let mut stored = 0;
    for b in &batches {
        let id = b.column_by_name("id").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
        let doc = b.column_by_name("doc_id").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
        let index = b.column_by_name("index").unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
        let v = b.column_by_name("embedding").unwrap().as_any().downcast_ref::<FixedSizeListArray>().unwrap();
        for r in 0..b.num_rows() {
            // The file's records carry the table's ids.
            let k = records.iter().position(|x| x["id"] == id.value(r)).unwrap();
            assert_eq!(
                (&records[k]["doc_id"], &records[k]["index"]),
                (&doc.value(r).into(), &index.value(r).into())
            );
            assert_eq!(vector(v, r), &npy[k * dim..(k + 1) * dim], "{} {}", doc.value(r), index.value(r));
            stored += 1;
        }
    }
    assert_eq!(stored, rows);
    // --replace after an edit leaves exactly the new chunks: equal to a fresh load.
    let text = std::fs::read_to_string(&input).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[2] =
        serde_json::json!({"id": "doc-002", "text": "One new paragraph.\n\nAnother, shorter.", "lang": "en"})
            .to_string();
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let o = job(&input, &out, &["--replace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(job(&input, &db.join("fresh.lance"), &[]).status.success());
    let (replaced, fresh) = (dump(&db, "chunks"), dump(&db, "fresh"));
    assert_ne!(replaced, first);
    assert_eq!(replaced, fresh);
}

#[test]
fn lancedb_kill_9_then_resume_gives_the_uninterrupted_table() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 80);
    let db = dir.path().join("db");
    let small = ["--batch-bytes", "1500"];
    assert!(job(&input, &db.join("reference.lance"), &small).status.success());
    let out = db.join("killed.lance");
    let mut args = vec!["chunk", input.to_str().unwrap()];
    args.extend(JOB);
    args.extend(["-o", out.to_str().unwrap(), "-q"]);
    args.extend(small);
    let progress = || -> u64 {
        table(&db, "killed").map_or(0, |t| rt().block_on(t.count_rows(None)).unwrap_or(0) as u64)
    };
    let interrupted = killed_rounds(&args, 3, progress);
    assert!(interrupted >= 1, "no kill landed mid-job");
    // An interrupted run is not started over by accident.
    let e = one_line(&seamcut(&args));
    assert!(e.contains("interrupted run"), "{e}");
    let mut a = args.clone();
    a.push("--resume");
    let o = seamcut(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(dump(&db, "killed"), dump(&db, "reference"), "no duplicates, nothing missing");
}

#[test]
fn lancedb_faults_are_one_line_errors_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 3);
    let db = dir.path().join("db");
    // No vectors asked for.
    let out = db.join("t.lance");
    let e = one_line(&seamcut(&["chunk", input.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]));
    assert!(e.contains("--embeddings"), "{e}");
    // A table name LanceDB refuses: its own words.
    let e = one_line(&job(&input, &db.join("bad name!.lance"), &[]));
    assert!(e.contains("name"), "{e}");
    // A table of another schema, and one of another dimension: nothing written to either.
    rt().block_on(async {
        let c = lancedb::connect(db.to_str().unwrap()).execute().await.unwrap();
        let other = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("body", DataType::Utf8, true),
        ]);
        c.create_empty_table("other", other.into()).execute().await.unwrap();
    });
    let e = one_line(&job(&input, &db.join("other.lance"), &[]));
    assert!(e.contains("other columns"), "{e}");
    assert!(dump_count(&db, "other") == 0, "nothing written before the check");
    let dim3 = dir.path().join("dim3");
    // The same job's table written with 3-dimension vectors: a fresh job's table, then its
    // schema's vector width changed by writing another table of that shape.
    rt().block_on(async {
        let c = lancedb::connect(dim3.to_str().unwrap()).execute().await.unwrap();
        let item = std::sync::Arc::new(Field::new("item", DataType::Float32, false));
        let mut fields: Vec<Field> =
            ["id", "doc_id"].iter().map(|n| Field::new(*n, DataType::Utf8, false)).collect();
        fields.push(Field::new("index", DataType::Int64, false));
        fields.push(Field::new("start", DataType::Int64, false));
        fields.push(Field::new("end", DataType::Int64, false));
        fields.push(Field::new("text", DataType::Utf8, false));
        fields.push(Field::new("tokens", DataType::Int64, false));
        fields.push(Field::new("context", DataType::Utf8, false));
        fields.push(Field::new("lang", DataType::Utf8, true));
        fields.push(Field::new("embedding", DataType::FixedSizeList(item, 3), false));
        c.create_empty_table("chunks", Schema::new(fields).into()).execute().await.unwrap();
    });
    let e = one_line(&job(&input, &dim3.join("chunks.lance"), &[]));
    assert!(e.contains("3 dimensions"), "{e}");
    // A NUL in a document's text is stored as it is (Arrow's strings hold it); a metadata
    // field that is not a string is stored as its JSON text.
    let odd = dir.path().join("odd.jsonl");
    std::fs::write(
        &odd,
        "{\"id\": \"ok\", \"text\": \"Fine text here.\", \"lang\": 7}\n{\"id\": \"nul\", \"text\": \"Bad \\u0000 text.\", \"lang\": \"en\"}\n",
    )
    .unwrap();
    let o = job(&odd, &db.join("odd.lance"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = dump(&db, "odd");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().any(|r| r.contains("\"Bad \\0 text.\"")), "{rows:?}");
    assert!(rows.iter().any(|r| r.contains("Some(\"7\")")), "{rows:?}");
}

/// Bytes of a Lance table's data files: a rewritten row adds to them (until `optimize`).
fn data_bytes(table: &Path) -> u64 {
    std::fs::read_dir(table.join("data")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

fn dump_count(dir: &Path, name: &str) -> usize {
    table(dir, name).map_or(0, |t| rt().block_on(t.count_rows(None)).unwrap())
}

/// The progress records of the jobs writing a table, as its config keeps them
/// (`seamcut.job.*` keys): `{"totals": ..., "complete": ...}` each.
pub(super) fn job_records(dir: &Path, name: &str) -> Vec<serde_json::Value> {
    let Some(t) = table(dir, name) else { return Vec::new() };
    let Some(native) = t.as_native() else { return Vec::new() };
    let Ok(manifest) = rt().block_on(native.manifest()) else { return Vec::new() };
    manifest
        .config
        .iter()
        .filter(|(k, _)| k.starts_with("seamcut.job."))
        .filter_map(|(_, p)| serde_json::from_str::<serde_json::Value>(p).ok())
        .collect()
}

/// The table dropped, as LanceDB's clients drop it.
pub(super) fn drop_table(dir: &Path, name: &str) {
    rt().block_on(async {
        let db = lancedb::connect(dir.to_str().unwrap()).execute().await.unwrap();
        let _ = db.drop_table(name, &[]).await;
    });
}

/// Every row deleted, the table and its config kept.
pub(super) fn delete_rows(dir: &Path, name: &str) {
    let t = table(dir, name).unwrap();
    rt().block_on(t.delete("true")).unwrap();
    assert_eq!(dump_count(dir, name), 0);
}
