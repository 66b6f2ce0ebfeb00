"""Embedding sources: turn texts into unit-length float32 vectors.

One module per implementation (``onnx_minilm``, ``static``, ``remote``), a shared contract in
``base``, a cache wrapper in ``cache`` (the outbound URL guard is ``memory.urlpolicy``), the list of
local models in ``catalog`` and the offline model builders in ``build``, ``vectrix`` and ``dequantize``.
Only ``runtime`` (which builds the live source from the settings) and ``onnx_minilm`` (whose thread
counts default to ``MEMORY_EMBED_THREADS`` / ``MEMORY_EMBED_QUERY_THREADS`` when the caller gives none)
read Django's settings; otherwise callers pass directories, URLs and keys in, so each source is usable
as plain Python.
"""
