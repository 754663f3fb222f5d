#!/usr/bin/env python3
"""The device benchmark of issue 10, one script for one run on a GPU machine (benches/gpu/run.sh
sets it up): correctness first, then timing. Everything it reads travels with the repo or in
.gpu-carry/ (benches/gpu/prepare.sh: the binary and MiniLM's tokenizer files); texts are generated
here from the repo's sample sentences, models with transformers.

  correctness  GPU embeddings in f32, f16 and bf16 against the CPU's (cosine per text, 500
               texts); chunk boundaries on the GPU against the CPU's for Max-Min and the global
               rule on a fixed document set.
  timing       (i) seamcut tokens/s, MiniLM and a base-size BERT (shapes of all-MiniLM-L6-v2 and
               bert-base, random weights made here with transformers: real weights do not fit the
               carry beside the binary), several token budgets, f16 and bf16; (ii) sentence-transformers
               fp16 on the same texts; (iii) bands and rules against encoder time in a corpus job;
               (iv) end-to-end MB/s on a generated corpus (up to 200 MB) and the device's idle
               share.

With --device cpu (a dry run on a machine without a GPU) the same steps run on the CPU at small
sizes, bf16 and sentence-transformers skipped where unavailable. Prints a log and writes
results.json to --out.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RESULTS = {}
# The run's clock starts in run.sh (SEAMCUT_T0), before unpacking and the first call.
START = float(os.environ.get("SEAMCUT_T0") or time.time())
# The device run gets 10 minutes in all: steps past DEADLINE seconds are skipped, not started,
# and no subprocess may run past TOTAL (time is left to copy $OUT back).
# run.sh passes the call's limit (SEAMCUT_BUDGET_S, 600 s by default; the device tool may
# grant less when its budget is partly spent).
BUDGET = float(os.environ.get("SEAMCUT_BUDGET_S") or 600)
DEADLINE = BUDGET - 120
TOTAL = BUDGET - 30
OUT_DIR = None


def late(what):
    if time.time() - START > DEADLINE:
        log(f"skipped (past {DEADLINE} s): {what}")
        return True
    return False


def log(*a):
    print(*a, flush=True)


def save():
    """results.json as it stands: written after every step, so a run cut short keeps what it measured."""
    if OUT_DIR:
        # A temporary name and a rename: a kill mid-write keeps the previous results.
        path = os.path.join(OUT_DIR, "results.json")
        with open(path + ".tmp", "w") as f:
            json.dump(RESULTS, f, indent=1)
        os.replace(path + ".tmp", path)


def run(cmd, **kw):
    t = time.time()
    left = max(5.0, TOTAL - (t - START))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=left, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return p.stdout, p.stderr, time.time() - t


def sentences():
    with open(os.path.join(REPO, "benches/data-sentences.txt"), encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip()]


def texts(n, seed):
    """n texts of 1-6 sample sentences each (about 15-200 tokens)."""
    s, rng = sentences(), random.Random(seed)
    return [" ".join(rng.choice(s) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def documents(n, seed):
    """n documents of 3-9 paragraphs of 2-6 sentences, as JSONL records."""
    s, rng = sentences(), random.Random(seed)
    docs = []
    for d in range(n):
        paras = [" ".join(rng.choice(s) for _ in range(rng.randint(2, 6))) for _ in range(rng.randint(3, 9))]
        docs.append({"id": f"doc-{d:04d}", "text": "\n\n".join(paras) + "\n"})
    return docs


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def embed(args, model, device, dtype, lines_path, out):
    _, err, secs = run([args.bin, "embed", "--model", model, "--device", device, "--dtype", dtype,
                        "--lines", lines_path, "-o", out])
    return np.load(out), secs


def correctness(args, work, dtypes):
    log("\n== correctness")
    lines = texts(args.texts, 1)
    lp = os.path.join(work, "fixed.txt")
    write_lines(lp, lines)
    res = {}
    RESULTS["correctness"] = res
    ref, _ = embed(args, args.model, "cpu", "f32", lp, os.path.join(work, "cpu.npy"))
    for dt in dtypes:
        try:
            got, secs = embed(args, args.model, args.device, dt, lp, os.path.join(work, f"dev-{dt}.npy"))
        except Exception as e:  # one dtype failing does not cost the others or the boundaries
            res[dt] = {"error": str(e)[-500:], "pass": False}
            log(f"embeddings {args.device}/{dt}: failed: {e}")
            save()
            continue
        cos = np.sum(got * ref, axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
        ok = bool(cos.min() >= 0.999)
        res[dt] = {"texts": len(lines), "min_cos": float(cos.min()), "mean_cos": float(cos.mean()), "pass": ok}
        log(f"embeddings {args.device}/{dt} vs cpu/f32 on {len(lines)} texts: min cos {cos.min():.6f} "
            f"mean {cos.mean():.6f} -> {'PASS' if ok else 'FAIL'}")
        save()
    docs = documents(args.docs, 2)
    dp = os.path.join(work, "docs.jsonl")
    with open(dp, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    # On a GPU the comparison run takes its bands on the host; on the CPU (the dry run) it
    # takes the device path's plumbing (bands through the batch-wide code) instead.
    other_bands = os.path.join(work, "other-bands.json")
    with open(other_bands, "w") as f:
        json.dump({"device_bands": args.device == "cpu"}, f)
    other = f"{args.device}-host-bands" if args.device != "cpu" else "cpu-device-bands"
    bounds = {}
    res["boundaries"] = bounds
    for chunker in ("maxmin", "global"):
        outs = {}
        # The CPU; the device with its band kernel (the default there); the device with bands
        # computed on the host from the same vectors (isolates the band kernel).
        for label, device, extra in (("cpu", "cpu", []), (args.device, args.device, []),
                                     (other, args.device, ["--spec", other_bands])):
            out, err, _ = run([args.bin, "chunk", dp, "--chunker", chunker, "--model", args.model,
                               "--device", device, "--dtype", "f32", "--on-model-error", "fail",
                               "--on-error", "stop", *extra])
            per = {}
            for l in out.splitlines():
                r = json.loads(l)
                per.setdefault(r["doc_id"], []).append(r["start"])
            outs[label] = (per, err.strip().splitlines()[-1] if err.strip() else "")
        a = outs["cpu"][0]
        bounds[chunker] = {"documents": len(a), "summary_device": outs[args.device][1]}
        for label, (b, _) in outs.items():
            if label == "cpu" and args.device != "cpu":
                continue
            same = sum(1 for k in a if a[k] == b.get(k))
            bounds[chunker][f"identical_{label}"] = same
            log(f"boundaries {chunker}: {same}/{len(a)} documents identical ({label}/f32 vs cpu/f32)")
        log(f"  {outs[args.device][1]}")
        save()


def random_model(work, name, layers, hidden, heads, intermediate):
    """A BERT of the given shape with random (seeded) weights in f16, in sentence-transformers
    layout, with all-MiniLM-L6-v2's tokenizer (from --tokenizer): throughput does not depend on
    the weights, and the CPU/GPU comparisons need only the same weights on both sides. (Real
    weights do not fit the device run's 64 MiB carry beside the binary.)"""
    import torch
    from transformers import BertConfig, BertModel

    d = os.path.join(work, name)
    if os.path.isdir(d):
        return d
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=intermediate, max_position_embeddings=512)
    BertModel(cfg, add_pooling_layer=False).half().save_pretrained(d, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "modules.json",
              "config_sentence_transformers.json"):
        src = os.path.join(TOKENIZER_DIR, f)
        if os.path.isfile(src):
            shutil.copy(src, d)
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    with open(os.path.join(d, "1_Pooling/config.json"), "w") as f:
        json.dump({"word_embedding_dimension": hidden, "pooling_mode_cls_token": False,
                   "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f)
    with open(os.path.join(d, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 256, "do_lower_case": False}, f)
    return d


def seamcut_tokens_per_s(args, model, dtype, budget, lp):
    out, _, _ = run([args.bin, "bench", "embed", "--model", model, "--device", args.device, "--dtype", dtype,
                     "--lines", lp, "--runs", str(args.runs), "--batch-tokens", str(budget)])
    runs = [json.loads(l) for l in out.splitlines() if l.strip()]
    return max(r["tokens_per_s"] for r in runs), runs[0]["tokens"]


def st_tokens_per_s(model, lines, device, batch_size, runs):
    import torch
    from sentence_transformers import SentenceTransformer
    m = SentenceTransformer(model, device=device)
    if device == "cuda":
        m = m.half()
    tok = m.tokenizer
    limit = m.max_seq_length
    tokens = sum(min(len(tok(t)["input_ids"]), limit) for t in lines)
    m.encode(lines[: batch_size * 4], batch_size=batch_size)
    best = 0.0
    for _ in range(runs):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.time()
        m.encode(lines, batch_size=batch_size, convert_to_numpy=True)
        if device == "cuda":
            torch.cuda.synchronize()
        best = max(best, tokens / (time.time() - t))
    return best, tokens


def timing(args, work, dtypes):
    log("\n== timing")
    lines = texts(args.timing_texts, 3)
    lp = os.path.join(work, "timing.txt")
    write_lines(lp, lines)
    models = {"minilm": args.model}
    if not args.quick:
        models["bert-base"] = random_model(work, "bert-base-random", 12, 768, 12, 3072)
    res = {"texts": len(lines), "seamcut": {}, "sentence_transformers": {}}
    RESULTS["timing"] = res
    for name, model in models.items():
        for dt in dtypes:
            for budget in args.budgets:
                if late(f"seamcut {name} {dt} {budget}"):
                    continue
                try:
                    tps, tokens = seamcut_tokens_per_s(args, model, dt, budget, lp)
                except Exception as e:  # one failed setting does not cost the others
                    log(f"(i) seamcut {name} {args.device}/{dt} batch-tokens {budget}: failed: {e}")
                    continue
                res["seamcut"][f"{name}/{dt}/{budget}"] = tps
                log(f"(i) seamcut {name} {args.device}/{dt} batch-tokens {budget}: {tps:,.0f} tokens/s ({tokens:,} tokens)")
                save()
        try:
            for bs in args.st_batches:
                # In-process (no subprocess timeout): only started with time to spare.
                if late(f"sentence-transformers {name} {bs}") or time.time() - START > TOTAL - 150:
                    log(f"(ii) sentence-transformers {name} batch {bs}: skipped, too little time left")
                    continue
                tps, tokens = st_tokens_per_s(model, lines, args.device, bs, args.runs)
                res["sentence_transformers"][f"{name}/{'fp16' if args.device == 'cuda' else 'fp32'}/{bs}"] = tps
                log(f"(ii) sentence-transformers {name} {args.device} batch {bs}: {tps:,.0f} tokens/s ({tokens:,} tokens)")
                save()
        except ImportError as e:
            log(f"(ii) sentence-transformers unavailable here ({e}); skipped")
        except Exception as e:  # an out-of-memory or a library mismatch: report, go on
            log(f"(ii) sentence-transformers {name} failed: {e}")
    for name in models:
        s = max((v for k, v in res["seamcut"].items() if k.startswith(name + "/")), default=0)
        t = max((v for k, v in res["sentence_transformers"].items() if k.startswith(name + "/")), default=0)
        if s and t:
            res[f"ratio_{name}"] = s / t
            log(f"best seamcut / best sentence-transformers, {name}: {s / t:.2f}x")
    return max((v for k, v in res["seamcut"].items() if k.startswith("minilm/")), default=0)


def end_to_end(args, tokens_per_s, dtype):
    log("\n== end to end")
    # Size the corpus to fit the run: about 4 bytes a token, at most args.e2e_seconds of encoding.
    mb = args.e2e_mb
    if tokens_per_s:
        mb = max(1, min(mb, int(tokens_per_s * 4 * args.e2e_seconds / 1e6)))
    else:  # no throughput measured: a size that fits at a modest rate
        mb = min(mb, args.e2e_fallback_mb)
    res = {}
    RESULTS["end_to_end"] = res
    for chunker, size in (("maxmin", mb), ("global", max(1, mb // 4))):
        if late(f"end to end {chunker}"):
            continue
        out, _, _ = run([args.bin, "bench", "chunk", "--generate", str(size), "--chunker", chunker, "--model", args.model,
                         "--device", args.device, "--dtype", dtype, "--on-model-error", "fail", "--json"])
        r = json.loads(out.strip().splitlines()[-1])
        st = r["stages"]
        res[chunker] = r
        log(f"(iv) {chunker} {size} MB {args.device}/{dtype}: {r['mb_per_s']:.2f} MB/s, {r['tokens_per_s']:,.0f} tokens/s, "
            f"device idle {100 * r['device_idle']:.1f}%, busy s read {st['read']:.1f} prepare {st['prepare']:.1f} "
            f"device {st['device']:.1f} (bands {st['band']:.2f}) finish {st['finish']:.1f} write {st['write']:.1f}")
        dev = max(st["device"], 1e-9)
        log(f"(iii) {chunker}: bands {100 * st['band'] / dev:.2f}% of device time; rules+sizing (finish) "
            f"{st['finish']:.2f} s on the CPU against {st['device']:.2f} s of device time")
        save()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", help="a model directory (default: a MiniLM-shaped random model made here)")
    ap.add_argument("--tokenizer", required=True, help="all-MiniLM-L6-v2's folder, for its tokenizer files")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="small sizes (the CPU dry run)")
    a = ap.parse_args()
    global TOKENIZER_DIR
    TOKENIZER_DIR = a.tokenizer
    q = a.quick
    a.texts = 50 if q else 500
    a.docs = 10 if q else 60
    a.timing_texts = 300 if q else 10000
    a.runs = 1 if q else 2
    a.budgets = [4096] if q else [16384, 65536, 262144]
    a.st_batches = [32] if q else [128, 512]
    a.e2e_mb = 1 if q else 200
    a.e2e_seconds = 30 if q else 90
    a.e2e_fallback_mb = 1 if q else 20
    dtypes = ["f32", "f16"] if a.device == "cpu" else ["f32", "f16", "bf16"]
    global OUT_DIR
    OUT_DIR = a.out
    os.makedirs(a.out, exist_ok=True)
    # Outside $OUT, which comes back to the caller: models and corpora are made here.
    work = os.path.join(os.environ.get("TMPDIR", "/tmp"), "seamcut-gpu", "work")
    # A warm machine may keep an earlier (perhaps killed) run's files: start clean.
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    if not a.model:
        a.model = random_model(work, "minilm-random", 6, 384, 12, 1536)
    t0 = time.time()
    ver, _, _ = run([a.bin, "--version"])
    RESULTS.update({"device": a.device, "binary": ver.strip(), "model": a.model, "quick": q})
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
        RESULTS["gpu"] = smi
        log("gpu:", smi)
    status = 0
    for step in (lambda: correctness(a, work, dtypes),):
        try:
            step()
        except Exception as e:  # report and go on to the timings
            log(f"correctness step failed: {e}")
            status = 1
    tps = 0
    try:
        tps = timing(a, work, ["f32"] if a.device == "cpu" else ["f16", "bf16"])
    except Exception as e:
        log(f"timing step failed: {e}")
        status = 1
    try:
        end_to_end(a, tps, "f16" if a.device != "cpu" else "f32")
    except Exception as e:
        log(f"end-to-end step failed: {e}")
        status = 1
    RESULTS["seconds"] = time.time() - t0
    shutil.rmtree(work, ignore_errors=True)
    save()
    log(f"\ndone in {RESULTS['seconds']:.0f} s; results in {os.path.join(a.out, 'results.json')}")
    sys.exit(status)


TOKENIZER_DIR = None
if __name__ == "__main__":
    main()
