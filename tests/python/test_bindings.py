"""The Python bindings (bindings/python): the same chunks as the CLI for every chunker,
character offsets that slice Python strings, Arrow in and out, exceptions with the CLI's
messages, and the GIL released during work. Needs the `seamcut` wheel installed in the
venv (tests/run.sh builds and installs it) and the CLI (SEAMCUT_BIN)."""
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import seamcut

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SEAMCUT_BIN", os.path.join(ROOT, "target", "debug", "seamcut"))

# Non-ASCII text in several scripts: accents, CJK, emoji (4-byte UTF-8, one code point).
MIXED = (
    "Café au lait — naïve façade. Über straße grüßen.\n\n"
    "日本語の文章です。二つ目の文です。\n\n"
    "Emoji 🙂 count as one character 🚀. Ελληνικά κείμενα εδώ. Русский текст тоже.\n"
)


def fixture_docs():
    """The fixture texts (tests/fixtures/texts.jsonl: edge cases, long documents, non-ASCII)
    with ids, plus a mixed-script document."""
    docs = []
    with open(os.path.join(ROOT, "tests", "fixtures", "texts.jsonl"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            docs.append({"id": f"t{i}", "text": json.loads(line)["text"]})
    docs.append({"id": "mixed", "text": MIXED * 6})
    return docs


def cli(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True)


def cli_chunks(docs, chunker, fmt="jsonl", extra=()):
    """The CLI's chunks of `docs`: JSONL records grouped by id, or a pyarrow table."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "docs.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            for doc in docs:
                f.write(json.dumps(doc, ensure_ascii=False) + "\n")
        out = os.path.join(d, f"out.{fmt}")
        cli("chunk", src, "--chunker", chunker, "-o", out, "-q", *extra)
        if fmt == "parquet":
            return pq.read_table(out)
        by_doc = {}
        with open(out, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                by_doc.setdefault(r["doc_id"], []).append(r)
        return by_doc


@pytest.fixture(scope="module")
def docs():
    return fixture_docs()


@pytest.mark.parametrize("name", seamcut.CHUNKERS)
def test_same_chunks_as_the_cli_for_every_chunker(docs, name):
    expected = cli_chunks(docs, name)
    chunker = seamcut.Chunker(name)
    got = chunker.chunk_batch([d["text"] for d in docs])
    assert len(got) == len(docs)
    for doc, chunks in zip(docs, got):
        want = expected.get(doc["id"], [])
        assert [(c.start_byte, c.end_byte, c.token_count, c.sentences) for c in chunks] == [
            (r["start"], r["end"], r["tokens"], r["sentences"]) for r in want
        ], (name, doc["id"])
        assert [c.text for c in chunks] == [r["text"] for r in want]
    # One document at a time gives the same chunks as the batch.
    for doc, chunks in list(zip(docs, got))[-25:]:
        assert chunker.chunk(doc["text"]) == chunks, (name, doc["id"])


@pytest.mark.parametrize("name,overlap", [("maxmin", None), ("recursive", None), ("fixed", None), ("fixed", 6), ("maxmin", 6)])
def test_character_offsets_slice_the_python_string(docs, name, overlap):
    chunker = seamcut.Chunker(name, max_tokens=24, overlap=overlap)
    for doc in docs:
        text = doc["text"]
        chunks = chunker(text)
        raw = text.encode("utf-8")
        for c in chunks:
            assert text[c.start_index:c.end_index] == c.text
            assert raw[c.start_byte:c.end_byte].decode("utf-8") == c.text
            assert c.token_count <= 24
        # Coverage: nothing but whitespace between or around the chunks.
        at = 0
        for c in chunks:
            assert text[at:c.start_index].strip() == ""
            at = c.end_index
        assert text[at:].strip() == ""
    # The mixed-script document has code points of 2, 3 and 4 bytes: offsets differ.
    chunks = chunker(MIXED)
    assert any(c.start_index != c.start_byte for c in chunks)
    if overlap:
        # Windows: around their chunks, in characters and bytes alike, reaching into both
        # neighbours of every inner chunk (the chunks themselves still tile).
        raw = MIXED.encode("utf-8")
        for c in chunks:
            assert c.window_start <= c.start_index and c.end_index <= c.window_end
            assert MIXED[c.window_start:c.window_end] == c.window_text
        assert all(b.window_start < a.end_index and a.window_end > b.start_index for a, b in zip(chunks, chunks[1:]))
    else:
        assert all(c.window_text is None for c in chunks)


def test_chonkie_shaped_api_and_spec():
    c = seamcut.Chunker("maxmin", chunk_size=64, hard_thr=0.5)
    assert c.spec["max_tokens"] == 64 and c.spec["maxmin"]["hard_thr"] == 0.5
    assert isinstance(c("One. Two."), list) and isinstance(c(["One.", "Two."]), list)
    assert seamcut.MaxMinChunker(max_tokens=64).spec == seamcut.Chunker("maxmin", max_tokens=64).spec
    assert seamcut.TokenChunker(max_tokens=8, overlap=2).name == "fixed"
    # The global rule's seam terms are spec fields like any other.
    g = seamcut.Chunker("global", max_tokens=32, heading_weight=1.0, depth_weight=0.5, block=3)
    assert g.spec["global"] == {**g.spec["global"], "heading_weight": 1.0, "depth_weight": 0.5, "block": 3}
    t = "1 Intro\n\nSome text here. More.\n\n2 Usage\n\nRun it."
    assert " ".join(x.text for x in g(t)).split() == t.split()
    # A chunker pickles as its class and spec (how Ray ships it to workers).
    again = pickle.loads(pickle.dumps(c))
    assert again.spec == c.spec and again.chunk(MIXED) == c.chunk(MIXED)
    assert type(pickle.loads(pickle.dumps(seamcut.RecursiveChunker(max_tokens=32)))) is seamcut.RecursiveChunker
    # The thread pool exists by now: setting its size is an error, not ignored.
    with pytest.raises(ValueError, match="threads"):
        seamcut.set_num_threads(3)
    # The spec is the CLI's: --spec reads what .spec gives.
    with tempfile.TemporaryDirectory() as d:
        spec, src, out = (os.path.join(d, n) for n in ("spec.json", "doc.txt", "out.jsonl"))
        json.dump(c.spec, open(spec, "w"))
        open(src, "w", encoding="utf-8").write(MIXED)
        cli("chunk", src, "--spec", spec, "-o", out, "-q")
        recs = [json.loads(l) for l in open(out, encoding="utf-8")]
    assert [(r["start"], r["end"]) for r in recs] == [(x.start_byte, x.end_byte) for x in c(MIXED)]


@pytest.mark.parametrize(
    "name,params,flags",
    [
        ("maxmin", {"max_tokens": 64, "hard_thr": 0.45, "min_tokens": 8}, ["--max-tokens", "64", "--hard-thr", "0.45", "--min-tokens", "8"]),
        ("recursive", {"chunk_size": 48}, ["--max-tokens", "48"]),
        ("fixed", {"max_tokens": 32, "overlap": 4}, ["--max-tokens", "32", "--overlap", "4"]),
    ],
)
def test_saved_spec_is_what_the_cli_reads(docs, name, params, flags):
    """spec_json() is the CLI's --print-spec for the same settings, and `seamcut chunk --spec`
    with the file save_spec() writes gives the chunker's chunks."""
    chunker = seamcut.Chunker(name, **params)
    assert json.loads(chunker.spec_json()) == chunker.spec
    with tempfile.TemporaryDirectory() as d:
        spec, src, out = (os.path.join(d, n) for n in ("spec.json", "docs.jsonl", "out.jsonl"))
        with open(src, "w", encoding="utf-8") as f:
            for doc in docs:
                f.write(json.dumps(doc, ensure_ascii=False) + "\n")
        printed = cli("chunk", src, "--chunker", name, *flags, "--print-spec").stdout
        assert printed == chunker.spec_json() + "\n"
        chunker.save_spec(spec)
        assert open(spec, encoding="utf-8").read() == printed
        cli("chunk", src, "--spec", spec, "-o", out, "-q")
        by_doc = {}
        for line in open(out, encoding="utf-8"):
            r = json.loads(line)
            by_doc.setdefault(r["doc_id"], []).append((r["start"], r["end"], r["tokens"]))
    got = chunker.chunk_batch([doc["text"] for doc in docs])
    assert sum(map(len, by_doc.values())) > len(docs)
    for doc, chunks in zip(docs, got):
        assert [(c.start_byte, c.end_byte, c.token_count) for c in chunks] == by_doc.get(doc["id"], [])


def test_exceptions_carry_the_cli_messages():
    with pytest.raises(ValueError, match="unknown chunker"):
        seamcut.Chunker("nope")
    with pytest.raises(ValueError, match=r"unknown parameter \"hard_thr\" for the minima chunker \(known: .*similarity_window"):
        seamcut.Chunker("minima", hard_thr=0.3)
    # A setting's error names it as Python does (the spec's field), never a CLI flag.
    with pytest.raises(ValueError, match="min_tokens: 99 is larger than the cap, max_tokens 10") as e:
        seamcut.Chunker("recursive", max_tokens=10, min_tokens=99)
    assert "--" not in str(e.value)
    with pytest.raises(TypeError):
        seamcut.Chunker("sentence").chunk(b"bytes")
    with pytest.raises(TypeError):
        seamcut.embed(["ok", 3])
    # A model that does not exist: the same one-line message as the CLI's.
    missing = "/nonexistent/model-dir"
    with pytest.raises(Exception) as e:
        seamcut.Chunker("maxmin", model=missing)
    r = subprocess.run([BIN, "chunk", "-", "--chunker", "maxmin", "--model", missing],
                       input="Some text.", capture_output=True, text=True)
    assert r.returncode != 0 and str(e.value) in r.stderr, (str(e.value), r.stderr)
    assert "\n" not in str(e.value)


def test_embed_equals_the_cli():
    texts = ["A first sentence.", "Un deuxième, avec des accents.", "日本語"]
    v = seamcut.embed(texts)
    assert v.dtype == np.float32 and v.shape[0] == len(texts) and v.flags.c_contiguous
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "lines.txt"), os.path.join(d, "v.npy")
        open(src, "w", encoding="utf-8").write("\n".join(texts) + "\n")
        cli("embed", "--lines", src, "-o", out, "-q")
        want = np.load(out)
        # The CLI refuses an empty line (a lines file's empty line is a mistake more often
        # than a text); the library embeds an empty text as the zero vector.
        open(src, "w", encoding="utf-8").write("\n".join(texts + [""]) + "\n")
        r = subprocess.run([BIN, "embed", "--lines", src, "-o", out, "-q"], capture_output=True, text=True)
        assert r.returncode == 1 and "lines.txt:4: an empty line" in r.stderr, r.stderr
    np.testing.assert_array_equal(v, want)
    assert not seamcut.embed([""]).any()
    assert seamcut.embed([]).shape == (0, v.shape[1])


def test_embed_prompts_and_dims_equal_the_cli():
    """`embed(prompt_name=, dims=)` and a Chunker's `prompt_name` are the CLI's flags: on a model
    with prompts (the random-weight NomicBERT fixture), the same vectors; a name the model lacks
    raises ValueError with the CLI's message."""
    nomic = os.path.join(ROOT, "tests", "fixtures", "models", "nomic_bert")
    texts = ["A first sentence.", "Another one, about rivers."]
    v = seamcut.embed(texts, model=nomic, prompt_name="query", dims=24)
    assert v.shape == (2, 24)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "lines.txt"), os.path.join(d, "v.npy")
        open(src, "w", encoding="utf-8").write("\n".join(texts) + "\n")
        cli("embed", "--model", nomic, "--prompt-name", "query", "--dims", "24", "--lines", src, "-o", out, "-q")
        np.testing.assert_array_equal(v, np.load(out))
    assert not np.allclose(seamcut.embed(texts, model=nomic, dims=24), v)
    with pytest.raises(ValueError, match="no prompt named"):
        seamcut.embed(texts, model=nomic, prompt_name="serch_query")
    chunker = seamcut.Chunker("maxmin", model=nomic, prompt_name="document", dims=32)
    chunks = chunker.chunk("One topic here. More of it.\n\nAnother topic.", embeddings="mean")
    assert chunks and all(c.embedding.shape == (32,) for c in chunks)


