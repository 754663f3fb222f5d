"""`seamcut serve` (src/serve/): the real server on a free port, driven by real clients (the
`openai` package, httpx, raw sockets for the slow-client cases). Vectors equal `seamcut
embed`'s, chunks equal `seamcut chunk`'s, every limit and fault answers with its status code
and a one-line JSON error and leaves the server answering, SIGTERM finishes the requests in
flight, and the API key is enforced when set. Needs the CLI (SEAMCUT_BIN) and
all-MiniLM-L6-v2 in models/ (tests/run.sh fetches it)."""
import base64
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import numpy as np
import openai
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))
MINILM = "all-MiniLM-L6-v2"

TEXTS = [
    "The cat sat on the mat.",
    "A completely different sentence about the stock market.",
    "Café au lait — naïve façade; 日本語の文です。 Emoji 🙂.",
    "short",
    # Longer than MiniLM's 256-token window: cut there, by the server and `seamcut embed` alike.
    " ".join(["Tokens upon tokens fill this very long input line."] * 60),
]


class Server:
    """A `seamcut serve` process on a free port of 127.0.0.1."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen(
            [BIN, "serve", "--port", "0", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.log = []
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"serving .* on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        else:
            raise RuntimeError("the server did not start: " + "".join(self.log))
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        self.addr = (host, int(port))
        # Keep draining stderr so the server never blocks on a full pipe.
        self._drain = threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True)
        self._drain.start()
        self.http = httpx.Client(base_url=self.url, timeout=120)

    def stop(self):
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def metrics(self):
        """`/metrics` as {"name{labels}": value}."""
        out = {}
        for line in self.http.get("/metrics").text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def healthy_and_right(self):
        """The server answers /health, and a normal request correctly."""
        assert self.http.get("/health").json() == {"status": "ok"}
        r = self.http.post("/embed", json={"inputs": ["a b", "a b"]})
        assert r.status_code == 200, r.text
        v = np.array(r.json(), dtype=np.float32)
        assert v.shape[0] == 2 and np.allclose(v[0], v[1]) and abs(np.linalg.norm(v[0]) - 1) < 1e-5


@contextmanager
def serving(*args, env=None):
    s = Server(*args, env=env)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def minilm():
    with serving("--model", MINILM, "--chunker", "maxmin") as s:
        yield s


def seamcut_embed(texts, model=MINILM):
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "lines.txt"), os.path.join(d, "v.npy")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(texts) + "\n")
        subprocess.run([BIN, "embed", "--model", model, "--lines", src, "-o", out, "-q"], check=True)
        return np.load(out)


def cosines(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_openai_client_vectors_equal_seamcut_embed(minilm):
    want = seamcut_embed(TEXTS)
    client = openai.OpenAI(base_url=minilm.url + "/v1", api_key="unused", max_retries=0)
    # The client asks for base64 by default and decodes it; also plain floats.
    for fmt in (openai.NOT_GIVEN, "float"):
        r = client.embeddings.create(model=MINILM, input=TEXTS, encoding_format=fmt)
        got = np.array([d.embedding for d in r.data])
        assert [d.index for d in r.data] == list(range(len(TEXTS)))
        assert got.shape == want.shape == (len(TEXTS), 384)
        assert cosines(got, want).min() >= 0.9999
        assert r.model == MINILM and r.usage.prompt_tokens > 256  # the long text counts its window
    # The served model by its directory's name too; another model is OpenAI's 404, naming
    # the one served.
    one = client.embeddings.create(model=os.path.basename(MINILM.rstrip("/")), input=TEXTS[0])
    assert cosines([one.data[0].embedding], want[:1])[0] >= 0.9999
    with pytest.raises(openai.NotFoundError, match="not served here"):
        client.embeddings.create(model="no-such-model", input=TEXTS[0])
    # text-embeddings-inference's route gives the same vectors.
    tei = minilm.http.post("/embed", json={"inputs": TEXTS}).json()
    assert cosines(tei, want).min() >= 0.9999


NOMIC = os.path.join(ROOT, "tests", "fixtures", "models", "nomic_bert")


def test_prompts_and_dimensions_give_the_clis_vectors():
    """TEI's `prompt_name` and OpenAI's and TEI's `dimensions` give `seamcut embed --prompt-name
    --dims`'s vectors, on a model with prompts (a random-weight NomicBERT fixture); a request
    without them gets the plain vectors, and requests of each kind share batches."""
    texts = TEXTS[:4]

    def cli(*flags):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "lines.txt"), os.path.join(d, "v.npy")
            with open(src, "w", encoding="utf-8") as f:
                f.write("\n".join(texts) + "\n")
            subprocess.run([BIN, "embed", "--model", NOMIC, *flags, "--lines", src, "-o", out, "-q"], check=True)
            return np.load(out)

    plain, query, cut = cli(), cli("--prompt-name", "query"), cli("--prompt-name", "query", "--dims", "24")
    assert cosines(plain, query).min() < 0.99  # the prompt changes the vectors
    with serving("--model", NOMIC) as s:
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0)
        r = client.embeddings.create(model="nomic_bert", input=texts, dimensions=24)
        got = np.array([d.embedding for d in r.data])
        assert got.shape == (4, 24)
        assert cosines(got, cli("--dims", "24")).min() >= 0.9999
        with ThreadPoolExecutor(4) as pool:
            asks = [{"inputs": texts}, {"inputs": texts, "prompt_name": "query"},
                    {"inputs": texts, "prompt_name": "query", "dimensions": 24}] * 2
            answers = list(pool.map(lambda b: s.http.post("/embed", json=b), asks))
        for body, a in zip(asks, answers):
            assert a.status_code == 200, a.text
            want = cut if "dimensions" in body else query if "prompt_name" in body else plain
            assert cosines(a.json(), want).min() >= 0.9999, body
        r = s.http.post("/embed", json={"inputs": "a", "prompt_name": "serch_query"})
        assert r.status_code == 422 and "serch_query" in error_message(r), r.text


def test_batching_across_requests_changes_no_vector_and_the_metrics_count_it(minilm):
    before = minilm.metrics()
    want = seamcut_embed(TEXTS)

    def one(i):
        r = minilm.http.post("/v1/embeddings", json={"input": [TEXTS[i % 4], TEXTS[(i + 1) % 4]]})
        assert r.status_code == 200, r.text
        return i, [d["embedding"] for d in r.json()["data"]]

    with ThreadPoolExecutor(16) as pool:
        for i, vecs in pool.map(one, range(32)):
            assert cosines(vecs, want[[i % 4, (i + 1) % 4]]).min() >= 0.9999
    after = minilm.metrics()
    key = 'seamcut_batch_requests_sum{queue="embed"}'
    # Every request was in exactly one batch.
    assert after[key] - before.get(key, 0) == 32
    count = 'seamcut_batch_requests_count{queue="embed"}'
    assert 1 <= after[count] - before.get(count, 0) <= 32
    assert after['seamcut_requests_total{route="/v1/embeddings",status="200"}'] >= 32
    assert after["seamcut_embedded_tokens_total"] > before.get("seamcut_embedded_tokens_total", 0)
    assert 'seamcut_request_duration_seconds_count{route="/v1/embeddings"}' in after
    assert 'seamcut_queue_depth{queue="embed"}' in after


def cli_records(docs, *args):
    """The CLI's chunk records (JSONL)."""
    return cli_vectors(docs, *args)[0]


def fixture_docs():
    with open(os.path.join(ROOT, "tests", "fixtures", "texts.jsonl"), encoding="utf-8") as f:
        return [{"id": f"t{i}", "text": json.loads(line)["text"]} for i, line in enumerate(f)]


@pytest.mark.parametrize(
    "spec,flags",
    [
        (None, ["--chunker", "maxmin", "--model", MINILM]),
        ({"max_tokens": 64, "hard_thr": 0.5}, ["--chunker", "maxmin", "--model", MINILM, "--max-tokens", "64", "--hard-thr", "0.5"]),
        ({"chunker": "recursive", "max_tokens": 48}, ["--chunker", "recursive", "--max-tokens", "48"]),
        # Overlap windows ride along as three more fields.
        ({"chunker": "sentence", "max_tokens": 24, "overlap": 6}, ["--chunker", "sentence", "--max-tokens", "24", "--overlap", "6"]),
    ],
)
def test_chunks_equal_the_cli_record_for_record(minilm, spec, flags):
    docs = fixture_docs()[:100]
    want = cli_records(docs, *flags)
    body = {"documents": docs}
    if spec:
        body["spec"] = spec
    r = minilm.http.post("/v1/chunk", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    # The same records, field for field and in the same order (offsets are UTF-8 bytes).
    assert [list(c.items()) for c in got["chunks"]] == [list(c.items()) for c in want]
    assert all(("window_text" in c) == bool(spec and spec.get("overlap")) for c in want)
    assert got["usage"] == {"documents": len(docs), "chunks": len(want), "tokens": sum(c["tokens"] for c in want)}
    assert got["fallbacks"] == []


def cli_vectors(docs, *args):
    """The CLI's chunk records and vectors (JSONL + OUT.npy; None without --embeddings)."""
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "docs.jsonl"), os.path.join(d, "out.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            for doc in docs:
                f.write(json.dumps(doc, ensure_ascii=False) + "\n")
        subprocess.run([BIN, "chunk", src, "-o", out, "-q", *args], check=True)
        npy = os.path.join(d, "out.npy")
        with open(out, encoding="utf-8") as f:
            return [json.loads(line) for line in f], (np.load(npy) if os.path.exists(npy) else None)


@pytest.mark.parametrize("mode,fmt", [("mean", "float"), ("reembed", "base64"), ("late", "float")])
def test_chunk_vectors_equal_the_clis(minilm, mode, fmt):
    docs = [d for d in fixture_docs() if len(d["text"]) > 200][:12]
    records, want = cli_vectors(docs, "--chunker", "maxmin", "--model", MINILM, "--embeddings", mode)
    r = minilm.http.post("/v1/chunk", json={"documents": docs, "embeddings": mode, "encoding_format": fmt})
    assert r.status_code == 200, r.text
    chunks = r.json()["chunks"]
    vectors = [c.pop("embedding") for c in chunks]
    if fmt == "base64":
        vectors = [np.frombuffer(base64.b64decode(v), dtype="<f4") for v in vectors]
    assert chunks == records
    assert cosines(vectors, want).min() >= 0.9999


def test_chunk_ids_default_to_positions_and_bad_chunk_requests_are_422(minilm):
    r = minilm.http.post("/v1/chunk", json={"documents": [{"text": "One. Two."}, {"text": "Three."}]})
    assert [c["doc_id"] for c in r.json()["chunks"]] == ["0", "1"]
    for body in [
        {"documents": []},
        {"documents": [{"text": 5}]},
        {"documents": [{"txt": "a"}]},
        {"documents": [{"text": "a"}], "embeddings": "meen"},
        {"documents": [{"text": "a"}], "spec": {"model": "/etc"}},
        {"documents": [{"text": "a"}], "spec": {"llm": {"url": "http://example.invalid"}}},
        {"documents": [{"text": "a"}], "spec": {"max_tokenz": 3}},
        {"documents": [{"text": "a"}], "spec": {"min_tokens": 500, "max_tokens": 10}},
        {"documents": [{"text": "a"}], "spec": {"chunker": "recursive"}, "embeddings": "mean"},
    ]:
        r = minilm.http.post("/v1/chunk", json=body)
        assert r.status_code == 422, (body, r.text)
        assert "\n" not in r.text and r.json()["error"]["message"]
    minilm.healthy_and_right()


def test_request_errors_name_the_field_and_say_what_is_wrong(minilm):
    doc = {"documents": [{"id": "a", "text": "One topic. More of it.\n\nAnother."}]}
    r = minilm.http.post("/v1/chunk", json={**doc, "spec": {"max_tokens": "x"}})
    assert r.status_code == 422
    msg = r.json()["error"]["message"]
    assert 'max_tokens: expected a whole number (0 or more), got the string "x"' in msg, msg
    assert "usize" not in msg
    r = minilm.http.post("/v1/embeddings", json={"input": "a", "encoding_format": 3})
    assert r.status_code == 422 and "encoding_format:" in r.json()["error"]["message"], r.text
    r = minilm.http.post("/v1/embeddings", content=b'{"input": "\\ud800"}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "lone UTF-16 surrogate" in r.json()["error"]["message"], r.text
    # A chunker's own settings flat or nested: the same chunks, as in a --spec file.
    flat = minilm.http.post("/v1/chunk", json={**doc, "spec": {"hard_thr": 0.5}}).json()
    nested = minilm.http.post("/v1/chunk", json={**doc, "spec": {"maxmin": {"hard_thr": 0.5}}}).json()
    assert flat["chunks"] == nested["chunks"] and flat["chunks"]


def test_error_texts_name_only_what_a_request_may_set_and_say_where_a_setting_goes(minilm):
    doc = {"documents": [{"id": "a", "text": "One topic. More of it.\n\nAnother."}]}
    # An unknown setting lists the settings a request may give, not the server's own.
    r = minilm.http.post("/v1/chunk", json={**doc, "spec": {"max_tokenz": 3}})
    msg = r.json()["error"]["message"]
    assert r.status_code == 422 and "known:" in msg and "max_tokens" in msg, msg
    known = msg.split("known:")[1]
    for machine in ["model", "sizer", "device", "dtype", "device_bands", "llm"]:
        assert not re.search(rf"\b{machine}\b(?!_)", known), (machine, msg)
    # A bad mode is named once.
    r = minilm.http.post("/v1/chunk", json={**doc, "embeddings": "bogus"})
    msg = r.json()["error"]["message"]
    assert r.status_code == 422 and msg.count("embeddings") == 1 and "bogus" in msg, msg
    # A chunker setting at the top level: refused, with where it goes.
    r = minilm.http.post("/v1/chunk", json={**doc, "max_tokens": 128})
    msg = r.json()["error"]["message"]
    assert r.status_code == 422 and '"spec"' in msg and "max_tokens" in msg, msg
    r = minilm.http.post("/v1/chunk", json={**doc, "colour": "red"})
    assert r.status_code == 422 and "colour" in r.json()["error"]["message"], r.text
    # A setting out of its range, as the CLI refuses it.
    r = minilm.http.post("/v1/chunk", json={**doc, "spec": {"hard_thr": 5}})
    assert r.status_code == 422 and "hard_thr" in r.json()["error"]["message"], r.text
    # The chunker's name is one stable value; its settings line is a field of its own.
    for spec in [None, {"hard_thr": 0.5}, {"chunker": "recursive"}]:
        body = {**doc, **({"spec": spec} if spec else {})}
        a = minilm.http.post("/v1/chunk", json=body).json()
        want = (spec or {}).get("chunker", "maxmin")
        assert a["chunker"] == want, a["chunker"]
        assert a["chunker_description"].startswith(want), a
        # A model chunker's description carries its settings; its name stays the bare name.
        assert (a["chunker_description"] != want) == (want == "maxmin"), a
    minilm.healthy_and_right()


def test_info_and_the_default_bind(minilm):
    assert minilm.addr[0] == "127.0.0.1"
    info = minilm.http.get("/info").json()
    assert info["model"] == MINILM and info["dim"] == 384 and info["max_positions"] == 256
    assert info["chunker"]["chunker"] == "maxmin" and "maxmin" in info["chunker_description"]
    assert info["auth"] is False and info["version"]


def test_served_model_names_are_listed_accepted_and_carried():
    names = ["--served-model-name", "minilm,mini", "--served-model-name", "minilm"]
    with serving("--model", MINILM, *names) as s:
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0)
        # Listed once each, in order, in OpenAI's shape (the client parses it).
        assert [m.id for m in client.models.list()] == ["minilm", "mini"]
        listed = s.http.get("/v1/models").json()
        assert listed["object"] == "list" and all(m["object"] == "model" for m in listed["data"])
        assert s.http.get("/info").json()["served_model_names"] == ["minilm", "mini"]
        want = seamcut_embed(TEXTS[:2])
        for name in ("mini", "minilm", None):
            r = client.embeddings.create(input=TEXTS[:2], **({"model": name} if name else {"model": ""}))
            assert r.model == "minilm" and cosines([d.embedding for d in r.data], want).min() >= 0.9999
        # Given names, only they are this model's: the --model value is another model now.
        with pytest.raises(openai.NotFoundError, match='"minilm", "mini"'):
            client.embeddings.create(model=MINILM, input="a")
        chunked = s.http.post("/v1/chunk", json={"documents": [{"text": "One. Two."}]}).json()
        assert chunked["model"] == "minilm"
    # Without names, the model as given.
    r = subprocess.run([BIN, "serve", "--port", "0", "--served-model-name", "a,,b"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--served-model-name" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_errors_take_each_apis_own_shape(minilm):
    # OpenAI's, read by its own client.
    client = openai.OpenAI(base_url=minilm.url + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError) as e:
        client.embeddings.create(model="", input=[""])
    assert e.value.body["message"] and e.value.body["code"] == 422 and e.value.body["type"]
    # TEI's, as plain HTTP clients of TEI read it, on each of its routes.
    for path, body in [("/embed", {"inputs": []}), ("/tokenize", {"inputs": 5}), ("/embed_all", {"inputs": [""]})]:
        r = minilm.http.post(path, json=body)
        expect_error(r, 422)
        assert r.json()["error_type"] == "Validation" and "inputs" in r.json()["error"]
    # Routes of neither API keep OpenAI's (and an unknown route is no TEI route).
    expect_error(minilm.http.post("/v1/chunk", json={"documents": []}), 422)
    expect_error(minilm.http.get("/nowhere"), 404)


def test_models_lists_the_model_as_given_without_names(minilm):
    assert [m["id"] for m in minilm.http.get("/v1/models").json()["data"]] == [MINILM]


def test_tokenize_gives_the_tokens_the_model_reads_with_byte_offsets(minilm):
    texts = TEXTS[:4]
    got = minilm.http.post("/tokenize", json={"inputs": texts}).json()
    assert len(got) == len(texts)
    billed = [minilm.http.post("/v1/embeddings", json={"input": t}).json()["usage"]["prompt_tokens"] for t in texts]
    for text, tokens, n in zip(texts, got, billed):
        # What /v1/embeddings bills for a text within the window is what /tokenize counts.
        assert len(tokens) == n
        assert tokens[0] == {"id": 101, "text": "[CLS]", "special": True, "start": None, "stop": None}
        assert tokens[-1]["text"] == "[SEP]" and tokens[-1]["special"]
        raw = text.encode("utf-8")
        content = tokens[1:-1]
        assert content and not any(t["special"] for t in content)
        for t in content:
            # Byte offsets: the input's bytes between them are the token's text.
            assert raw[t["start"]:t["stop"]].decode("utf-8") == t["text"]
        starts = [t["start"] for t in content]
        assert starts == sorted(starts)
    # The accents and the CJK text sit at byte, not character, offsets.
    cafe = got[2][1]
    assert cafe["text"] == "Café" and cafe["stop"] == len("Café".encode())
    plain = minilm.http.post("/tokenize", json={"inputs": TEXTS[0], "add_special_tokens": False}).json()
    assert plain == [got[0][1:-1]]
    # Not cut at the window: a client counts what it would send.
    long = minilm.http.post("/tokenize", json={"inputs": TEXTS[4]}).json()[0]
    assert len(long) > 256
    expect_error(minilm.http.post("/tokenize", json={"inputs": []}), 422)


def test_embed_all_gives_every_tokens_state_which_pools_to_the_embed_vector(minilm):
    texts = TEXTS[:4]
    states = minilm.http.post("/embed_all", json={"inputs": texts}).json()
    counts = [len(t) for t in minilm.http.post("/tokenize", json={"inputs": texts}).json()]
    assert [len(s) for s in states] == counts
    assert all(len(row) == 384 for s in states for row in s)
    # all-MiniLM-L6-v2 mean-pools every token, [CLS] and [SEP] included, then normalises.
    pooled = np.array([np.mean(np.array(s, dtype=np.float64), axis=0) for s in states])
    assert cosines(pooled, seamcut_embed(texts)).min() >= 0.9999
    # Past the window: 413 naming the way, unless truncate cuts it there (as /embed cuts).
    r = minilm.http.post("/embed_all", json={"inputs": [TEXTS[0], TEXTS[4]]})
    expect_error(r, 413)
    assert "inputs[1]" in error_message(r) and "truncate" in error_message(r)
    cut = minilm.http.post("/embed_all", json={"inputs": TEXTS[4], "truncate": True}).json()
    assert len(cut) == 1 and len(cut[0]) == 256
    pooled = np.mean(np.array(cut[0], dtype=np.float64), axis=0)
    assert cosines([pooled], seamcut_embed([TEXTS[4]]))[0] >= 0.9999
    m = minilm.metrics()
    assert m['seamcut_requests_total{route="/embed_all",status="200"}'] >= 2
    assert m['seamcut_requests_total{route="/embed_all",status="413"}'] >= 1
    assert m['seamcut_requests_total{route="/tokenize",status="200"}'] >= 1


@pytest.fixture(scope="module")
def tight():
    """The built-in model, with small limits."""
    with serving(
        "--max-body-bytes", "4096", "--max-inputs", "4", "--max-concurrent-requests", "1",
        "--body-timeout", "30", "--request-timeout", "60", "--header-timeout", "1",
    ) as s:
        yield s


def raw(addr, data):
    """Send raw bytes on a new connection; return the socket (left open)."""
    s = socket.create_connection(addr, timeout=30)
    s.sendall(data)
    return s


def read_response(sock):
    """Status code and body of an HTTP/1.1 response with a Content-Length."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    n = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
    while len(body) < n:
        body += sock.recv(65536)
    return int(head.split()[1]), body


def post_head(path, length):
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


TEI_ROUTES = {"/embed", "/embed_all", "/tokenize"}
TEI_TYPES = {413: "Validation", 422: "Validation", 400: "Validation", 401: "Validation", 408: "Validation",
             429: "Overloaded", 503: "Overloaded", 500: "Backend"}


def expect_error(r, status):
    """One line of JSON in the route's API's own error shape: TEI's `{"error", "error_type"}`
    on its routes, OpenAI's `{"error": {"message", "type", "code"}}` elsewhere."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    assert "\n" not in r.text.strip()
    body = r.json()
    if r.request.url.path in TEI_ROUTES:
        assert set(body) == {"error", "error_type"} and isinstance(body["error"], str) and body["error"]
        assert body["error_type"] == TEI_TYPES[status], body
    else:
        e = body["error"]
        assert e["code"] == status and e["message"] and e["type"]


def error_message(r):
    body = r.json()
    return body["error"] if isinstance(body["error"], str) else body["error"]["message"]


@pytest.mark.parametrize(
    "path,body,status",
    [
        ("/v1/embeddings", b'{"input": ["a", ', 400),  # malformed JSON
        ("/v1/embeddings", b'{"input": "\\ud800"}', 400),  # a lone surrogate
        ("/v1/embeddings", b'{"input": "ok \xff bytes"}', 400),  # not UTF-8
        ("/v1/embeddings", b"", 400),
        ("/v1/embeddings", b'{"input": 5}', 422),  # wrong type
        ("/v1/embeddings", b'{"inputs": ["a"]}', 422),  # missing field
        ("/v1/embeddings", b'{"input": []}', 422),  # empty input
        ("/v1/embeddings", b'{"input": ""}', 422),
        ("/v1/embeddings", b'{"input": [[1, 2, 3]]}', 422),  # token ids
        ("/v1/embeddings", b'{"input": "a", "dimensions": 241}', 422),  # more than the model has
        ("/v1/embeddings", b'{"input": "a", "dimensions": 0}', 422),
        ("/embed", b'{"inputs": "a", "prompt_name": "query"}', 422),  # the model has no prompts
        ("/v1/embeddings", b'{"input": "a", "encoding_format": "int8"}', 422),
        ("/embed", b'{"inputs": []}', 422),
        ("/embed", b'{"inputs": "a", "normalize": false}', 422),
        ("/v1/embeddings", b'{"input": ["a", "b", "c", "d", "e"]}', 413),  # over --max-inputs
        ("/v1/chunk", b'{"documents": [' + b",".join([b'{"text": "a"}'] * 5) + b"]}", 413),
        ("/v1/embeddings", b'{"input": "' + b"x" * 5000 + b'"}', 413),  # over --max-body-bytes
        ("/tokenize", b'{"inputs": 5}', 422),
        ("/tokenize", b'{"inputs": ["a", "b", "c", "d", "e"]}', 413),
        ("/embed_all", b'{"inputs": [""]}', 422),
        ("/embed_all", b'{"inputs": "' + b"x" * 5000 + b'"}', 413),
    ],
)
def test_bad_requests_get_a_status_and_a_one_line_json_error(tight, path, body, status):
    r = tight.http.post(path, content=body, headers={"content-type": "application/json"})
    expect_error(r, status)
    if body:
        # The body may be unread: the connection is not reused.
        assert r.headers["connection"] == "close"
    tight.healthy_and_right()


def test_an_oversized_body_without_a_length_is_413(tight):
    def chunks():
        yield b'{"input": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}'

    expect_error(tight.http.post("/v1/embeddings", content=chunks()), 413)
    tight.healthy_and_right()


def test_unknown_routes_and_methods(tight):
    expect_error(tight.http.get("/v2/nothing"), 404)
    expect_error(tight.http.get("/v1/embeddings"), 405)
    tight.healthy_and_right()


def test_a_full_server_answers_429_with_retry_after(tight):
    body = b'{"inputs": ["held"]}'
    # A client that sends its headers and half its body holds the one admission.
    s = raw(tight.addr, post_head("/embed", len(body)) + body[:5])
    try:
        while tight.metrics().get("seamcut_requests_in_flight", 0) < 1:
            time.sleep(0.01)
        r = tight.http.post("/embed", json={"inputs": ["x"]})
        expect_error(r, 429)
        assert r.headers["retry-after"] == "1"
        s.sendall(body[5:])
        status, answer = read_response(s)
        assert status == 200 and len(json.loads(answer)) == 1
    finally:
        s.close()
    tight.healthy_and_right()


def test_a_slow_header_is_cut_off(tight):
    s = raw(tight.addr, b"POST /embed HTTP/1.1\r\nHost: x\r\n")
    try:
        s.settimeout(20)
        # --header-timeout 1: the server answers 408 or just closes; either way the
        # connection ends without our help.
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        assert data == b"" or data.startswith(b"HTTP/1.1 408")
    finally:
        s.close()
    tight.healthy_and_right()


def test_slow_bodies_and_slow_answers_time_out():
    with serving("--body-timeout", "0.5") as s:
        sock = raw(s.addr, post_head("/embed", 40) + b'{"inputs"')
        try:
            status, body = read_response(sock)
            # TEI's route: TEI's error shape.
            assert status == 408 and json.loads(body)["error_type"] == "Validation"
        finally:
            sock.close()
        s.healthy_and_right()
    with serving("--request-timeout", "0.5") as s:
        sock = raw(s.addr, post_head("/embed", 40) + b'{"inputs"')
        try:
            status, body = read_response(sock)
            assert status == 503 and json.loads(body)["error_type"] == "Overloaded"
        finally:
            sock.close()
        s.healthy_and_right()


def test_a_client_that_leaves_has_its_queued_work_dropped(minilm):
    big = [" ".join(["Sentences about different topics keep the encoder busy."] * 20)] * 4
    before = minilm.metrics()
    count = 'seamcut_batch_requests_count{queue="embed"}'
    with ThreadPoolExecutor(1) as pool:
        busy = pool.submit(minilm.http.post, "/v1/embeddings", json={"input": big})
        # Wait until the big request's batch has started, then queue one and leave.
        while minilm.metrics().get(count, 0) == before.get(count, 0):
            time.sleep(0.01)
        body = json.dumps({"input": ["left behind"]}).encode()
        s = raw(minilm.addr, post_head("/v1/embeddings", len(body)) + body)
        depth = 'seamcut_queue_depth{queue="embed"}'
        while minilm.metrics().get(depth, 0) < 1 and not busy.done():
            time.sleep(0.01)
        s.close()
        assert busy.result().status_code == 200
    dropped = 'seamcut_dropped_jobs_total{queue="embed"}'
    deadline = time.monotonic() + 30
    while minilm.metrics().get(dropped, 0) == before.get(dropped, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert minilm.metrics().get(dropped, 0) == before.get(dropped, 0) + 1
    minilm.healthy_and_right()


def truncated_model(dest):
    """tests/fixtures/tiny-mpnet with its word embeddings cut to the ids of single letters:
    a real model that fails on most words (an out-of-range token id) and works on "a b"."""
    src = os.path.join(ROOT, "tests", "fixtures", "tiny-mpnet")
    shutil.copytree(src, dest)
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    rows = max(vocab["a"], vocab["b"], 3) + 1
    assert vocab["zebra"] >= rows if "zebra" in vocab else True
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    name = next(k for k in header if k.endswith("word_embeddings.weight"))
    out, blobs, at = {}, [], 0
    for k, v in header.items():
        if k == "__metadata__":
            out[k] = v
            continue
        a, b = v["data_offsets"]
        blob, shape = data[a:b], list(v["shape"])
        if k == name:
            width = shape[1] * {"F16": 2, "BF16": 2, "F32": 4}[v["dtype"]]
            blob, shape = blob[: rows * width], [rows, shape[1]]
        out[k] = {"dtype": v["dtype"], "shape": shape, "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    head = json.dumps(out).encode()
    head += b" " * (-len(head) % 8)
    with open(os.path.join(dest, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    return dest


def test_a_model_error_is_a_500_for_that_request_only():
    with tempfile.TemporaryDirectory() as d:
        model = truncated_model(os.path.join(d, "broken"))
        with serving("--model", model, "--chunker", "maxmin") as s:
            good = {"input": ["a b", "b a"]}
            bad = {"input": ["a b", "the zebra crossed the road"]}
            alone = s.http.post("/v1/embeddings", json=good).json()

            def send(body):
                return s.http.post("/v1/embeddings", json=body)

            # Good and bad requests together: whatever batches they share, only the bad fail.
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(send, [good, bad] * 8))
            for body, r in zip([good, bad] * 8, answers):
                if body is bad:
                    expect_error(r, 500)
                else:
                    assert r.status_code == 200
                    assert r.json()["data"] == alone["data"]
            # Chunking: the document falls back to sentence packing (reported), or fails
            # the request when the spec says so.
            docs = {"documents": [{"id": "ok", "text": "a b. b a."}, {"id": "z", "text": "The zebra. Crossed."}]}
            r = s.http.post("/v1/chunk", json=docs).json()
            assert [f["doc_id"] for f in r["fallbacks"]] == ["z"]
            assert {c["doc_id"] for c in r["chunks"]} == {"ok", "z"}
            r = s.http.post("/v1/chunk", json={**docs, "spec": {"on_model_error": "fail"}})
            expect_error(r, 500)
            assert '"z"' in r.json()["error"]["message"]
            s.healthy_and_right()


def test_sigterm_finishes_the_requests_in_flight():
    s = Server("--model", MINILM)
    try:
        texts = [" ".join(["A sentence for the encoder to chew on."] * 8)] * 4
        want = seamcut_embed(texts[:1])
        body = json.dumps({"inputs": ["still uploading"]}).encode()
        uploading = raw(s.addr, post_head("/embed", len(body)) + body[:10])
        while s.metrics().get("seamcut_requests_in_flight", 0) < 1:
            time.sleep(0.01)
        batched = 'seamcut_batch_requests_sum{queue="embed"}'
        waiting = 'seamcut_queue_depth{queue="embed"}'
        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(s.http.post, "/embed", json={"inputs": texts}) for _ in range(4)]
            # Every request is in the server (batched or queued) before the signal.
            while (lambda m: m.get(batched, 0) + m.get(waiting, 0))(s.metrics()) < 4:
                time.sleep(0.01)
            s.proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            uploading.sendall(body[10:])
            status, answer = read_response(uploading)
            assert status == 200 and len(json.loads(answer)) == 1
            for f in futures:
                r = f.result()
                assert r.status_code == 200
                v = np.array(r.json())
                assert v.shape == (4, 384) and cosines(v, np.repeat(want, 4, 0)).min() >= 0.9999
        assert s.proc.wait(timeout=60) == 0
        with pytest.raises(OSError):
            socket.create_connection(s.addr, timeout=5).close()
    finally:
        uploading.close()
        s.stop()


def test_the_api_key_is_required_when_set_and_compared_exactly():
    key = "s3cret-key"
    with serving("--api-key-env", "SEAMCUT_TEST_KEY", env={"SEAMCUT_TEST_KEY": key}) as s:
        body = {"inputs": ["a b"]}
        for headers in [{}, {"authorization": "Bearer wrong"}, {"authorization": f"Bearer {key}x"},
                        {"authorization": key}, {"authorization": f"Basic {key}"}]:
            r = s.http.post("/embed", json=body, headers=headers)
            expect_error(r, 401)
            assert r.headers["www-authenticate"] == "Bearer" and r.headers["connection"] == "close"
        expect_error(s.http.get("/metrics"), 401)
        expect_error(s.http.get("/info"), 401)
        expect_error(s.http.get("/v1/models"), 401)
        expect_error(s.http.post("/tokenize", json=body), 401)
        expect_error(s.http.post("/embed_all", json=body), 401)
        assert s.http.get("/health").status_code == 200  # for load balancers
        ok = {"authorization": f"Bearer {key}"}
        assert s.http.post("/embed", json=body, headers=ok).status_code == 200
        assert s.http.get("/info", headers=ok).json()["auth"] is True
        client = openai.OpenAI(base_url=s.url + "/v1", api_key=key, max_retries=0)
        assert len(client.embeddings.create(model="default", input=["a b"]).data) == 1
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=s.url + "/v1", api_key="nope", max_retries=0).embeddings.create(
                model="default", input="a"
            )
    # A key variable that is not set stops the server before it listens.
    env = {k: v for k, v in os.environ.items() if k != "SEAMCUT_UNSET_KEY"}
    r = subprocess.run([BIN, "serve", "--port", "0", "--api-key-env", "SEAMCUT_UNSET_KEY"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "SEAMCUT_UNSET_KEY" in r.stderr
