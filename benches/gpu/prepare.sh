#!/usr/bin/env bash
# Build what benches/gpu/run.sh needs on the GPU machine into .gpu-carry/ (git-ignored; it travels
# as the run's one carry, under 64 MiB with the working tree): the cuda build of seamcut
# (scripts/build-cuda.sh), stripped and xz-compressed, and all-MiniLM-L6-v2 with its weights in
# f16 (the tokenizer and sentence-transformers files beside them, so sentence-transformers loads
# the same directory). Then, on the device:
#   run(command="benches/gpu/run.sh", carry=[".gpu-carry"], timeout_s=600)
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=${WORK:-$HOME/.cache/seamcut-cuda}
scripts/build-cuda.sh
carry=.gpu-carry
rm -rf "$carry"
mkdir -p "$carry"
strip -o "$carry/seamcut" "$WORK/target/release/seamcut"
xz -T2 -6 "$carry/seamcut"
models/fetch-minilm.sh
py=python3
[ -x .venv-ci/bin/python ] && py=.venv-ci/bin/python
"$py" benches/gpu/to_f16.py models/all-MiniLM-L6-v2 "$carry/minilm-f16"
du -sh "$carry"/*
tree=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
total=$(( tree + $(du -sb "$carry" | cut -f1) ))
echo "working tree ${tree} B + carry = ${total} B (limit $((64 << 20)))"
[ "$total" -lt $((64 << 20)) ] || { echo "prepare: over the 64 MiB carry limit" >&2; exit 1; }
