#!/usr/bin/env bash
# Build what benches/gpu/run.sh needs on the GPU machine into .gpu-carry/ (git-ignored; it travels
# as the run's one carry, under 64 MiB with the working tree): the cuda build of seamcut
# (scripts/build-cuda.sh), stripped and xz-compressed (25 MB), and all-MiniLM-L6-v2's tokenizer
# files (the models are made on the machine with random weights: MiniLM's 45 MB of f16 weights do
# not fit beside the binary and the 22 MB working tree). Then, on the device:
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
mkdir -p "$carry/tokenizer"
for f in tokenizer.json tokenizer_config.json special_tokens_map.json vocab.txt; do
  cp "models/all-MiniLM-L6-v2/$f" "$carry/tokenizer/"
done
du -sh "$carry"/*
tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- | tail -1 | cut -f1)
total=$(( tree + $(du -sb "$carry" | cut -f1) ))
echo "working tree ${tree} B + carry = ${total} B (limit $((64 << 20)))"
[ "$total" -lt $((64 << 20)) ] || { echo "prepare: over the 64 MiB carry limit" >&2; exit 1; }
