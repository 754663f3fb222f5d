#!/usr/bin/env bash
# Writing into pgvector, Chroma and LanceDB, side by side in one script (the machine is shared and noisy):
#   benches/db_load.sh [MB] [ROUNDS]
# On a corpus of MB megabytes (benches/make-corpus.sh), with a 384-dimension static model
# distilled from all-MiniLM-L6-v2 (so that the vectors have MiniLM's width and the job is not
# all encoder time), each round runs, in turn:
#   parquet  seamcut chunk ... -o x.parquet                     (the same job, to a file)
#   pg       seamcut chunk ... -o postgresql://...?table=bench  (into a fresh table)
#   rerun    the same job again into the filled table (every row an upsert of itself)
#   copy     psql \copy of the same rows, binary, into a fresh table of the same shape: the
#            ceiling of a load on this machine
#   chroma   seamcut chunk ... -o chroma+http://.../bench       (into a fresh collection)
#   lance    seamcut chunk ... -o DIR/bench.lance               (into a fresh LanceDB table;
#            with SEAMCUT_LANCE=1, for a binary built with --features lancedb)
#   lance-rerun  the same job again into the filled LanceDB table
#   milvus   seamcut chunk ... -o milvus://.../bench           (into a fresh collection of a
#            milvus-lite server, tests/db/milvus.sh)
#   milvus-rerun  the same job again into the filled collection
# and prints one JSON line per run: wall seconds, rows, and the summary line's busy seconds of
# the write stage (`write`: building the rows, waiting for the commit before) and of the
# database's commits (`database`, on their own thread), so rows/s of the commits and of
# psql's copy. With CHONKIE_PYTHON set (a Python with chonkie, vecs, chromadb, model2vec),
# benches/db_vs_chonkie.py then runs Chonkie's handshakes once on the same chunks and model;
# with MILVUS_PYTHON set (a Python with pymilvus, chonkie, model2vec), benches/db_vs_milvus.py
# runs pymilvus's bulk insert and Chonkie's MilvusHandshake on them.
set -euo pipefail
cd "$(dirname "$0")/.."
mb="${1:-20}"
rounds="${2:-3}"
bin="${SEAMCUT_BIN:-target/release/seamcut}"
work="${SEAMCUT_BENCH_DIR:-/tmp/seamcut-db-bench}"
mkdir -p "$work"
[ -x "$bin" ] || cargo build --release --quiet
models/fetch-minilm.sh >/dev/null
if [ ! -f "$work/static384/model.safetensors" ]; then
  "$bin" distill --teacher all-MiniLM-L6-v2 --dims 384 -o "$work/static384" -q
fi
if [ ! -f "$work/corpus/corpus-000.jsonl" ]; then
  benches/make-corpus.sh "$work/corpus" "$(python3 -c "print($mb / 1000)")" >/dev/null
fi
url="$(tests/db/postgres.sh start)"
pgbin="$(tests/db/postgres.sh bin)"
psql() { "$pgbin/psql" "$url" -q -v ON_ERROR_STOP=1 "$@"; }
job=(chunk "$work/corpus" --chunker recursive --model "$work/static384" --embeddings reembed -j 2)

