"""Migrations run forward and backward and leave no shadow tables behind."""

import pytest
from django.core.management import call_command
from django.db import connection

from memory.vectorstores.sqlite_vec import SqliteVecStore


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