def test_arrow_round_trip_equals_the_cli_parquet(docs):
    for name, embeddings in [("maxmin", "mean"), ("recursive", "reembed"), ("minima", None)]:
        table = pa.table({"id": [d["id"] for d in docs], "text": [d["text"] for d in docs],
                          "lang": ["xx" if i % 3 else None for i in range(len(docs))]})
        extra = ["--meta-field", "lang"] + (["--embeddings", embeddings] if embeddings else [])
        want = cli_chunks([{**d, "lang": l} for d, l in zip(docs, table["lang"].to_pylist())],
                          name, "parquet", extra)
        got = seamcut.Chunker(name).chunk_table(table, meta_columns=["lang"], embeddings=embeddings or False)
        assert got.schema == want.schema, (name, got.schema, want.schema)
        assert got.equals(want), name
        rows = got.select(["doc_id", "start", "end", "text"]).to_pylist()
        assert got["id"].to_pylist() == [seamcut.chunk_id(r["doc_id"], r["start"], r["end"], r["text"]) for r in rows]
        # A record batch goes in too, and an empty table gives an empty table of the schema.
        batch = table.to_batches()[0]
        assert seamcut.Chunker(name).chunk_table(batch, meta_columns=["lang"],
                                                 embeddings=embeddings or False).equals(want)
    empty = seamcut.chunk_table(pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}))
    assert empty.num_rows == 0 and empty.schema.names[:9] == ["id", "doc_id", "index", "start", "end", "text", "tokens", "sentences", "context"]


