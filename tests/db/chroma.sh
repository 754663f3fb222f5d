#!/usr/bin/env bash
# A real Chroma server for the database tests, on 127.0.0.1: PyPI's chromadb (`chroma run`)
# in .venv-chroma, with a fresh data folder.
#
#   tests/db/chroma.sh start   # prints the base URL to export as SEAMCUT_TEST_CHROMA
#   tests/db/chroma.sh stop
#   tests/db/chroma.sh kill|restart   # SIGKILL it, as a crash would; the same data and port again
# (SEAMCUT_CHROMA_STATE names another state folder: a second server, for the tests that kill one.)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv-chroma
state="${SEAMCUT_CHROMA_STATE:-/tmp/seamcut-chroma}"
# Run the server on port $1 with the state folder's data; print its URL once it answers.
serve() {
  nohup "$venv/bin/chroma" run --path "$state/data" --host 127.0.0.1 --port "$1" >>"$state/server.log" 2>&1 &
  echo $! >"$state/pid"
  for _ in $(seq 1 120); do
    if curl -sf "http://127.0.0.1:$1/api/v2/heartbeat" >/dev/null; then
      echo "$1" >"$state/port"
      echo "chroma+http://127.0.0.1:$1"
      return 0
    fi
    sleep 0.5
  done
  echo "chroma did not start: $(tail -5 "$state/server.log")" >&2
  exit 1
}
case "${1:-start}" in
start)
  if [ ! -x "$venv/bin/chroma" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "chromadb==1.5.9"
  fi
  if [ -f "$state/port" ] && curl -sf "http://127.0.0.1:$(cat "$state/port")/api/v2/heartbeat" >/dev/null; then
    echo "chroma+http://127.0.0.1:$(cat "$state/port")"
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
