"""Chonkie's LateChunker beside seamcut's late chunk vectors: its chunks and vectors for the
retrieval benchmark, and the speed of what an indexer runs, side by side.

    .venv-bench/bin/python benches/late_vs_chonkie.py chunks OUT_DIR TEXT... --model minilm|mpnet --cap 256
    .venv-bench/bin/python benches/late_vs_chonkie.py speed TEXT --model minilm [--rounds 3] [--mb 0.3]
        [--seamcut "NAME=--late-stride 254" ...]

`chunks` runs LateChunker(embedding_model=the model folder, chunk_size=CAP) (its
RecursiveChunker, then the mean of its token embeddings per chunk, tokens handed to chunks by
their counts) on each text and writes OUT_DIR/NAME.jsonl (text, byte start and end) and
OUT_DIR/NAME.npy (the vectors, L2-normalised so that ranking is by cosine, as for every other
row), which `seamcut eval retrieval --chunks NAME.jsonl --vectors NAME.npy` scores.

`speed` times, on the same text, alternating rounds (the machine is shared and noisy; compare
ratios of medians):
  - seamcut: `seamcut chunk TEXT --chunker maxmin --model M --unit-vectors late --embeddings late
    -o out.parquet` (seams and index vectors from one encoder pass), process start to exit,
    and each --seamcut variant (the same command with more flags: another stride, the recipe);
  - Chonkie SemanticChunker(chunk_size=256) then SentenceTransformer.encode of its chunks (what
    a Chonkie user runs to fill an index), model load included;
  - Chonkie LateChunker(chunk_size=256), model load included.
Needs benches/requirements-bench.txt in a venv, a release build, and the model folders
(models/fetch-minilm.sh, models/fetch-mpnet.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("SEAMCUT_BIN") or os.path.join(ROOT, "target", "release", "seamcut")
MODELS = {"minilm": os.path.join(ROOT, "models", "all-MiniLM-L6-v2"),
          "mpnet": os.path.join(ROOT, "models", "all-mpnet-base-v2")}


def byte_offsets(text):
    """Character index -> byte offset, for every index (and the end)."""
    out, at = [0] * (len(text) + 1), 0
    for i, ch in enumerate(text):
        out[i] = at
        at += len(ch.encode("utf-8"))
    out[len(text)] = at
    return out


def late_chunker(model, cap):
    from chonkie import LateChunker
    return LateChunker(embedding_model=MODELS[model], chunk_size=cap)


def cmd_chunks(a):
    import numpy as np
    os.makedirs(a.out, exist_ok=True)
    chunker = late_chunker(a.model, a.cap)
    for path in a.texts:
        name = os.path.splitext(os.path.basename(path))[0]
        text = open(path, encoding="utf-8").read()
        t0 = time.perf_counter()
        chunks = chunker.chunk(text)
        secs = time.perf_counter() - t0
        b = byte_offsets(text)
        with open(os.path.join(a.out, name + ".jsonl"), "w", encoding="utf-8") as f:
            for c in chunks:
                f.write(json.dumps({"text": c.text, "start": b[c.start_index], "end": b[c.end_index]}) + "\n")
        v = np.array([c.embedding for c in chunks], dtype=np.float32)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        np.save(os.path.join(a.out, name + ".npy"), v)
        print(json.dumps({"text": name, "chunks": len(chunks), "seconds": round(secs, 2)}), flush=True)


def read_text(path, mb):
    data = open(path, "rb").read()
    if mb and len(data) > mb * 1e6:
        cut = int(mb * 1e6)
        end = data.rfind(b"\n\n", 0, cut)
        data = data[: end + 2 if end > 0 else cut]
    return data.decode("utf-8", errors="ignore")


def cmd_speed(a):
    import torch
    torch.set_num_threads(a.threads)
    text = read_text(a.text, a.mb)
    mb = len(text.encode("utf-8")) / 1e6
    tmp = tempfile.mkdtemp()
    src = os.path.join(tmp, "text.txt")
    open(src, "w", encoding="utf-8").write(text)
    env = dict(os.environ, RAYON_NUM_THREADS=str(a.threads))

    def seamcut(extra):
        def run():
            out = os.path.join(tmp, "out.parquet")
            if os.path.exists(out):
                os.remove(out)
            t0 = time.perf_counter()
            mode = [] if "--embeddings" in extra else ["--embeddings", "late"]  # a variant's own mode
            subprocess.run([BIN, "chunk", src, "--chunker", "maxmin", "--model", MODELS[a.model],
                            "--unit-vectors", "late", "-o", out, "-q", "-j", str(a.threads)]
                           + mode + extra.split(), check=True, env=env)
            return time.perf_counter() - t0
        return run

    def semantic_then_encode():
        from chonkie import SemanticChunker
        from chonkie.embeddings import SentenceTransformerEmbeddings
        from sentence_transformers import SentenceTransformer
        t0 = time.perf_counter()
        st = SentenceTransformer(MODELS[a.model], device="cpu")
        chunks = SemanticChunker(embedding_model=SentenceTransformerEmbeddings(st), chunk_size=256).chunk(text)
        st.encode([c.text for c in chunks], batch_size=32)
        return time.perf_counter() - t0

    def chonkie_late():
        t0 = time.perf_counter()
        late_chunker(a.model, 256).chunk(text)
        return time.perf_counter() - t0

    # Each --seamcut NAME=FLAGS is one more seamcut row: the flags added to the command above.
    variants = [("seamcut", "")] + [tuple(v.split("=", 1)) for v in a.seamcut]
    who = [(n, seamcut(f)) for n, f in variants] + [
        ("chonkie_semantic_encode", semantic_then_encode), ("chonkie_late", chonkie_late)]
    runs = {n: [] for n, _ in who}
    for r in range(a.rounds):
        for name, f in who:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = f()
            runs[name].append(s)
            print(json.dumps({"round": r, "who": name, "seconds": round(s, 3), "mb": mb}), flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(json.dumps({"mb": mb, "median_seconds": med, "threads": a.threads, "model": a.model,
                      "flags": dict(variants)}))
    for n, _ in variants:
        print(json.dumps({"seamcut": n, "speedup_vs_semantic_encode": med["chonkie_semantic_encode"] / med[n],
                          "speedup_vs_late": med["chonkie_late"] / med[n]}))


def main():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chunks")
    c.add_argument("out")
    c.add_argument("texts", nargs="+")
    c.add_argument("--model", choices=sorted(MODELS), required=True)
    c.add_argument("--cap", type=int, required=True)
    s = sub.add_parser("speed")
    s.add_argument("text")
    s.add_argument("--model", choices=sorted(MODELS), default="minilm")
    s.add_argument("--rounds", type=int, default=3)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--mb", type=float, default=0)
    s.add_argument("--seamcut", action="append", default=[], metavar="NAME=FLAGS",
                   help="one more seamcut row: NAME, and flags added to its command")
    a = ap.parse_args()
    {"chunks": cmd_chunks, "speed": cmd_speed}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