busy_write() { sed -n 's/.*write \([0-9.]*\).*/\1/p' "$1"; }
busy_db() { sed -n 's/.*database \([0-9.]*\).*/\1/p' "$1"; }
chroma="$(tests/db/chroma.sh start)"
milvus="$(tests/db/milvus.sh start)"
pg_run() { # NAME
  t0=$(date +%s.%N)
  "$bin" "${job[@]}" -o "$url?table=bench" 2>"$work/pg.log"
  t1=$(date +%s.%N)
  rows=$(psql -At -c "SELECT count(*) FROM bench")
  echo "{\"round\": $r, \"run\": \"$1\", \"seconds\": $(echo "$t1 - $t0" | bc | sed "s/^\./0./"), \"write_busy\": $(busy_write "$work/pg.log"), \"database_busy\": $(busy_db "$work/pg.log"), \"rows\": $rows}"
}
for r in $(seq 1 "$rounds"); do
  # parquet
  rm -f "$work/x.parquet"
  t0=$(date +%s.%N)
  "$bin" "${job[@]}" -o "$work/x.parquet" 2>"$work/parquet.log"
  t1=$(date +%s.%N)
  echo "{\"round\": $r, \"run\": \"parquet\", \"seconds\": $(echo "$t1 - $t0" | bc | sed "s/^\./0./"), \"write_busy\": $(busy_write "$work/parquet.log")}"
  # pg, into a fresh table
  psql -c "DROP TABLE IF EXISTS bench" -c "DELETE FROM seamcut_jobs WHERE tbl = 'bench'" 2>/dev/null ||
    psql -c "DROP TABLE IF EXISTS bench"
  pg_run pg
  pg_run rerun
  # psql's binary copy of the same rows into an empty table of the same shape
  psql -c "\\copy (SELECT * FROM bench) TO '$work/rows.bin' WITH (FORMAT binary)"
  psql -c "DROP TABLE IF EXISTS bench_copy" -c "CREATE TABLE bench_copy (LIKE bench INCLUDING ALL)"
  t0=$(date +%s.%N)
  psql -c "\\copy bench_copy FROM '$work/rows.bin' WITH (FORMAT binary)"
  t1=$(date +%s.%N)
  echo "{\"round\": $r, \"run\": \"copy\", \"seconds\": $(echo "$t1 - $t0" | bc | sed "s/^\./0./"), \"rows\": $rows, \"bytes\": $(stat -c %s "$work/rows.bin")}"
  # Chroma, into a fresh collection (deleted over its HTTP API first)
  curl -sf -X DELETE "${chroma/chroma+http/http}/api/v2/tenants/default_tenant/databases/default_database/collections/bench" >/dev/null || true
  t0=$(date +%s.%N)
  "$bin" "${job[@]}" -o "$chroma/bench" 2>"$work/chroma.log"
  t1=$(date +%s.%N)
  echo "{\"round\": $r, \"run\": \"chroma\", \"seconds\": $(echo "$t1 - $t0" | bc | sed "s/^\./0./"), \"write_busy\": $(busy_write "$work/chroma.log"), \"database_busy\": $(busy_db "$work/chroma.log"), \"rows\": $rows}"
  # Milvus, into a fresh collection (dropped with pymilvus first), then the same job again
  .venv-milvus/bin/python -c "from pymilvus import MilvusClient; MilvusClient(uri='${milvus/milvus:/http:}').drop_collection('bench')"
  for run in milvus milvus-rerun; do
    t0=$(date +%s.%N)
    "$bin" "${job[@]}" -o "$milvus/bench" 2>"$work/milvus.log"
    t1=$(date +%s.%N)
    echo "{\"round\": $r, \"run\": \"$run\", \"seconds\": $(echo "$t1 - $t0" | bc | sed "s/^\./0./"), \"write_busy\": $(busy_write "$work/milvus.log"), \"database_busy\": $(busy_db "$work/milvus.log"), \"rows\": $rows}"
  done
  if [ "${SEAMCUT_LANCE:-0}" = 1 ]; then
    rm -rf "$work/lance"
    for run in lance lance-rerun; do
      t0=$(date +%s.%N)
      "$bin" "${job[@]}" -o "$work/lance/bench.lance" 2>"$work/lance.log"
      t1=$(date +%s.%N)
      echo "{\"round\": $r, \"run\": \"$run\", \"seconds\": $(echo "$t1 - $t0" | bc | sed "s/^\./0./"), \"write_busy\": $(busy_write "$work/lance.log"), \"database_busy\": $(busy_db "$work/lance.log"), \"bytes_on_disk\": $(du -sb "$work/lance" | cut -f1)}"
    done
  fi
done
tail -1 "$work/pg.log" >&2
if [ -n "${MILVUS_PYTHON:-}" ]; then
  "$MILVUS_PYTHON" benches/db_vs_milvus.py "$work/x.parquet" "$work/static384" "$milvus" 2>/dev/null
fi
if [ -n "${CHONKIE_PYTHON:-}" ]; then
  "$CHONKIE_PYTHON" benches/db_vs_chonkie.py "$work/x.parquet" "$work/corpus" "$work/static384" "$url" "$chroma" 2>/dev/null
fi
