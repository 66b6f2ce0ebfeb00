"""Migrations run forward and backward and leave no shadow tables behind."""

import pytest
from django.core.management import call_command
from django.db import connection

from memory.vectorstores.sqlite_vec import SqliteVecStore

# PostgreSQL's counterpart: tests/postgres/test_migrations.py.
pytestmark = pytest.mark.sqlite_only("FTS5 shadow tables, vec0 and sqlite_master")


def table_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_migrating_memory_to_zero_and_back_leaves_no_shadow_tables():
    SqliteVecStore().ensure(signature="test:hash:8", dim=8)
    before = table_names()
    assert {
        "memories",
        "memory_fts",
        "memory_fts_data",
        "memory_fts_au",
        "memory_vec",
        "memory_vec_ad",
    } <= before
    try:
        call_command("migrate", "memory", "zero", verbosity=0)
        leftovers = {n for n in table_names() if n.startswith(("memor", "memory_"))}
        assert leftovers == set()
    finally:
        call_command("migrate", verbosity=0)
    after = table_names()
    assert {
        "memories",
        "memory_fts",
        "memory_fts_data",
        "memory_fts_ai",
        "memory_fts_ad",
        "memory_fts_au",
    } <= after
    assert "memory_vec" not in after  # rebuilt on demand from the embedding signature


@pytest.mark.django_db(transaction=True)
def test_migration_0005_links_existing_turns_and_keeps_the_vector_trigger():
    """Turns stored before the turn context existed are linked when it arrives; the table is altered
    in place, so the sqlite-vec trigger on it survives."""
    from memory.models import ApiKey

    owner = ApiKey.issue(name="old")[0]
    SqliteVecStore().ensure(signature="test:hash:8", dim=8)
    try:
        call_command("migrate", "memory", "0004", verbosity=0)
        with connection.cursor() as cursor:
            for text in ("(2024-02-02) Maya: Did you get the cat yet?", "(2024-02-02) Tom: Yes! Pickle."):
                cursor.execute(
                    "INSERT INTO memories (uuid, owner_id, session_id, type, content, metadata, created_at, "
                    "updated_at, needs_reindex, access_count, importance) "
                    "VALUES (lower(hex(randomblob(16))), %s, '', 'episodic', %s, '{}', datetime('now'), "
                    "datetime('now'), 1, 0, 0.5)",
                    [owner.pk.hex, text],
                )
    finally:
        call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT content, context FROM memories ORDER BY seq")
        rows = cursor.fetchall()
        cursor.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'context : cat'")
        found = [row[0] for row in cursor.fetchall()]
        cursor.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES ('integrity-check', 1)")
    assert rows[1] == ("(2024-02-02) Tom: Yes! Pickle.", "(2024-02-02) Maya: Did you get the cat yet?")
    assert rows[0][1] is None and len(found) == 1
    assert "memory_vec_ad" in table_names() and "memory_turn_unlink" in table_names()
