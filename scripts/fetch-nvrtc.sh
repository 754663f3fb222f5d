#!/usr/bin/env bash
# NVRTC from PyPI (nvidia-cuda-nvrtc 13.0.88, the version the cuda build links) into
# target/nvrtc, for the test that compiles every kernel in kernels/ to PTX (tests/it/kernels.rs):
# NVRTC needs no GPU, so a kernel that does not compile fails here rather than on a user's GPU.
# Prints the library's path. 90 MB download, once.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${CARGO_TARGET_DIR:-$PWD/target}/nvrtc"
lib="$dir/libnvrtc.so.13"
if [ ! -f "$lib" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --disable-pip-version-check -d "$tmp" nvidia-cuda-nvrtc==13.0.88 >&2
  mkdir -p "$dir"
  python3 - "$tmp"/nvidia_cuda_nvrtc-*.whl "$dir" <<'PY'
import sys, zipfile, os
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for name in ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cu13/lib/libnvrtc-builtins.so.13.0"):
        with z.open(name) as src, open(os.path.join(out, os.path.basename(name)), "wb") as dst:
            dst.write(src.read())
PY
fi
echo "$lib"
