"""Markdown table from `seamcut eval retrieval --json` lines, with a paired bootstrap of
each chunker's DCG@10 against recursive splitting on the same questions.

    python3 benches/retrieval_table.py results.jsonl [more.jsonl ...]

Each input line is one chunker's JSON object, optionally wrapped as {"cm": MODEL, "r": {...}}
(as benches/retrieval-rust-books.sh writes it). Rows are grouped by chunker model; in each group the
difference to the `recursive` row is reported with a 95% interval from 10,000 bootstrap
resamples of the questions (same resample for both chunkers), and the share of resamples in
which the chunker is ahead. Standard library only.
"""
import json
import math
import random
import sys


def dcg(rank, k=10):
    return 0.0 if rank is None or rank > k else 100.0 / math.log2(rank + 1)


def main():
    groups = {}
    for path in sys.argv[1:]:
        for line in open(path):
            d = json.loads(line)
            r = d.get("r", d)
            groups.setdefault(d.get("cm", ""), []).append(r)
    rng = random.Random(1)
    for cm, rows in groups.items():
        if cm:
            print(f"\nChunker model: {cm}\n")
        base = next((r for r in rows if r["chunker"] == "recursive"), None)
        print("| chunker | cap | chunks | mean tokens | DCG@1 | DCG@5 | DCG@10 | DCG@20 | R@1 | R@5 | R@10 | R@20 | ΔDCG@10 vs recursive (95% CI) | P(ahead) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            cells = [r["chunker"], r["cap"], r["chunks"], f"{r['mean_tokens']:.1f}"]
            cells += [f"{r[k]:.1f}" for k in ("DCG@1", "DCG@5", "DCG@10", "DCG@20", "R@1", "R@5", "R@10", "R@20")]
            if base is not None and r is not base and "ranks" in r and "ranks" in base:
                a = [dcg(x) for x in r["ranks"]]
                b = [dcg(x) for x in base["ranks"]]
                n = len(a)
                diffs = []
                for _ in range(10_000):
                    idx = [rng.randrange(n) for _ in range(n)]
                    diffs.append(sum(a[i] - b[i] for i in idx) / n)
                diffs.sort()
                mean = sum(x - y for x, y in zip(a, b)) / n
                ahead = sum(d > 0 for d in diffs) / len(diffs)
                cells += [f"{mean:+.1f} ({diffs[250]:+.1f}, {diffs[9750]:+.1f})", f"{ahead:.2f}"]
            else:
                cells += ["", ""]
            print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
