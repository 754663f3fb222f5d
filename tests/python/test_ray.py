"""examples/ray_corpus.py on a local Ray cluster gives the same set of chunks as the CLI on
one machine."""
import glob
import json
import os
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import ray_corpus  # noqa: E402
from corpora import small_corpus  # noqa: E402


def rows(table):
    cols = ["id", "doc_id", "index", "start", "end", "text", "tokens", "sentences"]
    d = table.select(cols).to_pydict()
    return sorted(zip(*(d[c] for c in cols)))


def test_ray_example_matches_the_cli():
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "corpus.parquet")
        small_corpus(src)
        cli_out = os.path.join(d, "cli.parquet")
        subprocess.run([BIN, "chunk", src, "--chunker", "maxmin", "--embeddings", "mean", "-o", cli_out, "-q"],
                       check=True)
        want = pq.read_table(cli_out)

        # The workers import the example module as the driver does.
        env = {"env_vars": {"PYTHONPATH": os.path.join(ROOT, "examples")}}
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=env)
        try:
            ds = ray.data.read_parquet(src).select_columns(["id", "text"])
            out_dir = os.path.join(d, "ray-out")
            # One actor of one CPU: the other CPU runs the read and write tasks (two actors
            # would hold both and starve them).
            ray_corpus.chunk_dataset(ds, {"chunker": "maxmin"}, actors=1, threads=1, embeddings="mean",
                                     batch_size=7).write_parquet(out_dir)
        finally:
            ray.shutdown()
        got = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(os.path.join(out_dir, "*.parquet")))])
        assert got.num_rows == want.num_rows > 40
        assert rows(got) == rows(want)
        # The embeddings too, chunk for chunk.
        key = lambda t: {(r["doc_id"], r["index"]): r["embedding"] for r in t.select(["doc_id", "index", "embedding"]).to_pylist()}
        assert key(got) == key(want)

        # The example as the README runs it: its own local cluster, default actor count
        # (cut to fit the CPUs), the same chunks.
        script_out = os.path.join(d, "script-out")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "ray_corpus.py"), src, script_out,
                            "--chunker", "maxmin", "--embeddings", "mean"], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        again = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(os.path.join(script_out, "*.parquet")))])
        assert rows(again) == rows(want) and key(again) == key(want)
