"""Conversation turns carry the turn before them as keyword context.

A memory written as a turn — ``(2024-03-09) Maya: Yes! Her name is Pickle.`` — often answers a question
whose words are in the turn before it (``Tom: Did you get the cat?``). ``context`` holds the content of
the owner's previous memory when both are turns of the same day and session (``context_seq`` is that
memory); FTS5 indexes it as a third, lower-weighted column. Triggers keep it true: deleting the previous
memory empties the context, editing it updates the context. The FTS table is rebuilt with the new
column; the insert and update triggers stay gated by ``omniroute_fts_auto()`` (migration 0004) so that
bulk inserts link and index their rows in two statements.

Both fields are nullable: adding a column with a default would make Django rebuild ``memories``, and
with it lose the triggers that other tables (sqlite-vec's) keep on it.
"""

from django.db import migrations, models

from memory.migrations_ops import VendorSQL

# As memory.services.turns.LINK_SQL when this migration was written (migrations never import app code).
LINK_SQL = (
    "UPDATE memories AS m SET context = p.content, context_seq = p.seq FROM memories AS p "
    "WHERE ({rows}) "
    "AND m.content GLOB '([0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]) ?*: *' "
    "AND p.seq = (SELECT max(q.seq) FROM memories AS q WHERE q.owner_id = m.owner_id AND q.seq < m.seq) "
    "AND p.session_id = m.session_id "
    "AND substr(p.content, 1, 13) = substr(m.content, 1, 13) "
    "AND p.content GLOB '([0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]) ?*: *'"
)

OLD_COLUMNS = "content, key, owner_id"
NEW_COLUMNS = "content, key, context, owner_id"


def _fts(columns: str, *, gated_update: bool) -> list[str]:
    values = ", ".join(f"new.{c}" for c in columns.split(", "))
    old_values = ", ".join(f"old.{c}" for c in columns.split(", "))
    watched = columns.replace(", owner_id", "")
    changed = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched.split(", "))
    gate = "omniroute_fts_auto() AND " if gated_update else ""
    return [
        "CREATE VIRTUAL TABLE memory_fts USING fts5("
        f"{columns}, content='memories', content_rowid='seq', "
        "tokenize='porter unicode61 remove_diacritics 2')",
        "CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories WHEN omniroute_fts_auto() BEGIN "
        f"INSERT INTO memory_fts(rowid, {columns}) VALUES (new.seq, {values}); END",
        "CREATE TRIGGER memory_fts_ad AFTER DELETE ON memories BEGIN "
        f"INSERT INTO memory_fts(memory_fts, rowid, {columns}) VALUES ('delete', old.seq, {old_values}); END",
        f"CREATE TRIGGER memory_fts_au AFTER UPDATE OF {watched} ON memories "
        f"WHEN {gate}({changed}) BEGIN "
        f"INSERT INTO memory_fts(memory_fts, rowid, {columns}) VALUES ('delete', old.seq, {old_values}); "
        f"INSERT INTO memory_fts(rowid, {columns}) VALUES (new.seq, {values}); END",
        "INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')",
    ]


DROP_FTS = [
    "DROP TRIGGER IF EXISTS memory_fts_ai",
    "DROP TRIGGER IF EXISTS memory_fts_ad",
    "DROP TRIGGER IF EXISTS memory_fts_au",
    "DROP TABLE IF EXISTS memory_fts",
]
TURN_TRIGGERS = [
    "CREATE TRIGGER memory_turn_unlink AFTER DELETE ON memories BEGIN "
    "UPDATE memories SET context = NULL, context_seq = NULL WHERE context_seq = old.seq; END",
    "CREATE TRIGGER memory_turn_follow AFTER UPDATE OF content ON memories "
    "WHEN old.content IS NOT new.content BEGIN "
    "UPDATE memories SET context = new.content WHERE context_seq = new.seq; END",
]
DROP_TURN_TRIGGERS = [
    "DROP TRIGGER IF EXISTS memory_turn_unlink",
    "DROP TRIGGER IF EXISTS memory_turn_follow",
]


# PostgreSQL: the same link in its own regular expressions; the index functions of 0002 take the
# context column, the update trigger watches it, and the turn triggers are PL/pgSQL (deletes by
# statement, through a transition table).
PG_TURN = r"'^\([0-9]{4}-[0-9]{2}-[0-9]{2}\) .+: '"
PG_LINK_SQL = (
    "UPDATE memories AS m SET context = p.content, context_seq = p.seq FROM memories AS p "
    "WHERE ({rows}) "
    f"AND m.content ~ {PG_TURN} "
    "AND p.seq = (SELECT max(q.seq) FROM memories AS q WHERE q.owner_id = m.owner_id AND q.seq < m.seq) "
    "AND p.session_id = m.session_id "
    "AND substr(p.content, 1, 13) = substr(m.content, 1, 13) "
    f"AND p.content ~ {PG_TURN}"
)


