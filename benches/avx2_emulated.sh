#!/usr/bin/env bash
# A CPU with AVX-512 run as an AVX2-only one (no AVX-512, no VNNI, no AVX-512 BF16, no AMX),
# to measure and work on the paths an AVX2-only CPU takes (issue 39 §4) where none is to hand:
#
#   benches/avx2_emulated.sh build     # seamcut built with gemm's AVX-512 kernels left out:
#                                      # target/avx2-emulated/target/release/seamcut
#   benches/avx2_emulated.sh CMD...    # CMD with that build as SEAMCUT_BIN, SEAMCUT_SIMD=avx2
#                                      # (seamcut's own kernels), and torch, oneDNN and MKL held
#                                      # to AVX2 (the Chonkie and sentence-transformers rows of
#                                      # the side-by-side scripts; ONNX Runtime has no such
#                                      # switch, and its rows still run AVX-512)
#
# e.g. benches/avx2_emulated.sh /work/venv-bench/bin/python benches/late_vs_chonkie.py speed
#      TEXT --model minilm --seamcut "int8=--dtype int8"
#
# gemm (seamcut's f32 products) picks its kernels by CPU at run time and has no switch, so the
# build is from a copy of the working tree whose Cargo.toml drops gemm's `x86-v4` feature.
# What it does not emulate: the core itself. The AVX2 code runs on this CPU's pipes, clock
# and caches, and an AVX2-only CPU (a Zen 2 or 3, an older Xeon) differs in each; say which
# CPU ran it beside every figure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/target/avx2-emulated"
bin="$dir/target/release/seamcut"
if [ "${1:-}" = build ]; then
    mkdir -p "$dir/src"
    # The working tree as it is (committed or not), without build outputs.
    tar -C "$root" --exclude=./target --exclude=./.git --exclude=./.venv-ci -cf - . | tar -C "$dir/src" -xf -
    sed -i 's/features = \["std", "rayon", "x86-v4"\]/features = ["std", "rayon"]/' "$dir/src/Cargo.toml"
    grep -q '^gemm = .*features = \["std", "rayon"\]' "$dir/src/Cargo.toml" \
        || { echo "avx2_emulated.sh: gemm's line in Cargo.toml is not the one expected" >&2; exit 1; }
    cd "$dir/src" && CARGO_TARGET_DIR="$dir/target" cargo build --release -p seamcut --bin seamcut
    exit
fi
[ $# -gt 0 ] || { sed -n '2,20p' "$0"; exit 2; }
[ -x "$bin" ] || { echo "avx2_emulated.sh: run 'benches/avx2_emulated.sh build' first" >&2; exit 1; }
export SEAMCUT_BIN="$bin" SEAMCUT_SIMD=avx2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 \
    MKL_ENABLE_INSTRUCTIONS=AVX2
exec "$@"
