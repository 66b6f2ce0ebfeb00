"""The in-memory backend: a process-local store for tests and development (Orkeon's InMemoryProvider).

Everything lives in one dict per owner behind one lock, so it is thread-safe and gone when the process
ends. Keyword search is BM25 and vector search exact cosine (:mod:`memory.backends.scoring`); filters
are applied before ranking.

:meth:`InMemoryBackend.fail` and :meth:`InMemoryBackend.recover` take the store down and up: while it
is down every operation raises ``BackendUnavailable`` and ``health()`` says so. That is how the
manager's fallbacks and replay are exercised without patching anything: a real adapter of the
contract whose store is away.
"""

from __future__ import annotations

import builtins
import dataclasses
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils import timezone

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
    as_vector,
    check_changes,
    check_draft,
    check_page,
)
from memory.backends.scoring import bm25_rank, cosine_rank
from memory.exceptions import Conflict


@dataclass
class _Entry:
    record: MemoryRecord
    vector: np.ndarray | None
    order: int  # insertion order: the tie-break of equal created_at, newest first


class InMemoryBackend(MemoryBackend):
    """A thread-safe dict of records per owner. ``dimension`` fixes the vector dimension (None: the
    first stored vector fixes it)."""

    type_name = "inmemory"
    capabilities = Capabilities(keyword=True, vector=True, hybrid=False, filters=True)

    def __init__(self, *, name: str | None = None, dimension: int | None = None) -> None:
        super().__init__(name=name)
        self._lock = threading.RLock()
        self._owners: dict[uuid.UUID, dict[uuid.UUID, _Entry]] = {}
        self._dimension = dimension
        self._counter = 0
        self._down: str | None = None

    # -- availability

    def fail(self, reason: str = "taken down") -> None:
        """Take the store down: every operation raises ``BackendUnavailable`` until :meth:`recover`."""
        with self._lock:
            self._down = reason

    def recover(self) -> None:
        with self._lock:
            self._down = None

    def _up(self) -> None:
        if self._down is not None:
            raise BackendUnavailable(f"{self.name} is unavailable: {self._down}", backend=self.name)

    # -- helpers (called with the lock held)

    def _live(self, owner: uuid.UUID, filters: Filters) -> list[_Entry]:
        now = timezone.now()
        entries = [
            e for e in self._owners.get(owner, {}).values() if e.record.live(now) and filters.admits(e.record)
        ]
        entries.sort(key=lambda e: (e.record.created_at, e.order), reverse=True)
        return entries

    def _by_key(self, owner: uuid.UUID, key: str) -> _Entry | None:
        return next((e for e in self._owners.get(owner, {}).values() if e.record.key == key), None)

    @property
    def vector_dimension(self) -> int | None:
        return self._dimension

    # -- the contract

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with self._lock:
            self._up()
            return self._store(draft, None)

    def store_with_embedding(
        self, draft: MemoryDraft, embedding: Sequence[float] | np.ndarray
    ) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with self._lock:
            self._up()
            vector = as_vector(embedding, dimension=self._dimension, field="embedding")
            if self._dimension is None:
                self._dimension = int(vector.size)
            return self._store(draft, vector)

    def _store(self, draft: MemoryDraft, vector: np.ndarray | None) -> tuple[MemoryRecord, bool]:
        now = timezone.now()
        records = self._owners.setdefault(draft.owner, {})
        if draft.id is not None and draft.id in records:
            return _copy(records[draft.id].record), False
        existing = self._by_key(draft.owner, draft.key) if draft.key else None
        if existing is not None:
            old = existing.record
            record = draft.upserted(old, now)
            if vector is not None:
                existing.vector = vector
            elif record.content != old.content:
                existing.vector = None
            existing.record = record
            return _copy(record), False
        record = draft.new_record(now)
        self._counter += 1
        records[record.id] = _Entry(record, vector, self._counter)
        return _copy(record), True

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        with self._lock:
            self._up()
            entry = self._owners.get(owner, {}).get(memory_id)
            if entry is None or not entry.record.live(timezone.now()):
                return None
            return _copy(entry.record)

    def update(
        self,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        changes: Mapping[str, Any],
        *,
        embedding: Sequence[float] | np.ndarray | None = None,
    ) -> MemoryRecord | None:
        checked = check_changes(changes)
        with self._lock:
            self._up()
            vector = (
                None
                if embedding is None
                else as_vector(embedding, dimension=self._dimension, field="embedding")
            )
            entry = self._owners.get(owner, {}).get(memory_id)
            if entry is None or not entry.record.live(timezone.now()):
                return None
            key = checked.get("key", entry.record.key)
            if key and key != entry.record.key:
                other = self._by_key(owner, key)
                if other is not None and other.record.id != memory_id:
                    raise Conflict(f"another memory of this owner already uses key {key!r}", field="key")
            if "metadata" in checked:
                checked["metadata"] = dict(checked["metadata"])
            record = dataclasses.replace(entry.record, **checked, updated_at=timezone.now())
            if vector is not None:
                if self._dimension is None:
                    self._dimension = int(vector.size)
                entry.vector = vector
            elif record.content != entry.record.content:
                entry.vector = None
            entry.record = record
            return _copy(record)

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        with self._lock:
            self._up()
            return self._owners.get(owner, {}).pop(memory_id, None) is not None

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        with self._lock:
            self._up()
            records = self._owners.get(owner, {})
            now = timezone.now()
            doomed = [e for e in records.values() if not type or e.record.type == type]
            for entry in doomed:
                del records[entry.record.id]
            return sum(1 for e in doomed if e.record.live(now))

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        with self._lock:
            self._up()
            entries = self._live(owner, filters)
            return Page([_copy(e.record) for e in entries[offset : offset + limit]], len(entries))

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        with self._lock:
            self._up()
            return len(self._live(owner, filters))

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        with self._lock:
            self._up()
            records = [e.record for e in self._live(owner, filters)]
        return [_copy_hit(hit) for hit in bm25_rank(records, query, limit=limit)]

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        with self._lock:
            self._up()
            query = as_vector(vector, dimension=self._dimension, field="vector")
            entries = [e for e in self._live(owner, filters) if e.vector is not None]
            records = [e.record for e in entries]
            vectors = [e.vector for e in entries if e.vector is not None]
        return [_copy_hit(hit) for hit in cosine_rank(records, vectors, query, limit=limit)]

    def health(self) -> Health:
        started = time.perf_counter()
        with self._lock:
            down = self._down
            owners = len(self._owners)
            records = sum(len(r) for r in self._owners.values())
        latency = round((time.perf_counter() - started) * 1000, 3)
        detail = {
            "vectorSearch": "exact cosine (numpy)",
            "dimension": self._dimension,
            "owners": owners,
            "records": records,
            "persistent": False,
        }
        if down is not None:
            return Health(False, latency, f"unavailable: {down}", detail)
        return Health(True, latency, None, detail)


def _copy(record: MemoryRecord) -> MemoryRecord:
    """The record with its own metadata dict: a caller's change never reaches the store."""
    return dataclasses.replace(record, metadata=dict(record.metadata))


def _copy_hit(hit: MemoryHit) -> MemoryHit:
    return MemoryHit(_copy(hit.record), hit.score, hit.ranking)
