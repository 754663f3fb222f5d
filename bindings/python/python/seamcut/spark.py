"""seamcut on Apache Spark: chunk a DataFrame of documents with ``DataFrame.mapInArrow``.

    import seamcut.spark
    chunks = seamcut.spark.chunk_dataframe(docs, {"chunker": "maxmin"}, embeddings="mean")

which is this recipe, for a job that needs its own ``mapInArrow`` function::

    params = {"chunker": "maxmin", "max_tokens": 256}
    chunks = docs.select("id", "text").mapInArrow(
        lambda batches: seamcut.spark.chunk_batches(batches, params, embeddings="mean"),
        seamcut.spark.chunk_schema(params, embeddings="mean"),
    )

Each Arrow record batch Spark hands its Python worker goes to
:meth:`seamcut.Chunker.chunk_table` as it is, so the texts are never turned into Python
strings, and the chunks come back as record batches with the CLI's columns: ``id, doc_id,
index, start, end, text, tokens, sentences, context`` (``window_start, window_end,
window_text`` with ``overlap``), the ``meta_columns``, and ``embedding`` (an array of floats)
when asked. ``start``/``end`` are UTF-8 byte offsets. The chunker is built once per Python
worker process (:func:`chunker` keeps it, keyed by its parameters), not once per batch or
task: Spark keeps its Python workers between tasks (``spark.python.worker.reuse``, on by
default), one per task slot. ``id`` is the chunk's stable id (from its document's id, its
offsets and its text), so a task Spark retries, or a job run again, gives the same rows, and
a loader can upsert by it.

pyspark is imported only inside the functions that need it: ``import seamcut.spark`` works
without it (the workers' side, :func:`chunk_batches`, needs only pyarrow).
"""

from __future__ import annotations

import json
import threading
from functools import partial
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional

import seamcut

__all__ = ["chunker", "chunk_batches", "chunk_schema", "chunk_dataframe"]

# The chunkers this process has built, by their parameters (as canonical JSON). A Python
# worker runs one task at a time, but a UDF may use threads: the lock keeps it to one build.
_CHUNKERS: Dict[str, seamcut.Chunker] = {}
_LOCK = threading.Lock()
# Whether this process has sized seamcut's thread pool (it can be set once, before any work).
_THREADS_SET = False


def chunker(params: Optional[Mapping[str, Any]] = None) -> seamcut.Chunker:
    """The ``seamcut.Chunker(**params)`` of this process: built (its model loaded) on the first
    call with these parameters, the same object on every later one."""
    params = dict(params or {})
    key = json.dumps(params, sort_keys=True)
    with _LOCK:
        c = _CHUNKERS.get(key)
        if c is None:
            c = _CHUNKERS[key] = seamcut.Chunker(**params)
        return c


def _task_cpus() -> int:
    """The CPUs Spark gives the running task (``spark.task.cpus``); 0 outside a Spark task."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return 0
    ctx = TaskContext.get()
    return ctx.cpus() if ctx is not None else 0


def _set_threads(threads: Optional[int]) -> None:
    global _THREADS_SET
    if _THREADS_SET:
        return
    _THREADS_SET = True
    n = _task_cpus() if threads is None else threads
    if n:
        try:
            seamcut.set_num_threads(n)
        except ValueError:
            # The pool exists already (this process chunked before): keep it.
            pass


def _for_spark(table):
    """Spark's Arrow reader has no fixed-size lists (``UNSUPPORTED_ARROWTYPE``): the embedding
    column goes out as a plain list of floats (the cast builds list offsets; the floats stay
    in the same buffer)."""
    import pyarrow as pa

    for i, f in enumerate(table.schema):
        if pa.types.is_fixed_size_list(f.type):
            ty = pa.list_(f.type.value_field)
            table = table.set_column(i, f.with_type(ty), table.column(i).cast(ty))
    return table


def chunk_batches(
    batches: Iterable[Any],
    params: Optional[Mapping[str, Any]] = None,
    embeddings: Any = None,
    id_column: str = "id",
    text_column: str = "text",
    meta_columns: Iterable[str] = (),
    threads: Optional[int] = None,
) -> Iterator[Any]:
    """The ``mapInArrow`` function: chunk each Arrow record batch of documents and yield the
    chunks as record batches with :func:`chunk_schema`'s columns.

    ``params`` are ``seamcut.Chunker``'s keyword arguments (``chunker``, ``model``,
    ``max_tokens``, ...); ``embeddings``, ``meta_columns`` and the column names are
    :meth:`seamcut.Chunker.chunk_table`'s. ``id_column`` is needed: chunk ids come from
    document ids, and numbered rows would repeat in every batch. ``threads``: seamcut's
    threads in this worker, set once per process; by default the task's CPUs
    (``spark.task.cpus``, 1 unless set), so that concurrent tasks do not oversubscribe the
    cores; 0 for one per core."""
    if id_column is None:
        raise ValueError("chunk_batches needs an id_column: chunk ids come from document ids")
    _set_threads(threads)
    c = chunker(params)
    meta_columns = list(meta_columns)
    for batch in batches:
        table = c.chunk_table(batch, id_column=id_column, text_column=text_column, embeddings=embeddings,
                              meta_columns=meta_columns)
        yield from _for_spark(table).to_batches()


def chunk_schema(params: Optional[Mapping[str, Any]] = None, embeddings: Any = None,
                 meta_columns: Iterable[str] = ()):
    """The Spark schema (a ``StructType``) of :func:`chunk_batches`' output for these
    arguments: the fixed columns, the window columns when ``params`` sets ``overlap``, the
    metadata columns (strings), and ``embedding`` (``array<float>``) when ``embeddings`` is
    set. Built from the parameters alone: the driver loads no model."""
    from pyspark.sql.types import ArrayType, FloatType, LongType, StringType, StructField, StructType

    def field(name, ty, nullable=False):
        return StructField(name, ty, nullable)

    text, count = StringType(), LongType()
    fields = [field("id", text), field("doc_id", text), field("index", count), field("start", count),
              field("end", count), field("text", text), field("tokens", count), field("sentences", count),
              field("context", text)]
    if (params or {}).get("overlap"):
        fields += [field("window_start", count), field("window_end", count), field("window_text", text)]
    fields += [field(m, text, nullable=True) for m in meta_columns]
    if embeddings:
        fields.append(field("embedding", ArrayType(FloatType(), containsNull=False)))
    return StructType(fields)


def chunk_dataframe(
    df: Any,
    params: Optional[Mapping[str, Any]] = None,
    embeddings: Any = None,
    id_column: str = "id",
    text_column: str = "text",
    meta_columns: Iterable[str] = (),
    threads: Optional[int] = None,
):
    """A Spark DataFrame of documents (``id_column``, ``text_column``) to a DataFrame of their
    chunks (:func:`chunk_schema`), through ``mapInArrow`` and :func:`chunk_batches`. Only
    the columns seamcut reads go to the Python workers."""
    meta_columns = list(meta_columns)
    columns = list(dict.fromkeys([id_column, text_column, *meta_columns]))
    params = dict(params or {})
    # A partial of this module's function pickles by reference: the workers import
    # seamcut.spark, and its chunker cache lives there.
    fn = partial(chunk_batches, params=params, embeddings=embeddings, id_column=id_column,
                 text_column=text_column, meta_columns=meta_columns, threads=threads)
    return df.select(*columns).mapInArrow(fn, chunk_schema(params, embeddings, meta_columns))
