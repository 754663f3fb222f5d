"""The documented way to keep a LanceDB table from Python (bindings/python: chunk_table's
`id` column with LanceDB's own merge_insert), against real embedded LanceDB from PyPI: a rerun
adds nothing, and an edited document's upsert that deletes its stale rows leaves exactly what
a fresh load gives. The Rust `-o DIR/NAME.lance` output (feature lancedb) is tested in
tests/it/lance.rs; this is the path a Python user has without that build."""
import os
import tempfile

import pyarrow as pa
import pytest

import seamcut

lancedb = pytest.importorskip("lancedb")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def docs():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    paras = [p for p in text.split("\n\n") if p.strip()]
    return {f"doc-{i}": "\n\n".join(paras[i * 6:(i + 1) * 6]) for i in range(8)}


def chunks(d):
    t = pa.table({"id": list(d), "text": list(d.values())})
    return seamcut.Chunker("maxmin").chunk_table(t, embeddings="mean")


def upsert(table, new, replace=None):
    m = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    if replace:
        m = m.when_not_matched_by_source_delete("doc_id IN (" + ", ".join(f"'{d}'" for d in replace) + ")")
    m.execute(new)


def rows(table):
    t = table.to_arrow().sort_by("id")
    return t.select(["id", "doc_id", "index", "start", "end", "text"]).to_pylist(), t["embedding"].to_pylist()


def test_reruns_add_nothing_and_a_replaced_document_leaves_exactly_its_new_chunks():
    with tempfile.TemporaryDirectory() as d:
        db = lancedb.connect(d)
        first = chunks(docs())
        table = db.create_table("chunks", first)
        before = rows(table)
        upsert(table, chunks(docs()))
        assert rows(table) == before and table.count_rows() == first.num_rows
        # An edit of one document: its new chunks upserted, its stale ones deleted in the same
        # commit, equal to a fresh load of the edited corpus.
        edited = docs()
        edited["doc-3"] = "One new paragraph.\n\nAnother, shorter."
        upsert(table, chunks({"doc-3": edited["doc-3"]}), replace=["doc-3"])
        fresh = db.create_table("fresh", chunks(edited))
        assert rows(table) == rows(fresh)
        # Without the delete, the document's stale chunks stay beside its new ones.
        kept = db.create_table("kept", first)
        upsert(kept, chunks({"doc-3": edited["doc-3"]}))
        stale = {r["id"] for r in first.to_pylist() if r["doc_id"] == "doc-3"}
        assert stale and stale <= {r["id"] for r in rows(kept)[0]}
        assert not stale & {r["id"] for r in rows(table)[0]}
