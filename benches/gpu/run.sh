#!/usr/bin/env bash
# The device benchmark (issue 10), on the GPU machine:
#   benches/gpu/run.sh                  # after benches/gpu/prepare.sh here; carry .gpu-carry
#   benches/gpu/run.sh --device cpu     # the dry run on a machine without a GPU (small sizes,
#                                       # the local release build)
# Correctness (GPU against CPU embeddings and boundaries), then timing (seamcut tokens/s at
# several token budgets in f16 and bf16, sentence-transformers fp16 on the same texts, bands
# and rules against encoder time, end-to-end MB/s and the device's idle share); see bench.py.
# Writes log.txt and results.json to $OUT (or target/gpu-run).
set -uo pipefail
cd "$(dirname "$0")/../.."
# The whole run's clock: bench.py sizes its subprocess timeouts from it to finish inside one
# 10-minute device call (with time left to copy $OUT back).
export SEAMCUT_T0="${SEAMCUT_T0:-$(date +%s)}"
# The device call's limit in seconds (the tool's timeout_s): pass a smaller one when less
# device time is left, e.g. SEAMCUT_BUDGET_S=420 benches/gpu/run.sh.
export SEAMCUT_BUDGET_S="${SEAMCUT_BUDGET_S:-600}"
# No network on the device machine: never let transformers or the hub try it.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
device=cuda
[ "${1:-}" = "--device" ] && device="${2:-cuda}"
out="${OUT:-$PWD/target/gpu-run}"
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
if [ "$device" = cpu ]; then
  bin="${SEAMCUT_BIN:-target/release/seamcut}"
  [ -x "$bin" ] || cargo build --release --quiet
  # A python with numpy and transformers (and, for the side-by-side, sentence-transformers).
  py="${PYTHON:-python3}"
  [ -x .venv-bench/bin/python ] && [ -z "${PYTHON:-}" ] && py=.venv-bench/bin/python
  exec "$py" benches/gpu/bench.py --bin "$bin" --tokenizer models/all-MiniLM-L6-v2 --device cpu --quick --out "$out"
fi
# On the GPU machine: unpack the binary, and take the CUDA 13 libraries from the torch venv's
# wheels (the binary links libcudart/libcublas/libcurand/libnvrtc 13 dynamically; libcuda is the
# driver's). Never the link-time stub.
bin=/tmp/seamcut-gpu/seamcut
mkdir -p /tmp/seamcut-gpu
# python's lzma rather than xz(1), which the image may lack.
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  .gpu-carry/seamcut.xz "$bin" && chmod +x "$bin"
# The nvidia wheels may sit in the system, a venv or the user's site-packages: ask python.
libs=$(python3 - <<'PY'
import glob, site, sys
roots = list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()]
roots += [p for p in sys.path if p.endswith("site-packages") or p.endswith("dist-packages")]
seen = []
for r in roots:
    for d in glob.glob(f"{r}/nvidia/cu13/lib") + sorted(glob.glob(f"{r}/nvidia/*/lib")):
        if d not in seen:
            seen.append(d)
print(":".join(seen))
PY
)
export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_CACHE_PATH=/tmp/seamcut-gpu/cuda-cache
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
if ldd "$bin" | grep -q "not found"; then ldd "$bin"; echo "run.sh: missing libraries" >&2; exit 11; fi
ldd "$bin" | grep -E 'libcu|libnvrtc'
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
t=$(date +%s%N)
"$bin" embed --device cuda --lines - -o /tmp/seamcut-gpu/first.npy <<<"first call: CUDA context, weights, PTX JIT and cuBLAS start-up" \
  || { echo "run.sh: the first CUDA call failed" >&2; exit 12; }
echo "first call, whole process (CUDA context, weights, PTX JIT, cuBLAS start-up): $(( ($(date +%s%N) - t) / 1000000 )) ms"
PYTHONUNBUFFERED=1 exec python3 benches/gpu/bench.py --bin "$bin" --tokenizer .gpu-carry/tokenizer --device cuda --out "$out"
