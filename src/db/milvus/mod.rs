//! Milvus over its gRPC API: `-o milvus://HOST:PORT/COLLECTION`.
//!
//! `?db=NAME` picks a Milvus database (default `default`); a token from `$MILVUS_TOKEN` (or the
//! variable `--password-env` names: `user:password` or an API key) is sent as Milvus's
//! `authorization` header, as pymilvus sends it. `milvus+http://` is the same as `milvus://`.
//!
//! Why gRPC: it is the API every Milvus speaks (standalone, distributed, Zilliz Cloud and
//! milvus-lite, which has no REST API), the one Milvus's own SDKs use, and tonic speaks it
//! well. The messages are the part of Milvus's published protos this writer uses, generated
//! once (`scripts/milvus-protos`: `milvus.proto`, then `proto.rs`).
//!
//! Milvus has no transactions across requests, so a batch is made safe to run twice, as for
//! Chroma: the rows the collection holds of the batch's documents are read first, and a row
//! held as this batch would write it is not sent again (a rerun upserts nothing); the others
//! are upserted by id; with `replace`, the batch's documents' rows that it did not write are
//! deleted (after the new ones are in: a reader never sees a document without chunks); then
//! the job's progress is written into the collection's properties (`seamcut.job.*`, one key a
//! job, so shards of a job never overwrite each other's). A kill between the two leaves
//! progress one batch behind, and `--resume` runs that batch again, changing nothing. A
//! dropped collection takes its progress with it, and one whose rows were all deleted is not
//! taken for done. Unavailable servers and errors Milvus marks retriable are retried with
//! backoff.
//!
//! The collection is created when missing: the chunk's fields (text as `VARCHAR` of at most
//! [`VARCHAR_BYTES`]; a document with a longer chunk or metadata value is skipped and
//! reported), the metadata fields (nullable), and the vector (`FLOAT_VECTOR`), with the model,
//! the dimension and how the vectors were made in its properties; an existing one with other
//! fields, another dimension or another model is an error before the first write. Its vector
//! index is Milvus's `AUTOINDEX` (cosine), or `HNSW` with `--hnsw` (an existing index of
//! another type is rebuilt after the load); the collection is loaded, as Milvus's queries need.

// Generated code, as tonic-prost-build writes it.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
mod proto;

use std::time::Duration;

use proto::milvus_service_client::MilvusServiceClient;
use proto::{field_data, scalar_field, vector_field, DataType, FieldData, KeyValuePair};

use super::{DbOptions, DbWriter, Progress, Rows};
use crate::output::{Columns, FieldKind};
use crate::totals::Totals;
use crate::{Error, Result};

/// The longest text a `VARCHAR` field holds (Milvus's `max_length` limit), in bytes.
pub const VARCHAR_BYTES: usize = 65_535;

/// The bytes of rows one upsert request holds, about: well under the 64 MiB a Milvus server
/// takes by default, and large enough that a request's own cost is small.
const REQUEST_BYTES: usize = 8 << 20;

/// The most rows a query returns (Milvus's default `maxQueryResultWindow`).
const QUERY_LIMIT: usize = 16_384;

/// A collection on a Milvus server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MilvusTarget {
    /// `HOST:PORT`.
    host: String,
    /// The Milvus database.
    db: String,
    pub collection: String,
}

impl MilvusTarget {
    /// # Errors
    /// A URL without a collection, or one that asks for TLS.
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |m: &str| Error::Config(format!("{url}: {m}"));
        let (scheme, rest) =
            url.split_once("://").ok_or_else(|| bad("expected milvus://HOST:PORT/COLLECTION"))?;
        match scheme.to_ascii_lowercase().as_str() {
            "milvus" | "milvus+http" => {}
            "milvus+https" => {
                return Err(bad(
                    "Milvus over TLS is not in this build yet: reach the server through a TLS proxy, or use milvus://",
                ))
            }
            _ => return Err(bad("expected milvus://HOST:PORT/COLLECTION")),
        }
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (host, collection) =
            path.split_once('/').ok_or_else(|| bad("name the collection: milvus://HOST:PORT/COLLECTION"))?;
        let collection = collection.trim_end_matches('/');
        if host.is_empty() || collection.is_empty() || collection.contains('/') {
            return Err(bad("name the collection: milvus://HOST:PORT/COLLECTION"));
        }
        // Milvus's rule for a collection's name, checked here so that every server refuses
        // the same names in the same words (milvus-lite takes names Milvus refuses).
        let mut chars = collection.chars();
        let named = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && collection.len() <= 255;
        if !named {
            return Err(bad(&format!(
                "{collection:?} is not a name Milvus takes for a collection: a letter or _, then letters, digits or _ (at most 255)"
            )));
        }
        let host = if host.contains(':') { host.to_string() } else { format!("{host}:19530") };
        let mut db = "default".to_string();
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            match kv.split_once('=') {
                Some(("db", v)) if !v.is_empty() => db = v.to_string(),
                _ => return Err(bad(&format!("unknown parameter {kv:?} (db)"))),
            }
        }
        Ok(Self { host, db, collection: collection.to_string() })
    }

    /// The URL as given, for messages (it holds no secret).
    #[must_use]
    pub fn shown(&self) -> String {
        let db = if self.db == "default" { String::new() } else { format!("?db={}", self.db) };
        format!("milvus://{}/{}{db}", self.host, self.collection)
    }
}

