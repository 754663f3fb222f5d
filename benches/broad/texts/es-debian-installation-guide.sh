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

PYTHONPATH="$(dirname "$0")/.." python3 - "$tmp/usr/share/doc/$pkg/es" "$out/$name.txt" <<'PY'
import os
import re
import sys

from docbook_html import blocks_of

src, dst = sys.argv[1], sys.argv[2]
DROP = {"index.html", "apes03.html", "apes04.html", "apf.html"}

# The pages in the order of the table of contents on the title page.
index = open(os.path.join(src, "index.html"), encoding="utf-8").read()
pages = []
for href in re.findall(r'<a href="([a-z0-9]+\.html)"', index):
    if href not in pages and href not in DROP:
        pages.append(href)
if len(pages) != 80 or pages[0] != "pr01.html" or pages[-1] != "apes02.html":
    sys.exit(f"es-debian-installation-guide: unexpected table of contents ({len(pages)} pages)")

blocks = blocks_of([os.path.join(src, page) for page in pages])
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(blocks) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
