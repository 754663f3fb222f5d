#!/usr/bin/env bash
# de-debian-reference: the German translation of the Debian Reference ("Debian-Referenz", Osamu
# Aoki; translated by Jens Seidel and others), from the pinned Debian package
# debian-reference-de 2.100 (for Debian 12 "Bookworm"). The preface, chapters 1-12 and the
# appendix in order, from the HTML pages: headings, paragraphs, list items, notes/tips (their
# label as its own paragraph), footnotes and shell listings; each data table (mostly package
# lists: Paket | Popcon | Größe | Beschreibung) becomes one block with one line per row, cells
# joined by " | ". The title page, tables of contents and navigation bars are left out.
set -euo pipefail

out=${1:?usage: de-debian-reference.sh OUTDIR}
name=de-debian-reference
pkg=debian-reference-de
ver=2.100
deb=${pkg}_${ver}_all.deb
sha=3b0ce65fd63e75ddf8eb07ca36293425135080e690a07e06a6ac8bc8040ef0aa

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg=$ver"

extract_deb "$deb"

PYTHONPATH="$(dirname "$0")/.." python3 - "$tmp/usr/share/debian-reference" "$out/$name.txt" <<'PY'
import os
import sys

from docbook_html import blocks_of

src, dst = sys.argv[1], sys.argv[2]
PAGES = ["pr01"] + [f"ch{i:02d}" for i in range(1, 13)] + ["apa"]

blocks = blocks_of([os.path.join(src, f"{page}.de.html") for page in PAGES])
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(blocks) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
