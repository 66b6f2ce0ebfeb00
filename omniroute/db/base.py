"""SQLite backend: extension loading on any CPython, sqlite-vec, WAL, IMMEDIATE writes."""

from __future__ import annotations

import logging

from omniroute.db.sqlite_module import select_sqlite_module

select_sqlite_module()

from django.conf import settings  # noqa: E402
from django.db.backends.sqlite3 import base as sqlite_base  # noqa: E402

logger = logging.getLogger("memory.db")

# Filled once per process by the first connection: what the system check and
# the engine status report.
EXTENSION_STATUS: dict[str, object] = {"vec_loaded": None, "vec_version": None, "error": None}


def load_sqlite_vec(conn) -> str:
    """Load sqlite-vec into ``conn`` and return its version (raises on failure)."""
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
    SQLITE_BUSY upgrades half-way through a transaction.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Read by the SQL function omniroute_fts_auto() in the FTS insert
        # trigger; bulk inserts turn it off and index their rows in one
        # statement (see memory.services.memories.fts_deferred).
        self.fts_auto = True

    def get_new_connection(self, conn_params):
        conn = super().get_new_connection(conn_params)
        conn.create_function("omniroute_fts_auto", 0, lambda: 1 if self.fts_auto else 0)
        timeout_ms = int(float(conn_params.get("timeout", 5)) * 1000)
        conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
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
