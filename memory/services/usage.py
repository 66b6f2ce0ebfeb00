"""Access counters (``access_count``, ``last_accessed_at``), written in batches.

Every chat request that injects memories counts an access for each of them.
Writing that at once would make each chat request a SQLite write transaction
for what is a statistic, so accesses go through a
:class:`memory.services.deferred.DeferredWriter`: gathered in memory and written
by one background thread every ``MEMORY_ACCESS_FLUSH_SECONDS``, as one
transaction for everything gathered meanwhile; the process flushes what is
left when it exits (a serving process also flushes at its ASGI shutdown). The
statement updates two plain columns, so the FTS update trigger (``AFTER UPDATE
OF content, key``) stays quiet.

Many writers (several web workers and consumers, each with its own recorder)
are safe: the count is added in the database (``access_count = access_count +
n``, under the row's write lock), never read, incremented and written back, so
no increment is lost or counted twice; and ``last_accessed_at`` only moves
forward, so a batch flushed late by a slower process cannot set it back.

Inside a transaction, on an in-memory database (whose other connections could
not see this one's rows), or with ``MEMORY_ACCESS_FLUSH_SECONDS=0``, the
counters are written at once, on the caller's connection.
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Iterable
from datetime import datetime

from django.db import connection, transaction

from memory.services.deferred import DeferredWriter

logger = logging.getLogger("memory.access")

UPDATE_SQL = (
    "UPDATE memories SET access_count = access_count + %s, last_accessed_at = CASE"
    " WHEN last_accessed_at IS NULL OR last_accessed_at < %s THEN %s ELSE last_accessed_at END"
    " WHERE seq = %s"
)


def write_accesses(counts: dict[int, tuple[int, datetime]]) -> None:
    """Add ``count`` to each memory's ``access_count`` and set ``last_accessed_at`` (``{seq: (count, at)}``),
    in one transaction on this thread's connection."""
    if not counts:
        return
    adapt = connection.ops.adapt_datetimefield_value
    rows = [(count, adapt(at), adapt(at), seq) for seq, (count, at) in counts.items()]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(UPDATE_SQL, rows)


class AccessRecorder(DeferredWriter[int, tuple[int, datetime]]):
    """Gathers accesses ``{seq: (count, last access)}`` and writes them on its own thread."""

    thread_name = "memory-access"
    failure_event = "memory.access.flush_failed"

    def merge(self, old: tuple[int, datetime], new: tuple[int, datetime]) -> tuple[int, datetime]:
        return old[0] + new[0], max(old[1], new[1])

    def write(self, batch: dict[int, tuple[int, datetime]]) -> int:
        write_accesses(batch)
        return len(batch)

    def record(self, seqs: Iterable[int], at: datetime) -> None:
        counts: dict[int, tuple[int, datetime]] = {}
        for seq in seqs:
            counts[seq] = (counts[seq][0] + 1, at) if seq in counts else (1, at)
        if not self.deferrable():
            write_accesses(counts)
            return
        self.gather(counts)


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
