//! LanceDB, embedded (feature `lancedb`): `-o DIR/NAME.lance` writes the table `NAME` of the
//! LanceDB database in `DIR`, the directory LanceDB's own clients open
//! (`lancedb.connect("DIR").open_table("NAME")`).
//!
//! Lance has a transaction per commit but none across commits, so a batch is made safe to run
//! twice, as for Chroma: one `merge_insert` on `id` upserts the batch's rows (an id already there
//! is updated, a new one inserted) and, with `replace`, deletes the batch's documents' rows that
//! the batch did not write, in the same commit (a reader never sees a document without
//! chunks); then the job's progress is written into the table's config. A kill between the two
//! leaves progress one batch behind, and `--resume` runs that batch again, changing nothing. A
//! commit that meets another writer's (a shard writing the same table) is retried by Lance.
//!
//! The table is created when missing, its schema's metadata recording the model, the dimension
//! and how the vectors were made (`seamcut`: `{"model", "dim", "vectors"}`); an existing table
//! with other columns, another dimension or another model is an error before the first write.
//! Vectors are `FixedSizeList<Float32>`: the job's floats exactly. With `index`, the vector
//! index (IVF-HNSW-SQ, cosine) is built after the load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lancedb::arrow::arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, RecordBatchIterator, StringArray,
};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancedb::table::NativeTable;

use super::{DbOptions, DbWriter, Progress, Rows};
use crate::output::{Columns, FieldKind};
use crate::totals::Totals;
use crate::{Error, Result};

/// A table in a LanceDB directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanceTarget {
    /// The database's directory.
    pub dir: PathBuf,
    /// The table's name (the file name without `.lance`).
    pub table: String,
}

impl LanceTarget {
    /// `DIR/NAME.lance` (a path [`super::DbTarget::parse`] found to end in `.lance`).
    #[must_use]
    pub fn new(output: &str) -> Self {
        let path = Path::new(output);
        let table = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Self { dir, table }
    }

    /// The output as given.
    #[must_use]
    pub fn shown(&self) -> String {
        self.dir.join(format!("{}.lance", self.table)).display().to_string()
    }
}

/// A job's writer into a LanceDB table.
pub struct LanceWriter {
    /// Lance is async: its calls run on a runtime of the writer's own.
    rt: tokio::runtime::Runtime,
    table: lancedb::Table,
    target: LanceTarget,
    schema: SchemaRef,
    /// The condition on which `merge_insert` rewrites a row already there ([`changed`]).
    changed: String,
    opts: DbOptions,
    /// The config key of this job's progress.
    key: String,
}

/// The key of the table's schema metadata that says what made it.
const RECORD: &str = "seamcut";

