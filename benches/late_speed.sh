#!/usr/bin/env bash
# What late chunk vectors cost, side by side: `seamcut bench chunk` on one text with a BERT-size
# model, chunking alone against chunking plus --embeddings late at several strides, in
# alternating rounds (the machine is shared: compare within a round).
#   benches/late_speed.sh TEXT [MODEL_DIR] [ROUNDS]
# Prints one JSON line per run (bench's report plus the setting), then the median seconds per
# setting and its ratio to chunking alone.
set -euo pipefail
cd "$(dirname "$0")/.."
text="${1:?usage: benches/late_speed.sh TEXT [MODEL_DIR] [ROUNDS]}"
model="${2:-models/all-MiniLM-L6-v2}"
rounds="${3:-3}"
bin="${SEAMCUT_BIN:-target/release/seamcut}"
settings=(
  "chunk alone|"
  "late 254/254|--embeddings late --late-window 254 --late-stride 254"
  "late 254/190|--embeddings late --late-window 254 --late-stride 190"
  "late 254/127|--embeddings late --late-window 254 --late-stride 127"
  "late 126/63|--embeddings late --late-window 126 --late-stride 63"
  "one pass: late units + late 254/127|--unit-vectors late --embeddings late --late-window 254 --late-stride 127"
  "one pass: late units + late 126/63|--unit-vectors late --embeddings late --late-window 126 --late-stride 63"
)
tmp=$(mktemp -d)
for r in $(seq "$rounds"); do
  for s in "${settings[@]}"; do
    name=${s%%|*}; flags=${s#*|}
    # shellcheck disable=SC2086
    "$bin" bench chunk "$text" --chunker maxmin --model "$model" $flags --json |
      python3 -c "import json,sys; r=json.load(sys.stdin); r['setting']='$name'; r['round']=$r; print(json.dumps(r))"
  done
done | tee "$tmp/runs.jsonl"
python3 - "$tmp/runs.jsonl" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
key = next(k for k in ("seconds", "wall_seconds", "elapsed") if k in runs[0])
med = {}
for r in runs:
    med.setdefault(r["setting"], []).append(r[key])
base = statistics.median(med["chunk alone"])
for s, v in med.items():
    m = statistics.median(v)
    print(json.dumps({"setting": s, "median_seconds": round(m, 2), "vs_chunk_alone": round(m / base, 2)}))
EOF
