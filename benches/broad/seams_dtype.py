"""What `--dtype` does to the seams (issue 39 §5): Max–Min's chunks of every text of a split
in f32 and in each other precision, compared boundary for boundary. A text whose chunks are
the same is counted as identical; where they differ, the boundary F1 against f32 (a boundary
is a chunk's start byte; an exact match counts) says by how much.

    python3 benches/broad/seams_dtype.py [--split dev] [--dtypes int8,bf16,int8-avx2]
        [--model all-MiniLM-L6-v2] [--units sentences|late] [--max-tokens N] > OUT.txt

`int8-avx2` is `--dtype int8` with `SEAMCUT_INT8_ISA=avx2`: the AVX2 path and its weights on 63
levels, as an AVX2-only CPU runs it. Needs target/release/seamcut (SEAMCUT_BIN); the chunks go
to target/seams-dtype/ (a folder per model, units and cap), cached.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def starts(path):
    return [json.loads(line)["start"] for line in open(path)]


def f1(a, b):
    a, b = set(a) - {0}, set(b) - {0}
    if not a and not b:
        return 1.0
    hit = len(a & b)
    p, r = hit / max(len(b), 1), hit / max(len(a), 1)
    return 0.0 if hit == 0 else 2 * p * r / (p + r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--dtypes", default="int8,bf16,int8-avx2")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--units", default="sentences", choices=["sentences", "late"])
    ap.add_argument("--max-tokens", type=int, default=256)
    a = ap.parse_args()
    binary = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target/release/seamcut"))
    texts = os.path.join(os.environ.get("SEAMCUT_CACHE", os.path.join(ROOT, "target/fetch")), "broad-texts")
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))["texts"]
    names = [t["name"] for t in manifest if a.split == "all" or t["split"] == a.split]
    cache = os.path.join(ROOT, "target/seams-dtype", f"{a.model}-{a.units}-{a.max_tokens}")
    os.makedirs(cache, exist_ok=True)

    def chunks(name, dtype):
        out = os.path.join(cache, f"{name}.{dtype}.jsonl")
        if not os.path.exists(out):
            env = dict(os.environ)
            dt = dtype
            if dtype == "int8-avx2":
                env["SEAMCUT_INT8_ISA"], dt = "avx2", "int8"
            units = ["--unit-vectors", "late"] if a.units == "late" else []
            cmd = [binary, "chunk", os.path.join(texts, f"{name}.txt"), "--chunker", "maxmin", *units,
                   "--model", os.path.join(ROOT, "models", a.model), "--dtype", dt,
                   "--max-tokens", str(a.max_tokens), "-o", out, "--quiet"]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)}: {r.stderr.strip()}")
        return starts(out)

    dtypes = a.dtypes.split(",")
    print(f"# {a.model}, Max-Min on {a.units} units, cap {a.max_tokens}, {a.split} split ({len(names)} texts)")
    print("| text | chunks (f32) | " + " | ".join(f"{d}: same / F1" for d in dtypes) + " |")
    print("|---|---|" + "---|" * len(dtypes))
    same = {d: 0 for d in dtypes}
    pooled = {d: [0, 0, 0] for d in dtypes}  # hits, ours, f32's
    for name in names:
        ref = chunks(name, "f32")
        cells = []
        for d in dtypes:
            ours = chunks(name, d)
            same[d] += ours == ref
            r, o = set(ref) - {0}, set(ours) - {0}
            pooled[d][0] += len(r & o)
            pooled[d][1] += len(o)
            pooled[d][2] += len(r)
            cells.append("same" if ours == ref else f"{len(ours)} chunks, F1 {f1(ref, ours):.4f}")
        print(f"| {name} | {len(ref)} | " + " | ".join(cells) + " |")
        sys.stdout.flush()
    cells = []
    for d in dtypes:
        hit, o, r = pooled[d]
        f = 2 * hit / max(o + r, 1)
        cells.append(f"{same[d]}/{len(names)} texts the same; pooled F1 {f:.4f}")
    print("| **all** | | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