impl LanceWriter {
    /// Open the database, find or create the table, check it, read the job's progress.
    ///
    /// # Errors
    /// A table name LanceDB refuses, a table with other columns, another dimension or another
    /// model; an interrupted run without `resume`.
    pub fn open(
        target: &LanceTarget,
        columns: Columns,
        job: &str,
        opts: DbOptions,
    ) -> Result<(Self, Progress)> {
        let dim = super::dim(&columns)?;
        let shown = target.shown();
        let fail = |e: lancedb::Error| Error::Database(format!("{shown}: {}", one_line(&e)));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::Internal(format!("cannot start LanceDB's runtime: {e}")))?;
        let record =
            serde_json::json!({"model": opts.model, "dim": dim, "vectors": opts.vectors}).to_string();
        let schema = Arc::new(
            schema(&columns, dim).with_metadata([(RECORD.to_string(), record)].into_iter().collect()),
        );
        // An absolute path: lancedb 0.41 takes any URI that starts with "db" (a directory
        // named `db/`) for LanceDB Cloud's `db://`.
        let dir = std::path::absolute(&target.dir).map_err(|e| Error::Config(format!("{shown}: {e}")))?;
        let uri = dir.to_str().ok_or_else(|| {
            Error::Config(format!("{shown}: LanceDB takes a directory whose path is UTF-8"))
        })?;
        let table = rt.block_on(async {
            let db = lancedb::connect(uri).execute().await.map_err(fail)?;
            match db.open_table(&target.table).execute().await {
                Ok(t) => Ok(t),
                Err(lancedb::Error::TableNotFound { .. }) => db
                    .create_empty_table(&target.table, schema.clone())
                    // Another shard may create it first: then it is opened.
                    .mode(lancedb::database::CreateTableMode::exist_ok(|r| r))
                    .execute()
                    .await
                    .map_err(fail),
                Err(e) => Err(fail(e)),
            }
        })?;
        let key = format!("seamcut.job.{}", &crate::chunk::chunk_id(job, 0, 0, "")[..16]);
        let w = Self { rt, table, target: target.clone(), changed: changed(&schema), schema, opts, key };
        w.check(dim)?;
        let progress = w.read_progress()?;
        Ok((w, progress))
    }

    fn fail(&self) -> impl Fn(lancedb::Error) -> Error + '_ {
        move |e| Error::Database(format!("{}: {}", self.target.shown(), one_line(&e)))
    }

    fn native(&self) -> Result<&NativeTable> {
        self.table
            .as_native()
            .ok_or_else(|| Error::Internal(format!("{}: not a local LanceDB table", self.target.shown())))
    }

    /// The table's columns and record against this job's.
    fn check(&self, dim: usize) -> Result<()> {
        let shown = self.target.shown();
        let theirs = self.rt.block_on(self.table.schema()).map_err(self.fail())?;
        let list = |s: &Schema| {
            s.fields()
                .iter()
                .map(|f| format!("{} {}", f.name(), f.data_type()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let same = theirs.fields().len() == self.schema.fields().len()
            && theirs.fields().iter().zip(self.schema.fields()).all(|(a, b)| {
                a.name() == b.name()
                    && match (a.data_type(), b.data_type()) {
                        (DataType::FixedSizeList(x, _), DataType::FixedSizeList(y, _)) => {
                            x.data_type() == y.data_type()
                        }
                        (x, y) => x == y,
                    }
            });
        if !same {
            return Err(Error::Config(format!(
                "{shown}: the table exists with other columns ({}) than this job writes ({}); write another table",
                list(&theirs),
                list(&self.schema)
            )));
        }
        if let Some(DataType::FixedSizeList(_, n)) = theirs.fields().last().map(|f| f.data_type()) {
            if *n as usize != dim {
                return Err(Error::Config(format!(
                    "{shown}: the table's vectors have {n} dimensions, this job's {dim}; write another table"
                )));
            }
        }
        let recorded: Option<serde_json::Value> =
            theirs.metadata().get(RECORD).and_then(|r| serde_json::from_str(r).ok());
        let field = |k: &str| recorded.as_ref().and_then(|r| r[k].as_str().map(str::to_string));
        super::check_recorded(
            &shown,
            "table",
            field("model").as_deref(),
            field("vectors").as_deref(),
            &self.opts,
        )
    }

    fn read_progress(&self) -> Result<Progress> {
        let manifest = self.rt.block_on(self.native()?.manifest()).map_err(self.fail())?;
        let recorded = manifest.config.get(&self.key).map(|p| Progress::read_record(p));
        // Progress of some chunks in a table whose rows were all deleted since is not its own.
        let empty =
            recorded.is_some() && self.rt.block_on(self.table.count_rows(None)).map_err(self.fail())? == 0;
        let shown = self.target.shown();
        let recorded = Progress::unless_stale(recorded, &shown, "table", "its config", empty, false);
        let afresh = format!("removing its key {} from the table's config", self.key);
        Progress::of_record(recorded, &self.opts, &shown, "table", Some(&afresh))
    }

    fn progress(&self, totals: &Totals, complete: bool) -> Result<()> {
        let p = Progress::record(totals, complete);
        self.rt.block_on(self.native()?.update_config([(self.key.clone(), p)])).map_err(self.fail())
    }

    /// A batch's rows as one record batch, each id once (`merge_insert` would insert a new id
    /// twice).
    fn batch(&self, rows: &Rows) -> Result<RecordBatch> {
        let rows = rows.unique();
        let text = |f: &dyn Fn(&super::Row) -> &str| -> ArrayRef {
            Arc::new(rows.iter().map(|r| Some(f(r))).collect::<StringArray>())
        };
        let mut cols: Vec<ArrayRef> = vec![
            text(&|r| &r.id),
            text(&|r| &r.doc_id),
            Arc::new(rows.iter().map(|r| i64::from(r.index)).collect::<Int64Array>()),
            Arc::new(rows.iter().map(|r| r.start).collect::<Int64Array>()),
            Arc::new(rows.iter().map(|r| r.end).collect::<Int64Array>()),
            text(&|r| &r.text),
            Arc::new(rows.iter().map(|r| i64::from(r.tokens)).collect::<Int64Array>()),
            text(&|r| &r.context),
        ];
        let meta = self.schema.fields().len() - cols.len() - 1;
        for i in 0..meta {
            cols.push(Arc::new(rows.iter().map(|r| r.meta[i].as_deref()).collect::<StringArray>()));
        }
        let DataType::FixedSizeList(item, dim) =
            self.schema.fields().last().map_or(&DataType::Null, |f| f.data_type())
        else {
            return Err(Error::Internal("a LanceDB table without its vector column".into()));
        };
        let values = Float32Array::from_iter_values(rows.iter().flat_map(|r| r.embedding.iter().copied()));
        let vectors = FixedSizeListArray::try_new(item.clone(), *dim, Arc::new(values), None)
            .map_err(|e| Error::Internal(format!("a batch's vectors: {e}")))?;
        cols.push(Arc::new(vectors));
        RecordBatch::try_new(self.schema.clone(), cols)
            .map_err(|e| Error::Internal(format!("a batch's rows: {e}")))
    }
}

impl DbWriter for LanceWriter {
    fn commit(&mut self, rows: &Rows, totals: &Totals) -> Result<()> {
        let replace = self.opts.replace && !rows.docs.is_empty();
        if !rows.rows.is_empty() || replace {
            let batch = self.batch(rows)?;
            let mut merge = self.table.merge_insert(&["id"]);
            merge.when_matched_update_all(Some(self.changed.clone())).when_not_matched_insert_all();
            if replace {
                let docs: Vec<String> =
                    rows.docs.iter().map(|d| format!("'{}'", d.replace('\'', "''"))).collect();
                merge.when_not_matched_by_source_delete(Some(format!("doc_id IN ({})", docs.join(", "))));
            }
            let data = RecordBatchIterator::new([Ok(batch)], self.schema.clone());
            self.rt.block_on(merge.execute(Box::new(data))).map_err(self.fail())?;
        }
        self.progress(totals, false)
    }

    fn finish(&mut self, totals: &Totals) -> Result<()> {
        if self.opts.index {
            use lancedb::index::vector::IvfHnswSqIndexBuilder;
            let index = lancedb::index::Index::IvfHnswSq(
                IvfHnswSqIndexBuilder::default().distance_type(lancedb::DistanceType::Cosine),
            );
            let build = self.table.create_index(&["embedding"], index).replace(true);
            self.rt.block_on(build.execute()).map_err(self.fail())?;
        }
        self.progress(totals, true)
    }
}

/// The table's columns: the chunk row's, then the metadata fields (nullable text), then the
/// vector; the types of seamcut's Parquet and Arrow outputs (`crate::output::arrow`), so a table
/// also takes `chunk_table`'s rows without their `sentences` column.
fn schema(columns: &Columns, dim: usize) -> Schema {
    // The record's one description (`crate::output::db_fields`), in LanceDB's arrow.
    let mut fields: Vec<Field> = crate::output::db_fields()
        .map(|f| {
            let ty = match f.kind {
                FieldKind::Text => DataType::Utf8,
                FieldKind::Count | FieldKind::Offset => DataType::Int64,
            };
            Field::new(f.name, ty, false)
        })
        .collect();
    fields.extend(columns.meta_fields.iter().map(|f| Field::new(f, DataType::Utf8, true)));
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let dim = i32::try_from(dim).unwrap_or(i32::MAX);
    fields.push(Field::new("embedding", DataType::FixedSizeList(item, dim), false));
    Schema::new(fields)
}

/// When a row already in the table is rewritten (`schema`'s columns): the id fixes the
/// document, the offsets and the text, and the table's record fixes how the vector is made, so
/// only the chunk's place, size, context and metadata can differ. A rerun then rewrites nothing
/// (Lance rewrites a row it updates, so an unconditional upsert doubled the table's data on
/// every rerun until `optimize`).
fn changed(schema: &Schema) -> String {
    // Lance's SQL quotes a column name with backticks (a double-quoted name is a string).
    let quoted = |c: &str| format!("`{}`", c.replace('`', "``"));
    let fixed = ["id", "doc_id", "start", "end", "text", "embedding"];
    let cols = schema.fields().iter().map(|f| f.name()).filter(|c| !fixed.contains(&c.as_str()));
    // Lance's conditions have no IS DISTINCT FROM: a null on one side only is its own term
    // (a comparison with a null is null, which updates nothing).
    cols.map(|c| {
        let q = quoted(c);
        format!("target.{q} != source.{q} OR (target.{q} IS NULL) != (source.{q} IS NULL)")
    })
    .collect::<Vec<_>>()
    .join(" OR ")
}

/// LanceDB's error on one line.
fn one_line(e: &lancedb::Error) -> String {
    e.to_string().replace(['\n', '\r'], " ")
}
