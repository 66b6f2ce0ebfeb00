"""The sqlite-vec store: a ``vec0`` table whose rowid is ``memories.seq``.

vec0 quirks handled here:
- the table's dimension and element type are fixed at creation, so it follows
  the embedding signature kept in ``VectorMeta``; a new signature drops and
  recreates the table and marks every memory ``needs_reindex``;
- there is no ``INSERT OR REPLACE``: an upsert is a delete then an insert;
- deletes do not reclaim space in the chunk files;
- without a partition key, a per-owner KNN reads every owner's vectors
  (metadata columns and ``rowid IN (…)`` filters are applied after the scan),
  so ``owner_id`` is a ``partition key``; each partition allocates whole
  chunks, so the default ``chunk_size`` (1024) would make thousands of small
  owners cost ~1000x their data: we use a small chunk instead
  (``CHUNK_SIZE``, a multiple of 8);
- with a partition key, ``k`` bounds the hits among the matched partitions.

Searches run on the in-process owner matrices of ``memory.vectorstores.owner_matrix``; vec0's KNN
remains the path for owners too large for the cache budget (``MEMORY_VEC_CACHE_MB``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from memory import dialect
from memory.models import ApiKey, Memory, VectorMeta
from memory.vectorstores.base import VectorHit, VectorItem, VectorStore
from memory.vectorstores.owner_matrix import (
    INT8_SCALE,
    LOG,
    MATRIX_CACHE,
    TABLE,
    StoreState,
    best_hits,
    decode,
)
from memory.visibility import Visibility, owner_hex

logger = logging.getLogger("memory.vectorstores")

# vec0's chunk_size (vectors per chunk file, a multiple of 8), fixed when the table is created. Each
# owner partition allocates whole chunks, so vec0's 1024 makes a small owner cost ~1000x its data;
# with 64 an owner wastes at most 63 slots. Searches scan the in-process matrices, not the chunks.
CHUNK_SIZE = 64


def table_exists(cursor: CursorWrapper, name: str = TABLE) -> bool:
    # Through memory.dialect: the PostgreSQL store (pg_column.py) shares this module's methods.
    return dialect.table_exists(cursor, name)


class SqliteVecStore(VectorStore):
    name = "sqlite-vec"
    in_database = True

    def __init__(self, *, quantization: str | None = None, chunk_size: int | None = None) -> None:
        self.quantization = quantization or settings.MEMORY_VEC_QUANTIZATION
        self.chunk_size = chunk_size or CHUNK_SIZE

    def full_signature(self, signature: str) -> str:
        return f"{signature}:int8" if self.quantization == "int8" else signature

    def is_int8(self) -> bool:
        return StoreState.read().int8

    def signature(self) -> str | None:
        return StoreState.read().signature

    @transaction.atomic
    def ensure(self, *, signature: str, dim: int) -> bool:
        wanted = self.full_signature(signature)
        meta = VectorMeta.load()
        with connection.cursor() as cursor:
            if (
                meta.embedding_signature == wanted
                and meta.active_dim == dim
                and table_exists(cursor)
                and table_exists(cursor, LOG)
            ):
                return False
            element = "int8" if self.quantization == "int8" else "float"
            cursor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_ad")
            cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
            cursor.execute(f"DROP TABLE IF EXISTS {LOG}")
            cursor.execute(
                f"CREATE VIRTUAL TABLE {TABLE} USING vec0("
                f"owner_id text partition key, "
                f"embedding {element}[{int(dim)}] distance_metric=cosine, "
                f"chunk_size={int(self.chunk_size)})"
            )
            cursor.execute(
                f"CREATE TABLE {LOG} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "owner_id TEXT NOT NULL, seq INTEGER NOT NULL, embedding BLOB)"
            )
            cursor.execute(f"CREATE INDEX {LOG}_owner ON {LOG} (owner_id, id)")
            cursor.execute(
                f"CREATE TRIGGER {TABLE}_ad AFTER DELETE ON memories BEGIN "
                f"DELETE FROM {TABLE} WHERE rowid = old.seq; "
                f"INSERT INTO {LOG} (owner_id, seq, embedding) VALUES (old.owner_id, old.seq, NULL); END"
            )
        self._adopt(meta, wanted, dim, "rebuilt")
        return True

    @staticmethod
    def _adopt(meta: VectorMeta, wanted: str, dim: int, done: str) -> None:
        """After the table was emptied for ``wanted``: record its signature and dimension, forget the
        cached matrices and mark every memory for re-embedding."""
        meta.active_dim = dim
        meta.embedding_signature = wanted
        meta.last_reset_at = timezone.now()
        meta.vec_loaded = True
        meta.save()
        MATRIX_CACHE.clear()
        reset = Memory.objects.update(needs_reindex=True)
        logger.info("vector table %s for %s (dim %s); %s memories to re-embed", done, wanted, dim, reset)

    def _encode(self, vector: np.ndarray, int8: bool) -> bytes:
        vector = np.asarray(vector, dtype=np.float32)
        if int8:
            return np.clip(np.rint(vector * INT8_SCALE), -127, 127).astype(np.int8).tobytes()
        return vector.tobytes()

    @transaction.atomic
    def upsert(self, items: Sequence[VectorItem], *, new: bool = False) -> None:
        """``new=True``: the caller knows none of these rows has a vector yet."""
        if not items:
            return
        int8 = self.is_int8()
        value = "vec_int8(%s)" if int8 else "%s"
        rows = [(int(i.seq), owner_hex(i.owner_id), self._encode(i.vector, int8)) for i in items]
        with connection.cursor() as cursor:
            existing = [] if new else self._existing(cursor, [row[0] for row in rows])
            for start in range(0, len(existing), 500):
                part = existing[start : start + 500]
                marks = ",".join(["%s"] * len(part))
                cursor.execute(f"DELETE FROM {TABLE} WHERE rowid IN ({marks})", part)
            cursor.executemany(
                f"INSERT INTO {TABLE}(rowid, owner_id, embedding) VALUES (%s, %s, {value})", rows
            )
            cursor.executemany(f"INSERT INTO {LOG} (seq, owner_id, embedding) VALUES (%s, %s, %s)", rows)

    def _existing(self, cursor: CursorWrapper, seqs: list[int]) -> list[int]:
        """The ``seqs`` that already have a vector (the delete half of an upsert).

        Looked up in vec0's ``<table>_rowids`` shadow table, an ordinary rowid
        table: deleting through vec0 costs as much for a missing row as for a
        present one, and bulk ingestion is nearly all new rows.
        """
        found: list[int] = []
        try:
            for start in range(0, len(seqs), 500):
                part = seqs[start : start + 500]
                marks = ",".join(["%s"] * len(part))
                cursor.execute(f"SELECT rowid FROM {TABLE}_rowids WHERE rowid IN ({marks})", part)
                found.extend(int(row[0]) for row in cursor.fetchall())
        except Exception as exc:  # a future sqlite-vec may rename its shadow tables
            logger.warning("sqlite-vec shadow table lookup failed (%s); deleting every rowid", exc)
            return list(seqs)
        return found

    @transaction.atomic
    def delete(self, seqs: Iterable[int]) -> None:
        seqs = [int(s) for s in seqs]
        with connection.cursor() as cursor:
            if not table_exists(cursor):
                return
            for start in range(0, len(seqs), 500):
                part = seqs[start : start + 500]
                marks = ",".join(["%s"] * len(part))
                cursor.execute(
                    f"INSERT INTO {LOG} (owner_id, seq, embedding) "
                    f"SELECT owner_id, seq, NULL FROM memories WHERE seq IN ({marks})",
                    part,
                )
                cursor.execute(f"DELETE FROM {TABLE} WHERE rowid IN ({marks})", part)

    def search(self, *, vector: np.ndarray, k: int, visibility: Visibility) -> list[VectorHit]:
        """The nearest visible vectors. The owners' partitions are scanned for the ``candidates``
        nearest, whose rows are then checked against the other filters (expiry, session, retention)
        in one primary-key query; when too many of them are hidden to leave ``k`` (a session, a short
        retention), the visible rows are listed first and only they are scored."""
        if k <= 0 or visibility.nobody:
            return []
        state = StoreState.read()
        if state.signature is None:  # never built
            return []
        query = np.asarray(vector, dtype=np.float32)
        owners = visibility.owner_hex
        if owners is None:
            # Partitions are per owner: every owner is every key (the health probe's left out).
            owners = [owner_hex(pk) for pk in ApiKey.objects.values_list("pk", flat=True)]
        # Room for the hits the filters remove, so that one pass nearly always suffices.
        candidates = k * 3 if visibility.session_id else k + 10
        with connection.cursor() as cursor:
            nearest = self._nearest(cursor, owners, query, candidates, state)
            visible = self._visible(cursor, visibility, [hit.seq for hit in nearest])
            kept = [hit for hit in nearest if hit.seq in visible]
            if len(kept) >= k or len(nearest) < candidates:
                return kept[:k]
            return self._nearest_visible(cursor, visibility, owners, query, k, state)

    def _nearest(
        self, cursor: CursorWrapper, owners: list[str], query: np.ndarray, k: int, state: StoreState
    ) -> list[VectorHit]:
        """The ``k`` nearest vectors of ``owners``, whatever their rows say."""
        hits: list[VectorHit] = []
        for owner in owners:
            entry = MATRIX_CACHE.get(owner, state, cursor)
            if entry is not None:
                with entry.lock:
                    hits.extend(entry.top_k(query, k))
            else:
                hits.extend(self._knn(cursor, owner, query, k, state.int8))
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:k]

    def _knn(
        self, cursor: CursorWrapper, owner: str, query: np.ndarray, k: int, int8: bool
    ) -> list[VectorHit]:
        value = "vec_int8(%s)" if int8 else "%s"
        cursor.execute(
            f"SELECT rowid, distance FROM {TABLE} "
            f"WHERE embedding MATCH {value} AND k = %s AND owner_id = %s ORDER BY distance",
            [self._encode(query, int8), int(k), owner],
        )
        return [VectorHit(seq=row[0], score=1.0 - float(row[1])) for row in cursor.fetchall()]

    def _visible(self, cursor: CursorWrapper, visibility: Visibility, seqs: list[int]) -> set[int]:
        if not seqs:
            return set()
        conditions, params = visibility.sql("m")
        cursor.execute(
            f"SELECT m.seq FROM memories AS m WHERE m.seq IN ({', '.join(['%s'] * len(seqs))}) "
            f"AND {' AND '.join(conditions)}",
            [*seqs, *params],
        )
        return {int(row[0]) for row in cursor.fetchall()}

    def _nearest_visible(
        self,
        cursor: CursorWrapper,
        visibility: Visibility,
        owners: list[str],
        query: np.ndarray,
        k: int,
        state: StoreState,
    ) -> list[VectorHit]:
        """The ``k`` nearest among the visible rows of ``owners``, listed first (exact, whatever the
        share of hidden rows)."""
        # The same filters (and subclass, with whatever it adds) for the owners listed here.
        conditions, params = replace(visibility, owner_ids=owners).sql("m")
        cursor.execute(
            f"SELECT m.owner_id, m.seq FROM memories AS m WHERE {' AND '.join(conditions)}", params
        )
        by_owner: dict[str, list[int]] = {}
        for owner, seq in cursor.fetchall():
            by_owner.setdefault(owner_hex(owner), []).append(int(seq))
        hits: list[VectorHit] = []
        for owner, seqs in by_owner.items():
            entry = MATRIX_CACHE.get(owner, state, cursor)
            if entry is not None:
                with entry.lock:
                    hits.extend(entry.top_k_among(query, k, np.asarray(seqs, dtype=np.int64)))
            else:
                hits.extend(self._scan(cursor, seqs, query, k, state.int8))
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:k]

    def _scan(
        self, cursor: CursorWrapper, seqs: list[int], query: np.ndarray, k: int, int8: bool
    ) -> list[VectorHit]:
        """The ``k`` best of these rows' vectors, read from the table (owners too large for the cache)."""
        found: list[int] = []
        vectors: list[np.ndarray] = []
        for start in range(0, len(seqs), 500):
            part = seqs[start : start + 500]
            cursor.execute(
                f"SELECT rowid, embedding FROM {TABLE} WHERE rowid IN ({', '.join(['%s'] * len(part))})", part
            )
            for seq, blob in cursor.fetchall():
                found.append(int(seq))
                vectors.append(decode(blob, int8))
        if not found:
            return []
        return best_hits(np.asarray(found, dtype=np.int64), np.stack(vectors) @ query, k)

    def owner_vectors(self, owner_id: uuid.UUID | str) -> tuple[np.ndarray, np.ndarray] | None:
        """The owner's vectors from its in-process matrix (loaded or replayed as a search would), or,
        for an owner too large for the cache, read from the table (the PostgreSQL column store, a
        subclass, shares it)."""
        state = StoreState.read()
        owner = owner_hex(owner_id)
        with connection.cursor() as cursor:
            if state.signature is None or not state.dim or not table_exists(cursor):
                return np.zeros(0, dtype=np.int64), np.zeros((0, state.dim or 0), dtype=np.float32)
            entry = MATRIX_CACHE.get(owner, state, cursor)
            if entry is not None:
                with entry.lock:
                    return entry.seqs[: entry.size].copy(), entry.matrix[: entry.size].copy()
            cursor.execute(f"SELECT rowid, embedding FROM {TABLE} WHERE owner_id = %s", [owner])
            rows = cursor.fetchall()
        seqs = np.asarray([int(seq) for seq, _ in rows], dtype=np.int64)
        matrix = np.zeros((len(rows), state.dim), dtype=np.float32)
        for i, (_, blob) in enumerate(rows):
            matrix[i] = decode(blob, state.int8)
        return seqs, matrix

    def compact_log(self) -> int:
        """Drop the change log (after a full reindex); every cache reloads once."""
        with transaction.atomic(), connection.cursor() as cursor:
            if not table_exists(cursor, LOG):
                return 0
            cursor.execute(f"DELETE FROM {LOG}")
            removed = cursor.rowcount
            VectorMeta.objects.filter(id=1).update(last_reset_at=timezone.now())
        MATRIX_CACHE.clear()
        return removed

    def count(self) -> int:
        with connection.cursor() as cursor:
            if not table_exists(cursor):
                return 0
            cursor.execute(f"SELECT count(*) FROM {TABLE}")
            return int(cursor.fetchone()[0])

    def seqs(self) -> set[int]:
        with connection.cursor() as cursor:
            if not table_exists(cursor):
                return set()
            cursor.execute(f"SELECT rowid FROM {TABLE}")
            return {int(row[0]) for row in cursor.fetchall()}
