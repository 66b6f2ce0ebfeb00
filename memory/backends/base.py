"""The memory-backend contract: one whole memory store (rows, keyword search, vectors) behind one interface.

A backend keeps the memories of many owners (API key ids) and never lets one owner see another's:
every operation takes the ``owner`` and answers only from that owner's records, whatever the store.
Records whose ``expires_at`` has passed are never returned, counted or ranked by any read.

The operations are the Orkeon provider's (store, get, search, delete, clear, store with embedding,
search similar) plus update, a paged list, count and :meth:`MemoryBackend.health`. ``store`` is an
upsert on ``(owner, key)`` with the rules of ``memory.services.memories.memory_create``: content,
session, type and expiry replaced, metadata merged shallowly, id and ``created_at`` kept.

Errors are the small hierarchy below (``BackendError`` and its subclasses); each is a
``memory.exceptions.DomainError``, so the API's one handler turns them into the JSON envelope:
``BackendUnavailable`` is a 503, ``BackendConfigError`` and ``BackendInputError`` 400s naming the
field, ``memory.exceptions.Conflict`` (a key taken by another record of the owner) a 409. An adapter
turns every failure of its store (connection refused, timeout, server error) into
``BackendUnavailable``; the manager's fallbacks key on that class only, so bad input never falls
back to another store.

Adding a backend means copying a sibling module, declaring its :class:`Capabilities`, registering
its type in :mod:`memory.backends.registry` and running ``tests/memory/backends`` against it.
"""

from __future__ import annotations

import builtins
import math
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np

from memory.exceptions import DomainError
from memory.models import MemoryType
from memory.services.memories import content_problem

# The memory types of both seeds: the original's four (factual, episodic, procedural, semantic) and
# Orkeon's five (short_term, long_term, episodic, entity, procedural).
MEMORY_TYPES: tuple[str, ...] = tuple(MemoryType.values)
# The fields ``update`` may change (``memory.services.memories.UPDATABLE_FIELDS``); metadata is replaced.
UPDATABLE_FIELDS: tuple[str, ...] = ("type", "key", "content", "metadata", "expires_at", "importance")

Ranking = Literal["keyword", "vector", "hybrid"]


# -- errors


