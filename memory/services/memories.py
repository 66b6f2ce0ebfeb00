"""Writes to the memory store: create (upsert), update, delete, bulk.

Services assume validated input (serializers and forms validate at the edge)
and raise :mod:`memory.exceptions` for domain failures. FTS5 follows through
the triggers of migration 0002 and the vector table through its delete
trigger, inside the same transaction as the row; the other vector indexes
follow through :mod:`memory.services.vectorsync`.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Field
from django.utils import timezone

from memory.dialect import is_postgres
from memory.exceptions import Conflict
from memory.models import ApiKey, AuditAction, Memory
from memory.services import audit, cognitive, vectorsync
from memory.services.indexing import (
    Pending,
    index_inline,
    inline_context,
    schedule_indexing,
    schedule_reindex,
)
from memory.services.turns import link_turns, link_turns_above
from memory.signals import memory_changed
from omniroute.db.locking import writers_waiting

logger = logging.getLogger("memory.services")

UPDATABLE_FIELDS = ("type", "key", "content", "metadata", "expires_at", "importance")
# Where a memory was written from, recorded in its metadata under SOURCE_FIELD at creation: extraction
# records ``user_message`` / ``llm_response`` (memory.extraction.rules.FACT_SOURCES); the other
# surfaces pass one of these to ``MemoryInput.from_fields``.
SOURCE_FIELD = "source"
WRITE_SOURCES = ("api", "mcp", "import", "studio")
# The updatable fields whose public (API) name is not the model's.
_MODEL_NAMES = {"expiresAt": "expires_at"}


def content_problem(text: str) -> str | None:
    """Why ``text`` cannot be a memory's content, or None: blank, or more than
    ``MEMORY_MAX_CONTENT_BYTES`` UTF-8 bytes. The one rule, applied at every edge
    (the API's ``ContentField``, which the Studio's forms run; the MCP add tool)."""
    if not text.strip():
        return "Must not be blank."
    limit = settings.MEMORY_MAX_CONTENT_BYTES
    if len(text.encode("utf-8")) > limit:
        return f"Must be at most {limit} bytes (UTF-8)."
    return None


@dataclass(frozen=True)
class MemoryInput:
    """One memory to create or upsert (already validated)."""

    owner: ApiKey
    content: str
    key: str | None = None
    type: str = "factual"
    session_id: str = ""
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    importance: float | None = None
    # When the memory was written or learned (an import of dated history); None: now.
    created_at: datetime | None = None

    @classmethod
    def from_fields(
        cls, fields: Mapping[str, Any], *, owner: ApiKey, source: str | None = None
    ) -> MemoryInput:
        """The one mapping from a memory's validated outside fields, by their public names
        (``content``, ``key``, ``type``, ``sessionId``, ``metadata``, ``expiresAt``, ``importance``),
        to the domain's input. A field that is absent, null or blank takes the default; other keys
        (``apiKeyId``: the caller resolves the ``owner``) are ignored.

        ``source`` is the surface that writes (one of :data:`WRITE_SOURCES`), recorded as
        ``metadata["source"]`` as extraction records ``user_message`` or ``llm_response``, so a list
        can say where a memory came from. A source the caller's metadata already names is kept (an
        export imported again keeps the source it was learned from)."""
        metadata = dict(fields.get("metadata") or {})
        if source is not None:
            metadata.setdefault(SOURCE_FIELD, source)
        return cls(
            owner=owner,
            content=fields["content"],
            key=fields.get("key") or None,
            type=fields.get("type") or "factual",
            session_id=fields.get("sessionId") or "",
            metadata=metadata,
            expires_at=fields.get("expiresAt"),
            importance=fields.get("importance"),
        )


def changes_from_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The validated outside fields of an update, by their public names, as the keyword arguments of
    :func:`memory_update` (``expiresAt`` becomes ``expires_at``)."""
    return {_MODEL_NAMES.get(name, name): value for name, value in fields.items()}


def notify_change(action: str, memories: list[Memory]) -> None:
    """Send ``memory_changed`` after commit (never for a rolled-back write)."""
    payload = [(m.owner_id, m.uuid) for m in memories]

    def send() -> None:
        for owner_id, memory_uuid in payload:
            try:
                memory_changed.send(sender=Memory, action=action, owner_id=owner_id, memory_id=memory_uuid)
            except Exception:
                logger.exception("memory_changed receiver failed (%s %s)", action, memory_uuid)

    transaction.on_commit(send)


