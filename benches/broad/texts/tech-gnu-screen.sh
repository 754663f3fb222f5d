#!/usr/bin/env bash
# tech-gnu-screen: the GNU Screen manual, "Screen: The virtual terminal manager" (for Screen
# 4.9.0, Free Software Foundation, 1993-2022), on the full-screen window manager that
# multiplexes a terminal: invocation options, .screenrc, windows and window groups, detaching
# and reattaching sessions, multiuser access control lists, split regions and layouts, window
# titles, monitoring, the VT100 emulation and its control sequences, copy mode and the paste
# buffer, exec filters, key bindings, flow control, termcap, the message and hardstatus
# lines, logging, string escapes, environment and files; about 27k words. From the info files
# (screen.info-1 to screen.info-6) in Debian's screen 4.9.0-4 package (built per
# architecture: the amd64 build is pinned; its manual is the same on every one). Node
# headers, menus, the permission notice, the three indexes and the "Command Summary" node
# (a one-line restatement of every command described in full elsewhere) are dropped; cross
# references read "See Node"; headings stay as their own paragraphs; command definitions,
# tables and examples keep their indentation; the table of builtin digraphs is dropped. The
# info files are Latin-9; the text is written as UTF-8.
set -euo pipefail

out=${1:?usage: tech-gnu-screen.sh OUTDIR}
name=tech-gnu-screen
pkg=screen
ver=4.9.0-4
deb=${pkg}_${ver}_amd64.deb
sha=c3b97223e12cb913b81f032e74322ea85456fa747b3cd9bc02eb17b2b990dfce

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg:amd64=$ver"

extract_deb "$deb"

info=$tmp/usr/share/info
python3 - "$info"/screen.info-[1-6].gz "$out/$name.txt" <<'PY'
import gzip
import re
import sys

# The info files are Latin-9 (their "coding: iso-8859-15"); only the digraph table uses it.
# Each file opens with a preamble before its first node: drop it.
nodes_text = [n for p in sys.argv[1:-1]
              for n in gzip.open(p, "rb").read().decode("iso-8859-15").split("\x1f")[1:]]
dst = sys.argv[-1]

SKIP = {"Top", "Command Summary", "Concept Index", "Command Index", "Keystroke Index"}
UNDERLINE = re.compile(r"^([*=\-.])\1*$")

paras, nodes = [], 0
for node in nodes_text:
    lines = node.strip("\n").split("\n")
    m = re.match(r"File: [^,]+,\s+Node: ([^,]+)(,|$)", lines[0])
    if not m or m.group(1) in SKIP:
        continue
    nodes += 1
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
    # "*note Title: Node." (a reference with its own label) reads as "Title".
    text = re.sub(r"(\(?)\*([Nn])ote\s+([^:]+?):\s+[^.,]+[.,]",
                  lambda m: m.group(1) + ("See " if m.group(2) == "N" else "") + " ".join(m.group(3).split()),
                  text)
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
# The digraph command's table of 100-odd builtin sequences is data, not prose: drop it.
paras = [p for p in paras if "Sequence   Octal   Digraph" not in p
         and p.strip() != "The following table is the builtin sequences."]
text = "\n\n".join(paras) + "\n"
if nodes < 150 or "*note" in text.lower():
    sys.exit(f"tech-gnu-screen: unexpected text ({nodes} nodes)")
with open(dst, "w", encoding="utf-8") as f:
    f.write(text)
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
