"""FTS5 index over memories (content, key), keyed by the integer primary key.

External content: the text lives only in ``memories``; the triggers keep the
index in step. The owner is indexed too, so an owner-scoped search is a single
FTS query (``owner_id:"…" AND (…)``) and never makes the planner join the
memories table first (seconds at 1M rows). The update trigger fires only when
``content`` or ``key`` really change: bumping ``access_count`` on every
retrieval must not rewrite the index (reference B3). Dropping the virtual
table drops its shadow tables.
"""

from django.db import migrations

FTS_COLUMNS = "content, key, owner_id"

CREATE = [
    (
        "CREATE VIRTUAL TABLE memory_fts USING fts5("
        "content, key, owner_id, content='memories', content_rowid='seq', "
        "tokenize='porter unicode61 remove_diacritics 2')",
        "DROP TABLE IF EXISTS memory_fts",
    ),
    (
        "CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories BEGIN "
        f"INSERT INTO memory_fts(rowid, {FTS_COLUMNS}) "
        "VALUES (new.seq, new.content, new.key, new.owner_id); END",
        "DROP TRIGGER IF EXISTS memory_fts_ai",
    ),
    (
        "CREATE TRIGGER memory_fts_ad AFTER DELETE ON memories BEGIN "
        f"INSERT INTO memory_fts(memory_fts, rowid, {FTS_COLUMNS}) "
        "VALUES ('delete', old.seq, old.content, old.key, old.owner_id); END",
        "DROP TRIGGER IF EXISTS memory_fts_ad",
    ),
    (
        "CREATE TRIGGER memory_fts_au AFTER UPDATE OF content, key ON memories "
        "WHEN old.content IS NOT new.content OR old.key IS NOT new.key BEGIN "
        f"INSERT INTO memory_fts(memory_fts, rowid, {FTS_COLUMNS}) "
        "VALUES ('delete', old.seq, old.content, old.key, old.owner_id); "
        f"INSERT INTO memory_fts(rowid, {FTS_COLUMNS}) "
        "VALUES (new.seq, new.content, new.key, new.owner_id); END",
        "DROP TRIGGER IF EXISTS memory_fts_au",
    ),
    (
        "INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')",
        migrations.RunSQL.noop,
    ),
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [migrations.RunSQL(sql, reverse_sql) for sql, reverse_sql in CREATE]
