#!/usr/bin/env bash
# The broad retrieval comparison: each embedding chunker against size-matched baselines on
# the broad benchmark's questions, for each retriever and cap, one `seamcut eval retrieval
# --json --match-size` per (chunker, retriever, cap), pooled over the split's texts.
#   benches/broad/run.sh OUT.jsonl [SPLIT]        SPLIT: dev (default), heldout, all
# Settings by environment: CHUNKERS (default "global maxmin"), BASELINES ("recursive"),
# RETRIEVERS ("all-MiniLM-L6-v2 bm25"), CAPS ("256 512"), CHUNKER_MODEL (default), EXTRA
# (more flags for the embedding chunkers). Then: python3 benches/broad/table.py OUT.jsonl
# Needs a release build and models/fetch-minilm.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: benches/broad/run.sh OUT.jsonl [dev|heldout|all]}"
split="${2:-dev}"
texts="${SEAMCUT_CACHE:-$PWD/target/fetch}/broad-texts"
benches/broad/fetch.sh "$texts" >/dev/null
mapfile -t names < <(python3 -c "
import json,sys
m=json.load(open('benches/broad/manifest.json'))
for t in m['texts']:
    if '$split'=='all' or t['split']=='$split': print(t['name'])")
docs=()
for n in "${names[@]}"; do
  docs+=(--document "$texts/$n.txt" --questions "benches/broad/questions/$n.jsonl")
done
names_json=$(printf '"%s",' "${names[@]}"); names_json="[${names_json%,}]"
for cap in ${CAPS:-256 512}; do
  for r in ${RETRIEVERS:-all-MiniLM-L6-v2 bm25}; do
    for c in ${CHUNKERS:-global maxmin}; do
      cargs=(--chunker "$c")
      for b in ${BASELINES:-recursive}; do cargs+=(--chunker "$b"); done
      # shellcheck disable=SC2086
      target/release/seamcut eval retrieval --json --match-size --max-tokens "$cap" \
        --retriever "$r" --chunker-model "${CHUNKER_MODEL:-default}" ${EXTRA:-} "${cargs[@]}" "${docs[@]}" |
        sed "s|^|{\"retriever\":\"$r\",\"cap\":$cap,\"split\":\"$split\",\"texts\":$names_json,\"target\":\"$c\",\"extra\":\"${EXTRA:-}\",\"r\":|; s|$|}|" >> "$out"
    done
  done
done
