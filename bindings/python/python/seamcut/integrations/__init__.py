"""seamcut where Python users already chunk: ``seamcut.integrations.langchain``
(``SeamcutTextSplitter``, a LangChain ``TextSplitter``) and ``seamcut.integrations.llama_index``
(``SeamcutNodeParser``, a LlamaIndex node parser). Each imports its framework only when it is
imported itself; install them with ``pip install 'seamcut[langchain]'`` or
``'seamcut[llama-index]'``. Both chunk in-process through :class:`seamcut.Chunker`.
"""
