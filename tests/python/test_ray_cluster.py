"""examples/ray_corpus.py beyond one node: the same `chunk_dataset` job on a two-node Ray
cluster (`ray.cluster_utils.Cluster`: a head node and a worker node, separate raylets and
object stores on this machine). Its actors run on both nodes and the chunks are the CLI's;
an actor process that dies mid-job is restarted, its batch retried, and no row is lost or
written twice."""
import glob
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import ray_corpus  # noqa: E402
from corpora import small_corpus  # noqa: E402
from test_ray import rows  # noqa: E402

MiB = 1024 * 1024
# Each node: two logical CPUs (one for its chunking actor, one for Ray Data's read and write
# tasks) on this 2-core machine, a small object store, and one `chunk` slot, so that the
# job's two actors land one on each node.
NODE = {"num_cpus": 2, "object_store_memory": 200 * MiB, "resources": {"chunk": 1}}


def recording(marks, crash):
    """A SeamcutChunk that notes the node and process of each batch it chunks in files under
    `marks`; with `crash`, the first actor to take a batch dies on it (`os._exit`, as a killed
    worker would), once for the whole job."""

    class Recording(ray_corpus.SeamcutChunk):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.node = ray.get_runtime_context().get_node_id()

        def __call__(self, batch: pa.Table) -> pa.Table:
            if crash:
                try:
                    # O_EXCL: one process, the first, gets to create the marker.
                    fd = os.open(os.path.join(marks, "crashed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    pass
                else:
                    os.write(fd, f"{self.node} {os.getpid()}".encode())
                    os.close(fd)
                    os._exit(1)
            out = super().__call__(batch)
            with open(os.path.join(marks, f"batches-{self.node}-{os.getpid()}"), "a") as f:
                f.write(" ".join(batch.column("id").to_pylist()) + "\n")
            return out

    return Recording


def read_dir(path):
    return pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(os.path.join(path, "*.parquet")))])


def vectors(table):
    return {r["id"]: r["embedding"] for r in table.select(["id", "embedding"]).to_pylist()}


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    worker = c.add_node(**NODE)
    c.wait_for_nodes()
    # The workers import the example module as the driver does.
    ray.init(address=c.address, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.path.join(ROOT, "examples")}})
    try:
        yield {c.head_node.node_id, worker.node_id}
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("ray-cluster-corpus")
    src = str(d / "corpus.parquet")
    small_corpus(src)
    out = str(d / "cli.parquet")
    subprocess.run([BIN, "chunk", src, "--chunker", "maxmin", "--embeddings", "mean", "-o", out, "-q"], check=True)
    return src, pq.read_table(out)


def run_job(src, out, marks, crash, ray_remote_args):
    # Ten blocks of four documents, so that there are tasks to spread; and no task starts
    # before both actors are up (else the first could take them all on this small corpus).
    ds = ray.data.read_parquet(src).select_columns(["id", "text"]).repartition(10)
    ctx = ray.data.DataContext.get_current()
    wait, ctx.wait_for_min_actors_s = ctx.wait_for_min_actors_s, 120
    try:
        ray_corpus.chunk_dataset(ds, {"chunker": "maxmin"}, actors=2, threads=1, embeddings="mean", batch_size=2,
                                 ray_remote_args=ray_remote_args,
                                 chunk_class=recording(marks, crash)).write_parquet(out)
    finally:
        ctx.wait_for_min_actors_s = wait
    batches = {}  # (node, pid) -> the documents of each batch that process chunked
    for path in glob.glob(os.path.join(marks, "batches-*")):
        _, node, pid = os.path.basename(path).split("-")
        batches[(node, int(pid))] = [line.split() for line in open(path)]
    return read_dir(out), batches


def test_the_job_runs_on_both_nodes_and_gives_the_clis_chunks(cluster, corpus, tmp_path):
    src, want = corpus
    marks = str(tmp_path / "marks")
    os.makedirs(marks)
    got, batches = run_job(src, str(tmp_path / "out"), marks, crash=False,
                           ray_remote_args={"resources": {"chunk": 1}})
    # Both nodes' actors chunked batches (the `chunk` slots put one actor on each).
    assert {node for node, _ in batches} == cluster, batches.keys()
    assert got.num_rows == want.num_rows > 40
    assert rows(got) == rows(want)
    assert vectors(got) == vectors(want)


def test_a_killed_actor_is_restarted_without_duplicates(cluster, corpus, tmp_path):
    src, want = corpus
    marks = str(tmp_path / "marks")
    os.makedirs(marks)
    got, batches = run_job(src, str(tmp_path / "out"), marks, crash=True,
                           ray_remote_args={"resources": {"chunk": 1}, "max_restarts": 2, "max_task_retries": 2})
    node, pid = open(os.path.join(marks, "crashed")).read().split()
    assert node in cluster
    # The dead process chunked nothing; Ray restarted its actor on the same node (the only
    # free `chunk` slot), which took the batch again, and every document was chunked once.
    assert (node, int(pid)) not in batches
    assert any(n == node for n, _ in batches), batches.keys()
    docs = [doc for done in batches.values() for batch in done for doc in batch]
    assert sorted(docs) == sorted(want.column("doc_id").unique().to_pylist())
    ids = got.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == want.num_rows
    assert rows(got) == rows(want)
    assert vectors(got) == vectors(want)
