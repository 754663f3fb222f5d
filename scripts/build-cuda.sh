#!/usr/bin/env bash
# Build seamcut with `--features cuda` on a machine with no GPU and no CUDA installed, from
# CUDA 13.0 pieces on PyPI (the recipe in shared/gpu/build-cuda.sh, tested there on a probe).
#
#   scripts/build-cuda.sh            # release binary -> $WORK/target/release/seamcut
#   scripts/build-cuda.sh clippy     # cargo clippy --features cuda (the cheap check that the
#                                    # cuda code does not rot; needs the same toolchain)
#
# WORK [$HOME/.cache/seamcut-cuda] holds the wheels (~1.2 GB), a CUDA_ROOT-like layout and the
# target dir: keep it. A cold build takes ~45 min on 2 cores (25 of them candle-kernels' nvcc
# work); after that a change to seamcut rebuilds in a minute or two.
#
# Why CUDA 13.0 exactly: the GPU machine's driver (580) JIT-compiles PTX only up to ISA 9.0 and
# its torch venv ships these very 13.0 libraries; nvcc >= 13.1 emits newer PTX.
# Why a libcuda stub: libcuda is the driver, which no wheel ships; cudarc (through candle) links
# it dynamically, so linking needs a DSO with its symbols. The stub answers "no device" to
# everything; it is for linking only and must never travel with the binary.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
WORK=${WORK:-$HOME/.cache/seamcut-cuda}
JOBS=${JOBS:-2}
export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
pin=13.0.2
pip_dir=$WORK/cuda-pip
cu=$pip_dir/nvidia/cu13
root=$WORK/cuda-root
mkdir -p "$WORK"
log() { printf '=== %s\n' "$*" >&2; }

log "CUDA $pin from PyPI -> $pip_dir"
mark=$pip_dir/.installed-$pin
if [ ! -f "$mark" ] || [ ! -x "$cu/bin/nvcc" ]; then
  rm -rf "$pip_dir"
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --no-cache-dir \
    --disable-pip-version-check --target "$pip_dir" \
    "cuda-toolkit[nvcc,nvvm,crt,cccl,cudart,cublas,curand,nvrtc]==$pin"
  touch "$mark"
fi

log "CUDA_ROOT layout -> $root"
# cudaforge (candle-kernels' build) finds nvcc on PATH; cudarc's build links -lcuda, -lnvrtc,
# -lcurand, -lcublas, -lcublasLt from <root>/lib64: the wheels ship only versioned names.
mkdir -p "$root/lib64/stubs"
for d in bin include nvvm; do ln -sfn "$cu/$d" "$root/$d"; done
for f in "$cu"/lib/*.so.*; do
  b=$(basename "$f")
  ln -sfn "$f" "$root/lib64/$b"
  ln -sfn "$b" "$root/lib64/${b%%.so.*}.so"
done

log "libcuda link stub"
(cd "$repo" && cargo fetch -q)
sys=$(cd "$repo" && cargo metadata --format-version 1 --features cuda 2>/dev/null | python3 -c '
import json, os, sys
m = json.load(sys.stdin)
p = [q["manifest_path"] for q in m["packages"] if q["name"] == "cudarc"]
print(os.path.join(os.path.dirname(p[0]), "src/driver/sys/mod.rs") if p else "")')
[ -f "$sys" ] || { echo "build-cuda: cannot find cudarc's sources" >&2; exit 1; }
stub=$root/lib64/stubs
grep -oE 'pub unsafe fn cu[A-Za-z0-9_]+\(' "$sys" | sed -E 's/pub unsafe fn (.*)\(/\1/' | sort -u > "$stub/syms.new"
if ! cmp -s "$stub/syms.new" "$stub/syms" || [ ! -f "$stub/libcuda.so" ]; then
  mv "$stub/syms.new" "$stub/syms"
  { echo '/* link-time stub for libcuda.so.1: every entry returns CUDA_ERROR_NO_DEVICE; never ship */'
    while read -r s; do echo "int $s(void) { return 100; }"; done < "$stub/syms"; } > "$stub/stub.c"
  gcc -O1 -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stub/libcuda.so" "$stub/stub.c"
  ln -sfn libcuda.so "$stub/libcuda.so.1"
else
  rm -f "$stub/syms.new"
fi

export CUDA_ROOT=$root CUDA_HOME=$root CUDA_PATH=$root PATH=$root/bin:$PATH
export CUDARC_CUDA_VERSION=13000 CUDAFORGE_THREADS=$JOBS
export LIBRARY_PATH=$root/lib64:$root/lib64/stubs
export CARGO_TARGET_DIR=$WORK/target
cd "$repo"
if [ "${1:-build}" = clippy ]; then
  log "cargo clippy --features cuda"
  # --release: reuses the release build's build-script outputs (candle-kernels' nvcc work).
  exec cargo clippy --release -j"$JOBS" -p seamcut --all-targets --features cuda -- -D warnings
fi
log "cargo build --release --features cuda"
t0=$(date +%s)
cargo build --release -j"$JOBS" -p seamcut --features cuda --bin seamcut
log "built in $(( $(date +%s) - t0 )) s: $CARGO_TARGET_DIR/release/seamcut"
bin=$CARGO_TARGET_DIR/release/seamcut
readelf -d "$bin" | awk '/NEEDED/ {print "  needs " $NF}' >&2
# Here (no GPU) the binary must start, resolve every symbol against the wheels and the stub,
# and refuse --device cuda with a one-line error rather than crash.
set +e
msg=$(LD_BIND_NOW=1 LD_LIBRARY_PATH=$root/lib64:$stub "$bin" embed --device cuda --lines - -o "$WORK/smoke.npy" <<<"smoke" 2>&1 >/dev/null)
rc=$?
set -e
echo "smoke test without a GPU: rc=$rc: $msg" >&2
case "$msg" in *"not available"*) ;; *) echo "build-cuda: unexpected smoke-test result" >&2; exit 1 ;; esac
