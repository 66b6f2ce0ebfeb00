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
  (``MEMORY_VEC_CHUNK_SIZE``, a multiple of 8);
- with a partition key, ``k`` bounds the hits among the matched partitions.
The delete trigger ``memory_vec_ad`` removes a memory's vector with its row,
in the same transaction, whatever deleted it (a service, a cascade, SQL).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory.models import Memory, VectorMeta
from memory.vectorstores.base import VectorHit, VectorItem, VectorStore

logger = logging.getLogger("memory.vectorstores")

TABLE = "memory_vec"
# Global int8 scale: components of L2-normalised 384-d vectors rarely exceed
# ±0.35, so x*362 spends the int8 range on the values that occur; a per-vector
# 'unit' quantisation (vec_quantize_int8) lost recall@20 0.97 → 0.86.
INT8_SCALE = 127 / 0.35


def table_exists(cursor) -> bool:
    cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [TABLE])
    return cursor.fetchone() is not None


def _as_uuid_hex(owner_id) -> str:
    return str(owner_id).replace("-", "")


class SqliteVecStore(VectorStore):
    name = "sqlite-vec"

    def __init__(self, *, quantization: str | None = None, chunk_size: int | None = None):
        self.quantization = quantization or settings.MEMORY_VEC_QUANTIZATION
        self.chunk_size = chunk_size or settings.MEMORY_VEC_CHUNK_SIZE

    # -- signature -----------------------------------------------------------
    def full_signature(self, signature: str) -> str:
        return f"{signature}:int8" if self.quantization == "int8" else signature

    def is_int8(self) -> bool:
        meta = VectorMeta.load()
        return bool(meta.embedding_signature and meta.embedding_signature.endswith(":int8"))

    @transaction.atomic
    def ensure(self, *, signature: str, dim: int) -> bool:
        wanted = self.full_signature(signature)
        meta = VectorMeta.load()
        with connection.cursor() as cursor:
            if meta.embedding_signature == wanted and meta.active_dim == dim and table_exists(cursor):
                return False
            element = "int8" if self.quantization == "int8" else "float"
            cursor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_ad")
            cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
            cursor.execute(
                f"CREATE VIRTUAL TABLE {TABLE} USING vec0("
                f"owner_id text partition key, "
                f"embedding {element}[{int(dim)}] distance_metric=cosine, "
                f"chunk_size={int(self.chunk_size)})"
            )
            cursor.execute(
                f"CREATE TRIGGER {TABLE}_ad AFTER DELETE ON memories BEGIN "
                f"DELETE FROM {TABLE} WHERE rowid = old.seq; END"
            )
        meta.active_dim = dim
        meta.embedding_signature = wanted
        meta.last_reset_at = timezone.now()
        meta.vec_loaded = True
        meta.save()
        reset = Memory.objects.update(needs_reindex=True)
        logger.info("vector table rebuilt for %s (dim %s); %s memories to re-embed", wanted, dim, reset)
        return True

    # -- writes --------------------------------------------------------------
    def _encode(self, vector: np.ndarray, int8: bool) -> bytes:
        vector = np.asarray(vector, dtype=np.float32)
        if int8:
            return np.clip(np.rint(vector * INT8_SCALE), -127, 127).astype(np.int8).tobytes()
        return vector.tobytes()

    @transaction.atomic
    def upsert(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        int8 = self.is_int8()
        value = "vec_int8(%s)" if int8 else "%s"
        with connection.cursor() as cursor:
            seqs = [int(item.seq) for item in items]
            for start in range(0, len(seqs), 500):
                part = seqs[start : start + 500]
                marks = ",".join(["%s"] * len(part))
                cursor.execute(f"DELETE FROM {TABLE} WHERE rowid IN ({marks})", part)
            cursor.executemany(
                f"INSERT INTO {TABLE}(rowid, owner_id, embedding) VALUES (%s, %s, {value})",
                [(int(i.seq), _as_uuid_hex(i.owner_id), self._encode(i.vector, int8)) for i in items],
            )

    @transaction.atomic
    def delete(self, seqs: Iterable[int]) -> None:
        seqs = [int(s) for s in seqs]
        with connection.cursor() as cursor:
            if not table_exists(cursor):
                return
            for start in range(0, len(seqs), 500):
                part = seqs[start : start + 500]
                marks = ",".join(["%s"] * len(part))
                cursor.execute(f"DELETE FROM {TABLE} WHERE rowid IN ({marks})", part)

    # -- reads ---------------------------------------------------------------
    def search(self, *, owner_ids: Sequence[str], vector: np.ndarray, k: int) -> list[VectorHit]:
        int8 = self.is_int8()
        value = "vec_int8(%s)" if int8 else "%s"
        blob = self._encode(vector, int8)
        hits: list[VectorHit] = []
        with connection.cursor() as cursor:
            if not table_exists(cursor):
                return []
            for owner in owner_ids:
                cursor.execute(
                    f"SELECT rowid, distance FROM {TABLE} "
                    f"WHERE embedding MATCH {value} AND k = %s AND owner_id = %s "
                    "ORDER BY distance",
                    [blob, int(k), _as_uuid_hex(owner)],
                )
                hits.extend(VectorHit(seq=row[0], score=1.0 - float(row[1])) for row in cursor.fetchall())
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:k]

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