def _after_write(memories: list[Memory]) -> None:
    """Queue the vectors of memories whose content is new or changed; have the indexes
    refresh what they keep of the others (session, expiry, type, key: the original left a Qdrant point with the old values after an edit)."""
    schedule_indexing([m.seq for m in memories if m.needs_reindex])
    vectorsync.after_update([m.seq for m in memories if not m.needs_reindex])


def notify_bulk_change(owners: Iterable[uuid.UUID]) -> None:
    """After commit, one ``memory_changed`` per owner (action "bulk") instead of one per row."""

    def send() -> None:
        for owner_id in owners:
            try:
                memory_changed.send(sender=Memory, action="bulk", owner_id=owner_id, memory_id=None)
            except Exception:
                logger.exception("memory_changed receiver failed (bulk, owner %s)", owner_id)

    transaction.on_commit(send)


def _reading(item: MemoryInput) -> cognitive.Reading:
    return cognitive.read_memory(
        item.content, type=item.type, key=item.key or None, source=cognitive.source_of(item.metadata)
    )


def _apply_upsert(
    existing: Memory, item: MemoryInput, now: datetime, reading: cognitive.Reading | None = None
) -> cognitive.Reading | None:
    """Overlay ``item`` on ``existing`` with the original's upsert rules:
    content, session, type and expiry replaced; metadata merged shallowly;
    id, created_at and access counters kept. Returns the new content's analysis (applied), or None
    when the content did not change. ``reading``: ``item``'s analysis when the caller made it already
    (outside its write transaction)."""
    content_changed = existing.content != item.content
    existing.content = item.content
    existing.session_id = item.session_id
    existing.type = item.type
    existing.expires_at = item.expires_at
    existing.metadata = {**(existing.metadata or {}), **(item.metadata or {})}
    if item.importance is not None:
        existing.importance = item.importance
    existing.updated_at = now
    if not content_changed:
        return None
    existing.needs_reindex = True
    if reading is None:
        reading = _reading(item)
    cognitive.apply_reading(existing, reading, importance_given=item.importance is not None)
    return reading


def _new_memory(item: MemoryInput, now: datetime, reading: cognitive.Reading) -> Memory:
    stamp = item.created_at or now
    return Memory(
        owner=item.owner,
        content=item.content,
        key=item.key or None,
        type=item.type,
        session_id=item.session_id or "",
        metadata=dict(item.metadata or {}),
        expires_at=item.expires_at,
        importance=reading.importance if item.importance is None else item.importance,
        category=reading.category,
        entities=reading.entities,
        created_at=stamp,
        updated_at=stamp,
        needs_reindex=True,
    )


def _upsert(
    existing: Memory, item: MemoryInput, now: datetime, reading: cognitive.Reading
) -> tuple[Memory, bool]:
    applied = _apply_upsert(existing, item, now, reading)
    existing.save()
    if applied is not None:
        cognitive.reconcile([(existing, applied)], edited=True)
    _after_write([existing])
    notify_change("updated", [existing])
    return existing, False


def memory_create(item: MemoryInput) -> tuple[Memory, bool]:
    """Create a memory, or upsert it when ``(owner, key)`` exists.

    Returns ``(memory, created)``. The partial unique constraint on
    ``(owner, key)`` is what guarantees one row per key: if a concurrent
    writer inserts the same key first, the insert fails inside a savepoint
    and the existing row is updated instead.

    The content is analysed (importance unless ``item`` gives one, category, entities) and checked
    against the owner's current memories in the same transaction (:mod:`memory.services.cognitive`):
    an older value it supersedes stops being current, a conflict it cannot settle is recorded open.
    The analysis is pure and made before the transaction, so the write lock is not held for it.
    """
    reading = _reading(item)
    with transaction.atomic():
        return _create(item, reading)


def _create(item: MemoryInput, reading: cognitive.Reading) -> tuple[Memory, bool]:
    now = timezone.now()
    key = item.key or None
    if key is not None:
        existing = Memory.objects.filter(owner=item.owner, key=key).first()
        if existing is not None:
            return _upsert(existing, item, now, reading)
    memory = _new_memory(item, now, reading)
    try:
        with transaction.atomic():
            memory.save(force_insert=True)
    except IntegrityError:
        if key is None:
            raise
        return _upsert(Memory.objects.get(owner=item.owner, key=key), item, now, reading)
    cognitive.reconcile([(memory, reading)])
    if link_turns([memory.seq]):
        memory.context, memory.context_seq = (
            Memory.objects.filter(seq=memory.seq).values_list("context", "context_seq").get()
        )
    _after_write([memory])
    notify_change("created", [memory])
    return memory, True


