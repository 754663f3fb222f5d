//! Chroma over its HTTP API (v2): `-o chroma+http://HOST:PORT/COLLECTION`.
//!
//! `chroma+https://` for TLS; `?tenant=NAME&database=NAME` (default: Chroma's
//! `default_tenant` and `default_database`); a token from `$CHROMA_API_KEY` (or the variable the
//! options name) is sent as `x-chroma-token`.
//!
//! Chroma has no transactions, so a batch is made safe to run twice instead: its rows are
//! upserted by id (in requests of at most the server's `max_batch_size` records and about
//! [`REQUEST_BYTES`]; a request the server answers 413 is split in two and sent again), then with
//! `replace` the batch's documents' other rows are deleted (after the new ones are in: a
//! reader never sees a document without chunks), and only then is the job's progress written
//! into the collection's metadata. A kill between the two leaves progress one batch behind,
//! and `--resume` runs that batch again, changing nothing. 429, 5xx and dropped connections
//! are retried with backoff.
//!
//! The collection is created when missing (cosine distance) with the model, the dimension and
//! how the vectors were made in its metadata; an existing one with another model, dimension or
//! vectors made another way is an error before the first write. Metadata values are strings, or integers for `index`, `start`, `end`,
//! `tokens`. Vectors go as base64 of their little-endian f32s where the server takes that (its
//! pre-flight check says `supports_base64_encoding`, as Chroma's own Python client asks),
//! else as JSON numbers; both are the job's floats exactly.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::{DbOptions, DbWriter, Progress, Rows};
use crate::output::Columns;
use crate::totals::Totals;
use crate::{Error, Result};

/// A collection on a Chroma server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChromaTarget {
    /// `http://HOST:PORT` or `https://...`, without a trailing slash.
    base: String,
    tenant: String,
    database: String,
    pub collection: String,
}

impl ChromaTarget {
    /// # Errors
    /// A URL without a collection.
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |m: &str| Error::Config(format!("{url}: {m}"));
        let rest =
            url.strip_prefix("chroma+").ok_or_else(|| bad("expected chroma+http://HOST:PORT/COLLECTION"))?;
        let (scheme, rest) =
            rest.split_once("://").ok_or_else(|| bad("expected chroma+http://HOST:PORT/COLLECTION"))?;
        if scheme != "http" && scheme != "https" {
            return Err(bad("expected chroma+http:// or chroma+https://"));
        }
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (host, collection) = path
            .split_once('/')
            .ok_or_else(|| bad("name the collection: chroma+http://HOST:PORT/COLLECTION"))?;
        let collection = collection.trim_end_matches('/');
        if collection.is_empty() || collection.contains('/') {
            return Err(bad("name the collection: chroma+http://HOST:PORT/COLLECTION"));
        }
        let (mut tenant, mut database) = ("default_tenant".to_string(), "default_database".to_string());
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            match kv.split_once('=') {
                Some(("tenant", v)) => tenant = v.to_string(),
                Some(("database", v)) => database = v.to_string(),
                _ => return Err(bad(&format!("unknown parameter {kv:?} (tenant, database)"))),
            }
        }
        Ok(Self { base: format!("{scheme}://{host}"), tenant, database, collection: collection.to_string() })
    }

    /// The URL as given, for messages (it holds no secret).
    #[must_use]
    pub fn shown(&self) -> String {
        format!("chroma+{}/{}", self.base, self.collection)
    }

    fn collections(&self) -> String {
        format!("{}/api/v2/tenants/{}/databases/{}/collections", self.base, self.tenant, self.database)
    }
}

/// A job's writer into a collection.
pub struct ChromaWriter {
    target: ChromaTarget,
    agent: ureq::Agent,
    token: Option<String>,
    columns: Columns,
    opts: DbOptions,
    /// The collection's id and its metadata as created or found.
    id: String,
    metadata: serde_json::Map<String, Value>,
    /// The metadata key of this job's progress.
    key: String,
    max_batch: usize,
    /// Vectors as base64 of their f32s (the server says it takes them).
    base64: bool,
}

/// The JSON an upsert request holds at most, about (Chroma 1.5's server refuses a body over
/// 40 MiB with 413 or a reset; its `max_batch_size` of 5,461 rows of 384-dimension vectors as
/// JSON numbers is 47 MB). Well under it, and large enough that a request's own cost is small.
pub const REQUEST_BYTES: usize = 8 << 20;

