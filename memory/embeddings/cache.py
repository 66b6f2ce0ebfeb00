"""An in-process LRU + TTL cache of embeddings, and a source wrapper that consults it."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from memory.embeddings.base import EmbeddingSource


def cache_key(source: str | None, model: str | None, dim: int | None, text: str) -> str:
    """``"<source>:<model>:<dim>:<sha256(text)>"``, with ``unknown``/``0`` for a missing model/dim.

    The text is hashed so keys stay small and the cache never holds raw memory text as keys.
    """
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{source}:{model or 'unknown'}:{dim or 0}:{digest}"


class EmbeddingCache:
    """A thread-safe LRU cache with a time-to-live.

    * ``get`` of a live entry refreshes its recency (true LRU; the original's was FIFO).
    * An entry older than ``ttl_ms`` (by ``clock``, monotonic seconds) is dropped on read and
      counts as a miss. ``ttl_ms`` of 0 or ``None`` means entries never expire.
    * ``put`` beyond ``max_entries`` evicts the least recently used entry; ``max_entries`` of 0
      disables caching (``put`` stores nothing).
    * Stored vectors are read-only copies, so no caller can alter another's result.
    """

    def __init__(
        self,
        *,
        max_entries: int = 1000,
        ttl_ms: int | None = 300_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must be >= 0")
        self.max_entries = max_entries
        self.ttl_ms = ttl_ms or None
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def _expired(self, stored_at: float, now: float) -> bool:
        return self.ttl_ms is not None and (now - stored_at) * 1000.0 > self.ttl_ms

    def get(self, key: str) -> np.ndarray | None:
        """The cached vector for ``key`` (read-only), or ``None``; counts a hit or a miss."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and self._expired(entry[0], self._clock()):
                del self._entries[key]
                entry = None
            if entry is None:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
            return entry[1]

    def put(self, key: str, vector: np.ndarray) -> None:
        """Store ``vector`` under ``key`` (a read-only copy), evicting least recently used entries."""
        if self.max_entries == 0:
            return
        stored = np.array(vector, dtype=np.float32, copy=True)
        stored.setflags(write=False)
        with self._lock:
            self._entries[key] = (self._clock(), stored)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry and reset the hit/miss counters."""
        with self._lock:
            self._entries.clear()
            self._hits = 0
            self._misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def stats(self) -> dict[str, float | int]:
        """``{"hits", "misses", "hitRate", "size"}``; ``hitRate`` is hits / (hits + misses), 0 before any get.

        ``size`` may include expired entries not read since they expired.
        """
        with self._lock:
            total = self._hits + self._misses
            return {
                "hits": self._hits,
                "misses": self._misses,
                "hitRate": self._hits / total if total else 0,
                "size": len(self._entries),
            }


class CachedSource(EmbeddingSource):
    """Wrap ``inner`` so that only texts missing from ``cache`` reach it.

    ``name``, ``model`` and ``dim`` are the inner source's, so signatures and cache keys match
    uncached use. A batch is split into hits and misses; the misses (each distinct text once) go
    to ``inner.embed`` in one call, keeping its batching. Errors of the inner source propagate
    unchanged (``EmbeddingError``), and nothing is cached for a failed call.
    """

    def __init__(self, inner: EmbeddingSource, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def model(self) -> str:  # type: ignore[override]
        return self.inner.model

    @property
    def dim(self) -> int | None:  # type: ignore[override]
        return self.inner.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """See ``EmbeddingSource.embed``."""
        texts = list(texts)
        found: list[np.ndarray | None] = [
            self.cache.get(cache_key(self.name, self.model, self.dim, text)) for text in texts
        ]
        missing = list(
            dict.fromkeys(text for text, vector in zip(texts, found, strict=True) if vector is None)
        )
        fresh: dict[str, np.ndarray] = {}
        if missing:
            vectors = self.inner.embed(missing)
            # Keys after the call: a remote source learns its dimension from its first response.
            for text, vector in zip(missing, vectors, strict=True):
                fresh[text] = vector
                self.cache.put(cache_key(self.name, self.model, self.dim, text), vector)
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        rows = [
            vector if vector is not None else fresh[text] for text, vector in zip(texts, found, strict=True)
        ]
        return np.stack(rows).astype(np.float32, copy=False)
