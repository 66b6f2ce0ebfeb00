"""Embedding throughput per local source (texts/s)."""

from __future__ import annotations

import os
import time

from bench.corpus import memories
from bench.stats import percentile


def _rate(source, texts, batch: int) -> float:
    source.embed(texts[:batch])  # warm-up (model load)
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        source.embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def _bare_session(model_dir):
    """The floor for one text: a bare onnxruntime session on the same model file, its default options and
    threads, fed by the same tokenizer."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from memory.embeddings.onnx_minilm import MODEL_FILENAME, OUTPUT_NAME, TOKENIZER_FILENAME

    tokenizer = Tokenizer.from_file(str(model_dir / TOKENIZER_FILENAME))
    session = ort.InferenceSession(str(model_dir / MODEL_FILENAME), providers=["CPUExecutionProvider"])

    def embed(text: str):
        e = tokenizer.encode(text)
        feed = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        return session.run([OUTPUT_NAME], feed)[0]

    return embed


def _single_vs_bare_ms(source, model_dir, texts, *, rounds: int = 3, block: int = 10) -> tuple[float, float]:
    """Median ms per text of ``source.embed([text])`` and of the bare session, measured in alternating
    blocks of ``block`` texts (who goes first alternates), so that the load of a shared machine and its
    drift weigh on both alike. Not call by call: after a run, onnxruntime's intra-op threads spin for a
    while, and on a small machine the other session's spinning threads would take a core from the next
    call (2-4x slower, for both). The first call of each block, which meets that spin, is not counted."""
    bare = _bare_session(model_dir)
    calls = {"ours": lambda text: source.embed([text]), "bare": bare}
    for call in calls.values():  # warm-up: sessions, arenas, thread pools
        for text in texts[:20]:
            call(text)
    samples: dict[str, list[float]] = {"ours": [], "bare": []}
    blocks = [texts[i : i + block] for i in range(0, len(texts), block)]
    for _ in range(rounds):
        for index, chunk in enumerate(blocks):
            for name in ("ours", "bare") if index % 2 == 0 else ("bare", "ours"):
                call = calls[name]
                call(chunk[0])
                for text in chunk[1:]:
                    started = time.perf_counter()
                    call(text)
                    samples[name].append((time.perf_counter() - started) * 1000)
    return percentile(samples["ours"], 50), percentile(samples["bare"], 50)


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
        questions = [f"Which editor do I use for project {i}?" for i in range(200)]
        ours_ms, bare_ms = _single_vs_bare_ms(onnx, runtime.minilm_dir(), questions)
        results["onnx_single_ms"] = round(ours_ms, 3)
        results["bare_onnxruntime_single_ms"] = round(bare_ms, 3)
        results["onnx_single_speed_vs_bare"] = round(bare_ms / ours_ms, 3)
        print(
            f"ONNX all-MiniLM-L6-v2: batched {results['onnx_batched_per_s']} texts/s "
            f"(sub-batches on MEMORY_EMBED_THREADS={threads} threads; target ≥ 300), "
            f"{results['onnx_batched_one_thread_per_s']} on one thread; "
            f"one at a time {results['onnx_single_per_s']} texts/s"
        )
        print(
            f"one short question: p50 {results['onnx_single_ms']} ms against a bare onnxruntime session "
            f"{results['bare_onnxruntime_single_ms']} ms: "
            f"{results['onnx_single_speed_vs_bare']:.2f}x its speed (target ≥ 1; interleaved, "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
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
