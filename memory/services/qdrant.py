"""The Qdrant actions: one function each, called by ``/api/settings/qdrant/*`` and the Studio alike.

The interfaces validate their input (the API's serializers, which the Studio
reuses) and shape the result; what an action does, and what a failure
reports, is decided here. Settings writes are
:func:`memory.qdrant_conf.update_qdrant_settings`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass

from memory.conf import get_memory_settings
from memory.qdrant_conf import get_qdrant_settings
from memory.vectorstores.qdrant import QdrantUnavailable, cleanup_expired, probe, search_memories

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
    """Ask Qdrant for its collections now (reachability and API key); the answer is remembered by the
    store's health cache."""
    cfg = get_qdrant_settings()
    if not cfg.active:
        return QdrantCheck(configured=False, ok=False, latency_ms=0, error=NOT_CONFIGURED)
    result = probe(cfg)
    return QdrantCheck(configured=True, ok=result.ok, latency_ms=result.latency_ms, error=result.error)


def qdrant_search(*, query: str, top_k: int, owner_ids: Collection[uuid.UUID] | None) -> dict:
    """The memories nearest to ``query`` in Qdrant, limited to ``owner_ids`` (None = every owner):
    ``{ok, results, latencyMs?, collection?, error?}``; a failure is ``ok: false``, never raised."""
    return search_memories(query=query, top_k=top_k, owner_ids=owner_ids)


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
