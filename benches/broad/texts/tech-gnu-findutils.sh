#!/usr/bin/env bash
# tech-gnu-findutils: the GNU Findutils manual, "Finding Files" (edition 4.9.0, 30 January 2022,
# by David MacKenzie and James Youngman), on find, locate, updatedb and xargs: file name,
# time, size and permission tests, actions and -printf directives, running commands, the
# locate databases, file permissions, date input formats, worked examples, security and
# error messages; about 38k words. From the info files (find.info-1 and find.info-2) in
# Debian's findutils 4.9.0-4 package (built per architecture: the amd64 build is pinned; its
# manual is the same on every one). Node headers, menus, footnote rules, the GFDL and the
# index are dropped, and so are the nine nodes that restate the regular expression syntax of
# each other tool nearly word for word (findutils' default syntax stays); cross references
# read "See Node"; headings stay as their own paragraphs; examples keep their indentation.
set -euo pipefail

out=${1:?usage: tech-gnu-findutils.sh OUTDIR}
name=tech-gnu-findutils
pkg=findutils
ver=4.9.0-4
deb=${pkg}_${ver}_amd64.deb
sha=5dd86bd0af4aa73f067dfd6b8339dd868f2dd84056aa79db29d1206d4fbc5e04

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg:amd64=$ver"

extract_deb "$deb"

info=$tmp/usr/share/info
python3 - "$info/find.info-1.gz" "$info/find.info-2.gz" "$out/$name.txt" <<'PY'
import gzip
import re
import sys

info = "".join(gzip.open(p, "rb").read().decode("utf-8") for p in sys.argv[1:-1])
dst = sys.argv[-1]

SKIP = {"Top", "GNU Free Documentation License", "Primary Index"}
# The per-tool regular expression syntaxes repeat one another nearly word for word: only the
# findutils default stays.
REPEATED = re.compile(r"(?!findutils-default).* regular expression syntax")
UNDERLINE = re.compile(r"^([*=\-.])\1*$")

paras = []
for node in info.split("\x1f")[1:]:
    lines = node.strip("\n").split("\n")
    m = re.match(r"File: [^,]+,\s+Node: ([^,]+),", lines[0])
    if not m or m.group(1) in SKIP or REPEATED.fullmatch(m.group(1)):
        continue
    body = lines[1:]
    # A menu always closes its node: drop it and everything after it.
    for i, line in enumerate(body):
        if line.startswith("* Menu:"):
            body = body[:i]
            break
    text = "\n".join(l.rstrip() for l in body)
    # Cross references read as the HTML manual has them: "(*note Node::)" as "(see Node)",
    # "*Note Node::" as "See Node", and a bare "*note Node::" as "Node".
    def xref(m):
        node = " ".join(m.group(3).split())
        if m.group(2) == "N":
            return m.group(1) + "See " + node
        return m.group(1) + ("see " if m.group(1) == "(" else "") + node
    text = re.sub(r"(\(?)\*([Nn])ote\s+([^:]+?)::", xref, text)
    # References into other manuals: "*Note Title: (manual)Node." as "See Title (manual)".
    def external(m):
        return "See " + " ".join(m.group(1).split()) + " (" + m.group(2) + ")"
    text = re.sub(r"\*Note\s+([^:]+?):\s+\((\w+)\)[^.,]*", external, text)
    text = text.replace("---------- Footnotes ----------\n", "")
    out_lines = text.split("\n")
    i = 0
    cur = []
    while i < len(out_lines):
        line = out_lines[i]
        nxt = out_lines[i + 1] if i + 1 < len(out_lines) else ""
        if line.strip() and UNDERLINE.match(nxt) and len(nxt) == len(line) and not line.startswith(" "):
            if cur:
                paras.append("\n".join(cur))
                cur = []
            paras.append(line.strip())
            i += 2
            continue
        if not line.strip():
            if cur:
                paras.append("\n".join(cur))
                cur = []
        else:
            cur.append(line)
        i += 1
    if cur:
        paras.append("\n".join(cur))

# Prose paragraphs carry a three-space first-line indent in info: drop it.
paras = [p[3:] if p.startswith("   ") and not p.startswith("    ") else p for p in paras]
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
