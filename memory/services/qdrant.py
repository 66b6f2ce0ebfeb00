"""The Qdrant actions: one function each, called by ``/api/settings/qdrant/*`` and the Studio alike.

The interfaces validate their input (the API's serializers, which the Studio
reuses) and shape the result; what an action does, and what a failure
reports, is decided here. Settings writes are
:func:`memory.qdrant_conf.update_qdrant_settings`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass

from memory.conf import get_memory_settings
from memory.embeddings import runtime
from memory.embeddings.base import EmbeddingError
from memory.qdrant_conf import get_qdrant_settings
from memory.shapes import qdrant_result_json
from memory.vectorstores.qdrant import QdrantUnavailable, cleanup_expired, probe, qdrant_health, usable_store
from memory.vectorstores.qdrant.client import elapsed_ms, sanitise
from memory.visibility import Visibility

logger = logging.getLogger("memory.qdrant")

NOT_CONFIGURED = "not_configured"


@dataclass(frozen=True)
class QdrantCheck:
    """A connection test. ``configured`` is false when Qdrant is disabled or has no host: it was not asked,
    and ``error`` is :data:`NOT_CONFIGURED`."""

    configured: bool
    ok: bool
    latency_ms: float
    error: str | None = None

    def as_dict(self) -> dict:
        """The API's shape: ``{ok, latencyMs, error?}``."""
        body: dict = {"ok": self.ok, "latencyMs": self.latency_ms}
        if self.error:
            body["error"] = self.error
        return body


def qdrant_check() -> QdrantCheck:
    """Ask Qdrant for its collections now (reachability and API key), even while its circuit is open
    (an operator testing a fix: a success closes it); the answer is remembered by the store's health
    cache. ``error`` names the status or the kind of failure, never what the server sent back."""
    cfg = get_qdrant_settings()
    if not cfg.active:
        return QdrantCheck(configured=False, ok=False, latency_ms=0, error=NOT_CONFIGURED)
    result = probe(cfg, force=True)
    return QdrantCheck(configured=True, ok=result.ok, latency_ms=result.latency_ms, error=result.error)


def qdrant_status() -> dict:
    """``{enabled, healthy, latencyMs, error, circuit?}`` for the engine status (asks Qdrant when
    enabled and its circuit is closed)."""
    return qdrant_health()


def qdrant_search(*, query: str, top_k: int, owner_ids: Collection[uuid.UUID] | None) -> dict:
    """The memories nearest to ``query`` in Qdrant, limited to ``owner_ids`` (None = every owner):
    ``{ok, results, latencyMs?, collection?, error?}``; a failure is ``ok: false``, never raised.

    The visible memories only (owners, expiry), filtered inside Qdrant and again when the
    memories are loaded."""
    cfg = get_qdrant_settings()
    if not cfg.active:
        return {"ok": False, "results": [], "error": NOT_CONFIGURED}
    source, resolution = runtime.get_source(get_memory_settings())
    if source is None:
        return {"ok": False, "results": [], "error": f"no embedding source: {resolution.reason}"}
    started = time.perf_counter()
    visibility = Visibility(owner_ids=owner_ids)
    try:
        store = usable_store()
    except QdrantUnavailable as exc:
        return {"ok": False, "results": [], "error": str(exc)}
    try:
        vector = source.embed([query])[0]
        store.ensure(signature=source.signature, dim=int(vector.shape[0]))
        hits = store.search(vector=vector, k=top_k, visibility=visibility)
    except EmbeddingError as exc:
        return {"ok": False, "results": [], "error": f"embedding failed: {exc.message}"}
    except Exception as exc:
        error = sanitise(exc, cfg)
        logger.warning("qdrant search at %s failed: %s", cfg.target, error)
        return {"ok": False, "results": [], "error": error}
    memories = {m.seq: m for m in visibility.queryset().filter(seq__in=[h.seq for h in hits])}
    results = [qdrant_result_json(m, hit.score) for hit in hits if (m := memories.get(hit.seq)) is not None]
    return {
        "ok": True,
        "latencyMs": elapsed_ms(started),
        "collection": store.collection,
        "results": results,
    }


@dataclass(frozen=True)
class QdrantCleanup:
    """What a cleanup removed; ``ok`` is false (with the ``error``) when it could not run."""

    ok: bool
    deleted_count: int
    retention_days: int
    error: str | None = None

    def as_dict(self) -> dict:
        """The API's shape: ``{ok, deletedCount, retentionDays, error?}``."""
        body: dict = {"ok": self.ok, "deletedCount": self.deleted_count, "retentionDays": self.retention_days}
        if self.error:
            body["error"] = self.error
        return body


def qdrant_cleanup(*, retention_days: int | None = None) -> QdrantCleanup:
    """Delete the Qdrant points of memories that are gone, expired, or older than ``retention_days``
    (default: the memory settings' ``retentionDays``). SQLite is not touched. Never raises: Qdrant
    being off or failing is reported in the result (the failure itself is logged, not returned, since
    a client error may quote the server's address)."""
    days = retention_days or get_memory_settings().retentionDays
    try:
        deleted = cleanup_expired(days)
    except QdrantUnavailable as exc:
        return QdrantCleanup(ok=False, deleted_count=0, retention_days=days, error=str(exc))
    except Exception as exc:
        logger.warning("qdrant cleanup failed: %s", exc)
        return QdrantCleanup(ok=False, deleted_count=0, retention_days=days, error="qdrant cleanup failed")
    return QdrantCleanup(ok=True, deleted_count=deleted, retention_days=days)
