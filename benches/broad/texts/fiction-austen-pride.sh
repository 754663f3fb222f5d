#!/usr/bin/env bash
# fiction-austen-pride: Jane Austen, Pride and Prejudice (1813), the whole novel (61 chapters,
# about 122k words): narrative fiction with much dialogue. It ships inside Debian's package
# r-cran-janeaustenr 1.0.0-1 (the R package janeaustenr, Project Gutenberg's text without its
# licence) as the character vector `prideprejudice` in the lazy-load data base
# data/Rdata.rdb; this script reads that R serialization with the standard library alone.
# Each paragraph becomes one line (hard wraps joined), paragraphs are separated by blank lines,
# "Chapter N" headings stay as paragraphs of their own, and the _italic_ underscores go.
set -euo pipefail

out=${1:?usage: fiction-austen-pride.sh OUTDIR}
name=fiction-austen-pride
pkg=r-cran-janeaustenr
ver=1.0.0-1
deb=${pkg}_${ver}_all.deb
sha=df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg=$ver"

extract_deb "$deb"

PYTHONPATH="$(dirname "$0")/.." python3 - "$tmp/usr/lib/R/site-library/janeaustenr/data" "$out/$name.txt" <<'PY'
import re
import sys

from rdata import read_object

src, dst = sys.argv[1], sys.argv[2]
lines = read_object(src, "prideprejudice", "fiction-austen-pride")

paras, cur = [], []
for line in lines + [""]:
    line = (line or "").strip()
    if line:
        cur.append(line)
    elif cur:
        paras.append(" ".join(cur))
        cur = []
paras = [re.sub(r"_([^_]+)_", r"\1", p) for p in paras]
if any("_" in p for p in paras):
    sys.exit("fiction-austen-pride: unbalanced italics")
chapters = sum(1 for p in paras if re.fullmatch(r"Chapter \d+", p))
if paras[0] != "PRIDE AND PREJUDICE" or chapters != 61:
    sys.exit(f"fiction-austen-pride: unexpected text ({paras[0]!r}, {chapters} chapters)")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
