"""A primary backend with ordered fallbacks, and the rule each operation follows when one fails.

The rules are the original MemoryManager's, made safe where it lost or hid data:

=====================  =====================================================================
operation              rule
=====================  =====================================================================
store (+embedding)     the primary. When it is unavailable: refused (``BackendUnavailable``)
                       without fallbacks; with them, kept on the first fallback that takes it
                       and queued for replay to the primary.
get                    the primary; on a miss (None) or when it is unavailable, each fallback in
                       order, the first record found.
update, delete         the primary's answer; the same change mirrored on every fallback, best
                       effort (a fallback's failure is logged, never raised). When the primary
                       is unavailable and a fallback holds the record, the change is made there
                       and queued for replay; else refused.
clear                  the primary, mirrored on the fallbacks; refused while the primary is
                       unavailable (a bulk delete is not queued).
list, count            the primary; when it is unavailable, the first fallback that answers
                       (partial: only what that fallback holds, which the event says).
search, similar,       the primary; when it is unavailable, the fallbacks in order, the first
hybrid                 answer. An empty answer is an answer. All unavailable: raised (the
                       original answered ``[]``, so an outage looked like "no memories").
=====================  =====================================================================

Only ``BackendUnavailable`` moves an operation to a fallback: bad input (``BackendInputError``), a key
conflict or a missing capability is the caller's answer, from whichever backend was asked.

Every fallback is recorded: a :class:`FallbackEvent` appended to the ``events`` list the caller passes
(for retrieval's ``resolution``), a warning on the ``memory.backends`` logger, and the last
``RECENT_EVENTS`` kept for the engine status (:meth:`MemoryManager.recent_events`).

Writes a fallback kept wait in a :class:`ReplayQueue`. The default, :class:`InProcessQueue`, lives in
process memory and is lost when the process ends (the writes it held then stay on the fallback only);
the managers of saved providers use the database's queue (``memory.backends.durable``), which
survives a restart and holds each write's whole payload, so a write kept by a fallback that is itself
lost with the process (``inmemory``) still reaches the primary. Replays run in order through
:meth:`MemoryManager.replay` (the periodic task calls it); a store replayed keeps its id and
``created_at``, and once every queued change of a record is on the primary its copy is deleted from
the fallback.
"""

from __future__ import annotations

import builtins
import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
from django.utils import timezone

from memory.backends.base import (
    NO_FILTERS,
    BackendUnavailable,
    Filters,
    Health,
    MemoryBackend,
    MemoryDraft,
    MemoryHit,
    MemoryRecord,
    Page,
)
from memory.backends.queue import InProcessQueue, PendingWrite, ReplayQueue
from memory.exceptions import DomainError

logger = logging.getLogger("memory.backends")

RECENT_EVENTS = 100
T = TypeVar("T")


@dataclass(frozen=True)
class FallbackEvent:
    """One operation that did not get its answer from the primary alone."""

    operation: str
    failed: str  # the backend that failed or missed
    used: str | None  # the backend that answered instead; None when none could
    reason: str
    at: datetime = field(default_factory=timezone.now)

    def as_dict(self) -> dict[str, str | None]:
        return {
            "operation": self.operation,
            "failed": self.failed,
            "used": self.used,
            "reason": self.reason,
            "at": self.at.isoformat(),
        }


@dataclass(frozen=True)
class ReplayReport:
    """What :meth:`MemoryManager.replay` did: writes replayed, still queued, and why it stopped;
    ``refused``: writes the primary refused for their content (kept, retried by the next replay)."""

    replayed: int
    pending: int
    stopped: str | None = None
    refused: int = 0


