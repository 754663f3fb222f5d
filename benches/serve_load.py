#!/usr/bin/env python3
"""Load benchmark of `seamcut serve` (issue 23), side by side with `seamcut embed` on the same
texts, on this machine.

    python benches/serve_load.py --bin target/release/seamcut --model all-MiniLM-L6-v2 \\
        --out benches/results/serve-load-minilm.jsonl

Clients (1, 8 and 64 at once, asyncio + aiohttp, one connection each) send small requests to
/v1/embeddings: 1 to 8 short documents each, lines of benches/data-sentences.txt drawn with a
fixed seed. For each level: throughput in tokens per second (the server's `usage` counts, special
tokens included, as `seamcut embed` counts them), p50 and p99 latency, statuses (no 5xx
allowed), the mean batch in requests, texts and tokens (from /metrics), and the server's peak
RSS. Each level runs in rounds, and `seamcut embed` runs on exactly the texts of each round
right after it (and on the previous round's before it): the machine is shared, so each round's
ratio is the server's tokens/s over the mean of the two embed runs that bracket it, and the
level reports every round's ratio and their median. Then an overload run: 64 clients against a server that admits 4 requests at a
time (`--max-concurrent-requests 4`), which must answer 429s (clients move on without retrying),
no 5xx, and keep its RSS bounded.

Needs aiohttp and numpy (.venv-ci has both through tests/python/requirements.txt) and a release
build (`cargo build --release`). Each output line is one JSON object; a Markdown table is
printed at the end.
"""

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import aiohttp
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def requests_for(sentences, n, seed):
    """`n` request bodies' texts: 1 to 8 sentences each."""
    rng = random.Random(seed)
    return [[rng.choice(sentences) for _ in range(rng.randint(1, 8))] for _ in range(n)]


