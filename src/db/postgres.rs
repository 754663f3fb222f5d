//! PostgreSQL with pgvector: `-o postgresql://USER@HOST:PORT/DB?table=NAME`.
//!
//! The URL is libpq's (`postgresql://user:password@host:port/dbname?param=value`), with
//! seamcut's own `table` parameter (optionally `schema.table`); a password not in the URL
//! comes from `$PGPASSWORD` (or the variable the options name). Connections are plain TCP or
//! a Unix socket (`host=/run/postgresql`): this build has no TLS, and `sslmode=require` is
//! refused when the connection is made.
//!
//! Each batch is one transaction, as pgvector's loading example does it: binary `COPY` into a
//! temporary staging table, `INSERT … ON CONFLICT (id) DO UPDATE` into the table, with
//! `replace` a `DELETE` of the batch's documents' rows that the batch did not write, and the
//! job's progress row in `seamcut_jobs`. A transient failure (the connection refused or
//! reset, a serialization failure or deadlock, the server shutting down) rolls the batch back
//! and runs it again on a new connection, with backoff; anything else is an error at once.
//!
//! The table is created when missing (`vector(dim)`, an index on `doc_id`) and described by
//! its comment: `{"seamcut": {"model": ..., "dim": ..., "vectors": ...}}` (`vectors`: how
//! they were made besides the model, [`super::DbOptions::vectors`]). An existing table with
//! other columns, another dimension, another model or vectors made another way is an error
//! before the first write.

use std::time::Duration;

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls};

use super::{DbOptions, DbWriter, Progress, Rows};
use crate::output::{Columns, FieldKind};
use crate::totals::Totals;
use crate::{Error, Result};

/// Where a job writes: the connection URL (without seamcut's parameters) and the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgTarget {
    /// The URL as given, less `table`.
    url: String,
    /// `table` or `schema.table`, checked.
    pub table: String,
}

/// PostgreSQL's longest identifier.
const MAX_IDENT: usize = 63;

/// The job-progress table.
const JOBS: &str = "seamcut_jobs";
/// The advisory lock under which writers prepare their tables, one at a time.
const PREPARE_LOCK: &str = "seamcut: preparing a table";

impl PgTarget {
    /// # Errors
    /// A URL without `table`, or a table name PostgreSQL would refuse or that needs quoting.
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |m: String| Error::Config(format!("{}: {m}", shown(url)));
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut table = None;
        let mut rest = Vec::new();
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            match kv.split_once('=') {
                Some(("table", v)) => table = Some(v.to_string()),
                _ => rest.push(kv),
            }
        }
        let table = table.ok_or_else(|| bad("name the table: ?table=NAME (created when missing)".into()))?;
        let parts: Vec<&str> = table.split('.').collect();
        let ok = |p: &str| {
            !p.is_empty()
                && p.len() <= MAX_IDENT
                && p.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        if parts.len() > 2 || !parts.iter().all(|p| ok(p)) {
            return Err(bad(format!(
                "table {table:?}: a table name is 1 to {MAX_IDENT} lower-case letters, digits and _ (not first a digit), optionally schema.table"
            )));
        }
        let url = if rest.is_empty() { base.to_string() } else { format!("{base}?{}", rest.join("&")) };
        Ok(Self { url, table })
    }

    /// The URL without its password.
    #[must_use]
    pub fn shown(&self) -> String {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}table={}", shown(&self.url), self.table)
    }

    fn config(&self, password_env: Option<&str>) -> Result<postgres::Config> {
        let mut c: postgres::Config = self
            .url
            .parse()
            .map_err(|e| Error::Config(format!("{}: not a PostgreSQL URL: {e}", self.shown())))?;
        if c.get_password().is_none() {
            let var = password_env.unwrap_or("PGPASSWORD");
            if let Ok(p) = std::env::var(var) {
                c.password(p);
            }
        }
        if c.get_connect_timeout().is_none() {
            c.connect_timeout(Duration::from_secs(10));
        }
        Ok(c)
    }

    /// The table, quoted.
    fn quoted(&self) -> String {
        self.table.split('.').map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(".")
    }
}

