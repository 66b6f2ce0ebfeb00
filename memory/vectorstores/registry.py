"""Which vector store is live for the current settings (resolved lazily, no import-time I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings as django_settings

from memory.conf import MemorySettings
from memory.vectorstores.base import VectorStore


@dataclass(frozen=True)
class StoreChoice:
    store: VectorStore | None
    name: str  # "sqlite-vec" | "qdrant" | "none"
    reason: str


def sqlite_vec_loaded() -> bool:
    from omniroute.db.base import EXTENSION_STATUS

    if django_settings.VECTOR_STORE_DISABLE_VEC:
        return False
    from django.db import connection

    connection.ensure_connection()
    return bool(EXTENSION_STATUS.get("vec_loaded"))


def sqlite_vec_choice() -> StoreChoice:
    if django_settings.VECTOR_STORE_DISABLE_VEC:
        return StoreChoice(None, "none", "sqlite-vec disabled (VECTOR_STORE_DISABLE_VEC)")
    if not sqlite_vec_loaded():
        return StoreChoice(None, "none", "sqlite-vec not available — using FTS5 only")
    from memory.vectorstores.sqlite_vec import SqliteVecStore

    return StoreChoice(SqliteVecStore(), "sqlite-vec", "sqlite-vec active")


def active_store(settings: MemorySettings) -> StoreChoice:
    """Qdrant when selected and enabled, else sqlite-vec when loaded, else none."""
    if settings.vectorStore == "qdrant":
        try:
            from memory.vectorstores.qdrant import qdrant_choice
        except ImportError:
            fallback = sqlite_vec_choice()
            return StoreChoice(
                fallback.store, fallback.name, "qdrant selected but not available; " + fallback.reason
            )
        choice = qdrant_choice()
        if choice.store is not None:
            return choice
        fallback = sqlite_vec_choice()
        return StoreChoice(fallback.store, fallback.name, f"{choice.reason}; {fallback.reason}")
    return sqlite_vec_choice()