def test_chunk_ids_are_the_documented_hash_and_bad_arguments_raise():
    assert seamcut.chunk_id("doc", 0, 5, "Hello") == "6dd22377facb28c0cdf748fd4b9be479"  # as in src/chunk.rs
    assert seamcut.chunk_id("doc", 0, 5, "Hello") != seamcut.chunk_id("doc", 1, 5, "Hello")
    with pytest.raises(ValueError, match="start_byte <= end_byte"):
        seamcut.chunk_id("doc", 5, 0, "Hello")
    with pytest.raises(TypeError, match="doc_id must be a str"):
        seamcut.chunk_id(3, 0, 5, "Hello")


def test_bad_rows_are_skipped_with_a_warning_or_raise():
    table = pa.table({"id": ["a", "b", "c"], "text": ["Fine text. Here.", None, "Also fine."]})
    # Misspelt columns are one error naming the columns there are, not every row skipped.
    with pytest.raises(ValueError, match=r'no text column "body" in the table \(columns: id, text\)'):
        seamcut.Chunker("sentence").chunk_table(table, text_column="body")
    with pytest.raises(ValueError, match='no id column "url"'):
        seamcut.Chunker("sentence").chunk_table(table, id_column="url")
    with pytest.raises(ValueError, match='no metadata column "lang"'):
        seamcut.Chunker("sentence").chunk_table(table, meta_columns=["lang"])
    numbered = seamcut.Chunker("sentence").chunk_table(table.drop_columns(["id"]).drop_null(), id_column=None)
    assert sorted(set(numbered["doc_id"].to_pylist())) == ["table:1", "table:2"]
    # embeddings=True: the unit vectors' mean for an embedding chunker, the chunk's own
    # vector for a baseline (the library decides).
    ok = table.drop_null()
    mean = seamcut.Chunker("maxmin").chunk_table(ok, embeddings=True)
    assert mean.equals(seamcut.Chunker("maxmin").chunk_table(ok, embeddings="mean"))
    base = seamcut.Chunker("sentence").chunk_table(ok, embeddings=True)
    np.testing.assert_array_equal(np.stack(base["embedding"].to_numpy(zero_copy_only=False)),
                                  seamcut.embed(base["text"].to_pylist()))
    # overlap: window columns in the table, and reembed embeds each window's text.
    win = seamcut.Chunker("sentence", max_tokens=8, overlap=3).chunk_table(
        pa.table({"id": ["m"], "text": [MIXED]}), embeddings="reembed")
    assert win.column_names[9:12] == ["window_start", "window_end", "window_text"]
    np.testing.assert_allclose(np.stack(win["embedding"].to_numpy(zero_copy_only=False)),
                               seamcut.embed(win["window_text"].to_pylist()), atol=1e-6)
    assert any(w != t for w, t in zip(win["window_text"].to_pylist(), win["text"].to_pylist()))
    with pytest.warns(UserWarning, match="skipped 1 row"):
        out = seamcut.Chunker("sentence").chunk_table(table)
    assert sorted(set(out["doc_id"].to_pylist())) == ["a", "c"]
    with pytest.raises(ValueError, match='null "text"'):
        seamcut.Chunker("sentence").chunk_table(table, on_error="raise")
    with pytest.raises(ValueError, match="embeddings"):
        seamcut.Chunker("sentence").chunk_table(table, embeddings="sideways")
    with pytest.raises(TypeError):
        seamcut.Chunker("sentence").chunk_table([1, 2, 3])


