"""Rules for the recommended chunk vectors, tried offline on the broad benchmark: the chunk
vectors each rule needs (a chunk's text alone, its text with its context in front, and its
late vector) come from `seamcut chunk` once per text, every rule combines them in numpy, and
`seamcut eval retrieval --chunks --vectors` scores each rule's vectors exactly as late.sh's
rows are scored (same chunks, same questions, same hit test). One row per rule and text, in
late.sh's format, so late_table.py makes the table with intervals, pooled and per kind:

    python3 benches/broad/blend_rules.py OUT.jsonl [--split dev] [--cap 128]
        [--model all-MiniLM-L6-v2] [--rules blend,agree,...] [--stats] [--dtype int8]
        [--late "--late-stride 254"] [--texts NAME,NAME,...]
    python3 benches/broad/late_table.py OUT.jsonl

Needs numpy and target/release/seamcut (SEAMCUT_BIN); the vectors are cached in
target/blend-rules/ (a folder per model, cap and --dtype other than f32, which every `seamcut`
call then runs in: the chunk vectors and the questions'). --late passes flags to the late
pass only (other windows or strides); its late vectors are cached beside the default ones and
its rows are labelled with the flags, so one file compares strides rule by rule. --stats prints, per kind, how the late vector sits against the chunk's
own (the quantities the rules read).

What the rules found (benches/RESULTS.md, 2026-12-06): the old recipe's loss on transcripts
came from the context prefix as much as from the late half (headings found in plain text
that are not headings, and long contexts that outweigh a short chunk); averaging the chunk
alone and with its context (mix-0.5-1.0) kept the gain elsewhere.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def unit(v):
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def cos_rows(a, b):
    return np.sum(unit(a) * unit(b), axis=1)


def late_context(chunks, window=254, stride=127):
    """Each chunk's tokens of context beside it in the late windows, as a share of the window:
    the rule the issue suggests reads how much the window adds around the chunk."""
    out = []
    for c in chunks:
        t = max(int(c.get("tokens", 1)), 1)
        out.append(max(window - t, 0) / window)
    return np.array(out)


# Each rule: (t, o, l, chunks) -> vectors. t: the text alone, o: the text with its context in
# front, l: the late vector; all unit rows.
def rule_text(t, o, l, c):
    return t


def rule_ctx(t, o, l, c):
    return o


def rule_late(t, o, l, c):
    return l


def rule_blend(t, o, l, c):
    """`--embeddings blend --context-prefix` before 2026-12-06."""
    return unit(o + l)


def weighted(a):
    return lambda t, o, l, c: unit(o + a * l)


def rule_agree(t, o, l, c):
    """The late vector weighted by its agreement with the chunk's own: context that pulls a
    chunk away from what it says counts less."""
    w = np.clip(cos_rows(o, l), 0, 1)[:, None]
    return unit(o + w * l)


def rule_agree2(t, o, l, c):
    w = (np.clip(cos_rows(o, l), 0, 1) ** 2)[:, None]
    return unit(o + w * l)


def rule_centred(t, o, l, c):
    """The document's mean late vector taken out of each late vector before the blend (what
    every chunk of the document shares says nothing about which chunk answers)."""
    lc = l - l.mean(axis=0, keepdims=True)
    return unit(o + unit(lc))


def rule_halfcentred(t, o, l, c):
    lc = l - 0.5 * l.mean(axis=0, keepdims=True)
    return unit(o + unit(lc))


def rule_ctxshare(t, o, l, c):
    """The late weight falling with the share of the window that is context."""
    w = (1 - 0.5 * late_context(c))[:, None]
    return unit(o + w * l)


def rule_blend_noctx(t, o, l, c):
    """`--embeddings blend` without the context prefix."""
    return unit(t + l)


def mix(a, w):
    """`a` of the text half alone and `1 − a` with its context, the late vector at `w`.
    mix-0.5-1.0 is `--embeddings blend --context-prefix` since 2026-12-06."""
    return lambda t, o, l, c: unit(a * t + (1 - a) * o + w * l)


def prefix_share(c):
    """Each chunk's context (as the prefix reads it: without the document's id) against its
    text, in bytes."""
    out = []
    for x in c:
        ctx = x.get("context", "")
        if ctx.startswith(x["doc_id"]):
            ctx = ctx[len(x["doc_id"]):].lstrip(" >")
        out.append(len(ctx) / max(len(x["text"]), 1))
    return np.array(out)


def short_prefix(limit):
    def rule(t, o, l, c):
        keep = (prefix_share(c) <= limit)[:, None]
        return unit(np.where(keep, o, t) + l)
    return rule


RULES = {
    "text": rule_text,
    "ctx": rule_ctx,
    "late": rule_late,
    "blend": rule_blend,
    "blend-0.5": weighted(0.5),
    "blend-0.75": weighted(0.75),
    "agree": rule_agree,
    "agree2": rule_agree2,
    "centred": rule_centred,
    "half-centred": rule_halfcentred,
    "ctx-share": rule_ctxshare,
    "blend-noctx": rule_blend_noctx,
    **{f"mix-{a}-{w}": mix(a, w) for a in (0.25, 0.5, 0.75) for w in (0.75, 1.0, 1.25)},
    "short-prefix-0.1": short_prefix(0.1),
    "short-prefix-0.2": short_prefix(0.2),
}


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def vectors(binary, model, cap, text_path, name, cache, dtype, late):
    """The chunks of one text (recursive at `cap`) and their three vectors, cached; `late`:
    extra flags for the late pass, which name its cache files."""
    os.makedirs(cache, exist_ok=True)
    out = {}
    late_tag = "".join(c if c.isalnum() else "_" for c in " ".join(late)).strip("_")
    for kind, flags in (
        ("text", ["--embeddings", "reembed"]),
        ("ctx", ["--embeddings", "reembed", "--context-prefix"]),
        ("late", ["--embeddings", "late", *late]),
    ):
        file_kind = f"{kind}.{late_tag}" if kind == "late" and late_tag else kind
        base = os.path.join(cache, f"{name}.{file_kind}")
        if not os.path.exists(base + ".npy"):
            run([binary, "chunk", text_path, "--chunker", "recursive", "--max-tokens", str(cap),
                 "--model", model, "--dtype", dtype, *flags, "-o", base + ".jsonl", "--quiet"])
        out[kind] = np.load(base + ".npy")
        out[kind + "_chunks"] = base + ".jsonl"
    chunks = [json.loads(x) for x in open(out["ctx_chunks"])]
    spans = [(c["start"], c["end"]) for c in chunks]
    for kind in ("text", "late"):
        other = [(c["start"], c["end"]) for c in map(json.loads, open(out[kind + "_chunks"]))]
        if other != spans:
            sys.exit(f"{name}: the {kind} run cut other chunks than the context run")
    return out, chunks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--cap", type=int, default=128)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--stats", action="store_true")
    ap.add_argument("--dtype", default="f32", help="every seamcut call's --dtype (chunk vectors and questions)")
    ap.add_argument("--late", default="", help='flags for the late pass only, e.g. "--late-stride 254"')
    ap.add_argument("--texts", default="", help="only these texts of the split (names, comma-separated)")
    a = ap.parse_args()
    binary = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target/release/seamcut"))
    texts_dir = os.path.join(os.environ.get("SEAMCUT_CACHE", os.path.join(ROOT, "target/fetch")), "broad-texts")
    model = os.path.join(ROOT, "models", a.model)
    cache = os.path.join(ROOT, "target/blend-rules", f"{a.model}-{a.cap}" + ("" if a.dtype == "f32" else f"-{a.dtype}"))
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))["texts"]
    names = [t["name"] for t in manifest if a.split == "all" or t["split"] == a.split]
    if a.texts:
        wanted = a.texts.split(",")
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            sys.exit(f"--texts: not in the {a.split} split: {', '.join(unknown)}")
        names = [n for n in names if n in wanted]
    kinds = {t["name"]: t["kind"] for t in manifest}
    rules = a.rules.split(",")
    with open(a.out, "a") as out, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            v, chunks = vectors(binary, model, a.cap, os.path.join(texts_dir, f"{name}.txt"), name, cache,
                                a.dtype, a.late.split())
            t, o, l = unit(v["text"]), unit(v["ctx"]), unit(v["late"])
            if a.stats:
                pair = lambda x: float(np.mean(x @ x.T))  # noqa: E731
                print(f"{kinds[name]:12} {name:36} cos(o,l) {np.mean(cos_rows(o, l)):.3f} "
                      f"cos(t,l) {np.mean(cos_rows(t, l)):.3f} pairwise t {pair(t):.3f} "
                      f"o {pair(o):.3f} l {pair(l):.3f}", file=sys.stderr)
            questions = os.path.join(HERE, "questions", f"{name}.jsonl")
            for rule in rules:
                npy = os.path.join(tmp, f"{name}.{rule}.npy")
                np.save(npy, RULES[rule](t, o, l, chunks).astype(np.float32))
                r = run([binary, "eval", "retrieval", "--json", "--retriever", model, "--dtype", a.dtype,
                         "--max-tokens", str(a.cap),
                         "--chunks", v["late_chunks"], "--vectors", npy, "--questions", questions])
                row = {"row": rule, "retriever": a.model, "cap": a.cap, "split": a.split, "texts": [name],
                       "late": a.late, "r": json.loads(r.strip().splitlines()[-1])}
                if a.dtype != "f32":
                    row["dtype"] = a.dtype
                out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"{name}: {len(rules)} rules", file=sys.stderr)


if __name__ == "__main__":
    main()