class Server:
    def __init__(self, bin_, model, *extra):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="seamcut-serve-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [bin_, "serve", "--model", model, "--port", "0", *extra],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with open(self.log.name) as f:
                m = re.search(r"serving .* on (http://\S+)", f.read())
            if m:
                self.url = m.group(1)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("the server did not start: " + open(self.log.name).read())

    def rss(self):
        """(peak, current) resident memory in MB, from /proc."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            s = f.read()
        kb = lambda k: int(re.search(rf"{k}:\s+(\d+) kB", s).group(1))  # noqa: E731
        return kb("VmHWM") / 1024, kb("VmRSS") / 1024

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(timeout=60)
        return code


async def metrics(session, url):
    async with session.get(url + "/metrics") as r:
        text = await r.text()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


async def run_level(url, bodies, clients, seconds=None):
    """Send every body, `clients` at a time; per request: latency, status, tokens. With
    `seconds`, clients instead cycle through the bodies until that much time has passed, and a
    client answered 429 waits 10 ms before its next request (an eager client that does not
    honour Retry-After)."""
    results = []
    queue = list(enumerate(bodies))
    queue.reverse()
    nxt = [0]
    stop_at = time.perf_counter() + seconds if seconds else None

    def take():
        if stop_at is None:
            return queue.pop() if queue else None
        if time.perf_counter() >= stop_at:
            return None
        nxt[0] += 1
        return nxt[0], bodies[nxt[0] % len(bodies)]

    async def client(session):
        while (item := take()) is not None:
            i, texts = item
            t0 = time.perf_counter()
            async with session.post(url + "/v1/embeddings", json={"input": texts, "model": "m"}) as r:
                body = await r.read()
                status = r.status
            dt = time.perf_counter() - t0
            tokens = json.loads(body)["usage"]["prompt_tokens"] if status == 200 else 0
            results.append((i, status, dt, tokens))
            if status == 429 and stop_at is not None:
                await asyncio.sleep(0.01)

    conn = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        before = await metrics(session, url)
        t0 = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        wall = time.perf_counter() - t0
        after = await metrics(session, url)
    return results, wall, before, after


def delta(after, before, key):
    return after.get(key, 0.0) - before.get(key, 0.0)


def seamcut_embed(bin_, model, texts):
    """`seamcut embed` on `texts`: its tokens, seconds (embedding only, as it reports them) and
    peak RSS."""
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "lines.txt"), os.path.join(d, "v.npy")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(texts) + "\n")
        r = subprocess.run(
            ["/usr/bin/time", "-f", "maxrss_kb=%M", bin_, "embed", "--model", model, "--lines", src, "-o", out],
            capture_output=True, text=True, check=True,
        )
    m = re.search(r"(\d+) texts, (\d+) tokens in ([\d.]+) s", r.stderr)
    rss = int(re.search(r"maxrss_kb=(\d+)", r.stderr).group(1)) / 1024
    return {"texts": int(m.group(1)), "tokens": int(m.group(2)), "seconds": float(m.group(3)), "peak_rss_mb": rss}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "seamcut"))
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--levels", default="1:150,8:400,64:1200", help="clients:requests, comma-separated")
    ap.add_argument("--overload", default="64:20:4", help="clients:seconds:--max-concurrent-requests")
    ap.add_argument("--rounds", type=int, default=3, help="serving rounds per level, each between two embed runs")
    ap.add_argument("--threads", type=int, default=0, help="the server's -j (seamcut embed uses every core)")
    ap.add_argument("--out", default=None, help="JSON lines here as well as on stdout")
    a = ap.parse_args()

    with open(os.path.join(ROOT, "benches", "data-sentences.txt"), encoding="utf-8") as f:
        sentences = [s for s in (line.strip() for line in f) if s]
    out = open(a.out, "w") if a.out else None

    def emit(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    rows = []
    server = Server(a.bin, a.model, "-j", str(a.threads))
    try:
        # Warm-up: the first batches fault in the weights and size the allocator's pools.
        asyncio.run(run_level(server.url, requests_for(sentences, 64, 0), 8))
        for i, level in enumerate(a.levels.split(",")):
            clients, n = map(int, level.split(":"))
            # Rounds: embed, serve, embed, serve, ..., embed, each serving round bracketed by
            # `seamcut embed` on the same texts, so that a change in the machine's load between
            # rounds lands on both sides of a ratio.
            rounds = [requests_for(sentences, n // a.rounds, 1000 + 10 * i + k) for k in range(a.rounds)]
            embeds = [seamcut_embed(a.bin, a.model, [t for b in rounds[0] for t in b])]
            results, wall, before, after, ratios, tps, embed_tps = [], 0.0, None, None, [], [], []
            for k, bodies in enumerate(rounds):
                res, w, b0, a0 = asyncio.run(run_level(server.url, bodies, clients))
                texts = [t for b in bodies for t in b]
                post = seamcut_embed(a.bin, a.model, texts)
                # The embed before this round ran on the previous round's texts (same size and
                # kind): its rate, not its texts, is what the ratio needs.
                pre_rate = embeds[-1]["tokens"] / embeds[-1]["seconds"]
                post_rate = post["tokens"] / post["seconds"]
                embeds.append(post)
                tok = sum(r[3] for r in res)
                assert tok == post["tokens"], (tok, post["tokens"])  # the same tokens, counted alike
                tps.append(tok / w)
                embed_tps.append((pre_rate + post_rate) / 2)
                ratios.append(tps[-1] / embed_tps[-1])
                results += res
                wall += w
                before = before or b0
                after = a0
            lat = np.array([r[2] for r in results])
            statuses = {}
            for r in results:
                statuses[str(r[1])] = statuses.get(str(r[1]), 0) + 1
            tokens = sum(r[3] for r in results)
            q = '{queue="embed"}'
            batches = delta(after, before, f"seamcut_batch_requests_count{q}")
            row = {
                "run": "level",
                "clients": clients,
                "requests": len(results),
                "texts": sum(len(b) for r in rounds for b in r),
                "statuses": statuses,
                "server_errors": sum(v for k, v in statuses.items() if k.startswith("5")),
                "tokens": tokens,
                "wall_s": wall,
                "server_tokens_per_s": tokens / wall,
                "requests_per_s": len(results) / wall,
                "rounds_server_tokens_per_s": tps,
                "rounds_embed_tokens_per_s": embed_tps,
                "rounds_ratio": ratios,
                "ratio_median": float(np.median(ratios)),
                "p50_ms": float(np.percentile(lat, 50) * 1000),
                "p99_ms": float(np.percentile(lat, 99) * 1000),
                "batches": batches,
                "mean_batch_requests": delta(after, before, f"seamcut_batch_requests_sum{q}") / max(batches, 1),
                "mean_batch_texts": delta(after, before, f"seamcut_batch_sequences_sum{q}") / max(batches, 1),
                "mean_batch_tokens": delta(after, before, f"seamcut_batch_tokens_sum{q}") / max(batches, 1),
                "server_peak_rss_mb": server.rss()[0],
                "embed_peak_rss_mb": max(e["peak_rss_mb"] for e in embeds),
                "model": a.model,
                "load_avg_1m": os.getloadavg()[0],
            }
            emit(row)
            rows.append(row)
    finally:
        code = server.stop()
    emit({"run": "stop", "exit_code": code})

    clients, seconds, admit = map(int, a.overload.split(":"))
    server = Server(a.bin, a.model, "-j", str(a.threads), "--max-concurrent-requests", str(admit))
    try:
        idle = server.rss()[1]
        bodies = requests_for(sentences, 2000, 7)
        results, wall, before, after = asyncio.run(run_level(server.url, bodies, clients, seconds))
        statuses = {}
        for r in results:
            statuses[str(r[1])] = statuses.get(str(r[1]), 0) + 1
        ok = [r for r in results if r[1] == 200]
        overload = {
            "run": "overload",
            "clients": clients,
            "max_concurrent_requests": admit,
            "seconds": seconds,
            "requests": len(results),
            "statuses": statuses,
            "server_errors": sum(v for k, v in statuses.items() if k.startswith("5")),
            "wall_s": wall,
            "mean_batch_requests": delta(after, before, 'seamcut_batch_requests_sum{queue="embed"}')
            / max(delta(after, before, 'seamcut_batch_requests_count{queue="embed"}'), 1),
            "answered_tokens_per_s": sum(r[3] for r in ok) / wall,
            "p50_ms_200": float(np.percentile([r[2] for r in ok], 50) * 1000) if ok else None,
            "p50_ms_429": float(np.percentile([r[2] for r in results if r[1] == 429], 50) * 1000)
            if statuses.get("429") else None,
            "server_rss_idle_mb": idle,
            "server_peak_rss_mb": server.rss()[0],
            "alive_after": server.proc.poll() is None,
            "load_avg_1m": os.getloadavg()[0],
        }
    finally:
        code = server.stop()
    overload["exit_code"] = code
    emit(overload)

    print()
    print("| clients | requests | server tokens/s | `seamcut embed` tokens/s (per round) | ratio per round (median) "
          "| p50 ms | p99 ms | mean batch (requests / texts / tokens) | 5xx | server peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rr = ", ".join(f"{x:.2f}" for x in r["rounds_ratio"])
        et = ", ".join(f"{x:.0f}" for x in r["rounds_embed_tokens_per_s"])
        print(f"| {r['clients']} | {r['requests']} | {r['server_tokens_per_s']:.0f} | {et} | {rr} ({r['ratio_median']:.2f}) | "
              f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['mean_batch_requests']:.1f} / {r['mean_batch_texts']:.1f} / "
              f"{r['mean_batch_tokens']:.0f} | {r['server_errors']} | {r['server_peak_rss_mb']:.0f} |")
    o = overload
    print(f"\noverload: {o['clients']} clients for {o['seconds']} s, --max-concurrent-requests "
          f"{o['max_concurrent_requests']}: {o['statuses']}, 5xx {o['server_errors']}, "
          f"{o['answered_tokens_per_s']:.0f} tokens/s answered, mean batch {o['mean_batch_requests']:.1f} requests, "
          f"RSS {o['server_rss_idle_mb']:.0f} MB idle -> {o['server_peak_rss_mb']:.0f} MB peak, "
          f"alive {o['alive_after']}, exit {o['exit_code']}")
    if any(r["server_errors"] for r in rows) or o["server_errors"] or not o["alive_after"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