/// Why `doc`'s chunks cannot be stored as they are, if they cannot: a text, a context, a
/// document id or a metadata value longer than a `VARCHAR` holds.
#[must_use]
pub fn rejects(doc: &crate::corpus::Document, chunks: &[crate::chunk::ChunkSpan]) -> Option<String> {
    let long = |what: &str, n: usize| {
        let cap = if what == "a chunk" { ": cap the chunks (--max-tokens)" } else { "" };
        Some(format!(
            "{what} of {n} bytes is longer than a Milvus VARCHAR holds ({VARCHAR_BYTES} bytes){cap}"
        ))
    };
    if doc.id.len() > VARCHAR_BYTES {
        return long("its id", doc.id.len());
    }
    if let Some(c) = chunks.iter().find(|c| c.end - c.start > VARCHAR_BYTES) {
        return long("a chunk", c.end - c.start);
    }
    if let Some(c) = crate::output::contexts(doc, chunks).into_iter().find(|c| c.len() > VARCHAR_BYTES) {
        return long("a chunk's context", c.len());
    }
    let meta = crate::output::meta_strings(doc);
    meta.into_iter()
        .flatten()
        .find(|m| m.len() > VARCHAR_BYTES)
        .and_then(|m| long("a metadata value", m.len()))
}

/// What every request carries: the database, and the token where there is one.
#[derive(Clone)]
struct Headers {
    db: tonic::metadata::MetadataValue<tonic::metadata::Ascii>,
    authorization: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
}

impl tonic::service::Interceptor for Headers {
    fn call(
        &mut self,
        mut req: tonic::Request<()>,
    ) -> std::result::Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("dbname", self.db.clone());
        if let Some(a) = &self.authorization {
            req.metadata_mut().insert("authorization", a.clone());
        }
        Ok(req)
    }
}

type Client = MilvusServiceClient<tonic::codegen::InterceptedService<tonic::transport::Channel, Headers>>;

/// A reply's Milvus status (every reply has one, or is one).
trait Reply {
    fn status(&self) -> Option<&proto::Status>;
}

macro_rules! replies {
    ($($t:ty),*) => {$(
        impl Reply for $t {
            fn status(&self) -> Option<&proto::Status> {
                self.status.as_ref()
            }
        }
    )*};
}
replies!(
    proto::DescribeCollectionResponse,
    proto::BoolResponse,
    proto::MutationResult,
    proto::QueryResults,
    proto::DescribeIndexResponse,
    proto::GetLoadStateResponse
);

impl Reply for proto::Status {
    fn status(&self) -> Option<&proto::Status> {
        Some(self)
    }
}

/// What a request got: a failure worth retrying or not.
enum Failure {
    Transient(String),
    Final(String),
    /// The request is larger than the server takes (it can be split).
    TooLarge(String),
    /// The collection is not loaded (Milvus's code 101): a server restarted since the job
    /// loaded it may have released it.
    NotLoaded(String),
}

/// Milvus's status code for a collection that is not loaded.
const NOT_LOADED: i32 = 101;

/// A job's writer into a collection.
pub struct MilvusWriter {
    /// tonic is async: its calls run on a runtime of the writer's own.
    rt: tokio::runtime::Runtime,
    client: Client,
    target: MilvusTarget,
    columns: Columns,
    opts: DbOptions,
    /// The property key of this job's progress.
    key: String,
}

/// The property keys that record what made a collection.
const MODEL: &str = "seamcut.model";
const DIM: &str = "seamcut.dim";
const VECTORS: &str = "seamcut.vectors";

