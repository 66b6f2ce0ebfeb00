"""FTS5 index over memories (content, key), keyed by the integer primary key.

External content: the text lives only in ``memories``; the triggers keep the
index in step. The owner is indexed too, so an owner-scoped search is a single
FTS query (``owner_id:"…" AND (…)``) and never makes the planner join the
memories table first (seconds at 1M rows). The update trigger fires only when
``content`` or ``key`` really change: bumping ``access_count`` on every
retrieval must not rewrite the index (reference B3). Dropping the virtual
table drops its shadow tables. PostgreSQL gets its own index (``PG_CREATE`` below).
"""

from django.db import migrations

from memory.migrations_ops import VendorSQL

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


# PostgreSQL: ``memory_fts`` is an ordinary table, one row per memory (``seq``), with the owner, a
# ``tsvector`` of the text columns (content weight A, key B, context C: memory/retrieval/fts/postgres.py
# maps them to bm25's column weights) and the document's length in tokens, for bm25. The text is cut
# into words on every non-alphanumeric character, as FTS5's unicode61 does, and stemmed by the Snowball
# English stemmer with no stop-word list (FTS5's porter drops no words either; the query side drops
# ours, memory.retrieval.relevance.STOP_WORDS). Inserts and deletes index whole statements through
# transition tables (one statement for a bulk import, as FTS5's deferred insert); an update re-indexes
# its row only when content, key or owner really changed (access counters never rewrite the index).
# TRUNCATE (Django's test flush) empties the index too.
PG_CREATE = [
    "CREATE TEXT SEARCH DICTIONARY memory_fts_stem (TEMPLATE = snowball, LANGUAGE = english)",
    "CREATE TEXT SEARCH CONFIGURATION memory_fts (COPY = simple)",
    "ALTER TEXT SEARCH CONFIGURATION memory_fts ALTER MAPPING FOR asciiword, word, numword, "
    "asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart WITH memory_fts_stem",
    "CREATE FUNCTION memory_fts_words(value text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE "
    "AS $$ SELECT to_tsvector('memory_fts'::regconfig, "
    "regexp_replace(coalesce(value, ''), '[^[:alnum:]]+', ' ', 'g')) $$",
    "CREATE FUNCTION memory_fts_document(content text, key text, context text) RETURNS tsvector "
    "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT setweight(memory_fts_words(content), 'A') "
    "|| setweight(memory_fts_words(key), 'B') || setweight(memory_fts_words(context), 'C') $$",
    "CREATE FUNCTION memory_fts_length(document tsvector) RETURNS integer LANGUAGE sql IMMUTABLE "
    "PARALLEL SAFE AS $$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest(document) $$",
    "CREATE TABLE memory_fts (seq bigint PRIMARY KEY, owner_id uuid NOT NULL, "
    "document tsvector NOT NULL, length integer NOT NULL)",
    "CREATE INDEX memory_fts_document_gin ON memory_fts USING gin (document)",
    "CREATE INDEX memory_fts_owner ON memory_fts (owner_id, length)",
    "CREATE FUNCTION memory_fts_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO memory_fts (seq, owner_id, document, length) "
    "SELECT a.seq, a.owner_id, d.document, memory_fts_length(d.document) FROM added AS a, "
    "LATERAL (SELECT memory_fts_document(a.content, a.key, NULL) AS document) AS d; "
    "RETURN NULL; END $$",
    "CREATE FUNCTION memory_fts_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "DECLARE document tsvector := memory_fts_document(NEW.content, NEW.key, NULL); BEGIN "
    "INSERT INTO memory_fts (seq, owner_id, document, length) "
    "VALUES (NEW.seq, NEW.owner_id, document, memory_fts_length(document)) ON CONFLICT (seq) DO UPDATE "
    "SET owner_id = EXCLUDED.owner_id, document = EXCLUDED.document, length = EXCLUDED.length; "
    "RETURN NULL; END $$",
    "CREATE FUNCTION memory_fts_forget() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "DELETE FROM memory_fts WHERE seq IN (SELECT seq FROM gone); RETURN NULL; END $$",
    "CREATE FUNCTION memory_fts_clear() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "TRUNCATE memory_fts; RETURN NULL; END $$",
    "CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_fts_add()",
    "CREATE TRIGGER memory_fts_au AFTER UPDATE OF content, key, owner_id ON memories FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.key IS DISTINCT FROM NEW.key "
    "OR OLD.owner_id IS DISTINCT FROM NEW.owner_id) EXECUTE FUNCTION memory_fts_change()",
    "CREATE TRIGGER memory_fts_ad AFTER DELETE ON memories REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_fts_forget()",
    "CREATE TRIGGER memory_fts_truncate AFTER TRUNCATE ON memories "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_fts_clear()",
    "INSERT INTO memory_fts (seq, owner_id, document, length) "
    "SELECT m.seq, m.owner_id, d.document, memory_fts_length(d.document) FROM memories AS m, "
    "LATERAL (SELECT memory_fts_document(m.content, m.key, NULL) AS document) AS d",
]
PG_DROP = [
    "DROP TRIGGER IF EXISTS memory_fts_truncate ON memories",
    "DROP TRIGGER IF EXISTS memory_fts_ad ON memories",
    "DROP TRIGGER IF EXISTS memory_fts_au ON memories",
    "DROP TRIGGER IF EXISTS memory_fts_ai ON memories",
    "DROP FUNCTION IF EXISTS memory_fts_clear()",
    "DROP FUNCTION IF EXISTS memory_fts_forget()",
    "DROP FUNCTION IF EXISTS memory_fts_change()",
    "DROP FUNCTION IF EXISTS memory_fts_add()",
    "DROP TABLE IF EXISTS memory_fts",
    "DROP FUNCTION IF EXISTS memory_fts_length(tsvector)",
    "DROP FUNCTION IF EXISTS memory_fts_document(text, text, text)",
    "DROP FUNCTION IF EXISTS memory_fts_words(text)",
    "DROP TEXT SEARCH CONFIGURATION IF EXISTS memory_fts",
    "DROP TEXT SEARCH DICTIONARY IF EXISTS memory_fts_stem",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    # SQLite: the statements of CREATE in order, each one's reverse in the opposite order.
    operations = [
        VendorSQL(
            sqlite=(
                [sql for sql, _reverse in CREATE],
                [reverse for _sql, reverse in reversed(CREATE) if reverse != migrations.RunSQL.noop],
            ),
            postgresql=(PG_CREATE, PG_DROP),
        )
    ]