/// `url` with any password replaced by `***`.
fn shown(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((auth, host)) = rest.split_once('@') {
            if let Some((user, _)) = auth.split_once(':') {
                return format!("{scheme}://{user}:***@{host}");
            }
        }
    }
    url.to_string()
}

/// What a batch failed of: worth running again (on a new connection), or not.
fn transient(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        return [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CONNECTION_FAILURE,
            SqlState::CONNECTION_EXCEPTION,
            SqlState::TOO_MANY_CONNECTIONS,
        ]
        .contains(code);
    }
    // No SQL state: the socket (refused, reset, timed out).
    std::error::Error::source(e).is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
}

/// One line for an error of the database: its message and, where the server sent one, its
/// detail (`postgres::Error`'s own text is "db error" and little else).
fn message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => match d.detail() {
            Some(detail) => format!("{} ({detail})", d.message()),
            None => d.message().to_string(),
        },
        None => {
            let source = std::error::Error::source(e).map(ToString::to_string).unwrap_or_default();
            if source.is_empty() {
                e.to_string()
            } else {
                format!("{e}: {source}")
            }
        }
    }
}

/// A job's writer into a table: its connection, the table's columns and the job's progress.
pub struct PgWriter {
    target: PgTarget,
    config: postgres::Config,
    client: Client,
    columns: Columns,
    opts: DbOptions,
    job: String,
    /// COPY straight into the table, with no staging table and upsert: a table that was empty
    /// when the job opened it, without `replace`, has none of the batch's ids (a killed
    /// batch's rows were rolled back), unless the corpus repeats a chunk; then the unique
    /// violation sends that batch, and the rest of the job, through the upsert.
    direct: bool,
    /// Tries per batch and the first backoff.
    tries: u32,
    backoff: Duration,
}

/// The fixed columns, in order, with their SQL types ([`crate::output::db_fields`]; the
/// metadata fields, then `embedding`, follow).
fn fixed() -> impl Iterator<Item = (&'static str, &'static str)> {
    crate::output::db_fields().map(|f| {
        let ty = match f.kind {
            FieldKind::Text => "text",
            FieldKind::Count => "integer",
            FieldKind::Offset => "bigint",
        };
        (f.name, ty)
    })
}

impl PgWriter {
    /// Connect, check or create the table and the progress table, and read the job's
    /// progress.
    ///
    /// # Errors
    /// The server cannot be reached (after retries) or refuses the login; the table exists
    /// with other columns, another dimension or another model; an interrupted run of the
    /// same job without `resume`.
    pub fn open(
        target: &PgTarget,
        columns: Columns,
        job: String,
        opts: DbOptions,
    ) -> Result<(Self, Progress)> {
        let dim = super::dim(&columns)?;
        for f in &columns.meta_fields {
            if fixed().any(|(c, _)| c == f) || f == "embedding" {
                return Err(Error::setting(
                    "meta_fields",
                    format!("{f:?} is one of the table's own columns"),
                ));
            }
        }
        let config = target.config(opts.password_env.as_deref())?;
        let client = connect(&config, target, 4, Duration::from_millis(250))?;
        let mut w = Self {
            target: target.clone(),
            config,
            client,
            columns,
            opts,
            job,
            direct: false,
            tries: 6,
            backoff: Duration::from_millis(250),
        };
        // Shards of one job open the same table at the same moment. Their `IF NOT EXISTS`
        // statements are not atomic with each other (two of them deadlocked on the new
        // table's lock in a run of four shards), so preparing waits its turn on one advisory
        // lock; the session holds it, and a writer that fails drops its connection with it.
        w.client
            .execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", &[&PREPARE_LOCK])
            .map_err(w.sql_err("waiting for the table"))?;
        w.prepare_table(dim)?;
        let progress = w.read_progress()?;
        w.client
            .execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", &[&PREPARE_LOCK])
            .map_err(w.sql_err("preparing the table"))?;
        if !w.opts.replace {
            let empty: bool = w
                .client
                .query_one(&format!("SELECT NOT EXISTS (SELECT 1 FROM {})", w.target.quoted()), &[])
                .map_err(w.sql_err("reading the table"))?
                .get(0);
            w.direct = empty;
        }
        Ok((w, progress))
    }

