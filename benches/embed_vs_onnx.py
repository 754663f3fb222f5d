"""The encoder side by side with ONNX Runtime (f32, and int8 from `quantize_dynamic`, what
fastembed ships) and sentence-transformers (torch f32), on the same texts, the same thread
count, engines alternating within each round; median texts/s over rounds, and each engine's
worst and mean cosine to sentence-transformers' vectors.

    python benches/embed_vs_onnx.py PARAGRAPHS.txt [--model models/all-MiniLM-L6-v2]
        [--threads 2] [--rounds 3] [--seamcut-dtypes f32,int8] [--out FILE.jsonl]
        [--before PATH/TO/seamcut]

`--before` adds another seamcut build (an earlier commit's) at each of the dtypes, in the same
rounds, for a before-and-after beside the peers.

Needs a Python with torch, sentence-transformers, onnx and onnxruntime, a release build
(target/release/seamcut) and the model folder. The ONNX files are exported here once (into
target/onnx/NAME/) with torch.onnx.export from the same weights. seamcut's figure is
`seamcut embed` end to end (process start, model load and the .npy write included); the
Python engines time the encode call alone, with the model loaded.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("SEAMCUT_BIN") or os.path.join(ROOT, "target", "release", "seamcut")


def export(model_dir, out_dir):
    """model.onnx (f32) and model-int8.onnx (quantize_dynamic, per tensor, as fastembed)."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    f32, i8 = os.path.join(out_dir, "model.onnx"), os.path.join(out_dir, "model-int8.onnx")
    if os.path.exists(f32) and os.path.exists(i8):
        return f32, i8
    os.makedirs(out_dir, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(model_dir)
    inner = AutoModel.from_pretrained(model_dir).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    enc = tok(["a sentence", "another one here"], padding=True, return_tensors="pt")
    args = (enc["input_ids"], enc["attention_mask"])
    torch.onnx.export(Wrapped().eval(), args, f32, input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"},
                                    "last_hidden_state": {0: "b", 1: "s"}}, opset_version=17, dynamo=False)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(f32, i8, weight_type=QuantType.QInt8)
    return f32, i8


def mean_pool(h, mask):
    m = mask[..., None].astype(np.float32)
    v = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def ort_engine(path, tok, threads, max_len):
    import onnxruntime as ort
    o = ort.SessionOptions()
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])

    def run(texts):
        out = []
        # Length-sorted batches of 32, as sentence-transformers batches.
        order = np.argsort([-len(t) for t in texts])
        vecs = [None] * len(texts)
        for i in range(0, len(texts), 32):
            idx = order[i:i + 32]
            enc = tok([texts[j] for j in idx], padding=True, truncation=True, max_length=max_len, return_tensors="np")
            h = s.run(None, {"input_ids": enc["input_ids"].astype(np.int64),
                             "attention_mask": enc["attention_mask"].astype(np.int64)})[0]
            for j, v in zip(idx, mean_pool(h, enc["attention_mask"])):
                vecs[j] = v
        return np.stack(vecs)
    return run


def seamcut_engine(model_dir, lines, threads, dtype, binary=BIN):
    def run(_texts):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "v.npy")
            env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
            subprocess.run([binary, "embed", "--model", model_dir, "--lines", lines, "-o", out, "--dtype", dtype],
                           check=True, capture_output=True, env=env)
            return np.load(out)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lines")
    ap.add_argument("--model", default="models/all-MiniLM-L6-v2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seamcut-dtypes", default="f32,int8")
    ap.add_argument("--out")
    ap.add_argument("--before")
    a = ap.parse_args()
    texts = open(a.lines, encoding="utf-8").read().split("\n")
    if texts and texts[-1] == "":
        texts.pop()
    import torch
    torch.set_num_threads(a.threads)
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer
    st = SentenceTransformer(os.path.abspath(a.model), device="cpu")
    tok = AutoTokenizer.from_pretrained(a.model)
    name = os.path.basename(os.path.normpath(a.model))
    f32, i8 = export(a.model, os.path.join(ROOT, "target", "onnx", name))
    engines = {"sentence-transformers f32": lambda t: st.encode(t, batch_size=32, normalize_embeddings=True)}
    engines["onnxruntime f32"] = ort_engine(f32, tok, a.threads, st.max_seq_length)
    engines["onnxruntime int8 (quantize_dynamic)"] = ort_engine(i8, tok, a.threads, st.max_seq_length)
    for d in a.seamcut_dtypes.split(","):
        engines[f"seamcut {d}"] = seamcut_engine(a.model, a.lines, a.threads, d)
        if a.before:
            engines[f"seamcut before {d}"] = seamcut_engine(a.model, a.lines, a.threads, d, a.before)
    times = {k: [] for k in engines}
    vecs = {}
    for r in range(a.rounds):
        for k, run in engines.items():
            t = time.perf_counter()
            v = run(texts)
            times[k].append(time.perf_counter() - t)
            vecs[k] = np.asarray(v, dtype=np.float32)
    ref = vecs["sentence-transformers f32"]
    ref = ref / np.maximum(np.linalg.norm(ref, axis=1, keepdims=True), 1e-12)
    base = len(texts) / statistics.median(times["sentence-transformers f32"])
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"{name}, {len(texts)} texts, {a.threads} threads, median of {a.rounds}, CPU {cpu}")
    print("| engine | texts/s | × sentence-transformers | worst cosine | mean cosine |")
    print("|---|---|---|---|---|")
    for k in engines:
        v = vecs[k] / np.maximum(np.linalg.norm(vecs[k], axis=1, keepdims=True), 1e-12)
        c = (v * ref).sum(1)
        tps = len(texts) / statistics.median(times[k])
        print(f"| {k} | {tps:.1f} | {tps / base:.2f} | {c.min():.4f} | {c.mean():.5f} |")
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps({"engine": k, "model": name, "texts": len(texts), "threads": a.threads,
                                    "seconds": times[k], "texts_per_s": tps, "worst_cos": float(c.min()),
                                    "mean_cos": float(c.mean()), "cpu": cpu}) + "\n")


if __name__ == "__main__":
    main()
