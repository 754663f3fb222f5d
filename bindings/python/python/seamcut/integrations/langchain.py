"""seamcut as a LangChain text splitter::

    from seamcut.integrations.langchain import SeamcutTextSplitter
    splitter = SeamcutTextSplitter("maxmin", model="all-MiniLM-L6-v2", add_start_index=True)
    docs = splitter.create_documents([text], metadatas=[{"source": "book.txt"}])

``SeamcutTextSplitter`` is a ``langchain_text_splitters.TextSplitter``: ``split_text``,
``create_documents``, ``split_documents`` and ``transform_documents`` work as with any
splitter. The chunks are seamcut's (the same as ``seamcut.Chunker`` and ``seamcut chunk``
give), and ``metadata["start_index"]`` is each chunk's exact character offset, taken from
seamcut's offsets rather than searched for in the text.
"""

from __future__ import annotations

import copy
import sys
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

try:
    from langchain_core.documents import Document
    from langchain_text_splitters import TextSplitter
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        "seamcut.integrations.langchain needs langchain-text-splitters: "
        "pip install 'seamcut[langchain]'"
    ) from e

from .. import Chunk, Chunker, chunk_id

__all__ = ["SeamcutTextSplitter"]


class SeamcutTextSplitter(TextSplitter):
    """A LangChain ``TextSplitter`` that cuts with a :class:`seamcut.Chunker`.

    ``chunker`` is a chunker name (``"maxmin"``, ``"recursive"``, ...; see
    ``seamcut.CHUNKERS``) with its parameters as keywords, exactly as ``seamcut.Chunker``
    takes them, or a ready ``seamcut.Chunker``. ``chunk_size`` is LangChain's name for
    seamcut's ``max_tokens``: a cap in tokens counted by the chunker's sizer (the model's
    tokenizer by default), not characters; ``chunk_overlap`` is seamcut's ``overlap``: each
    ``Document`` is then its chunk's window, the chunk plus up to ``chunk_overlap`` tokens of
    each neighbour (so up to ``chunk_size + 2 * chunk_overlap`` tokens; the chunks under the
    windows still tile the text), with any chunker.

    ``add_start_index=True`` adds each chunk's character offset in its document as
    ``metadata["start_index"]``. With ``strip_whitespace`` (LangChain's default) each chunk's
    text loses the whitespace around it, and ``start_index`` is that of its first character
    kept, so ``text[start_index:start_index + len(chunk)] == chunk`` always holds.
    """

    def __init__(
        self,
        chunker: Union[str, Chunker, None] = None,
        *,
        chunk_size: Optional[int] = None,
        chunk_overlap: int = 0,
        add_start_index: bool = False,
        strip_whitespace: bool = True,
        **params: Any,
    ) -> None:
        if isinstance(chunker, Chunker):
            if chunk_size is not None or chunk_overlap or params:
                raise ValueError("give a seamcut.Chunker or a chunker's parameters, not both")
            self._chunker = chunker
        else:
            if chunk_size is not None:
                params["max_tokens"] = chunk_size
            if chunk_overlap:
                params["overlap"] = chunk_overlap
            self._chunker = Chunker(chunker, **params)
        spec = self._chunker.spec
        super().__init__(
            chunk_size=spec["max_tokens"] or sys.maxsize,  # 0: no cap
            chunk_overlap=spec["overlap"],
            add_start_index=add_start_index,
            strip_whitespace=strip_whitespace,
        )

    @property
    def chunker(self) -> Chunker:
        """The seamcut chunker that cuts."""
        return self._chunker

    def _pieces(self, chunks: Sequence[Chunk]) -> List[Tuple[Chunk, str, int]]:
        """Each chunk with its text and character start, stripped if asked."""
        out = []
        for c in chunks:
            text, start = c.text, c.start_index
            if c.window_text is not None:
                text, start = c.window_text, c.window_start
            if self._strip_whitespace:
                kept = text.lstrip()
                start += len(text) - len(kept)
                text = kept.rstrip()
            if text:
                out.append((c, text, start))
        return out

    def split_text(self, text: str) -> List[str]:
        """The chunks' texts."""
        return [t for _, t, _ in self._pieces(self._chunker.chunk(text))]

    def create_documents(
        self, texts: Iterable[str], metadatas: Optional[List[dict]] = None
    ) -> List[Document]:
        """One ``Document`` per chunk, each with a copy of its text's metadata (and
        ``start_index`` when asked). The texts are chunked together (their units embedded in
        shared batches)."""
        return self._documents(list(texts), metadatas, None)

    def split_documents(self, documents: Iterable[Document]) -> List[Document]:
        """:meth:`create_documents` of the documents' texts and metadata. A document with an
        ``id`` gives each of its chunks a stable ``id``: seamcut's chunk id (as
        ``seamcut.chunk_id``, from the document's id, the chunk's offsets and its text), the
        same on every run, so that a vector store's ``add_documents`` upserts on a rerun
        rather than adding the chunks again."""
        documents = list(documents)
        return self._documents(
            [d.page_content for d in documents],
            [d.metadata for d in documents],
            [getattr(d, "id", None) for d in documents],
        )

    def _documents(
        self, texts: List[str], metadatas: Optional[List[dict]], ids: Optional[List[Optional[str]]]
    ) -> List[Document]:
        metas = metadatas if metadatas is not None else [{}] * len(texts)
        if len(metas) != len(texts):
            raise ValueError(f"{len(metas)} metadatas for {len(texts)} texts")
        doc_ids = ids if ids is not None else [None] * len(texts)
        documents = []
        for chunks, meta, doc_id in zip(self._chunker.chunk_batch(texts), metas, doc_ids):
            for c, text, start in self._pieces(chunks):
                m = copy.deepcopy(meta)
                if self._add_start_index:
                    m["start_index"] = start
                cid = None if doc_id is None else chunk_id(str(doc_id), c.start_byte, c.end_byte, c.text)
                documents.append(Document(page_content=text, metadata=m, id=cid))
        return documents
