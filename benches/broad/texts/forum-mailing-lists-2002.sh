#!/usr/bin/env bash
# forum-mailing-lists-2002: 745 messages from eight technical mailing lists of 2002, as kept in
# the ham (non-spam) part of the SpamAssassin public mail corpus (collected August to October
# 2002; the corpus munged some addresses to example.com and "zzzz"/"yyyy"): the Freshrpms RPM
# list (Red Hat packages, apt-rpm), the Irish Linux Users' Group, exmh-users and exmh-workers
# (the exmh mail reader), spamassassin-talk and spamassassin-devel, razor-users (Vipul's Razor)
# and SecurityFocus's secprog. 2,403 messages of that corpus ship as test data of the Go
# library jwz (github.com/gatherstars-com/jwz/test/testdata/ham) in Debian's
# golang-github-gatherstars-com-jwz-dev 1.3.0-3 package (main). About 75k words of informal,
# many-author questions, answers and arguments.
# Kept: messages whose List-Id names one of those lists (others in the set, such as FoRK, the
# Forteana list, news feeds and CVS commit mails, are left out), each once (by Message-Id), under
# a heading per list, grouped by thread (subject without Re:/list tags; threads in order of
# their first message, messages by date). Each message opens with a one-line header
# "From NAME, DATE, subject: SUBJECT", then its own paragraphs as written (line breaks kept).
# Dropped: mail headers, non-text parts, quoted text (lines quoted with ">", or with "|" or "#"
# when an attribution line introduces them) and attribution lines ("X wrote:", "On DATE, X
# wrote:", "--On DATE X"), elision marks such as "[...]", and everything from the signature
# ("-- ", also indented or PGP-escaped as "- --"), a list footer, a Bugzilla footer, an
# "Original Message" block or a PGP signature on; PGP armour headers. Messages left with no
# text of their own go. Quotes in other styles ("Name> ", or ones with no attribution) and
# signatures without a "-- " line stay.
set -euo pipefail

out=${1:?usage: forum-mailing-lists-2002.sh OUTDIR}
name=forum-mailing-lists-2002
pkg=golang-github-gatherstars-com-jwz-dev
ver=1.3.0-3
deb=${pkg}_${ver}_all.deb
sha=e334566616575deea2ceaaf094aaf71143b76f2af316a6e3466fc28d6fd4641c

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg=$ver"

extract_deb "$deb"

python3 - "$tmp/usr/share/gocode/src/github.com/gatherstars-com/jwz/test/testdata/ham" "$out/$name.txt" <<'PY'
import email
import email.header
import email.utils
import os
import re
import sys
import textwrap

src, dst = sys.argv[1], sys.argv[2]

# List-Id (as the corpus spells it, addresses munged) -> heading.
LISTS = [
    ("rpm-zzzlist.freshrpms.net", "Freshrpms RPM discussion list (rpm-list)"),
    ("ilug.linux.ie", "Irish Linux Users' Group (ILUG)"),
    ("exmh-users.example.com", "Discussion list for exmh users (exmh-users)"),
    ("exmh-workers.example.com", "Discussion list for exmh developers (exmh-workers)"),
    ("spamassassin-talk.example.sourceforge.net", "Talk about SpamAssassin (spamassassin-talk)"),
    ("spamassassin-devel.example.sourceforge.net", "SpamAssassin developers (spamassassin-devel)"),
    ("razor-users.example.sourceforge.net", "Vipul's Razor users (razor-users)"),
    ("secprog.list-id.securityfocus.com", "Secure programming (SecurityFocus secprog)"),
]


def decode(h):
    if h is None:
        return ""
    out = []
    for part, cs in email.header.decode_header(str(h)):
        if isinstance(part, bytes):
            try:
                part = part.decode(cs or "latin-1")
            except (LookupError, UnicodeDecodeError):
                part = part.decode("latin-1")
        out.append(part)
    return " ".join("".join(out).split())


def body_of(msg):
    for part in msg.walk():
        if part.get_content_type() == "text/plain" and not part.get_filename():
            raw = part.get_payload(decode=True) or b""
            cs = part.get_content_charset() or "latin-1"
            try:
                return raw.decode(cs)
            except (LookupError, UnicodeDecodeError):
                return raw.decode("latin-1")
    return None


