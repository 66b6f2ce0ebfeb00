"""Vectors for memories: embed on write, lazily on read, and in reindex batches.

A memory's vector is missing or stale while ``needs_reindex`` is true. The
flag is cleared only for the exact content that was embedded, so an edit
racing with a reindex leaves the memory queued rather than wrongly indexed.

The whole index is stale when sqlite-vec holds vectors of another embedding
signature than the live source makes (a settings change, an ``auto`` source
that now resolves to another model, a new quantisation): searches then fall
back to FTS, every memory counts as pending, and the reindex, scheduled by
the settings write or by the first read that meets it, rebuilds the table.

Rows sealed by the encrypted backend (``memory.backends.encrypted``: their
metadata holds ``_sealed``) are never embedded here: their content is a blind
index, not text. Their vectors are the ones the caller gave
(``store_with_embedding``). When such a row is flagged (its content or key
changed, or the vector table was rebuilt), :func:`settle_sealed` drops the
vector it may still have, which no longer matches, and clears the flag; a
forced reindex does not flag them (:func:`flag_for_reindex`), so it keeps
their vectors.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
from django.db import connection, transaction
from django.db.models import Q

from memory import dialect
from memory.conf import MemorySettings, get_memory_settings
from memory.crypto import SEALED_METADATA_FIELD
from memory.embeddings.base import EmbeddingError, EmbeddingSource
from memory.embeddings.runtime import Resolution, get_source
from memory.models import Memory
from memory.services import vectorsync
from memory.signals import reindex_progress
from memory.vectorstores.base import VectorItem, VectorStore
from memory.vectorstores.registry import active_store, database_choice
from memory.visibility import owner_hex
from omniroute.db.locking import DatabaseBusy, write_deadline, writers_waiting

logger = logging.getLogger("memory.indexing")

# Memories per embed + write transaction (sources batch internally as they like).
BATCH_SIZE = 256
# How long a read that embeds pending memories waits for the write lock before leaving them to the
# background indexing (seconds).
LAZY_WRITE_DEADLINE_SECONDS = 0.05
LOG_COMPACT_AFTER = 20_000


@dataclass
class VectorContext:
    """The live embedding source and vector stores, or the reason there are none.

    ``store`` is where searches go first (Qdrant when selected, else
    sqlite-vec); ``write_store`` is the database store (sqlite-vec), which
    always receives the vectors (when loaded) so that a Qdrant outage degrades
    to sqlite-vec; the mirrors (Qdrant, when enabled) follow every write
    (``memory.services.vectorsync``).
    """

    source: EmbeddingSource | None
    store: VectorStore | None
    resolution: Resolution
    store_name: str
    reason: str | None
    write_store: VectorStore | None = None
    # Why the selected store is not searched (Qdrant down, its circuit open): searches say so.
    store_fallback: str | None = None

    @property
    def usable(self) -> bool:
        return self.source is not None and (self.store is not None or self.write_store is not None)

    def live_source(self) -> EmbeddingSource:
        """The source, for code that runs on a usable context only (callers check ``usable``)."""
        if self.source is None:
            raise EmbeddingError(self.reason or "no embedding source is available")
        return self.source

    def raw_source(self) -> EmbeddingSource:
        """The source without its query cache (stored texts bypass it)."""
        source: EmbeddingSource = getattr(self.live_source(), "inner", self.live_source())
        return source

    def search_stores(self) -> list[VectorStore]:
        """The stores a search tries, in order: ``store``, then the database store when it is
        another one (the fallback of a mirror that fails or lags)."""
        stores = [s for s in (self.store, self.write_store) if s is not None]
        return [s for i, s in enumerate(stores) if all(s.name != t.name for t in stores[:i])]


def vector_context(settings: MemorySettings | None = None) -> VectorContext:
    settings = settings or get_memory_settings()
    source, resolution = get_source(settings)
    choice = active_store(settings)
    write_store = database_choice().store
    reason = None
    if source is None:
        reason = resolution.reason
    elif choice.store is None and write_store is None:
        reason = choice.reason
    return VectorContext(
        source, choice.store, resolution, choice.name, reason, write_store, store_fallback=choice.passed_over
    )


def embed_texts(ctx: VectorContext, texts: list[str]) -> np.ndarray:
    """Embed ``texts`` for storage and make sure sqlite-vec matches the source's signature.

    Stored texts bypass the embedding cache: it exists for repeated queries,
    and a bulk reindex would only churn it.
    """
    vectors = ctx.raw_source().embed(texts)
    if ctx.write_store is not None:
        rebuilt = ctx.write_store.ensure(signature=ctx.live_source().signature, dim=int(vectors.shape[1]))
        if rebuilt:
            # Every memory lost its vector: re-embed them all in the background.
            schedule_reindex()
    return vectors


@dataclass(frozen=True)
class IndexSignature:
    """The embedding signature sqlite-vec holds against the one the live source makes.

    ``held``: what ``memory_vec`` was built for (None: never built, or no
    sqlite-vec). ``expected``: the live source's signature as the store
    records it (None: no source); its dimension is ``null`` while a remote
    source has not answered yet. ``stale``: the held vectors belong to
    another source, model, dimension or element type.
    """

    held: str | None
    expected: str | None
    stale: bool


def index_signature(ctx: VectorContext) -> IndexSignature:
    store, source = ctx.write_store, ctx.source
    held = store.signature() if store is not None else None
    if source is None:
        return IndexSignature(held, None, False)
    if store is None:
        return IndexSignature(None, source.signature, False)
    expected = store.full_signature(source.signature)
    if held is None or held == expected:
        return IndexSignature(held, expected, False)
    if source.dim is not None:
        return IndexSignature(held, expected, True)
    # A remote source learns its dimension from its first answer: any dimension
    # recorded for the same source, model and element type is its own.
    head, tail = f"{source.name}:{source.model}:", expected[len(source.signature) :]
    same = held.startswith(head) and held.endswith(tail) and held[len(head) : len(held) - len(tail)].isdigit()
    return IndexSignature(held, expected, not same)


class Embeddable(Protocol):
    """What indexing reads of a memory: a ``Memory`` or a :class:`Pending` row."""

    @property
    def seq(self) -> int: ...

    @property
    def owner_id(self) -> object: ...

    @property
    def content(self) -> str: ...


class Pending(NamedTuple):
    """What indexing needs of a memory (cheaper than a model instance in bulk)."""

    seq: int
    owner_id: object
    content: str


class IndexMismatch(Exception):
    """The vector index was built for another embedding signature (a reindex is pending)."""


# A read that meets a stale index asks for the repair at most this often per
# process and signature pair, so a busy gateway does not flood the task queue.
REPAIR_REQUEST_SECONDS = 60.0
_repair_lock = threading.Lock()
_repair_requested: dict[tuple[str, str], float] = {}


def query_vector(ctx: VectorContext, text: str, store: VectorStore | None = None) -> np.ndarray:
    """Embed a query for ``store`` (default: ``ctx.store``). Reads never rebuild the
    index: when the stored vectors come from another model, searching them would be
    meaningless, so this raises ``IndexMismatch`` (retrieval falls back to FTS) and
    schedules the reindex that rebuilds the index, in case nothing else did (an
    ``auto`` source that resolves to a newly built model, a changed environment
    default)."""
    source = ctx.live_source()
    vector = source.embed([text])[0]
    store = store or ctx.store or ctx.write_store
    if store is None:
        raise IndexMismatch("no vector store is available")
    live = store.signature()
    expected = store.full_signature(source.signature)
    if live is not None and live != expected:
        _request_repair(live, expected)
        raise IndexMismatch(f"vector index holds {live}, queries embed with {expected}")
    return vector


def _request_repair(held: str, expected: str) -> None:
    now = time.monotonic()
    with _repair_lock:
        last = _repair_requested.get((held, expected))
        if last is not None and now - last < REPAIR_REQUEST_SECONDS:
            return
        _repair_requested[(held, expected)] = now
    logger.warning("vector index holds %s, the embedding source makes %s: reindex scheduled", held, expected)
    schedule_reindex()


def forget_repair_requests() -> None:
    """Let the next read that meets a stale index ask for a repair again (tests)."""
    with _repair_lock:
        _repair_requested.clear()


def index_memories(memories: Sequence[Embeddable], ctx: VectorContext) -> int:
    """Embed and store the vectors of ``memories`` in every active index
    (:func:`memory.services.vectorsync.write`); returns how many were indexed.

    The database store is written in one transaction with the ``needs_reindex``
    flags; the mirrors after it, outside the SQLite write lock.
    Raises ``EmbeddingError`` when the source fails (nothing is marked done).
    """
    if not memories:
        return 0
    vectors = embed_texts(ctx, [m.content for m in memories])
    items = [VectorItem(m.seq, str(m.owner_id), v) for m, v in zip(memories, vectors, strict=True)]
    return vectorsync.write(
        items,
        database=ctx.write_store,
        signature=ctx.live_source().signature,
        mark=lambda: _mark_indexed(memories),
        current=lambda: _still_current(memories),
    )


def _still_current(memories: Sequence[Embeddable]) -> set[int]:
    """The memories whose row still exists and still holds the content that was embedded (read in the
    caller's write transaction, so no delete or edit can slip in before its vector is written)."""
    embedded = {m.seq: m.content for m in memories}
    rows = Memory.objects.filter(seq__in=list(embedded)).values_list("seq", "content")
    return {seq for seq, content in rows if embedded.get(seq) == content}


def delete_orphan_vectors(store: VectorStore | None) -> int:
    """Delete from sqlite-vec the vectors whose memory is gone (left by a delete that raced an
    indexing before its check in the same transaction existed); returns how many. Each removal is
    logged as a deletion, so the search matrices of every process drop it too."""
    if store is None or not store.in_database:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        if not dialect.table_exists(cursor, "memory_vec"):
            return 0
        cursor.execute(
            f"SELECT rowid FROM {dialect.vector_rowids()} WHERE rowid NOT IN (SELECT seq FROM memories)"
        )
        orphans = [int(row[0]) for row in cursor.fetchall()]
        for start in range(0, len(orphans), 500):
            part = orphans[start : start + 500]
            marks = ", ".join(["%s"] * len(part))
            cursor.execute(
                "INSERT INTO memory_vec_log (owner_id, seq, embedding) "
                f"SELECT owner_id, rowid, NULL FROM memory_vec WHERE rowid IN ({marks})",
                part,
            )
            cursor.execute(f"DELETE FROM memory_vec WHERE rowid IN ({marks})", part)
    if orphans:
        logger.warning("removed %s vectors of deleted memories", len(orphans))
    return len(orphans)


def sealed_rows() -> Q:
    """The rows the encrypted backend sealed: never embedded from their (blind) content."""
    return Q(metadata__has_key=SEALED_METADATA_FIELD)


def settle_sealed(ctx: VectorContext, seqs: Sequence[int] | None = None) -> int:
    """Clear the flag of the flagged sealed rows (of ``seqs``, or all) and drop their vectors from
    every index: the content or key the vector was given for changed, and only the caller that holds
    the clear text can give a new one. Returns how many rows were settled."""
    flagged = Memory.objects.filter(sealed_rows(), needs_reindex=True)
    if seqs is not None:
        flagged = flagged.filter(seq__in=list(seqs))
    if not flagged.exists():
        return 0  # the common case: no write lock taken
    with transaction.atomic():
        settled = list(flagged.values_list("seq", flat=True))
        if ctx.write_store is not None:
            ctx.write_store.delete(settled)
        vectorsync.after_delete(settled)
        Memory.objects.filter(seq__in=settled).update(needs_reindex=False)
    return len(settled)


def flag_for_reindex() -> int:
    """Flag every memory for re-embedding (a forced reindex), except the sealed ones: their vectors
    came from their callers and nothing here could make them again."""
    return Memory.objects.exclude(sealed_rows()).update(needs_reindex=True)


def _mark_indexed(memories: Sequence[Embeddable]) -> int:
    """Clear ``needs_reindex`` of the rows whose content is still what was embedded."""
    with connection.cursor() as cursor:
        cursor.executemany(
            "UPDATE memories SET needs_reindex = %s WHERE seq = %s AND content = %s",
            [(False, m.seq, m.content) for m in memories],
        )
        return cursor.rowcount


# Sources fast enough to embed on the write path (sub-millisecond per text).
INLINE_SOURCES = frozenset({"static"})


def inline_context() -> VectorContext | None:
    """The vector context when writes may embed inline (a local, fast source), else None."""
    ctx = vector_context()
    if not ctx.usable or ctx.write_store is None or ctx.resolution.source not in INLINE_SOURCES:
        return None
    return ctx


def index_inline(
    memories: Sequence[Pending], ctx: VectorContext, *, new_rows_above: int | None = None
) -> int:
    """Inside the caller's write transaction, store the vectors of ``memories``
    (bulk imports then need no second pass); returns how many were indexed.
    ``new_rows_above``: the memories are exactly the rows above this ``seq``,
    inserted in this transaction, so their flags are cleared in one statement
    and no old vectors need deleting. The mirrors are written after commit."""
    if not memories or ctx.write_store is None:
        return 0
    try:
        vectors = embed_texts(ctx, [m.content for m in memories])
    except EmbeddingError as exc:
        logger.warning("inline embedding of %s memories failed (%s); left to reindex", len(memories), exc)
        return 0
    items = [VectorItem(m.seq, str(m.owner_id), v) for m, v in zip(memories, vectors, strict=True)]
    vectorsync.write_in_transaction(
        items, database=ctx.write_store, signature=ctx.live_source().signature, new=new_rows_above is not None
    )
    if new_rows_above is None:
        return _mark_indexed(memories)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE memories SET needs_reindex = %s WHERE seq > %s", [False, new_rows_above])
        return cursor.rowcount


def index_by_seqs(seqs: Sequence[int]) -> int:
    """Index the given memories now (the per-write task). Logs and returns 0 when impossible."""
    ctx = vector_context()
    settle_sealed(ctx, seqs)
    if not ctx.usable:
        logger.info("vectors skipped for %s memories: %s", len(seqs), ctx.reason)
        return 0
    memories = list(
        Memory.objects.filter(seq__in=list(seqs), needs_reindex=True)
        .exclude(sealed_rows())
        .only("seq", "owner_id", "content")
    )
    try:
        return sum(
            index_memories(memories[i : i + BATCH_SIZE], ctx) for i in range(0, len(memories), BATCH_SIZE)
        )
    except EmbeddingError as exc:
        logger.warning(
            "embedding failed for %s memories (%s); they stay queued for reindex", len(memories), exc
        )
        return 0


class LazyIndexed(NamedTuple):
    """What :func:`lazy_index` did: ``indexed`` memories embedded now, ``left`` of those it found
    still without a vector, ``more`` when it stopped at its limit (others may be waiting)."""

    indexed: int = 0
    left: int = 0
    more: bool = False

    @property
    def incomplete(self) -> bool:
        return self.left > 0 or self.more


def lazy_index(owner_ids: Iterable[uuid.UUID | str] | None, ctx: VectorContext, *, limit: int) -> LazyIndexed:
    """Embed up to ``limit`` not-yet-indexed memories of ``owner_ids`` (bounded work on a read)."""
    if limit <= 0:
        return LazyIndexed()
    # Walk the partial index of pending rows (tiny when the index is up to date);
    # left to itself the planner prefers the owner index and visits every row
    # of the owner.
    # Sealed rows are never embedded (a blind index is no text); the write path settles them.
    # (PostgreSQL takes the partial index by itself and has no INDEXED BY.)
    hint = "" if dialect.is_postgres() else " INDEXED BY memory_needs_reindex"
    sql = (
        f"SELECT seq FROM memories{hint} WHERE needs_reindex "
        f"AND {dialect.json_lacks_key('metadata', SEALED_METADATA_FIELD)}"
    )
    params: list[str | int] = []
    if owner_ids is not None:
        owners = [owner_hex(o) for o in owner_ids]
        sql += f" AND owner_id IN ({', '.join(['%s'] * len(owners))})"
        params += owners
    sql += " ORDER BY created_at DESC LIMIT %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        seqs = [row[0] for row in cursor.fetchall()]
    more = len(seqs) >= limit
    if not seqs or index_signature(ctx).stale:
        # A stale index is rebuilt by the reindex, never on a read.
        return LazyIndexed(0, len(seqs), more)
    if writers_waiting():  # before any embedding
        # Writes of this process queue for the lock: a read's embedding would take a turn from them (and
        # the cores from the request that holds it). The background indexing embeds these rows anyway.
        logger.info("lazy embedding of %s memories left to the background: writers wait", len(seqs))
        return LazyIndexed(0, len(seqs), more)
    pending = list(Memory.objects.filter(seq__in=seqs).only("seq", "owner_id", "content"))
    try:
        # A read only helps the background indexing: it never waits for the write lock.
        with write_deadline(LAZY_WRITE_DEADLINE_SECONDS):
            indexed = index_memories(pending, ctx)
    except EmbeddingError as exc:
        logger.warning("lazy embedding of %s memories failed: %s", len(pending), exc)
        indexed = 0
    except DatabaseBusy:
        logger.info("lazy embedding of %s memories skipped: another write holds the lock", len(pending))
        indexed = 0
    return LazyIndexed(indexed, len(seqs) - indexed, more)


def pending_count() -> int:
    return Memory.objects.filter(needs_reindex=True).count()


def reindex_needed(ctx: VectorContext, index: IndexSignature | None = None) -> int:
    """How many memories lack a usable vector: all of them while the index is stale
    (``index``: the caller's ``index_signature(ctx)``, when it has one)."""
    index = index or index_signature(ctx)
    return Memory.objects.count() if index.stale else pending_count()


def rebuild_stale_index(ctx: VectorContext) -> bool:
    """Rebuild sqlite-vec for the live source when it holds another signature
    (every memory is then pending); returns whether it did.

    Raises ``EmbeddingError`` when a remote source, whose dimension only an
    answer tells, cannot be reached.
    """
    if ctx.write_store is None or not index_signature(ctx).stale:
        return False
    source = ctx.live_source()
    if source.dim is None:
        ctx.raw_source().embed(["dimension probe"])
    if source.dim is None:
        raise EmbeddingError("the embedding source did not report its dimension")
    return ctx.write_store.ensure(signature=source.signature, dim=int(source.dim))


def reindex_if_stale() -> bool:
    """When the index holds another signature than the live source makes (the
    settings just changed), schedule the reindex that rebuilds the table (the
    rebuild marks every memory pending); returns whether it did."""
    ctx = vector_context()
    index = index_signature(ctx)
    if not index.stale:
        return False
    logger.info(
        "embedding signature now %s, vector index holds %s: reindex scheduled", index.expected, index.held
    )
    schedule_reindex()
    return True


def reindex_batch(ctx: VectorContext, *, limit: int = 100) -> dict[str, int]:
    """One batch of the queue, oldest first: ``{processed, errors}`` (the sealed rows flagged are
    settled first and count as processed)."""
    settled = settle_sealed(ctx)
    queue = [
        Pending(*row)
        for row in Memory.objects.filter(needs_reindex=True)
        .exclude(sealed_rows())
        .order_by("created_at", "seq")
        .values_list("seq", "owner_id", "content")[:limit]
    ]
    processed, errors = settled, 0
    for start in range(0, len(queue), BATCH_SIZE):
        chunk = queue[start : start + BATCH_SIZE]
        try:
            processed += index_memories(chunk, ctx)
        except EmbeddingError as exc:
            errors += len(chunk)
            logger.warning("reindex: embedding %s memories failed: %s", len(chunk), exc)
    return {"processed": processed, "errors": errors}


def reindex_all(*, progress: Callable[[int, int], None] | None = None, batch: int = 1024) -> dict[str, Any]:
    """Drain the queue in batches, reporting ``(done, total)`` after each.

    A stale index (another embedding signature) is rebuilt first, so every
    memory is re-embedded. Stops early when a batch makes no progress (the
    source is failing), so a broken embedding endpoint does not loop forever.
    """
    ctx = vector_context()
    if not ctx.usable:
        total = reindex_needed(ctx)
        logger.warning("reindex: nothing done, %s", ctx.reason)
        _progress(progress, 0, total, finished=True)
        return {"processed": 0, "errors": 0, "pending": total, "reason": ctx.reason}
    try:
        rebuild_stale_index(ctx)
    except EmbeddingError as exc:
        total = reindex_needed(ctx)
        logger.warning("reindex: the stale vector index was not rebuilt: %s", exc)
        _progress(progress, 0, total, finished=True)
        reason = f"embedding failed: {exc.message}"
        return {"processed": 0, "errors": total, "pending": total, "reason": reason}
    total = pending_count()
    done = errors = 0
    _progress(progress, 0, total, finished=total == 0)
    while True:
        result = reindex_batch(ctx, limit=batch)
        done += result["processed"]
        errors += result["errors"]
        remaining = pending_count()
        if remaining == 0 or result["processed"] == 0:
            break
        _progress(progress, done, total, finished=False)
    orphans = delete_orphan_vectors(ctx.write_store)
    backfill = vectorsync.backfill_mirrors(retention_days=get_memory_settings().retentionDays)
    compact = getattr(ctx.write_store, "compact_log", None)
    if compact is not None and done >= LOG_COMPACT_AFTER:
        # Replaying a huge change log would cost every process more than reloading.
        compact()
    _progress(progress, done, total, finished=True)
    logger.info("reindex finished: %s processed, %s errors, %s pending", done, errors, remaining)
    return {
        "processed": done,
        "errors": errors,
        "pending": remaining,
        "reason": None,
        "orphansRemoved": orphans,
        "mirrors": backfill,
    }


def _progress(callback: Callable[[int, int], None] | None, done: int, total: int, *, finished: bool) -> None:
    if callback is not None:
        callback(done, total)
    reindex_progress.send(sender=Memory, done=done, total=total, finished=finished)


def reindex_start(*, force: bool = False) -> int:
    """Queue a full reindex in the background; ``force``, or a stale index (whose
    rebuild marks every memory), re-embeds everything. Returns the number of
    memories pending."""
    if force:
        flag_for_reindex()
    pending = reindex_needed(vector_context())
    schedule_reindex()
    return pending


def schedule_indexing(seqs: Sequence[int]) -> None:
    """After commit, embed these memories in the background (the write path)."""
    if not seqs:
        return
    # cycle: memory.tasks.indexing imports this module
    from memory.tasks.indexing import queue_indexing

    # Best effort: a queue that is down leaves the rows pending, never fails the committed write.
    queue_indexing(seqs)


def schedule_reindex() -> None:
    """After commit, drain the reindex queue in the background (bulk writes)."""
    # cycle: memory.tasks.indexing imports this module
    from memory.tasks.indexing import queue_reindex

    queue_reindex()
