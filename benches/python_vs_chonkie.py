"""From Python, in one process: seamcut.Chunker against Chonkie's SemanticChunker.

    .venv-bench/bin/python benches/python_vs_chonkie.py TEXT_FILE --model static|minilm \
        [--rounds 3] [--threads 2] [--mb N]

Needs the packages in benches/requirements-bench.txt and a release seamcut wheel in the same
venv (`maturin build --release --manifest-path bindings/python/Cargo.toml -o target/wheels`
then `pip install target/wheels/seamcut-*.whl`). Same text, same model folder on both sides:
`static` is models/default (seamcut's built-in copy; model2vec StaticModel for Chonkie),
`minilm` is models/all-MiniLM-L6-v2 (SentenceTransformer on CPU for Chonkie). seamcut runs
`seamcut.Chunker("maxmin", model=...).chunk(text)`, Chonkie `SemanticChunker(chunk_size=256)`
with its other defaults; both cap chunks at 256 tokens of the model's tokenizer. Each round
times the model load + first chunk (a fresh chunker; seamcut's model cache is per process, so
its load counts in round 1 only, shown apart) and a second chunk call with the chunker warm.
Rounds alternate the two, so a noisy machine affects both alike; the last line gives the
medians and the ratio (`speedup_warm`: seamcut MB/s over Chonkie MB/s, chunkers loaded).
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from chunk_vs_chonkie import MODEL_DIR, load_chonkie, read_text, setup  # noqa: E402


def timed(make, text):
    """(load + first chunk seconds, second chunk seconds, chunks) for a chunker `make()` builds."""
    t0 = time.perf_counter()
    chunker = make()
    chunker.chunk(text)
    t1 = time.perf_counter()
    chunks = chunker.chunk(text)
    return t1 - t0, time.perf_counter() - t1, chunks


def main():
    a = setup()
    import chonkie
    import seamcut
    seamcut.set_num_threads(a.threads)
    if a.model == "minilm":
        import torch
        torch.set_num_threads(a.threads)
    model = "default" if a.model == "static" else MODEL_DIR["minilm"]

    text = read_text(a.text, a.mb)
    mb = len(text.encode("utf-8")) / 1e6
    print(f"{a.text}: {mb:.3f} MB, model {a.model}, {a.threads} threads, {a.rounds} alternating rounds, "
          f"chonkie {chonkie.__version__}, seamcut {seamcut.__version__}", flush=True)
    s_cold, s_warm, c_cold, c_warm = [], [], [], []
    for r in range(a.rounds):
        cold, warm, s_chunks = timed(lambda: seamcut.Chunker("maxmin", model=model, max_tokens=256), text)
        s_cold.append(cold)
        s_warm.append(warm)
        cold, warm, c_chunks = timed(lambda: load_chonkie(a.model), text)
        c_cold.append(cold)
        c_warm.append(warm)
        print(f"round {r + 1}: seamcut load+chunk {s_cold[-1]:7.2f} s, chunk {s_warm[-1]:7.2f} s | "
              f"chonkie load+chunk {c_cold[-1]:7.2f} s, chunk {c_warm[-1]:7.2f} s", flush=True)
    assert all(text[c.start_index:c.end_index] == c.text for c in s_chunks)
    res = {"model": a.model, "mb": round(mb, 4), "threads": a.threads, "rounds": a.rounds,
           "seamcut_first_s": s_cold[0], "seamcut_warm_s": statistics.median(s_warm),
           "chonkie_cold_s": statistics.median(c_cold), "chonkie_warm_s": statistics.median(c_warm),
           "seamcut_chunks": len(s_chunks), "chonkie_chunks": len(c_chunks),
           "seamcut_mean_tokens": statistics.fmean(c.token_count for c in s_chunks) if s_chunks else 0,
           "chonkie_mean_tokens": statistics.fmean(c.token_count for c in c_chunks) if c_chunks else 0}
    res["seamcut_mb_s"] = mb / res["seamcut_warm_s"]
    res["chonkie_mb_s"] = mb / res["chonkie_warm_s"]
    res["speedup_warm"] = res["seamcut_mb_s"] / res["chonkie_mb_s"]
    res["speedup_cold"] = res["chonkie_cold_s"] / statistics.median(s_cold)
    print(f"warm: seamcut {res['seamcut_mb_s']:.3f} MB/s | chonkie {res['chonkie_mb_s']:.3f} MB/s | "
          f"speedup {res['speedup_warm']:.2f}x (with load: {res['speedup_cold']:.2f}x)")
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in res.items()}))


if __name__ == "__main__":
    main()
