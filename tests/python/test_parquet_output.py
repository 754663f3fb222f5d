"""pyarrow reads seamcut's Parquet output: the schema indexers expect, offsets that slice
the documents, carried metadata, and embeddings that equal `seamcut embed` of the chunk texts
(reembed) or the normalised mean of the unit vectors (mean, checked through `seamcut embed`
of the units that `seamcut chunk` reports)."""
import hashlib
import json
import os
import struct
import subprocess
import tempfile

import numpy as np
import pyarrow.parquet as pq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))


def chunk_id(doc_id, start, end, text):
    """The id every seamcut chunk record and database row carries, as documented: the first
    16 bytes of SHA-256 over the document id's length and bytes, the offsets and the text's
    SHA-256, in hex. A loader can recompute it."""
    d = doc_id.encode()
    h = hashlib.sha256(struct.pack("<Q", len(d)) + d + struct.pack("<QQ", start, end)
                       + hashlib.sha256(text.encode()).digest())
    return h.hexdigest()[:32]


def run(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True).stdout


def corpus(d):
    lines = open(os.path.join(ROOT, "benches", "data-sentences.txt"), encoding="utf-8").read().splitlines()
    path = os.path.join(d, "docs.jsonl")
    docs = {}
    with open(path, "w", encoding="utf-8") as f:
        for i in range(20):
            text = "\n\n".join(" ".join(lines[i * 20 + p * 5:i * 20 + p * 5 + 5]) for p in range(4)) + "\n"
            docs[f"d{i}"] = text
            f.write(json.dumps({"id": f"d{i}", "text": text, "lang": "en" if i % 2 else "xx"}) + "\n")
    return path, docs


def embed(d, texts):
    src, out = os.path.join(d, "lines.txt"), os.path.join(d, "v.npy")
    with open(src, "w", encoding="utf-8") as f:
        f.write("\n".join(t.replace("\n", " ") for t in texts) + "\n")
    run("embed", "--lines", src, "-o", out, "-q")
    return np.load(out)


def test_parquet_schema_offsets_metadata_and_reembed():
    with tempfile.TemporaryDirectory() as d:
        path, docs = corpus(d)
        out = os.path.join(d, "chunks.parquet")
        run("chunk", path, "--chunker", "recursive", "--max-tokens", "64", "--meta-field", "lang",
            "--embeddings", "reembed", "-o", out, "-q")
        t = pq.read_table(out)
        assert t.column_names == ["id", "doc_id", "index", "start", "end", "text", "tokens", "sentences", "context", "lang", "embedding"]
        rows = t.to_pylist()
        assert len(rows) > 20
        for r in rows:
            b = docs[r["doc_id"]].encode()
            assert b[r["start"]:r["end"]].decode() == r["text"]
            assert r["tokens"] <= 64
            assert r["lang"] == ("en" if int(r["doc_id"][1:]) % 2 else "xx")
            assert r["id"] == chunk_id(r["doc_id"], r["start"], r["end"], r["text"])
        emb = np.array([r["embedding"] for r in rows], dtype=np.float32)
        # Newlines do not change WordPiece tokens, so the chunk texts embed alike on one line.
        want = embed(d, [r["text"] for r in rows])
        cos = (emb * want).sum(axis=1)
        assert cos.min() > 1 - 1e-5, cos.min()


def test_mean_embeddings_are_normalised_unit_means():
    with tempfile.TemporaryDirectory() as d:
        path, docs = corpus(d)
        out = os.path.join(d, "chunks.parquet")
        run("chunk", path, "--chunker", "maxmin", "--splitter", "segmenter", "--embeddings", "mean", "-o", out, "-q")
        rows = pq.read_table(out).to_pylist()
        # The units of each chunk are the sentences `seamcut segment` prints inside it.
        sents = [json.loads(l) for l in run("segment", path).splitlines()]
        groups = [[s for s in sents if s["doc_id"] == r["doc_id"] and r["start"] <= s["start"] < r["end"]]
                  for r in rows[:30]]
        v = embed(d, [u["text"] for g in groups for u in g])
        at = 0
        for r, g in zip(rows, groups):
            m = v[at:at + len(g)].mean(axis=0)
            at += len(g)
            m /= np.linalg.norm(m)
            assert float(np.dot(m, np.array(r["embedding"], dtype=np.float32))) > 1 - 1e-5
        assert at == len(v) and len(groups) == min(30, len(rows))