@transaction.atomic
def memory_update(memory: Memory, **changes: Any) -> Memory:
    """Apply ``changes`` (a subset of ``UPDATABLE_FIELDS``; metadata is replaced).

    ``needs_reindex`` is set only when the content or key really changed.
    A key already used by another memory of the owner raises ``Conflict``.
    """

    unknown = set(changes) - set(UPDATABLE_FIELDS)
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    if "key" in changes:
        changes["key"] = changes["key"] or None
    reindex = any(name in changes and changes[name] != getattr(memory, name) for name in ("content", "key"))
    for name, value in changes.items():
        setattr(memory, name, value)
    memory.updated_at = timezone.now()
    reading = None
    if reindex:
        memory.needs_reindex = True
        # A new content (or key) states new slots: analysed and checked again, as on create.
        reading = cognitive.read_memory(
            memory.content, type=memory.type, key=memory.key, source=cognitive.source_of(memory.metadata)
        )
        cognitive.apply_reading(memory, reading, importance_given="importance" in changes)
    try:
        with transaction.atomic():
            memory.save()
    except IntegrityError:
        raise Conflict(
            f"another memory of this API key already uses key {memory.key!r}", field="key"
        ) from None
    if reading is not None:
        cognitive.reconcile([(memory, reading)], edited=True)
    _after_write([memory])
    notify_change("updated", [memory])
    return memory


@transaction.atomic
def memory_delete(memory: Memory, *, actor: audit.Actor = audit.SYSTEM) -> None:
    """Delete the row; its FTS entry and sqlite-vec vector go with it in this
    transaction, the mirrors' vectors after commit (best effort; a sweep catches misses).
    ``actor`` (who asked) is written to the audit log in the same transaction."""
    notify_change("deleted", [memory])
    vectorsync.after_delete([memory.seq])
    deleted, _ = Memory.objects.filter(seq=memory.seq).delete()
    audit.record(
        actor=actor,
        action=AuditAction.MEMORY_DELETE,
        owner_id=memory.owner_id,
        count=deleted,
        details={"id": str(memory.uuid), "key": memory.key, "type": memory.type},
    )


# Where an item of a batch lands: ``(owner pk, key)`` for keyed items, ``("#", index)`` for the others.
Slot = tuple[uuid.UUID, str] | tuple[str, int]


def merge_batch(items: list[MemoryInput]) -> tuple[list[Slot], dict[Slot, MemoryInput]]:
    """Fold items sharing ``(owner, key)`` into one (later items win, metadata merged)."""
    slots: list[Slot] = []
    merged: dict[Slot, MemoryInput] = {}
    for index, item in enumerate(items):
        key = item.key or None
        slot: Slot
        if key is None:
            slot = ("#", index)
        else:
            slot = (item.owner.pk, key)
            previous = merged.get(slot)
            if previous is not None:
                item = MemoryInput(
                    **{
                        **item.__dict__,
                        "metadata": {**(previous.metadata or {}), **(item.metadata or {})},
                        "importance": item.importance if item.importance is not None else previous.importance,
                    }
                )
        merged[slot] = item
        slots.append(slot)
    return slots, merged