def _pg_fts(context: str) -> list[str]:
    """0002's index functions and update trigger, with ``context`` (``NEW.context`` or ``NULL``)."""
    watched = "content, key, owner_id" + (", context" if context != "NULL" else "")
    changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in watched.split(", "))
    a_context = "a.context" if context != "NULL" else "NULL"
    m_context = "m.context" if context != "NULL" else "NULL"
    return [
        "CREATE OR REPLACE FUNCTION memory_fts_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "INSERT INTO memory_fts (seq, owner_id, document, length) "
        "SELECT a.seq, a.owner_id, d.document, memory_fts_length(d.document) FROM added AS a, "
        f"LATERAL (SELECT memory_fts_document(a.content, a.key, {a_context}) AS document) AS d; "
        "RETURN NULL; END $$",
        "CREATE OR REPLACE FUNCTION memory_fts_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"DECLARE document tsvector := memory_fts_document(NEW.content, NEW.key, {context}); BEGIN "
        "INSERT INTO memory_fts (seq, owner_id, document, length) "
        "VALUES (NEW.seq, NEW.owner_id, document, memory_fts_length(document)) ON CONFLICT (seq) DO UPDATE "
        "SET owner_id = EXCLUDED.owner_id, document = EXCLUDED.document, length = EXCLUDED.length; "
        "RETURN NULL; END $$",
        "DROP TRIGGER IF EXISTS memory_fts_au ON memories",
        f"CREATE TRIGGER memory_fts_au AFTER UPDATE OF {watched} ON memories FOR EACH ROW "
        f"WHEN ({changed}) EXECUTE FUNCTION memory_fts_change()",
        "TRUNCATE memory_fts",
        "INSERT INTO memory_fts (seq, owner_id, document, length) "
        "SELECT m.seq, m.owner_id, d.document, memory_fts_length(d.document) FROM memories AS m, "
        f"LATERAL (SELECT memory_fts_document(m.content, m.key, {m_context}) AS document) AS d",
    ]


PG_TURN_TRIGGERS = [
    "CREATE FUNCTION memory_turn_unlink() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "UPDATE memories SET context = NULL, context_seq = NULL WHERE context_seq IN (SELECT seq FROM gone); "
    "RETURN NULL; END $$",
    "CREATE TRIGGER memory_turn_unlink AFTER DELETE ON memories REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_turn_unlink()",
    "CREATE FUNCTION memory_turn_follow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "UPDATE memories SET context = NEW.content WHERE context_seq = NEW.seq; RETURN NULL; END $$",
    "CREATE TRIGGER memory_turn_follow AFTER UPDATE OF content ON memories FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION memory_turn_follow()",
]
PG_DROP_TURN_TRIGGERS = [
    "DROP TRIGGER IF EXISTS memory_turn_unlink ON memories",
    "DROP TRIGGER IF EXISTS memory_turn_follow ON memories",
    "DROP FUNCTION IF EXISTS memory_turn_unlink()",
    "DROP FUNCTION IF EXISTS memory_turn_follow()",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_fts_bulk_insert")]

    operations = [
        migrations.AddField("memory", "context", models.TextField(blank=True, null=True)),
        migrations.AddField("memory", "context_seq", models.BigIntegerField(blank=True, null=True)),
        migrations.AddIndex(
            "memory",
            models.Index(
                fields=["context_seq"],
                condition=models.Q(context_seq__isnull=False),
                name="memory_context_seq",
            ),
        ),
        VendorSQL(
            sqlite=(
                [*DROP_FTS, LINK_SQL.format(rows="1"), *_fts(NEW_COLUMNS, gated_update=True), *TURN_TRIGGERS],
                [
                    *DROP_TURN_TRIGGERS,
                    *DROP_FTS,
                    "UPDATE memories SET context = NULL, context_seq = NULL",
                    *_fts(OLD_COLUMNS, gated_update=False),
                ],
            ),
            postgresql=(
                [PG_LINK_SQL.replace("{rows}", "true"), *_pg_fts("NEW.context"), *PG_TURN_TRIGGERS],
                [
                    *PG_DROP_TURN_TRIGGERS,
                    "UPDATE memories SET context = NULL, context_seq = NULL",
                    *_pg_fts("NULL"),
                ],
            ),
        ),
    ]
