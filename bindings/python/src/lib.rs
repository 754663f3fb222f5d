//! `seamcut._seamcut`: the native half of the `seamcut` Python package.
//!
//! A thin layer over the library: a chunker is built from a [`ChunkerSpec`] (the Python
//! side passes its keyword arguments as JSON to [`ChunkerSpec::from_params`]), documents
//! are chunked by the library's own `Chunker::chunk_batch` and corpus pipeline, and tables
//! go in and out through the Arrow C stream interface. No chunking policy lives here: what
//! this file adds is the conversion of offsets to Python's character indices, of errors to
//! Python exceptions, and releasing the GIL around all work.
//!
//! Arrow crosses by hand through `arrow-array`'s C stream FFI (a PyCapsule named
//! `arrow_array_stream`, the Arrow PyCapsule interface) rather than arrow's `pyarrow`
//! feature or `pyo3-arrow`: both pin a pyo3 and an arrow release, and this is a few lines.

use std::ffi::CStr;
use std::sync::{Arc, Mutex};

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use seamcut::chunk::ChunkSpan;
use seamcut::chunkers::ChunkerKind;
use seamcut::corpus::{Documents, ReadOptions};
use seamcut::device::{DeviceSpec, Precision};
use seamcut::embed::tuned::{PromptChoice, Role};
use seamcut::embed::{embed_texts, EmbedOptions};
use seamcut::models::ModelSpec;
use seamcut::output::{ArrowSink, Columns};
use seamcut::pipeline::{
    chunk_texts, CorpusJob, EmbeddingMode, JobOptions, OnError, SharedSink, Target, VectorPlan,
};
use seamcut::spec::ChunkerSpec;
use seamcut::Error;

const STREAM: &CStr = c"arrow_array_stream";

// As in the CLI: the encoder allocates and frees large tensors every layer, and glibc's
// malloc hands them back to the kernel and faults them in again; mimalloc keeps them
// (MiniLM through the wheel: 28.9 s with glibc against 20.7 s for the CLI on the same text,
// benches/RESULTS.md). Only Rust's allocations use it; Python's objects keep pymalloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The library's one-line error as a Python exception: bad settings and input are
/// `ValueError`, files `OSError`, the rest `RuntimeError`.
fn py_err(e: Error) -> PyErr {
    class(&e)(e.to_string())
}

/// The exception class of an error (see [`py_err`]).
fn class(e: &Error) -> fn(String) -> PyErr {
    match e {
        Error::Config(_) | Error::Setting { .. } | Error::Record { .. } | Error::Binary { .. } => {
            PyValueError::new_err
        }
        Error::Io { .. } | Error::Write(_) => PyOSError::new_err,
        // A document's error that stopped a job (`on_error="raise"`): raised as its own kind.
        Error::Stopped(inner) | Error::InWalk(inner) => class(inner),
        _ => PyRuntimeError::new_err,
    }
}

/// One chunk as the Python side builds its `Chunk` from it: `(text, start_index, end_index,
/// token_count, start_byte, end_byte, sentences, context, window_start, window_end,
/// window_text)`, the window's offsets in characters (`None` without overlap).
type ChunkTuple =
    (String, usize, usize, usize, usize, usize, usize, String, Option<usize>, Option<usize>, Option<String>);

/// A document's chunks and their vectors, `chunks × dim`.
type DocWithVectors<'py> = (Vec<ChunkTuple>, Bound<'py, numpy::PyArray2<f32>>);

/// Character (code point) offsets of sorted byte offsets into `text`, in one pass.
struct CharCursor<'a> {
    text: &'a str,
    byte: usize,
    chars: usize,
}

impl CharCursor<'_> {
    fn to(&mut self, byte: usize) -> usize {
        if byte < self.byte {
            // Starts and ends each increase (overlapping windows too: a cursor each); should
            // that ever not hold, count from the start rather than slice backwards.
            self.byte = 0;
            self.chars = 0;
        }
        self.chars += self.text[self.byte..byte].chars().count();
        self.byte = byte;
        self.chars
    }
}

