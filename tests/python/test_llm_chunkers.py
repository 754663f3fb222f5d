"""The LLM chunkers from Python: `seamcut.LumberChunker` and `LumberGuidedChunker` against a
scripted OpenAI-compatible server on 127.0.0.1 (the same requests and chunks as the CLI), and
their settings errors. Needs the `seamcut` wheel installed and the CLI (SEAMCUT_BIN)."""
import json
import os
import re
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import seamcut

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))

DOC = "\n\n".join(
    f"Paragraph {i} is about {topic}. It says more about {topic}, and then a little more about {topic}."
    for i, topic in enumerate(["whales"] * 4 + ["tax law"] * 4 + ["volcanoes"] * 4)
)


def answer(body):
    """LumberChunker's question: the paragraph two after the group's first; the guided
    mode's: the first seam it was shown."""
    user = body["messages"][-1]["content"]
    ids = [int(m) for m in re.findall(r"^ID (\d+):", user, re.M)]
    if ids:
        return f"Answer: ID {ids[0] + 2 if len(ids) > 2 else ids[-1]}"
    seams = re.findall(r"SEAM (\d+)", user)
    return f"Answer: SEAM {seams[0]}" if seams else "Answer: none"


@pytest.fixture(scope="module")
def server():
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            reply = {"choices": [{"message": {"role": "assistant", "content": answer(body)}}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": 5}}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", requests
    httpd.shutdown()


@pytest.mark.parametrize("cls,name", [(seamcut.LumberChunker, "lumber"), (seamcut.LumberGuidedChunker, "lumber-guided")])
def test_llm_chunkers_give_the_clis_chunks(server, cls, name):
    url, requests = server
    assert name in seamcut.LLM_CHUNKERS
    llm = {"url": url, "model": "scripted", "cache": "none", "concurrency": 1}
    chunker = cls(llm=llm, theta=60, max_tokens=120)
    assert chunker.name == name and chunker.spec["lumber"]["theta"] == 60
    before = len(requests)
    chunks = chunker(DOC)
    asked = len(requests) - before
    assert asked > 0, "the LLM was asked"
    assert all(r["model"] == "scripted" and r["temperature"] == pytest.approx(0.1) for r in requests[before:])
    # Cover the document, in order, under the cap.
    at = 0
    for c in chunks:
        assert DOC[at:c.start_index].strip() == ""
        assert DOC[c.start_index:c.end_index] == c.text and c.token_count <= 120
        at = c.end_index
    assert DOC[at:].strip() == "" and len(chunks) > 1
    # The CLI with the same spec asks the same questions and cuts the same way.
    with tempfile.TemporaryDirectory() as d:
        spec, doc = os.path.join(d, "spec.json"), os.path.join(d, "doc.txt")
        with open(spec, "w") as f:
            json.dump(chunker.spec, f)
        with open(doc, "w", encoding="utf-8") as f:
            f.write(DOC)
        before = len(requests)
        out = subprocess.run([BIN, "chunk", doc, "--spec", spec, "-q"], capture_output=True, text=True, check=True)
        assert len(requests) - before == asked
    cli = [json.loads(l) for l in out.stdout.splitlines()]
    assert [(r["start"], r["end"], r["tokens"]) for r in cli] == [(c.start_byte, c.end_byte, c.token_count) for c in chunks]


def test_llm_settings_errors_are_value_errors():
    with pytest.raises(ValueError, match="llm.model: the LLM chunkers need one") as e:
        seamcut.LumberChunker()
    assert "--" not in str(e.value)
    with pytest.raises(ValueError, match="unknown parameter"):
        seamcut.LumberChunker(llm={"url": "http://127.0.0.1:9/v1", "model": "m"}, thetaa=5)
