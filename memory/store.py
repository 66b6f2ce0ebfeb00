"""The one seam between the surfaces and the stores: every read and write of memories goes here.

The REST API, the gateway's recall and learning, MCP, retrieve-preview, summarisation, the Studio
and the commands call these functions, never a store directly. Each sends an owner's operation to
where that owner's memories live (:mod:`memory.backends.selection`):

- a key without a provider: the native services and selectors (this database's rows, FTS5 and
  vector indexes), exactly as before providers existed, with no extra query;
- a key with a provider: its :class:`~memory.backends.manager.MemoryManager` (the provider, then its
  fallbacks). Records come back as unsaved ``Memory`` objects (``memory.backends.native.to_memory``)
  so every surface shapes them as rows; their ``seq`` is None, which is how :func:`memory_update`
  and :func:`memory_delete` know to send the change to the provider.

A write to a provider that takes vectors carries the memory's embedding from this service's
embedding source, so the provider's vector search and the native one rank with the same model.
``BackendUnavailable`` (the provider and every fallback down) is a 503 with ``Retry-After``; bad
input is a 400 naming the field, from whichever store refused it.
"""

from __future__ import annotations

import heapq
import math
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Count

from memory import selectors
from memory.backends.base import (
    MEMORY_TYPES,
    NO_FILTERS,
    BackendUnavailable,
    Filters,
    MemoryBackend,
    MemoryDraft,
    MemoryRecord,
)
from memory.backends.manager import MemoryManager
from memory.backends.native import to_memory
from memory.backends.selection import manager_for, manager_for_owner, provider_owners, served_natively
from memory.conf import get_memory_settings
from memory.embeddings.runtime import get_source
from memory.exceptions import NotFound
from memory.models import ApiKey, AuditAction, Memory
from memory.principals import Principal
from memory.retrieval.backend import retrieve_from
from memory.retrieval.budget import estimate_tokens
from memory.retrieval.engine import RetrievalResult
from memory.retrieval.engine import retrieve as native_retrieve
from memory.services import audit, retention
from memory.services import memories as native
from memory.services.encryption import encryption_enabled

# -- writes


def _draft(item: native.MemoryInput) -> MemoryDraft:
    return MemoryDraft(
        owner=item.owner.pk,
        content=item.content,
        type=item.type,
        key=item.key,
        session_id=item.session_id,
        metadata=dict(item.metadata or {}),
        expires_at=item.expires_at,
        importance=item.importance,
    )


def _embedding(manager: MemoryManager, text: str) -> Any:
    """The content's vector for a provider that stores vectors (None: it stores none, or no
    embedding source is live, or the dimensions differ; the record is then found by keyword only)."""
    vectors = embeddings_for(manager.primary, [text])
    return None if vectors is None else vectors[0]


def embeddings_for(backend: MemoryBackend, texts: list[str]) -> list[Any] | None:
    """The vectors of ``texts`` from this service's embedding source, for a backend that stores
    vectors of that dimension (``manage.py move_memories`` re-embeds what it moves with it); None
    when the backend stores none, no source is live, or the dimensions differ (the records are then
    moved without vectors and found by keyword only)."""
    if not backend.capabilities.vector or not texts:
        return None
    source, _ = get_source(get_memory_settings())
    if source is None:
        return None
    vectors = list(source.embed(texts))
    try:
        dimension = backend.vector_dimension
    except BackendUnavailable:
        # A store that cannot say (it is down) checks the vector itself when it is back; meanwhile
        # the manager's fallback takes the write, and the queued write keeps the vector for it.
        dimension = None
    if dimension is not None and any(len(v) != dimension for v in vectors):
        return None
    return vectors