def _insert_rows(rows: list[tuple[uuid.UUID, MemoryInput, cognitive.Reading]], now: datetime) -> int:
    """INSERT new memories with one ``executemany``, without model instances;
    returns the highest ``seq`` before them (the new rows are those above it).

    ``bulk_create`` spent most of a 10k batch building instances and preparing
    each value through the field machinery; here constants (timestamps, owner
    ids) are adapted once per batch. The FTS trigger still indexes every row.
    """
    if not rows:
        return 0
    native_uuid = connection.features.has_native_uuid_field
    as_db_uuid = (lambda u: u) if native_uuid else (lambda u: u.hex)

    def field(name: str) -> Field:
        concrete = Memory._meta.get_field(name)
        assert isinstance(concrete, Field)
        return concrete

    stamp = field("created_at").get_db_prep_save(now, connection)
    columns = [
        "uuid",
        "owner_id",
        "session_id",
        "type",
        "key",
        "content",
        "metadata",
        "created_at",
        "updated_at",
        "expires_at",
        "needs_reindex",
        "access_count",
        "last_accessed_at",
        "importance",
        "category",
        "entities",
    ]
    params = []
    for memory_uuid, item, reading in rows:
        stamped = (
            field("created_at").get_db_prep_save(item.created_at, connection) if item.created_at else stamp
        )
        params.append(
            (
                as_db_uuid(memory_uuid),
                as_db_uuid(item.owner.pk),
                item.session_id or "",
                item.type,
                item.key or None,
                item.content,
                json.dumps(item.metadata or {}),
                stamped,
                stamped,
                field("expires_at").get_db_prep_save(item.expires_at, connection)
                if item.expires_at
                else None,
                True,
                0,
                None,
                reading.importance if item.importance is None else item.importance,
                reading.category,
                json.dumps(reading.entities),
            )
        )
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(Memory._meta.db_table)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))})"
    )
    with fts_deferred() as (cursor, floor):
        cursor.executemany(sql, params)
    return floor


