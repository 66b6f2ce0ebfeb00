"""The Huey queue on SQLite (the default, when no ``REDIS_URL`` is set), tuned for the gateway.

Huey's SQLite storage keeps SQLite's default ``synchronous=FULL``, so every
enqueue — one per chat request, for extraction — waits for an fsync of the
queue's WAL file. With WAL, ``synchronous=NORMAL`` (what the main database
uses) still never corrupts the file and survives a crash of the process; only
an operating-system crash or power cut can lose the last few enqueued tasks.
For extraction jobs that is the right trade, and it takes the fsync off every
chat request.
"""

from __future__ import annotations

from huey import SqliteHuey
from huey.storage import SqliteStorage


class SqliteWalStorage(SqliteStorage):
    def _create_connection(self):
        conn = super()._create_connection()
        conn.execute("pragma synchronous=NORMAL")
        return conn


class SqliteWalHuey(SqliteHuey):
    storage_class = SqliteWalStorage