def _store(manager: MemoryManager, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
    vector = _embedding(manager, draft.content)
    if vector is None:
        return manager.store(draft)
    return manager.store_with_embedding(draft, vector)


def memory_create(item: native.MemoryInput) -> tuple[Memory, bool]:
    """Create the memory, or update the owner's memory with the same key (``created`` False)."""
    manager = manager_for(item.owner)
    if manager is None:
        return native.memory_create(item)
    record, created = _store(manager, _draft(item))
    memory = to_memory(record)
    native.notify_change("created" if created else "updated", [memory])
    return memory, created


def memory_bulk_create(items: list[native.MemoryInput]) -> dict:
    """Create or upsert many memories: the native owners' in chunked transactions
    (``memory.services.memories.memory_bulk_create``), a provider's one write per item once items
    sharing ``(owner, key)`` are folded, as the native store folds them.
    Returns ``{"created", "updated", "ids"}`` with the ids in input order."""
    managers: dict[uuid.UUID, MemoryManager | None] = {}
    for item in items:
        if item.owner.pk not in managers:
            managers[item.owner.pk] = manager_for(item.owner)
    native_items = [(i, item) for i, item in enumerate(items) if managers[item.owner.pk] is None]
    ids: list[str] = [""] * len(items)
    created = updated = 0
    if native_items:
        result = native.memory_bulk_create([item for _, item in native_items])
        created, updated = result["created"], result["updated"]
        for (index, _), memory_id in zip(native_items, result["ids"], strict=True):
            ids[index] = memory_id
    on_providers = [(i, item) for i, item in enumerate(items) if managers[item.owner.pk] is not None]
    if on_providers:
        # As on the native store, items sharing (owner, key) are folded into one write first.
        slots, merged = native.merge_batch([item for _, item in on_providers])
        stored: dict[native.Slot, str] = {}
        for slot, item in merged.items():
            manager = managers[item.owner.pk]
            assert manager is not None
            record, new = _store(manager, _draft(item))
            stored[slot] = str(record.id)
            created, updated = created + new, updated + (not new)
        for (index, _), slot in zip(on_providers, slots, strict=True):
            ids[index] = stored[slot]
        native.notify_bulk_change({item.owner.pk for _, item in on_providers})
    return {"created": created, "updated": updated, "ids": ids}


def memory_update(memory: Memory, **changes: Any) -> Memory:
    """Apply ``changes`` to the memory (a native row, or a provider's record)."""
    if memory.seq is not None:
        return native.memory_update(memory, **changes)
    manager = _manager_of(memory)
    # A new content is re-embedded: without its vector, the record would be found by keyword only.
    content = changes.get("content")
    vector = _embedding(manager, content) if isinstance(content, str) and content.strip() else None
    record = manager.update(memory.owner_id, memory.uuid, changes, embedding=vector)
    if record is None:
        raise NotFound("Memory not found", field="id")
    updated = to_memory(record)
    native.notify_change("updated", [updated])
    return updated


def memory_delete(memory: Memory, *, actor: audit.Actor = audit.SYSTEM) -> None:
    """Delete the memory (audited as ``actor``'s)."""
    if memory.seq is not None:
        native.memory_delete(memory, actor=actor)
        return
    deleted = _manager_of(memory).delete(memory.owner_id, memory.uuid)
    if deleted:
        native.notify_change("deleted", [memory])
    audit.record(
        actor=actor,
        action=AuditAction.MEMORY_DELETE,
        owner_id=memory.owner_id,
        count=int(deleted),
        # A sealed memory's key is its text too: the audit log keeps it only while memories are in clear.
        details={
            "id": str(memory.uuid),
            "key": None if encryption_enabled() else memory.key,
            "type": memory.type,
        },
    )


def memory_clear(
    *,
    owner: ApiKey,
    type: str | None = None,
    created_before: datetime | None = None,
    dry_run: bool = False,
    actor: audit.Actor = audit.SYSTEM,
) -> dict:
    """Delete the owner's live memories of ``type`` created before ``created_before``: the shape and
    audit of ``memory.services.retention.memory_clear``."""
    manager = manager_for(owner)
    if manager is None:
        return retention.memory_clear(
            owner=owner, type=type, created_before=created_before, dry_run=dry_run, actor=actor
        )
    records = [
        r
        for r in all_records(manager, owner.pk, Filters(type=type))
        if created_before is None or r.created_at < created_before
    ]
    records.sort(key=lambda r: r.created_at)
    deleted = 0
    if not dry_run:
        if created_before is None:
            deleted = manager.clear(owner.pk, type=type)
        else:
            deleted = sum(manager.delete(owner.pk, r.id) for r in records)
        native.notify_bulk_change([owner.pk])
        audit.record(
            actor=actor,
            action=AuditAction.MEMORY_CLEAR,
            owner_id=owner.pk,
            count=deleted,
            details={
                "type": type or None,
                "createdBefore": created_before.isoformat() if created_before is not None else None,
                "matched": len(records),
            },
        )
    return {"matched": len(records), "deletedCount": deleted, "ids": [str(r.id) for r in records[:1000]]}


def _manager_of(memory: Memory) -> MemoryManager:
    manager = manager_for_owner(memory.owner_id)
    if manager is None:  # the key's provider was removed since the record was read
        raise NotFound("Memory not found", field="id")
    return manager


# -- reads


PAGE = 500


def all_records(
    manager: MemoryManager, owner: uuid.UUID, filters: Filters = NO_FILTERS
) -> list[MemoryRecord]:
    """Every live record of ``owner`` passing ``filters``, newest first (read a page at a time)."""
    found: list[MemoryRecord] = []
    offset = 0
    while True:
        page = manager.list(owner, filters=filters, limit=PAGE, offset=offset)
        found.extend(page.records)
        offset += len(page.records)
        if not page.records or offset >= page.total:
            return found


def memory_get(*, principal: Principal, memory_id: str | uuid.UUID) -> Memory:
    """One visible memory, native or on a provider; ``NotFound`` for unknown, expired or unreachable
    ids. A provider's memory is looked up on each provider-backed key the principal reaches."""
    try:
        memory = selectors.memory_get(principal=principal, memory_id=memory_id)
    except NotFound:
        wanted = selectors.parse_memory_id(memory_id)
        for key in provider_owners(principal.owner_ids):
            manager = manager_for(key)
            if manager is None:
                continue
            try:
                record = manager.get(key.pk, wanted)
            except BackendUnavailable:
                continue
            if record is not None:
                return to_memory(record)
        raise
    owner = ApiKey.all_objects.only("id", "provider_id").get(pk=memory.owner_id)
    if not served_natively(owner):
        # The native row of a provider-backed key is its native fallback's copy, and with encryption
        # on a native row is sealed: the key's manager answers (a change to it is then mirrored and
        # queued for the provider, and a sealed row is opened), not this row as it is stored.
        manager = manager_for(owner)
        record = None if manager is None else manager.get(memory.owner_id, memory.uuid)
        if record is None:
            raise NotFound("Memory not found", field="id")
        return to_memory(record)
    return memory


def memory_list(
    *,
    principal: Principal,
    api_key_id: str | uuid.UUID | None = None,
    type: str | None = None,
    session_id: str | None = None,
    q: str | None = None,
    page: int = 1,
    limit: int = 50,
    offset: int | None = None,
    ordering: str | None = None,
    entity: str | None = None,
    include_superseded: bool = False,
) -> dict[str, Any]:
    """``memory.selectors.memory_list`` over every store the principal's owners use.

    ``entity`` and ``include_superseded`` are the native store's (analysis on write): a provider's
    records carry no entities, so an ``entity`` filter matches none of them, and none is superseded.

    Native owners are listed by the selector; each provider-backed owner by its provider, merged
    newest first, or sorted in memory by ``ordering`` (:func:`memory.selectors.list_order`: the same
    names and the same order as the native list's SQL). On a provider, ``q`` is its keyword search
    (the native list filters by substring), and ``stats.tokensUsed`` is counted from its records.
    """
    order = selectors.list_order(ordering)
    owner_ids = principal.owner_filter(api_key_id)
    providers = provider_owners(owner_ids)
    if not providers:
        return selectors.memory_list(
            principal=principal,
            api_key_id=api_key_id,
            type=type,
            session_id=session_id,
            q=q,
            page=page,
            limit=limit,
            offset=offset,
            ordering=ordering,
            entity=entity,
            include_superseded=include_superseded,
        )
    start = max(0, offset) if offset is not None else (page - 1) * limit
    page = start // limit + 1 if offset is not None else page
    filters = Filters(session_id=session_id or None, type=type or None)
    provider_ids = {key.pk for key in providers}
    native_scope = None if owner_ids is None else [o for o in owner_ids if o not in provider_ids]
    lists: list[list[Memory]] = []
    by_type: dict[str, int] = {}
    tokens = 0
    total = 0
    if native_scope is None or native_scope:
        scoped = Principal(
            scope=principal.scope,
            owner_ids=None if native_scope is None else frozenset(native_scope),
            label=principal.label,
        )
        result = selectors.memory_list(
            principal=scoped,
            type=type,
            session_id=session_id,
            q=q,
            page=1,
            limit=start + limit,
            ordering=ordering,
            entity=entity,
            include_superseded=include_superseded,
        )
        rows = [m for m in result["data"] if m.owner_id not in provider_ids]
        lists.append(rows)
        total += result["total"] - (len(result["data"]) - len(rows))
        tokens += result["stats"]["tokensUsed"]
        for name, n in result["stats"]["byType"].items():
            by_type[name] = by_type.get(name, 0) + n
    for key in providers:
        manager = manager_for(key)
        if manager is None or (entity and entity.strip()):
            continue
        records = _provider_matches(manager, key.pk, filters, q)
        total += len(records)
        for record in records:
            by_type[record.type] = by_type.get(record.type, 0) + 1
        tokens += sum(estimate_tokens(r.content) for r in all_records(manager, key.pk))
        if order.name == "created" and order.descending:
            lists.append([to_memory(r) for r in records[: start + limit]])
        else:  # a provider answers newest first: the whole list is sorted here, then cut
            lists.append(order.sort(to_memory(r) for r in records)[: start + limit])
    if order.name == "created" and order.descending:
        merged = list(heapq.merge(*lists, key=lambda m: m.created_at, reverse=True))
    else:
        merged = order.sort(m for rows in lists for m in rows)
    return {
        "data": merged[start : start + limit],
        "total": total,
        "page": page,
        "limit": limit,
        "totalPages": math.ceil(total / limit) if limit else 0,
        "stats": {"total": total, "byType": dict(sorted(by_type.items())), "tokensUsed": tokens},
    }


def _provider_matches(
    manager: MemoryManager, owner: uuid.UUID, filters: Filters, q: str | None
) -> list[MemoryRecord]:
    if q and q.strip():
        if manager.primary.capabilities.keyword:
            hits = manager.search(owner, q.strip(), limit=10_000, filters=filters)
            return sorted((h.record for h in hits), key=lambda r: r.created_at, reverse=True)
        needle = q.strip().lower()
        return [
            r
            for r in all_records(manager, owner, filters)
            if needle in r.content.lower() or needle in (r.key or "").lower()
        ]
    return all_records(manager, owner, filters)


def memory_count(owner: ApiKey) -> int:
    """How many live memories the owner has, wherever they live."""
    manager = manager_for(owner)
    if manager is None:
        return selectors.live_memories().filter(owner=owner).count()
    return manager.count(owner.pk)


def type_counts(owner: ApiKey) -> dict[str, int]:
    """The owner's live memories per type, wherever they live."""
    manager = manager_for(owner)
    if manager is None:
        rows = (
            selectors.live_memories().filter(owner=owner).order_by().values("type").annotate(n=Count("seq"))
        )
        return {row["type"]: row["n"] for row in rows}
    counts = {t: manager.count(owner.pk, filters=Filters(type=t)) for t in MEMORY_TYPES}
    return {t: n for t, n in counts.items() if n}


def retrieve(
    *,
    owner_ids: frozenset | None,
    query: str | None,
    strategy: str = "hybrid",
    max_tokens: int = 2000,
    limit: int = 20,
    session_id: str | None = None,
    retention_days: int | None = None,
    touch: bool = False,
    filter_irrelevant: bool = True,
    use_vectors: bool = True,
    settings: Any = None,
    as_of: datetime | None = None,
) -> RetrievalResult:
    """``memory.retrieval.engine.retrieve`` for one owner on its provider, else the native engine.

    A provider-backed owner is ranked by its provider alone (:mod:`memory.retrieval.backend`); several
    owners of which some are provider-backed are ranked by the native engine for the native ones
    (provider records are not ranked across stores: their scores are not comparable).
    """
    if owner_ids is not None and len(owner_ids) == 1:
        (owner,) = owner_ids
        manager = manager_for_owner(owner)
        if manager is not None:
            return retrieve_from(
                manager,
                owner=owner,
                query=query,
                strategy="keyword" if not use_vectors and strategy != "exact" else strategy,
                max_tokens=max_tokens,
                limit=limit,
                session_id=session_id,
                retention_days=retention_days,
                settings=settings,
                as_of=as_of,
            )
    return native_retrieve(
        owner_ids=owner_ids,
        query=query,
        strategy=strategy,
        max_tokens=max_tokens,
        limit=limit,
        session_id=session_id,
        retention_days=retention_days,
        settings=settings,
        touch=touch,
        filter_irrelevant=filter_irrelevant,
        use_vectors=use_vectors,
        as_of=as_of,
    )


def owners_on_providers(owner_ids: Iterable[uuid.UUID] | None) -> set[uuid.UUID]:
    """The ids among ``owner_ids`` (None: all) whose memories live with a provider."""
    return {key.pk for key in provider_owners(owner_ids)}
