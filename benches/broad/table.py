"""Tables from benches/broad/run.sh output: for each retriever and cap, every chunker's
DCG@10 and span metrics pooled over the split's texts, and each embedding chunker's
difference to the size-matched baseline of its own run (recursive by default) with a 95%
paired bootstrap interval (10,000 resamples of the questions), pooled and per kind of text.

    python3 benches/broad/table.py OUT.jsonl [BASELINE]

Standard library only.
"""
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def dcg(rank, k=10):
    return 0.0 if rank is None or rank > k else 100.0 / math.log2(rank + 1)


def boot(a, b, rng, n_boot=10_000):
    n = len(a)
    d = [x - y for x, y in zip(a, b)]
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(n_boot))
    return sum(d) / n, means[int(0.025 * n_boot)], means[int(0.975 * n_boot)]


def main():
    path = sys.argv[1]
    base_name = sys.argv[2] if len(sys.argv) > 2 else "recursive"
    manifest = {t["name"]: t for t in json.load(open(os.path.join(HERE, "manifest.json")))["texts"]}
    counts = {n: sum(1 for l in open(os.path.join(HERE, "questions", n + ".jsonl")) if l.strip()) for n in manifest}
    runs = [json.loads(l) for l in open(path) if l.strip()]
    rng = random.Random(1)
    groups = {}
    for r in runs:
        # Runs with extra chunker flags (run.sh's EXTRA) are their own rows.
        target = r["target"] + (" " + r["extra"] if r.get("extra") else "")
        groups.setdefault((r["retriever"], r["cap"], r["split"]), {}).setdefault(target, []).append(r)
    for (retriever, cap, split), targets in groups.items():
        print(f"\n### retriever {retriever}, cap {cap}, {split} split\n")
        print("| chunker (size target) | mean tokens | DCG@10 | R@10 | span R@5 | span IoU@5 | ΔDCG@10 vs " + base_name + " (95% CI) | Δspan R@5 (95% CI) | ΔDCG@10 by kind |")
        print("|---|---|---|---|---|---|---|---|---|")
        for target, rows in targets.items():
            base = next((x["r"] for x in rows if x["r"]["chunker"] == base_name), None)
            for x in rows:
                r = x["r"]
                s = r.get("span@5") or {}
                cells = [f"{r['chunker']} ({target})", f"{r['mean_tokens']:.0f}", f"{r['DCG@10']:.1f}", f"{r['R@10']:.1f}",
                         f"{s.get('recall', float('nan')):.1f}", f"{s.get('iou', float('nan')):.1f}"]
                if base is not None and r is not base:
                    a, b = [dcg(v) for v in r["ranks"]], [dcg(v) for v in base["ranks"]]
                    m, lo, hi = boot(a, b, rng)
                    cells.append(f"{m:+.1f} ({lo:+.1f}, {hi:+.1f})")
                    sa = [(v or {}).get("recall", 0.0) for v in r["spans"]]
                    sb = [(v or {}).get("recall", 0.0) for v in base["spans"]]
                    m2, lo2, hi2 = boot(sa, sb, rng)
                    cells.append(f"{m2:+.1f} ({lo2:+.1f}, {hi2:+.1f})")
                    kinds, at = {}, 0
                    for name in x["texts"]:
                        n = counts[name]
                        kinds.setdefault(manifest[name]["kind"], []).extend(range(at, at + n))
                        at += n
                    per = []
                    for kind, idx in kinds.items():
                        m3, lo3, hi3 = boot([a[i] for i in idx], [b[i] for i in idx], rng, 2000)
                        per.append(f"{kind} {m3:+.1f} ({lo3:+.1f}, {hi3:+.1f})")
                    cells.append("; ".join(per))
                else:
                    cells += ["", "", ""]
                print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
