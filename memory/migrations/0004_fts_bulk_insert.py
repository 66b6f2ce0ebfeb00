"""Let bulk inserts index their rows in one statement.

The insert trigger now fires only while ``omniroute_fts_auto()`` is true.
That SQL function is registered on every connection by our database backend
(``omniroute.db``) and returns 1 unless the connection is inside
``memory.services.memories.fts_deferred()``, which inserts many rows and then
indexes them with one ``INSERT … SELECT`` — half the time of one trigger run
per row. A client without the function (another program opening the file)
gets "no such function" on insert: loud, never a silently missing index.
"""

from django.db import migrations

from memory.migrations_ops import VendorSQL

PLAIN = (
    "CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories BEGIN "
    "INSERT INTO memory_fts(rowid, content, key, owner_id) "
    "VALUES (new.seq, new.content, new.key, new.owner_id); END"
)
GATED = (
    "CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories WHEN omniroute_fts_auto() BEGIN "
    "INSERT INTO memory_fts(rowid, content, key, owner_id) "
    "VALUES (new.seq, new.content, new.key, new.owner_id); END"
)


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_vector_table_owner")]

    # PostgreSQL's insert trigger already indexes a whole statement at once (0002): nothing to gate.
    operations = [
        VendorSQL(
            sqlite=(
                ["DROP TRIGGER IF EXISTS memory_fts_ai", GATED],
                ["DROP TRIGGER IF EXISTS memory_fts_ai", PLAIN],
            ),
            postgresql=(migrations.RunSQL.noop, migrations.RunSQL.noop),
        )
    ]
