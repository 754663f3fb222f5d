#!/usr/bin/env bash
# fiction-melville-moby-dick: Herman Melville, Moby-Dick; or, The Whale (New York, 1851), the
# first 42 of its 135 chapters ("Loomings" to "The Whiteness of the Whale": Ishmael and Queequeg
# in New Bedford and Nantucket, the Pequod's sailing, Ahab's quarter-deck oath, the cetology
# and the chapter "Moby Dick"), about 71k words: first-person American narrative fiction with
# dialogue, sermon, a dramatic chapter and essayistic digressions. It ships inside Debian's
# package r-cran-tokenizers 0.3.0-1 (the R package tokenizers; Project Gutenberg's EBook #2701
# as one string) as the character vector `mobydick` in the lazy-load data base data/Rdata.rdb;
# this script reads that R serialization with the standard library alone (the package is built
# per architecture, so the amd64 build is pinned; its data is the same on every one). The
# Gutenberg header and licence, the etymology and extracts, and chapters 43-135 with the
# epilogue are dropped. Each prose paragraph becomes one line (hard wraps joined), verse keeps
# its lines, paragraphs are separated by blank lines, "CHAPTER N. Title." headings stay as
# paragraphs of their own, and the _italic_ underscores go.
set -euo pipefail

out=${1:?usage: fiction-melville-moby-dick.sh OUTDIR}
name=fiction-melville-moby-dick
pkg=r-cran-tokenizers
ver=0.3.0-1
deb=${pkg}_${ver}_amd64.deb
sha=6312f013ebfde5650235bfd7ba5c44d9e4cf9f2da9855337c9483fe778f0d8c7

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg:amd64=$ver"

extract_deb "$deb"

PYTHONPATH="$(dirname "$0")/.." python3 - "$tmp/usr/lib/R/site-library/tokenizers/data" "$out/$name.txt" <<'PY'
import re
import sys

from rdata import read_object

src, dst = sys.argv[1], sys.argv[2]
book = read_object(src, "mobydick", "fiction-melville-moby-dick")
lines = book[0].replace("\r", "").split("\n")
start = lines.index("CHAPTER 1. Loomings.")
end = lines.index("CHAPTER 43. Hark!")

paras, cur = [], []
for line in lines[start:end] + [""]:
    if line.strip():
        cur.append(line.rstrip())
    elif cur:
        if all(l.startswith("    ") for l in cur):  # verse: one line each
            paras.append("\n".join(l.strip() for l in cur))
        else:
            paras.append(" ".join(l.strip() for l in cur))
        cur = []
paras = [re.sub(r"_([^_]+)_", r"\1", p) for p in paras]
if any("_" in p for p in paras):
    sys.exit("fiction-melville-moby-dick: unbalanced italics")
chapters = sum(1 for p in paras if re.fullmatch(r"CHAPTER \d+\. .+", p))
if chapters != 42 or not paras[-1]:
    sys.exit(f"fiction-melville-moby-dick: unexpected text ({chapters} chapters)")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
