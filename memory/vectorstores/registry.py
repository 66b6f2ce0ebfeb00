"""Which vector stores are live for the current settings (resolved lazily, no import-time I/O).

The one place that names the implementations: ``active_store`` is where searches go first,
``database_choice`` the store inside the database (sqlite-vec, or PostgreSQL's vector column; written
in the write transaction), and ``mirror_stores`` the stores that writes are copied to after commit (``memory.services.vectorsync``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings as django_settings
from django.db import connection

from memory.conf import MemorySettings
from memory.dialect import is_postgres
from memory.qdrant_conf import get_qdrant_settings
from memory.vectorstores.base import VectorStore
from memory.vectorstores.pg_column import PgColumnStore
from memory.vectorstores.pgvector import PgVectorStore, pgvector_status
from memory.vectorstores.sqlite_vec import SqliteVecStore
from omniroute.db.base import EXTENSION_STATUS


@dataclass(frozen=True)
class StoreChoice:
    store: VectorStore | None
    name: str  # "sqlite-vec" | "pg-column" | "pgvector" | "qdrant" | "none"
    reason: str
    # The store that was selected but is not usable now, and why (the fallback's own reason aside).
    passed_over: str | None = None


def sqlite_vec_loaded() -> bool:
    if django_settings.VECTOR_STORE_DISABLE_VEC:
        return False
    connection.ensure_connection()
    return bool(EXTENSION_STATUS.get("vec_loaded"))


def sqlite_vec_choice() -> StoreChoice:
    if django_settings.VECTOR_STORE_DISABLE_VEC:
        return StoreChoice(None, "none", "sqlite-vec disabled (VECTOR_STORE_DISABLE_VEC)")
    if not sqlite_vec_loaded():
        return StoreChoice(None, "none", "sqlite-vec not available — using FTS5 only")
    return StoreChoice(SqliteVecStore(), "sqlite-vec", "sqlite-vec active")


def pg_column_choice() -> StoreChoice:
    """PostgreSQL's store: pgvector when the extension can be used (``MEMORY_PG_VECTOR_STORE=auto``),
    else the plain column (migration 0016), always there, unless vectors are off."""
    if django_settings.VECTOR_STORE_DISABLE_VEC:
        return StoreChoice(None, "none", "database vectors disabled (VECTOR_STORE_DISABLE_VEC)")
    if django_settings.MEMORY_PG_VECTOR_STORE == "pg-column":
        return StoreChoice(
            PgColumnStore(),
            PgColumnStore.name,
            "PostgreSQL vector column active (MEMORY_PG_VECTOR_STORE=pg-column)",
        )
    usable, why = pgvector_status()
    if usable:
        return StoreChoice(PgVectorStore(), PgVectorStore.name, f"{why} active (HNSW, a partition per owner)")
    return StoreChoice(PgColumnStore(), PgColumnStore.name, f"PostgreSQL vector column active ({why})")


def database_choice() -> StoreChoice:
    """The store that lives in the database: on PostgreSQL its vector column, on SQLite sqlite-vec
    when it can be used (loaded)."""
    return pg_column_choice() if is_postgres() else sqlite_vec_choice()


def active_store(settings: MemorySettings) -> StoreChoice:
    """Qdrant when selected and enabled, else the database's store (sqlite-vec when loaded), else none."""
    if settings.vectorStore == "qdrant":
        try:
            # cycle: memory.vectorstores.qdrant imports this module (StoreChoice)
            from memory.vectorstores.qdrant import qdrant_choice
        except ImportError:
            fallback = database_choice()
            return StoreChoice(
                fallback.store, fallback.name, "qdrant selected but not available; " + fallback.reason
            )
        choice = qdrant_choice()
        if choice.store is not None:
            return choice
        fallback = database_choice()
        return StoreChoice(
            fallback.store, fallback.name, f"{choice.reason}; {fallback.reason}", passed_over=choice.reason
        )
    return database_choice()


def mirror_stores(*, paused_too: bool = False) -> list[VectorStore]:
    """The stores outside the database that every write is copied to after commit: Qdrant when it is
    on (enabled and configured, whether or not searches use it), unless a call to it failed moments
    ago (``paused_too``: even then, for maintenance). Asks no store anything."""
    # cycle: memory.vectorstores.qdrant imports this module (StoreChoice)
    from memory.vectorstores.qdrant import mirror_store

    try:
        store = mirror_store(paused_too=paused_too)
    except ImportError:  # qdrant-client is an optional dependency
        return []
    return [store] if store is not None else []


def mirrors_enabled() -> bool:
    """Whether any store outside the database is on (a cheap settings read, no store is built)."""
    return get_qdrant_settings().active
