#!/usr/bin/env bash
# Every chunker over the same corpus through the CLI, for a refactor's byte-identity check:
#   benches/same-output/run.sh OLD_BIN old/ && benches/same-output/run.sh NEW_BIN new/
#   for f in old/*; do cmp "$f" "new/${f#old/}" || echo "DIFF $f"; done
# The corpus: tests/fixtures/texts.jsonl (240 texts) and three of the repository's documents.
# All ten chunkers and their variants (windows, units, the device-band plumbing on the CPU,
# MiniLM when fetched), chunk vectors (mean .npy, reembed Parquet, auto), and the LLM
# chunkers against a deterministic local OpenAI-compatible server (mock_llm.py).
set -u
bin=$(realpath "$1"); out=$(realpath -m "$2"); mkdir -p "$out"
cd "$(dirname "$0")/../.."
corpus=$(mktemp -d)
cp tests/fixtures/texts.jsonl README.md ARCHITECTURE.md benches/RESULTS.md "$corpus/"
port=18777
python3 benches/same-output/mock_llm.py $port & mock=$!
trap 'kill $mock' EXIT
sleep 1
c() { "$bin" chunk "$corpus" -q "$@"; }
for ch in fixed recursive sentence paragraph maxmin minima breakpoint global; do
  c --chunker $ch > "$out/$ch.jsonl"
done
c --chunker fixed --max-tokens 64 --overlap 8 > "$out/fixed-overlap.jsonl"
c --chunker maxmin --splitter segmenter > "$out/maxmin-seg.jsonl"
c --chunker minima --window concat --splitter delimiters > "$out/minima-concat.jsonl"
c --chunker breakpoint --window concat > "$out/bp-concat.jsonl"
c --chunker global --depth-weight 1 --heading-weight 1 > "$out/global-seams.jsonl"
echo '{"chunker":"maxmin","device_bands":true}' > "$corpus/spec.json"
"$bin" chunk "$corpus/texts.jsonl" "$corpus/README.md" -q --spec "$corpus/spec.json" > "$out/maxmin-devbands.jsonl"
c --chunker maxmin -o "$out/maxmin-mean.jsonl" --embeddings mean
c --chunker recursive -o "$out/rec-reembed.parquet" --embeddings reembed
c --chunker global -o "$out/global-auto.jsonl" --embeddings auto
if [ -f models/all-MiniLM-L6-v2/model.safetensors ]; then
  "$bin" chunk "$corpus/README.md" "$corpus/ARCHITECTURE.md" -q --chunker maxmin --model models/all-MiniLM-L6-v2 > "$out/maxmin-minilm.jsonl"
  "$bin" chunk "$corpus/ARCHITECTURE.md" -q --chunker recursive --model models/all-MiniLM-L6-v2 -o "$out/rec-minilm.jsonl" --embeddings reembed
fi
for ch in lumber lumber-guided; do
  "$bin" chunk "$corpus/texts.jsonl" -q --chunker $ch --llm-url http://127.0.0.1:$port/v1 --llm-model mock --llm-cache none > "$out/$ch.jsonl"
done
"$bin" segment "$corpus" -q > "$out/segment.jsonl"
ls "$out"
