"""all-MiniLM-L6-v2 run locally with onnxruntime (the "transformers" source)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from memory.embeddings.base import (
    REASON_MODEL_LOAD_FAILED,
    REASON_REQUEST_FAILED,
    EmbeddingSource,
    l2_normalize,
)
from memory.embeddings.build import (
    MODEL_FILENAME,
    MODEL_INT8_FILENAME,
    OUTPUT_NAME,
    TOKENIZER_FILENAME,
)

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _batch_pool(workers: int) -> ThreadPoolExecutor:
    """The process-wide threads that run the sub-batches of a large ``embed`` call in parallel."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="onnx-embed")
        return _pool


MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_NAME_INT8 = "all-MiniLM-L6-v2-int8"
DIM = 384


class OnnxMiniLMSource(EmbeddingSource):
    """Sentence embeddings from a directory built by ``build.build_minilm_onnx``.

    ``fast=True`` uses ``model_int8.onnx`` (mean cosine ~0.99 against float, model name
    ``all-MiniLM-L6-v2-int8``, so its vectors never mix with float ones). Texts longer than 256
    tokens are truncated. The session and tokenizer load on the first ``embed`` call.
    ``model_name`` names another 384-d model built in the same layout (bge-small-en-v1.5:
    ``memory.embeddings.vectrix``); its int8 variant is ``<model_name>-int8``.
    """

    name = "transformers"

    def __init__(
        self,
        model_dir: Path,
        *,
        fast: bool = False,
        model_name: str = MODEL_NAME,
        intra_op_num_threads: int = 1,
        batch_size: int = 32,
        parallel_batches: int | None = None,
        query_threads: int | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.fast = fast
        self.model = f"{model_name}-int8" if fast else model_name
        self.dim = DIM
        # One thread per run: the server embeds from several request threads at once, and
        # oversubscribing the cores with per-session thread pools is slower than one thread each.
        # A large call (reindex, bulk writes) instead runs its sub-batches on up to
        # ``parallel_batches`` threads (default MEMORY_EMBED_THREADS: the CPU count); the session's
        # run() is thread-safe and releases the GIL: ~1.8x the throughput on 2 cores.
        self.intra_op_num_threads = intra_op_num_threads
        self.batch_size = batch_size
        self.parallel_batches = parallel_batches
        # A call with one text (a query: the request waits for it) has no sub-batches to spread, so it
        # runs on a second session whose intra-op pool uses ``query_threads`` threads (default
        # MEMORY_EMBED_QUERY_THREADS: the CPU count): 1.8 ms instead of 3.3 for a short question on 2
        # cores, as fast as a bare onnxruntime session with its default threads.
        self.query_threads = query_threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._query: Any = None
        self._tokenizer: Any = None

    def _load(self) -> tuple[Any, Any]:
        if self._session is not None:
            return self._session, self._tokenizer
        with self._lock:
            if self._session is None:
                model_file = MODEL_INT8_FILENAME if self.fast else MODEL_FILENAME
                try:
                    # heavy: onnxruntime and tokenizers load with the model, on first use (a process that
                    # never embeds does not import them); a failure becomes an EmbeddingError below
                    import onnxruntime as ort
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(self.model_dir / TOKENIZER_FILENAME))
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = self.intra_op_num_threads
                    options.inter_op_num_threads = 1
                    session = ort.InferenceSession(
                        str(self.model_dir / model_file), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:
                    # No path in the message (embedding errors never show paths or stack traces); the
                    # file name and the builder's name are what an operator needs.
                    raise self.error(
                        f"Could not load {model_file} or {TOKENIZER_FILENAME} "
                        f"({type(exc).__name__}); run the build_embedding_models command",
                        reason=REASON_MODEL_LOAD_FAILED,
                    ) from exc
                self._tokenizer = tokenizer
                self._session = session
        return self._session, self._tokenizer

    def _embed_one(self, text: str, tokenizer: Any) -> np.ndarray:
        """One text (a query: the request waits for it), on the query session, with nothing between the
        tokenizer and the session that a bare onnxruntime call would not do (bench embeddings compares)."""
        session = self._query if self._query is not None else self._query_session()
        try:
            encoding = tokenizer.encode(text)
        except Exception as exc:
            raise self.error(
                f"Tokenisation failed ({type(exc).__name__})", reason=REASON_REQUEST_FAILED
            ) from exc
        feed = {
            "input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
        }
        try:
            # The graph pools and L2-normalises (build._build_bert_graph), into a fresh float32 array:
            # its output is returned as is, with no second normalisation or copy.
            return session.run([OUTPUT_NAME], feed)[0]
        except Exception as exc:
            raise self.error(
                f"ONNX inference failed ({type(exc).__name__})", reason=REASON_REQUEST_FAILED
            ) from exc

    def _query_session(self) -> Any:
        """The session for one-text calls: the main one unless more threads are asked for."""
        session, _ = self._load()
        threads = self._query_threads()
        if threads <= self.intra_op_num_threads:
            return session
        if self._query is None:
            with self._lock:
                if self._query is None:
                    # heavy: onnxruntime loads on first use (see _load)
                    import onnxruntime as ort

                    options = ort.SessionOptions()
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = 1
                    model_file = MODEL_INT8_FILENAME if self.fast else MODEL_FILENAME
                    try:
                        self._query = ort.InferenceSession(
                            str(self.model_dir / model_file), options, providers=["CPUExecutionProvider"]
                        )
                    except Exception as exc:
                        raise self.error(
                            f"Could not load {model_file} ({type(exc).__name__}); run the build_embedding_models command",
                            reason=REASON_MODEL_LOAD_FAILED,
                        ) from exc
        return self._query

    def _query_threads(self) -> int:
        if self.query_threads is not None:
            return self.query_threads
        return settings.MEMORY_EMBED_QUERY_THREADS

    def embed(self, texts: list[str]) -> np.ndarray:
        """See ``EmbeddingSource.embed``. Raises ``EmbeddingError`` (``model_load_failed`` or ``request_failed``)."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        session, tokenizer = self._load()
        if len(texts) == 1:
            return self._embed_one(texts[0], tokenizer)
        try:
            encodings = tokenizer.encode_batch(list(texts))
        except Exception as exc:
            raise self.error(
                f"Tokenisation failed ({type(exc).__name__})",
                reason=REASON_REQUEST_FAILED,
            ) from exc

        # Batch texts of similar length together: padding to the longest of a batch then wastes
        # little compute. encode_batch pads to the longest of the whole call, so the padding is
        # cut per batch from the attention mask.
        lengths = np.array([sum(e.attention_mask) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), DIM), dtype=np.float32)

        def run(idx: np.ndarray) -> None:
            width = int(lengths[idx].max())
            feed = {
                "input_ids": np.array([encodings[i].ids[:width] for i in idx], dtype=np.int64),
                "attention_mask": np.array(
                    [encodings[i].attention_mask[:width] for i in idx], dtype=np.int64
                ),
                "token_type_ids": np.array([encodings[i].type_ids[:width] for i in idx], dtype=np.int64),
            }
            try:
                out[idx] = session.run([OUTPUT_NAME], feed)[0]
            except Exception as exc:
                raise self.error(
                    f"ONNX inference failed ({type(exc).__name__})",
                    reason=REASON_REQUEST_FAILED,
                ) from exc

        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        workers = self._workers()
        if len(batches) > 1 and workers > 1:
            for future in [_batch_pool(workers).submit(run, idx) for idx in batches]:
                future.result()  # re-raises the first failure
        else:
            for idx in batches:
                run(idx)
        # The graph already normalises; this only guards against drift in a hand-edited model.
        return l2_normalize(out)

    def _workers(self) -> int:
        if self.parallel_batches is not None:
            return self.parallel_batches
        return settings.MEMORY_EMBED_THREADS
