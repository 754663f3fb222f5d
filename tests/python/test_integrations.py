"""The LangChain and LlamaIndex adapters (bindings/python/python/seamcut/integrations/), against
the real packages (langchain-text-splitters, llama-index-core, pinned in requirements.txt):
the same chunks as seamcut.Chunker, exact character offsets (also where the frameworks' own
text search would pick the wrong occurrence), metadata carried. Needs the seamcut wheel."""
import subprocess
import sys

import pytest

import seamcut

MIXED = (
    "Café au lait — naïve façade. Über straße grüßen.\n\n"
    "日本語の文章です。二つ目の文です。\n\n"
    "Emoji 🙂 count as one character 🚀. Ελληνικά κείμενα εδώ. Русский текст тоже.\n"
) * 4
PROSE = (
    "The treaty was signed in spring. Its terms were harsh for the losing side.\n\n"
    "Meanwhile the harvest failed. Grain prices doubled within a month.\n\n"
    "A new government took office. It promised bread and peace.\n"
) * 3


def test_the_wheel_imports_no_framework():
    code = "import sys, seamcut; assert not {'langchain_core', 'llama_index'} & set(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_langchain_splitter_gives_seamcuts_chunks_with_exact_start_indices():
    from langchain_core.documents import Document
    from langchain_text_splitters import TextSplitter

    from seamcut.integrations.langchain import SeamcutTextSplitter

    splitter = SeamcutTextSplitter("maxmin", chunk_size=24, add_start_index=True)
    assert isinstance(splitter, TextSplitter)
    assert splitter.chunker.spec["max_tokens"] == 24
    chunks = seamcut.Chunker("maxmin", max_tokens=24)(MIXED)
    assert splitter.split_text(MIXED) == [c.text.strip() for c in chunks]
    docs = splitter.create_documents([MIXED, PROSE], metadatas=[{"source": "a"}, {"source": "b"}])
    for d in docs:
        text = MIXED if d.metadata["source"] == "a" else PROSE
        start = d.metadata["start_index"]
        assert text[start:start + len(d.page_content)] == d.page_content
    assert [d.metadata["start_index"] for d in docs if d.metadata["source"] == "a"] == [
        c.start_index + len(c.text) - len(c.text.lstrip()) for c in chunks
    ]
    docs[0].metadata["source"] = "changed"  # each document has its own metadata
    assert docs[1].metadata["source"] == "a"
    # split_documents / transform_documents carry metadata; without stripping the chunks
    # give the document back.
    raw = SeamcutTextSplitter("recursive", chunk_size=16, strip_whitespace=False)
    split = raw.split_documents([Document(page_content=PROSE, metadata={"k": 1})])
    assert "".join(d.page_content for d in split) == PROSE and all(d.metadata == {"k": 1} for d in split)
    assert [d.page_content for d in raw.transform_documents([Document(page_content=PROSE)])] == [
        d.page_content for d in split
    ]


def test_langchain_chunks_of_a_document_with_an_id_carry_seamcuts_stable_ids():
    import pyarrow as pa
    from langchain_core.documents import Document

    from seamcut.integrations.langchain import SeamcutTextSplitter

    splitter = SeamcutTextSplitter("maxmin", chunk_size=24)
    docs = [Document(page_content=MIXED, id="doc-a"), Document(page_content=PROSE)]
    split = splitter.split_documents(docs)
    # The ids of the chunk table's rows (and so of the CLI's records and a database's rows)
    # for the same document id; none for a document without one.
    table = seamcut.Chunker("maxmin", max_tokens=24).chunk_table(pa.table({"id": ["doc-a"], "text": [MIXED]}))
    assert [d.id for d in split if d.id is not None] == table["id"].to_pylist()
    assert sum(d.id is None for d in split) == len(splitter.split_text(PROSE)) > 0
    # The same on every run; an edited document's changed chunks get new ids, its others keep
    # theirs.
    assert [d.id for d in splitter.split_documents(docs)] == [d.id for d in split]
    edited = splitter.split_documents([Document(page_content=MIXED + "A new closing line.", id="doc-a")])
    old = {d.id for d in split if d.id}
    assert 0 < len(old & {d.id for d in edited}) < len(edited)
    assert len({d.id for d in split if d.id}) == len(table)