    /// Run `sql` (`IF NOT EXISTS` statements): once more when another job (a shard writing
    /// the same table) created the same thing at the same moment, which PostgreSQL reports
    /// as a unique violation rather than waiting.
    fn ddl(&mut self, sql: &str) -> std::result::Result<(), postgres::Error> {
        use postgres::error::SqlState;
        match self.client.batch_execute(sql) {
            Err(e)
                if [SqlState::UNIQUE_VIOLATION, SqlState::DUPLICATE_TABLE, SqlState::DUPLICATE_OBJECT]
                    .iter()
                    .any(|c| e.code() == Some(c)) =>
            {
                self.client.batch_execute(sql)
            }
            r => r,
        }
    }

    fn sql_err(&self, what: &str) -> impl Fn(postgres::Error) -> Error {
        let shown = self.target.shown();
        let what = what.to_string();
        move |e| Error::Database(format!("{shown}: {what}: {}", message(&e)))
    }

    /// Create the table when missing; check it when not.
    fn prepare_table(&mut self, dim: usize) -> Result<()> {
        let t = self.target.quoted();
        let shown = self.target.shown();
        let err = move |e: postgres::Error| {
            Error::Database(format!("{shown}: preparing the table: {}", message(&e)))
        };
        self.ddl("CREATE EXTENSION IF NOT EXISTS vector").map_err(&err)?;
        let exists: bool = self
            .client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&self.target.table])
            .map_err(&err)?
            .get(0);
        let want: Vec<(String, String)> = fixed()
            .map(|(c, ty)| (c.to_string(), ty.to_string()))
            .chain(self.columns.meta_fields.iter().map(|f| (f.clone(), "text".to_string())))
            .chain([("embedding".to_string(), "vector".to_string())])
            .collect();
        let description =
            serde_json::json!({"seamcut": {"model": self.opts.model, "dim": dim, "vectors": self.opts.vectors}})
                .to_string();
        if !exists {
            let cols: Vec<String> = want
                .iter()
                .map(|(c, ty)| match c.as_str() {
                    "id" => "\"id\" text PRIMARY KEY".to_string(),
                    "embedding" => format!("\"embedding\" vector({dim}) NOT NULL"),
                    f if self.columns.meta_fields.iter().any(|m| m == f) => format!("\"{f}\" {ty}"),
                    _ => format!("\"{c}\" {ty} NOT NULL"),
                })
                .collect();
            let index = format!("{}_doc_id", self.target.table.replace('.', "_"));
            let sql = format!(
                "CREATE TABLE IF NOT EXISTS {t} ({}); CREATE INDEX IF NOT EXISTS \"{}\" ON {t} (doc_id); COMMENT ON TABLE {t} IS {}",
                cols.join(", "),
                &index[..index.len().min(MAX_IDENT)],
                literal(&description)
            );
            return self.ddl(&sql).map_err(&err);
        }
        // The columns it has, in order, with their types.
        let rows = self
            .client
            .query(
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
                 WHERE a.attrelid = $1::text::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                &[&self.target.table],
            )
            .map_err(&err)?;
        let have: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let same = have.len() == want.len()
            && have.iter().zip(&want).all(|((hc, ht), (wc, wt))| {
                hc == wc && (ht == wt || (wt == "vector" && ht.starts_with("vector")))
            });
        if !same {
            let list = |v: &[(String, String)]| {
                v.iter().map(|(c, t)| format!("{c} {t}")).collect::<Vec<_>>().join(", ")
            };
            return Err(Error::Config(format!(
                "{}: the table exists with other columns ({}) than this job writes ({}); write another table, or drop it",
                self.target.shown(),
                list(&have),
                list(&want)
            )));
        }
        let theirs = have.last().map(|(_, t)| t.clone()).unwrap_or_default();
        if theirs != format!("vector({dim})") {
            return Err(Error::Config(format!(
                "{}: the table's vectors are {theirs}, this job's have {dim} dimensions; write another table",
                self.target.shown()
            )));
        }
        let comment: Option<String> = self
            .client
            .query_one("SELECT obj_description($1::text::regclass, 'pg_class')", &[&self.target.table])
            .map_err(&err)?
            .get(0);
        let recorded = comment.as_deref().and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok());
        let field = |k: &str| recorded.as_ref().and_then(|v| v["seamcut"][k].as_str().map(str::to_string));
        super::check_recorded(
            &self.target.shown(),
            "table",
            field("model").as_deref(),
            field("vectors").as_deref(),
            &self.opts,
        )
    }

    /// The job's progress row, where it describes this table: a row is kept beside the table
    /// (in `seamcut_jobs`), so it can outlive what it describes. It records the table's oid,
    /// which a dropped and recreated table, a restored dump or another database does not have,
    /// and a progress of some chunks in an empty table (truncated) is not the table's either;
    /// such a row is set aside and the job starts afresh, rather than finding itself done.
    fn read_progress(&mut self) -> Result<Progress> {
        let shown = self.target.shown();
        let err = move |e: postgres::Error| {
            Error::Database(format!("{shown}: reading the job's progress: {}", message(&e)))
        };
        self.ddl(&format!(
            "CREATE TABLE IF NOT EXISTS {JOBS} (job text PRIMARY KEY, tbl text NOT NULL, totals text NOT NULL, complete boolean NOT NULL, reloid bigint); \
             ALTER TABLE {JOBS} ADD COLUMN IF NOT EXISTS reloid bigint"
        ))
        .map_err(&err)?;
        let row = self
            .client
            .query_opt(
                &format!(
                    "SELECT totals, complete, reloid IS NULL OR reloid = to_regclass($2)::oid::bigint, \
                     NOT EXISTS (SELECT 1 FROM {}) FROM {JOBS} WHERE job = $1",
                    self.target.quoted()
                ),
                &[&self.job, &self.target.table],
            )
            .map_err(&err)?;
        let recorded = match row {
            None => None,
            Some(row) => {
                let (totals, complete, same_table, empty): (String, bool, bool, bool) =
                    (row.get(0), row.get(1), row.get(2), row.get(3));
                let totals: serde_json::Value = serde_json::from_str(&totals).map_err(|e| {
                    Error::Config(format!("{}: unreadable progress in {JOBS}: {e}", self.target.shown()))
                })?;
                Progress::unless_stale(
                    Some((complete, totals)),
                    &self.target.shown(),
                    "table",
                    JOBS,
                    empty,
                    !same_table,
                )
            }
        };
        let afresh = format!("deleting its row in {JOBS}");
        Progress::of_record(recorded, &self.opts, &self.target.shown(), "table", Some(&afresh))
    }

    /// Write one batch's rows and the job's totals after it (or, with `complete`, only the
    /// totals marked finished), in one transaction, run again on a transient failure.
    fn commit_retrying(&mut self, rows: &Rows, totals: &Totals, complete: bool) -> Result<()> {
        let mut wait = self.backoff;
        let mut attempt = 1;
        loop {
            match self.try_commit(rows, totals, complete) {
                Ok(()) => return Ok(()),
                Err(e) if self.direct && e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => {
                    self.direct = false;
                }
                Err(e) if transient(&e) && attempt < self.tries => {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(8));
                    attempt += 1;
                    // A new connection; if that fails too, the next try says so.
                    if let Ok(c) = connect(&self.config, &self.target, 1, wait) {
                        self.client = c;
                    }
                }
                Err(e) => {
                    // The batches before this one are in the table with the job's progress: once
                    // the server is back, the same job with --resume goes on from here.
                    let hint = if transient(&e) {
                        format!("; {}", crate::db::kept_until_back("the batches written before it are kept"))
                    } else {
                        String::new()
                    };
                    let what = if complete { "finishing the job" } else { "writing a batch" };
                    return Err(Error::Database(format!(
                        "{}: {what} failed after {}: {}{hint}",
                        self.target.shown(),
                        crate::wording::plural(u64::from(attempt), "try"),
                        message(&e)
                    )));
                }
            }
        }
    }

    fn try_commit(
        &mut self,
        rows: &Rows,
        totals: &Totals,
        complete: bool,
    ) -> std::result::Result<(), postgres::Error> {
        let t = self.target.quoted();
        let meta = &self.columns.meta_fields;
        let names: Vec<String> = fixed()
            .map(|(c, _)| format!("\"{c}\""))
            .chain(meta.iter().map(|f| format!("\"{f}\"")))
            .chain(["\"embedding\"".to_string()])
            .collect();
        let totals_json = serde_json::to_string(totals).unwrap_or_default();
        let mut tx = self.client.transaction()?;
        let into = if self.direct { t.clone() } else { "seamcut_staging".to_string() };
        if !rows.rows.is_empty() || (self.opts.replace && !rows.docs.is_empty()) {
            if !self.direct {
                tx.batch_execute(&format!(
                    "CREATE TEMP TABLE IF NOT EXISTS seamcut_staging (LIKE {t} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
                ))?;
            }
            let vector = tx.prepare("SELECT $1::vector")?.params()[0].clone();
            let types: Vec<Type> = fixed()
                .map(|(_, ty)| match ty {
                    "integer" => Type::INT4,
                    "bigint" => Type::INT8,
                    _ => Type::TEXT,
                })
                .chain(meta.iter().map(|_| Type::TEXT))
                .chain([vector])
                .collect();
            let sink =
                tx.copy_in(&format!("COPY {into} ({}) FROM STDIN WITH (FORMAT BINARY)", names.join(", ")))?;
            let mut w = BinaryCopyInWriter::new(sink, &types);
            for r in &rows.rows {
                let v = pgvector::Vector::from(r.embedding.clone());
                let mut values: Vec<&(dyn ToSql + Sync)> =
                    vec![&r.id, &r.doc_id, &r.index, &r.start, &r.end, &r.text, &r.tokens, &r.context];
                values.extend(r.meta.iter().map(|m| m as &(dyn ToSql + Sync)));
                values.push(&v);
                w.write(&values)?;
            }
            w.finish()?;
            if !self.direct {
                // One row per id: a corpus that repeats a chunk (the same document twice) has
                // it twice in a batch, and one INSERT may not update a row twice.
                // A row that is already as the batch has it is left alone: a rerun of the same
                // job rewrites nothing (no new row versions, no index entries, little WAL).
                let rest = &names[1..];
                let set: Vec<String> = rest.iter().map(|c| format!("{c} = EXCLUDED.{c}")).collect();
                let theirs: Vec<String> = rest.iter().map(|c| format!("{t}.{c}")).collect();
                let ours: Vec<String> = rest.iter().map(|c| format!("EXCLUDED.{c}")).collect();
                tx.batch_execute(&format!(
                    "INSERT INTO {t} ({cols}) SELECT DISTINCT ON (\"id\") {cols} FROM seamcut_staging ON CONFLICT (\"id\") DO UPDATE SET {} WHERE ({}) IS DISTINCT FROM ({})",
                    set.join(", "),
                    theirs.join(", "),
                    ours.join(", "),
                    cols = names.join(", ")
                ))?;
            }
            if self.opts.replace {
                tx.execute(
                    &format!(
                        "DELETE FROM {t} WHERE doc_id = ANY($1) AND NOT EXISTS (SELECT 1 FROM seamcut_staging s WHERE s.id = {t}.id)"
                    ),
                    &[&rows.docs],
                )?;
            }
        }
        tx.execute(
            &format!(
                "INSERT INTO {JOBS} (job, tbl, totals, complete, reloid) VALUES ($1, $2, $3, $4, to_regclass($2)::oid::bigint) \
                 ON CONFLICT (job) DO UPDATE SET tbl = EXCLUDED.tbl, totals = EXCLUDED.totals, complete = EXCLUDED.complete, reloid = EXCLUDED.reloid"
            ),
            &[&self.job, &self.target.table, &totals_json, &complete],
        )?;
        tx.commit()
    }

    /// The job is done: with `index` the vector index is built (HNSW, cosine; far cheaper
    /// after the load than kept up during it), then its progress row says so. In that order,
    /// so that a server lost on the way leaves the job unfinished and `--resume` ends it.
    fn finish_job(&mut self, totals: &Totals) -> Result<()> {
        if self.opts.index {
            let t = self.target.quoted();
            let name = format!("{}_embedding_hnsw", self.target.table.replace('.', "_"));
            let sql = format!(
                "CREATE INDEX IF NOT EXISTS \"{}\" ON {t} USING hnsw (embedding vector_cosine_ops)",
                &name[..name.len().min(MAX_IDENT)]
            );
            self.client.batch_execute(&sql).map_err(|e| {
                let hint = if transient(&e) {
                    format!("; {}", crate::db::kept_until_back("the rows are all written"))
                } else {
                    String::new()
                };
                Error::Database(format!("{}: building the index: {}{hint}", self.target.shown(), message(&e)))
            })?;
        }
        self.commit_retrying(&Rows::default(), totals, true)
    }
}

