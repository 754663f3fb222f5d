#!/usr/bin/env bash
# fiction-melville-moby-dick: Herman Melville, Moby-Dick; or, The Whale (New York, 1851), the
# first 42 of its 135 chapters ("Loomings" to "The Whiteness of the Whale": Ishmael and Queequeg
# in New Bedford and Nantucket, the Pequod's sailing, Ahab's quarter-deck oath, the cetology
# and the chapter "Moby Dick"), about 71k words: first-person American narrative fiction with
# dialogue, sermon, a dramatic chapter and essayistic digressions. It ships inside Debian's
# package r-cran-tokenizers 0.3.0-1 (the R package tokenizers; Project Gutenberg's EBook #2701
# as one string) as the character vector `mobydick` in the lazy-load data base data/Rdata.rdb;
# this script reads that R serialization with the standard library alone (the package is built
# per architecture, so the amd64 build is pinned; its data is the same on every one). The
# Gutenberg header and licence, the etymology and extracts, and chapters 43-135 with the
# epilogue are dropped. Each prose paragraph becomes one line (hard wraps joined), verse keeps
# its lines, paragraphs are separated by blank lines, "CHAPTER N. Title." headings stay as
# paragraphs of their own, and the _italic_ underscores go.
set -euo pipefail

out=${1:?usage: fiction-melville-moby-dick.sh OUTDIR}
name=fiction-melville-moby-dick
pkg=r-cran-tokenizers
ver=0.3.0-1
deb=${pkg}_${ver}_amd64.deb
sha=6312f013ebfde5650235bfd7ba5c44d9e4cf9f2da9855337c9483fe778f0d8c7

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg:amd64=$ver"

extract_deb "$deb"

python3 - "$tmp/usr/lib/R/site-library/tokenizers/data" "$out/$name.txt" <<'PY'
import gzip
import re
import struct
import sys
import zlib

src, dst = sys.argv[1], sys.argv[2]
OBJECT = "mobydick"


class Unserialize:
    """Just enough of R's XDR serialization format (version 2 or 3) for a lazy-load index and a
    character vector."""

    def __init__(self, data):
        self.b, self.p, self.refs = data, 0, []

    def int(self):
        v = struct.unpack_from(">i", self.b, self.p)[0]
        self.p += 4
        return v

    def length(self):
        v = self.int()
        if v == -1:
            hi, lo = self.int(), self.int()
            v = (hi << 32) + lo
        return v

    def top(self):
        if self.b[:2] != b"X\n":
            sys.exit("fiction-melville-moby-dick: not an XDR R serialization")
        self.p = 2
        version = self.int()
        self.int(), self.int()
        if version == 3:
            n = self.int()  # then the native encoding's name
            self.p += n
        return self.item()

    def item(self):
        flags = self.int()
        kind = flags & 0xFF
        has_attr, has_tag = flags & (1 << 9), flags & (1 << 10)
        if kind == 254:  # NILVALUE
            return None
        if kind in (253, 252, 251, 250, 242, 241):  # environments and markers
            return ("special", kind)
        if kind == 255:  # REFSXP
            k = flags >> 8 or self.int()
            return self.refs[k - 1]
        if kind in (249, 248, 247):  # namespace, package, persistent
            self.int()
            v = ("persist", [self.item() for _ in range(self.int())])
            self.refs.append(v)
            return v
        if kind == 1:  # SYMSXP
            v = ("sym", self.item())
            self.refs.append(v)
            return v
        if kind in (2, 3, 5, 6, 17, 239, 240):  # pairlists and the like
            attr = self.item() if has_attr else None
            tag = self.item() if has_tag else None
            car = self.item()
            cdr = self.item()
            cells = [(tag, car)] + (cdr[1] if isinstance(cdr, list) else [])
            return ["pairlist", cells, attr]
        if kind == 4:  # ENVSXP
            env = {}
            self.refs.append(env)
            self.int()
            for key in ("enclos", "frame", "hashtab", "attrib"):
                env[key] = self.item()
            return env
        if kind == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None
            raw = self.b[self.p:self.p + n]
            self.p += n
            return raw.decode("latin-1" if (flags >> 12) & 4 else "utf-8")
        if kind in (10, 13):
            n = self.length()
            v = list(struct.unpack_from(">%di" % n, self.b, self.p))
            self.p += 4 * n
        elif kind == 14:
            n = self.length()
            v = list(struct.unpack_from(">%dd" % n, self.b, self.p))
            self.p += 8 * n
        elif kind in (16, 19, 20):  # STRSXP, VECSXP, EXPRSXP
            v = [self.item() for _ in range(self.length())]
        elif kind == 24:
            n = self.length()
            v = self.b[self.p:self.p + n]
            self.p += n
        else:
            sys.exit(f"fiction-melville-moby-dick: unsupported R type {kind}")
        if has_attr:
            return ("attr", v, self.item())
        return v


def with_names(x):
    if isinstance(x, tuple) and x[0] == "attr":
        for tag, value in x[2][1]:
            if tag == ("sym", "names"):
                return x[1], value
        return x[1], None
    return x, None


index, keys = with_names(Unserialize(gzip.open(src + "/Rdata.rdx").read()).top())
variables, names = with_names(index[keys.index("variables")])
offset, size = variables[names.index(OBJECT)]
with open(src + "/Rdata.rdb", "rb") as f:
    f.seek(offset)
    blob = f.read(size)
book, _ = with_names(Unserialize(zlib.decompress(blob[4:])).top())
lines = book[0].replace("\r", "").split("\n")
start = lines.index("CHAPTER 1. Loomings.")
end = lines.index("CHAPTER 43. Hark!")

paras, cur = [], []
for line in lines[start:end] + [""]:
    if line.strip():
        cur.append(line.rstrip())
    elif cur:
        if all(l.startswith("    ") for l in cur):  # verse: one line each
            paras.append("\n".join(l.strip() for l in cur))
        else:
            paras.append(" ".join(l.strip() for l in cur))
        cur = []
paras = [re.sub(r"_([^_]+)_", r"\1", p) for p in paras]
if any("_" in p for p in paras):
    sys.exit("fiction-melville-moby-dick: unbalanced italics")
chapters = sum(1 for p in paras if re.fullmatch(r"CHAPTER \d+\. .+", p))
if chapters != 42 or not paras[-1]:
    sys.exit(f"fiction-melville-moby-dick: unexpected text ({chapters} chapters)")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
