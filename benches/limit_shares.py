"""`perf report --no-children --sort symbol --stdio` on stdin; the self samples summed by what
they are, for benches/limit.sh. Each symbol goes to the first class whose patterns it matches;
the top symbols of each class are listed under it, so a misfiled one shows."""
import re
import sys

CLASSES = [
    # The linear layers' own kernels in int8 (every path, with the activations quantized per
    # row) and bf16 (AVX-512 BF16, AMX tiles).
    ("int8 and bf16 kernels", [r"seamcut_products::int8::Block::", r"seamcut_products::int8::quantize",
                               r"seamcut_products::bf16::(run|tile|round_rows)", r"embed::amx::"]),
    # gemm's f32 products: every product in f32; attention's QK and PV of short inputs in
    # int8 and bf16 (their linear layers are above).
    ("gemm f32", [r"gemm_f32::", r"gemm_common::"]),
    # Attention's tiled kernels (long inputs).
    ("attention tiles", [r"seamcut_products::attention::(scores|context|score_tile|context_tile)"]),
    ("softmax", [r"softmax", r"exp_fused"]),
    ("GELU, norms, residuals", [r"gelu", r"add_norm", r"layer_norm", r"norm_rows"]),
    ("copies and zeroing", [r"memmove", r"memcpy", r"memset", r"Rows::extend", r"pack_panels"]),
    ("page faults and the kernel", [r"^\[k\]"]),
    ("tokenizing and segmenting", [r"tokeniz", r"wordpiece", r"segment", r"unicode"]),
]

rows = []
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+(\[[.k]\])\s+(.*?)\s{2,}", line)
    if m:
        rows.append((float(m.group(1)), f"{m.group(2)} {m.group(3)}"))

totals, tops = {}, {}
for share, sym in rows:
    name = next((n for n, pats in CLASSES if any(re.search(p, sym) for p in pats)), "everything else")
    totals[name] = totals.get(name, 0.0) + share
    tops.setdefault(name, []).append((share, sym))

for name in [n for n, _ in CLASSES] + ["everything else"]:
    if name not in totals:
        continue
    top = sorted(tops[name], reverse=True)[:3]
    shown = "; ".join(f"{s:.1f}% {sym[4:][:60]}" for s, sym in top)
    print(f"{totals[name]:5.1f}%  {name:28} {shown}")
products = sum(totals.get(n, 0) for n in ("int8 and bf16 kernels", "gemm f32", "attention tiles"))
print(f"{100 - products:5.1f}%  outside the matrix products")
