#!/usr/bin/env bash
# Two builds writing the same database output, alternating: a fresh load, then a rerun of the
# same job, one JSON line each (wall seconds, the commits' busy seconds, and for LanceDB the
# table's bytes on disk):
#   benches/rerun.sh OLD_BIN NEW_BIN lance|chroma [ROUNDS]
# lance needs builds with --features lancedb; chroma starts the tests' server
# (tests/db/chroma.sh). The job and corpus are benches/db_load.sh's (run it once first: it
# makes both in $work).
set -euo pipefail
cd "$(dirname "$0")/.."
old="${1:?usage: benches/rerun.sh OLD_BIN NEW_BIN lance|chroma [ROUNDS]}"; new="${2:?usage}"
kind="${3:?usage}"; rounds="${4:-3}"
work="${SEAMCUT_BENCH_DIR:-/tmp/seamcut-db-bench}"
case "$kind" in
lance) out="$work/ab/bench.lance" ;;
chroma)
  base="$(tests/db/chroma.sh start)"
  out="$base/seamcut-ab"
  collections="${base#chroma+}/api/v2/tenants/default_tenant/databases/default_database/collections"
  ;;
*) echo "benches/rerun.sh: lance or chroma, not $kind" >&2; exit 2 ;;
esac
for r in $(seq "$rounds"); do
  for which in old new; do
    bin=$old; [ "$which" = new ] && bin=$new
    rm -rf "$work/ab"
    [ "$kind" = chroma ] && curl -sf -X DELETE "$collections/seamcut-ab" >/dev/null || true
    for run in fresh rerun; do
      /usr/bin/time -o "$work/ab.time" -f %e "$bin" chunk "$work/corpus" --chunker recursive \
        --model "$work/static384" --embeddings reembed -j 2 -o "$out" 2>"$work/ab.log"
      db=$(grep -o 'database [0-9.]*' "$work/ab.log" | cut -d' ' -f2)
      disk=0; [ "$kind" = lance ] && disk=$(du -sb "$work/ab" | cut -f1)
      echo "{\"round\":$r,\"build\":\"$which\",\"output\":\"$kind\",\"run\":\"$run\",\"wall_s\":$(cat "$work/ab.time"),\"database_busy\":$db,\"bytes_on_disk\":$disk}"
    done
  done
done