/// A document's chunks for Python (a text without an id: its context's title is its first
/// heading, or none).
fn tuples(text: &str, spans: &[ChunkSpan]) -> Vec<ChunkTuple> {
    let ascii = text.is_ascii();
    let mut starts = CharCursor { text, byte: 0, chars: 0 };
    let mut ends = CharCursor { text, byte: 0, chars: 0 };
    let mut window_starts = CharCursor { text, byte: 0, chars: 0 };
    let mut window_ends = CharCursor { text, byte: 0, chars: 0 };
    let contexts =
        seamcut::segment::structure::contexts("", text, &spans.iter().map(|c| c.start).collect::<Vec<_>>());
    spans
        .iter()
        .zip(contexts)
        .map(|(c, context)| {
            let (s, e) = if ascii { (c.start, c.end) } else { (starts.to(c.start), ends.to(c.end)) };
            let window = c.window.map(|w| {
                let (ws, we) =
                    if ascii { (w.start, w.end) } else { (window_starts.to(w.start), window_ends.to(w.end)) };
                (ws, we, w.text(text).to_string())
            });
            let (ws, we, wt) = match window {
                Some((ws, we, wt)) => (Some(ws), Some(we), Some(wt)),
                None => (None, None, None),
            };
            (
                text[c.start..c.end].to_string(),
                s,
                e,
                c.tokens,
                c.start,
                c.end,
                c.sentences,
                context,
                ws,
                we,
                wt,
            )
        })
        .collect()
}

/// A chunker built from a spec (JSON of flat parameters; see `seamcut.Chunker`).
#[pyclass(module = "seamcut._seamcut", frozen)]
struct Chunker {
    inner: Box<dyn seamcut::chunkers::Chunker>,
    spec: ChunkerSpec,
}

#[pymethods]
impl Chunker {
    #[new]
    fn new(py: Python<'_>, params: &str) -> PyResult<Self> {
        let params: serde_json::Map<String, serde_json::Value> = serde_json::from_str(params)
            .map_err(|e| PyValueError::new_err(format!("invalid parameters: {e}")))?;
        let spec = ChunkerSpec::from_params(params).map_err(py_err)?;
        let inner = py.detach(|| spec.build()).map_err(py_err)?;
        Ok(Self { inner, spec })
    }

    /// The spec as JSON (what `seamcut chunk --spec FILE` reads).
    fn spec_json(&self) -> String {
        self.spec.to_json()
    }

    /// The settings line the CLI's summary prints.
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn chunk(&self, py: Python<'_>, text: String) -> PyResult<Vec<ChunkTuple>> {
        py.detach(|| self.inner.chunk(&text).map(|spans| tuples(&text, &spans))).map_err(py_err)
    }

