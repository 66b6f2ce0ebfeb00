"""The contract every embedding source follows, and the one error type they raise."""

from __future__ import annotations

import abc

import numpy as np

# Failure reasons, the original's ``EmbeddingError.reason`` values, plus ``blocked_url``
# for a request the outbound URL policy refused before anything was sent.
REASON_NO_KEY = "no_key"
REASON_MODEL_LOAD_FAILED = "model_load_failed"
REASON_REQUEST_FAILED = "request_failed"
REASON_RATE_LIMITED = "rate_limited"
REASON_TIMEOUT = "timeout"
REASON_BLOCKED_URL = "blocked_url"
REASON_UNKNOWN = "unknown"


class EmbeddingError(Exception):
    """An embedding could not be produced.

    ``reason`` is one of the ``REASON_*`` constants, so callers can branch without parsing text.
    The message is safe to show to an operator: it never contains an API key, a stack trace or
    an absolute filesystem path.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        model: str | None = None,
        reason: str = REASON_UNKNOWN,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.model = model
        self.reason = reason

    def __repr__(self) -> str:
        return (
            f"EmbeddingError(reason={self.reason!r}, source={self.source!r}, "
            f"model={self.model!r}, message={self.message!r})"
        )


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` (n, d) as float32 with every non-zero row scaled to unit length.

    All-zero rows stay zero instead of becoming NaN: a text with no content has no direction.
    """
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    # Dividing by 1 leaves zero rows at zero; the tiny threshold avoids blowing up denormals.
    norms[norms < 1e-12] = 1.0
    return out / norms


class EmbeddingSource(abc.ABC):
    """Base class of every embedding source.

    Attributes:
        name: the source family, one of ``"transformers"``, ``"static"`` or ``"remote"``.
        model: the model identifier, stable across processes (part of the signature and of cache keys).
        dim: the vector length, or ``None`` while unknown (a remote model before its first response).

    Sources are safe to share between threads, and load models or open connections lazily, on the
    first ``embed`` call, never in ``__init__``.
    """

    name: str
    model: str
    dim: int | None = None

    @abc.abstractmethod
    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in order.

        Returns:
            A float32 array of shape ``(len(texts), dim)``. Each row has unit L2 norm, except that a
            text with no embeddable content (the static source on an empty text) gives an all-zero
            row; rows are never NaN. An empty ``texts`` gives shape ``(0, dim)`` (``(0, 0)`` while
            ``dim`` is unknown). After a successful call ``dim`` is known.

        Raises:
            EmbeddingError: on any failure (model missing or unloadable, request failed, timed out,
                malformed response). Nothing else escapes.
        """
        raise NotImplementedError

    def error(self, message: str, *, reason: str = REASON_UNKNOWN) -> EmbeddingError:
        """An ``EmbeddingError`` attributed to this source (``message`` must be safe to show)."""
        return EmbeddingError(message, source=self.name, model=self.model, reason=reason)

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text; returns a float32 vector of shape ``(dim,)``. Raises ``EmbeddingError``."""
        return self.embed([text])[0]

    @property
    def signature(self) -> str:
        """``"<name>:<model>:<dim>"``; vectors with different signatures must never be compared.

        An unknown dimension is written ``null``, as the original does (``"null:null:null"`` for no source).
        """
        dim = "null" if self.dim is None else str(self.dim)
        return f"{self.name}:{self.model}:{dim}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.signature}>"
