"""Qdrant maintenance: removing the points no read may see any more, and backfilling a collection.

Both work on Qdrant only: nothing in SQLite is touched. The tasks (``memory.tasks.qdrant``), the
Studio and API actions (``memory.services.qdrant``) and the reindex (through ``VectorStore.backfill``
and ``VectorStore.sweep``, called by ``memory.services.vectorsync``) run them.
"""

from __future__ import annotations

import logging

from memory.conf import get_memory_settings
from memory.embeddings import runtime
from memory.embeddings.base import EmbeddingError
from memory.models import Memory
from memory.vectorstores.base import VectorItem
from memory.vectorstores.qdrant.store import QdrantStore, configured_store, usable_store
from memory.visibility import Visibility

logger = logging.getLogger("memory.vectorstores.qdrant")

DELETE_BATCH = 256
MAX_RETENTION_DAYS = 3650


def sweep_store(store: QdrantStore, *, retention_days: int) -> int:
    """Delete the points of memories that are gone, expired, or older than ``retention_days``
    (clamped to 1..3650), in every collection of the store's base; returns how many were deleted.
    Raises qdrant-client errors when Qdrant fails."""
    # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
    from qdrant_client import models

    days = max(1, min(MAX_RETENTION_DAYS, int(retention_days)))
    # What no read may see any more: the negation of "not expired and within the retention window".
    stale = models.Filter(must_not=[Visibility.within(owner_ids=None, retention_days=days).qdrant_filter()])
    deleted = 0
    for name in store.collections():
        with store.conn.guard() as client:
            matched = int(client.count(name, count_filter=stale, exact=True).count)
            if matched:
                client.delete(name, points_selector=models.FilterSelector(filter=stale), wait=True)
        deleted += matched
        orphans: list[models.ExtendedPointId] = []
        for page in store.point_ids(name):
            alive = set(Memory.objects.filter(seq__in=page).values_list("seq", flat=True))
            orphans.extend(seq for seq in page if seq not in alive)
        for start in range(0, len(orphans), DELETE_BATCH):
            with store.conn.guard() as client:
                client.delete(
                    name,
                    points_selector=models.PointIdsList(points=orphans[start : start + DELETE_BATCH]),
                    wait=True,
                )
        deleted += len(orphans)
        if matched or orphans:
            logger.info(
                "qdrant cleanup %s: %s stale and %s orphan points deleted", name, matched, len(orphans)
            )
    return deleted


def backfill_store(store: QdrantStore, *, retention_days: int | None, batch_size: int = 128) -> dict:
    """Write every visible memory that has no point in the current signature's collection.

    Vectors come from the live memory embedding source (its cache helps). Memories that are
    expired, or older than ``retention_days`` when given (what :func:`sweep_store` would remove
    again), are skipped. Returns ``{upserted, errors, reason}``; embedding failures are counted,
    not raised.
    """
    source, resolution = runtime.get_source(get_memory_settings())
    if source is None:
        return {"upserted": 0, "errors": 0, "reason": resolution.reason}
    qs = Visibility.within(owner_ids=None, retention_days=retention_days).queryset()
    upserted = errors = 0
    present: set[int] | None = None
    last = 0
    while True:
        page = list(qs.filter(seq__gt=last).order_by("seq").only("seq", "owner_id", "content")[:batch_size])
        if not page:
            break
        last = page[-1].seq
        if present is not None:
            page = [m for m in page if m.seq not in present]
        if not page:
            continue
        try:
            vectors = source.embed([m.content for m in page])
        except EmbeddingError as exc:
            errors += len(page)
            logger.warning("qdrant backfill: embedding %s memories failed: %s", len(page), exc)
            continue
        store.ensure(signature=source.signature, dim=int(vectors.shape[1]))
        if present is None:
            present = {seq for ids in store.point_ids(store._require_collection()) for seq in ids}
            todo = [(m, v) for m, v in zip(page, vectors, strict=True) if m.seq not in present]
        else:
            todo = list(zip(page, vectors, strict=True))
        store.upsert([VectorItem(m.seq, str(m.owner_id), v) for m, v in todo])
        upserted += len(todo)
    logger.info("qdrant backfill into %s: %s upserted, %s errors", store.collection, upserted, errors)
    return {"upserted": upserted, "errors": errors, "reason": None}


def cleanup_expired(retention_days: int) -> int:
    """:func:`sweep_store` on the store of the current settings. Raises ``QdrantUnavailable`` when
    Qdrant is disabled or not configured, and qdrant-client errors when it fails."""
    return sweep_store(configured_store(), retention_days=retention_days)


def backfill(*, batch_size: int = 128, retention_days: int | None = None) -> dict:
    """:func:`backfill_store` on the store of the current settings; raises ``QdrantUnavailable``
    when Qdrant is not usable (disabled, not configured, or not answering)."""
    return backfill_store(usable_store(), retention_days=retention_days, batch_size=batch_size)
