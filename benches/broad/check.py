#!/usr/bin/env python3
"""Check the broad retrieval benchmark's questions against the texts `benches/broad/fetch.sh DIR`
extracts: usage `python3 benches/broad/check.py DIR [NAME ...]`.

For every `benches/broad/questions/NAME.jsonl` (one JSON object per line:
{"question", "must_contain", "evidence": [[start, end], ...]}), against DIR/NAME.txt:
- `must_contain` has at least 5 words and occurs exactly once in the text, compared as
  `seamcut eval retrieval` compares (case-insensitive, whitespace runs as one space, quotes
  ' " ‘ ’ “ ” as one character);
- every evidence span is a byte range [start, end) of the UTF-8 text, on character boundaries,
  sorted and disjoint, and the spans' text (joined by a space) contains `must_contain`;
- evidence spans stay short (at most 2,000 bytes in all): the passage that answers, not a chapter;
- no question is asked twice.
Exit status 1 and one line per problem when anything fails.
"""
import json
import os
import re
import sys

QUOTES = str.maketrans({"'": '"', "\u2018": '"', "\u2019": '"', "\u201c": '"', "\u201d": '"'})


def normalize(s: str) -> str:
    return " ".join(s.split()).translate(QUOTES).lower()


def main() -> int:
    texts = sys.argv[1]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "questions")
    names = sys.argv[2:] or sorted(f[:-6] for f in os.listdir(here) if f.endswith(".jsonl"))
    problems, total = [], 0
    for name in names:
        raw = open(os.path.join(texts, name + ".txt"), "rb").read()
        text = raw.decode("utf-8")
        norm = normalize(text)
        seen = set()
        for lineno, line in enumerate(open(os.path.join(here, name + ".jsonl"), encoding="utf-8"), 1):
            if not line.strip():
                continue
            where = f"{name}.jsonl:{lineno}"
            try:
                q = json.loads(line)
                question, needle, evidence = q["question"], q["must_contain"], q["evidence"]
            except (ValueError, KeyError) as e:
                problems.append(f"{where}: bad record ({e})")
                continue
            total += 1
            n = normalize(needle)
            if len(n.split(" ")) < 5:
                problems.append(f"{where}: must_contain has fewer than 5 words")
            count = len(re.findall(re.escape(n), norm))
            if count != 1:
                problems.append(f"{where}: must_contain occurs {count} times in the text")
            if question in seen:
                problems.append(f"{where}: duplicate question")
            seen.add(question)
            prev, size, parts = 0, 0, []
            for span in evidence:
                s, e = span
                if not (prev <= s < e <= len(raw)):
                    problems.append(f"{where}: evidence {span} out of order or out of bounds")
                    break
                try:
                    parts.append(raw[s:e].decode("utf-8"))
                except UnicodeDecodeError:
                    problems.append(f"{where}: evidence {span} not on character boundaries")
                    break
                prev, size = e, size + e - s
            else:
                if not evidence:
                    problems.append(f"{where}: no evidence spans")
                elif n not in normalize(" ".join(parts)):
                    problems.append(f"{where}: must_contain is not inside the evidence spans")
                if size > 2000:
                    problems.append(f"{where}: evidence spans {size} bytes (at most 2000)")
    for p in problems:
        print(p)
    print(f"{total} questions over {len(names)} texts, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