class BackendError(DomainError):
    """Base of the backend errors; ``backend`` names the backend that raised it (may be empty)."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        backend: str = "",
        details: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message, field=field, details=details)
        self.backend = backend


class BackendUnavailable(BackendError):
    """The store cannot be reached or failed to answer (a 503). A write refused with it was not kept."""

    status = 503
    type = "service_unavailable_error"


class BackendConfigError(BackendError):
    """A backend's type or configuration is wrong (a 400 on save, a failing system check at start);
    ``details`` names the field (``type``, ``config.url``, …)."""

    status = 400


class BackendInputError(BackendError):
    """An operation's input is wrong for this backend (a 400 naming the field): a vector of the wrong
    dimension, a blank content, an unknown memory type, an importance outside 0..1."""

    status = 400


class BackendUnsupported(BackendError):
    """The backend lacks the capability an operation needs (its :class:`Capabilities` say so)."""

    status = 400


# -- records


@dataclass(frozen=True, kw_only=True)
class MemoryDraft:
    """A memory to store (``MemoryBackend.store``).

    ``id`` and ``created_at`` are kept when given (a replay from a fallback, a move between backends),
    else the backend assigns them. A draft whose ``id`` the owner already has is not stored again: that
    record is returned as it is (so a replay is idempotent). A draft whose ``key`` the owner already
    uses updates that record, whose id wins over ``id``.
    """

    owner: uuid.UUID
    content: str
    type: str = MemoryType.FACTUAL.value
    key: str | None = None
    session_id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    expires_at: datetime | None = None
    importance: float | None = None
    id: uuid.UUID | None = None
    created_at: datetime | None = None

    def new_record(self, now: datetime) -> MemoryRecord:
        """The record this draft makes when the owner has neither its id nor its key: a kept id and
        ``created_at`` when given, importance 0.5 unless given."""
        return MemoryRecord(
            id=self.id or uuid.uuid4(),
            owner=self.owner,
            content=self.content,
            type=self.type,
            key=self.key or None,
            session_id=self.session_id,
            metadata=dict(self.metadata),
            created_at=self.created_at or now,
            updated_at=now,
            expires_at=self.expires_at,
            importance=0.5 if self.importance is None else float(self.importance),
        )

    def upserted(self, old: MemoryRecord, now: datetime) -> MemoryRecord:
        """``old`` (the owner's record with this draft's key) after the upsert: content, session, type
        and expiry replaced, metadata merged shallowly, importance replaced only when given; id, key
        and ``created_at`` kept."""
        return replace(
            old,
            content=self.content,
            session_id=self.session_id,
            type=self.type,
            expires_at=self.expires_at,
            metadata={**old.metadata, **dict(self.metadata)},
            importance=old.importance if self.importance is None else float(self.importance),
            updated_at=now,
        )


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """One stored memory as every backend returns it. ``metadata`` is a fresh dict per record: changing
    it changes nothing stored."""

    id: uuid.UUID
    owner: uuid.UUID
    content: str
    type: str
    key: str | None
    session_id: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    importance: float

    def live(self, now: datetime) -> bool:
        """Whether the record has not expired at ``now``."""
        return self.expires_at is None or self.expires_at > now


@dataclass(frozen=True)
class MemoryHit:
    """A ranked record: ``score`` (higher is better; cosine similarity for ``vector``, the backend's
    keyword score for ``keyword``, the fused score for ``hybrid``) and the ranking that produced it."""

    record: MemoryRecord
    score: float
    ranking: Ranking


@dataclass(frozen=True)
class Page:
    """One page of a list, newest first, and the number of records over all pages."""

    records: list[MemoryRecord]
    total: int


@dataclass(frozen=True, kw_only=True)
class Filters:
    """What a read may narrow to, on top of the owner and expiry rules: one session, one memory type,
    records created at or after ``created_after`` (a retention window). Applied before ranking, so a
    filtered search still returns up to ``limit`` hits."""

    session_id: str | None = None
    type: str | None = None
    created_after: datetime | None = None

    def admits(self, record: MemoryRecord) -> bool:
        if self.session_id and record.session_id != self.session_id:
            return False
        if self.type and record.type != self.type:
            return False
        return self.created_after is None or record.created_at >= self.created_after


NO_FILTERS = Filters()


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do itself, so that retrieval uses what it has and says what it used.

    ``keyword``: :meth:`MemoryBackend.search` ranks by the words of the query; ``vector``:
    :meth:`MemoryBackend.store_with_embedding` and :meth:`MemoryBackend.search_similar` work;
    ``hybrid``: :meth:`MemoryBackend.search_hybrid` fuses both rankings of one text query (the backend
    embeds the query itself); ``filters``: :class:`Filters` are applied by the store before ranking.
    """

    keyword: bool
    vector: bool
    hybrid: bool
    filters: bool

    def as_dict(self) -> dict[str, bool]:
        return {
            "keyword": self.keyword,
            "vector": self.vector,
            "hybrid": self.hybrid,
            "filters": self.filters,
        }


@dataclass(frozen=True)
class Health:
    """A backend's answer to :meth:`MemoryBackend.health`: reachable or not (``error`` says why), how
    long the probe took, and what it found out (``detail``: the vector search in use, the server's
    version, bounds; JSON-safe values)."""

    ok: bool
    latency_ms: float
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


# -- input checks every adapter runs


def check_draft(draft: MemoryDraft) -> None:
    """Raise ``BackendInputError`` (naming the field) for a draft no backend may store."""
    check_content(draft.content)
    check_type(draft.type)
    if draft.importance is not None:
        check_importance(draft.importance)
    if not isinstance(draft.metadata, Mapping):
        raise BackendInputError("metadata must be an object", field="metadata")


