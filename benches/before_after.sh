#!/usr/bin/env bash
# Two builds of seamcut on the same corpus jobs, alternating, one JSON line per run:
#   benches/before_after.sh OLD_BIN NEW_BIN CORPUS [ROUNDS]
# The jobs: recursive to JSONL (no model), maxmin to JSONL (the default static model), and
# maxmin with --embeddings mean to Parquet. Wall seconds from /usr/bin/time; the machine is
# shared, so compare the two builds round by round, never across scripts.
set -euo pipefail
old="${1:?usage: benches/before_after.sh OLD_BIN NEW_BIN CORPUS [ROUNDS]}"
new="${2:?usage}"; corpus="${3:?usage}"; rounds="${4:-5}"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
for round in $(seq "$rounds"); do
  for which in old new; do
    bin=$old; [ "$which" = new ] && bin=$new
    for job in "recursive:jsonl:" "maxmin:jsonl:" "maxmin:parquet:--embeddings mean"; do
      IFS=: read -r chunker ext extra <<<"$job"
      # shellcheck disable=SC2086 # $extra is words
      s=$( { /usr/bin/time -f "%e" "$bin" chunk --chunker "$chunker" $extra "$corpus" -o "$out/o.$ext" -q; } 2>&1 | tail -1)
      echo "{\"round\":$round,\"build\":\"$which\",\"chunker\":\"$chunker\",\"output\":\"$ext\",\"extra\":\"$extra\",\"wall_s\":$s}"
    done
  done
done
