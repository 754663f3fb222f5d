"""The long-context architectures against sentence-transformers, side by side (issue 28, part 6).

RANDOM WEIGHTS at the real models' shapes (ModernBERT-base, nomic-embed-text-v1.5's NomicBERT,
Qwen3-Embedding-0.6B), made here with transformers' own classes and the fixtures' tokenizers
(tests/fixtures/models/ARCH: a small vocabulary; the embedding tables have the real size). They
measure speed and memory, not quality.

For each architecture and text length (128, 512 and 8,192 tokens: enough texts of that length
for about 8,192 tokens a pass, one text at 8,192), each round runs both, one after the other in
alternating order, each in a fresh process on the same CPU threads, in f32:
  - sentence-transformers: `encode` of all the texts in one batch (`torch.set_num_threads`);
  - seamcut: `seamcut embed` (its summary line times the embedding alone, as ST's is timed).
Both load the model before the clock starts. Printed and written (JSONL): tokens/s of each, their
ratio, each process's peak RSS (getrusage of the child), and the worst cosine between their
vectors.

    python benches/long_models_vs_st.py --seamcut target/release/seamcut \
        [--seamcut-before OLD_BUILD] [--seamcut-dtype f32|bf16|int8] \
        [--archs modernbert,nomic_bert,qwen3] [--lengths 128,512,8192] [--rounds 2] \
        [--threads 2] [--models /tmp/seamcut-long-models] [--out results.jsonl]

`--seamcut-dtype` runs seamcut at that precision (sentence-transformers stays f32: the
memory targets of issue 39 §2 are against torch's f32). `--seamcut-before` adds a second seamcut build (an earlier commit's) to every round, in the
rotation, for a before/after ratio measured side by side.

Needs torch, transformers 5 and sentence-transformers (benches/requirements-bench.txt).
"""
import argparse
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "models")

# The published models' shapes.
SHAPES = {
    "modernbert": dict(hidden_size=768, intermediate_size=1152, num_hidden_layers=22, num_attention_heads=12,
                       vocab_size=50368, local_attention=128, global_attn_every_n_layers=3,
                       global_rope_theta=160000.0, local_rope_theta=10000.0, max_position_embeddings=8192),
    "nomic_bert": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                       vocab_size=30528, max_position_embeddings=8192, type_vocab_size=2, hidden_act="silu",
                       rope_parameters={"rope_type": "default", "rope_theta": 1000.0}, layer_norm_eps=1e-12),
    "qwen3": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                  num_key_value_heads=8, head_dim=128, vocab_size=151669, max_position_embeddings=32768,
                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, rms_norm_eps=1e-6,
                  tie_word_embeddings=True),
}
PARAMS = {"modernbert": "ModernBERT-base", "nomic_bert": "nomic-embed-text-v1.5", "qwen3": "Qwen3-Embedding-0.6B"}


