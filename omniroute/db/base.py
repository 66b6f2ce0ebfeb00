"""SQLite backend: extension loading on any CPython, sqlite-vec, WAL, IMMEDIATE writes."""

from __future__ import annotations

import logging

from omniroute.db.sqlite_module import select_sqlite_module

select_sqlite_module()

import time  # noqa: E402

from django.conf import settings  # noqa: E402
from django.db.backends.sqlite3 import base as sqlite_base  # noqa: E402
from django.db.utils import DatabaseErrorWrapper  # noqa: E402
from django.utils.functional import cached_property  # noqa: E402

from omniroute.db.locking import DatabaseBusy, gate_for, is_lock_error  # noqa: E402
from omniroute.db.pool import POOL  # noqa: E402

logger = logging.getLogger("memory.db")

# Filled once per process by the first connection: what the system check and
# the engine status report.
EXTENSION_STATUS: dict[str, object] = {"vec_loaded": None, "vec_version": None, "error": None}


def load_sqlite_vec(conn) -> str:
    """Load sqlite-vec into ``conn`` and return its version (raises on failure)."""
    # optional at import time: without sqlite-vec this backend must still load, so that the failure
    # is recorded in EXTENSION_STATUS and reported by memory.E001 instead of stopping Django
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)
    return conn.execute("select vec_version()").fetchone()[0]


class DatabaseWrapper(sqlite_base.DatabaseWrapper):
    """Django's sqlite3 backend plus our per-connection setup.

    Each new connection gets sqlite-vec loaded (once, here, never at import
    time) and the pragmas a concurrent web + worker deployment needs: WAL so
    readers do not block the writer, ``synchronous=NORMAL`` (safe with WAL),
    a busy timeout, and a large ``mmap_size`` so KNN scans read from the page
    cache. Write transactions are IMMEDIATE through the ``transaction_mode``
    option set in settings, which takes the write lock at BEGIN and so avoids
    SQLITE_BUSY upgrades half-way through a transaction; before BEGIN, a
    transaction takes its turn at this process's write gate
    (``omniroute.db.locking``), and a lock it cannot get in time raises
    ``DatabaseBusy``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Read by the SQL function omniroute_fts_auto() in the FTS insert
        # trigger; bulk inserts turn it off and index their rows in one
        # statement (see memory.services.memories.fts_deferred).
        self.fts_auto = True
        # Set by omniroute.db.locking.write_deadline: a shorter wait for the write lock than the busy timeout.
        self.write_deadline: float | None = None
        self._holds_gate = False
        self._connection_busy_timeout = self._busy_timeout()  # the PRAGMA of the open connection
        self._pool_key: str | None = None  # the pool's key of the open connection; None: never pooled

    @cached_property
    def wrap_database_errors(self):
        return _BusyAwareErrorWrapper(self)

    def _busy_timeout(self) -> float:
        return float(self.settings_dict["OPTIONS"].get("timeout", 5))

    def _start_transaction_under_autocommit(self):
        deadline = self.write_deadline if self.write_deadline is not None else self._busy_timeout()
        started = time.monotonic()
        gate = gate_for(str(self.settings_dict["NAME"]))
        if not gate.acquire(deadline):
            raise DatabaseBusy(f"database is locked: no turn to write within {deadline:g} s")
        self._holds_gate = True
        try:
            left = deadline - (time.monotonic() - started)
            if left < self._connection_busy_timeout - 0.001:
                # What is left of the deadline is what BEGIN may wait for another process's lock.
                self.connection.execute(f"PRAGMA busy_timeout = {max(int(left * 1000), 0)}")
                try:
                    super()._start_transaction_under_autocommit()  # type: ignore[misc]  # not in django-stubs
                finally:
                    self.connection.execute(
                        f"PRAGMA busy_timeout = {int(self._connection_busy_timeout * 1000)}"
                    )
            else:
                super()._start_transaction_under_autocommit()  # type: ignore[misc]  # not in django-stubs
        except BaseException:
            self._release_gate()
            raise

    def _release_gate(self) -> None:
        if self._holds_gate:
            self._holds_gate = False
            gate_for(str(self.settings_dict["NAME"])).release()

    def _commit(self):
        try:
            return super()._commit()  # type: ignore[misc]  # not in django-stubs
        finally:
            self._release_gate()

    def _rollback(self):
        try:
            return super()._rollback()  # type: ignore[misc]  # not in django-stubs
        finally:
            self._release_gate()

    def _close(self):
        try:
            if self._pool_key is not None and self._poolable():
                if POOL.give(self._pool_key, self.settings_dict["NAME"], self.connection, _pool_size()):
                    return None
            return super()._close()  # type: ignore[misc]  # not in django-stubs
        finally:
            self._release_gate()

    def _poolable(self) -> bool:
        """The wrapper left the connection as :meth:`get_new_connection` made it: the next request may
        have it (``omniroute.db.pool``, which also refuses one with a transaction open)."""
        return self.autocommit and not self.in_atomic_block and not self.errors_occurred

    def get_new_connection(self, conn_params):
        timeout_ms = int(float(conn_params.get("timeout", 5)) * 1000)
        self._pool_key = None if self.is_in_memory_db() else repr(sorted(conn_params.items()))
        if self._pool_key is not None:
            conn = POOL.take(self._pool_key, self.settings_dict["NAME"])
            if conn is not None:
                self._bind(conn, timeout_ms)
                return conn
        conn = super().get_new_connection(conn_params)
        self._bind(conn, timeout_ms)
        if self.settings_dict["NAME"] != ":memory:" and "mode=memory" not in str(self.settings_dict["NAME"]):
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA mmap_size = {int(getattr(settings, 'SQLITE_MMAP_SIZE', 0))}")
        conn.execute("PRAGMA foreign_keys = ON")
        if not getattr(settings, "VECTOR_STORE_DISABLE_VEC", False):
            try:
                version = load_sqlite_vec(conn)
            except Exception as exc:  # reported by memory.E001 and engine status
                if EXTENSION_STATUS["error"] is None:
                    logger.error("sqlite-vec could not be loaded: %s", exc)
                EXTENSION_STATUS.update(vec_loaded=False, error=str(exc))
            else:
                EXTENSION_STATUS.update(vec_loaded=True, vec_version=version, error=None)
        return conn

    def _bind(self, conn, timeout_ms: int) -> None:
        """What ties a connection to this wrapper: the trigger's view of ``fts_auto``, and the busy
        timeout (a connection from the pool was another wrapper's)."""
        conn.create_function("omniroute_fts_auto", 0, lambda: 1 if self.fts_auto else 0)
        conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
        self._connection_busy_timeout = timeout_ms / 1000


def _pool_size() -> int:
    return int(getattr(settings, "SQLITE_POOL_SIZE", 0))


class _BusyAwareErrorWrapper(DatabaseErrorWrapper):
    """Django's error wrapper, raising ``DatabaseBusy`` for SQLite's busy and locked errors (so that
    every interface can answer 503 instead of 500)."""

    def __exit__(self, exc_type, exc_value, traceback):
        if exc_value is not None and not isinstance(exc_value, DatabaseBusy) and is_lock_error(exc_value):
            self.wrapper.errors_occurred = True  # type: ignore[attr-defined]  # not in django-stubs
            raise DatabaseBusy(str(exc_value)).with_traceback(traceback) from exc_value
        return super().__exit__(exc_type, exc_value, traceback)
