#!/usr/bin/env bash
# Plain-text sources for the benchmarks, from the documentation rustup installs with every
# toolchain (nothing is downloaded):
#   benches/fetch-texts.sh DIR          the chapters of "The Rust Programming Language",
#                                       one file each: sources for `seamcut eval topics`
#   benches/fetch-texts.sh --books DIR  two long documents for the retrieval questions in
#                                       benches/questions/: rust-book.txt (the whole book,
#                                       ~166k words) and nomicon.txt (the Rustonomicon, ~33k)
# Code listings are dropped; paragraphs, headings and list items become blank-line
# separated blocks.
set -euo pipefail
mode=chapters
if [ "${1:-}" = "--books" ]; then mode=books; shift; fi
out="${1:?usage: fetch-texts.sh [--books] DIR}"
docs="$(rustc --print sysroot)/share/doc/rust/html"
[ -d "$docs/book" ] || { echo "the Rust book is not installed at $docs/book (rustup component add rust-docs)"; exit 1; }
mkdir -p "$out"
python3 - "$mode" "$docs" "$out" <<'PY'
import glob, html, os, re, sys
mode, docs, out = sys.argv[1:4]

def text(path):
    s = open(path, encoding="utf-8").read()
    m = re.search(r"<main>(.*)</main>", s, re.S)
    s = m.group(1) if m else s
    s = re.sub(r"<pre.*?</pre>", "", s, flags=re.S)
    s = re.sub(r"</(p|h\d|li|dt|dd|tr|blockquote)>", "\n\n", s)
    s = html.unescape(re.sub(r"<[^>]+>", "", s))
    s = re.sub(r"[ \t]+\n", "\n", s)
    return re.sub(r"\n{3,}", "\n\n", s).strip() + "\n"

if mode == "chapters":
    for f in sorted(glob.glob(os.path.join(docs, "book", "ch*.html"))):
        s = text(f)
        if len(s) > 2000:
            open(os.path.join(out, os.path.basename(f)[:-5] + ".txt"), "w", encoding="utf-8").write(s)
else:
    for name, book in [("rust-book", "book"), ("nomicon", "nomicon")]:
        open(os.path.join(out, name + ".txt"), "w", encoding="utf-8").write(text(os.path.join(docs, book, "print.html")))
PY
echo "wrote $(ls "$out" | wc -l) files to $out"
