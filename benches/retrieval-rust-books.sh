#!/usr/bin/env bash
# The retrieval comparison in benches/RESULTS.md: every chunker on the 105 hand-written
# questions over the Rust book and the Rustonomicon (benches/questions/), retrieved with
# all-MiniLM-L6-v2, chunked with each model in turn; baselines get the cap that matches
# Max–Min's mean chunk size. Usage: benches/retrieval-rust-books.sh [MAX_TOKENS] (default 256, the
# retriever's window). Needs a release build and models/fetch-minilm.sh; ~40 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
max="${1:-256}"
books="$(mktemp -d)"
benches/fetch-texts.sh --books "$books" >/dev/null
out="target/retrieval-$max.jsonl"
: > "$out"
for cm in default all-MiniLM-L6-v2; do
  target/release/seamcut eval retrieval --json --match-size --max-tokens "$max" \
    --model all-MiniLM-L6-v2 --chunker-model "$cm" \
    --document "$books/rust-book.txt" --questions benches/questions/rust-book.jsonl \
    --document "$books/nomicon.txt" --questions benches/questions/nomicon.jsonl \
    --chunker maxmin --chunker minima --chunker breakpoint \
    --chunker recursive --chunker sentence --chunker paragraph --chunker fixed |
    sed "s/^/{\"cm\":\"$cm\",\"max\":$max,\"r\":/; s/$/}/" >> "$out"
done
python3 benches/retrieval_table.py "$out"