    /// Chunk many documents with chunk vectors (`embeddings`: the library's mode names:
    /// `mean`, `reembed`, `late`, `auto`): per document its chunks and a `chunks × dim`
    /// float32 array, through the batch path a corpus job runs.
    fn chunk_batch_vectors<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        embeddings: String,
        context_prefix: bool,
    ) -> PyResult<Vec<DocWithVectors<'py>>> {
        let mode = serde_json::from_value::<EmbeddingMode>(serde_json::Value::String(embeddings.clone()))
            .map_err(|e| {
                PyValueError::new_err(format!("embeddings={embeddings:?}: expected a mode ({e})"))
            })?;
        let docs = py
            .detach(|| -> Result<_, Error> {
                let plan =
                    VectorPlan::for_spec(&self.spec, self.inner.as_ref(), Some(mode), Default::default())?
                        .map(|p| VectorPlan { context_prefix, ..p });
                let dim = plan.as_ref().map_or(0, VectorPlan::dim);
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                chunk_texts(self.inner.as_ref(), &refs, plan.as_ref())
                    .into_iter()
                    .zip(&texts)
                    .map(|(r, text)| {
                        let c = r?;
                        let v = c.vectors.unwrap_or_default();
                        Ok((tuples(text, &c.spans), c.spans.len(), dim, v))
                    })
                    .collect::<Result<Vec<_>, Error>>()
            })
            .map_err(py_err)?;
        docs.into_iter().map(|(t, n, dim, v)| Ok((t, PyArray1::from_vec(py, v).reshape([n, dim])?))).collect()
    }

    fn chunk_batch(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<Vec<ChunkTuple>>> {
        py.detach(|| {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            self.inner
                .chunk_batch(&refs)
                .into_iter()
                .zip(&texts)
                .enumerate()
                .map(|(i, (r, text))| r.map(|spans| tuples(text, &spans)).map_err(|e| (i, e)))
                .collect::<Result<Vec<_>, _>>()
        })
        // The failing text's index, with its error's exception class.
        .map_err(|(i, e)| class(&e)(format!("texts[{i}]: {e}")))
    }

    /// Chunk the rows of an Arrow stream (anything with `__arrow_c_stream__`) through the
    /// corpus pipeline; returns the chunk table as a stream and the job's stats as JSON.
    // The arguments are the Python method's (its keyword arguments, checked in Python).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (data, id_column, text_column, meta_columns, embeddings, on_error, context_prefix=false))]
    fn chunk_table(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        id_column: Option<String>,
        text_column: String,
        meta_columns: Vec<String>,
        embeddings: Option<String>,
        on_error: &str,
        context_prefix: bool,
    ) -> PyResult<(ArrowStream, String)> {
        // The library's own names (its serde spelling), so that a mode it adds is taken here.
        let embeddings = embeddings
            .map(|m| {
                serde_json::from_value::<EmbeddingMode>(serde_json::Value::String(m.clone())).map_err(|e| {
                    PyValueError::new_err(format!("embeddings={m:?}: expected False, True or a mode ({e})"))
                })
            })
            .transpose()?;
        let on_error = match on_error {
            "skip" => OnError::Skip,
            "raise" => OnError::Stop,
            other => {
                return Err(PyValueError::new_err(format!("on_error={other:?}: expected 'skip' or 'raise'")))
            }
        };
        let capsule = data.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.cast::<PyCapsule>()?;
        let ptr = capsule.pointer_checked(Some(STREAM))?;
        // SAFETY: the capsule holds an ArrowArrayStream (checked by its name, as the Arrow
        // PyCapsule interface specifies); from_raw moves it out and marks it released.
        let reader = unsafe { ArrowArrayStreamReader::from_raw(ptr.as_ptr().cast::<FFI_ArrowArrayStream>()) }
            .map_err(|e| PyValueError::new_err(format!("not an Arrow stream: {e}")))?;
        let read = ReadOptions {
            id_field: id_column.unwrap_or_default(),
            text_field: text_column,
            meta_fields: meta_columns,
            ..ReadOptions::default()
        };
        Documents::check_columns(&reader.schema(), &read).map_err(py_err)?;
        // Read the batches holding the GIL (a stream from Python code may need it); the
        // buffers are shared, not copied.
        let batches: Vec<RecordBatch> = reader
            .collect::<Result<_, _>>()
            .map_err(|e| PyValueError::new_err(format!("cannot read the Arrow stream: {e}")))?;
        let (stats, sink) = py
            .detach(|| -> Result<_, Error> {
                // The sink's schema needs the vectors' width before the first chunk.
                let dim = match embeddings {
                    None => None,
                    Some(_) => Some(self.spec.load_model()?.embedder.dim()),
                };
                let sink = Arc::new(Mutex::new(ArrowSink::new(&Columns {
                    meta_fields: read.meta_fields.clone(),
                    dim,
                    windows: self.inner.windows().is_some(),
                })));
                let shared: SharedSink = sink.clone();
                let job = CorpusJob {
                    spec: self.spec.clone(),
                    inputs: Vec::new(),
                    read: read.clone(),
                    opts: JobOptions { embeddings, on_error, context_prefix, ..JobOptions::default() },
                    target: Target::Sink(shared),
                };
                let docs = Documents::from_batches("table", batches.into_iter().map(Ok), read);
                Ok((job.run_with(self.inner.as_ref(), docs)?, sink))
            })
            .map_err(py_err)?;
        let mut sink = sink.lock().map_err(|_| PyRuntimeError::new_err("the chunk sink is poisoned"))?;
        let schema = sink.schema();
        let out = RecordBatchIterator::new(sink.take().into_iter().map(Ok), schema);
        let stream = FFI_ArrowArrayStream::new(Box::new(out));
        let stats = serde_json::to_string(&stats).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok((ArrowStream { stream: Mutex::new(Some(stream)) }, stats))
    }
}

