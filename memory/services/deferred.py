"""Statistics written off the request path: gathered in memory, written by one background thread.

A statistic (a memory's access counters, a credential's last use) must never make a read request a
SQLite write transaction: the database has one write lock, taken by whichever request comes next. A
:class:`DeferredWriter` gathers values by key, merging repeats, and one daemon thread writes everything
gathered ``MEMORY_ACCESS_FLUSH_SECONDS`` after the oldest value, in one call of :meth:`write`. A failed
write is logged and its values go back to the queue, retried next time. Subclasses say how values
merge and how a batch is written.

Inside a transaction, on an in-memory database (whose other connections could not see this one's
rows), or with ``MEMORY_ACCESS_FLUSH_SECONDS=0``, nothing can be deferred (:meth:`deferrable`): callers
then write at once, on their own connection.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Generic, TypeVar

from django.conf import settings
from django.db import connection

logger = logging.getLogger("memory")

K = TypeVar("K")
V = TypeVar("V")


class DeferredWriter(Generic[K, V]):
    """Values gathered by key and written in batches on a background thread (see the module docstring)."""

    thread_name = "memory-deferred"
    failure_event = "memory.deferred.flush_failed"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Held for a whole flush: a flush that finds the batch taken by the background thread's flush
        # waits for that write (a process flushing at exit must not leave while its last batch is in
        # the air: the daemon thread dies with the process).
        self._flushing = threading.Lock()
        self._pending: dict[K, V] = {}
        self._since: float | None = None  # when the oldest unwritten value was gathered
        self._has_work = threading.Event()
        self._thread: threading.Thread | None = None

    def merge(self, old: V, new: V) -> V:
        """The value kept when ``new`` is gathered for a key that already holds ``old``."""
        raise NotImplementedError

    def write(self, batch: dict[K, V]) -> int:
        """Store ``batch`` on this thread's connection; returns how many rows it wrote."""
        raise NotImplementedError

    @staticmethod
    def deferrable() -> bool:
        # The stubs type the default connection as the base wrapper; a "sqlite" vendor is Django's
        # SQLite wrapper, which has is_in_memory_db() (the proxy defeats an isinstance check).
        return (
            settings.MEMORY_ACCESS_FLUSH_SECONDS > 0
            and not connection.in_atomic_block
            and not (connection.vendor == "sqlite" and connection.is_in_memory_db())  # type: ignore[attr-defined]
        )

    def gather(self, values: dict[K, V]) -> None:
        """Queue ``values`` (merged with what is queued for the same keys) for the background thread."""
        with self._lock:
            self._merge_in(values)
            self._ensure_thread()

    def _merge_in(self, values: dict[K, V]) -> None:
        # The caller holds the lock.
        for key, value in values.items():
            old = self._pending.get(key)
            self._pending[key] = value if old is None else self.merge(old, value)
        if self._since is None:
            self._since = time.monotonic()
        self._has_work.set()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> int:
        """Write what was gathered, now, on the calling thread; returns what :meth:`write` returns.
        On a failure (logged) the values go back to the queue and are retried next time."""
        with self._flushing:
            with self._lock:
                batch, self._pending, self._since = self._pending, {}, None
                self._has_work.clear()
            if not batch:
                return 0
            try:
                return self.write(batch)
            except Exception:
                logger.exception(self.failure_event, extra={"rows": len(batch)})
                with self._lock:
                    self._merge_in(batch)
                connection.close()
                return 0

    def _ensure_thread(self) -> None:
        # The caller holds the lock.
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        # Idle until something is gathered; then write it MEMORY_ACCESS_FLUSH_SECONDS after the oldest
        # value (the setting is re-read while waiting, in short slices).
        while True:
            self._has_work.wait()
            with self._lock:
                since = self._since
                if since is None:
                    self._has_work.clear()
                    continue
            remaining = since + settings.MEMORY_ACCESS_FLUSH_SECONDS - time.monotonic()
            if remaining > 0:
                time.sleep(min(remaining, 0.25))
                continue
            self.flush()
