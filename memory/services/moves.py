"""Moving an API key's memories from the store they live in to another (``manage.py move_memories``).

The stores are the native one (``memory.backends.native.NativeBackend``) and the saved providers
(``memory.backends.selection.provider_backend``), all driven through the backend contract. A move:

1. refuses while writes kept by a fallback still wait for the key's provider (a replay is tried first:
   those writes are not on the source yet), and when the destination already holds memories of the
   key that are not the source's (they would merge by key and change ids);
2. copies every live record, a batch at a time: id, content, type, key, session, metadata,
   ``created_at``, expiry and importance (the contract's draft keeps all of them; ``updated_at`` becomes
   the time of the copy). A record the destination already has (by id) is skipped, so a move that
   stopped (a crash, the destination down) is resumed by running it again. A destination that stores
   vectors gets each record's vector from this service's embedding source (``memory.store.
   embeddings_for``); the native store computes its own with the same source (its indexing);
3. checks that the destination holds every source id, then switches the key (``ApiKey.provider``; the
   fallbacks are kept, less the destination itself; a key moved to the native store has none, since
   the native store is served without a manager);
4. deletes the source's copies, only after the switch (audited as a ``memory.clear`` of the command).

Expired records are not moved (no read returns them); they go with the source's copies.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from memory.backends.base import MemoryBackend, MemoryDraft, MemoryRecord
from memory.backends.native import NativeBackend
from memory.backends.selection import manager_for, provider_backend
from memory.exceptions import Conflict, NotFound, ValidationFailed
from memory.models import ApiKey, AuditAction, MemoryProvider, ProviderFallback
from memory.services import audit, retention
from memory.services.encryption import wrap
from memory.store import embeddings_for

NATIVE = "native"
# Records read from the source per page while listing its ids.
LIST_PAGE = 500

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class MoveReport:
    """What a move did: records copied now, found already on the destination (an earlier run),
    the source's total, the two stores, and how many source copies were deleted after the switch."""

    source: str
    destination: str
    total: int
    copied: int
    skipped: int
    deleted: int


@dataclass(frozen=True)
class Store:
    """One end of a move: a name (a provider's, or ``native``), its backend, and its provider row."""

    name: str
    backend: MemoryBackend
    provider: MemoryProvider | None


def store_named(name: str) -> Store:
    """``native`` or a saved provider's name (``NotFound``, field ``to``, for another name)."""
    if name == NATIVE:
        # Sealed by the owners' data keys when encryption is on, as the key's own reads are.
        return Store(NATIVE, wrap(NativeBackend(name=NATIVE)), None)
    provider = MemoryProvider.objects.filter(name=name).first()
    if provider is None:
        raise NotFound(f"no memory provider named {name!r} (nor {NATIVE!r})", field="to")
    return Store(provider.name, provider_backend(provider), provider)


def store_of(api_key: ApiKey) -> Store:
    """Where the key's memories live now."""
    if api_key.provider_id is None:
        return store_named(NATIVE)
    provider = MemoryProvider.objects.get(pk=api_key.provider_id)
    return Store(provider.name, provider_backend(provider), provider)


def _records(backend: MemoryBackend, owner: uuid.UUID) -> list[MemoryRecord]:
    """Every live record of the owner, oldest first (so a resumed move goes on where it stopped)."""
    found: list[MemoryRecord] = []
    offset = 0
    while True:
        page = backend.list(owner, limit=LIST_PAGE, offset=offset)
        found.extend(page.records)
        offset += len(page.records)
        if not page.records or offset >= page.total:
            break
    found.reverse()
    return found


def _draft(record: MemoryRecord) -> MemoryDraft:
    return MemoryDraft(
        owner=record.owner,
        content=record.content,
        type=record.type,
        key=record.key,
        session_id=record.session_id,
        metadata=dict(record.metadata),
        expires_at=record.expires_at,
        importance=record.importance,
        id=record.id,
        created_at=record.created_at,
    )


def _check_no_pending(api_key: ApiKey) -> None:
    manager = manager_for(api_key)
    if manager is None or not manager.pending():
        return
    report = manager.replay()
    if report.pending:
        raise Conflict(
            f"{report.pending} writes kept by a fallback still wait for {manager.primary.name} "
            f"({report.stopped or 'not replayed yet'}); move once they are replayed",
            field="owner",
        )


