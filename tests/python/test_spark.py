"""seamcut.spark on a local Spark (local[2]): the chunks are the CLI's, row for row; a task
that fails once and is retried leaves no duplicate rows in the Parquet Spark writes; each
Python worker builds its chunker once, however many batches it chunks. Needs pyspark and a
Java runtime (tests/run.sh installs one where it is missing)."""
import glob
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("pyspark needs a Java runtime", allow_module_level=True)

from pyspark import TaskContext  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import seamcut  # noqa: E402
import seamcut.spark  # noqa: E402
from corpora import small_corpus  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

COLUMNS = ["id", "doc_id", "index", "start", "end", "text", "tokens", "sentences", "context"]
PARAMS = {"chunker": "maxmin"}


def rows(table):
    d = table.select(COLUMNS).to_pydict()
    return sorted(zip(*(d[c] for c in COLUMNS)))


def vectors(table):
    return {r["id"]: r["embedding"] for r in table.select(["id", "embedding"]).to_pylist()}


def read_dir(path):
    files = sorted(glob.glob(os.path.join(path, "*.parquet")))
    assert files, f"no Parquet files in {path}"
    return pa.concat_tables([pq.read_table(f) for f in files])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus and the CLI's chunks of it (Max-Min, mean embeddings)."""
    d = tmp_path_factory.mktemp("spark-corpus")
    src = str(d / "corpus.parquet")
    small_corpus(src)
    out = str(d / "cli.parquet")
    subprocess.run([BIN, "chunk", src, "--chunker", "maxmin", "--embeddings", "mean", "-o", out, "-q"], check=True)
    return src, pq.read_table(out)


@pytest.fixture(scope="module")
def spark():
    # Local workers run this interpreter (the one with seamcut), not `python3` off the PATH.
    old = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,4]")  # two task slots; a task may fail 3 times and be retried
        .appName("seamcut-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # Several Arrow batches per task, so that a chunker built per batch would show.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    if old is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = old


def documents(spark, src):
    # Four tasks (hashed by id: the same split on every run and every retry).
    return spark.read.parquet(src).repartition(4, "id")


def test_the_chunks_are_the_clis(spark, corpus, tmp_path):
    src, want = corpus
    out = str(tmp_path / "chunks")
    chunks = seamcut.spark.chunk_dataframe(documents(spark, src), PARAMS, embeddings="mean")
    assert chunks.schema == seamcut.spark.chunk_schema(PARAMS, embeddings="mean")
    assert chunks.columns == COLUMNS + ["embedding"]
    chunks.write.parquet(out)
    got = read_dir(out)
    assert got.num_rows == want.num_rows > 40
    assert rows(got) == rows(want)
    # The vectors too, chunk for chunk (float32 through Spark's array<float>, exactly).
    assert vectors(got) == vectors(want)
    # The example script runs the same job: the same rows again.
    script_out = str(tmp_path / "script")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "spark_corpus.py"), src, script_out,
                        "--chunker", "maxmin", "--embeddings", "mean", "--master", "local[2]", "--partitions", "3"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    again = read_dir(script_out)
    assert rows(again) == rows(want) and vectors(again) == vectors(want)


def test_a_retried_task_leaves_no_duplicates(spark, corpus, tmp_path):
    src, want = corpus
    marks = str(tmp_path / "marks")
    os.makedirs(marks)

    def flaky(batches):
        # The first attempt of partition 1 dies after its first batch of chunks has gone to
        # the writer; Spark runs the task again.
        ctx = TaskContext.get()
        for out in seamcut.spark.chunk_batches(batches, PARAMS, embeddings="mean"):
            yield out
            if ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
                open(os.path.join(marks, "failed"), "w").close()
                raise RuntimeError("injected failure: the first attempt of partition 1")
        open(os.path.join(marks, f"done-{ctx.partitionId()}-{ctx.attemptNumber()}"), "w").close()

    out = str(tmp_path / "chunks")
    chunks = documents(spark, src).mapInArrow(flaky, seamcut.spark.chunk_schema(PARAMS, embeddings="mean"))
    chunks.write.parquet(out)
    done = sorted(os.listdir(marks))
    # The failure happened, and the retry (attempt 1) finished the partition.
    assert "failed" in done and "done-1-1" in done and "done-1-0" not in done, done
    got = read_dir(out)
    ids = got.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == want.num_rows
    assert rows(got) == rows(want)
    assert vectors(got) == vectors(want)


def test_one_chunker_per_python_worker(spark, corpus, tmp_path):
    src, want = corpus
    marks = str(tmp_path / "marks")
    os.makedirs(marks)
    # Parameters no other test uses, so that every worker builds this chunker here.
    params = {"chunker": "maxmin", "max_tokens": 200}

    def counted(batches):
        # Count every seamcut.Chunker this worker process builds (the wrapper is put in once
        # per process) and every batch each task chunks, by process id.
        if not getattr(seamcut.Chunker, "_counting", False):
            init = seamcut.Chunker.__init__

            def counting_init(self, *args, **kwargs):
                with open(os.path.join(marks, f"built-{os.getpid()}"), "a") as f:
                    f.write(f"{kwargs}\n")
                init(self, *args, **kwargs)

            seamcut.Chunker.__init__ = counting_init
            seamcut.Chunker._counting = True
        seen = 0

        def counting(it):
            nonlocal seen
            for batch in it:
                seen += 1
                yield batch

        yield from seamcut.spark.chunk_batches(counting(batches), params)
        with open(os.path.join(marks, f"batches-{os.getpid()}"), "a") as f:
            f.write(f"{TaskContext.get().partitionId()} {seen}\n")

    n = documents(spark, src).mapInArrow(counted, seamcut.spark.chunk_schema(params)).count()
    assert n > 40
    names = os.listdir(marks)
    pids = {name.split("-")[1] for name in names if name.startswith("batches-")}
    batches = {}
    for pid in pids:
        tasks = [line.split() for line in open(os.path.join(marks, f"batches-{pid}"))]
        batches[pid] = sum(int(seen) for _, seen in tasks)
        # This process built the chunker exactly once, for all its tasks' batches.
        built = open(os.path.join(marks, f"built-{pid}")).read().splitlines()
        assert len(built) == 1, (pid, built, tasks)
    # 40 documents in batches of at most 4: every document went through, in more batches
    # than there were processes (a chunker built per batch or per task would have shown).
    assert sum(batches.values()) >= 10 > len(pids) >= 1, batches
    assert {name for name in names if name.startswith("built-")} == {f"built-{pid}" for pid in pids}
