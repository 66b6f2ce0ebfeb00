"""On PostgreSQL the migrations run forward and backward and leave none of their objects behind."""

import pytest
from django.core.management import call_command
from django.db import connection

from memory.models import ApiKey, Memory
from memory.retrieval.fts import postgres as fts_postgres

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="PostgreSQL's objects (tests/memory/test_migrations.py: SQLite's)",
    ),
]

OURS = ("memor", "memory_")


def objects() -> set[str]:
    """Our tables, functions, triggers and text search objects in the database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "UNION SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace "
            "UNION SELECT tgname FROM pg_trigger WHERE NOT tgisinternal "
            "UNION SELECT cfgname FROM pg_ts_config WHERE cfgnamespace = 'public'::regnamespace "
            "UNION SELECT dictname FROM pg_ts_dict WHERE dictnamespace = 'public'::regnamespace"
        )
        return {row[0] for row in cursor.fetchall()}


def test_migrating_memory_to_zero_and_back_leaves_nothing_behind():
    before = objects()
    assert {
        "memory_fts",
        "memory_fts_ai",
        "memory_fts_au",
        "memory_fts_ad",
        "memory_fts_words",
        "memory_fts_stem",
        "memory_turn_unlink",
        "memory_vec",
        "memory_vec_log",
        "memory_vec_ad",
        "memories_cognitive_ad",
    } <= before
    try:
        call_command("migrate", "memory", "zero", verbosity=0)
        assert {name for name in objects() if name.startswith(OURS)} == set()
    finally:
        call_command("migrate", verbosity=0)
    assert objects() == before


def test_migration_0005_links_existing_turns_and_indexes_their_context():
    """Turns stored before the turn context existed are linked when it arrives, and the index then
    holds the context (weight C)."""
    owner = ApiKey.issue(name="old")[0]
    try:
        call_command("migrate", "memory", "0004", verbosity=0)
        with connection.cursor() as cursor:
            for text in ("(2024-02-02) Maya: Did you get the cat yet?", "(2024-02-02) Tom: Yes! Pickle."):
                cursor.execute(
                    "INSERT INTO memories (uuid, owner_id, session_id, type, content, metadata, created_at, "
                    "updated_at, needs_reindex, access_count, importance) "
                    "VALUES (gen_random_uuid(), %s, '', 'episodic', %s, '{}', now(), now(), true, 0, 0.5)",
                    [owner.pk, text],
                )
    finally:
        call_command("migrate", verbosity=0)
    first, second = Memory.objects.order_by("seq")
    assert (second.context, second.context_seq) == (first.content, first.seq)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq FROM memory_fts WHERE document @@ to_tsquery('memory_fts', 'cat:C')",
        )
        assert [row[0] for row in cursor.fetchall()] == [second.seq]
    assert fts_postgres.integrity() == "ok"
