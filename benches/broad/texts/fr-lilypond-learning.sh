#!/usr/bin/env bash
# fr-lilypond-learning: "LilyPond — Manuel d'initiation", the French edition of the Learning Manual
# of GNU LilyPond 2.24.1 (the music engraving program; manual by Han-Wen Nienhuys, Jan
# Nieuwenhuizen, Graham Percival and others, translated by the LilyPond French team; GFDL 1.3+),
# from the one-page HTML learning-big-page.fr.html in Debian's lilypond-doc-html-fr 2.24.1-2
# package. No public-domain French novel or essay ships in a Debian or PyPI package that we could
# find (the French Debian Administrator's Handbook in debian-handbook 11 is a third untranslated
# English); this is long explanatory French prose on music notation (installation, tutorial, common
# notation, fundamental concepts, tweaking output), unlike the Debian material of the German text.
# The five chapters are kept in order; the appendices (templates, the GFDL, the index), the
# navigation bars, menus and tables of contents, and the pictures of music are dropped. Headings,
# paragraphs, list items and notes are paragraphs; each LilyPond input example is one block that
# keeps its lines; each table (engravers, context properties...) is one block, a line per row,
# cells joined by " | ".
set -euo pipefail

out=${1:?usage: fr-lilypond-learning.sh OUTDIR}
name=fr-lilypond-learning
pkg=lilypond-doc-html-fr
ver=2.24.1-2
deb=${pkg}_${ver}_all.deb
sha=6e71579c7cacb85a964ddb44a1911895065ebc57609e4f65eda57b9ef4b0f564

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg=$ver"

extract_deb "$deb"

python3 - "$tmp/usr/share/doc/lilypond/html/Documentation/learning-big-page.fr.html" "$out/$name.txt" <<'PY'
import re
import sys
from html.parser import HTMLParser

src, dst = sys.argv[1], sys.argv[2]
page = open(src, encoding="utf-8").read()

BLOCKS = {"p", "h1", "h2", "h3", "h4", "li", "pre", "dt", "dd", "tr"}
VOID = {"img", "br", "hr", "input", "meta", "link", "col", "area", "base", "wbr"}


class Extract(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paras, self.buf = [], []
        self.stack = []      # open elements: (tag, skipped)
        self.skip = 0        # depth inside skipped elements
        self.pre = 0
        self.rows = None     # the rows of the data table being read
        self.started = self.done = False

    def flush(self):
        text = "".join(self.buf)
        self.buf = []
        if self.pre:
            lines = [l.rstrip() for l in text.split("\n")]
            while lines and not lines[0].strip():
                lines.pop(0)
            while lines and not lines[-1].strip():
                lines.pop()
            text = "\n".join(lines)
        else:
            text = " ".join(text.split())
        if text and self.started and not self.done and not self.skip:
            (self.paras if self.rows is None else self.rows).append(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class") or ""
        if tag == "h1" and cls == "chapter":
            self.started = True
        if tag == "h1" and cls == "appendix":
            self.done = True
        if tag in VOID:
            return
        skipped = (tag == "table" and cls in ("nav_table", "menu")) or \
                  (tag == "div" and cls == "contents") or (tag == "ul" and cls == "toc") or \
                  (tag == "p" and cls.startswith(("footer_", "toc_"))) or tag in ("script", "style")
        if tag in BLOCKS:
            self.flush()
            if tag == "pre":
                self.pre += 1
        if tag in ("td", "th") and "".join(self.buf).strip():
            self.buf.append(" | ")
        if tag == "table" and not skipped and not self.skip:
            self.flush()
            self.rows = []
        self.stack.append((tag, skipped))
        if skipped:
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        # close up to the matching open element (the HTML is well nested, but be safe)
        while self.stack:
            t, skipped = self.stack.pop()
            if t in BLOCKS:
                self.flush()
                if t == "pre":
                    self.pre -= 1
            if skipped:
                self.skip -= 1
            if t == "table" and self.rows is not None and not self.skip:
                self.flush()
                rows, self.rows = self.rows, None
                if rows:
                    self.paras.append("\n".join(rows))
            if t == tag:
                break

    def handle_data(self, data):
        if not self.skip:
            self.buf.append(data)


p = Extract()
p.feed(page)
p.close()
paras = p.paras
chapters = [x for x in paras if re.fullmatch(r"[1-5]\. .+", x)]
if len(chapters) != 5 or not paras[0].startswith("1. Installation"):
    sys.exit(f"fr-lilypond-learning: unexpected text ({chapters})")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
