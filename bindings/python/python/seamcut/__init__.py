"""seamcut: cut text at its semantic seams.

Embedding-first chunking (Max-Min, minima, breakpoints, a global rule) and the usual
baselines (fixed tokens, recursive separators, sentences, paragraphs), with a small static
embedding model built in, so it runs with no network and no GPU::

    import seamcut
    chunker = seamcut.Chunker("maxmin", max_tokens=256)
    for chunk in chunker("Some text. More text.\\n\\nA new paragraph."):
        print(chunk.start_index, chunk.end_index, chunk.token_count, chunk.text)

Every chunk's ``start_index``/``end_index`` are character offsets into the Python string
(``text[c.start_index:c.end_index] == c.text``); ``start_byte``/``end_byte`` are UTF-8 byte
offsets, as the CLI writes them. The chunks of a document cover it in order with nothing
lost or repeated, and none is over ``max_tokens``; with ``overlap=N`` each chunk also has a
window (``window_start``/``window_end``/``window_text``) reaching ``N`` tokens into its
neighbours.

The chunker is built by the Rust library from the same spec ``seamcut chunk --spec`` reads
(``Chunker.spec`` shows it as a dict, ``Chunker.save_spec(path)`` writes the file), so the
CLI and Python give the same chunks. All work runs with the GIL released; models are loaded
once per process.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence, Union

from . import _seamcut

__version__: str = _seamcut.__version__

__all__ = [
    "Chunk",
    "Chunker",
    "MaxMinChunker",
    "MinimaChunker",
    "BreakpointChunker",
    "GlobalChunker",
    "TokenChunker",
    "RecursiveChunker",
    "SentenceChunker",
    "ParagraphChunker",
    "LumberChunker",
    "LumberGuidedChunker",
    "chunk_id",
    "chunk_table",
    "embed",
    "set_num_threads",
    "CHUNKERS",
    "LLM_CHUNKERS",
]

#: The chunkers, as ``Chunker(chunker=...)`` and ``seamcut chunk --chunker`` name them (the
#: library's one list, read from the extension).
CHUNKERS = tuple(name for name, family in _seamcut.chunkers() if family != "llm")
#: The chunkers that ask an LLM (an OpenAI-compatible server, or a GGUF file run in-process):
#: ``Chunker("lumber", llm={"url": ..., "model": ...})``.
LLM_CHUNKERS = tuple(name for name, family in _seamcut.chunkers() if family == "llm")


def _plural(n, word):
    """`1 row`, `2 rows`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document (Chonkie's field names, plus byte offsets)."""

    #: The chunk's text: ``document[start_index:end_index]``.
    text: str
    #: Character offset of the chunk's start in the document.
    start_index: int
    #: Character offset just past the chunk's end.
    end_index: int
    #: Tokens in the chunk, counted by the chunker's sizer (the model's tokenizer by default).
    token_count: int
    #: UTF-8 byte offset of the start (as the CLI's ``start``).
    start_byte: int
    #: UTF-8 byte offset just past the end (as the CLI's ``end``).
    end_byte: int
    #: Sentences that start inside the chunk.
    sentences: int
    #: The headings above the chunk, ``"Title > Chapter 3 > 3.2 Quoting"`` (the document's
    #: first heading is its title), for an index to keep beside the text.
    context: str = ""
    #: With ``overlap``: character offsets of the chunk's window (the chunk plus up to
    #: ``overlap`` tokens of each neighbour, whole sentences where they fit) and its text,
    #: what ``embeddings="reembed"`` embeds; else ``None``.
    window_start: Optional[int] = None
    window_end: Optional[int] = None
    window_text: Optional[str] = None
    #: The chunk's vector (float32, L2-normalised) when ``chunk``/``chunk_batch`` were asked
    #: for ``embeddings``; else ``None``.
    embedding: Any = None

    def __str__(self) -> str:
        return self.text

    def __len__(self) -> int:
        return len(self.text)


class Chunker:
    """A seamcut chunker.

    ``chunker`` is one of :data:`CHUNKERS` (default ``"maxmin"``). Any other keyword is a
    field of seamcut's chunker spec: ``model`` (``"default"``, the built-in static model; a
    catalog name such as ``"all-MiniLM-L6-v2"``; a model directory; a hub id),
    ``max_tokens`` (hard cap, default 256; ``chunk_size`` is accepted as Chonkie's name for
    it), ``min_tokens``, ``overlap`` (each chunk's window into its neighbours, in tokens), ``sizer``, ``device``, ``dtype``,
    ``units``, ``on_model_error``, or a setting of the chosen rule given flat
    (``hard_thr``, ``c``, ``init_const`` for maxmin; ``threshold``, ``similarity_window``,
    ... for minima; ``type``, ``amount``, ``buffer_size`` for breakpoint;
    ``target_tokens``, ``size_weight``, ``depth_weight``, ``block`` for global; ``theta``, ``attempts``, ``candidates``, ``groups``,
    ``context_words`` for the LLM chunkers of :data:`LLM_CHUNKERS`, with ``llm`` a dict of
    the LLM's settings: ``url`` (an OpenAI-compatible ``/v1`` endpoint; empty to run
    ``model``, a ``.gguf`` file, in-process), ``model``, ``api_key_env``, ``temperature``,
    ``concurrency``, ``cache`` (``"auto"``, ``"none"`` or a file), ...). Unknown
    names raise ``ValueError`` listing the known ones.
    """

    #: The chunker a class builds when ``chunker`` is not given (each subclass its own).
    _chunker = "maxmin"

    def __init__(self, chunker: Optional[str] = None, **params: Any) -> None:
        if chunker is None:
            chunker = self._chunker
        elif type(self) is not Chunker and chunker != self._chunker:
            raise ValueError(f"{type(self).__name__} is the {self._chunker!r} chunker, not {chunker!r}")
        if "chunk_size" in params:
            if "max_tokens" in params:
                raise ValueError("give max_tokens or chunk_size, not both")
            params["max_tokens"] = params.pop("chunk_size")
        params = {k: v for k, v in params.items() if v is not None}
        params["chunker"] = chunker
        self._native = _seamcut.Chunker(json.dumps(params))
        self._spec = json.loads(self._native.spec_json())

    def __reduce__(self):
        # Pickles as its class and spec (Ray and multiprocessing ship chunkers to workers
        # this way); the model is loaded again, once, in the receiving process.
        return (_from_spec, (type(self), json.dumps(self._spec)))

    @property
    def spec(self) -> dict:
        """The full chunker spec as a dict, every default filled in (:meth:`spec_json` is the
        same as the JSON ``seamcut chunk --spec`` reads)."""
        return json.loads(json.dumps(self._spec))

    def spec_json(self) -> str:
        """The full chunker spec as JSON: what ``seamcut chunk --print-spec`` prints and
        ``seamcut chunk --spec FILE`` reads (the library writes it), so the CLI with that
        file gives this chunker's chunks."""
        return self._native.spec_json()

    def save_spec(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Write :meth:`spec_json` to ``path``, for ``seamcut chunk --spec path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._native.spec_json() + "\n")

    @property
    def name(self) -> str:
        return self._spec["chunker"]

    def __repr__(self) -> str:
        return f"seamcut.Chunker({self._native.describe()}, max_tokens={self._spec['max_tokens']})"

    def chunk(self, text: str, embeddings: Optional[str] = None, context_prefix: bool = False) -> List[Chunk]:
        """Chunk one document; with ``embeddings`` (see :meth:`chunk_batch`), each chunk's
        ``embedding`` is set."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        if embeddings is not None:
            return self.chunk_batch([text], embeddings=embeddings, context_prefix=context_prefix)[0]
        return [Chunk(*t) for t in self._native.chunk(text)]

    def chunk_batch(
        self, texts: Sequence[str], embeddings: Optional[str] = None, context_prefix: bool = False
    ) -> List[List[Chunk]]:
        """Chunk many documents together (their units are embedded in shared batches).

        ``embeddings`` sets each chunk's ``embedding`` (float32, L2-normalised): ``"late"``
        (pooled from a pass over the whole document: a vector that knows its context; any
        chunker), ``"mean"`` (the mean of the chunk's unit vectors, embedding chunkers),
        ``"reembed"`` (the chunk's text embedded on its own), ``"auto"``; ``None``: no vectors.
        ``context_prefix``: under ``"reembed"``, embed each chunk with its ``context`` in front; under
        ``"blend"``, its text half is the mean of the chunk alone and with its ``context`` in front.
        """
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"texts[{i}] must be a str, not {type(t).__name__}")
        if embeddings is None:
            return [[Chunk(*t) for t in doc] for doc in self._native.chunk_batch(texts)]
        if not isinstance(embeddings, str):
            raise TypeError(f"embeddings must be a str or None, not {type(embeddings).__name__}")
        out = []
        for tuples, vectors in self._native.chunk_batch_vectors(texts, embeddings, bool(context_prefix)):
            out.append([Chunk(*t, embedding=vectors[i]) for i, t in enumerate(tuples)])
        return out

    def __call__(self, text: Union[str, Sequence[str]]) -> Union[List[Chunk], List[List[Chunk]]]:
        """``chunker(text)`` is :meth:`chunk`; ``chunker([texts])`` is :meth:`chunk_batch`."""
        if isinstance(text, str):
            return self.chunk(text)
        return self.chunk_batch(text)

    def chunk_table(
        self,
        data: Any,
        id_column: Optional[str] = "id",
        text_column: str = "text",
        embeddings: Union[bool, str, None] = False,
        meta_columns: Iterable[str] = (),
        on_error: str = "skip",
        context_prefix: bool = False,
    ):
        """Chunk the rows of an Arrow table (or record batch, or any object with
        ``__arrow_c_stream__``) and return the chunks as a ``pyarrow.Table`` with the CLI's
        Parquet schema: ``id, doc_id, index, start, end, text, tokens, sentences, context``, the
        ``meta_columns`` (as strings), and ``embedding`` (fixed-size list of float32) when
        asked. ``start``/``end`` are UTF-8 byte offsets, as in the CLI's files. ``id`` is the
        chunk's id, the same on every run for the same chunk (from its document's id, its
        offsets and its text; the rows a ``seamcut chunk -o postgresql://...`` job writes
        carry it too), so a loader can upsert by it: ``lancedb``'s
        ``table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()``.

        ``embeddings``: ``False``; ``"mean"`` (the normalised mean of the chunk's unit
        vectors, embedding chunkers only); ``"reembed"`` (each chunk's text embedded);
        ``"late"`` (pooled from a pass over the whole document; any chunker); or
        ``True`` for ``"mean"`` with an embedding chunker and ``"reembed"`` with a baseline.
        A missing text, id or metadata column raises ``ValueError``; ``id_column=None``
        numbers the rows instead (``table:ROW``, from 1). A row whose text is null is skipped
        with a warning (``on_error="skip"``) or raises ``ValueError`` (``"raise"``); a
        document whose model pass fails is chunked by sentence packing, with a warning.
        Tables cross between Python and Rust through the Arrow C stream interface without
        copies; each text is copied once into a document, each chunk's text into the output.
        """
        import pyarrow as pa

        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if not hasattr(data, "__arrow_c_stream__"):
            raise TypeError(f"expected a pyarrow Table or RecordBatch, not {type(data).__name__}")
        if embeddings is True:
            embeddings = "auto"  # the library's choice: mean if the chunker can, else reembed
        elif embeddings is False:
            embeddings = None
        stream, stats = self._native.chunk_table(
            data, id_column, text_column, list(meta_columns), embeddings, on_error, bool(context_prefix)
        )
        stats = json.loads(stats)
        skipped = sum(stats["totals"]["skipped"].values())
        if skipped:
            warnings.warn(
                f"seamcut: skipped {_plural(skipped, 'row')}: " + "; ".join(stats["skipped_examples"]),
                stacklevel=2,
            )
        fallbacks = stats["totals"]["fallbacks"]
        if fallbacks:
            warnings.warn(
                f"seamcut: {_plural(fallbacks, 'document')} chunked by sentence packing after a model error: "
                + "; ".join(stats["fallback_examples"]),
                stacklevel=2,
            )
        return pa.table(stream)


def _from_spec(cls: type, spec: str) -> Chunker:
    return cls(**json.loads(spec))


class MaxMinChunker(Chunker):
    """Max-Min semantic chunking (Kiss, Nagy, Szilagyi 2025): ``Chunker("maxmin", ...)``."""

    _chunker = "maxmin"


class MinimaChunker(Chunker):
    """Chonkie's SemanticChunker rule (Savitzky-Golay minima): ``Chunker("minima", ...)``."""

    _chunker = "minima"


class BreakpointChunker(Chunker):
    """LangChain/LlamaIndex SemanticChunker breakpoints: ``Chunker("breakpoint", ...)``."""

    _chunker = "breakpoint"


class GlobalChunker(Chunker):
    """seamcut's global segmentation rule: ``Chunker("global", ...)``."""

    _chunker = "global"


class TokenChunker(Chunker):
    """Fixed runs of ``max_tokens`` tokens (with ``overlap``, windows into their neighbours): ``Chunker("fixed", ...)``."""

    _chunker = "fixed"


class RecursiveChunker(Chunker):
    """Recursive separators (paragraph, line, sentence, word): ``Chunker("recursive", ...)``."""

    _chunker = "recursive"


class SentenceChunker(Chunker):
    """Sentences packed up to the cap: ``Chunker("sentence", ...)``."""

    _chunker = "sentence"


class ParagraphChunker(Chunker):
    """One chunk per paragraph, long ones packed by sentences: ``Chunker("paragraph", ...)``."""

    _chunker = "paragraph"


class LumberChunker(Chunker):
    """LumberChunker (Duarte et al., EMNLP 2024): an LLM picks where each group of paragraphs
    changes topic: ``Chunker("lumber", llm={...}, theta=550)``."""

    _chunker = "lumber"


class LumberGuidedChunker(Chunker):
    """The embedding-guided LLM chunker: the similarity band proposes seams, the LLM judges
    several per request: ``Chunker("lumber-guided", llm={...})``."""

    _chunker = "lumber-guided"


def chunk_table(data: Any, chunker: Optional[Chunker] = None, **kwargs: Any):
    """:meth:`Chunker.chunk_table` with ``chunker`` (default: ``Chunker()``, Max-Min on the
    built-in model)."""
    return (chunker or Chunker()).chunk_table(data, **kwargs)


def chunk_id(doc_id: str, start_byte: int, end_byte: int, text: str) -> str:
    """The stable id of the chunk ``text`` at UTF-8 byte offsets ``start_byte:end_byte`` of
    the document ``doc_id``: the ``id`` column of :meth:`Chunker.chunk_table`, of the CLI's
    records and of the rows a database output writes (32 hex digits; the same on every run
    for the same chunk). For a :class:`Chunk`:
    ``chunk_id(doc_id, c.start_byte, c.end_byte, c.text)``."""
    for name, v in (("doc_id", doc_id), ("text", text)):
        if not isinstance(v, str):
            raise TypeError(f"{name} must be a str, not {type(v).__name__}")
    if not 0 <= start_byte <= end_byte:
        raise ValueError(f"expected 0 <= start_byte <= end_byte, got {start_byte}, {end_byte}")
    return _seamcut.chunk_id(doc_id, start_byte, end_byte, text)


def embed(
    texts: Sequence[str],
    model: str = "default",
    device: str = "auto",
    dtype: str = "f32",
    prompt_name: Optional[str] = None,
    prompt: Optional[str] = None,
    dims: Optional[int] = None,
):
    """Embed texts: a ``numpy.ndarray`` of float32, shape ``(len(texts), dim)``, one row per
    text as the model's pipeline gives it (the shipped models' rows have unit length). The
    array owns the buffer seamcut computed: no copy.

    ``prompt_name`` names one of the model's prompts (``config_sentence_transformers.json``:
    ``"query"``, ``"document"``, ...), ``prompt`` gives a prompt text instead; with neither,
    the model's default prompt, as sentence-transformers' ``encode`` does. ``dims`` keeps the
    first ``dims`` components of each vector, then normalises (``truncate_dim``)."""
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] must be a str, not {type(t).__name__}")
    return _seamcut.embed(texts, model, device, dtype, prompt_name, prompt, dims)


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for seamcut's CPU work in this process, the encoder's included
    (e.g. the CPUs of a Ray actor). Call it before any chunking or embedding: the thread pool
    is set up once, and a call after it exists raises ``ValueError``. ``0`` keeps the default
    (one thread per core)."""
    _seamcut.set_num_threads(n)
