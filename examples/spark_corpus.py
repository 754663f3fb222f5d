"""Chunk a corpus with seamcut on Apache Spark.

    python examples/spark_corpus.py INPUT OUTPUT_DIR [--chunker maxmin] [--embeddings mean]
        [--master local[2]] [--partitions 8]
    spark-submit --master yarn examples/spark_corpus.py INPUT OUTPUT_DIR ...

INPUT is a Parquet file or directory (or JSONL with --jsonl) with `id` and `text` columns;
OUTPUT_DIR gets Parquet files with seamcut's chunk schema (id, doc_id, index, start, end,
text, tokens, sentences, context[, embedding]), replacing what is there; start/end are UTF-8
byte offsets into the document's text.

The job is `seamcut.spark.chunk_dataframe`: `DataFrame.mapInArrow` hands each Arrow record
batch of documents to `Chunker.chunk_table` (no Python strings are made of the texts), and
each Python worker builds its chunker (loads the model) once, for all its batches and
tasks. Each task uses `spark.task.cpus` threads (1 by default), so Spark's task slots are
seamcut's threads. `id` is each chunk's stable id, so a task Spark retries writes the same
rows and the output is the same set of chunks as
`seamcut chunk INPUT --chunker ... -o out.parquet` on one machine, in another order.
The executors need the seamcut wheel and pyarrow installed (pyspark brings the rest).
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv=None) -> None:
    from pyspark.sql import SparkSession

    import seamcut.spark

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--jsonl", action="store_true", help="read JSONL instead of Parquet")
    p.add_argument("--chunker", default="maxmin")
    p.add_argument("--model", default="default")
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--embeddings", choices=["mean", "reembed", "late"], default=None)
    p.add_argument("--master", default=None,
                   help="Spark master, e.g. local[4] (default: spark-submit's, else local[*])")
    p.add_argument("--partitions", type=int, default=None,
                   help="spread the documents over this many tasks (default: the input's splits)")
    a = p.parse_args(argv)

    builder = SparkSession.builder.appName("seamcut-corpus").config("spark.ui.enabled", "false")
    if a.master:
        builder = builder.master(a.master)
    if "PYSPARK_GATEWAY_PORT" not in os.environ and (a.master or "local").startswith("local"):
        # Run with plain `python` on a local master: the workers run this interpreter (the one
        # with seamcut), not `python3` off the PATH. spark-submit sets its own.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    try:
        docs = spark.read.json(a.input) if a.jsonl else spark.read.parquet(a.input)
        if a.partitions:
            docs = docs.repartition(a.partitions, "id")
        params = {"chunker": a.chunker, "model": a.model, "max_tokens": a.max_tokens}
        params = {k: v for k, v in params.items() if v is not None}
        chunks = seamcut.spark.chunk_dataframe(docs, params, embeddings=a.embeddings)
        chunks.write.mode("overwrite").parquet(a.output)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