def check_content(content: object) -> None:
    if not isinstance(content, str):
        raise BackendInputError("content must be a string", field="content")
    problem = content_problem(content)
    if problem:
        raise BackendInputError(f"content: {problem}", field="content")


def check_type(value: object) -> None:
    if value not in MEMORY_TYPES:
        raise BackendInputError(f"type must be one of {', '.join(MEMORY_TYPES)}", field="type")


def check_importance(value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 <= float(value) <= 1.0:
        raise BackendInputError("importance must be a number from 0 to 1", field="importance")


def check_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """The changes of an update, checked: only ``UPDATABLE_FIELDS``, each valid; a blank key is None."""
    unknown = sorted(set(changes) - set(UPDATABLE_FIELDS))
    if unknown:
        raise BackendInputError(f"not updatable: {', '.join(unknown)}", field=unknown[0])
    checked = dict(changes)
    if "content" in checked:
        check_content(checked["content"])
    if "type" in checked:
        check_type(checked["type"])
    if "importance" in checked:
        check_importance(checked["importance"])
    if "metadata" in checked and not isinstance(checked["metadata"], Mapping):
        raise BackendInputError("metadata must be an object", field="metadata")
    if "key" in checked:
        checked["key"] = checked["key"] or None
    return checked


def check_dimension(dimension: int | None) -> None:
    """A configured vector dimension: None or a positive integer (``BackendConfigError`` otherwise)."""
    if dimension is not None and (
        isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
    ):
        raise BackendConfigError("dimension must be a positive integer", field="config.dimension")


def check_page(limit: int, offset: int) -> None:
    if not isinstance(limit, int) or limit < 1:
        raise BackendInputError("limit must be a positive integer", field="limit")
    if not isinstance(offset, int) or offset < 0:
        raise BackendInputError("offset must be zero or more", field="offset")


def as_vector(values: Sequence[float] | np.ndarray, *, dimension: int | None, field: str) -> np.ndarray:
    """``values`` as a float32 vector of ``dimension`` (None: any), or ``BackendInputError`` naming
    ``field``: a wrong dimension, a non-finite element or a zero vector (no cosine exists for it)."""
    try:
        vector = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError):
        raise BackendInputError(f"{field} must be a list of numbers", field=field) from None
    if vector.ndim != 1 or vector.size == 0:
        raise BackendInputError(f"{field} must be a non-empty list of numbers", field=field)
    if dimension is not None and vector.size != dimension:
        raise BackendInputError(
            f"{field} has {vector.size} dimensions; this backend stores {dimension}", field=field
        )
    if not np.all(np.isfinite(vector)):
        raise BackendInputError(f"{field} holds a value that is not a finite number", field=field)
    if not math.isfinite(float(np.linalg.norm(vector))) or float(np.linalg.norm(vector)) == 0.0:
        raise BackendInputError(f"{field} is a zero vector: no cosine similarity exists for it", field=field)
    return vector


# -- the contract