def _copy_batch(destination: Store, records: list[MemoryRecord]) -> int:
    """Store ``records`` on the destination (with vectors where it takes them); returns how many."""
    vectors = (
        None
        if destination.provider is None
        else embeddings_for(destination.backend, [r.content for r in records])
    )
    for index, record in enumerate(records):
        draft = _draft(record)
        if vectors is None:
            stored, _ = destination.backend.store(draft)
        else:
            stored, _ = destination.backend.store_with_embedding(draft, vectors[index])
        if stored.id != record.id:
            # Only a record of the key already on the destination under that key can do this, and
            # the move refused such records before copying: a store that did it broke the contract.
            raise Conflict(
                f"{destination.name} stored memory {record.id} as {stored.id}: the move is not lossless",
                field="to",
            )
    return len(records)


def move_memories(
    *,
    api_key: ApiKey,
    to: str,
    batch: int = 200,
    progress: Progress | None = None,
    actor: audit.Actor = audit.SYSTEM,
) -> MoveReport:
    """Move the key's memories to the store named ``to`` (see the module docstring). Raises
    ``ValidationFailed`` (field ``to``) when the key's memories are there already, ``NotFound`` for an
    unknown store, ``Conflict`` for pending writes or foreign records on the destination, and
    ``BackendUnavailable`` when either store fails (nothing is switched then; run it again)."""
    source, destination = store_of(api_key), store_named(to)
    if source.name == destination.name:
        raise ValidationFailed(f"the memories of this key are in {source.name} already", field="to")
    _check_no_pending(api_key)
    owner = api_key.pk
    records = _records(source.backend, owner)
    wanted = {r.id for r in records}
    present = {r.id for r in _records(destination.backend, owner)}
    foreign = present - wanted
    if foreign:
        raise Conflict(
            f"{destination.name} already holds {len(foreign)} memories of this key that are not in "
            f"{source.name}; delete them there first",
            field="to",
        )
    todo = [r for r in records if r.id not in present]
    skipped = len(records) - len(todo)
    copied = 0
    if progress is not None:
        progress(skipped, len(records))
    for start in range(0, len(todo), batch):
        copied += _copy_batch(destination, todo[start : start + batch])
        if progress is not None:
            progress(skipped + copied, len(records))
    missing = wanted - {r.id for r in _records(destination.backend, owner)}
    if missing:
        raise Conflict(
            f"{destination.name} lacks {len(missing)} of the moved memories; nothing was switched, "
            "run the move again",
            field="to",
        )
    _switch(api_key, destination)
    deleted = _delete_source(api_key, source, destination, actor)
    return MoveReport(source.name, destination.name, len(records), copied, skipped, deleted)


@transaction.atomic
def _switch(api_key: ApiKey, destination: Store) -> None:
    """Point the key at the destination: its provider, and its fallbacks less the destination (none
    for the native store). Positions are renumbered from 0 in their order."""
    links = list(ProviderFallback.objects.filter(api_key=api_key).order_by("position"))
    ProviderFallback.objects.filter(api_key=api_key).delete()
    if destination.provider is not None:
        kept = [link.provider_id for link in links if link.provider_id != destination.provider.pk]
        ProviderFallback.objects.bulk_create(
            ProviderFallback(api_key=api_key, provider_id=provider_id, position=position)
            for position, provider_id in enumerate(kept)
        )
    api_key.provider = destination.provider
    api_key.save(update_fields=["provider"])


def _delete_source(api_key: ApiKey, source: Store, destination: Store, actor: audit.Actor) -> int:
    """Delete the source's copies of the key's memories (after the switch), audited as ``actor``'s."""
    if source.provider is None:
        # The native rows go through the native clear, which records its own event.
        return int(retention.memory_clear(owner=api_key, actor=actor)["deletedCount"])
    deleted = source.backend.clear(api_key.pk)
    audit.record(
        actor=actor,
        action=AuditAction.MEMORY_CLEAR,
        owner_id=api_key.pk,
        count=deleted,
        details={"store": source.name, "movedTo": destination.name},
    )
    return deleted