def test_the_gil_is_released():
    """Python code runs in another thread while seamcut works. (The speed-up of two threads
    over one is a measurement, not a test: benches/python_threads.py prints it.)"""
    chunker = seamcut.Chunker("recursive", max_tokens=64)
    data = open(os.path.join(ROOT, "benches", "data-sentences.txt"), encoding="utf-8").read()
    big = (data + "\n\n") * max(1, 400_000 // len(data))

    # While one thread is inside chunk(), Python code in another keeps running: the loop
    # below counts its iterations until the worker is done. The worker holds the GIL from
    # `started.set()` into chunk(); were it held through the call, this thread would resume
    # only after it, find `done` set and count nothing. (A loop started straight after
    # `t.start()` would count a switch interval's worth, 5 ms, before the worker first ran,
    # and pass either way.)
    started = threading.Event()
    done = threading.Event()
    count = 0

    def work():
        started.set()
        chunker.chunk(big)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    while not done.is_set():
        count += 1
    t.join()
    assert count > 10_000, f"the main thread ran {count} loop iterations during a chunk() call"


def test_the_wheel_installs_and_runs_in_a_fresh_venv_without_network():
    """The built wheel alone (no numpy, no models folder, no network) chunks with the default
    model, which is inside the extension."""
    wheel = os.environ.get("SEAMCUT_WHEEL")
    if not wheel:
        pytest.skip("SEAMCUT_WHEEL (the built wheel) not given; tests/run.sh gives it")
    with tempfile.TemporaryDirectory() as d:
        venv = os.path.join(d, "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", wheel], check=True)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": d, "SEAMCUT_MODELS": os.path.join(d, "nowhere"),
               "HF_HUB_OFFLINE": "1", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
        out = subprocess.run([py, "-c", "import seamcut; print(seamcut.Chunker()('Some text. More.'))"],
                             cwd=d, env=env, check=True, capture_output=True, text=True).stdout
    assert "Chunk(text='Some text. More.', start_index=0, end_index=16" in out, out