impl MilvusWriter {
    /// Reach the server, find or create the collection, check it, load it, read the job's
    /// progress.
    ///
    /// # Errors
    /// The server cannot be reached (after retries) or refuses the collection's name; a
    /// collection with other fields, another dimension or another model; an interrupted run
    /// without `resume`.
    pub fn open(
        target: &MilvusTarget,
        columns: Columns,
        job: &str,
        opts: DbOptions,
    ) -> Result<(Self, Progress)> {
        let dim = super::dim(&columns)?;
        let shown = target.shown();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Internal(format!("cannot start Milvus's client runtime: {e}")))?;
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", target.host))
            .map_err(|e| Error::Config(format!("{shown}: {e}")))?
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300));
        // Connected at the first request, so that an unreachable server is retried as any
        // failed request is.
        let channel = {
            let _in = rt.enter();
            endpoint.connect_lazy()
        };
        let ascii = |v: String, what: &str| {
            v.parse().map_err(|_| Error::Config(format!("{shown}: the {what} is not ASCII")))
        };
        let token = std::env::var(opts.password_env.as_deref().unwrap_or("MILVUS_TOKEN"))
            .ok()
            .filter(|t| !t.is_empty());
        let authorization = match token {
            Some(t) => {
                use base64::Engine;
                Some(ascii(base64::engine::general_purpose::STANDARD.encode(t), "token")?)
            }
            None => None,
        };
        let headers = Headers { db: ascii(target.db.clone(), "database's name")?, authorization };
        let client = MilvusServiceClient::with_interceptor(channel, headers)
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20);
        let key = format!("seamcut.job.{}", &crate::chunk::chunk_id(job, 0, 0, "")[..16]);
        let w = Self { rt, client, target: target.clone(), columns, opts, key };
        w.create(dim)?;
        let found = w.describe()?;
        w.check(&found, dim)?;
        w.load()?;
        let recorded = property(&found.properties, &w.key).map(Progress::read_record);
        // Progress of some chunks in a collection whose rows were all deleted since is not
        // its own.
        let empty = recorded.is_some() && w.count()? == 0;
        let recorded = Progress::unless_stale(recorded, &shown, "collection", "its properties", empty, false);
        let afresh = format!("removing its property {} from the collection", w.key);
        let progress = Progress::of_record(recorded, &w.opts, &shown, "collection", Some(&afresh))?;
        Ok((w, progress))
    }

    /// One request, retried `tries` times on a transient failure.
    fn call<R, F, Fut>(&self, what: &str, tries: u32, f: F) -> Result<R>
    where
        R: Reply,
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<tonic::Response<R>, tonic::Status>>,
    {
        match self.retried(what, tries, &f) {
            // Loaded again, and the request tried again.
            Err((Failure::NotLoaded(_), _)) => {
                self.load()?;
                self.retried(what, tries, &f)
            }
            r => r,
        }
        .map_err(|(failure, attempts)| self.error(failure, attempts))
    }

    /// [`Self::call`]'s failure as it came, with the tries it took.
    fn retried<R, F, Fut>(&self, what: &str, tries: u32, f: F) -> std::result::Result<R, (Failure, u32)>
    where
        R: Reply,
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<tonic::Response<R>, tonic::Status>>,
    {
        let mut wait = Duration::from_millis(250);
        let mut attempt = 1;
        loop {
            let got = self.rt.block_on(f(self.client.clone()));
            let failure = match got {
                Ok(r) => {
                    let r = r.into_inner();
                    match r.status().filter(|s| s.code != 0 || s.error_code != 0) {
                        None => return Ok(r),
                        Some(s) => {
                            let m = format!("{what}: {}", one_line(&s.reason));
                            if s.code == NOT_LOADED {
                                Failure::NotLoaded(m)
                            } else if s.retriable {
                                Failure::Transient(m)
                            } else {
                                Failure::Final(m)
                            }
                        }
                    }
                }
                Err(s) => {
                    let m = format!("{what}: {}", one_line(s.message()));
                    match s.code() {
                        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Aborted => {
                            Failure::Transient(m)
                        }
                        tonic::Code::ResourceExhausted | tonic::Code::OutOfRange => Failure::TooLarge(m),
                        // A dropped connection reads as Unknown with the transport's words.
                        tonic::Code::Unknown if s.message().contains("transport") => Failure::Transient(m),
                        _ => Failure::Final(m),
                    }
                }
            };
            match failure {
                Failure::Transient(_) if attempt < tries => {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(8));
                    attempt += 1;
                }
                f => return Err((f, attempt)),
            }
        }
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
            Failure::Final(m) | Failure::TooLarge(m) | Failure::NotLoaded(m) => {
                Error::Config(format!("{}: {m}", self.target.shown()))
            }
        }
    }

    fn name(&self) -> String {
        self.target.collection.clone()
    }

    /// Create the collection where it is missing, with its vector index.
    fn create(&self, dim: usize) -> Result<()> {
        let has = self.call("HasCollection", 6, |mut c| {
            let collection_name = self.name();
            async move {
                c.has_collection(proto::HasCollectionRequest { collection_name, ..Default::default() }).await
            }
        })?;
        if has.value {
            return Ok(());
        }
        let schema = prost::Message::encode_to_vec(&self.schema(dim));
        let properties = vec![
            pair(MODEL, &self.opts.model),
            pair(DIM, &dim.to_string()),
            pair(VECTORS, &self.opts.vectors),
        ];
        let created = self.call("CreateCollection", 6, |mut c| {
            let req = proto::CreateCollectionRequest {
                collection_name: self.name(),
                schema: schema.clone(),
                shards_num: 1,
                consistency_level: proto::ConsistencyLevel::Strong as i32,
                properties: properties.clone(),
                ..Default::default()
            };
            async move { c.create_collection(req).await }
        });
        if let Err(e) = created {
            // Another shard of the job may have created it first, and be finishing it (on
            // milvus-lite the collection's folder exists a while before the collection).
            for _ in 0..20 {
                let has = self.call("HasCollection", 6, |mut c| {
                    let collection_name = self.name();
                    async move {
                        c.has_collection(proto::HasCollectionRequest {
                            collection_name,
                            ..Default::default()
                        })
                        .await
                    }
                })?;
                if has.value {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            return Err(e);
        }
        Ok(())
    }

    /// The collection's fields: the chunk row's, the metadata fields, the vector.
    fn schema(&self, dim: usize) -> proto::CollectionSchema {
        let varchar = |name: &str, primary: bool, nullable: bool| proto::FieldSchema {
            name: name.to_string(),
            is_primary_key: primary,
            data_type: DataType::VarChar as i32,
            type_params: vec![pair("max_length", &VARCHAR_BYTES.to_string())],
            nullable,
            ..Default::default()
        };
        let mut fields: Vec<proto::FieldSchema> = crate::output::db_fields()
            .map(|f| match f.kind {
                FieldKind::Text => varchar(f.name, f.name == "id", false),
                FieldKind::Count | FieldKind::Offset => proto::FieldSchema {
                    name: f.name.to_string(),
                    data_type: DataType::Int64 as i32,
                    ..Default::default()
                },
            })
            .collect();
        fields.extend(self.columns.meta_fields.iter().map(|f| varchar(f, false, true)));
        fields.push(proto::FieldSchema {
            name: "embedding".into(),
            data_type: DataType::FloatVector as i32,
            type_params: vec![pair("dim", &dim.to_string())],
            ..Default::default()
        });
        proto::CollectionSchema { name: self.name(), fields, ..Default::default() }
    }

    fn describe(&self) -> Result<proto::DescribeCollectionResponse> {
        self.call("DescribeCollection", 6, |mut c| {
            let collection_name = self.name();
            async move {
                c.describe_collection(proto::DescribeCollectionRequest {
                    collection_name,
                    ..Default::default()
                })
                .await
            }
        })
    }

    /// The collection's fields and record against this job's.
    fn check(&self, found: &proto::DescribeCollectionResponse, dim: usize) -> Result<()> {
        let shown = self.target.shown();
        let ours = self.schema(dim).fields;
        let theirs = found.schema.as_ref().map(|s| s.fields.clone()).unwrap_or_default();
        let list = |fields: &[proto::FieldSchema]| {
            fields
                .iter()
                .map(|f| {
                    let ty = DataType::try_from(f.data_type)
                        .map_or_else(|_| f.data_type.to_string(), |t| format!("{t:?}"));
                    format!("{} {ty}", f.name)
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let same = theirs.len() == ours.len()
            && ours.iter().all(|f| theirs.iter().any(|t| t.name == f.name && t.data_type == f.data_type));
        if !same {
            return Err(Error::Config(format!(
                "{shown}: the collection exists with other fields ({}) than this job writes ({}); write another collection",
                list(&theirs),
                list(&ours)
            )));
        }
        let their_dim = theirs
            .iter()
            .find(|f| f.name == "embedding")
            .and_then(|f| property(&f.type_params, "dim"))
            .and_then(|d| d.parse::<usize>().ok());
        if let Some(d) = their_dim.filter(|&d| d != dim) {
            return Err(Error::Config(format!(
                "{shown}: the collection's vectors have {d} dimensions, this job's {dim}; write another collection"
            )));
        }
        super::check_recorded(
            &shown,
            "collection",
            property(&found.properties, MODEL),
            property(&found.properties, VECTORS),
            &self.opts,
        )
    }

    /// The vector index's type, if the collection has one.
    fn index_type(&self) -> Result<Option<String>> {
        let found = self.retried("DescribeIndex", 6, |mut c| {
            let req = proto::DescribeIndexRequest {
                collection_name: self.name(),
                field_name: "embedding".into(),
                ..Default::default()
            };
            async move { c.describe_index(req).await }
        });
        match found {
            Ok(r) => Ok(r
                .index_descriptions
                .iter()
                .find(|d| d.field_name == "embedding")
                .map(|d| property(&d.params, "index_type").unwrap_or_default().to_string())),
            // Milvus answers "index not found" as an error.
            Err((Failure::Final(_), _)) => Ok(None),
            Err((f, attempts)) => Err(self.error(f, attempts)),
        }
    }

    /// Build the vector index (`HNSW` with `--hnsw`, else Milvus's `AUTOINDEX`; cosine).
    fn create_index(&self) -> Result<()> {
        let kind = if self.opts.index { "HNSW" } else { "AUTOINDEX" };
        let mut params = vec![pair("index_type", kind), pair("metric_type", "COSINE")];
        if self.opts.index {
            params.push(pair("params", r#"{"M": 16, "efConstruction": 200}"#));
        }
        let made = self.call("CreateIndex", 6, |mut c| {
            let req = proto::CreateIndexRequest {
                collection_name: self.name(),
                field_name: "embedding".into(),
                extra_params: params.clone(),
                index_name: "embedding".into(),
                ..Default::default()
            };
            async move { c.create_index(req).await }
        });
        // Another shard may have built it first.
        match made {
            Err(_) if self.index_type()?.is_some() => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// Load the collection (Milvus queries and deletes by expression need it loaded), with a
    /// vector index first where it has none.
    fn load(&self) -> Result<()> {
        if self.index_type()?.is_none() {
            self.create_index()?;
        }
        let state = || -> Result<i32> {
            let r = self.call("GetLoadState", 6, |mut c| {
                let collection_name = self.name();
                async move {
                    c.get_load_state(proto::GetLoadStateRequest { collection_name, ..Default::default() })
                        .await
                }
            })?;
            Ok(r.state)
        };
        let loaded = proto::LoadState::Loaded as i32;
        if state()? == loaded {
            return Ok(());
        }
        self.call("LoadCollection", 6, |mut c| {
            let collection_name = self.name();
            async move {
                c.load_collection(proto::LoadCollectionRequest { collection_name, ..Default::default() })
                    .await
            }
        })?;
        let start = std::time::Instant::now();
        while state()? != loaded {
            if start.elapsed() > Duration::from_secs(600) {
                return Err(Error::Database(format!(
                    "{}: the collection did not load in 10 minutes",
                    self.target.shown()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }

    /// A query's rows, as its fields' columns.
    fn query(
        &self,
        expr: String,
        output_fields: Vec<String>,
        limit: Option<usize>,
    ) -> Result<proto::QueryResults> {
        let query_params = limit.map(|n| vec![pair("limit", &n.to_string())]).unwrap_or_default();
        self.call("Query", 6, |mut c| {
            let req = proto::QueryRequest {
                collection_name: self.name(),
                expr: expr.clone(),
                output_fields: output_fields.clone(),
                query_params: query_params.clone(),
                consistency_level: proto::ConsistencyLevel::Strong as i32,
                ..Default::default()
            };
            async move { c.query(req).await }
        })
    }

    /// The rows the collection holds.
    fn count(&self) -> Result<u64> {
        let r = self.query(String::new(), vec!["count(*)".into()], None)?;
        Ok(r.fields_data.iter().find_map(|f| longs(f).first().copied()).unwrap_or(0).max(0) as u64)
    }

    /// The rows the collection holds of `docs`: each id with the fields a rerun may change
    /// (place, size, context, metadata), as [`Self::changeable`] gives them; `None` where
    /// there are more than one query returns.
    fn held(&self, docs: &[String]) -> Result<Option<std::collections::HashMap<String, Vec<String>>>> {
        let mut fields = vec!["id".to_string(), "index".into(), "tokens".into(), "context".into()];
        fields.extend(self.columns.meta_fields.iter().cloned());
        let r = self.query(format!("doc_id in {}", list(docs)), fields.clone(), Some(QUERY_LIMIT))?;
        let column = |name: &str| r.fields_data.iter().find(|f| f.field_name == name);
        let ids = column("id").map(strings).unwrap_or_default();
        if ids.len() >= QUERY_LIMIT {
            return Ok(None);
        }
        let cols: Vec<Vec<Option<String>>> = fields[1..]
            .iter()
            .map(|f| match column(f) {
                Some(c) if c.r#type == DataType::Int64 as i32 => {
                    longs(c).iter().map(|v| Some(v.to_string())).collect()
                }
                Some(c) => nullable_strings(c, ids.len()),
                None => vec![None; ids.len()],
            })
            .collect();
        Ok(Some(
            ids.into_iter()
                .enumerate()
                .map(|(i, id)| {
                    (id, cols.iter().map(|c| c.get(i).cloned().flatten().unwrap_or_default()).collect())
                })
                .collect(),
        ))
    }

    /// What of a row a rerun may change, as [`Self::held`] reads it back.
    fn changeable(r: &super::Row) -> Vec<String> {
        let mut v = vec![r.index.to_string(), r.tokens.to_string(), r.context.clone()];
        v.extend(r.meta.iter().map(|m| m.clone().unwrap_or_default()));
        v
    }

    /// Upsert `part`; a request the server finds too large is split in two.
    fn upsert(&self, part: &[&super::Row]) -> Result<()> {
        let fields = self.fields(part);
        let rows = u32::try_from(part.len()).unwrap_or(u32::MAX);
        let sent = self.retried("Upsert", 6, |mut c| {
            let req = proto::UpsertRequest {
                collection_name: self.name(),
                fields_data: fields.clone(),
                num_rows: rows,
                ..Default::default()
            };
            async move { c.upsert(req).await }
        });
        match sent {
            Err((Failure::TooLarge(_), _)) if part.len() > 1 => {
                let (a, b) = part.split_at(part.len() / 2);
                self.upsert(a)?;
                self.upsert(b)
            }
            Ok(_) => Ok(()),
            Err((f, attempts)) => Err(self.error(f, attempts)),
        }
    }

    /// `part`'s rows as Milvus's columns.
    fn fields(&self, part: &[&super::Row]) -> Vec<FieldData> {
        let text = |name: &str, f: &dyn Fn(&super::Row) -> String| {
            scalar(
                name,
                DataType::VarChar,
                scalar_field::Data::StringData(proto::StringArray {
                    data: part.iter().map(|r| f(r)).collect(),
                }),
            )
        };
        let long = |name: &str, f: &dyn Fn(&super::Row) -> i64| {
            scalar(
                name,
                DataType::Int64,
                scalar_field::Data::LongData(proto::LongArray { data: part.iter().map(|r| f(r)).collect() }),
            )
        };
        let mut fields = vec![
            text("id", &|r| r.id.clone()),
            text("doc_id", &|r| r.doc_id.clone()),
            long("index", &|r| i64::from(r.index)),
            long("start", &|r| r.start),
            long("end", &|r| r.end),
            text("text", &|r| r.text.clone()),
            long("tokens", &|r| i64::from(r.tokens)),
            text("context", &|r| r.context.clone()),
        ];
        for (i, name) in self.columns.meta_fields.iter().enumerate() {
            // Nullable: the values present, and which rows have one (pymilvus's form).
            let mut f = scalar(
                name,
                DataType::VarChar,
                scalar_field::Data::StringData(proto::StringArray {
                    data: part.iter().filter_map(|r| r.meta[i].clone()).collect(),
                }),
            );
            f.valid_data = part.iter().map(|r| r.meta[i].is_some()).collect();
            fields.push(f);
        }
        let dim = part.first().map_or(0, |r| r.embedding.len());
        fields.push(FieldData {
            r#type: DataType::FloatVector as i32,
            field_name: "embedding".into(),
            field: Some(field_data::Field::Vectors(proto::VectorField {
                dim: dim as i64,
                data: Some(vector_field::Data::FloatVector(proto::FloatArray {
                    data: part.iter().flat_map(|r| r.embedding.iter().copied()).collect(),
                })),
            })),
            ..Default::default()
        });
        fields
    }

    /// Write the job's progress into the collection's properties (one key; the others'
    /// progress is untouched).
    ///
    /// Setting one key can run any number of times, so any failure is tried again a few
    /// times, not only those Milvus marks retriable: milvus-lite answers two concurrent
    /// alterations of one collection (shards of a job) with a failed rename of its schema file.
    fn progress(&self, totals: &Totals, complete: bool) -> Result<()> {
        let p = Progress::record(totals, complete);
        let properties = vec![pair(&self.key, &p)];
        let alter = |mut c: Client| {
            let req = proto::AlterCollectionRequest {
                collection_name: self.name(),
                properties: properties.clone(),
                ..Default::default()
            };
            async move { c.alter_collection(req).await }
        };
        // Apart from the other writers' retries: each process waits its own few milliseconds.
        let mut wait = Duration::from_millis(50 + u64::from(std::process::id() % 50));
        for _ in 0..5 {
            match self.retried("AlterCollection", 6, alter) {
                Err((Failure::Final(_), _)) => std::thread::sleep(wait),
                r => return r.map(|_| ()).map_err(|(f, attempts)| self.error(f, attempts)),
            }
            wait *= 2;
        }
        self.call("AlterCollection", 6, alter).map(|_| ())
    }
}

impl DbWriter for MilvusWriter {
    fn commit(&mut self, rows: &Rows, totals: &Totals) -> Result<()> {
        // What the collection holds of the batch's documents, read first: a row it holds as
        // this batch would write it is not sent again (the id fixes the document, the offsets
        // and the text, and the collection's record how the vector is made), so a rerun
        // upserts nothing.
        let held = if rows.docs.is_empty() { Some(Default::default()) } else { self.held(&rows.docs)? };
        let unique: Vec<&super::Row> = rows
            .unique()
            .into_iter()
            .filter(|r| held.as_ref().and_then(|h| h.get(&r.id)).is_none_or(|v| *v != Self::changeable(r)))
            .collect();
        let mut rest = &unique[..];
        while !rest.is_empty() {
            let n = request_rows(rest);
            self.upsert(&rest[..n])?;
            rest = &rest[n..];
        }
        if self.opts.replace && !rows.docs.is_empty() {
            // The batch's documents' rows it did not write, deleted by the server (no list of
            // them is needed, nor a limit on how many).
            let ours: Vec<String> = rows.rows.iter().map(|r| r.id.clone()).collect();
            let stale = held.as_ref().is_none_or(|h| h.keys().any(|id| !ours.contains(id)));
            if stale {
                let expr = format!("doc_id in {} and id not in {}", list(&rows.docs), list(&ours));
                self.call("Delete", 6, |mut c| {
                    let req = proto::DeleteRequest {
                        collection_name: self.name(),
                        expr: expr.clone(),
                        consistency_level: proto::ConsistencyLevel::Strong as i32,
                        ..Default::default()
                    };
                    async move { c.delete(req).await }
                })?;
            }
        }
        self.progress(totals, false)
    }

    fn finish(&mut self, totals: &Totals) -> Result<()> {
        if self.opts.index && self.index_type()?.as_deref() != Some("HNSW") {
            // An index of another type (AUTOINDEX, from a run without --hnsw): rebuilt as HNSW.
            let name = self.name();
            self.call("ReleaseCollection", 6, |mut c| {
                let collection_name = name.clone();
                async move {
                    c.release_collection(proto::ReleaseCollectionRequest {
                        collection_name,
                        ..Default::default()
                    })
                    .await
                }
            })?;
            self.call("DropIndex", 6, |mut c| {
                let req = proto::DropIndexRequest {
                    collection_name: name.clone(),
                    field_name: "embedding".into(),
                    index_name: "embedding".into(),
                    ..Default::default()
                };
                async move { c.drop_index(req).await }
            })?;
            self.create_index()?;
            self.load()?;
        }
        self.progress(totals, true)
    }
}

/// How many of `rows`' first rows go in one upsert: at least one, and about
/// [`REQUEST_BYTES`].
fn request_rows(rows: &[&super::Row]) -> usize {
    let mut bytes = 0;
    let mut n = 0;
    for r in rows {
        let meta: usize = r.meta.iter().flatten().map(String::len).sum();
        bytes += r.text.len() + r.context.len() + r.doc_id.len() + meta + r.embedding.len() * 4 + 80;
        if n > 0 && bytes > REQUEST_BYTES {
            break;
        }
        n += 1;
    }
    n
}

fn pair(key: &str, value: &str) -> KeyValuePair {
    KeyValuePair { key: key.to_string(), value: value.to_string() }
}

fn property<'a>(pairs: &'a [KeyValuePair], key: &str) -> Option<&'a str> {
    pairs.iter().find(|p| p.key == key).map(|p| p.value.as_str())
}

fn scalar(name: &str, ty: DataType, data: scalar_field::Data) -> FieldData {
    FieldData {
        r#type: ty as i32,
        field_name: name.to_string(),
        field: Some(field_data::Field::Scalars(proto::ScalarField { data: Some(data) })),
        ..Default::default()
    }
}

fn strings(f: &FieldData) -> Vec<String> {
    match &f.field {
        Some(field_data::Field::Scalars(proto::ScalarField {
            data: Some(scalar_field::Data::StringData(s)),
        })) => s.data.clone(),
        _ => Vec::new(),
    }
}

fn longs(f: &FieldData) -> Vec<i64> {
    match &f.field {
        Some(field_data::Field::Scalars(proto::ScalarField {
            data: Some(scalar_field::Data::LongData(s)),
        })) => s.data.clone(),
        _ => Vec::new(),
    }
}

/// A nullable text column of `rows` rows: its values in full form (one a row) or in the
/// compact form (only the rows that have one, as `valid_data` marks them).
fn nullable_strings(f: &FieldData, rows: usize) -> Vec<Option<String>> {
    let values = strings(f);
    if f.valid_data.len() != rows {
        return values.into_iter().map(Some).collect();
    }
    if values.len() == rows {
        return values.into_iter().zip(&f.valid_data).map(|(v, &ok)| ok.then_some(v)).collect();
    }
    let mut it = values.into_iter();
    f.valid_data.iter().map(|&ok| if ok { it.next() } else { None }).collect()
}

/// A list of strings as a Milvus expression's literal: `["a", "b\"c"]`.
fn list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| quoted(s)).collect();
    format!("[{}]", quoted.join(", "))
}

/// A string as a Milvus expression's literal, in double quotes with the escapes Milvus's
/// grammar has (`\\`, `\"`, `\n`, `\r`, `\t`).
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A message on one line.
fn one_line(m: &str) -> String {
    m.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = MilvusTarget::parse("milvus://127.0.0.1:19530/chunks").unwrap();
        assert_eq!(
            (t.host.as_str(), t.db.as_str(), t.collection.as_str()),
            ("127.0.0.1:19530", "default", "chunks")
        );
        assert_eq!(t.shown(), "milvus://127.0.0.1:19530/chunks");
        let t = MilvusTarget::parse("milvus+http://milvus/chunks?db=corpus").unwrap();
        assert_eq!((t.host.as_str(), t.db.as_str()), ("milvus:19530", "corpus"));
        assert_eq!(t.shown(), "milvus://milvus:19530/chunks?db=corpus");
        for bad in [
            "milvus://host:1",
            "milvus://host:1/",
            "milvus://host/a/b",
            "milvus://h/c?x=1",
            "milvus://h/bad-name",
            "milvus://h/1st",
        ] {
            let e = MilvusTarget::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        let e = MilvusTarget::parse("milvus+https://h/c").unwrap_err().to_string();
        assert!(e.contains("TLS"), "{e}");
    }

    #[test]
    fn literals_escape_what_milvus_grammar_escapes() {
        let items = ["plain".to_string(), "a \"q\" \\ b\n\t".to_string()];
        assert_eq!(list(&items), r#"["plain", "a \"q\" \\ b\n\t"]"#);
    }

    #[test]
    fn nullable_columns_read_in_either_form() {
        let mut f = scalar(
            "m",
            DataType::VarChar,
            scalar_field::Data::StringData(proto::StringArray { data: vec!["a".into(), "c".into()] }),
        );
        f.valid_data = vec![true, false, true];
        assert_eq!(nullable_strings(&f, 3), [Some("a".into()), None, Some("c".into())]);
        f.field = scalar(
            "m",
            DataType::VarChar,
            scalar_field::Data::StringData(proto::StringArray {
                data: vec!["a".into(), String::new(), "c".into()],
            }),
        )
        .field;
        assert_eq!(nullable_strings(&f, 3), [Some("a".into()), None, Some("c".into())]);
    }

    #[test]
    fn long_chunks_are_refused_in_words() {
        use crate::chunk::ChunkSpan;
        let doc = crate::corpus::Document::new("d", "x".repeat(VARCHAR_BYTES + 1));
        let e = rejects(&doc, &[ChunkSpan::new(0, VARCHAR_BYTES + 1, 1, 1)]).unwrap();
        assert!(e.contains("a chunk of 65536 bytes") && e.contains("--max-tokens"), "{e}");
        let halves = [ChunkSpan::new(0, 10, 1, 1), ChunkSpan::new(10, VARCHAR_BYTES + 1, 1, 1)];
        assert!(rejects(&doc, &halves).is_none());
    }
}
