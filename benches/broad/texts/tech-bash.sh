#!/usr/bin/env bash
# tech-bash: the GNU Bash Reference Manual (Bash 5.2, edition of 19 September 2022), from the
# info file in Debian's bash-doc 5.2.15-2 package. Node headers, menus, the GFDL and the
# indexes are dropped; headings stay as their own paragraphs; examples keep their indentation.
set -euo pipefail

out=${1:?usage: tech-bash.sh OUTDIR}
name=tech-bash
pkg=bash-doc
ver=5.2.15-2
deb=${pkg}_${ver}_all.deb
sha=2c1a353f7004d14ba81db19c253b958d2dd9582027650739c530fd50376a9d8b

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg=$ver"

extract_deb "$deb"

python3 - "$tmp/usr/share/info/bash.info.gz" "$out/$name.txt" <<'PY'
import gzip
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
info = gzip.open(src, "rb").read().decode("utf-8")

SKIP = {
    "Top", "GNU Free Documentation License", "Indexes", "Builtin Index",
    "Reserved Word Index", "Variable Index", "Function Index", "Concept Index",
}
UNDERLINE = re.compile(r"^([*=\-.])\1*$")

paras = []
for node in info.split("\x1f")[1:]:
    lines = node.strip("\n").split("\n")
    m = re.match(r"File: [^,]+,\s+Node: ([^,]+),", lines[0])
    if not m or m.group(1) in SKIP:
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