@contextmanager
def fts_deferred() -> Iterator[tuple[CursorWrapper, int]]:
    """A cursor whose inserts into ``memories`` are indexed in FTS5 in one
    statement when the block ends, instead of by the trigger row by row.

    Must run inside a write transaction: the write lock guarantees that the
    rows above the previous highest ``seq`` are this block's.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("fts_deferred() needs a transaction")
    with connection.cursor() as cursor:
        if is_postgres():
            # PostgreSQL has no database-wide write lock: this one (reads go on) makes the rows above
            # the floor this block's, in insert order, until commit. Its index trigger works by
            # statement already, so there is no gate to close.
            cursor.execute("LOCK TABLE memories IN EXCLUSIVE MODE")
        cursor.execute("SELECT coalesce(max(seq), 0) FROM memories")
        floor = cursor.fetchone()[0]
        # Our SQLite backend (omniroute.db) has the gate; another database indexes by trigger.
        gate = getattr(connection, "fts_auto", None)
        if gate is not None:
            setattr(connection, "fts_auto", False)  # noqa: B010 - not every backend has it
        try:
            yield cursor, floor
            # While the gate is closed the update trigger does not index these rows either: they are
            # indexed below, with their context.
            link_turns_above(cursor, floor)
        finally:
            if gate is not None:
                setattr(connection, "fts_auto", True)  # noqa: B010 - not every backend has it
        if gate is not None:
            cursor.execute(
                "INSERT INTO memory_fts(rowid, content, key, context, owner_id) "
                "SELECT seq, content, key, context, owner_id FROM memories WHERE seq > %s",
                [floor],
            )


# Merged items per transaction of a bulk import: the write lock is held for one chunk at a time (tens of
# milliseconds), so single writes wait for at most one chunk, not for a 10,000-item import.
BULK_CHUNK_ITEMS = 500
# The chunk while other writers of this process wait for the lock: each of them waits for one chunk at most,
# so a smaller one while they are there keeps their wait short (the import goes on at full size alone).
BULK_CHUNK_ITEMS_CONTENDED = 100


def memory_bulk_create(items: list[MemoryInput], *, chunk_size: int = BULK_CHUNK_ITEMS) -> dict:
    """Create or upsert many memories, committed in chunks of ``chunk_size`` (of at most
    ``BULK_CHUNK_ITEMS_CONTENDED`` while other writers wait for SQLite's lock).

    Same semantics as :func:`memory_create` applied in input order (items sharing ``(owner, key)`` are
    folded into one first); returns ``{"created": n, "updated": m, "ids": [uuid in input order]}``.
    Each chunk is one transaction in a constant number of queries (one lookup of existing keys, one
    insert, one update), so other writers get the lock between chunks. A chunk is all or nothing:
    when one fails (the database stayed locked past its deadline, say), the chunks before it stay
    committed, it and the ones after are not written, and the error is raised. Called inside a
    transaction, the chunks are savepoints of it and all of it commits or rolls back together.
    """
    now = timezone.now()
    slots, merged = merge_batch(items)
    ordered = list(merged.items())
    result: dict[Slot, uuid.UUID] = {}
    owners: set[uuid.UUID] = set()
    created = updated = 0
    reindex = False
    try:
        start = 0
        while start < len(ordered):
            size = min(chunk_size, BULK_CHUNK_ITEMS_CONTENDED) if writers_waiting() else chunk_size
            part = ordered[start : start + size]
            start += size
            # The analysis is pure: made before the transaction, it does not hold the write lock.
            readings = [_reading(item) for _slot, item in part]
            with transaction.atomic():
                chunk = _bulk_chunk(part, readings, now, result, owners)
            created += chunk.created
            updated += chunk.updated
            reindex = reindex or chunk.reindex
    except Exception:
        if created or updated:
            logger.warning(
                "bulk import interrupted: %s of %s memories committed, the rest not written",
                created + updated,
                len(ordered),
            )
        raise
    finally:
        if reindex:
            schedule_reindex()
        if owners:
            notify_bulk_change(owners)
    return {"created": created, "updated": updated, "ids": [str(result[slot]) for slot in slots]}


@dataclass(frozen=True)
class _Chunk:
    created: int
    updated: int
    reindex: bool  # some memories were left for the background indexing


def _bulk_chunk(
    chunk: list[tuple[Slot, MemoryInput]],
    readings: list[cognitive.Reading],
    now: datetime,
    result: dict[Slot, uuid.UUID],
    owners: set[uuid.UUID],
) -> _Chunk:
    """One chunk of :func:`memory_bulk_create`, inside its transaction (``readings``: each item's
    analysis, in order): fills ``result`` (slot → id) and ``owners``."""
    by_owner: dict[uuid.UUID, list[str]] = {}
    for (owner_id, key), _item in chunk:
        if isinstance(owner_id, uuid.UUID) and isinstance(key, str):
            by_owner.setdefault(owner_id, []).append(key)
    existing: dict[Slot, Memory] = {}
    for owner_id, keys in by_owner.items():
        for found in Memory.objects.filter(owner_id=owner_id, key__in=keys):
            if found.key is not None:  # always: it matched a key
                existing[(owner_id, found.key)] = found
    to_insert: list[tuple[uuid.UUID, MemoryInput, cognitive.Reading]] = []
    to_update: list[Memory] = []
    edited: list[tuple[Memory, cognitive.Reading]] = []
    chunk_ids: dict[Slot, uuid.UUID] = {}
    for (slot, item), given in zip(chunk, readings, strict=True):
        row = existing.get(slot)
        if row is None:
            new_uuid = uuid.uuid4()
            to_insert.append((new_uuid, item, given))
            chunk_ids[slot] = new_uuid
        else:
            reading = _apply_upsert(row, item, now, given)
            if reading is not None:
                edited.append((row, reading))
            to_update.append(row)
            chunk_ids[slot] = row.uuid
    floor = _insert_rows(to_insert, now)
    inline = 0
    ctx = inline_context() if to_insert else None
    if ctx is not None:
        new_rows = Memory.objects.filter(seq__gt=floor).values_list("seq", "owner_id", "content")
        inline = index_inline([Pending(*row) for row in new_rows], ctx, new_rows_above=floor)
    if to_insert:
        # The rows above ``floor`` are this chunk's, in insert order (the write lock, fts_deferred).
        seqs = Memory.objects.filter(seq__gt=floor).order_by("seq").values_list("seq", flat=True)
        cognitive.reconcile(
            [
                (
                    Memory(
                        seq=seq,
                        owner_id=item.owner.pk,
                        content=item.content,
                        key=item.key or None,
                        type=item.type,
                        created_at=item.created_at or now,
                    ),
                    reading,
                )
                for seq, (_uuid, item, reading) in zip(seqs, to_insert, strict=True)
            ]
        )
    if to_update:
        Memory.objects.bulk_update(
            to_update,
            [
                "content",
                "session_id",
                "type",
                "expires_at",
                "metadata",
                "importance",
                "category",
                "entities",
                "updated_at",
                "needs_reindex",
            ],
        )
        cognitive.reconcile(edited, edited=True)
    notify_change("updated", to_update)
    # Known once the chunk is written: a chunk that fails leaves neither ids nor owners behind.
    result.update(chunk_ids)
    owners.update({item.owner.pk for _, item, _ in to_insert} | {m.owner_id for m in to_update})
    return _Chunk(
        created=len(to_insert),
        updated=len(to_update),
        reindex=inline < len(to_insert) or any(m.needs_reindex for m in to_update),
    )
