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
#   benches/fetch-texts.sh --zh DIR     Chinese sources for `seamcut eval topics`: the prose
#                                       paragraphs of the Debian Reference and the Debian FAQ
#                                       in Simplified Chinese, one file per chapter, from two
#                                       pinned Debian packages (fetched with apt-get download,
#                                       checked by SHA-256, cached in $SEAMCUT_CACHE or
#                                       target/fetch).
set -euo pipefail
mode=chapters
case "${1:-}" in
  --books) mode=books; shift ;;
  --zh) mode=zh; shift ;;
esac
out="${1:?usage: fetch-texts.sh [--books|--zh] DIR}"
if [ "$mode" = zh ]; then
  cache="${SEAMCUT_CACHE:-$(cd "$(dirname "$0")/.." && pwd)/target/fetch}"
  mkdir -p "$cache" "$out"
  while read -r sum path; do
    deb="$cache/$(basename "$path")"
    if ! echo "$sum  $deb" | sha256sum -c --status 2>/dev/null; then
      # The package and version from the file name (pool/.../NAME_VERSION_all.deb), fetched
      # with apt (run apt-get update once on a new machine).
      pv="$(basename "$path" _all.deb)"
      rm -f "$deb"
      (cd "$cache" && apt-get download -qq "${pv%%_*}=${pv#*_}" >/dev/null) \
        || { echo "fetch-texts.sh: cannot download ${pv%%_*}=${pv#*_} (apt-get update first?)"; exit 1; }
      echo "$sum  $deb" | sha256sum -c --status || { echo "fetch-texts.sh: $path: checksum mismatch"; exit 1; }
    fi
    mkdir -p "$cache/x"
    dpkg-deb -x "$deb" "$cache/x"
  done <<'DEBS'
6d2d8d9a646397e28b04cdff23d2e4374101ebf9be348e35961af62c8a2d0977 pool/main/d/debian-reference/debian-reference-zh-cn_2.100_all.deb
3545356b1aa04d87e91dd15e8406210cf5b4f476662e597897bcb42234591758 pool/main/d/debian-faq/debian-faq-zh-cn_11.1_all.deb
DEBS
  python3 - "$cache/x" "$out" <<'PY'
import glob, html, os, re, sys
root, out = sys.argv[1], sys.argv[2]
files = [("ref", f) for f in sorted(glob.glob(os.path.join(root, "usr/share/debian-reference/*.zh-cn.html")))]
files += [("faq", f) for f in sorted(glob.glob(os.path.join(root, "usr/share/doc/debian/FAQ/zh-cn/*.html")))]
for src, f in files:
    paras = []
    for p in re.findall(r"<p>(.*?)</p>", open(f, encoding="utf-8").read(), re.S):
        t = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", p))).strip()
        # Prose only: at least 20 Chinese characters (drops commands, URLs, captions).
        if len(re.findall(r"[\u4e00-\u9fff]", t)) >= 20:
            paras.append(t)
    if len(paras) >= 5:
        name = os.path.basename(f).split(".")[0]
        open(os.path.join(out, f"{src}-{name}.txt"), "w", encoding="utf-8").write("\n\n".join(paras) + "\n")
PY
  echo "wrote $(ls "$out" | wc -l) files to $out"
  exit 0
fi
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