def test_chunk_vectors_in_python_equal_the_clis():
    text = ("# Birds\n\nOwls hunt at night. They fly without a sound.\n\n"
            "## Gulls\n\nGulls follow the fishing boats. They eat what the nets bring up.\n\n"
            "The harbour is quiet in winter. Ice closes it for weeks.\n")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "a.txt")
        open(src, "w", encoding="utf-8").write(text)
        for name, mode in [("maxmin", "late"), ("recursive", "late"), ("recursive", "blend"), ("maxmin", "mean"),
                           ("sentence", "reembed")]:
            c = seamcut.Chunker(name, max_tokens=24)
            got = c.chunk_batch([text], embeddings=mode)[0]
            assert [(x.start_byte, x.end_byte) for x in got] == [(x.start_byte, x.end_byte) for x in c.chunk(text)]
            out = os.path.join(d, f"{name}-{mode}.jsonl")
            r = subprocess.run([BIN, "chunk", src, "--chunker", name, "--max-tokens", "24", "--embeddings", mode,
                                "-o", out, "-q"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            want = np.load(out[:-len(".jsonl")] + ".npy")
            v = np.stack([x.embedding for x in got])
            assert v.shape == want.shape and v.dtype == np.float32, (name, mode, v.shape, want.shape)
            assert np.allclose(v, want, atol=1e-5), (name, mode)
            assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
            assert all(x.context.startswith("Birds") for x in got)
        # One document through chunk() gets the same vectors; no embeddings, no vectors.
        c = seamcut.Chunker("maxmin", max_tokens=24)
        one = c.chunk(text, embeddings="late")
        assert np.allclose(np.stack([x.embedding for x in one]), np.stack([x.embedding for x in c.chunk_batch([text], embeddings="late")[0]]))
        assert all(x.embedding is None for x in c.chunk(text))
        with pytest.raises(ValueError, match="embeddings"):
            c.chunk(text, embeddings="sideways")


def test_a_setting_out_of_its_range_is_refused_by_its_name():
    for name, params, setting in [("maxmin", {"hard_thr": 5}, "hard_thr"), ("minima", {"threshold": 2.0}, "threshold")]:
        with pytest.raises(ValueError, match=setting):
            seamcut.Chunker(name, **params).chunk("One sentence. Another one.")
