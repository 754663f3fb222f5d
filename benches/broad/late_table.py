"""Tables from benches/broad/late.sh output: for each retriever and cap, every row's DCG@10 and
span recall@5 pooled over the split's texts, and its difference to `rec-text` (recursive
chunks each embedded on its own, what indexers do today) with a 95% paired bootstrap interval
(10,000 resamples of the questions), pooled and per kind of text.

    python3 benches/broad/late_table.py OUT.jsonl[.gz] [BASE_ROW]

A row run with LATE flags (late.sh's environment) is its own row, labelled with them.

Standard library only.
"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from table import boot, dcg  # noqa: E402

import random  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    path = sys.argv[1]
    base_row = sys.argv[2] if len(sys.argv) > 2 else "rec-text"
    manifest = {t["name"]: t for t in json.load(open(os.path.join(HERE, "manifest.json")))["texts"]}
    order = list(manifest)
    opener = gzip.open if path.endswith(".gz") else open
    runs = [json.loads(line) for line in opener(path, "rt") if line.strip()]
    rng = random.Random(1)
    # (retriever, cap, split, late flags) -> label -> {ranks, spans, texts, mean_tokens}
    groups = {}
    for x in runs:
        r = x["r"]
        label = x["row"]
        if x["row"].startswith("maxmin-") and r["chunker"] != "maxmin":
            # maxmin-[independent-]VECTORS: the recursive chunks scored beside Max-Min's.
            vectors = x["row"].removeprefix("maxmin-").removeprefix("independent-")
            label = f"rec-{vectors} (size-matched to {x['row']}, cap {r['cap']})"
        if x.get("late"):
            label += f" `{x['late']}`"
        if x.get("dtype"):
            label += f" `--dtype {x['dtype']}`"
        key = (x["retriever"], x["cap"], x["split"])
        row = groups.setdefault(key, {}).setdefault(label, {"parts": []})
        row["parts"].append((x["texts"], r))
    for key, rows in groups.items():
        retriever, cap, split = key
        print(f"\n### {retriever}, cap {cap}, {split} split\n")
        print(f"| row | mean tokens | DCG@10 | span R@5 | ΔDCG@10 vs {base_row} (95% CI) | Δspan R@5 (95% CI) | ΔDCG@10 by kind |")
        print("|---|---|---|---|---|---|---|")
        pooled = {}
        for label, row in rows.items():
            parts = sorted(row["parts"], key=lambda p: order.index(p[0][0]))
            texts = [t for p in parts for t in p[0]]
            ranks = [v for p in parts for v in p[1]["ranks"]]
            spans = [(v or {}).get("recall", 0.0) for p in parts for v in p[1]["spans"]]
            n = sum(p[1]["chunks"] for p in parts)
            tok = sum(p[1]["mean_tokens"] * p[1]["chunks"] for p in parts) / max(n, 1)
            pooled[label] = (texts, ranks, spans, tok)
        base = pooled.get(base_row)
        for label, (texts, ranks, spans, tok) in pooled.items():
            d = [dcg(v) for v in ranks]
            cells = [label, f"{tok:.0f}", f"{sum(d) / len(d):.1f}", f"{sum(spans) / len(spans):.1f}"]
            if base is not None and label != base_row and base[0] == texts:
                b = [dcg(v) for v in base[1]]
                m, lo, hi = boot(d, b, rng)
                cells.append(f"{m:+.1f} ({lo:+.1f}, {hi:+.1f})")
                m2, lo2, hi2 = boot(spans, base[2], rng)
                cells.append(f"{m2:+.1f} ({lo2:+.1f}, {hi2:+.1f})")
                counts = {t: sum(1 for line in open(os.path.join(HERE, "questions", t + ".jsonl")) if line.strip()) for t in texts}
                kinds, at = {}, 0
                for t in texts:
                    kinds.setdefault(manifest[t]["kind"], []).extend(range(at, at + counts[t]))
                    at += counts[t]
                per = []
                for kind, idx in kinds.items():
                    m3, lo3, hi3 = boot([d[i] for i in idx], [b[i] for i in idx], rng, 2000)
                    per.append(f"{kind} {m3:+.1f} ({lo3:+.1f}, {hi3:+.1f})")
                cells.append("; ".join(per))
            else:
                cells += ["", "", ""]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