/// What a request got: an answer, or a failure worth retrying or not.
enum Failure {
    Transient(String),
    Final(String),
    /// 413: the body is larger than the server takes (the request can be split).
    TooLarge(String),
}

impl ChromaWriter {
    /// Reach the server, find or create the collection, check it, read the job's progress.
    ///
    /// # Errors
    /// The server cannot be reached (after retries), refuses the collection's name, or has the
    /// collection with another model or dimension; an interrupted run without `resume`.
    pub fn open(
        target: &ChromaTarget,
        columns: Columns,
        job: &str,
        opts: DbOptions,
    ) -> Result<(Self, Progress)> {
        let dim = super::dim(&columns)?;
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(120)).build();
        let token = std::env::var(opts.password_env.as_deref().unwrap_or("CHROMA_API_KEY"))
            .ok()
            .filter(|t| !t.is_empty());
        let key = format!("seamcut_job_{}", &crate::chunk::chunk_id(job, 0, 0, "")[..16]);
        let mut w = Self {
            target: target.clone(),
            agent,
            token,
            columns,
            opts,
            id: String::new(),
            metadata: serde_json::Map::new(),
            key,
            max_batch: 1000,
            base64: false,
        };
        let checks = w.call("GET", &format!("{}/api/v2/pre-flight-checks", w.target.base), None, 3)?;
        if let Some(n) = checks["max_batch_size"].as_u64().filter(|&n| n > 0) {
            w.max_batch = n as usize;
        }
        w.base64 = checks["supports_base64_encoding"].as_bool().unwrap_or(false);
        let body = json!({
            "name": w.target.collection,
            "get_or_create": true,
            "metadata": {
                "seamcut_model": w.opts.model,
                "seamcut_dim": dim,
                "seamcut_vectors": w.opts.vectors,
                "hnsw:space": "cosine",
            },
        });
        let c = w.call("POST", &w.target.collections(), Some(&body), 3)?;
        w.id = c["id"].as_str().unwrap_or_default().to_string();
        w.metadata = c["metadata"].as_object().cloned().unwrap_or_default();
        let shown = w.target.shown();
        let recorded = |k: &str| w.metadata.get(k).and_then(Value::as_str);
        if let Some(d) = w.metadata.get("seamcut_dim").and_then(Value::as_u64).filter(|&d| d as usize != dim)
        {
            return Err(Error::Config(format!(
                "{shown}: the collection's vectors have {d} dimensions, this job's {dim}; write another collection"
            )));
        }
        super::check_recorded(
            &shown,
            "collection",
            recorded("seamcut_model"),
            recorded("seamcut_vectors"),
            &w.opts,
        )?;
        let recorded = w.metadata.get(&w.key).and_then(Value::as_str).map(Progress::read_record);
        // Progress of some chunks in a collection whose records were all deleted since is not
        // its own.
        let empty = recorded.is_some()
            && w.call("GET", &w.records("count"), None, 3)?.as_u64().is_some_and(|n| n == 0);
        let recorded = Progress::unless_stale(recorded, &shown, "collection", "its metadata", empty, false);
        let progress = Progress::of_record(recorded, &w.opts, &shown, "collection", None)?;
        Ok((w, progress))
    }

    /// One request, retried `tries` times on a transient failure; the answer's JSON.
    fn call(&self, method: &str, url: &str, body: Option<&Value>, tries: u32) -> Result<Value> {
        self.retried(method, url, body, tries).map_err(|(f, attempts)| self.error(f, attempts))
    }

    /// A request's failure after `attempts` tries, as the job's error.
    fn error(&self, f: Failure, attempts: u32) -> Error {
        match f {
            Failure::Transient(m) => Error::Database(format!(
                "{}: {m} (after {}); {}",
                self.target.shown(),
                crate::wording::plural(u64::from(attempts), "try"),
                crate::db::kept_until_back("the batches written before it are kept")
            )),
            Failure::Final(m) | Failure::TooLarge(m) => {
                Error::Config(format!("{}: {m}", self.target.shown()))
            }
        }
    }

    /// [`Self::call`]'s failure as it came, with the tries it took.
    fn retried(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
        tries: u32,
    ) -> std::result::Result<Value, (Failure, u32)> {
        let mut wait = Duration::from_millis(250);
        let mut attempt = 1;
        loop {
            match self.once(method, url, body) {
                Ok(v) => return Ok(v),
                Err(Failure::Transient(_)) if attempt < tries => {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(8));
                    attempt += 1;
                }
                Err(f) => return Err((f, attempt)),
            }
        }
    }

    fn once(&self, method: &str, url: &str, body: Option<&Value>) -> std::result::Result<Value, Failure> {
        let mut r = self.agent.request(method, url).set("Content-Type", "application/json");
        if let Some(t) = &self.token {
            r = r.set("x-chroma-token", t);
        }
        let res = match body {
            Some(b) => r.send_string(&b.to_string()),
            None => r.call(),
        };
        match res {
            Ok(resp) => {
                let text =
                    resp.into_string().map_err(|e| Failure::Transient(format!("reading the answer: {e}")))?;
                Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
            }
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                let m = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v["message"].as_str().or(v["error"].as_str()).map(str::to_string))
                    .unwrap_or(text);
                let m = format!("HTTP {code}: {}", m.replace(['\n', '\r'], " "));
                match code {
                    413 => Err(Failure::TooLarge(m)),
                    429 | 500.. => Err(Failure::Transient(m)),
                    _ => Err(Failure::Final(m)),
                }
            }
            Err(e) => Err(Failure::Transient(format!("cannot reach the server: {e}"))),
        }
    }

    fn records(&self, url: &str) -> String {
        format!("{}/{}/{url}", self.target.collections(), self.id)
    }

    /// Write the job's progress into the collection's metadata. Chroma replaces a collection's
    /// metadata whole and has no compare-and-set, so the metadata is read again just before
    /// (other jobs, such as the other shards of this one, keep their keys): only two writers'
    /// progress within the same few milliseconds can lose one of them, and a lost progress only
    /// makes that job's `--resume` write its batches again, which changes nothing.
    fn progress(&self, totals: &Totals, complete: bool) -> Result<()> {
        let p = Progress::record(totals, complete);
        // Chroma reads a collection by its name and writes it by its id.
        let named = format!("{}/{}", self.target.collections(), self.target.collection);
        let now = self.call("GET", &named, None, 6)?;
        let ours = now["id"].as_str() == Some(self.id.as_str());
        let mut metadata = match now["metadata"].as_object() {
            Some(m) if ours => m.clone(),
            // Deleted and made again under us: the write below by id says so.
            _ => self.metadata.clone(),
        };
        let url = format!("{}/{}", self.target.collections(), self.id);
        metadata.insert(self.key.clone(), Value::String(p));
        self.call("PUT", &url, Some(&json!({"new_metadata": metadata})), 6).map(|_| ())
    }

    /// A row's metadata as the collection stores it (a null metadata value is left out).
    fn metadata_of(&self, r: &super::Row) -> Value {
        let mut m = json!({
            "doc_id": r.doc_id, "index": r.index, "start": r.start, "end": r.end,
            "tokens": r.tokens, "context": r.context,
        });
        for (f, v) in self.columns.meta_fields.iter().zip(&r.meta) {
            if let Some(v) = v {
                m[f] = Value::String(v.clone());
            }
        }
        m
    }

    /// The rows the collection holds of `docs`: each id with its metadata.
    fn held(&self, docs: &[String]) -> Result<HashMap<String, Value>> {
        let body = json!({"where": {"doc_id": {"$in": docs}}, "include": ["metadatas"]});
        let found = self.call("POST", &self.records("get"), Some(&body), 6)?;
        let ids = found["ids"].as_array().map(Vec::as_slice).unwrap_or_default();
        let metadatas = found["metadatas"].as_array().map(Vec::as_slice).unwrap_or_default();
        Ok(ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                Some((id.as_str()?.to_string(), metadatas.get(i).cloned().unwrap_or_default()))
            })
            .collect())
    }

    /// Upsert `part`; a request the server finds too large (413) is split in two.
    fn upsert(&self, part: &[&super::Row]) -> Result<()> {
        let metadatas: Vec<Value> = part.iter().map(|r| self.metadata_of(r)).collect();
        let embeddings: Vec<Value> = part
            .iter()
            .map(|r| if self.base64 { Value::String(packed(&r.embedding)) } else { json!(r.embedding) })
            .collect();
        let body = json!({
            "ids": part.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            "embeddings": embeddings,
            "documents": part.iter().map(|r| r.text.as_str()).collect::<Vec<_>>(),
            "metadatas": metadatas,
        });
        let url = self.records("upsert");
        match self.retried("POST", &url, Some(&body), 6) {
            Err((Failure::TooLarge(_), _)) if part.len() > 1 => {
                let (a, b) = part.split_at(part.len() / 2);
                self.upsert(a)?;
                self.upsert(b)
            }
            Ok(_) => Ok(()),
            Err((f, attempts)) => Err(self.error(f, attempts)),
        }
    }
}

