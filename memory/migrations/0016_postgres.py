"""PostgreSQL's vector tables (memory/vectorstores/pg_column.py); nothing on SQLite.

SQLite makes ``memory_vec`` at run time (vec0 fixes the dimension at creation). On PostgreSQL the
vectors are a ``bytea`` column, whatever the dimension, so the tables are made here:

* ``memory_vec (rowid, owner_id, embedding)``: one vector per memory (``rowid`` = ``memories.seq``,
  named as vec0's so that the owner matrices read both with the same SQL);
* ``memory_vec_log``: the change log that keeps each process's owner matrices fresh, as on SQLite.
  A reader replays an owner's entries above the last id it saw, so an owner's ids must be committed
  in their order: the insert trigger takes a transaction lock per owner before it draws the id
  (writers of one owner queue there until commit; other owners' writers do not wait);
* deleting memories removes their vectors and logs each removal (by statement); TRUNCATE (Django's
  test flush) empties both tables.
"""

from django.db import migrations

from memory.migrations_ops import VendorSQL

# pg_advisory_xact_lock's first key: this lock family ("vl").
LOCK_FAMILY = 0x766C

PG_CREATE = [
    "CREATE TABLE memory_vec (rowid bigint PRIMARY KEY, owner_id uuid NOT NULL, embedding bytea NOT NULL)",
    "CREATE INDEX memory_vec_owner ON memory_vec (owner_id)",
    "CREATE TABLE memory_vec_log (id bigint PRIMARY KEY, owner_id uuid NOT NULL, seq bigint NOT NULL, "
    "embedding bytea)",
    "CREATE SEQUENCE memory_vec_log_id_seq OWNED BY memory_vec_log.id",
    "CREATE INDEX memory_vec_log_owner ON memory_vec_log (owner_id, id)",
    "CREATE FUNCTION memory_vec_log_turn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"PERFORM pg_advisory_xact_lock({LOCK_FAMILY}, hashtext(NEW.owner_id::text)); "
    "NEW.id := nextval('memory_vec_log_id_seq'); RETURN NEW; END $$",
    "CREATE TRIGGER memory_vec_log_turn BEFORE INSERT ON memory_vec_log FOR EACH ROW "
    "EXECUTE FUNCTION memory_vec_log_turn()",
    "CREATE FUNCTION memory_vec_ad() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "WITH removed AS (DELETE FROM memory_vec WHERE rowid IN (SELECT seq FROM gone) "
    "RETURNING owner_id, rowid) "
    "INSERT INTO memory_vec_log (owner_id, seq, embedding) "
    "SELECT owner_id, rowid, NULL FROM removed ORDER BY owner_id, rowid; RETURN NULL; END $$",
    "CREATE TRIGGER memory_vec_ad AFTER DELETE ON memories REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_vec_ad()",
    "CREATE FUNCTION memory_vec_clear() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "TRUNCATE memory_vec, memory_vec_log; RETURN NULL; END $$",
    "CREATE TRIGGER memory_vec_truncate AFTER TRUNCATE ON memories "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_vec_clear()",
]
PG_DROP = [
    "DROP TRIGGER IF EXISTS memory_vec_truncate ON memories",
    "DROP TRIGGER IF EXISTS memory_vec_ad ON memories",
    "DROP FUNCTION IF EXISTS memory_vec_clear()",
    "DROP FUNCTION IF EXISTS memory_vec_ad()",
    "DROP TABLE IF EXISTS memory_vec_log",
    "DROP FUNCTION IF EXISTS memory_vec_log_turn()",
    "DROP TABLE IF EXISTS memory_vec",
    "UPDATE memory_vec_meta SET active_dim = NULL, embedding_signature = NULL, vec_loaded = false",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0015_consolidation")]

    operations = [
        VendorSQL(
            sqlite=(migrations.RunSQL.noop, migrations.RunSQL.noop),
            postgresql=(PG_CREATE, PG_DROP),
        )
    ]