class MemoryBackend:
    """A whole memory store. Implementations override every method that raises ``NotImplementedError``.

    Every method is scoped by ``owner`` and never reads, counts, changes or deletes another owner's
    records. Every method raises ``BackendUnavailable`` when its store cannot answer (nothing was
    written then) and ``BackendInputError`` for input it refuses. Methods are safe to call from several
    threads at once.
    """

    #: The registry's type string (``native``, ``inmemory``, ``redis``, …).
    type_name = "base"
    capabilities = Capabilities(keyword=False, vector=False, hybrid=False, filters=False)

    def __init__(self, *, name: str | None = None) -> None:
        #: The name this backend is configured under (the manager's events and logs use it).
        self.name = name or self.type_name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    @property
    def vector_dimension(self) -> int | None:
        """The dimension every stored and searched vector must have; None while not fixed yet (the
        first stored vector fixes it) or when the backend has no vectors."""
        return None

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        """Store ``draft`` (an upsert on ``(owner, key)``, see the module docstring); returns the stored
        record and whether it is new. Idempotent for a keyed draft."""
        raise NotImplementedError

    def store_with_embedding(
        self, draft: MemoryDraft, embedding: Sequence[float] | np.ndarray
    ) -> tuple[MemoryRecord, bool]:
        """:meth:`store`, with ``embedding`` as the record's vector (replacing any it had). A vector of
        another dimension than :attr:`vector_dimension` is a ``BackendInputError`` (field
        ``embedding``) and nothing is stored. ``BackendUnsupported`` without the vector capability."""
        raise BackendUnsupported(f"the {self.type_name} backend stores no vectors", backend=self.name)

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        """The owner's live record ``memory_id``; None when missing, expired or another owner's."""
        raise NotImplementedError

    def update(
        self,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        changes: Mapping[str, Any],
        *,
        embedding: Sequence[float] | np.ndarray | None = None,
    ) -> MemoryRecord | None:
        """Apply ``changes`` (a subset of ``UPDATABLE_FIELDS``; metadata is replaced) to the owner's
        live record; returns it, or None when there is none. A key another record of the owner uses
        raises ``memory.exceptions.Conflict`` (field ``key``) and changes nothing.

        ``embedding``, when given, becomes the record's vector with the changes (the vector of its new
        content: a re-embedding). Without it, a new content drops the record's vector, which belonged
        to the old one. A vector of another dimension than :attr:`vector_dimension` is a
        ``BackendInputError`` (field ``embedding``) and nothing changes. A backend without the vector
        capability holds no vectors and ignores ``embedding``."""
        raise NotImplementedError

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        """Delete the owner's record (with its vector); whether one was deleted. Idempotent."""
        raise NotImplementedError

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        """Delete the owner's records (of ``type`` when given); returns how many live records were
        deleted. Expired records may stay until the store's own cleanup (they are never read)."""
        raise NotImplementedError

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        """The owner's live records passing ``filters``, newest first (``created_at``), ``limit`` of
        them from ``offset``, and their total."""
        raise NotImplementedError

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        """How many live records of the owner pass ``filters``."""
        raise NotImplementedError

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        """Full-text search: the owner's live records sharing words with ``query`` (the words of
        ``memory.retrieval.relevance.query_terms``), best first, ``ranking="keyword"``. A query without
        searchable words finds nothing."""
        raise NotImplementedError

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        """The ``limit`` live records of the owner whose vectors are nearest to ``vector`` by cosine
        similarity (the ``score``), best first, ``ranking="vector"``; records without a vector are not
        ranked. A wrong dimension is a ``BackendInputError`` (field ``vector``)."""
        raise BackendUnsupported(f"the {self.type_name} backend has no vector search", backend=self.name)

    def search_hybrid(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        """Keyword and vector rankings of ``query`` fused by the backend (which embeds the query
        itself); each hit's ``ranking`` says which produced it. Only with the hybrid capability."""
        raise BackendUnsupported(f"the {self.type_name} backend has no hybrid search", backend=self.name)

    def health(self) -> Health:
        """Probe the store; never raises (an unreachable store is ``ok=False`` with the reason)."""
        raise NotImplementedError


class Scanned(Protocol):
    """What a scanning backend keeps of a stored record: at least the record."""

    @property
    def record(self) -> MemoryRecord: ...


class ScanReads:
    """``list`` and ``count`` for a backend that reads an owner's live records by scanning them: it
    gives ``_live(owner, filters)`` (newest first, filters applied) and ``_guard()`` (its store's
    failures as ``BackendUnavailable``). Put it before :class:`MemoryBackend` in the bases."""

    def _guard(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _live(self, owner: uuid.UUID, filters: Filters) -> Sequence[Scanned]:
        raise NotImplementedError

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        with self._guard():
            live = self._live(owner, filters)
        return Page([s.record for s in live[offset : offset + limit]], len(live))

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        with self._guard():
            return len(self._live(owner, filters))
