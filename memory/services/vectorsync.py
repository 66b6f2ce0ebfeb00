"""After a write or a delete, every active vector index follows: the one place that fans them out.

Two kinds of store take part (``VectorStore.in_database``):

* the database store (sqlite-vec, when loaded) is written inside the write transaction, with the
  ``needs_reindex`` flags; its vectors go with their rows whatever deletes them (the
  ``memory_vec_ad`` trigger), and its searches read session and expiry from the rows;
* the mirrors (Qdrant, when on: ``memory.vectorstores.registry.mirror_stores``) are written after
  the SQLite transaction, never inside it (a network call must not hold the write lock), and best
  effort: a failure is logged, never raised, and the mirror is left out for a short while
  (``VectorStore.note_failure``), so an outage costs one timeout, not one per write. A delete that
  a mirror missed schedules a sweep of the mirrors (``VectorStore.sweep``); until it runs, the
  point left behind is harmless: retrieval loads memories from SQLite and checks them again.

Every path that removes memories comes here: one memory (``memory_delete``), many
(``retention.delete_rows``: bulk deletes, the MCP clear, summarisation, the health probe, the
admin's deletes) and an API key's cascade (``memory.receivers``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence

import numpy as np
from django.db import transaction

from memory.conf import get_memory_settings
from memory.models import Memory
from memory.vectorstores import registry
from memory.vectorstores.base import VectorItem, VectorStore

logger = logging.getLogger("memory.vectorsync")

# A delete a mirror missed is swept up this long after (time for the mirror to come back), and a
# process asks for at most one sweep per this long.
SWEEP_DELAY_SECONDS = 300
_sweep_lock = threading.Lock()
_sweep_requested_at: float | None = None


# -- writes


def write(
    items: Sequence[VectorItem],
    *,
    database: VectorStore | None,
    signature: str,
    mark: Callable[[], int],
    current: Callable[[], set[int]] | None = None,
) -> int:
    """Store ``items`` in every active index; returns ``mark()``, the memories now indexed.

    ``current`` (inside the transaction) names the memories that still hold the text that was
    embedded: the others were deleted or edited while it was embedded, and their vectors are dropped
    (a deleted memory's vector would outlive it: its row's delete trigger has run already). The
    database store and ``mark`` (which clears the ``needs_reindex`` flags) run in one transaction with
    that check; the mirrors are written right after, outside it (call this outside a write transaction
    of your own). Without a database store, ``mark`` runs once every mirror has them.
    """
    done = 0
    if database is not None:
        with transaction.atomic():
            items = _current_items(items, current)
            database.upsert(items)
            done = mark()
    else:
        items = _current_items(items, current)
    mirrored = mirror_upsert_live(items, signature=signature)
    if database is None and items and mirrored == len(items):
        done = mark()
    return done


def _current_items(items: Sequence[VectorItem], current: Callable[[], set[int]] | None) -> list[VectorItem]:
    if current is None:
        return list(items)
    keep = current()
    return [item for item in items if int(item.seq) in keep]


def write_in_transaction(
    items: Sequence[VectorItem], *, database: VectorStore, signature: str, new: bool = False
) -> None:
    """Inside the caller's write transaction: the database store now (``new``: none of these rows
    has a vector yet), the mirrors after commit."""
    database.upsert(items, new=new)
    kept = list(items)
    transaction.on_commit(lambda: mirror_upsert_live(kept, signature=signature))


def mirror_upsert_live(items: Sequence[VectorItem], *, signature: str) -> int:
    """:func:`mirror_upsert`, then drop again the points of memories deleted meanwhile: a delete that
    committed after the caller's check may have sent its :func:`mirror_delete` before these points
    arrived. Returns what :func:`mirror_upsert` returned."""
    written = mirror_upsert(items, signature=signature)
    if written:
        seqs = [int(item.seq) for item in items]
        alive = set(Memory.objects.filter(seq__in=seqs).values_list("seq", flat=True))
        gone = [seq for seq in seqs if seq not in alive]
        if gone:
            mirror_delete(gone)
    return written


def after_update(seqs: Sequence[int]) -> None:
    """These memories changed without a new content (session, expiry, type, key): after commit,
    the mirrors refresh their copy of those fields. The database store reads them from the rows."""
    seqs = [int(s) for s in seqs]
    if seqs:
        transaction.on_commit(lambda: mirror_refresh(seqs))


# -- deletes


def after_delete(seqs: Sequence[int]) -> None:
    """These memories are being deleted in the current transaction: after commit, the mirrors drop
    their vectors (the database store's go with the rows, by its trigger)."""
    seqs = [int(s) for s in seqs]
    if seqs:
        transaction.on_commit(lambda: mirror_delete(seqs))


def before_owner_delete(owner_id: uuid.UUID) -> None:
    """An API key is being deleted, and its memories with it (a cascade, in SQL): note their ids
    while they are still there, for :func:`after_delete`. Nothing to do when no mirror is on."""
    if not registry.mirrors_enabled():
        return
    after_delete(list(Memory.objects.filter(owner_id=owner_id).values_list("seq", flat=True)))


# -- the mirrors, now (never raise)


def mirror_upsert(items: Sequence[VectorItem], *, signature: str) -> int:
    """Write ``items`` (vectors of embedding ``signature``) to every mirror now; returns how many
    every mirror took (0 when there is none, or one failed or was skipped)."""
    if not items:
        return 0
    stores = registry.mirror_stores()
    if not stores:
        return 0
    seqs = [int(i.seq) for i in items]
    dim = int(np.asarray(items[0].vector).shape[0])
    written = len(items)
    for store in stores:
        try:
            if store.ensure(signature=signature, dim=dim):
                logger.info("%s: a new, empty index for %s; a reindex backfills it", store.name, signature)
            store.upsert(items)
        except Exception as exc:
            _failed(store, "upsert", seqs, exc)
            written = 0
    return written


def mirror_delete(seqs: Sequence[int]) -> int:
    """Remove these memories' vectors from every mirror now (every embedding signature's); returns
    how many ids every mirror took. A mirror that failed, or was skipped after a recent failure,
    gets a sweep scheduled (:func:`schedule_sweep`)."""
    seqs = [int(s) for s in seqs]
    if not seqs:
        return 0
    stores = registry.mirror_stores()
    missed = not stores and registry.mirrors_enabled()
    for store in stores:
        try:
            store.delete(seqs)
        except Exception as exc:
            _failed(store, "delete", seqs, exc)
            missed = True
    if missed:
        schedule_sweep()
        return 0
    return len(seqs) if stores else 0


def mirror_refresh(seqs: Sequence[int]) -> int:
    """Refresh every mirror's copy of these memories' filter fields now; returns how many memories
    every mirror refreshed (0 when there is none, or one failed)."""
    seqs = [int(s) for s in seqs]
    if not seqs:
        return 0
    stores = registry.mirror_stores()
    refreshed = len(seqs) if stores else 0
    for store in stores:
        try:
            refreshed = min(refreshed, store.refresh(seqs))
        except Exception as exc:
            _failed(store, "payload refresh", seqs, exc)
            refreshed = 0
    return refreshed


def _failed(store: VectorStore, action: str, seqs: list[int], exc: BaseException) -> None:
    logger.warning(
        "%s %s of %s memories (seqs %s%s) failed: %s",
        store.name,
        action,
        len(seqs),
        seqs[:5],
        "…" if len(seqs) > 5 else "",
        store.note_failure(exc),
    )


# -- maintenance


def backfill_mirrors(*, retention_days: int | None) -> dict[str, dict]:
    """Write to each mirror the visible memories it lacks (after a reindex, a new collection);
    ``{store name: {upserted, errors, reason}}`` or ``{"error": …}`` for a mirror that failed."""
    results: dict[str, dict] = {}
    for store in registry.mirror_stores():
        try:
            results[store.name] = store.backfill(retention_days=retention_days) or {}
        except Exception as exc:
            results[store.name] = {"error": store.note_failure(exc)}
            logger.warning("%s backfill skipped: %s", store.name, results[store.name]["error"])
    return results


def sweep_mirrors(*, retention_days: int | None = None) -> dict[str, int]:
    """Remove from each mirror the vectors of memories that are gone, expired or older than
    ``retention_days`` (default: the memory settings' ``retentionDays``); ``{store name: removed}``.
    Raises the first mirror's error (the task retries)."""
    days = retention_days or get_memory_settings().retentionDays
    return {store.name: store.sweep(retention_days=days) for store in registry.mirror_stores(paused_too=True)}


def schedule_sweep() -> None:
    """Ask for :func:`sweep_mirrors` in ``SWEEP_DELAY_SECONDS`` (at most once per that long)."""
    global _sweep_requested_at
    now = time.monotonic()
    with _sweep_lock:
        if _sweep_requested_at is not None and now - _sweep_requested_at < SWEEP_DELAY_SECONDS:
            return
        _sweep_requested_at = now
    # cycle: memory.tasks.indexing imports this module
    from memory.tasks.indexing import queue_sweep

    if not queue_sweep(SWEEP_DELAY_SECONDS):
        return  # the queue is down: the first hand-off that works queues the sweep again
    logger.info("a mirror missed a delete: sweep of the mirrors scheduled in %s s", SWEEP_DELAY_SECONDS)


def forget_sweep_requests() -> None:
    """Let the next missed delete schedule a sweep again (tests)."""
    global _sweep_requested_at
    with _sweep_lock:
        _sweep_requested_at = None
