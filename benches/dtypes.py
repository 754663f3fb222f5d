"""The encoder's throughput per --dtype on this CPU, side by side: seamcut f32, bf16 (where
the CPU has AMX or AVX-512 BF16), int8 on its best path, and int8 forced onto its AVX-VNNI and AVX2
paths (SEAMCUT_INT8_ISA=avx-vnni, what a CPU with AVX-VNNI and no AVX-512 runs; avx2, what an
AVX2-only CPU runs; where this CPU lacks a path, seamcut runs its best one instead, and the
table's path column says which ran). Configurations alternate within each
round, so a noisy machine affects all alike; medians over rounds, with each run's peak RSS.

    python3 benches/dtypes.py PARAGRAPHS.txt [--model models/all-MiniLM-L6-v2] [--rounds 3]
        [--threads 2] [--out benches/results/dtypes-DATE.jsonl]

Needs a release build (cargo build --release). Each `seamcut bench embed` call embeds the
lines once to warm up, then once timed.
"""
import argparse
import json
import os
import re
import statistics
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("SEAMCUT_BIN") or os.path.join(ROOT, "target", "release", "seamcut")


def run(model, lines, threads, dtype, isa):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    if isa:
        env["SEAMCUT_INT8_ISA"] = isa
    p = subprocess.run(["/usr/bin/time", "-v", BIN, "bench", "embed", "--model", model, "--lines", lines,
                        "--runs", "1", "--dtype", dtype], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    rec = json.loads(p.stdout.strip().splitlines()[-1])
    rec["peak_rss_mb"] = rss / 1024
    return rec, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lines")
    ap.add_argument("--model", default="models/all-MiniLM-L6-v2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out")
    a = ap.parse_args()
    configs = [("f32", None), ("bf16", None), ("int8", None), ("int8", "avx-vnni"), ("int8", "avx2")]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
    isa = [f for f in ("avx2", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8") if f in flags]
    print(f"CPU: {cpu} ({', '.join(isa)}), {a.threads} threads, {a.model}, {a.lines}")
    results = {c: [] for c in configs}
    refused = {}
    for r in range(a.rounds):
        for c in configs:
            if c in refused:
                continue
            rec, err = run(a.model, a.lines, a.threads, *c)
            if rec is None:
                refused[c] = err
                continue
            rec["round"] = r
            results[c].append(rec)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(json.dumps(dict(rec, dtype=c[0], isa=c[1] or "best", cpu=cpu)) + "\n")
    base = statistics.median(x["texts_per_s"] for x in results[configs[0]])
    print("| --dtype | path | texts/s (median) | × f32 | peak RSS MB |")
    print("|---|---|---|---|---|")
    for c in configs:
        if c in refused:
            print(f"| {c[0]} | {c[1] or 'best'} | refused: {refused[c]} | | |")
            continue
        t = statistics.median(x["texts_per_s"] for x in results[c])
        rss = statistics.median(x["peak_rss_mb"] for x in results[c])
        desc = results[c][0]["model"].split("cpu/")[-1][:-1]
        print(f"| {c[0]} | {desc} | {t:.1f} | {t / base:.2f} | {rss:.0f} |")


if __name__ == "__main__":
    main()
