#!/usr/bin/env bash
# reference-jargon-file: The Jargon File, version 4.4.7 (29 December 2003, ed. Eric S. Raymond),
# the public-domain lexicon of hacker slang: its 815 entries from the start of the alphabet
# through F ("(TM)", "/dev/null" and the other symbols and numbers, then "abbrev" to "furrfu"),
# about 78k words of definition, etymology, usage and anecdote (the whole lexicon, ~206k
# words, would be too large). From the dictd database in Debian's dict-jargon 4.4.7-3.1
# package (the dictd index gives each entry's place). Each entry becomes a heading paragraph
# "headword /pronunciation/, part of speech." followed by its paragraphs (hard wraps joined;
# indented examples keep their lines); {cross reference} braces and soft hyphens go; the dictd
# database's own entries, the letter dividers, box-drawn tables and ASCII-art pictures are
# dropped.
set -euo pipefail

out=${1:?usage: reference-jargon-file.sh OUTDIR}
name=reference-jargon-file
pkg=dict-jargon
ver=4.4.7-3.1
deb=${pkg}_${ver}_all.deb
sha=405f8168d7994ed2cb71407bb95493daec2e9aa66fc0461dafa74a9d6728a8c1

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg=$ver"

extract_deb "$deb"

python3 - "$tmp/usr/share/dictd" "$out/$name.txt" <<'PY'
import gzip
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64(s):
    v = 0
    for c in s:
        v = v * 64 + B64.index(c)
    return v


data = gzip.open(src + "/jargon.dict.dz").read()
entries = {}
for line in open(src + "/jargon.index", encoding="utf-8"):
    head, off, size = line.rstrip("\n").split("\t")
    if not head.startswith("00-database") and head.strip():
        entries.setdefault(b64(off), b64(size))

BOX = re.compile("[\u2500-\u257f]")
XREF = re.compile(r"\{\s*([^{}]*?)\s*\}")
XREF_CODE = re.compile(r"\{([^{}\n;=*]+)\}")  # in examples, leave C braces alone


def xref(m):
    return " ".join(m.group(1).split())


paras, count = [], 0
for off, size in sorted(entries.items()):
    lines = data[off:off + size].decode("utf-8").replace("\u00ad", "").rstrip("\n").split("\n")
    head = lines[0].strip()
    if not re.match(r"[A-Za-z0-9/@(-]", head) or len(lines) < 3:
        continue  # the dictd "all characters" entry
    if not re.match(r"[^A-Za-z]|[A-Fa-f]", head):
        break  # the entries run in alphabetical order: stop after F
    count += 1
    grammar = re.sub(r"^//,?\s*", "", lines[1].strip())  # "//": no pronunciation given
    paras.append(f"{head} {grammar}" if grammar else head)
    blocks, cur = [], []
    for line in lines[2:] + [""]:
        if line.strip():
            cur.append(line[4:] if line.startswith("    ") else line.strip())
        elif cur:
            blocks.append(cur)
            cur = []
    for block in blocks:
        text = "\n".join(block)
        if BOX.search(text) or re.fullmatch(r"[A-Z]", text):  # a table, or a letter's divider
            continue
        if any(l.startswith(" ") for l in block):  # an example or a picture: keep its lines
            chars = re.sub(r"\s", "", text)
            if sum(c.isalpha() for c in chars) < 0.5 * len(chars):
                continue
            text = XREF_CODE.sub(xref, "\n".join(l.rstrip() for l in block))
        else:
            text = XREF.sub(xref, " ".join(l.strip() for l in block))
        paras.append(text)

if count < 700 or any(XREF_CODE.search(p) for p in paras):
    sys.exit(f"reference-jargon-file: unexpected text ({count} entries)")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
