"""Chunk a corpus larger than one machine with seamcut on Ray Data.

    python examples/ray_corpus.py INPUT OUTPUT_DIR [--chunker maxmin] [--embeddings mean]
        [--actors 4] [--threads 2] [--gpus 0]

INPUT is a Parquet file or directory (or JSONL with --jsonl) with `id` and `text` columns;
OUTPUT_DIR gets Parquet files with seamcut's chunk schema (doc_id, index, start, end, text,
tokens, sentences[, embedding]); start/end are UTF-8 byte offsets into the document's text.

Each Ray actor holds one seamcut chunker (the model is loaded once per actor) and chunks
whole Arrow record batches through `Chunker.chunk_table`, which releases the GIL and hands
tables in and out without copies. Actors get `--threads` CPUs each and seamcut uses exactly
that many threads; with `--gpus 1` each actor takes a GPU and the chunker uses `device=cuda`
(a GPU build of seamcut). Leave CPUs for Ray Data's read and write tasks: actors ×
threads below the cluster's CPUs (on a 2-CPU machine, one actor of one thread). Rows are
independent, so the chunks are the same set as
`seamcut chunk INPUT --chunker ... -o out.parquet` on one machine, in another order.

Zero-dependency alternative on a batch scheduler (Slurm array job, Kubernetes indexed Job):
each task runs the CLI on its shard of the same inputs, e.g.

    seamcut chunk corpus/ --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
        -o "out/part-$SLURM_ARRAY_TASK_ID.parquet" --resume
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, Optional

import pyarrow as pa


class SeamcutChunk:
    """A Ray Data callable class: one chunker per actor."""

    def __init__(self, params: Dict[str, Any], threads: int, embeddings: Optional[str]):
        import seamcut

        if threads:
            # Ray gives each actor its own process; set the pool before any work.
            seamcut.set_num_threads(threads)
        self.chunker = seamcut.Chunker(**params)
        self.embeddings = embeddings

    def __call__(self, batch: pa.Table) -> pa.Table:
        return self.chunker.chunk_table(batch, embeddings=self.embeddings or False)


def chunk_dataset(ds, params: Dict[str, Any], actors: int = 2, threads: int = 1, gpus: int = 0,
                  embeddings: Optional[str] = None, batch_size: int = 256,
                  ray_remote_args: Optional[Dict[str, Any]] = None, chunk_class: type = SeamcutChunk):
    """The Ray Data pipeline: `ds` (rows with `id` and `text`) to a dataset of chunks.

    `ray_remote_args` go to the actors as `map_batches` passes them: custom `resources` to
    place them on chosen nodes, `max_restarts`/`max_task_retries` (Ray Data restarts a dead
    actor and retries its batch unless told otherwise). `chunk_class` is the callable class
    the actors run: `SeamcutChunk` or a subclass of it."""
    if gpus:
        params = {**params, "device": params.get("device", "cuda")}
    return ds.map_batches(
        chunk_class,
        fn_constructor_kwargs={"params": params, "threads": threads, "embeddings": embeddings},
        batch_format="pyarrow",
        batch_size=batch_size,
        concurrency=actors,
        num_cpus=threads,
        num_gpus=gpus,
        **(ray_remote_args or {}),
    )


def main(argv=None) -> None:
    import ray

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--jsonl", action="store_true", help="read JSONL instead of Parquet")
    p.add_argument("--chunker", default="maxmin")
    p.add_argument("--model", default="default")
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--embeddings", choices=["mean", "reembed"], default=None)
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="CPUs (and seamcut threads) per actor")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per actor (0 or 1)")
    p.add_argument("--batch-size", type=int, default=256, help="documents per batch")
    p.add_argument("--address", default=None, help="Ray cluster address (default: start one here)")
    a = p.parse_args(argv)

    ray.init(address=a.address)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    if not a.gpus and a.actors * a.threads >= cpus:
        # Actors holding every CPU starve Ray Data's read and write tasks: the job would hang.
        actors = max(1, (cpus - 1) // a.threads)
        print(f"ray_corpus: {a.actors} actors x {a.threads} threads would hold all {cpus} CPUs; "
              f"using {actors} actor(s)", flush=True)
        a.actors = actors
    ds = ray.data.read_json(a.input) if a.jsonl else ray.data.read_parquet(a.input)
    ds = ds.select_columns(["id", "text"])
    params = {"chunker": a.chunker, "model": a.model, "max_tokens": a.max_tokens}
    chunks = chunk_dataset(ds, params, a.actors, a.threads, a.gpus, a.embeddings, a.batch_size)
    chunks.write_parquet(a.output)


if __name__ == "__main__":
    main()
