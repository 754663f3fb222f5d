#!/usr/bin/env bash
# reference-devils-dictionary: "The Devil's Dictionary" by Ambrose Bierce (written 1881-1906;
# the text of the 1911 Albert and Charles Boni edition, from the Internet Wiretap 1st Online
# Edition of 15 April 1993), a public-domain satirical dictionary: the author's preface and
# all of its ~1,000 entries from ABASEMENT to ZOOLOGY, each a headword with its part of speech
# and a definition, often with an anecdote or a verse illustration; about 60k words. From the
# dictd database in Debian's dict-devil 1.0-13.1 package (the dictd index gives each entry's
# place). Each entry keeps its book form "HEADWORD, n.  Definition..." as one paragraph (hard
# wraps joined, as are quoted prose passages); quoted verse keeps its lines (the block's
# common indent dropped); an attribution goes on its own line after its quotation; the
# _underscore_ italics marks and the dictd {cross reference} braces go. The dictd database's
# own entries, the Wiretap title page before the preface and the second copies of two entries
# the database holds twice are dropped.
set -euo pipefail

out=${1:?usage: reference-devils-dictionary.sh OUTDIR}
name=reference-devils-dictionary
pkg=dict-devil
ver=1.0-13.1
deb=${pkg}_${ver}_all.deb
sha=6a535684def2a1f70cd42da16d12d43f0e9dc3e54e4a329178eebab3170e3154

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


data = gzip.open(src + "/devil.dict.dz").read()
entries, info = {}, None
for line in open(src + "/devil.index", encoding="utf-8"):
    head, off, size = line.rstrip("\n").split("\t")
    if head == "00databaseinfo":
        info = (b64(off), b64(size))
    elif not head.startswith("00database"):
        entries.setdefault(b64(off), b64(size))


def join(lines):
    """Join hard-wrapped lines; a word broken at a hyphen ("cannon-" / "shot") stays whole."""
    out = ""
    for l in lines:
        l = l.strip()
        if not out:
            out = l
        elif re.search(r"[A-Za-z]-$", out):
            out += l
        else:
            out += " " + l
    return out


def paragraphs(text):
    """Book paragraphs of one entry (or of the preface): prose joined, verse kept by line."""
    out = []
    blocks = re.split(r"\n\s*\n", text.strip("\n"))
    for block in blocks:
        lines = [l.rstrip() for l in block.split("\n") if l.strip()]
        if not lines:
            continue
        if all(l.startswith(" ") for l in lines):
            # Verse (or a quotation set off by indentation): keep its lines; a line pushed far
            # right is the attribution ("G.J."), which goes on its own line, unindented.
            indent = lambda l: len(l) - len(l.lstrip())
            verse = [l for l in lines if indent(l) < 30]
            least = min(map(indent, verse)) if verse else 0
            if (len(verse) > 1 and indent(verse[0]) > least
                    and sum(len(l) > 55 for l in verse) * 2 >= len(verse)):
                # Not verse but a quoted prose passage (its first line indented further):
                # join it like prose, a further-indented line opening a new paragraph.
                groups = []
                for l in verse:
                    if indent(l) > least or not groups:
                        groups.append([])
                    groups[-1].append(l)
                quoted = [join(g) for g in groups]
                quoted[-1] += "".join("\n" + l.strip() for l in lines if indent(l) >= 30)
                out += quoted
                continue
            kept = [l.strip() if indent(l) >= 30 else l[least:] for l in lines]
            out.append("\n".join(kept))
            continue
        # Prose: a line indented after an unindented one starts a new paragraph (the preface
        # runs its paragraphs together that way).
        cur = []
        for l in lines:
            if l.startswith(" ") and cur:
                out.append(join(cur))
                cur = []
            cur.append(l)
        out.append(join(cur))
    return out


paras = []
preface = data[info[0]:info[0] + info[1]].decode("utf-8")
start = preface.index("PREFACE")
paras.append("PREFACE")
paras += paragraphs(preface[start + len("PREFACE"):])
count, seen = 0, set()
for off, size in sorted(entries.items()):
    entry = data[off:off + size]
    if entry in seen:
        continue  # PRECEDENT and PRECIPITATE are in the database twice, word for word
    seen.add(entry)
    count += 1
    paras += paragraphs(entry.decode("utf-8"))

# "_word_" marks italics and "{WORD}" a dictd cross reference: keep the words only.
text = "\n\n".join(re.sub(r"\{([^{}]*)\}", r"\1", p.replace("_", "")) for p in paras) + "\n"
if count < 990 or not text.startswith("PREFACE\n\nThe Devil's Dictionary was begun"):
    sys.exit(f"reference-devils-dictionary: unexpected text ({count} entries)")
with open(dst, "w", encoding="utf-8") as f:
    f.write(text)
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
