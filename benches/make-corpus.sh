#!/usr/bin/env bash
# A large JSONL corpus from offline text, for memory and throughput runs:
#   benches/make-corpus.sh DIR GB [SEED]
# writes DIR/corpus-NNN.jsonl (256 MB each, GB gigabytes in all) of documents
# {"id", "text", "source"} made of runs of 5-60 consecutive paragraphs drawn from the broad
# benchmark's six texts (benches/broad/fetch.sh: fiction, technical, reference,
# transcripts, German), deterministic for a seed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: benches/make-corpus.sh DIR GB [SEED]}"
gb="${2:?usage: benches/make-corpus.sh DIR GB [SEED]}"
seed="${3:-1}"
src="${SEAMCUT_CACHE:-$(cd "$here/.." && pwd)/target/fetch}/broad-texts"
mkdir -p "$src" "$out"
"$here/broad/fetch.sh" "$src" >/dev/null
python3 - "$src" "$out" "$gb" "$seed" <<'PY'
import glob, json, os, random, sys
src, out, gb, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
texts = []
for f in sorted(glob.glob(os.path.join(src, "*.txt"))):
    paras = [p for p in open(f, encoding="utf-8").read().split("\n\n") if p.strip()]
    texts.append((os.path.basename(f)[:-4], paras))
total, target, n, part = 0, int(gb * 1e9), 0, 0
w = None
while total < target:
    if w is None or w.tell() >= 256 << 20:
        if w:
            w.close()
        w = open(os.path.join(out, f"corpus-{part:03d}.jsonl"), "w", encoding="utf-8")
        part += 1
    name, paras = texts[rng.randrange(len(texts))]
    k = rng.randint(5, 60)
    i = rng.randrange(max(1, len(paras) - k))
    text = "\n\n".join(paras[i:i + k]) + "\n"
    line = json.dumps({"id": f"d{n:08d}", "text": text, "source": name}, ensure_ascii=False)
    w.write(line + "\n")
    total += len(line) + 1
    n += 1
w.close()
print(f"{n} documents, {total / 1e9:.2f} GB in {part} files in {out}")
PY
