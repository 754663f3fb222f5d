#!/usr/bin/env bash
# The whole retrieval comparison (issue 13) in one command: every embedding chunker against
# size-matched recursive splitting on the broad benchmark (benches/broad: 355 hand-written
# questions over six long texts of five kinds, Botchan held out), for three retrievers
# (BM25, all-MiniLM-L6-v2, all-mpnet-base-v2) at caps 256 and 512, with 95% paired bootstrap
# intervals, pooled and per kind of text (benches/broad/table.py).
#
#   benches/retrieval.sh [SPLIT] [OUT.jsonl]     SPLIT: dev (default), heldout, all
#
# Narrow it with the variables benches/broad/run.sh reads: RETRIEVERS, CAPS, CHUNKERS,
# BASELINES, CHUNKER_MODEL, EXTRA. Cost on 2 cores for the dev split (about 800k tokens a
# chunking, each embedding chunker and its matched baseline embedded per retriever and cap):
# BM25 minutes, MiniLM (2,800 tokens/s) about 40 minutes, all-mpnet-base-v2 (470 tokens/s)
# about 4 hours per chunker. The earlier comparison on the Rust books (105 questions) is
# benches/retrieval-rust-books.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
split="${1:-dev}"
out="${2:-target/retrieval-$split.jsonl}"
models/fetch-minilm.sh >/dev/null
models/fetch-mpnet.sh >/dev/null
cargo build --release --quiet
mkdir -p "$(dirname "$out")"
: > "$out"
RETRIEVERS="${RETRIEVERS:-bm25 all-MiniLM-L6-v2 all-mpnet-base-v2}" benches/broad/run.sh "$out" "$split"
python3 benches/broad/table.py "$out"
