"""Every command the README and docs/ show runs, so none of them can rot.

Each fenced ```sh block of README.md, CONTRIBUTING.md and docs/*.md runs line by line (a line
ending in a backslash continues on the next), in order, in one fresh folder per page, with
`seamcut` on the PATH as the CLI under test ($SEAMCUT_BIN, which tests/run.sh sets). The
folder starts with small inputs made from the repository's own texts (`make_inputs`). Every
line must exit 0.

A block that needs what this test cannot have says so in its info string and is skipped:
```sh needs=gpu (or network, llm-server, build, long, wheel, cluster, database; several
joined by commas; a `database` block runs when $SEAMCUT_TEST_PG names a test server). A ```sh serve block is a server session: its first line starts `seamcut serve` on a
free port, each further line is a `curl -sf` request to it (the block's port 8080 rewritten
to the real one) that must exit 0, then the server gets SIGTERM and must exit 0.
CONTRIBUTING.md describes the convention. The pages' relative links, and the #anchors they
name, must resolve too. Needs the CLI; the pages' few all-MiniLM-L6-v2
commands need it in models/ (tests/run.sh fetches it)."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import urllib.request

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))
PAGES = ["README.md", "CONTRIBUTING.md"] + sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))
)
NEEDS = {"build", "gpu", "network", "llm-server", "long", "wheel", "cluster", "database"}
# A `needs=database` block runs when $SEAMCUT_TEST_PG, $SEAMCUT_TEST_CHROMA and
# $SEAMCUT_TEST_MILVUS name a PostgreSQL with pgvector, a Chroma server and a Milvus server (as
# tests/run.sh starts them), with the pages' example servers replaced by them.
SHOWN_DATABASE = "postgresql://me@localhost:5432/rag"
TEST_DATABASE = os.environ.get("SEAMCUT_TEST_PG")
SHOWN_CHROMA = "chroma+http://localhost:8000"
TEST_CHROMA = os.environ.get("SEAMCUT_TEST_CHROMA")
SHOWN_MILVUS = "milvus://localhost:19530"
TEST_MILVUS = os.environ.get("SEAMCUT_TEST_MILVUS")
DATABASES = bool(TEST_DATABASE and TEST_CHROMA and TEST_MILVUS)
# Fewer runnable blocks than this means blocks were marked away rather than fixed.
MIN_RUNNABLE_BLOCKS = 28
MIN_README_BLOCKS = 4
TIMEOUT_S = 300
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def read(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def fenced_blocks(markdown):
    """(info string, body lines, line number of the fence) of each ``` fence at a line's start."""
    out, info, body, start = [], None, [], 0
    for n, line in enumerate(markdown.splitlines(), 1):
        fence = re.match(r"^```(?!`)(.*)$", line)
        if info is None:
            if fence:
                info, body, start = fence.group(1).strip(), [], n
        elif fence and not fence.group(1).strip():
            out.append((info, body, start))
            info = None
        else:
            body.append(line)
    assert info is None, f"a fence opened at line {start} is never closed"
    return out


def parse_info(info):
    """("sh", kind, needs) of an sh block's info string, or None for another language."""
    words = info.split()
    if not words or words[0] != "sh":
        return None
    kind, needs = "run", set()
    for w in words[1:]:
        if w == "serve":
            kind = "serve"
        elif w.startswith("needs="):
            needs |= set(w[len("needs="):].split(","))
        else:
            raise AssertionError(f"unknown word {w!r} in the info string {info!r}")
    return kind, needs


def commands(body):
    """The block's command lines: continuations joined, blank and comment-only lines dropped."""
    out, cur = [], ""
    for line in body:
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        line = cur + line
        cur = ""
        if line.strip() and not line.strip().startswith("#"):
            out.append(line)
    assert not cur, "a block ends in a continued line"
    return out


def sh_blocks(page):
    """(kind, needs, commands, line) of every sh block of a page."""
    out = []
    for info, body, line in fenced_blocks(read(page)):
        parsed = parse_info(info)
        if parsed:
            kind, needs = parsed
            out.append((kind, needs, commands(body), line))
    return out


# ---------------------------------------------------------------------------------------------
# The inputs the pages' commands name, made from texts in the repository.


def prose_paragraphs():
    """Paragraphs of real prose: benches/RESULTS.md without its tables, code and headings."""
    paras = []
    for p in read("benches/RESULTS.md").split("\n\n"):
        p = p.strip()
        if not p or p.startswith(("|", "```", "#", "-", "*")) or "```" in p:
            continue
        paras.append(" ".join(p.split()))
    return paras


def zstd_frame(data):
    """A zstd frame of raw (stored) blocks: valid zstd that needs no compressor."""
    out = bytearray(b"\x28\xb5\x2f\xfd")  # magic
    out += bytes([0x00, 0x58])  # frame header: no content size, no checksum; window 2 MiB
    step = 128 * 1024
    pieces = [data[i : i + step] for i in range(0, len(data), step)] or [b""]
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        header = (len(piece) << 3) | (0 << 1) | int(last)  # Raw_Block
        out += header.to_bytes(3, "little") + piece
    return bytes(out)


def make_inputs(d):
    paras = prose_paragraphs()
    assert len(paras) >= 40, "benches/RESULTS.md has too little prose for the inputs"

    def take(start, n):
        return [paras[(start + i) % len(paras)] for i in range(n)]

    book = take(0, 14)  # about 6 KB: all-MiniLM-L6-v2 in a debug build takes seconds on it
    with open(os.path.join(d, "book.txt"), "w", encoding="utf-8") as f:
        f.write("Measurements\n\n" + "\n\n".join(book) + "\n")
    shutil.copy(os.path.join(ROOT, "ARCHITECTURE.md"), os.path.join(d, "notes.md"))
    corpus = os.path.join(d, "corpus")  # about 13 KB
    os.makedirs(corpus)
    with open(os.path.join(corpus, "architecture.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(read("ARCHITECTURE.md").splitlines()[:40]) + "\n")
    shutil.copy(os.path.join(ROOT, "bindings", "python", "README.md"), os.path.join(corpus, "python.md"))
    for i in range(3):
        with open(os.path.join(corpus, f"results-{i}.txt"), "w", encoding="utf-8") as f:
            f.write("\n\n".join(take(24 + 4 * i, 4)) + "\n")
    # Topic-shift sources: texts on different subjects.
    texts = os.path.join(d, "texts")
    os.makedirs(texts)
    shutil.copy(os.path.join(ROOT, "ARCHITECTURE.md"), os.path.join(texts, "architecture.md"))
    shutil.copy(os.path.join(ROOT, "bindings", "python", "README.md"), os.path.join(texts, "python.md"))
    with open(os.path.join(texts, "results.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(take(54, 30)) + "\n")
    lines = [l.strip() for l in read("benches/data-sentences.txt").splitlines() if l.strip()]
    with open(os.path.join(texts, "rust-book.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(" ".join(lines[i : i + 5]) for i in range(0, 200, 5)) + "\n")
    with open(os.path.join(d, "sentences.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines[:100]) + "\n")
    # The random-weight fixtures of other architectures (docs/models.md's prompt example).
    os.makedirs(os.path.join(d, "tests", "fixtures"))
    os.symlink(os.path.join(ROOT, "tests", "fixtures", "models"), os.path.join(d, "tests", "fixtures", "models"))
    # A crawl: JSONL records with a url and a language, zstd-compressed.
    records = [
        {"url": f"https://example.org/page/{i}", "lang": "en", "text": "\n\n".join(take(84 + 2 * i, 2))}
        for i in range(10)
    ]
    jsonl = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    with open(os.path.join(d, "crawl.jsonl.zst"), "wb") as f:
        f.write(zstd_frame(jsonl))
    # Questions whose evidence is in book.txt: a sentence's words ask, a clause of it answers.
    questions = []
    for p in book[::2]:
        sentence = max(re.split(r"(?<=[.!?])\s+", p), key=len)
        words = sentence.split()
        if len(words) >= 8:
            questions.append({"question": " ".join(words[:12]) + "?", "must_contain": " ".join(words[2:8])})
    assert len(questions) >= 5
    with open(os.path.join(d, "questions.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)


# ---------------------------------------------------------------------------------------------
# Running them.


def environment(d):
    bindir = os.path.join(d, ".bin")
    os.makedirs(bindir)
    os.symlink(os.path.abspath(BIN), os.path.join(bindir, "seamcut"))
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["HF_HUB_OFFLINE"] = "1"  # no command here may reach the hub
    env["HOME"] = d  # caches (the LLM answers' included) stay in the folder
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"  # curl reaches the local server directly
    return env


def run_line(line, d, env):
    r = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line],
        cwd=d,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert r.returncode == 0, (
        f"exit {r.returncode}: {line}\n--- stderr ---\n{r.stderr[-4000:]}\n--- stdout ---\n{r.stdout[-2000:]}"
    )


def serve_session(cmds, d, env):
    first, requests = cmds[0], cmds[1:]
    assert re.search(r"\bseamcut serve\b", first), f"a serve block starts with `seamcut serve`: {first}"
    server = re.sub(r"--port \d+", "", first.split(" #")[0]) + " --port 0"
    proc = subprocess.Popen(
        ["bash", "-c", "exec " + server if server.startswith("seamcut") else server],
        cwd=d,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    log, found = [], {}
    started = threading.Event()

    def drain():  # read stderr to the end, so the server never blocks on a full pipe
        for line in proc.stderr:
            log.append(line)
            m = re.search(r"serving .* on (http://\S+)", line)
            if m and not started.is_set():
                found["url"] = m.group(1)
                started.set()
        started.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        # The server says where it listens once it listens (or its stderr ends when it exits):
        # no clock decides, however busy the machine.
        started.wait()
        url = found.get("url")
        assert url, f"the server did not start: {first}\n{''.join(log)}"
        port = url.rsplit(":", 1)[1]
        with DIRECT.open(url + "/health") as r:
            assert r.status == 200, f"no /health: {first}\n{''.join(log)}"
        for req in requests:
            assert re.search(r"\bcurl -sf\b", req), f"a serve block's requests use `curl -sf`: {req}"
            req = req.replace(":8080", ":" + port)
            run_line(req, d, env)
        assert proc.poll() is None, f"the server died:\n{''.join(log)}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode == 0, f"the server exited {proc.returncode} on SIGTERM:\n{''.join(log)}"


def test_every_block_is_marked_with_a_known_need_and_enough_of_them_run():
    runnable = {}
    for page in PAGES:
        for kind, needs, cmds, line in sh_blocks(page):
            assert needs <= NEEDS, f"{page}:{line}: unknown needs {needs - NEEDS} (known: {sorted(NEEDS)})"
            assert cmds, f"{page}:{line}: an sh block with no command"
            if not needs:
                runnable[page] = runnable.get(page, 0) + 1
    assert sum(runnable.values()) >= MIN_RUNNABLE_BLOCKS, runnable
    assert runnable.get("README.md", 0) >= MIN_README_BLOCKS, runnable


def test_other_fences_are_not_shell_in_disguise():
    """A shell block must be ```sh (so that it runs, or says why not): not bash, shell, console."""
    for page in PAGES:
        for info, _, line in fenced_blocks(read(page)):
            lang = info.split()[0] if info else ""
            assert lang not in {"bash", "shell", "console", "zsh", "shell-session"}, f"{page}:{line}: ```{info}"


@pytest.mark.parametrize("page", PAGES)
def test_the_commands_of_a_page_run(page):
    blocks = [b for b in sh_blocks(page) if not b[1] or (b[1] == {"database"} and DATABASES)]
    if not blocks:
        pytest.skip(f"{page} has no runnable block")
    assert os.path.exists(BIN), f"no seamcut CLI at {BIN} (set SEAMCUT_BIN)"
    with tempfile.TemporaryDirectory() as d:
        make_inputs(d)
        env = environment(d)
        for kind, _, cmds, line in blocks:
            try:
                if kind == "serve":
                    serve_session(cmds, d, env)
                else:
                    for cmd in cmds:
                        if DATABASES:
                            cmd = cmd.replace(SHOWN_DATABASE, TEST_DATABASE).replace(SHOWN_CHROMA, TEST_CHROMA)
                            cmd = cmd.replace(SHOWN_MILVUS, TEST_MILVUS)
                        run_line(cmd, d, env)
            except AssertionError as e:
                raise AssertionError(f"{page}, the block at line {line}:\n{e}") from None


# ---------------------------------------------------------------------------------------------
# Links between the pages.


def slug(heading):
    """GitHub's anchor for a heading."""
    heading = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def anchors(page):
    seen, out = {}, set()
    in_code = False
    for line in read(page).splitlines():
        if re.match(r"^```", line):
            in_code = not in_code
        if in_code:
            continue
        m = re.match(r"^#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def test_relative_links_and_anchors_resolve():
    for page in PAGES:
        text = re.sub(r"^```.*?^```", "", read(page), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            assert os.path.exists(os.path.join(ROOT, dest)), f"{page}: link to {target}: no {dest}"
            if anchor and dest.endswith(".md"):
                assert anchor in anchors(dest), f"{page}: link to {target}: no heading #{anchor} in {dest}"
