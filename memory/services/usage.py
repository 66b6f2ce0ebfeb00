"""Access counters (``access_count``, ``last_accessed_at``), written in batches.

Every chat request that injects memories counts an access for each of them.
Writing that at once would make each chat request a SQLite write transaction
(the database's single write lock, taken by whichever request comes next) for
what is a statistic. Accesses are therefore gathered in memory and written by
one background thread every ``MEMORY_ACCESS_FLUSH_SECONDS``, as one
transaction for everything gathered meanwhile; the process flushes what is
left when it exits. The statement updates two plain columns, so the FTS
update trigger (``AFTER UPDATE OF content, key``) stays quiet.

Inside a transaction, on an in-memory database (whose other connections could
not see this one's rows), or with ``MEMORY_ACCESS_FLUSH_SECONDS=0``, the
counters are written at once, on the caller's connection.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction

logger = logging.getLogger("memory.access")

UPDATE_SQL = "UPDATE memories SET access_count = access_count + %s, last_accessed_at = %s WHERE seq = %s"


def write_accesses(counts: dict[int, tuple[int, datetime]]) -> None:
    """Add ``count`` to each memory's ``access_count`` and set ``last_accessed_at`` (``{seq: (count, at)}``),
    in one transaction on this thread's connection."""
    if not counts:
        return
    adapt = connection.ops.adapt_datetimefield_value
    rows = [(count, adapt(at), seq) for seq, (count, at) in counts.items()]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(UPDATE_SQL, rows)


class AccessRecorder:
    """Gathers accesses and writes them on its own thread (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[int, datetime]] = {}
        self._since: float | None = None  # when the oldest unwritten access was gathered
        self._has_work = threading.Event()
        self._thread: threading.Thread | None = None

    def record(self, seqs: Iterable[int], at: datetime) -> None:
        if not self._deferrable():
            write_accesses({seq: (1, at) for seq in seqs})
            return
        with self._lock:
            for seq in seqs:
                count, last = self._pending.get(seq, (0, at))
                self._pending[seq] = (count + 1, max(last, at))
            if self._since is None:
                self._since = time.monotonic()
            self._has_work.set()
            self._ensure_thread()

    @staticmethod
    def _deferrable() -> bool:
        # The stubs type the default connection as the base wrapper; a "sqlite" vendor is Django's
        # SQLite wrapper, which has is_in_memory_db() (the proxy defeats an isinstance check).
        return (
            settings.MEMORY_ACCESS_FLUSH_SECONDS > 0
            and not connection.in_atomic_block
            and not (connection.vendor == "sqlite" and connection.is_in_memory_db())  # type: ignore[attr-defined]
        )

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> int:
        """Write what was gathered, now, on the calling thread; return how many memories it touched.

        On a failure the counts go back to the queue (and are logged): they are retried next time."""
        with self._lock:
            batch, self._pending, self._since = self._pending, {}, None
            self._has_work.clear()
        if not batch:
            return 0
        try:
            write_accesses(batch)
        except Exception:
            logger.exception("memory.access.flush_failed", extra={"memories": len(batch)})
            with self._lock:
                for seq, (count, at) in batch.items():
                    pending, last = self._pending.get(seq, (0, at))
                    self._pending[seq] = (pending + count, max(last, at))
                self._since = self._since or time.monotonic()
                self._has_work.set()
            connection.close()
            return 0
        return len(batch)

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="memory-access", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        # Idle until something is gathered; then write it MEMORY_ACCESS_FLUSH_SECONDS after the oldest
        # access (the setting is re-read while waiting, in short slices).
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


RECORDER = AccessRecorder()


def record_access(seqs: Iterable[int], at: datetime) -> None:
    """Count one access to each memory of ``seqs`` at ``at`` (see the module docstring)."""
    RECORDER.record(seqs, at)


def flush_accesses() -> int:
    """Write the gathered accesses now (tests, shutdown, commands)."""
    return RECORDER.flush()


@atexit.register
def _flush_at_exit() -> None:
    RECORDER.flush()
