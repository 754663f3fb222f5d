#!/usr/bin/env bash
# Two seamcut binaries side by side on the one-pass job (`chunk --chunker maxmin --unit-vectors
# late --embeddings late`), alternating (ABBA within each round), in f32 and int8; prints one
# line per run and each binary's median per dtype. Used for the last layer on the pooled rows
# alone (benches/RESULTS.md, 2026-12-07): A the build before, B the build after.
#   benches/late_rows_ab.sh A_BIN B_BIN TEXT [ROUNDS] [MODEL_DIR]
set -euo pipefail
a="$1" b="$2" text="$3" rounds="${4:-5}" model="${5:-models/all-MiniLM-L6-v2}"
out=$(mktemp -d)
run() { # bin dtype -> seconds
  local s e
  s=$(date +%s.%N)
  "$1" chunk --model "$model" --dtype "$2" --chunker maxmin --unit-vectors late --embeddings late \
    -o "$out/o.parquet" "$text" --quiet
  e=$(date +%s.%N)
  echo "$e - $s" | bc
}
for r in $(seq "$rounds"); do
  for dt in f32 int8; do
    if (( r % 2 )); then order="A B"; else order="B A"; fi
    for who in $order; do
      bin=$([ "$who" = A ] && echo "$a" || echo "$b")
      echo "$r $dt $who $(run "$bin" "$dt")"
    done
  done
done | tee "$out/runs.txt"
python3 - "$out/runs.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, dt, who, s = line.split()
    runs.setdefault((dt, who), []).append(float(s))
for dt in ("f32", "int8"):
    a, b = statistics.median(runs[(dt, "A")]), statistics.median(runs[(dt, "B")])
    print(f"{dt}: A {a:.2f} s, B {b:.2f} s, B/A {b / a:.3f}")
PY
