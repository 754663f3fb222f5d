#!/usr/bin/env bash
# es-debian-installation-guide: the Spanish translation of the Debian GNU/Linux Installation Guide
# for 64-bit PC, "Guía Debian GNU/Linux de instalación" (Debian 12 "bookworm", amd64; by the
# Debian Installer team, copyright 2004-2023, GPL-2; Spanish translation by Javier
# Fernández-Sanguino Peña, Rubén Porras, Omar Campagne and others of the Debian Spanish l10n
# team), from the HTML manual in the pinned Debian package installation-guide-amd64
# 20230508+deb12u1 (an 18 MB download: every language ships in that one package; this reads
# es/). About 58k words of step-by-step technical prose in Spanish: the preface, chapters 1-8
# (what Debian is, hardware requirements, preparing, installation media, booting the installer,
# the installer's components, booting the new system, next steps) and appendices A-E (an
# installation howto, preseeding with its example file, partitioning, further information,
# E.1-E.2 of the administrivia), pages in the order of the manual's table of contents. Kept:
# headings, paragraphs, list items, notes/warnings (their label, "Nota", "Aviso", as its own
# paragraph), footnotes, and listings and preseed examples as shipped; each data table becomes
# one block with one line per row, cells joined by " | ". Dropped: the title page and tables of
# contents, navigation bars, the list of contributors and trademarks (E.3, E.4) and the text of
# the GNU GPL (appendix F). Chosen over debian-reference-es (the document de-debian-reference
# already uses, in German), the LilyPond manuals (fr-lilypond-learning) and maint-guide-es (26k
# words): a different document of the right size. The HTML extraction is de-debian-reference's.
set -euo pipefail

out=${1:?usage: es-debian-installation-guide.sh OUTDIR}
name=es-debian-installation-guide
pkg=installation-guide-amd64
ver=20230508+deb12u1
deb=${pkg}_${ver}_all.deb
sha=812c43e1dc906daf671e3efe953dc023205c238e5bd5a3021ce4ca142793573a

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg=$ver"

extract_deb "$deb"

python3 - "$tmp/usr/share/doc/$pkg/es" "$out/$name.txt" <<'PY'
import html.parser
import os
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
BLOCK = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "div", "ul", "ol", "dl",
         "blockquote", "table", "tr", "td", "th"}
VOID = {"img", "col", "meta", "link", "br", "hr"}
SKIP_DIVS = {"toc", "list-of-tables", "navheader", "navfooter"}
LAYOUT = {"Note", "Tip", "Caution", "Warning", "Important"}
DROP = {"index.html", "apes03.html", "apes04.html", "apf.html"}


class Extract(html.parser.HTMLParser):
    """Collects blocks of text: paragraphs, listings, and data tables (one line per row)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self.buf = [], []
        self.stack = []      # open elements: (tag, starts a skipped subtree)
        self.skip = 0        # depth inside skipped subtrees
        self.tables = []     # open tables: None for a layout table, else a list of row lines
        self.row = None      # cells of the current data-table row
        self.cell = None     # text of the current data-table cell

    def flush(self):
        text = " ".join("".join(self.buf).split())
        self.buf = []
        if text:
            self.blocks.append(text)

    def in_data_table(self):
        return bool(self.tables) and self.tables[-1] is not None

    def handle_startendtag(self, tag, attrs):
        if tag == "br" and not self.skip:
            (self.cell if self.cell is not None else self.buf).append(" ")

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            self.handle_startendtag(tag, attrs)
            return
        a = dict(attrs)
        skipping = not self.skip and (
            tag in ("head", "script", "style")
            or (tag == "div" and a.get("class") in SKIP_DIVS)
            or (tag == "table" and a.get("summary", "").startswith("Navigation")))
        self.stack.append((tag, skipping))
        if skipping:
            self.skip += 1
        if self.skip:
            return
        if self.cell is not None:
            if tag in BLOCK:
                self.cell.append(" ")
        elif tag == "pre":
            self.flush()
        elif tag == "table":
            self.flush()
            self.tables.append(None if a.get("summary", "") in LAYOUT else [])
        elif tag == "tr" and self.in_data_table():
            self.row = []
        elif tag in ("td", "th") and self.in_data_table():
            self.cell = []
        elif tag in BLOCK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in VOID or not any(t == tag for t, _ in self.stack):
            return
        while True:
            t, skipping = self.stack.pop()
            was_skipping = self.skip > 0
            if skipping:
                self.skip -= 1
            if t == tag:
                break
        if was_skipping:
            return
        if self.cell is not None and tag in ("td", "th"):
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif self.cell is not None:
            if tag in BLOCK:
                self.cell.append(" ")
        elif tag == "pre":
            lines = [l.rstrip() for l in "".join(self.buf).split("\n")]
            self.buf = []
            text = "\n".join(lines).strip("\n")
            if text.strip():
                self.blocks.append(text)
        elif tag == "tr" and self.in_data_table():
            if self.row and any(self.row):
                self.tables[-1].append(" | ".join(self.row))
            self.row = None
        elif tag == "table" and self.tables:
            rows = self.tables.pop()
            if rows:
                self.blocks.append("\n".join(rows))
        elif tag in BLOCK:
            self.flush()

    def handle_data(self, data):
        if not self.skip:
            (self.cell if self.cell is not None else self.buf).append(data)


# The pages in the order of the table of contents on the title page.
index = open(os.path.join(src, "index.html"), encoding="utf-8").read()
pages = []
for href in re.findall(r'<a href="([a-z0-9]+\.html)"', index):
    if href not in pages and href not in DROP:
        pages.append(href)
if len(pages) != 80 or pages[0] != "pr01.html" or pages[-1] != "apes02.html":
    sys.exit(f"es-debian-installation-guide: unexpected table of contents ({len(pages)} pages)")

blocks = []
for page in pages:
    p = Extract()
    p.feed(open(os.path.join(src, page), encoding="utf-8").read())
    p.close()
    p.flush()
    blocks.extend(p.blocks)

with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(blocks) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
