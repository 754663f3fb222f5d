//! Corpus jobs into a real PostgreSQL with pgvector (`-o postgresql://...?table=NAME`):
//! reruns, `--replace`, kill -9 and `--resume`, the stored vectors, and bad input and faults.
//! `tests/run.sh` starts the server (`tests/db/postgres.sh start`) and sets
//! `SEAMCUT_TEST_PG` to its URL; each test writes tables of its own.

use std::path::Path;
use std::process::{Command, Output};

use super::db_jobs::{corpus, one_line, seamcut, stderr};

pub(super) fn base_url() -> String {
    std::env::var("SEAMCUT_TEST_PG").unwrap_or_else(|_| {
        panic!(
            "SEAMCUT_TEST_PG is not set: start a server with `tests/db/postgres.sh start` and export its URL"
        )
    })
}

fn url(table: &str) -> String {
    format!("{}?table={table}", base_url())
}

pub(super) fn client() -> postgres::Client {
    postgres::Client::connect(&base_url(), postgres::NoTls).unwrap()
}

/// The table's rows, in document order, as text (vectors included).
fn dump(table: &str) -> Vec<String> {
    dump_at(&base_url(), table)
}

/// [`dump`] on the server at `base`.
pub(super) fn dump_at(base: &str, table: &str) -> Vec<String> {
    postgres::Client::connect(base, postgres::NoTls)
        .unwrap()
        .query(
            &format!(
                "SELECT id || ' ' || doc_id || ' ' || index || ' ' || start || ' ' || \"end\" || ' ' || tokens || ' ' || \
                 context || ' ' || text || ' ' || embedding::text FROM \"{table}\" ORDER BY doc_id, index"
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

pub(super) fn drop_table(table: &str) {
    client()
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS \"{table}\"; DELETE FROM seamcut_jobs WHERE tbl = '{table}'"
        ))
        .unwrap_or_else(|_| {
            // The progress table does not exist before the first job.
            client().batch_execute(&format!("DROP TABLE IF EXISTS \"{table}\"")).unwrap();
        });
}

const JOB: [&str; 6] = ["--chunker", "maxmin", "--embeddings", "mean", "--meta-field", "lang"];

fn job(input: &Path, table: &str, extra: &[&str]) -> Output {
    let u = url(table);
    let mut args = vec!["chunk", input.to_str().unwrap()];
    args.extend(JOB);
    args.extend(["-o", &u, "-q"]);
    args.extend(extra);
    seamcut(&args)
}

#[test]
fn the_same_job_twice_gives_the_same_table_and_the_vectors_of_the_npy() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 40);
    let table = "t_twice";
    drop_table(table);
    let o = job(&input, table, &["--hnsw"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = dump(table);
    assert!(first.len() > 40, "{}", first.len());
    // Each row's version (the transaction that wrote it): a rerun that rewrote a row gives it
    // a new one.
    let mut c = client();
    let versions = || -> Vec<(String, String)> {
        client()
            .query(&format!("SELECT id, xmin::text FROM \"{table}\" ORDER BY id"), &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    let before = versions();
    let o = job(&input, table, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(dump(table), first, "a rerun changes nothing and adds nothing");
    assert_eq!(versions(), before, "a rerun rewrites no row that is as the job has it");
    // A row changed behind the job's back (its vector, context and metadata) is put back by
    // the next run, and only that row is rewritten.
    let tampered: String = c.query_one(&format!("SELECT min(id) FROM \"{table}\""), &[]).unwrap().get(0);
    c.execute(
        &format!(
            "UPDATE \"{table}\" SET embedding = array_fill(0.5, ARRAY[240])::vector, context = 'x', lang = 'x' WHERE id = $1"
        ),
        &[&tampered],
    )
    .unwrap();
    let changed = versions();
    assert_ne!(dump(table), first);
    let o = job(&input, table, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(dump(table), first, "the rerun restores the changed row");
    let after = versions();
    let rewritten: Vec<&String> =
        after.iter().zip(&changed).filter(|(a, b)| a.1 != b.1).map(|(a, _)| &a.0).collect();
    assert_eq!(rewritten, vec![&tampered]);
    // The index was built after the load, and the table says what made its vectors.
    let hnsw: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%hnsw%'",
            &[&table],
        )
        .unwrap()
        .get(0);
    assert_eq!(hnsw, 1);
    let comment: String =
        c.query_one("SELECT obj_description($1::text::regclass, 'pg_class')", &[&table]).unwrap().get(0);
    assert!(comment.contains("\"model\"") && comment.contains("\"dim\":240"), "{comment}");
    assert!(comment.contains(r#"\"embeddings\":\"mean\""#), "{comment}");
    // Vectors made another way (late chunking) do not go into it.
    let u = url(table);
    let late = ["chunk", input.to_str().unwrap(), "--chunker", "maxmin", "--embeddings", "late"];
    let e = one_line(&seamcut(&[&late[..], &["--meta-field", "lang", "-q", "-o", &u]].concat()));
    assert!(e.contains("made another way"), "{e}");
    assert_eq!(dump(table), first, "nothing written");
    // The stored vectors are the ones `-o out.jsonl` writes to its .npy, chunk for chunk.
    let out = dir.path().join("out.jsonl");
    let mut args = vec!["chunk", input.to_str().unwrap()];
    args.extend(JOB);
    args.extend(["-o", out.to_str().unwrap(), "-q"]);
    assert!(seamcut(&args).status.success());
    let (npy, rows, dim) = seamcut::npy::read_f32(&dir.path().join("out.npy")).unwrap();
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), rows);
    let stored =
        c.query(&format!("SELECT id, doc_id, index, text, embedding FROM \"{table}\""), &[]).unwrap();
    assert_eq!(stored.len(), rows);
    for r in stored {
        let (id, doc, index, text): (String, String, i32, String) = (r.get(0), r.get(1), r.get(2), r.get(3));
        let v: pgvector::Vector = r.get(4);
        // The file's records carry the table's ids: a loader of its own upserts the same rows.
        let k = records.iter().position(|x| x["id"] == id).unwrap();
        assert_eq!((&records[k]["doc_id"], &records[k]["index"]), (&doc.as_str().into(), &index.into()));
        assert_eq!(records[k]["text"], text);
        assert_eq!(v.as_slice(), &npy[k * dim..(k + 1) * dim], "{doc} {index}");
    }
}

#[test]
fn replace_after_an_edit_leaves_exactly_the_new_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 12);
    let table = "t_replace";
    drop_table(table);
    assert!(job(&input, table, &[]).status.success());
    let before = dump(table);
    // Edit one document: its old chunks must go, the others' rows must stay as they are.
    let text = std::fs::read_to_string(&input).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = serde_json::json!({"id": "doc-003", "text": "A new first paragraph.\n\nAnd a new second one, much shorter.", "lang": "en"})
        .to_string();
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    // Without --replace the stale chunks stay beside the new ones.
    let plain = "t_replace_plain";
    drop_table(plain);
    let orig = dir.path().join("orig.jsonl");
    std::fs::write(&orig, text).unwrap();
    assert!(job(&orig, plain, &[]).status.success());
    assert!(job(&input, plain, &[]).status.success());
    let o = job(&input, table, &["--replace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let after = dump(table);
    let fresh = "t_replace_fresh";
    drop_table(fresh);
    assert!(job(&input, fresh, &[]).status.success());
    assert_eq!(after, dump(fresh), "the table equals a fresh load of the edited corpus");
    assert!(dump(plain).len() > after.len(), "without --replace the stale chunks stay");
    let others =
        |rows: &[String]| rows.iter().filter(|r| !r.contains(" doc-003 ")).cloned().collect::<Vec<_>>();
    assert_eq!(others(&before), others(&after));
}

/// The progress rows of the jobs writing `table` on the server at `base`, as
/// `{"totals": ..., "complete": ...}` each (none while it cannot be reached).
pub(super) fn job_records_at(base: &str, table: &str) -> Vec<serde_json::Value> {
    let Ok(mut c) = postgres::Client::connect(base, postgres::NoTls) else { return Vec::new() };
    let rows =
        c.query("SELECT totals, complete FROM seamcut_jobs WHERE tbl = $1", &[&table]).unwrap_or_default();
    rows.iter()
        .map(|r| {
            let (totals, complete): (String, bool) = (r.get(0), r.get(1));
            serde_json::json!({"totals": serde_json::from_str::<serde_json::Value>(&totals).unwrap(), "complete": complete})
        })
        .collect()
}

#[test]
fn bad_input_and_faults_are_one_line_errors_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 3);
    // No vectors asked for.
    let u = url("t_faults");
    let e = one_line(&seamcut(&["chunk", input.to_str().unwrap(), "-o", &u, "-q"]));
    assert!(e.contains("--embeddings"), "{e}");
    // A server that is not there.
    let down = "postgresql://seamcut@127.0.0.1:9/seamcut?table=t";
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
    assert!(e.contains("cannot connect") && e.contains("127.0.0.1:9"), "{e}");
    // A wrong password (and the password never shown).
    let port = base_url().rsplit(':').next().unwrap().split('/').next().unwrap().to_string();
    let wrong = format!("postgresql://seamcut_pw:nope@127.0.0.1:{port}/seamcut?table=t_pw");
    let e = one_line(&seamcut(&[
        "chunk",
        input.to_str().unwrap(),
        "--embeddings",
        "mean",
        "--chunker",
        "maxmin",
        "-o",
        &wrong,
    ]));
    assert!(e.contains("password authentication failed") && !e.contains("nope"), "{e}");
    // The password from the environment works.
    let right = format!("postgresql://seamcut_pw@127.0.0.1:{port}/seamcut?table=t_pw");
    drop_table("t_pw");
    let o = Command::new(env!("CARGO_BIN_EXE_seamcut"))
        .args([
            "chunk",
            input.to_str().unwrap(),
            "--embeddings",
            "mean",
            "--chunker",
            "maxmin",
            "-q",
            "-o",
            &right,
        ])
        .env("PGPASSWORD", "seamcut-test")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // A table name PostgreSQL would refuse, and a table of another dimension or schema.
    let e = one_line(&seamcut(&["chunk", "-", "--embeddings", "mean", "-o", &url("Bad-Name")]));
    assert!(e.contains("a table name is"), "{e}");
    let mut c = client();
    c.batch_execute(
        "DROP TABLE IF EXISTS t_dim; CREATE EXTENSION IF NOT EXISTS vector; \
         CREATE TABLE t_dim (id text PRIMARY KEY, doc_id text NOT NULL, index integer NOT NULL, start bigint NOT NULL, \
         \"end\" bigint NOT NULL, text text NOT NULL, tokens integer NOT NULL, context text NOT NULL, embedding vector(3) NOT NULL); \
         DROP TABLE IF EXISTS t_other; CREATE TABLE t_other (id serial, body text)",
    )
    .unwrap();
    let e = one_line(&job(&input, "t_dim", &[]));
    assert!(e.contains("other columns") || e.contains("dimensions"), "{e}");
    let e = one_line(&job(&input, "t_other", &[]));
    assert!(e.contains("other columns"), "{e}");
    let n: i64 = c.query_one("SELECT count(*) FROM t_other", &[]).unwrap().get(0);
    assert_eq!(n, 0, "nothing written before the check");
    // A NUL in a document's text: that document is skipped and counted, the others stored;
    // a metadata field that is not a string is stored as its JSON text.
    let odd = dir.path().join("odd.jsonl");
    std::fs::write(
        &odd,
        "{\"id\": \"ok\", \"text\": \"Fine text here.\", \"lang\": 7}\n{\"id\": \"nul\", \"text\": \"Bad \\u0000 text.\", \"lang\": \"en\"}\n",
    )
    .unwrap();
    drop_table("t_odd");
    let o = seamcut(&[
        "chunk",
        odd.to_str().unwrap(),
        "--chunker",
        "maxmin",
        "--embeddings",
        "mean",
        "--meta-field",
        "lang",
        "-o",
        &url("t_odd"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("skipped")
            && e.contains("nul")
            && e.contains("NUL character")
            && e.contains("1 unstorable"),
        "{e}"
    );
    let rows = c.query("SELECT doc_id, lang FROM t_odd", &[]).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].get::<_, String>(0), rows[0].get::<_, String>(1)),
        ("ok".to_string(), "7".to_string())
    );
    // A corpus that repeats a document: a fresh table's first load copies straight in, meets
    // the repeated chunk's id, and takes the upsert instead; each chunk is stored once.
    let dup = dir.path().join("dup.jsonl");
    let line = "{\"id\": \"same\", \"text\": \"Repeated text here.\\n\\nTwice over.\"}\n";
    std::fs::write(&dup, format!("{line}{line}{{\"id\": \"other\", \"text\": \"Another one.\"}}\n")).unwrap();
    drop_table("t_dup");
    let o = seamcut(&[
        "chunk",
        dup.to_str().unwrap(),
        "--chunker",
        "maxmin",
        "--embeddings",
        "mean",
        "-q",
        "-o",
        &url("t_dup"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let n: i64 = c.query_one("SELECT count(*) FROM t_dup", &[]).unwrap().get(0);
    let distinct: i64 = c.query_one("SELECT count(DISTINCT (doc_id, index)) FROM t_dup", &[]).unwrap().get(0);
    assert!(n >= 2 && n == distinct, "{n} rows, {distinct} distinct");
}
