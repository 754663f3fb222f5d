#!/usr/bin/env bash
# Where the one-pass index job's time goes, per `--dtype` (issue 39 §6): `perf record` of
# `seamcut chunk --chunker maxmin --unit-vectors late --embeddings late` on a text, then the
# self samples summed by what they are (benches/limit_shares.py): the matrix products (the
# linear layers' kernels with their activations' quantization, and attention's products),
# the rest of the encoder (softmax, GELU, layer norms, copies), the kernel's page faults and
# everything else. With `cargo bench --bench products` (each product's GFLOP/s against its
# instruction's peak) this says how far each path is from the machine.
#
#   benches/limit.sh TEXT [DTYPES] > OUT.txt     # DTYPES: f32,bf16,int8 (default)
#
# Needs perf and target/release/seamcut (SEAMCUT_BIN); MODEL defaults to all-MiniLM-L6-v2.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
text="${1:?usage: benches/limit.sh TEXT [DTYPES]}"
dtypes="${2:-f32,bf16,int8}"
bin="${SEAMCUT_BIN:-$root/target/release/seamcut}"
model="${MODEL:-$root/models/all-MiniLM-L6-v2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs); $(nproc) threads; $(basename "$text"), $(wc -c < "$text") bytes; $(basename "$model")"
for dt in ${dtypes//,/ }; do
    start=$(date +%s.%N)
    perf record -q -F 999 -o "$tmp/$dt.data" -- "$bin" chunk "$text" --chunker maxmin --unit-vectors late \
        --embeddings late --model "$model" --dtype "$dt" -o "$tmp/$dt.parquet" -q 2>/dev/null
    end=$(date +%s.%N)
    echo "## --dtype $dt: $(echo "$end - $start" | bc) s under perf"
    perf report -i "$tmp/$dt.data" --no-children --sort symbol --stdio 2>/dev/null \
        | python3 "$here/limit_shares.py"
done
