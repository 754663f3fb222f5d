"""Two Python threads chunking at once against the same work in series: how much the
released GIL buys. A measurement, printed, never asserted (it depends on the machine and
its load; tests/python/test_bindings.py only checks that Python runs during chunk()).

    .venv-ci/bin/python benches/python_threads.py [--rounds 5] [--docs 120]

Needs a seamcut wheel in the venv (tests/run.sh installs one into .venv-ci; a release wheel
is faster, but the ratio is what this measures). The work: `--docs` documents of 3000
characters from benches/data-sentences.txt, chunked one call each by
`Chunker("recursive", max_tokens=64)`, done twice, either in series on one thread or by two
threads at once. Each call is short and mostly on one core, so two threads can use two cores
only if neither holds the GIL. Prints one JSON line: the best of `--rounds` for each, and
`speedup` (serial over parallel; about 2 on two idle cores, 1 if the GIL were held).
"""
import argparse
import json
import os
import threading
import time

import seamcut

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--docs", type=int, default=120)
    a = p.parse_args()

    chunker = seamcut.Chunker("recursive", max_tokens=64)
    data = open(os.path.join(ROOT, "benches", "data-sentences.txt"), encoding="utf-8").read()
    text = (data + "\n\n") * max(1, (a.docs * 3000) // len(data) + 1)
    docs = [text[i : i + 3000] for i in range(0, a.docs * 3000, 3000)]

    def many():
        for d in docs:
            chunker.chunk(d)

    def serial():
        many()
        many()

    def parallel():
        ts = [threading.Thread(target=many) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def best(f):
        times = []
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return min(times)

    many()  # warm up: the sizer, the thread pool
    s, par = best(serial), best(parallel)
    print(
        json.dumps(
            {
                "cores": len(os.sched_getaffinity(0)),
                "docs": len(docs),
                "rounds": a.rounds,
                "serial_s": round(s, 4),
                "parallel_s": round(par, 4),
                "speedup": round(s / par, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
