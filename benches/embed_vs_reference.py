"""Embedding throughput, seamcut against the reference implementations, side by side.

    python benches/embed_vs_reference.py SENTENCES.txt [--threads 2] [--rounds 3]

Needs a Python with sentence-transformers (torch) and model2vec, a release build
(target/release/seamcut) and models/all-MiniLM-L6-v2 (models/fetch-minilm.sh). Rounds
alternate seamcut and the reference on the same sentences with the same thread count, so a
noisy machine affects both alike; the ratio of medians is what to report.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("SEAMCUT_BIN") or os.path.join(ROOT, "target", "release", "seamcut")


def seamcut(model, lines, threads):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = subprocess.run([BIN, "bench", "embed", "--model", model, "--lines", lines, "--runs", "1"],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lines")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    texts = open(a.lines, encoding="utf-8").read().split("\n")
    if texts and texts[-1] == "":
        texts.pop()

    import torch
    torch.set_num_threads(a.threads)
    from model2vec import StaticModel
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(os.path.join(ROOT, "models", "all-MiniLM-L6-v2"), device="cpu")
    st.encode(texts[:64])
    tokens = sum(len(x) for x in st.tokenizer(texts, truncation=True, max_length=st.max_seq_length)["input_ids"])
    m2v = StaticModel.from_pretrained(os.path.join(ROOT, "models", "default"))
    m2v.encode(texts[:64])

    res = {"minilm": {"seamcut": [], "reference": []}, "static": {"seamcut": [], "reference": []}}
    for r in range(a.rounds):
        s = seamcut("models/all-MiniLM-L6-v2", a.lines, a.threads)
        res["minilm"]["seamcut"].append(s["texts_per_s"])
        t0 = time.perf_counter()
        st.encode(texts, batch_size=32, normalize_embeddings=True)
        res["minilm"]["reference"].append(len(texts) / (time.perf_counter() - t0))
        s = seamcut("default", a.lines, a.threads)
        res["static"]["seamcut"].append(s["texts_per_s"])
        t0 = time.perf_counter()
        m2v.encode(texts)
        res["static"]["reference"].append(len(texts) / (time.perf_counter() - t0))
    print(f"{len(texts)} sentences, {tokens} MiniLM tokens, {a.threads} threads, {a.rounds} alternating rounds")
    for name, ref in [("minilm", "sentence-transformers (torch CPU)"), ("static", "model2vec StaticModel.encode")]:
        sc = statistics.median(res[name]["seamcut"])
        rf = statistics.median(res[name]["reference"])
        print(f"{name:7s} seamcut {sc:10.0f} texts/s | {ref} {rf:10.0f} texts/s | ratio {sc / rf:.2f}x")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
