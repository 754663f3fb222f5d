"""Semantic chunking throughput, seamcut's corpus job against Chonkie's SemanticChunker.

    .venv-bench/bin/python benches/chunk_vs_chonkie.py TEXT_FILE --model static|minilm \
        [--rounds 3] [--threads 2] [--mb N] [--seamcut-args "--dtype bf16"]

Needs the packages in benches/requirements-bench.txt (a venv: python -m venv .venv-bench &&
.venv-bench/bin/pip install -r benches/requirements-bench.txt), a release build
(target/release/seamcut), and for --model minilm models/all-MiniLM-L6-v2 (fetched with
models/fetch-minilm.sh when missing). Both sides use the same model folder: `static` is
models/default (model2vec StaticModel on Chonkie's side), `minilm` is models/all-MiniLM-L6-v2
(SentenceTransformer on CPU). seamcut runs `seamcut chunk TEXT --chunker maxmin`, timed from
process start to exit (model load included); Chonkie runs SemanticChunker(chunk_size=256, other
defaults), timed as model load + chunker.chunk(text), with the load also shown alone. Both
cap chunks at 256 tokens of the model's tokenizer. --mb N keeps the first N MB (10^6 bytes) of
the text, cut at a paragraph break (else a line break); use ~0.5-1 MB for minilm, where Chonkie
embeds every sentence W+1 = 4 times. Rounds alternate the two on the same text with the same
thread count, so a noisy machine affects both alike; report the ratio of the medians (the last
line's `speedup`, seamcut MB/s over Chonkie MB/s). The chunk counts and mean chunk tokens show
both did comparable work; they are not the same algorithm, so the counts differ.
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
MODEL_DIR = {"static": os.path.join(ROOT, "models", "default"),
             "minilm": os.path.join(ROOT, "models", "all-MiniLM-L6-v2")}


def read_text(path, mb):
    data = open(path, "rb").read()
    if mb and len(data) > mb * 1e6:
        cut = int(mb * 1e6)
        end = data.rfind(b"\n\n", 0, cut)
        end = end + 2 if end > 0 else data.rfind(b"\n", 0, cut) + 1
        data = data[:end if end > 0 else cut]
    return data.decode("utf-8", errors="ignore")


def run_seamcut(path, out, model, threads, extra=""):
    if os.path.exists(out):
        os.remove(out)
    cmd = [BIN, "chunk", path, "--chunker", "maxmin", "-o", out, "-q", "-j", str(threads)]
    if model == "minilm":
        cmd += ["--model", "all-MiniLM-L6-v2"]
    cmd += extra.split()
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=dict(os.environ, RAYON_NUM_THREADS=str(threads)))
    return time.perf_counter() - t0


def load_chonkie(model):
    from chonkie import SemanticChunker
    if model == "static":
        from chonkie.embeddings import Model2VecEmbeddings
        from model2vec import StaticModel
        emb = Model2VecEmbeddings(StaticModel.from_pretrained(MODEL_DIR["static"]))
    else:
        from chonkie.embeddings import SentenceTransformerEmbeddings
        from sentence_transformers import SentenceTransformer
        emb = SentenceTransformerEmbeddings(SentenceTransformer(MODEL_DIR["minilm"], device="cpu"))
    return SemanticChunker(embedding_model=emb, chunk_size=256)


def setup():
    """The arguments both side-by-side scripts take, and the environment they run in: every
    library's thread count set to --threads, the hub offline, MiniLM fetched if missing."""
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("--model", choices=["static", "minilm"], required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mb", type=float, default=0)
    ap.add_argument("--seamcut-args", default="", help="more flags for seamcut chunk, e.g. --dtype bf16")
    a = ap.parse_args()
    for var in ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS",
                "RAYON_RS_NUM_CPUS"]:
        os.environ[var] = str(a.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    warnings.filterwarnings("ignore", category=FutureWarning)
    if a.model == "minilm" and not os.path.exists(os.path.join(MODEL_DIR["minilm"], "model.safetensors")):
        subprocess.run(["bash", os.path.join(ROOT, "models", "fetch-minilm.sh")], check=True)
    return a


def main():
    a = setup()
    # Imports stay outside the timings (the interpreter and libraries are up; the model is not).
    import chonkie
    if a.model == "minilm":
        import sentence_transformers  # noqa: F401
        import torch
        torch.set_num_threads(a.threads)
    else:
        import model2vec  # noqa: F401

    text = read_text(a.text, a.mb)
    mb = len(text.encode("utf-8")) / 1e6
    tmp = tempfile.mkdtemp()
    path, out = os.path.join(tmp, "text.txt"), os.path.join(tmp, "out.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{a.text}: {mb:.3f} MB, model {a.model}, {a.threads} threads, {a.rounds} alternating rounds, "
          f"chonkie {chonkie.__version__}", flush=True)

    sc, ck, ld = [], [], []
    for r in range(a.rounds):
        sc.append(run_seamcut(path, out, a.model, a.threads, a.seamcut_args))
        t0 = time.perf_counter()
        chunker = load_chonkie(a.model)
        t1 = time.perf_counter()
        chunks = chunker.chunk(text)
        t2 = time.perf_counter()
        ck.append(t2 - t0)
        ld.append(t1 - t0)
        print(f"round {r + 1}: seamcut {sc[-1]:8.2f} s | chonkie {ck[-1]:8.2f} s (load {ld[-1]:.2f} s)", flush=True)

    recs = [json.loads(line) for line in open(out, encoding="utf-8")]
    s_tok = [x["tokens"] for x in recs]
    c_tok = [c.token_count for c in chunks]
    if "".join(c.text for c in chunks) != text:
        print("warning: chonkie's chunks do not join back to the text", file=sys.stderr)
    if sum(x["end"] - x["start"] for x in recs) != len(text.encode("utf-8")):
        print("note: seamcut's chunk spans do not add up to the text's bytes", file=sys.stderr)
    res = {"model": a.model, "seamcut_args": a.seamcut_args, "mb": round(mb, 4), "threads": a.threads, "rounds": a.rounds,
           "seamcut_s": statistics.median(sc), "chonkie_s": statistics.median(ck),
           "chonkie_load_s": statistics.median(ld)}
    res["seamcut_mb_s"] = mb / res["seamcut_s"]
    res["chonkie_mb_s"] = mb / res["chonkie_s"]
    res["speedup"] = res["seamcut_mb_s"] / res["chonkie_mb_s"]
    res.update(seamcut_chunks=len(recs), seamcut_mean_tokens=statistics.fmean(s_tok) if s_tok else 0,
               chonkie_chunks=len(chunks), chonkie_mean_tokens=statistics.fmean(c_tok) if c_tok else 0)
    print(f"seamcut {res['seamcut_mb_s']:.3f} MB/s, {len(recs)} chunks, mean {res['seamcut_mean_tokens']:.1f} tokens | "
          f"chonkie {res['chonkie_mb_s']:.3f} MB/s, {len(chunks)} chunks, mean {res['chonkie_mean_tokens']:.1f} tokens | "
          f"speedup {res['speedup']:.2f}x")
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in res.items()}))


if __name__ == "__main__":
    main()
