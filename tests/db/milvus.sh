#!/usr/bin/env bash
# A real Milvus gRPC server for the database tests, on 127.0.0.1: PyPI's milvus-lite 3
# (`milvus-lite server`, the Milvus protocol over gRPC) in .venv-milvus, with pymilvus, which
# the tests read the collections back with, and a fresh data folder.
#
#   tests/db/milvus.sh start   # prints the URL base to export as SEAMCUT_TEST_MILVUS
#   tests/db/milvus.sh stop
#   tests/db/milvus.sh kill|restart   # SIGKILL it, as a crash would; the same data and port again
# (SEAMCUT_MILVUS_STATE names another state folder: a second server, for the tests that kill one.)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv-milvus
state="${SEAMCUT_MILVUS_STATE:-/tmp/seamcut-milvus}"
# Run the server on port $1 with the state folder's data; print its URL once it answers.
serve() {
  nohup "$venv/bin/milvus-lite" server --data-dir "$state/data" --host 127.0.0.1 --port "$1" \
    >>"$state/server.log" 2>&1 &
  echo $! >"$state/pid"
  for _ in $(seq 1 120); do
    if "$venv/bin/python" - "$1" <<'PY' 2>/dev/null; then
import sys
from pymilvus import MilvusClient
MilvusClient(uri=f"http://127.0.0.1:{sys.argv[1]}", timeout=2).list_collections()
PY
      echo "$1" >"$state/port"
      echo "milvus://127.0.0.1:$1"
      return 0
    fi
    sleep 0.5
  done
  echo "milvus-lite did not start: $(tail -5 "$state/server.log")" >&2
  exit 1
}
case "${1:-start}" in
start)
  if [ ! -x "$venv/bin/milvus-lite" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet -r tests/db/milvus-requirements.txt
  fi
  if [ -f "$state/port" ] && kill -0 "$(cat "$state/pid" 2>/dev/null)" 2>/dev/null; then
    echo "milvus://127.0.0.1:$(cat "$state/port")"
    exit 0
  fi
  rm -rf "$state"
  mkdir -p "$state"
  port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  serve "$port"
  ;;
stop)
  if [ -f "$state/pid" ]; then kill "$(cat "$state/pid")" 2>/dev/null || true; fi
  ;;
kill)
  kill -9 "$(cat "$state/pid")"
  while kill -0 "$(cat "$state/pid")" 2>/dev/null; do sleep 0.05; done
  ;;
restart)
  serve "$(cat "$state/port")"
  ;;
*)
  echo "usage: $0 start|stop|kill|restart" >&2
  exit 2
  ;;
esac
