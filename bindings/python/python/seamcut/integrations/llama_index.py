"""seamcut as a LlamaIndex node parser::

    from llama_index.core import Document
    from seamcut.integrations.llama_index import SeamcutNodeParser
    parser = SeamcutNodeParser("maxmin", model="all-MiniLM-L6-v2")
    nodes = parser.get_nodes_from_documents([Document(text=text)])

Each node is one seamcut chunk (the same chunks as ``seamcut.Chunker`` and ``seamcut chunk``
give) with ``start_char_idx``/``end_char_idx`` its exact character offsets in its document
(``document.text[node.start_char_idx:node.end_char_idx] == node.text``), taken from seamcut's
offsets rather than searched for in the text. Metadata and previous/next/source relations
are LlamaIndex's usual ones.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Union

try:
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.node_parser.node_utils import build_nodes_from_splits
    from llama_index.core.schema import BaseNode, Document, MetadataMode
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        "seamcut.integrations.llama_index needs llama-index-core: pip install 'seamcut[llama-index]'"
    ) from e

from .. import Chunker

__all__ = ["SeamcutNodeParser"]


class SeamcutNodeParser(NodeParser):
    """A LlamaIndex ``NodeParser`` that cuts with a :class:`seamcut.Chunker`.

    ``chunker`` is a chunker name with its parameters as keywords, exactly as
    ``seamcut.Chunker`` takes them, or a ready ``seamcut.Chunker``; the node parser's own
    settings (``include_metadata``, ``include_prev_next_rel``, ``id_func``,
    ``callback_manager``) are keywords too. A node's text is its chunk's text as seamcut
    cuts it, whitespace after it included, so that offsets are exact and the nodes of a
    document cover it. With ``overlap=N`` a node is its chunk's window instead (the chunk plus
    up to N tokens of each neighbour), so consecutive nodes share text.
    """

    chunker_spec: Dict[str, Any] = Field(
        default_factory=dict, description="The seamcut chunker spec (seamcut chunk --spec reads it)."
    )
    _chunker: Any = PrivateAttr()

    def __init__(self, chunker: Union[str, Chunker, None] = None, **kwargs: Any) -> None:
        own = {k: kwargs.pop(k) for k in list(kwargs) if k in NodeParser.model_fields}
        if isinstance(chunker, Chunker):
            if kwargs:
                raise ValueError("give a seamcut.Chunker or a chunker's parameters, not both")
            c = chunker
        else:
            c = Chunker(chunker, **kwargs)
        super().__init__(chunker_spec=c.spec, **own)
        self._chunker = c

    @classmethod
    def class_name(cls) -> str:
        return "SeamcutNodeParser"

    @property
    def chunker(self) -> Chunker:
        """The seamcut chunker that cuts."""
        return self._chunker

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        nodes = list(nodes)
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        out: List[BaseNode] = []
        for node, chunks in zip(nodes, self._chunker.chunk_batch(texts)):
            # With an overlap, a node is its chunk's window (as LlamaIndex's own splitters'
            # overlapping nodes are); else the chunk.
            windowed = [c.window_text is not None for c in chunks]
            splits = [c.window_text if w else c.text for c, w in zip(chunks, windowed)]
            made = build_nodes_from_splits(splits, node, id_func=self.id_func)
            for n, c, w in zip(made, chunks, windowed):
                n.start_char_idx = c.window_start if w else c.start_index
                n.end_char_idx = c.window_end if w else c.end_index
            out.extend(made)
        return out

    def _postprocess_parsed_nodes(
        self, nodes: List[BaseNode], parent_doc_map: Dict[str, Document]
    ) -> List[BaseNode]:
        # LlamaIndex finds each node's offsets by searching its text in the document, which
        # a chunk repeated earlier in the document fools: seamcut's own offsets are kept.
        exact = [(getattr(n, "start_char_idx", None), getattr(n, "end_char_idx", None)) for n in nodes]
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for n, (start, end) in zip(nodes, exact):
            if start is not None:
                n.start_char_idx, n.end_char_idx = start, end
        return nodes
