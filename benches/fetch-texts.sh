#!/usr/bin/env bash
# Write the chapters of "The Rust Programming Language" (installed by rustup with every
# toolchain) as plain text, one file per chapter, into DIR: source texts for
# `seamcut eval topics` and the retrieval questions in benches/questions/. Nothing is
# downloaded. Usage: benches/fetch-texts.sh DIR
set -euo pipefail
out="${1:?usage: fetch-texts.sh DIR}"
book="$(rustc --print sysroot)/share/doc/rust/html/book"
[ -d "$book" ] || { echo "the Rust book is not installed at $book (rustup component add rust-docs)"; exit 1; }
mkdir -p "$out"
python3 - "$book" "$out" <<'PY'
import glob, html, os, re, sys
book, out = sys.argv[1], sys.argv[2]
for f in sorted(glob.glob(os.path.join(book, "ch*.html"))):
    s = open(f, encoding="utf-8").read()
    m = re.search(r"<main>(.*)</main>", s, re.S)
    s = m.group(1) if m else s
    s = re.sub(r"<pre.*?</pre>", "", s, flags=re.S)
    s = re.sub(r"</(p|h\d|li)>", "\n\n", s)
    s = html.unescape(re.sub(r"<[^>]+>", "", s))
    s = re.sub(r"\n{3,}", "\n\n", s).strip() + "\n"
    if len(s) > 2000:
        open(os.path.join(out, os.path.basename(f)[:-5] + ".txt"), "w", encoding="utf-8").write(s)
PY
echo "wrote $(ls "$out" | wc -l) chapters to $out"
