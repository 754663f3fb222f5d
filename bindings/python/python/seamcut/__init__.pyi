from typing import Any, Iterable, List, Optional, Sequence, Union, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__version__: str
CHUNKERS: tuple[str, ...]

class Chunk:
    text: str
    start_index: int
    end_index: int
    token_count: int
    start_byte: int
    end_byte: int
    sentences: int
    def __init__(
        self,
        text: str,
        start_index: int,
        end_index: int,
        token_count: int,
        start_byte: int,
        end_byte: int,
        sentences: int,
    ) -> None: ...
    def __len__(self) -> int: ...

class Chunker:
    def __init__(
        self,
        chunker: str = "maxmin",
        *,
        model: str = ...,
        max_tokens: int = ...,
        chunk_size: int = ...,
        min_tokens: Union[int, str] = ...,
        overlap: int = ...,
        sizer: str = ...,
        device: str = ...,
        dtype: str = ...,
        units: str = ...,
        on_model_error: str = ...,
        **rule_params: Any,
    ) -> None: ...
    @property
    def spec(self) -> dict: ...
    @property
    def name(self) -> str: ...
    def chunk(self, text: str) -> List[Chunk]: ...
    def chunk_batch(self, texts: Sequence[str]) -> List[List[Chunk]]: ...
    @overload
    def __call__(self, text: str) -> List[Chunk]: ...
    @overload
    def __call__(self, text: Sequence[str]) -> List[List[Chunk]]: ...
    def chunk_table(
        self,
        data: Any,
        id_column: str = "id",
        text_column: str = "text",
        embeddings: Union[bool, str, None] = False,
        meta_columns: Iterable[str] = (),
        on_error: str = "skip",
    ) -> pa.Table: ...

class MaxMinChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

class MinimaChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

class BreakpointChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

class GlobalChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

class TokenChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

class RecursiveChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

class SentenceChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

class ParagraphChunker(Chunker):
    def __init__(self, **params: Any) -> None: ...

def chunk_table(data: Any, chunker: Optional[Chunker] = None, **kwargs: Any) -> pa.Table: ...
def embed(
    texts: Sequence[str], model: str = "default", device: str = "auto", dtype: str = "f32"
) -> npt.NDArray[np.float32]: ...
def set_num_threads(n: int) -> None: ...
