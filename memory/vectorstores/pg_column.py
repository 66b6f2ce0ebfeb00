"""The PostgreSQL vector store: a plain ``bytea`` column, searched through the in-process owner matrices.

Debian's PostgreSQL has no pgvector (docs/deployment.md "PostgreSQL"), so the vectors are stored as
bytes in ``memory_vec (rowid, owner_id, embedding)`` (migration 0016; ``rowid`` is ``memories.seq``)
and searched exactly as on SQLite: each process keeps a numpy matrix per owner
(``memory.vectorstores.owner_matrix``), loaded once from the table and kept fresh from
``memory_vec_log``. The store is in the database: vectors are written in the caller's transaction,
and deleting memories deletes their vectors and logs it (migration 0016's trigger), whatever deletes
them.

What differs from sqlite-vec (:class:`~memory.vectorstores.sqlite_vec.SqliteVecStore`, whose search
and bookkeeping this store shares):

* the tables exist from the migration on; a new embedding signature empties them instead of
  recreating a table with another dimension;
* an upsert is one ``INSERT … ON CONFLICT`` (vec0 has no replace);
* an owner too large for the cache budget (``MEMORY_VEC_CACHE_MB``) is scanned from the table in
  numpy, where sqlite-vec runs vec0's KNN: PostgreSQL has no vector search of its own here;
* the log's ids of one owner are committed in order by the migration's insert trigger (a lock per
  owner until commit), which the replay needs with more than one writer;
* the visibility check of the nearest rows reads them by primary key first, whatever the planner's
  statistics say (``_visible``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from memory.models import VectorMeta
from memory.vectorstores.base import VectorHit, VectorItem
from memory.vectorstores.owner_matrix import LOG, TABLE, best_hits, decode
from memory.vectorstores.sqlite_vec import SqliteVecStore
from memory.visibility import Visibility, owner_hex

logger = logging.getLogger("memory.vectorstores")

# Rows per statement when a large owner is read from the table.
SCAN_CHUNK = 5000


class PgColumnStore(SqliteVecStore):
    """Vectors in a PostgreSQL ``bytea`` column; the same contract as sqlite-vec's store."""

    name = "pg-column"
    in_database = True

    @transaction.atomic
    def ensure(self, *, signature: str, dim: int) -> bool:
        wanted = self.full_signature(signature)
        meta = VectorMeta.load()
        if meta.embedding_signature == wanted and meta.active_dim == dim:
            return False
        with connection.cursor() as cursor:
            # DELETE, not TRUNCATE: other transactions may be reading, and it stays in this one.
            cursor.execute(f"DELETE FROM {TABLE}")
            cursor.execute(f"DELETE FROM {LOG}")
        self._adopt(meta, wanted, dim, "emptied")
        return True

    @transaction.atomic
    def upsert(self, items: Sequence[VectorItem], *, new: bool = False) -> None:
        if not items:
            return
        int8 = self.is_int8()
        # In owner order: the log's insert trigger takes each owner's lock, always in the same order.
        rows = sorted(
            ((int(i.seq), owner_hex(i.owner_id), self._encode(i.vector, int8)) for i in items),
            key=lambda row: (row[1], row[0]),
        )
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {TABLE} (rowid, owner_id, embedding) VALUES (%s, %s, %s) "
                "ON CONFLICT (rowid) DO UPDATE SET owner_id = EXCLUDED.owner_id, embedding = EXCLUDED.embedding",
                rows,
            )
            cursor.executemany(f"INSERT INTO {LOG} (seq, owner_id, embedding) VALUES (%s, %s, %s)", rows)

    @transaction.atomic
    def delete(self, seqs: Iterable[int]) -> None:
        seqs = [int(s) for s in seqs]
        with connection.cursor() as cursor:
            for start in range(0, len(seqs), 500):
                part = seqs[start : start + 500]
                cursor.execute(
                    f"WITH removed AS (DELETE FROM {TABLE} WHERE rowid = ANY(%s) RETURNING owner_id, rowid) "
                    f"INSERT INTO {LOG} (owner_id, seq, embedding) "
                    "SELECT owner_id, rowid, NULL FROM removed ORDER BY owner_id, rowid",
                    [part],
                )

    def _visible(self, cursor: CursorWrapper, visibility: Visibility, seqs: list[int]) -> set[int]:
        """Which of the nearest ``seqs`` the filters let through. The candidates are read by primary key
        before the filters apply (a materialised CTE): on tables without statistics (never analysed, as
        on a server without autovacuum right after a bulk load) the planner took the owner's index
        instead and read every row of the owner to keep 20 (docs/deployment.md "Scale figures")."""
        if not seqs:
            return set()
        conditions, params = visibility.sql("m")
        cursor.execute(
            f"WITH candidates AS MATERIALIZED (SELECT * FROM memories WHERE seq = ANY(%s)) "
            f"SELECT m.seq FROM candidates AS m WHERE {' AND '.join(conditions)}",
            [[int(seq) for seq in seqs], *params],
        )
        return {int(row[0]) for row in cursor.fetchall()}

    def _knn(
        self, cursor: CursorWrapper, owner: str, query: np.ndarray, k: int, int8: bool
    ) -> list[VectorHit]:
        """The ``k`` nearest of an owner too large for the cache: its vectors read in chunks (by
        ``rowid``, through the primary key) and scored in numpy, keeping the best ``k`` of each."""
        best: list[VectorHit] = []
        after = -1
        while True:
            cursor.execute(
                f"SELECT rowid, embedding FROM {TABLE} WHERE owner_id = %s AND rowid > %s "
                "ORDER BY rowid LIMIT %s",
                [owner, after, SCAN_CHUNK],
            )
            rows = cursor.fetchall()
            if not rows:
                break
            seqs = np.asarray([int(seq) for seq, _ in rows], dtype=np.int64)
            matrix = np.stack([decode(bytes(blob), int8) for _, blob in rows])
            best = sorted([*best, *best_hits(seqs, matrix @ query, k)], key=lambda h: h.score, reverse=True)[
                :k
            ]
            after = int(seqs[-1])
        return best
