"""The keyword half of a hybrid query on a pool thread, beside the vector half.

bm25 over the matches is most of a hybrid query's time at 10k+ memories per owner, and SQLite releases
the GIL while it works: :class:`FtsRequest` runs the FTS query on a pool thread (with that thread's own
connection) while the calling thread embeds and scans vectors, or inline where another connection would
not see the caller's rows.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import OperationalError, connection

from memory.retrieval.fts import FtsHit

logger = logging.getLogger("memory.retrieval")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _fts_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fts")
        return _pool


def _pool_allowed() -> bool:
    """Whether work may go to the pool threads' own connections: not inside a
    transaction (they would not see its rows), and not on an in-memory
    database, whose shared cache locks tables between connections
    (SQLITE_LOCKED, which busy_timeout does not retry) — the test database."""
    return not connection.in_atomic_block and not (
        # The stubs type the connection as the base wrapper; a "sqlite" vendor has is_in_memory_db().
        connection.vendor == "sqlite" and connection.is_in_memory_db()  # type: ignore[attr-defined]
    )


class FtsRequest:
    """The FTS5 half of a hybrid query, run beside the vector half when possible.

    bm25 over the matches is most of a hybrid query's time at 10k+ memories
    per owner, and SQLite releases the GIL while it works, so the FTS query
    runs on a pool thread (with that thread's own connection) while this one
    embeds and scans vectors. Inside a transaction a second connection would
    not see this one's uncommitted rows, so the query then runs inline.
    """

    def __init__(self, search: Callable[[], list[FtsHit]]) -> None:
        self.search = search
        self.future: Future[list[FtsHit]] | None = None
        if _pool_allowed():
            self.future = _fts_pool().submit(_on_pool_thread, self.search)

    def result(self) -> list[FtsHit]:
        if self.future is None:
            return self.search()
        try:
            return self.future.result()
        except Exception:
            logger.exception("parallel FTS query failed; running it inline")
            return self.search()


def _on_pool_thread(search: Callable[[], list[FtsHit]]) -> list[FtsHit]:
    try:
        return search()
    except OperationalError:
        # A connection broken since its last use: reopen once (``connection`` is this pool thread's own).
        connection.close()
        return search()