ATTRIB = re.compile(r"((wrote|writes|said|says)\s*:|^\s*quoting\b.*:|^On .*\d\d:\d\d.*)\s*$", re.I)
ATTRIB_ALONE = re.compile(r"\s*(On\b.*|[^.!?]{0,70})\b(wrote|writes|write|mused|said|says)\s*:\s*", re.I)
END = re.compile(r"^[|#>]?\s*(_{20,}|-{40,}|-+\s*Original Message\s*-+|-----BEGIN PGP SIGNATURE-----"
                 r"|Irish Linux Users' Group: .*|This sf\.net email is sponsored by.*"
                 r"|------- You are receiving this mail because: -------)$", re.I)


def clean(text):
    lines = [l.rstrip().replace("\t", "    ") for l in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0].strip():
        lines = lines[1:]
    # The PGP armour's first lines.
    if lines and lines[0].startswith("-----BEGIN PGP SIGNED MESSAGE-----"):
        lines = lines[1:]
        while lines and (lines[0].startswith("Hash:") or not lines[0].strip()):
            lines = lines[1:]
    # Everything from the signature, list footer or a forwarded original on goes.
    for i, l in enumerate(lines):
        if l.strip() in ("--", "- --") or END.match(l.strip()):
            lines = lines[:i]
            break
    # Quoted lines go, with the attribution that introduces them. Most quote with ">"; a
    # writer who quotes with "|" or "#" instead is recognised by an attribution line followed
    # by such a line, and then every line of the message so marked goes.
    marks = {">"}
    for i, l in enumerate(lines):
        if ATTRIB.search(l):
            nxt = next((x for x in lines[i + 1:] if x.strip()), "")
            if nxt[:1] in ("|", "#") and (nxt[1:2] in (" ", "")):
                marks.add(nxt[0])
    keep = []
    for i, l in enumerate(lines):
        s = l.lstrip()
        if s[:1] in marks and (s[0] == ">" or s[1:2] in (" ", "")):
            continue
        if ATTRIB.search(l):
            nxt = next((x for x in lines[i + 1:] if x.strip()), "").lstrip()
            if nxt[:1] in marks:
                # An attribution broken over two lines ("On DATE," / "NAME wrote:").
                if keep and keep[-1] == lines[i - 1] and keep[-1].startswith("On "):
                    keep.pop()
                continue
        if ATTRIB_ALONE.fullmatch(l) or l.startswith("--On "):
            continue
        if re.fullmatch(r"\s*\[\s*(\.\.\.|snip\w*|\.\.\. ?snip ?\.\.\.)\s*\]\s*", l, re.I):
            continue
        keep.append(l)
    paras, cur = [], []
    for l in keep + [""]:
        if l.strip():
            cur.append(l)
        elif cur:
            paras.append(textwrap.dedent("\n".join(cur)))
            cur = []
    return paras


msgs = {}
seen = set()
for f in sorted(os.listdir(src)):
    m = email.message_from_binary_file(open(os.path.join(src, f), "rb"))
    lid = decode(m.get("List-Id"))
    key = next((k for k, _ in LISTS if k in lid), None)
    if key is None:
        continue
    mid = (m.get("Message-Id") or m.get("Message-ID") or f).strip()
    if mid in seen:
        continue
    seen.add(mid)
    body = body_of(m)
    if body is None:
        continue
    paras = clean(body)
    if not paras:
        continue
    name, addr = email.utils.parseaddr(decode(m.get("From")))
    name = name.strip('"\' ') or addr.split("@")[0]
    when = email.utils.parsedate_to_datetime(m.get("Date"))
    subj = decode(m.get("Subject")) or "(no subject)"
    thread = re.sub(r"^(\s*(re|fwd?|aw)\s*(\[\d+\])?:\s*|\s*\[[^\]]*\]\s*)+", "", subj, flags=re.I).strip().lower()
    msgs.setdefault(key, []).append((thread, when, name, subj, paras, f))

out = []
nmsg = 0
for key, title in LISTS:
    items = msgs.get(key, [])
    first = {}
    for t, w, *_ in items:
        first[t] = min(first.get(t, w), w, key=lambda d: d.timestamp())
    items.sort(key=lambda x: (first[x[0]].timestamp(), x[0], x[1].timestamp()))
    out.append(title)
    for thread, when, name, subj, paras, f in items:
        nmsg += 1
        out.append(f"From {name}, {when.strftime('%a %d %b %Y %H:%M')}, subject: {subj}")
        out.extend(paras)
with open(dst, "w", encoding="utf-8") as fh:
    fh.write("\n\n".join(out) + "\n")
if nmsg < 700:
    sys.exit(f"forum-mailing-lists-2002: unexpected corpus ({nmsg} messages)")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
