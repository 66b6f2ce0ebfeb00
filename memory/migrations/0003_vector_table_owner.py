"""Hand the runtime-managed vector table to the migration graph for teardown.

``memory_vec`` (sqlite-vec) is created and rebuilt by
``memory.vectorstores.sqlite_vec`` from the embedding signature, not here: its
dimension is only known once an embedding source has answered. Reversing this
migration drops it and its trigger so that migrating back to zero leaves no
table behind.
"""

from django.db import migrations

from memory.migrations_ops import VendorSQL


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_fts")]

    # PostgreSQL's vector tables are made by 0016_postgres (a bytea column has no fixed dimension), whose
    # reverse drops them; only the signature is forgotten here.
    operations = [
        VendorSQL(
            sqlite=(
                migrations.RunSQL.noop,
                [
                    "DROP TRIGGER IF EXISTS memory_vec_ad",
                    "DROP TABLE IF EXISTS memory_vec",
                    "DROP TABLE IF EXISTS memory_vec_log",
                    "UPDATE memory_vec_meta SET active_dim = NULL, embedding_signature = NULL, vec_loaded = 0",
                ],
            ),
            postgresql=(
                migrations.RunSQL.noop,
                [
                    "UPDATE memory_vec_meta SET active_dim = NULL, embedding_signature = NULL, "
                    "vec_loaded = false"
                ],
            ),
        )
    ]