class MemoryManager:
    """The primary and its ordered fallbacks (distinct names), with the rules of the module docstring."""

    def __init__(
        self,
        primary: MemoryBackend,
        fallbacks: Sequence[MemoryBackend] = (),
        queue: ReplayQueue | None = None,
    ) -> None:
        names = [primary.name, *(f.name for f in fallbacks)]
        if len(set(names)) != len(names):
            raise ValueError(f"backend names must be distinct: {names}")
        self.primary = primary
        self.fallbacks = list(fallbacks)
        self.queue = queue if queue is not None else InProcessQueue()
        self._lock = threading.Lock()
        self._replay_lock = threading.Lock()
        self._recent: deque[FallbackEvent] = deque(maxlen=RECENT_EVENTS)

    # -- bookkeeping

    def _record(self, events: list[FallbackEvent] | None, event: FallbackEvent) -> None:
        logger.warning(
            "memory backend fallback: %s on %s failed (%s); answered by %s",
            event.operation,
            event.failed,
            event.reason,
            event.used or "nothing",
        )
        with self._lock:
            self._recent.append(event)
        if events is not None:
            events.append(event)

    def _enqueue(self, write: PendingWrite) -> None:
        self.queue.append(replace(write, primary=self.primary.name))

    def pending(self) -> list[PendingWrite]:
        """The writes waiting for the primary, oldest first."""
        return self.queue.pending()

    def recent_events(self) -> list[FallbackEvent]:
        with self._lock:
            return list(self._recent)

    # -- writes

    def store(
        self, draft: MemoryDraft, *, events: list[FallbackEvent] | None = None
    ) -> tuple[MemoryRecord, bool]:
        draft = self._with_id(draft)
        return self._store("store", draft, None, lambda b: b.store(draft), events)

    def store_with_embedding(
        self,
        draft: MemoryDraft,
        embedding: Sequence[float] | np.ndarray,
        *,
        events: list[FallbackEvent] | None = None,
    ) -> tuple[MemoryRecord, bool]:
        vector = np.asarray(embedding, dtype=np.float32)
        draft = self._with_id(draft)

        def call(backend: MemoryBackend) -> tuple[MemoryRecord, bool]:
            # A fallback without vectors keeps the record without one; the queued write keeps the
            # vector for the primary. The primary itself answers for its capabilities.
            if backend is self.primary or backend.capabilities.vector:
                return backend.store_with_embedding(draft, vector)
            return backend.store(draft)

        return self._store("store_with_embedding", draft, vector, call, events)

    def _with_id(self, draft: MemoryDraft) -> MemoryDraft:
        """With fallbacks, the draft with its id and creation time chosen here: a write the primary
        took but could not acknowledge (killed mid-write) is then kept by a fallback as the same
        record, and its replay finds it on the primary (a store by id is idempotent) instead of making
        a second one, with the creation time the caller was given. It costs the adapters that look a
        given id up before storing one read, so a manager without fallbacks (where a failed write is
        refused, never replayed) leaves both to the backend. (A keyed store that updates a record keeps
        that record's id and creation time, as always.)"""
        if draft.id is not None or not self.fallbacks:
            return draft
        return replace(draft, id=uuid.uuid4(), created_at=draft.created_at or timezone.now())

    def _store(
        self,
        operation: str,
        draft: MemoryDraft,
        vector: np.ndarray | None,
        call: Callable[[MemoryBackend], tuple[MemoryRecord, bool]],
        events: list[FallbackEvent] | None,
    ) -> tuple[MemoryRecord, bool]:
        try:
            return call(self.primary)
        except BackendUnavailable as exc:
            if not self.fallbacks:
                raise
            failure = exc
        reasons = [f"{self.primary.name}: {failure.message}"]
        for fallback in self.fallbacks:
            try:
                record, created = call(fallback)
            except BackendUnavailable as exc:
                reasons.append(f"{fallback.name}: {exc.message}")
                continue
            kept = replace(draft, id=record.id, created_at=record.created_at)
            self._enqueue(
                PendingWrite("store", draft.owner, record.id, fallback.name, draft=kept, embedding=vector)
            )
            self._record(events, FallbackEvent(operation, self.primary.name, fallback.name, failure.message))
            return record, created
        self._record(events, FallbackEvent(operation, self.primary.name, None, "; ".join(reasons)))
        raise BackendUnavailable(
            "no memory backend could take the write: " + "; ".join(reasons), backend=self.primary.name
        )

    def update(
        self,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        changes: Mapping[str, Any],
        *,
        embedding: Sequence[float] | np.ndarray | None = None,
        events: list[FallbackEvent] | None = None,
    ) -> MemoryRecord | None:
        """Update on the primary, mirrored on the fallbacks. ``embedding`` is the vector of the new
        content, stored with it by every backend that stores vectors (a fallback without vectors gets
        the change alone)."""
        vector = None if embedding is None else np.asarray(embedding, dtype=np.float32)
        return self._mirrored(
            "update",
            owner,
            memory_id,
            lambda b: _update(b, owner, memory_id, changes, vector),
            lambda: PendingWrite("update", owner, memory_id, "", changes=dict(changes), embedding=vector),
            events,
        )

    def delete(
        self, owner: uuid.UUID, memory_id: uuid.UUID, *, events: list[FallbackEvent] | None = None
    ) -> bool:
        result = self._mirrored(
            "delete",
            owner,
            memory_id,
            lambda b: b.delete(owner, memory_id) or None,
            lambda: PendingWrite("delete", owner, memory_id, ""),
            events,
        )
        return bool(result)

    def _mirrored(
        self,
        operation: str,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        call: Callable[[MemoryBackend], T | None],
        pending: Callable[[], PendingWrite],
        events: list[FallbackEvent] | None,
    ) -> T | None:
        """The primary's answer, the change mirrored on every fallback (best effort). A falsy answer
        (None) is a miss. Without the primary, the change is kept where a fallback held the record."""
        failure: BackendUnavailable | None = None
        try:
            answer = call(self.primary)
        except BackendUnavailable as exc:
            if not self.fallbacks:
                raise
            failure, answer = exc, None
        mirrored: list[tuple[str, T]] = []
        for fallback in self.fallbacks:
            try:
                result = call(fallback)
            except Exception as exc:  # best effort: a fallback never fails the caller's change
                logger.warning("memory backend %s: mirrored %s failed: %s", fallback.name, operation, exc)
                continue
            if result is not None:
                mirrored.append((fallback.name, result))
        if failure is None:
            if answer is None and mirrored and self.queue.holds(owner, memory_id):
                # The record is still waiting for the replay: the change waits with it.
                holder, answer = mirrored[0]
                self._enqueue(replace(pending(), holder=holder))
                self._record(events, FallbackEvent(operation, self.primary.name, holder, "not replayed yet"))
            return answer
        if not mirrored:
            self._record(events, FallbackEvent(operation, self.primary.name, None, failure.message))
            raise BackendUnavailable(
                f"{self.primary.name} is unavailable and no fallback holds memory {memory_id}: {failure.message}",
                backend=self.primary.name,
            )
        holder, answer = mirrored[0]
        self._enqueue(replace(pending(), holder=holder))
        self._record(events, FallbackEvent(operation, self.primary.name, holder, failure.message))
        return answer

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        """Clear on the primary (refused while it is unavailable), then on every fallback, and drop the
        queued writes the clear makes moot."""
        deleted = self.primary.clear(owner, type=type)
        for fallback in self.fallbacks:
            try:
                fallback.clear(owner, type=type)
            except Exception as exc:  # best effort, as every mirrored change
                logger.warning("memory backend %s: mirrored clear failed: %s", fallback.name, exc)
        self.queue.drop(owner, type=type)
        return deleted

    # -- reads

    def get(
        self, owner: uuid.UUID, memory_id: uuid.UUID, *, events: list[FallbackEvent] | None = None
    ) -> MemoryRecord | None:
        reason = "not found"
        try:
            record = self.primary.get(owner, memory_id)
        except BackendUnavailable as exc:
            if not self.fallbacks:
                raise
            record, reason = None, exc.message
        if record is not None:
            return record
        for fallback in self.fallbacks:
            try:
                found = fallback.get(owner, memory_id)
            except BackendUnavailable as exc:
                logger.warning("memory backend %s: get failed: %s", fallback.name, exc.message)
                continue
            if found is not None:
                self._record(events, FallbackEvent("get", self.primary.name, fallback.name, reason))
                return found
        return None

    def _read(
        self, operation: str, call: Callable[[MemoryBackend], T], events: list[FallbackEvent] | None
    ) -> T:
        try:
            return call(self.primary)
        except BackendUnavailable as exc:
            if not self.fallbacks:
                raise
            failure = exc
        reasons = [f"{self.primary.name}: {failure.message}"]
        for fallback in self.fallbacks:
            try:
                answer = call(fallback)
            except BackendUnavailable as exc:
                reasons.append(f"{fallback.name}: {exc.message}")
                continue
            self._record(events, FallbackEvent(operation, self.primary.name, fallback.name, failure.message))
            return answer
        self._record(events, FallbackEvent(operation, self.primary.name, None, "; ".join(reasons)))
        raise BackendUnavailable(
            "no memory backend could answer: " + "; ".join(reasons), backend=self.primary.name
        )

    def list(
        self,
        owner: uuid.UUID,
        *,
        filters: Filters = NO_FILTERS,
        limit: int = 50,
        offset: int = 0,
        events: builtins.list[FallbackEvent] | None = None,
    ) -> Page:
        return self._read(
            "list", lambda b: b.list(owner, filters=filters, limit=limit, offset=offset), events
        )

    def count(
        self,
        owner: uuid.UUID,
        *,
        filters: Filters = NO_FILTERS,
        events: builtins.list[FallbackEvent] | None = None,
    ) -> int:
        return self._read("count", lambda b: b.count(owner, filters=filters), events)

    def search(
        self,
        owner: uuid.UUID,
        query: str,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
        events: builtins.list[FallbackEvent] | None = None,
    ) -> builtins.list[MemoryHit]:
        return self._read("search", lambda b: b.search(owner, query, limit=limit, filters=filters), events)

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
        events: builtins.list[FallbackEvent] | None = None,
    ) -> builtins.list[MemoryHit]:
        return self._read(
            "search_similar", lambda b: b.search_similar(owner, vector, limit=limit, filters=filters), events
        )

    def search_hybrid(
        self,
        owner: uuid.UUID,
        query: str,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
        events: builtins.list[FallbackEvent] | None = None,
    ) -> builtins.list[MemoryHit]:
        return self._read(
            "search_hybrid", lambda b: b.search_hybrid(owner, query, limit=limit, filters=filters), events
        )

    # -- health and replay

    def health_all(self) -> dict[str, Health]:
        """Every backend's health, the primary first."""
        return {backend.name: backend.health() for backend in [self.primary, *self.fallbacks]}

    def replay(self) -> ReplayReport:
        """Replay the queued writes to the primary, oldest first, while it takes them; then delete
        from the fallbacks the records whose every queued write is on the primary. Does nothing while
        the primary's health is not ok, or while another replayer holds the queue's lease. Safe to call
        from several threads (one replay at a time).

        A write the primary refuses for what it holds (a key another record took meanwhile, input the
        primary does not accept) is kept with the error and retried by the next replay; the later
        writes of that record wait behind it, so a record's writes are never applied out of order."""
        with self._replay_lock, self.queue.lease() as held:
            if not held:
                return ReplayReport(0, len(self.pending()), "another process is replaying this queue")
            health = self.primary.health()
            if not health.ok:
                return ReplayReport(0, len(self.pending()), f"{self.primary.name}: {health.error}")
            replayed = refused = 0
            stopped: str | None = None
            done: builtins.list[PendingWrite] = []
            held_back: set[tuple[uuid.UUID, uuid.UUID]] = set()
            for write in self.pending():
                record = (write.owner, write.memory_id)
                if record in held_back:
                    continue
                try:
                    self._apply(write)
                except BackendUnavailable as exc:
                    stopped = f"{self.primary.name}: {exc.message}"
                    self.queue.failed(write, stopped)
                    break
                except DomainError as exc:
                    refused += 1
                    held_back.add(record)
                    self.queue.failed(write, f"{type(exc).__name__}: {exc.message}")
                    logger.error(
                        "memory backend replay: %s refused the queued %s of memory %s: %s",
                        self.primary.name,
                        write.action,
                        write.memory_id,
                        exc.message,
                    )
                    continue
                self.queue.remove(write)
                self.queue.renew()
                replayed += 1
                done.append(write)
            self._release(done)
            if replayed:
                logger.info("memory backend replay: %s writes replayed to %s", replayed, self.primary.name)
            return ReplayReport(replayed, len(self.pending()), stopped, refused)

    def _apply(self, write: PendingWrite) -> None:
        if write.action == "store" and write.draft is not None:
            if write.embedding is not None and self.primary.capabilities.vector:
                self.primary.store_with_embedding(write.draft, write.embedding)
            else:
                self.primary.store(write.draft)
        elif write.action == "update" and write.changes is not None:
            _update(self.primary, write.owner, write.memory_id, write.changes, write.embedding)
        elif write.action == "delete":
            self.primary.delete(write.owner, write.memory_id)

    def _release(self, done: builtins.list[PendingWrite]) -> None:
        """Delete the fallbacks' copies of records no queued write refers to any more."""
        waiting = {(w.owner, w.memory_id) for w in self.pending()}
        holders = {f.name: f for f in self.fallbacks}
        for write in done:
            holder = holders.get(write.holder)
            if holder is None or (write.owner, write.memory_id) in waiting:
                continue
            try:
                holder.delete(write.owner, write.memory_id)
            except BackendUnavailable as exc:
                logger.warning("memory backend %s: replayed copy not deleted: %s", holder.name, exc.message)


def _update(
    backend: MemoryBackend,
    owner: uuid.UUID,
    memory_id: uuid.UUID,
    changes: Mapping[str, Any],
    vector: np.ndarray | None,
) -> MemoryRecord | None:
    """``backend.update``, with the new content's vector where the backend stores vectors."""
    if vector is not None and backend.capabilities.vector:
        return backend.update(owner, memory_id, changes, embedding=vector)
    return backend.update(owner, memory_id, changes)
