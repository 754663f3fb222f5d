"""The same corpus job through Spark (`seamcut.spark` on a local master) and through the CLI
on one machine: documents/s of each and Spark's overhead. A measurement, printed, never
asserted (tests/python/test_spark.py checks that the rows are the same).

    .venv-ci/bin/python benches/spark_vs_cli.py [--docs 4000] [--rounds 3] [--master local[2]] \\
        [--partitions 8] [--bin target/debug/seamcut]

Needs a seamcut wheel and pyspark in the venv (tests/run.sh installs both into .venv-ci) and
Java 17+. The CLI and the wheel should come from the same build profile (target/debug with
tests/run.sh's dev-profile wheel, or target/release with a release wheel): the ratio is what
this measures. The corpus: `--docs` documents of one to four paragraphs of
benches/data-sentences.txt (tests/python/test_ray.py's corpus, larger), one Parquet file. The
job, Max-Min with mean chunk vectors, written to Parquet:

    seamcut chunk corpus.parquet --chunker maxmin --embeddings mean -o out.parquet
    seamcut.spark.chunk_dataframe(spark.read.parquet(corpus).repartition(N, "id"),
                                  {"chunker": "maxmin"}, embeddings="mean").write.parquet(out)

Each round runs both, one after the other; the figures are the medians over `--rounds`. The
Spark session starts once (its start-up is printed apart, `spark_start_s`) and one untimed
Spark job first starts its Python workers and builds their chunkers (`spark_first_job_s`);
the CLI loads its model in every run, as a CLI job does. Spark's tasks use one seamcut thread
each (`spark.task.cpus`), the CLI one per core. Prints one JSON line.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def corpus(path, n):
    lines = open(os.path.join(ROOT, "benches", "data-sentences.txt"), encoding="utf-8").read().splitlines()
    ids, texts = [], []
    for i in range(n):
        paras = [" ".join(lines[(i * 17 + p * 6 + k) % len(lines)] for k in range(6)) for p in range(1 + i % 4)]
        ids.append(f"doc-{i}")
        texts.append("\n\n".join(paras) + ("\nCafé 🙂 ünïcode." if i % 5 == 0 else ""))
    pq.write_table(pa.table({"id": ids, "text": texts}), path)
    return sum(len(t.encode()) for t in texts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=4000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--partitions", type=int, default=8, help="Spark tasks the documents are spread over")
    p.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "seamcut"))
    a = p.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import seamcut.spark

    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "corpus.parquet")
        nbytes = corpus(src, a.docs)
        cli_out, spark_out = os.path.join(d, "cli.parquet"), os.path.join(d, "spark")

        def cli():
            subprocess.run([a.bin, "chunk", src, "--chunker", "maxmin", "--embeddings", "mean", "-o", cli_out,
                            "-q"], check=True)

        t0 = time.perf_counter()
        spark = (SparkSession.builder.master(a.master).appName("seamcut-bench")
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", str(a.partitions))
                 .config("spark.driver.memory", "2g")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        start_s = time.perf_counter() - t0

        def job():
            docs = spark.read.parquet(src).repartition(a.partitions, "id")
            chunks = seamcut.spark.chunk_dataframe(docs, {"chunker": "maxmin"}, embeddings="mean")
            chunks.write.mode("overwrite").parquet(spark_out)

        def timed(f):
            t = time.perf_counter()
            f()
            return time.perf_counter() - t

        try:
            first_s = timed(job)
            cli_s, spark_s = [], []
            for _ in range(a.rounds):
                cli_s.append(timed(cli))
                spark_s.append(timed(job))
        finally:
            spark.stop()
        rows_cli = pq.read_table(cli_out).num_rows
        rows_spark = pq.read_table(spark_out).num_rows
        assert rows_cli == rows_spark, (rows_cli, rows_spark)
        shutil.rmtree(spark_out)

    cli_med, spark_med = statistics.median(cli_s), statistics.median(spark_s)
    print(json.dumps({
        "docs": a.docs,
        "mb": round(nbytes / 1e6, 2),
        "chunks": rows_cli,
        "master": a.master,
        "partitions": a.partitions,
        "cli_s": [round(t, 2) for t in cli_s],
        "spark_s": [round(t, 2) for t in spark_s],
        "cli_docs_per_s": round(a.docs / cli_med),
        "spark_docs_per_s": round(a.docs / spark_med),
        "spark_overhead": round(spark_med / cli_med - 1, 2),  # extra time over the CLI's, as a fraction
        "spark_start_s": round(start_s, 2),
        "spark_first_job_s": round(first_s, 2),
    }))


if __name__ == "__main__":
    main()