impl DbWriter for PgWriter {
    fn commit(&mut self, rows: &Rows, totals: &Totals) -> Result<()> {
        self.commit_retrying(rows, totals, false)
    }

    fn finish(&mut self, totals: &Totals) -> Result<()> {
        self.finish_job(totals)
    }
}

/// A SQL string literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Connect, trying `tries` times with backoff while the server cannot be reached.
fn connect(config: &postgres::Config, target: &PgTarget, tries: u32, first: Duration) -> Result<Client> {
    let mut wait = first;
    let mut attempt = 1;
    loop {
        match config.connect(NoTls) {
            Ok(c) => return Ok(c),
            Err(e) if transient(&e) && attempt < tries => {
                std::thread::sleep(wait);
                wait *= 2;
                attempt += 1;
            }
            Err(e) => {
                return Err(Error::Database(format!("{}: cannot connect: {}", target.shown(), message(&e))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_the_connection_and_name_a_table_postgres_takes() {
        let t = PgTarget::parse("postgresql://me:secret@127.0.0.1:5433/db?table=chunks&connect_timeout=3")
            .unwrap();
        assert_eq!(t.table, "chunks");
        assert_eq!(t.url, "postgresql://me:secret@127.0.0.1:5433/db?connect_timeout=3");
        assert_eq!(t.shown(), "postgresql://me:***@127.0.0.1:5433/db?connect_timeout=3&table=chunks");
        assert_eq!(t.quoted(), "\"chunks\"");
        assert_eq!(
            PgTarget::parse("postgres://h/db?table=rag.chunks").unwrap().quoted(),
            "\"rag\".\"chunks\""
        );
        for bad in ["Chunks", "1st", "a-b", "x\"y", "a.b.c", "", &"t".repeat(64)] {
            let e = PgTarget::parse(&format!("postgresql://h/db?table={bad}")).unwrap_err().to_string();
            assert!(e.contains("a table name is"), "{bad}: {e}");
        }
        let e = PgTarget::parse("postgresql://h/db").unwrap_err().to_string();
        assert!(e.contains("?table=NAME"), "{e}");
    }
}