/// A chunk table on its way to pyarrow: exports itself once through `__arrow_c_stream__`.
#[pyclass(module = "seamcut._seamcut", frozen)]
struct ArrowStream {
    stream: Mutex<Option<FFI_ArrowArrayStream>>,
}

#[pymethods]
impl ArrowStream {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // The schema is the chunk table's; no cast is offered.
        let stream = self
            .stream
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this stream was already consumed"))?;
        PyCapsule::new_with_value(py, stream, STREAM)
    }
}

/// Embed texts with a model: a float32 array of shape `(len(texts), dim)`, one row per text as
/// the model's pipeline gives it.
#[pyfunction]
#[pyo3(signature = (texts, model, device, dtype, prompt_name=None, prompt=None, dims=None))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
fn embed<'py>(
    py: Python<'py>,
    texts: Vec<String>,
    model: String,
    device: String,
    dtype: String,
    prompt_name: Option<String>,
    prompt: Option<String>,
    dims: Option<usize>,
) -> PyResult<Bound<'py, numpy::PyArray2<f32>>> {
    let (n, dim, data) = py
        .detach(|| -> Result<_, Error> {
            let spec = ModelSpec {
                model,
                device: DeviceSpec::parse(&device)?,
                dtype: Precision::parse(&dtype)?,
                prompt: PromptChoice::from_settings(prompt_name.as_deref(), prompt.as_deref())?,
                dims,
            };
            let model = spec.load_for(Role::Plain)?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let (e, _) = embed_texts(model.embedder.as_ref(), &refs, EmbedOptions::default())?;
            Ok((texts.len(), model.embedder.dim(), e.data))
        })
        .map_err(py_err)?;
    // The vector becomes the array's buffer: no copy.
    PyArray1::from_vec(py, data).reshape([n, dim])
}

/// The chunkers the library offers, each with its family (`baseline`, `embedding`, `llm`):
/// the one list, which the Python package's `CHUNKERS` and `LLM_CHUNKERS` read.
#[pyfunction]
fn chunkers() -> Vec<(&'static str, &'static str)> {
    ChunkerKind::ALL
        .iter()
        .map(|k| {
            let family = if k.is_baseline() {
                "baseline"
            } else if k.is_llm() {
                "llm"
            } else {
                "embedding"
            };
            (k.name(), family)
        })
        .collect()
}

/// A chunk's stable id (the library's `chunk::chunk_id`): what every record and database
/// row of seamcut carries.
#[pyfunction]
fn chunk_id(doc_id: &str, start: usize, end: usize, text: &str) -> String {
    seamcut::chunk::chunk_id(doc_id, start, end, text)
}

/// Use `n` threads for seamcut's CPU work in this process (0: one per core). Call it before
/// any chunking: the pool is set up once.
#[pyfunction]
fn set_num_threads(n: usize) -> PyResult<()> {
    seamcut::pipeline::set_threads(n).map_err(py_err)
}

#[pymodule]
fn _seamcut(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Chunker>()?;
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(embed, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(chunkers, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_id, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
