#!/usr/bin/env bash
# Chunk vectors that carry their document, on the broad benchmark (issue 22's protocol): for
# each dense retriever and cap, the same questions ranked over
#   rec-text      recursive chunks, each embedded on its own (what indexers do today: row a)
#   rec-late      the same chunks, late vectors (row b)
#   rec-text-ctx  the same chunks, each embedded with its context (title > headings) in front
#   rec-blend     the same chunks, the normalised sum of the text and the late vector
#                 (`--embeddings blend`)
#   rec-blend-ctx the same, the text vector with its context in front (`--embeddings blend
#                 --context-prefix`: the recipe the README recommends for an index)
#   maxmin-late   Max-Min with late unit vectors on the retriever's model, its chunk vectors
#                 from the same pass (row c), with recursive size-matched to it (late vectors)
#   maxmin-text, maxmin-blend-ctx  the same chunks (Max-Min and recursive size-matched to it)
#                 with each chunk's text embedded alone, and with the recipe (issue 41 §4);
#                 MAXMIN_UNITS=independent takes Max-Min's unit vectors from each unit alone
#                 instead (rows named maxmin-independent-*)
#   chonkie-late  Chonkie's LateChunker with the same model and chunk_size (row d; needs
#                 CHONKIE_PY, a python with benches/requirements-bench.txt)
#   rec-overlap   recursive chunks with windows into their neighbours (`--overlap`; row e),
#                 each window embedded on its own and returned (what is scored), size-matched:
#                 the chunks' cap and overlap are chosen so that the windows' mean size
#                 matches rec-text's chunks (OVERLAP_SIZED, "CAP:CHUNK_CAP:OVERLAP ...")
#   rec-overlap-blend-ctx  windows and late pooling together: the recipe with `--overlap`
#                 (the late half pools each chunk, the text half embeds its window)
# and for BM25: rec-text, rec-text-ctx (row f), rec-overlap. Every row is one `seamcut eval retrieval --json`
# over the split's texts (pooled, in manifest order); chonkie-late is scored per text.
#   benches/broad/late.sh OUT.jsonl [SPLIT]        SPLIT: dev (default), heldout
# Settings by environment: TEXTS (names in the manifest: only these of the split),
# RETRIEVERS ("all-MiniLM-L6-v2 all-mpnet-base-v2", folders in models/), CAPS ("128 256"),
# SEAMCUT_BIN (target/release/seamcut), ROWS (all of the above),
# LATE (flags for the late pass and Max-Min, e.g. "--late-window 128", "--hard-thr 0.65"),
# OVERLAP_SIZED ("128:80:20 256:176:44": with all-MiniLM-L6-v2's tokenizer on the dev texts,
# windows of 88.4 and 195.9 tokens on average against rec-text's 90.2 and 201.7).
# Then: python3 benches/broad/late_table.py OUT.jsonl
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: benches/broad/late.sh OUT.jsonl [dev|heldout]}"
split="${2:-dev}"
texts="${SEAMCUT_CACHE:-$PWD/target/fetch}/broad-texts"
benches/broad/fetch.sh "$texts" >/dev/null
mapfile -t names < <(python3 -c "
import json
m=json.load(open('benches/broad/manifest.json'))
only='${TEXTS:-}'.split()
for t in m['texts']:
    if ('$split'=='all' or t['split']=='$split') and (not only or t['name'] in only): print(t['name'])")
docs=(); paths=()
for n in "${names[@]}"; do
  docs+=(--document "$texts/$n.txt" --questions "benches/broad/questions/$n.jsonl")
  paths+=("$texts/$n.txt")
done
names_json=$(printf '"%s",' "${names[@]}"); names_json="[${names_json%,}]"
rows="${ROWS:-rec-text rec-late rec-text-ctx rec-blend rec-blend-ctx maxmin-late chonkie-late rec-overlap rec-overlap-blend-ctx}"
bin="${SEAMCUT_BIN:-target/release/seamcut}"
emit() { # row retriever cap [overlap]: wrap each JSON line of stdin
  sed "s|^|{\"row\":\"$1\",\"retriever\":\"$2\",\"cap\":$3,\"overlap\":${4:-0},\"split\":\"$split\",\"texts\":$names_json,\"late\":\"${LATE:-}\",\"r\":|; s|$|}|" >> "$out"
}
for cap in ${CAPS:-128 256}; do
  for r in ${RETRIEVERS:-all-MiniLM-L6-v2 all-mpnet-base-v2} bm25; do
    model=$([ "$r" = bm25 ] && echo bm25 || echo "models/$r")
    ev=("$bin" eval retrieval --json --max-tokens "$cap" --retriever "$model")
    # The overlap rows' chunk cap and overlap for this cap (default: the cap, a quarter of it).
    ocap=$cap ov=$((cap / 4))
    for m in ${OVERLAP_SIZED:-128:80:20 256:176:44}; do
      IFS=: read -r c oc o <<<"$m"
      [ "$c" = "$cap" ] && ocap=$oc ov=$o
    done
    oev=("$bin" eval retrieval --json --max-tokens "$ocap" --retriever "$model")
    for row in $rows; do
      # shellcheck disable=SC2086
      case "$row:$r" in
        rec-text:*) "${ev[@]}" --chunker recursive "${docs[@]}" | emit "$row" "$r" "$cap" ;;
        rec-text-ctx:*) "${ev[@]}" --chunker recursive --context "${docs[@]}" | emit "$row" "$r" "$cap" ;;
        rec-overlap:*) "${oev[@]}" --chunker recursive --overlap "$ov" "${docs[@]}" | emit "$row" "$r" "$cap" "$ov" ;;
        rec-late:bm25 | rec-blend*:bm25 | maxmin-*:bm25 | chonkie-late:bm25 | rec-overlap-*:bm25) ;;
        rec-overlap-blend-ctx:*)
          "${oev[@]}" --chunker recursive --overlap "$ov" --chunk-vectors blend --context ${LATE:-} "${docs[@]}" |
            emit "$row" "$r" "$cap" "$ov" ;;
        rec-late:*) "${ev[@]}" --chunker recursive --chunk-vectors late ${LATE:-} "${docs[@]}" | emit "$row" "$r" "$cap" ;;
        rec-blend:*) "${ev[@]}" --chunker recursive --chunk-vectors blend ${LATE:-} "${docs[@]}" | emit "$row" "$r" "$cap" ;;
        rec-blend-ctx:*)
          "${ev[@]}" --chunker recursive --chunk-vectors blend --context ${LATE:-} "${docs[@]}" | emit "$row" "$r" "$cap" ;;
        maxmin-late:* | maxmin-text:* | maxmin-blend-ctx:*)
          units=${MAXMIN_UNITS:-late}
          vectors=${row#maxmin-}
          flags=(--chunk-vectors "${vectors%-ctx}")
          [ "$vectors" = blend-ctx ] && flags+=(--context)
          name=$([ "$units" = late ] && echo "$row" || echo "maxmin-$units-$vectors")
          "${ev[@]}" --chunker maxmin --chunker recursive --match-size --chunker-model "models/$r" \
            --unit-vectors "$units" "${flags[@]}" ${LATE:-} "${docs[@]}" | emit "$name" "$r" "$cap" ;;
        chonkie-late:*)
          [ -n "${CHONKIE_PY:-}" ] || { echo "chonkie-late needs CHONKIE_PY" >&2; continue; }
          short=$([ "$r" = all-mpnet-base-v2 ] && echo mpnet || echo minilm)
          dir=$(mktemp -d)
          "$CHONKIE_PY" benches/late_vs_chonkie.py chunks "$dir" "${paths[@]}" --model "$short" --cap "$cap" >&2
          for b in "${names[@]}"; do
            "${ev[@]}" --chunks "$dir/$b.jsonl" --vectors "$dir/$b.npy" --questions "benches/broad/questions/$b.jsonl" |
              sed "s|^|{\"row\":\"$row\",\"retriever\":\"$r\",\"cap\":$cap,\"split\":\"$split\",\"texts\":[\"$b\"],\"late\":\"\",\"r\":|; s|$|}|" >> "$out"
          done ;;
      esac
    done
  done
done
