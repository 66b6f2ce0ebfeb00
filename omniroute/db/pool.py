"""Open SQLite connections kept for the next request of the process.

Django closes its database connection at the end of every request (``CONN_MAX_AGE`` 0), and under ASGI
each request's synchronous code runs on a thread of its own, so a connection kept per thread
(``CONN_MAX_AGE`` None) would die with its thread. A new SQLite connection costs the open, our pragmas,
loading sqlite-vec, and, at its first statement, reading and parsing the whole schema, with an empty page
cache: about a millisecond and a half per request on the machines we measure (the retrieval engine's whole
answer takes two to three).

So :class:`omniroute.db.base.DatabaseWrapper` hands a connection it closes to this pool, and takes one
from it before it opens a new one. A connection goes back only in a clean state: autocommit, no
transaction open, no error seen on it, in the process that opened it; the wrapper that takes it sets its
busy timeout and the FTS trigger's function again.
Django's sqlite3 connections are opened with ``check_same_thread=False`` (Django checks thread sharing
itself), and a pooled connection belongs to one wrapper at a time, so it moves between threads safely.
``OMNIROUTE_SQLITE_POOL_SIZE`` (default 8; 0 turns pooling off) bounds the idle connections per database
file; an in-memory database is never pooled (Django never closes it). The idle connections are closed
when the process exits.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import defaultdict
from typing import Any


class ConnectionPool:
    """Idle connections per database file, last in first out (the warmest page cache first)."""

    def __init__(self) -> None:
        self._idle: dict[str, list[tuple[Any, tuple[int, int]]]] = defaultdict(list)
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _forked(self) -> bool:
        """A child process must not use its parent's connections: they are forgotten, not closed (closing
        would touch the parent's locks)."""
        if os.getpid() != self._pid:
            self._idle = defaultdict(list)
            self._pid = os.getpid()
            return True
        return False

    def take(self, key: str, path: str) -> Any | None:
        """An idle connection opened with ``key`` (the file and the connection's parameters), or None. One
        whose file is no longer the one at ``path`` (deleted, replaced: a test database made again) is
        closed, not returned."""
        while True:
            with self._lock:
                self._forked()
                idle = self._idle.get(key)
                if not idle:
                    return None
                connection, identity = idle.pop()
            if identity == _identity(path):
                return connection
            connection.close()

    def give(self, key: str, path: str, connection: Any, size: int) -> bool:
        """Keep ``connection`` for the next :meth:`take`; False (the caller closes it) when ``size``
        connections are idle for ``key`` already (0: pooling off), it is in a transaction, or its file is
        gone."""
        if size <= 0 or connection.in_transaction:
            return False
        identity = _identity(path)
        if identity is None:
            return False
        with self._lock:
            if self._forked():
                return False
            idle = self._idle[key]
            if len(idle) >= size:
                return False
            idle.append((connection, identity))
            return True

    def idle(self, key: str) -> int:
        with self._lock:
            return len(self._idle.get(key, ()))

    def clear(self) -> None:
        """Close every idle connection (at exit, and in tests)."""
        with self._lock:
            forked = self._forked()
            idle, self._idle = self._idle, defaultdict(list)
        if forked:
            return
        for connections in idle.values():
            for connection, _identity in connections:
                connection.close()


def _identity(path: str) -> tuple[int, int] | None:
    """The file's device and inode (None: no such file)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


POOL = ConnectionPool()
# Closed at exit as Django's own would have been: the last connection to close checkpoints the WAL into
# the database file (what a copy of the file alone, or a look at its bytes, expects).
atexit.register(POOL.clear)
