#!/usr/bin/env bash
# Two builds with --features lancedb writing the same LanceDB table, alternating: a fresh load
# then a rerun of the same job, one JSON line each (wall seconds, the commits' busy seconds,
# the table's bytes on disk):
#   benches/lance_rerun.sh OLD_BIN NEW_BIN [ROUNDS]
# The job and corpus are benches/db_load.sh's (run it once first: it makes both in $work).
set -euo pipefail
old="${1:?usage: benches/lance_rerun.sh OLD_BIN NEW_BIN [ROUNDS]}"; new="${2:?usage}"
rounds="${3:-3}"
work="${SEAMCUT_BENCH_DIR:-/tmp/seamcut-db-bench}"
for r in $(seq "$rounds"); do
  for which in old new; do
    bin=$old; [ "$which" = new ] && bin=$new
    rm -rf "$work/ab"
    for run in fresh rerun; do
      /usr/bin/time -o "$work/ab.time" -f %e "$bin" chunk "$work/corpus" --chunker recursive \
        --model "$work/static384" --embeddings reembed -j 2 -o "$work/ab/bench.lance" 2>"$work/ab.log"
      db=$(grep -o 'database [0-9.]*' "$work/ab.log" | cut -d' ' -f2)
      echo "{\"round\":$r,\"build\":\"$which\",\"run\":\"$run\",\"wall_s\":$(cat "$work/ab.time"),\"database_busy\":$db,\"bytes_on_disk\":$(du -sb "$work/ab" | cut -f1)}"
    done
  done
done
