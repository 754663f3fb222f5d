import os
from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence, Union, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__version__: str
CHUNKERS: tuple[str, ...]
LLM_CHUNKERS: tuple[str, ...]

@dataclass(frozen=True)
class Chunk:
    text: str
    start_index: int
    end_index: int
    token_count: int
    start_byte: int
    end_byte: int
    sentences: int
    context: str
    window_start: Optional[int]
    window_end: Optional[int]
    window_text: Optional[str]
    embedding: Any
    def __init__(
        self,
        text: str,
        start_index: int,
        end_index: int,
        token_count: int,
        start_byte: int,
        end_byte: int,
        sentences: int,
        context: str = ...,
        window_start: Optional[int] = ...,
        window_end: Optional[int] = ...,
        window_text: Optional[str] = ...,
        embedding: Any = ...,
    ) -> None: ...
    def __len__(self) -> int: ...
    def __str__(self) -> str: ...

class Chunker:
    def __init__(
        self,
        chunker: Optional[str] = None,
        *,
        model: Optional[str] = ...,
        max_tokens: Optional[int] = ...,
        chunk_size: Optional[int] = ...,
        min_tokens: Union[int, str, None] = ...,
        overlap: Optional[int] = ...,
        sizer: Optional[str] = ...,
        device: Optional[str] = ...,
        dtype: Optional[str] = ...,
        units: Optional[str] = ...,
        on_model_error: Optional[str] = ...,
        **rule_params: Any,
    ) -> None: ...
    @property
    def spec(self) -> dict: ...
    def spec_json(self) -> str: ...
    def save_spec(self, path: Union[str, os.PathLike[str]]) -> None: ...
    @property
    def name(self) -> str: ...
    def chunk(self, text: str, embeddings: Optional[str] = ...) -> List[Chunk]: ...
    def chunk_batch(self, texts: Sequence[str], embeddings: Optional[str] = ...) -> List[List[Chunk]]: ...
    @overload
    def __call__(self, text: str) -> List[Chunk]: ...
    @overload
    def __call__(self, text: Sequence[str]) -> List[List[Chunk]]: ...
    def chunk_table(
        self,
        data: Any,
        id_column: Optional[str] = "id",
        text_column: str = "text",
        embeddings: Union[bool, str, None] = False,
        meta_columns: Iterable[str] = (),
        on_error: str = "skip",
    ) -> pa.Table: ...

class MaxMinChunker(Chunker): ...

class MinimaChunker(Chunker): ...

class BreakpointChunker(Chunker): ...

class GlobalChunker(Chunker): ...

class TokenChunker(Chunker): ...

class RecursiveChunker(Chunker): ...

class SentenceChunker(Chunker): ...

class ParagraphChunker(Chunker): ...

class LumberChunker(Chunker): ...

class LumberGuidedChunker(Chunker): ...

def chunk_id(doc_id: str, start_byte: int, end_byte: int, text: str) -> str: ...
def chunk_table(data: Any, chunker: Optional[Chunker] = None, **kwargs: Any) -> pa.Table: ...
def embed(
    texts: Sequence[str], model: str = "default", device: str = "auto", dtype: str = "f32"
) -> npt.NDArray[np.float32]: ...
def set_num_threads(n: int) -> None: ...
