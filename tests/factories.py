"""Test data builders and a deterministic embedder for vector-table tests."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

import numpy as np
from django.utils import timezone

from memory.models import ApiKey, ManagementToken, Memory, hash_secret
from memory.services.memories import MemoryInput, memory_create


def make_memory(owner: ApiKey, content: str = "I prefer dark mode", **fields) -> Memory:
    created_at = fields.pop("created_at", None)
    memory, _ = memory_create(MemoryInput(owner=owner, content=content, **fields))
    if created_at is not None:
        Memory.objects.filter(seq=memory.seq).update(created_at=created_at)
        memory.refresh_from_db()
    return memory


def expired(minutes: int = 1):
    return timezone.now() - timedelta(minutes=minutes)


def hash_embed(text: str, dim: int = 8) -> np.ndarray:
    """A deterministic, unit-length pseudo-embedding (not semantic: for table tests only)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def fts_rowids() -> set[int]:
    """The memories the keyword index holds (FTS5's rowids; PostgreSQL's ``memory_fts.seq``)."""
    from django.db import connection

    column = "seq" if connection.vendor == "postgresql" else "rowid"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM memory_fts")
        return {row[0] for row in cursor.fetchall()}


def fts_match(query: str) -> set[int]:
    """The memories the keyword index matches for ``query``: an FTS5 MATCH expression, on PostgreSQL
    a word or quoted phrase (its words all present)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT seq FROM memory_fts WHERE document @@ (SELECT string_agg(quote_literal(lexeme), ' & ')"
                "::tsquery FROM unnest(memory_fts_words(%s)))",
                [query.strip('"')],
            )
        else:
            cursor.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH %s", [query])
        return {row[0] for row in cursor.fetchall()}


def unbound_token(scope: str) -> str:
    """The secret of a ``scope`` token bound to no API key, written straight to the table.

    ``ManagementToken.issue`` refuses to make one unless ``scope`` is admin; this stands for rows made
    before that rule, or whose API keys were deleted since."""
    secret = "omt_" + secrets.token_urlsafe(32)
    ManagementToken.objects.create(
        name=f"legacy-{scope}", scope=scope, prefix=secret[:10], token_hash=hash_secret(secret)
    )
    return secret


def database_store(**kwargs):
    """The vector store inside the database the suite runs on, as the deployment picks it: sqlite-vec,
    or on PostgreSQL pgvector's store where the extension is usable (``pgvector_status``) and else the
    plain column (memory/vectorstores/pg_column.py), with the same constructor arguments."""
    from django.db import connection

    from memory.vectorstores.pg_column import PgColumnStore
    from memory.vectorstores.pgvector import PgVectorStore, pgvector_status
    from memory.vectorstores.sqlite_vec import SqliteVecStore

    if connection.vendor != "postgresql":
        return SqliteVecStore(**kwargs)
    return PgVectorStore(**kwargs) if pgvector_status()[0] else PgColumnStore(**kwargs)
