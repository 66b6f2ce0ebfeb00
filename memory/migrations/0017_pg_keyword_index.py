"""PostgreSQL's keyword postings (memory/retrieval/fts/postgres.py); nothing on SQLite.

``memory_fts_terms`` holds one row per (document, lexeme) of ``memory_fts``: the owner, the lexeme,
its weighted frequency (content 1.0, key 0.5, context 0.5: tsvector weights A, B, C, as bm25's
column weights) and the document's length. Its btree index ``(owner_id, lexeme)`` carries the
rest, so a search reads a query's postings for one owner from the index alone, instead of
unnesting every matched ``tsvector`` (270 ms at 100k memories of one owner). Triggers on
``memory_fts`` keep it exact, by statement: inserts add postings, deletes drop them, an update
(0002's ``ON CONFLICT`` re-index) replaces its rows', TRUNCATE empties it.
"""

from django.db import migrations

from memory.migrations_ops import VendorSQL

_POSTINGS = (
    "INSERT INTO memory_fts_terms (seq, lexeme, owner_id, tf, length) "
    "SELECT d.seq, e.lexeme, d.owner_id, "
    "1.0 * cardinality(array_positions(e.weights, 'A')) + 0.5 * cardinality(array_positions(e.weights, 'B')) "
    "+ 0.5 * cardinality(array_positions(e.weights, 'C')), d.length "
    "FROM {rows} AS d, LATERAL unnest(d.document) AS e"
)

PG_CREATE = [
    "CREATE TABLE memory_fts_terms (seq bigint NOT NULL, lexeme text NOT NULL, owner_id uuid NOT NULL, "
    "tf float8 NOT NULL, length integer NOT NULL, PRIMARY KEY (seq, lexeme))",
    "CREATE FUNCTION memory_fts_terms_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"{_POSTINGS.format(rows='added')}; RETURN NULL; END $$",
    "CREATE FUNCTION memory_fts_terms_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "DELETE FROM memory_fts_terms WHERE seq IN (SELECT seq FROM stale); "
    f"{_POSTINGS.format(rows='fresh')}; RETURN NULL; END $$",
    "CREATE FUNCTION memory_fts_terms_forget() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "DELETE FROM memory_fts_terms WHERE seq IN (SELECT seq FROM gone); RETURN NULL; END $$",
    "CREATE FUNCTION memory_fts_terms_clear() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "TRUNCATE memory_fts_terms; RETURN NULL; END $$",
    "CREATE TRIGGER memory_fts_terms_ai AFTER INSERT ON memory_fts REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_fts_terms_add()",
    "CREATE TRIGGER memory_fts_terms_au AFTER UPDATE ON memory_fts "
    "REFERENCING OLD TABLE AS stale NEW TABLE AS fresh FOR EACH STATEMENT "
    "EXECUTE FUNCTION memory_fts_terms_change()",
    "CREATE TRIGGER memory_fts_terms_ad AFTER DELETE ON memory_fts REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_fts_terms_forget()",
    "CREATE TRIGGER memory_fts_terms_clear AFTER TRUNCATE ON memory_fts "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_fts_terms_clear()",
    _POSTINGS.format(rows="memory_fts"),
    "CREATE INDEX memory_fts_terms_owner ON memory_fts_terms (owner_id, lexeme) INCLUDE (seq, tf, length)",
    "ANALYZE memory_fts_terms",
]
PG_DROP = [
    "DROP TRIGGER IF EXISTS memory_fts_terms_clear ON memory_fts",
    "DROP TRIGGER IF EXISTS memory_fts_terms_ad ON memory_fts",
    "DROP TRIGGER IF EXISTS memory_fts_terms_au ON memory_fts",
    "DROP TRIGGER IF EXISTS memory_fts_terms_ai ON memory_fts",
    "DROP FUNCTION IF EXISTS memory_fts_terms_clear()",
    "DROP FUNCTION IF EXISTS memory_fts_terms_forget()",
    "DROP FUNCTION IF EXISTS memory_fts_terms_change()",
    "DROP FUNCTION IF EXISTS memory_fts_terms_add()",
    "DROP TABLE IF EXISTS memory_fts_terms",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0016_postgres")]

    operations = [
        VendorSQL(
            sqlite=(migrations.RunSQL.noop, migrations.RunSQL.noop),
            postgresql=(PG_CREATE, PG_DROP),
        )
    ]
