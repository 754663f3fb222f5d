"""The documents the Ray and Spark tests chunk: 40 documents of one to four paragraphs of
benches/data-sentences.txt, some with non-ASCII text (byte offsets differ from character
offsets), as one Parquet file with `id` and `text`; and the chunk columns they compare."""
import os

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def small_corpus(path):
    lines = open(os.path.join(ROOT, "benches", "data-sentences.txt"), encoding="utf-8").read().splitlines()
    ids, texts = [], []
    for i in range(40):
        paras = [" ".join(lines[(i * 17 + p * 6 + k) % len(lines)] for k in range(6)) for p in range(1 + i % 4)]
        ids.append(f"doc-{i}")
        texts.append("\n\n".join(paras) + ("\nCafé 🙂 ünïcode." if i % 5 == 0 else ""))
    pq.write_table(pa.table({"id": ids, "text": texts}), path)