def make_model(arch, out):
    """A sentence-transformers directory at `arch`'s real shape, random weights (seeded), with the
    fixture's tokenizer and modules."""
    import torch
    import transformers

    if os.path.isfile(os.path.join(out, "model.safetensors")):
        return out
    src = os.path.join(FIXTURES, arch)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg.update(SHAPES[arch])
    cls = {"modernbert": ("ModernBertConfig", "ModernBertModel"), "nomic_bert": ("NomicBertConfig", "NomicBertModel"),
           "qwen3": ("Qwen3Config", "Qwen3Model")}[arch]
    config = getattr(transformers, cls[0])(**{k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version", "model_type", "dtype", "torch_dtype", "layer_types", "head_dim") or k in SHAPES[arch]})
    torch.manual_seed(0)
    model = getattr(transformers, cls[1])(config)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for f in os.listdir(src):
        if f in ("config.json", "model.safetensors", "tokens.npy", "pooled.npy", "expected.json", "prompted.json"):
            continue
        p = os.path.join(src, f)
        (shutil.copytree if os.path.isdir(p) else shutil.copy)(p, os.path.join(out, f))
    # The window: the longest length measured.
    with open(os.path.join(out, "sentence_bert_config.json")) as f:
        sb = json.load(f)
    sb["max_seq_length"] = 8192
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump(sb, f)
    n = sum(p.numel() for p in model.parameters())
    print(f"{arch}: {n / 1e6:.0f}M parameters (random, {PARAMS[arch]}'s shape) in {out}", file=sys.stderr)
    return out


def texts_of(model_dir, length, count):
    """`count` texts of random words, each cut to `length` tokens with the special tokens."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    specials = len(tok.encode("a").ids) - len(tok.encode("a", add_special_tokens=False).ids)
    rnd = random.Random(length)
    words = ("retrieval chunk sentence embedding model vector similarity boundary document corpus token index "
             "search query answer river mountain city music history science garden kitchen").split()
    out = []
    for _ in range(count):
        text = " ".join(rnd.choice(words) for _ in range(length * 2))
        enc = tok.encode(text, add_special_tokens=False)
        end = enc.offsets[length - specials - 1][1]
        out.append(text[:end])
    return out


ST_WORKER = r"""
import json, sys, time, torch
import numpy as np
from sentence_transformers import SentenceTransformer
torch.set_num_threads(int(sys.argv[3]))
st = SentenceTransformer(sys.argv[1], device="cpu")
texts = open(sys.argv[2], encoding="utf-8").read().split("\n")
tokens = sum(len(st.tokenizer(t, truncation=True, max_length=st.max_seq_length)["input_ids"]) for t in texts)
t0 = time.perf_counter()
with torch.inference_mode():
    v = st.encode(texts, batch_size=len(texts), normalize_embeddings=True)
secs = time.perf_counter() - t0
np.save(sys.argv[4], v.astype(np.float32))
print(json.dumps({"tokens": tokens, "seconds": secs, "attn": st[0].auto_model.config._attn_implementation}))
"""


def child(cmd, env=None):
    """Run `cmd`: its stdout, stderr and its own peak RSS in bytes (the kernel's accounting of that
    one child, from wait4; the output goes through files so that nothing blocks on a pipe)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        o, e = out.read(), err.read()
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}): {e[-2000:]}")
    return o, e, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seamcut", default=os.path.join(ROOT, "target", "release", "seamcut"))
    ap.add_argument("--seamcut-before", help="an earlier build, run beside the others in every round")
    ap.add_argument("--seamcut-dtype", default="f32")
    ap.add_argument("--archs", default="modernbert,nomic_bert,qwen3")
    ap.add_argument("--lengths", default="128,512,8192")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default=os.path.join(tempfile.gettempdir(), "seamcut-long-models"))
    ap.add_argument("--out")
    a = ap.parse_args()
    import numpy as np

    rows = []
    work = tempfile.mkdtemp()
    for arch in a.archs.split(","):
        model = os.path.join(a.models, arch)
        # Made in a process of its own: a child's peak RSS (wait4) starts from its parent's
        # high-water mark, which holding the random model here would raise to its size.
        maker = multiprocessing.get_context("spawn").Process(target=make_model, args=(arch, model))
        maker.start()
        maker.join()
        if maker.exitcode != 0:
            raise SystemExit(f"making the {arch} model failed ({maker.exitcode})")
        for length in [int(x) for x in a.lengths.split(",")]:
            count = max(1, 8192 // length)
            path = os.path.join(work, f"{arch}-{length}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(texts_of(model, length, count)))
            for r in range(a.rounds):
                res = {}
                order = ["st", "seamcut"] + (["seamcut_before"] if a.seamcut_before else [])
                order = order[r % len(order):] + order[:r % len(order)]
                for who in order:
                    npy = os.path.join(work, f"{who}.npy")
                    if who == "st":
                        out, _, peak = child([sys.executable, "-c", ST_WORKER, model, path, str(a.threads), npy])
                        j = json.loads(out.strip().splitlines()[-1])
                        res["st"] = {"tokens": j["tokens"], "seconds": j["seconds"]}
                    else:
                        env = {**os.environ, "RAYON_NUM_THREADS": str(a.threads)}
                        exe = a.seamcut if who == "seamcut" else a.seamcut_before
                        _, err, peak = child([exe, "embed", "--model", model, "--lines", path, "-o", npy,
                                           "--device", "cpu", "--dtype", a.seamcut_dtype], env=env)
                        line = [l for l in err.splitlines() if l.startswith("seamcut: ")][-1]
                        tokens = int(line.split(" token")[0].split(", ")[-1].replace(",", ""))
                        secs = float(line.split(" in ")[1].split(" s ")[0])
                        res[who] = {"tokens": tokens, "seconds": secs}
                    res[who]["peak_rss"] = peak
                    res[who]["vectors"] = np.load(npy)
                va, vb = res["st"].pop("vectors"), res["seamcut"].pop("vectors")
                res.get("seamcut_before", {}).pop("vectors", None)
                cos = float(((va * vb).sum(1) / np.linalg.norm(va, axis=1) / np.linalg.norm(vb, axis=1)).min())
                row = {"arch": arch, "shape": PARAMS[arch], "length": length, "texts": count, "round": r,
                       "seamcut_dtype": a.seamcut_dtype,
                       "threads": a.threads, "worst_cosine": cos}
                for who in [w for w in ("st", "seamcut", "seamcut_before") if w in res]:
                    row[f"{who}_tokens_per_s"] = res[who]["tokens"] / res[who]["seconds"]
                    row[f"{who}_peak_rss_mb"] = res[who]["peak_rss"] / 1e6
                row["speed_ratio"] = row["seamcut_tokens_per_s"] / row["st_tokens_per_s"]
                row["rss_ratio"] = row["seamcut_peak_rss_mb"] / row["st_peak_rss_mb"]
                if "seamcut_before" in res:
                    row["after_over_before"] = row["seamcut_tokens_per_s"] / row["seamcut_before_tokens_per_s"]
                print(json.dumps(row), flush=True)
                rows.append(row)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(json.dumps(row) + "\n")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
