"""The replay queue: where a :class:`~memory.backends.manager.MemoryManager` keeps the writes its
fallbacks took while the primary was unavailable, until they are replayed to it.

:class:`ReplayQueue` is the interface; :class:`InProcessQueue` the default, in process memory. The
durable one, over the database, is ``memory.backends.durable.DatabaseQueue``.
"""

from __future__ import annotations

import builtins
import threading
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import numpy as np
from django.utils import timezone

from memory.backends.base import MemoryDraft


@dataclass(frozen=True)
class PendingWrite:
    """A write a fallback took while the primary was unavailable, waiting to be replayed.

    ``draft`` (a store), ``changes`` (an update) and ``embedding`` (a store's or an update's vector)
    are the whole write: a replay needs nothing from the fallback. ``primary`` names the backend it
    waits for; ``ref`` is the queue's handle on it (a row id for the database's queue), and
    ``attempts``/``last_error`` say how its replays went so far."""

    action: Literal["store", "update", "delete"]
    owner: uuid.UUID
    memory_id: uuid.UUID
    holder: str  # the fallback that holds the record
    draft: MemoryDraft | None = None
    embedding: np.ndarray | None = field(default=None, compare=False)
    changes: Mapping[str, Any] | None = None
    primary: str = ""
    ref: object = field(default=None, compare=False)
    attempts: int = 0
    last_error: str = ""
    queued_at: datetime | None = field(default=None, compare=False)


class ReplayQueue:
    """Where a manager keeps the writes its fallbacks took, in order, until they are on the primary.

    Contract: :meth:`pending` returns the writes :meth:`append` was given, oldest first, each with a
    ``ref`` the other methods know it by, until :meth:`remove` (replayed) or :meth:`drop` (made moot by a
    clear) takes it out. :meth:`failed` records a replay attempt that did not go through; the write
    stays. :meth:`lease` is held around a replay: it yields False while another replayer (another
    process) holds this queue, so that two replays never interleave their writes; :meth:`renew`
    keeps it while the replay runs. ``append`` must make the write durable before it returns when the
    queue claims durability: the caller's write is acknowledged right after. Implementations are safe
    to call from several threads.
    """

    def append(self, write: PendingWrite) -> None:
        raise NotImplementedError

    def pending(self) -> builtins.list[PendingWrite]:
        raise NotImplementedError

    def holds(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        """Whether a write of this record waits (the default reads :meth:`pending`)."""
        return any(w.owner == owner and w.memory_id == memory_id for w in self.pending())

    def remove(self, write: PendingWrite) -> None:
        raise NotImplementedError

    def failed(self, write: PendingWrite, error: str) -> None:
        raise NotImplementedError

    def drop(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        """Remove the owner's writes that a clear (of ``type``, or of everything) makes moot: every
        write of the owner, or its stores of that type (an update or delete of a cleared record misses
        on the primary anyway, so keeping it costs nothing). Returns how many went."""
        raise NotImplementedError

    @contextmanager
    def lease(self) -> Iterator[bool]:
        yield True

    def renew(self) -> None:
        """Keep the lease of a long replay alive (called after each replayed write)."""


class InProcessQueue(ReplayQueue):
    """The queue in this process's memory: lost when the process ends. For managers built in code
    (tests, development); a second process never shares it, so :meth:`lease` is always granted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writes: deque[PendingWrite] = deque()

    def append(self, write: PendingWrite) -> None:
        with self._lock:
            self._writes.append(replace(write, queued_at=write.queued_at or timezone.now()))

    def pending(self) -> builtins.list[PendingWrite]:
        with self._lock:
            return list(self._writes)

    def _index(self, write: PendingWrite) -> int | None:
        return next((i for i, w in enumerate(self._writes) if w is write), None)

    def remove(self, write: PendingWrite) -> None:
        with self._lock:
            index = self._index(write)
            if index is not None:
                del self._writes[index]

    def failed(self, write: PendingWrite, error: str) -> None:
        with self._lock:
            index = self._index(write)
            if index is not None:
                self._writes[index] = replace(write, attempts=write.attempts + 1, last_error=error)

    def drop(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        with self._lock:
            kept = deque(w for w in self._writes if not _moot(w, owner, type))
            dropped = len(self._writes) - len(kept)
            self._writes = kept
            return dropped


def _moot(write: PendingWrite, owner: uuid.UUID, type: str | None) -> bool:
    """Whether a clear of ``owner``'s records (of ``type``) makes this queued write moot."""
    if write.owner != owner:
        return False
    return type is None or (write.draft is not None and write.draft.type == type)
