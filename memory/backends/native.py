"""The native store behind the backend contract: our ``memories`` rows, FTS5 and the vector indexes
(sqlite-vec in the database, Qdrant as a mirror), through the services and the retrieval engine.

Nothing here ranks, indexes or filters on its own: writes go through ``memory.services.memories`` and
``memory.services.retention``, visibility through ``memory.visibility.Visibility``, keyword and hybrid
search through ``memory.retrieval.engine.retrieve``, vector search through the database's
``VectorStore``. What the adapter adds is the mapping to :class:`~memory.backends.base.MemoryRecord`
and these rules of its own:

* the owner must be an existing API key (``memory.exceptions.NotFound``, field ``owner``);
* vectors are the configured embedding source's: ``vector_dimension`` is its dimension, and a vector
  passed to ``store_with_embedding`` takes the place of the one the indexing would compute (the
  indexing then skips the row). A reindex (a model change, ``reindex_memories --force``) replaces
  such vectors with the source's own, so a caller's vectors must come from the same model;
* ``type`` and ``created_after`` are not filters of the engine's tiers: a search that uses them ranks
  every live record of the owner and keeps the first ``limit`` that pass (exact, at the cost of a
  full ranking);
* a kept ``id`` or ``created_at`` (``MemoryDraft``) is written onto the new row in the same
  transaction; the ``memory_changed`` signal of that write still names the id the row was created
  with (``memory_create`` takes no id).
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
from django.db import OperationalError, connection, transaction
from django.db.models import QuerySet

from memory.backends.base import (
    NO_FILTERS,
    BackendUnavailable,
    Capabilities,
    Filters,
    Health,
    MemoryBackend,
    MemoryDraft,
    MemoryHit,
    MemoryRecord,
    Page,
    Ranking,
    as_vector,
    check_changes,
    check_draft,
    check_page,
)
from memory.exceptions import Conflict, NotFound
from memory.models import ApiKey, Memory, TokenScope
from memory.principals import Principal
from memory.retrieval.engine import Hit, retrieve
from memory.retrieval.relevance import query_terms
from memory.selectors import memory_get
from memory.services import vectorsync
from memory.services.indexing import VectorContext, index_signature, schedule_reindex, vector_context
from memory.services.memories import MemoryInput, memory_create, memory_delete, memory_update
from memory.services.retention import memory_clear
from memory.vectorstores.base import VectorItem, VectorStore
from memory.visibility import Visibility, owner_hex

# A budget no search reaches: the contract's searches are bounded by ``limit``, not by tokens.
UNBOUNDED_TOKENS = 1 << 40
# What each engine tier's hits were ranked by.
_RANKINGS: dict[str, Ranking] = {"fts5": "keyword", "hybrid": "hybrid", "hybrid-rrf": "hybrid"}


def to_record(memory: Memory) -> MemoryRecord:
    return MemoryRecord(
        id=memory.uuid,
        owner=memory.owner_id,
        content=memory.content,
        type=memory.type,
        key=memory.key,
        session_id=memory.session_id,
        metadata=dict(memory.metadata or {}),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        expires_at=memory.expires_at,
        importance=memory.importance,
    )


def to_memory(record: MemoryRecord) -> Memory:
    """A provider's record as an unsaved ``Memory``, so every surface shapes it as a native row
    (``memory.shapes.memory_json``, the Studio's templates). It has no ``seq``: it is never saved
    here, and :mod:`memory.store` sends its changes to the record's provider."""
    return Memory(
        seq=None,
        uuid=record.id,
        owner_id=record.owner,
        session_id=record.session_id,
        type=record.type,
        key=record.key,
        content=record.content,
        metadata=dict(record.metadata),
        created_at=record.created_at,
        updated_at=record.updated_at,
        expires_at=record.expires_at,
        importance=record.importance,
        needs_reindex=False,
        access_count=0,
        last_accessed_at=None,
    )


@contextmanager
def _guard(name: str) -> Iterator[None]:
    """The database failing (locked past its deadline, unreadable) is the store being unavailable."""
    try:
        yield
    except OperationalError as exc:  # DatabaseBusy included
        raise BackendUnavailable(f"{name}: the database failed: {exc}", backend=name) from exc


class NativeBackend(MemoryBackend):
    """The default primary: the rows, FTS5 and vector indexes of this service's SQLite database."""

    type_name = "native"
    capabilities = Capabilities(keyword=True, vector=True, hybrid=True, filters=True)

    def _principal(self, owner: uuid.UUID) -> Principal:
        return Principal(scope=TokenScope.WRITE, owner_ids=frozenset({owner}), label=f"backend:{self.name}")

    def _api_key(self, owner: uuid.UUID) -> ApiKey:
        key = ApiKey.all_objects.filter(pk=owner).first()
        if key is None:
            raise NotFound(f"API key {owner} not found", field="owner")
        return key

    def _visible(self, owner: uuid.UUID, filters: Filters) -> QuerySet[Memory]:
        qs = Visibility(
            owner_ids={owner}, session_id=filters.session_id, created_after=filters.created_after
        ).queryset()
        return qs.filter(type=filters.type) if filters.type else qs

    @property
    def vector_dimension(self) -> int | None:
        source = vector_context().source
        return None if source is None else source.dim

    # -- writes

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with _guard(self.name), transaction.atomic():
            memory, created = self._write_row(draft)
        return to_record(memory), created

    def _write_row(self, draft: MemoryDraft) -> tuple[Memory, bool]:
        key = self._api_key(draft.owner)
        if draft.id is not None:
            taken = Memory.objects.filter(uuid=draft.id).first()
            if taken is not None:
                if taken.owner_id != draft.owner:
                    raise Conflict("another owner's memory has this id", field="id")
                return taken, False
        memory, created = memory_create(
            MemoryInput(
                owner=key,
                content=draft.content,
                key=draft.key or None,
                type=draft.type,
                session_id=draft.session_id,
                metadata=dict(draft.metadata),
                expires_at=draft.expires_at,
                importance=draft.importance,
            )
        )
        kept: dict[str, uuid.UUID | datetime] = {}
        if created and draft.id is not None:
            kept["uuid"] = draft.id
        if created and draft.created_at is not None:
            kept["created_at"] = draft.created_at
        if kept:
            Memory.objects.filter(seq=memory.seq).update(**kept)
            for name, value in kept.items():
                setattr(memory, name, value)
        return memory, created

    def store_with_embedding(
        self, draft: MemoryDraft, embedding: Sequence[float] | np.ndarray
    ) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        ctx = vector_context()
        store = self._vector_store(ctx)
        vector = as_vector(embedding, dimension=self._dimension(ctx), field="embedding")
        with _guard(self.name), transaction.atomic():
            memory, created = self._write_row(draft)
            self._write_vector(ctx, store, memory, vector)
        return to_record(memory), created

    def _write_vector(
        self, ctx: VectorContext, store: VectorStore, memory: Memory, vector: np.ndarray
    ) -> None:
        """Write the caller's vector for the row, in the caller's transaction, in place of the one the
        indexing would compute."""
        signature = ctx.live_source().signature
        if (
            store.in_database
            and store.signature() is None
            and store.ensure(signature=signature, dim=vector.size)
        ):
            schedule_reindex()  # a new table: every other memory needs its vector too
        vectorsync.write_in_transaction(
            [VectorItem(memory.seq, owner_hex(memory.owner_id), vector)],
            database=store,
            signature=signature,
        )
        # The row's vector is the caller's: the indexing scheduled by the write finds nothing to do.
        Memory.objects.filter(seq=memory.seq, content=memory.content).update(needs_reindex=False)

    def _vector_store(self, ctx: VectorContext) -> VectorStore:
        """The database's vector store, usable for the live source, or ``BackendUnavailable``."""
        if ctx.source is None or ctx.write_store is None:
            raise BackendUnavailable(
                f"{self.name} has no vector index: {ctx.reason or 'sqlite-vec is not loaded'}",
                backend=self.name,
            )
        if index_signature(ctx).stale:
            raise BackendUnavailable(
                f"{self.name}: the vector index holds another model's vectors (reindex pending)",
                backend=self.name,
            )
        return ctx.write_store

    def _dimension(self, ctx: VectorContext) -> int:
        dim = ctx.source.dim if ctx.source is not None else None
        if dim is None:
            raise BackendUnavailable(
                f"{self.name}: the embedding source has not reported its dimension yet", backend=self.name
            )
        return int(dim)

    def update(
        self,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        changes: Mapping[str, Any],
        *,
        embedding: Sequence[float] | np.ndarray | None = None,
    ) -> MemoryRecord | None:
        checked = check_changes(changes)
        if "metadata" in checked:
            checked["metadata"] = dict(checked["metadata"])
        if embedding is None:
            with _guard(self.name):
                memory = self._get(owner, memory_id)
                if memory is None:
                    return None
                return to_record(memory_update(memory, **checked))
        ctx = vector_context()
        store = self._vector_store(ctx)
        vector = as_vector(embedding, dimension=self._dimension(ctx), field="embedding")
        with _guard(self.name), transaction.atomic():
            memory = self._get(owner, memory_id)
            if memory is None:
                return None
            memory = memory_update(memory, **checked)
            self._write_vector(ctx, store, memory, vector)
        return to_record(memory)

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        with _guard(self.name):
            # Expired rows too: an expired memory is hidden, not kept.
            memory = Memory.objects.filter(owner_id=owner, uuid=memory_id).first()
            if memory is None:
                return False
            memory_delete(memory)
            return True

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        with _guard(self.name):
            key = ApiKey.all_objects.filter(pk=owner).first()
            if key is None:
                return 0
            return int(memory_clear(owner=key, type=type)["deletedCount"])

    # -- reads

    def _get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> Memory | None:
        try:
            return memory_get(principal=self._principal(owner), memory_id=memory_id)
        except NotFound:
            return None

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        with _guard(self.name):
            memory = self._get(owner, memory_id)
            return None if memory is None else to_record(memory)

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        with _guard(self.name):
            qs = self._visible(owner, filters)
            rows = list(qs.order_by("-created_at", "-seq")[offset : offset + limit])
            return Page([to_record(m) for m in rows], qs.count())

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        with _guard(self.name):
            return self._visible(owner, filters).count()

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        return self._retrieve(owner, query, "keyword", limit, filters)

    def search_hybrid(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        return self._retrieve(owner, query, "hybrid", limit, filters)

    def _retrieve(
        self, owner: uuid.UUID, query: str, strategy: str, limit: int, filters: Filters
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        if not query_terms(query):
            return []
        post_filtered = bool(filters.type or filters.created_after)
        with _guard(self.name):
            depth = max(limit, self.count(owner)) if post_filtered else limit
            result = retrieve(
                owner_ids=frozenset({owner}),
                query=query,
                strategy=strategy,
                max_tokens=UNBOUNDED_TOKENS,
                limit=depth,
                session_id=filters.session_id,
                touch=False,
                filter_irrelevant=False,
            )
        hits = [_as_hit(hit) for hit in result.hits if hit.tier != "recent"]
        return [hit for hit in hits if filters.admits(hit.record)][:limit]

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        ctx = vector_context()
        store = self._vector_store(ctx)
        query = as_vector(vector, dimension=self._dimension(ctx), field="vector")
        visibility = Visibility(
            owner_ids={owner}, session_id=filters.session_id, created_after=filters.created_after
        )
        with _guard(self.name):
            # The store filters owner, expiry, session and window; the type is checked on the rows.
            k = max(limit, self.count(owner)) if filters.type else limit
            found = store.search(vector=query, k=k, visibility=visibility)
            rows = {m.seq: m for m in self._visible(owner, filters).filter(seq__in=[h.seq for h in found])}
        hits = [MemoryHit(to_record(rows[h.seq]), h.score, "vector") for h in found if h.seq in rows]
        return hits[:limit]

    def health(self) -> Health:
        started = time.perf_counter()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM memories LIMIT 1")
                cursor.fetchall()
            ctx = vector_context()
        except Exception as exc:  # health never raises: the reason is the answer
            return Health(False, _ms(started), f"{type(exc).__name__}: {exc}")
        detail = {
            "keywordSearch": "fts5",
            "vectorStore": ctx.store_name,
            "vectorSearch": ctx.write_store.name if ctx.write_store is not None else None,
            "embeddingSource": ctx.resolution.source,
            "embeddingModel": ctx.resolution.model,
            "dimension": ctx.source.dim if ctx.source is not None else None,
            "vectorReason": ctx.reason,
            "persistent": True,
        }
        return Health(True, _ms(started), None, detail)


def _as_hit(hit: Hit) -> MemoryHit:
    ranking = _RANKINGS.get(hit.tier, "vector")
    return MemoryHit(to_record(hit.memory), float(hit.score), ranking)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
