"""Embedding throughput per local source (texts/s)."""

from __future__ import annotations

import time

from bench.corpus import memories


def _rate(source, texts, batch: int) -> float:
    source.embed(texts[:batch])  # warm-up (model load)
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        source.embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def run() -> dict:
    from memory.embeddings import runtime
    from memory.embeddings.onnx_minilm import OnnxMiniLMSource
    from memory.embeddings.static import StaticSource

    results = {}
    texts = memories(2000, seed=3)
    if runtime.minilm_built():
        from django.conf import settings

        threads = settings.MEMORY_EMBED_THREADS
        onnx = OnnxMiniLMSource(runtime.minilm_dir())  # as the product builds it
        results["onnx_batched_per_s"] = round(_rate(onnx, texts[:1000], 64))
        results["onnx_batched_one_thread_per_s"] = round(
            _rate(OnnxMiniLMSource(runtime.minilm_dir(), parallel_batches=1), texts[:1000], 64)
        )
        results["onnx_single_per_s"] = round(_rate(onnx, texts[:200], 1))
        print(
            f"ONNX all-MiniLM-L6-v2: batched {results['onnx_batched_per_s']} texts/s "
            f"(sub-batches on MEMORY_EMBED_THREADS={threads} threads; target ≥ 300), "
            f"{results['onnx_batched_one_thread_per_s']} on one thread; "
            f"one at a time {results['onnx_single_per_s']} texts/s"
        )
        if (runtime.minilm_dir() / "model_int8.onnx").exists():
            fast = OnnxMiniLMSource(runtime.minilm_dir(), fast=True)
            results["onnx_int8_batched_per_s"] = round(_rate(fast, texts[:1000], 64))
            print(f"ONNX int8 (fast variant): batched {results['onnx_int8_batched_per_s']} texts/s")
    else:
        print("ONNX model not built: run manage.py build_embedding_models")
    if runtime.static_built():
        static = StaticSource(runtime.static_path())
        many = texts * 10
        results["static_batched_per_s"] = round(_rate(static, many, 1000))
        results["static_single_per_s"] = round(_rate(static, texts[:1000], 1))
        print(
            f"static (distilled, 256-d): batched {results['static_batched_per_s']:,} texts/s (target ≥ 20,000), "
            f"one at a time {results['static_single_per_s']:,} texts/s"
        )
    return results