/// How many of `rows`' first rows go in one request: at least one, at most `max_batch` (the
/// server's `max_batch_size`), and about [`REQUEST_BYTES`] of JSON.
fn request_rows(rows: &[&super::Row], max_batch: usize, base64: bool) -> usize {
    // A float as base64 of 4 bytes, or as a JSON number: serde_json writes the f32 widened to
    // f64 (`-0.012345677614212036,`; up to 24 bytes with an exponent).
    let per_float = if base64 { 6 } else { 24 };
    let mut bytes = 0;
    let mut n = 0;
    for r in rows.iter().take(max_batch.max(1)) {
        // Text, context and metadata with some escaping, the vector, the keys and the id.
        let meta: usize = r.meta.iter().flatten().map(String::len).sum();
        bytes += (r.text.len() + r.context.len() + meta) * 11 / 10 + r.embedding.len() * per_float + 200;
        if n > 0 && bytes > REQUEST_BYTES {
            break;
        }
        n += 1;
    }
    n
}

/// A vector as Chroma's base64 form: its f32s, little-endian.
fn packed(v: &[f32]) -> String {
    use base64::Engine;
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl DbWriter for ChromaWriter {
    fn commit(&mut self, rows: &Rows, totals: &Totals) -> Result<()> {
        // What the collection holds of the batch's documents, read first: a row it holds as
        // this batch would write it is not sent again (the id fixes the text, and the
        // collection's record how the vector is made), so a rerun upserts nothing; with
        // replace, the documents' other rows are stale.
        let held = if rows.docs.is_empty() { HashMap::new() } else { self.held(&rows.docs)? };
        // One record per id: Chroma refuses a request with an id twice.
        let unique: Vec<&super::Row> = rows
            .unique()
            .into_iter()
            .filter(|r| held.get(&r.id).is_none_or(|m| *m != self.metadata_of(r)))
            .collect();
        let mut rest = &unique[..];
        while !rest.is_empty() {
            let n = request_rows(rest, self.max_batch, self.base64);
            self.upsert(&rest[..n])?;
            rest = &rest[n..];
        }
        if self.opts.replace {
            let new: std::collections::HashSet<&str> = rows.rows.iter().map(|r| r.id.as_str()).collect();
            let stale: Vec<&str> = held.keys().map(String::as_str).filter(|id| !new.contains(id)).collect();
            for part in stale.chunks(self.max_batch.max(1)) {
                self.call("POST", &self.records("delete"), Some(&json!({"ids": part})), 6)?;
            }
        }
        self.progress(totals, false)
    }

    fn finish(&mut self, totals: &Totals) -> Result<()> {
        self.progress(totals, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(text_bytes: usize, dim: usize) -> super::super::Row {
        super::super::Row {
            id: "0".repeat(32),
            doc_id: "d".into(),
            index: 0,
            start: 0,
            end: text_bytes as i64,
            text: "x".repeat(text_bytes),
            tokens: 1,
            context: "d".into(),
            meta: vec![Some("m".into())],
            embedding: vec![-0.012_345_678; dim],
        }
    }

    #[test]
    fn requests_are_bounded_by_rows_and_by_bytes() {
        // 5,461 rows of 384 dimensions as JSON numbers were 47 MB, over Chroma's 40 MiB.
        let rows: Vec<_> = (0..5461).map(|_| row(800, 384)).collect();
        let refs: Vec<&_> = rows.iter().collect();
        for base64 in [false, true] {
            let mut rest = &refs[..];
            let mut sizes = Vec::new();
            while !rest.is_empty() {
                let n = request_rows(rest, 5461, base64);
                let part: Vec<&str> = rest[..n].iter().map(|r| r.text.as_str()).collect();
                let embeddings: Vec<Value> = rest[..n]
                    .iter()
                    .map(|r| if base64 { Value::String(packed(&r.embedding)) } else { json!(r.embedding) })
                    .collect();
                let body = json!({"documents": part, "embeddings": embeddings}).to_string();
                assert!(body.len() <= REQUEST_BYTES, "{base64}: {n} rows, {} bytes", body.len());
                sizes.push(n);
                rest = &rest[n..];
            }
            assert_eq!(sizes.iter().sum::<usize>(), 5461);
            // Full requests, not one row each.
            assert!(sizes[0] > 500, "{base64}: {sizes:?}");
        }
        // The server's row limit, and at least one row however large.
        assert_eq!(request_rows(&refs[..10], 3, true), 3);
        let huge = row(REQUEST_BYTES * 2, 8);
        assert_eq!(request_rows(&[&huge, &huge], 5461, true), 1);
        // base64 is the f32s' little-endian bytes.
        assert_eq!(packed(&[1.0, -2.5]), "AACAPwAAIMA=");
    }

    /// Each upsert the server took: its body's bytes and its ids.
    type Taken = std::sync::Arc<std::sync::Mutex<Vec<(usize, Vec<String>)>>>;

    /// A server that answers 413 to a body over `limit` bytes and records the ids of the
    /// upserts it takes (one request per connection).
    fn strict_server(limit: usize) -> (String, Taken) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("chroma+http://{}/c", listener.local_addr().unwrap());
        let taken = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = taken.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let answer = if length > limit {
                    "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    let ids = v["ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|i| i.as_str().unwrap().to_string())
                        .collect();
                    log.lock().unwrap().push((length, ids));
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                };
                stream.write_all(answer.as_bytes()).unwrap();
            }
        });
        (url, taken)
    }

    #[test]
    fn a_request_answered_413_is_split_until_it_fits_and_loses_no_row() {
        let limit = 6_000;
        let (url, taken) = strict_server(limit);
        let w = ChromaWriter {
            target: ChromaTarget::parse(&url).unwrap(),
            agent: ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build(),
            token: None,
            columns: Columns { meta_fields: vec!["lang".into()], dim: Some(16), windows: false },
            opts: DbOptions::default(),
            id: "c-id".into(),
            metadata: serde_json::Map::new(),
            key: "k".into(),
            max_batch: 1000,
            base64: true,
        };
        let rows: Vec<_> =
            (0..40).map(|i| super::super::Row { id: format!("{i:032}"), ..row(300, 16) }).collect();
        let refs: Vec<&_> = rows.iter().collect();
        w.upsert(&refs).unwrap();
        let taken = taken.lock().unwrap();
        assert!(taken.len() > 2, "split: {} requests", taken.len());
        assert!(taken.iter().all(|(n, _)| *n <= limit));
        let ids: Vec<&String> = taken.iter().flat_map(|(_, ids)| ids).collect();
        let want: Vec<&String> = rows.iter().map(|r| &r.id).collect();
        assert_eq!(ids, want, "every row once, in order");
        // A single row over the limit cannot be split: one line naming the server's answer.
        let big = [&row(limit * 2, 16)];
        let e = w.upsert(&big).unwrap_err().to_string();
        assert!(e.contains("HTTP 413") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn urls_name_the_server_and_the_collection() {
        let t = ChromaTarget::parse("chroma+http://127.0.0.1:8000/docs?tenant=t1&database=d1").unwrap();
        assert_eq!(t.collections(), "http://127.0.0.1:8000/api/v2/tenants/t1/databases/d1/collections");
        assert_eq!(t.collection, "docs");
        assert_eq!(t.shown(), "chroma+http://127.0.0.1:8000/docs");
        let d = ChromaTarget::parse("chroma+https://chroma.example/docs").unwrap();
        assert!(d
            .collections()
            .starts_with("https://chroma.example/api/v2/tenants/default_tenant/databases/default_database/"));
        for bad in ["chroma+http://h:1", "chroma+http://h:1/", "chroma+ftp://h/c", "chroma+http://h/c?x=1"] {
            assert!(ChromaTarget::parse(bad).is_err(), "{bad}");
        }
    }
}
