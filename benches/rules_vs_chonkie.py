"""The minima rule's split search, seamcut against chonkie_core, on the same series.

    python benches/rules_vs_chonkie.py [--points 1000000] [--rounds 5]

Needs chonkie-core and numpy, and a release build (target/release/seamcut). Both sides run
the same steps with chonkie's SemanticChunker defaults: Savitzky-Golay minima (window 5,
order 3, tolerance 0.2), then the 80th-percentile filter with min distance 1. Rounds
alternate; the ratio of medians is reported.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import chonkie_core
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(5)
    # A similarity-like series: a slow random walk in [0, 1] plus noise.
    walk = np.cumsum(rng.normal(0, 0.02, a.points))
    series = (0.5 + 0.3 * np.tanh(walk - walk.mean()) + rng.normal(0, 0.05, a.points)).astype(np.float32)
    path = os.path.join(tempfile.mkdtemp(), "series.npy")
    np.save(path, series)
    s64 = series.astype(np.float64)
    ours, ref = [], []
    for _ in range(a.rounds):
        out = subprocess.run([os.path.join(ROOT, "target/release/seamcut"), "bench", "minima", "--series", path, "--runs", "1"],
                             check=True, capture_output=True, text=True).stdout
        rec = json.loads(out.strip().splitlines()[-1])
        ours.append(rec["seconds"])
        t0 = time.perf_counter()
        idx, val = chonkie_core.find_local_minima_interpolated(s64, window_size=5, poly_order=3, tolerance=0.2)
        kept, _ = chonkie_core.filter_split_indices(idx, val, 0.8, 1)
        ref.append(time.perf_counter() - t0)
    print(f"{a.points} points: seamcut {statistics.median(ours) * 1e3:.1f} ms ({rec['splits']} splits) | "
          f"chonkie_core {statistics.median(ref) * 1e3:.1f} ms ({len(kept)} splits) | "
          f"ratio {statistics.median(ref) / statistics.median(ours):.2f}x")


if __name__ == "__main__":
    main()
