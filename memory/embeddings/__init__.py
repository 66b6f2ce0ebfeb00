"""Embedding sources: turn texts into unit-length float32 vectors.

One module per implementation (``onnx_minilm``, ``static``, ``remote``), a shared contract in
``base``, a cache wrapper in ``cache``, the outbound URL guard in ``urlpolicy``, the list of local
models in ``catalog`` and the offline model builders in ``build``, ``vectrix`` and ``dequantize``.
Nothing here imports Django or reads settings; callers pass directories, URLs and keys in, so every
module is usable as plain Python.
"""