def test_langchain_splitter_takes_a_chunker_or_its_parameters():
    from seamcut.integrations.langchain import SeamcutTextSplitter

    c = seamcut.Chunker("fixed", max_tokens=12, overlap=4)
    s = SeamcutTextSplitter(c)
    # With an overlap, each piece is its chunk's window: consecutive pieces share text.
    pieces = s.split_text(PROSE)
    assert s.chunker is c and pieces == [x.window_text.strip() for x in c(PROSE)]
    assert all(a.split()[-1] in b for a, b in zip(pieces, pieces[1:]))
    assert SeamcutTextSplitter("fixed", chunk_size=12, chunk_overlap=4).chunker.spec == c.spec
    with pytest.raises(ValueError):
        SeamcutTextSplitter(c, chunk_size=10)
    with pytest.raises(ValueError, match="unknown parameter"):
        SeamcutTextSplitter("maxmin", hard_treshold=0.5)


def test_llama_index_nodes_carry_exact_character_offsets():
    from llama_index.core import Document
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import NodeRelationship

    from seamcut.integrations.llama_index import SeamcutNodeParser

    parser = SeamcutNodeParser("maxmin", max_tokens=24)
    assert isinstance(parser, NodeParser) and parser.chunker_spec["max_tokens"] == 24
    docs = [Document(text=MIXED, metadata={"source": "a"}), Document(text=PROSE, metadata={"source": "b"})]
    nodes = parser.get_nodes_from_documents(docs)
    chunks = seamcut.Chunker("maxmin", max_tokens=24).chunk_batch([MIXED, PROSE])
    assert [n.text for n in nodes] == [c.text for cs in chunks for c in cs]
    for n in nodes:
        doc = docs[0] if n.metadata["source"] == "a" else docs[1]
        assert doc.text[n.start_char_idx:n.end_char_idx] == n.text
        assert n.ref_doc_id == doc.doc_id
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes[: len(chunks[0])]] == [
        (c.start_index, c.end_index) for c in chunks[0]
    ]
    assert NodeRelationship.NEXT in nodes[0].relationships
    # The node parser is a transform too.
    assert [n.text for n in parser(docs)] == [n.text for n in nodes]
    # With an overlap, each node is its chunk's window, at the window's exact offsets.
    windowed = SeamcutNodeParser("maxmin", max_tokens=24, overlap=6).get_nodes_from_documents(docs[1:])
    want = seamcut.Chunker("maxmin", max_tokens=24, overlap=6).chunk(PROSE)
    assert [c.text for c in want] == [c.text for c in chunks[1]]
    assert [n.text for n in windowed] == [c.window_text for c in want]
    assert all(PROSE[n.start_char_idx:n.end_char_idx] == n.text for n in windowed)
    assert len(windowed) > 1 and windowed[0].end_char_idx > windowed[1].start_char_idx


def test_llama_index_keeps_seamcuts_offsets_where_a_text_search_would_miss():
    from llama_index.core import Document

    from seamcut.integrations.llama_index import SeamcutNodeParser

    # Paragraph chunks "a a\n\n" and "a\n\n": LlamaIndex's own search for the second from
    # just after the first's start finds it inside the first, at 2.
    text = "a a\n\na\n\n"
    nodes = SeamcutNodeParser("paragraph").get_nodes_from_documents([Document(text=text)])
    assert [(n.text, n.start_char_idx, n.end_char_idx) for n in nodes] == [("a a\n\n", 0, 5), ("a\n\n", 5, 8)]
    assert text.find("a\n\n", 1) == 2


def test_llama_index_parser_takes_a_chunker_and_node_settings():
    from llama_index.core import Document
    from llama_index.core.schema import NodeRelationship

    from seamcut.integrations.llama_index import SeamcutNodeParser

    c = seamcut.Chunker("sentence", max_tokens=16)
    p = SeamcutNodeParser(c, include_prev_next_rel=False)
    assert p.chunker is c and p.include_prev_next_rel is False
    nodes = p.get_nodes_from_documents([Document(text=PROSE)])
    assert len(nodes) == len(c(PROSE)) and NodeRelationship.NEXT not in nodes[0].relationships
    with pytest.raises(ValueError):
        SeamcutNodeParser(c, max_tokens=10)
