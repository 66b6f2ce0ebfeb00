"""Per-owner in-process matrices of the stored vectors, kept in step with sqlite-vec's change log.

Search speed. vec0's brute-force KNN took ~41 ms for one owner with 100k
vectors (a numpy scan of the same vectors ~7 ms), so searches run on an
in-process numpy matrix per owner, loaded once from ``memory_vec`` and kept
fresh from ``memory_vec_log``: every upsert appends ``(owner, seq, vector)``
and every deletion (by the ``memory_vec_ad`` trigger, whatever deleted the
memory) appends ``(owner, seq, NULL)``. A search replays the log entries it
has not seen (usually none: one indexed query) before scanning, so it sees
every committed write, in any process. The vec0 KNN remains the path for
owners too large for the cache budget (``MEMORY_VEC_CACHE_MB``). Matrices of
``int8scan.MIN_ROWS`` rows or more also keep int8 codes that pick the
rows worth scoring in float32, with the same result as a full float32 scan
(``memory.vectorstores.int8scan``), on any CPU whose int8 kernel passes the
self-check at first use; elsewhere every row is scanned in float32.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.backends.utils import CursorWrapper

from memory.vectorstores import int8scan
from memory.vectorstores.base import VectorHit
from memory.vectorstores.int8scan import Int8Codes

logger = logging.getLogger("memory.vectorstores")

TABLE = "memory_vec"
LOG = "memory_vec_log"
# Global int8 scale: components of L2-normalised 384-d vectors rarely exceed
# ±0.35, so x*362 spends the int8 range on the values that occur; a per-vector
# 'unit' quantisation (vec_quantize_int8) lost recall@20 0.97 → 0.86.
INT8_SCALE = 127 / 0.35


@dataclass
class StoreState:
    """What a search needs from ``VectorMeta`` (read once per search)."""

    signature: str | None
    epoch: str
    int8: bool
    dim: int | None

    @classmethod
    def read(cls) -> StoreState:
        # One plain query on the hot path (VectorMeta.load() would get_or_create).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT embedding_signature, last_reset_at, active_dim FROM memory_vec_meta WHERE id = 1"
            )
            row = cursor.fetchone() or (None, None, None)
        sig, reset_at, dim = row
        return cls(
            signature=sig, epoch=f"{sig}|{reset_at}", int8=bool(sig and sig.endswith(":int8")), dim=dim
        )


def decode(blob: bytes, int8: bool) -> np.ndarray:
    if int8:
        return np.frombuffer(blob, dtype=np.int8).astype(np.float32) / INT8_SCALE
    return np.frombuffer(blob, dtype=np.float32)


class OwnerMatrix:
    """One owner's vectors as a dense matrix, updated in place from the log."""

    def __init__(self, dim: int, epoch: str) -> None:
        self.epoch = epoch
        self.dim = dim
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.seqs = np.zeros(0, dtype=np.int64)
        self.size = 0
        self.pos: dict[int, int] = {}
        self.last_log_id = 0
        self.lock = threading.Lock()
        self.codes: Int8Codes | None = None  # built when the matrix is large enough (see top_k)

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes + (self.codes.nbytes if self.codes is not None else 0)

    def _grow(self, needed: int) -> None:
        capacity = len(self.seqs)
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity * 2, 64)
        matrix = np.zeros((new_capacity, self.dim), dtype=np.float32)
        matrix[: self.size] = self.matrix[: self.size]
        seqs = np.full(new_capacity, -1, dtype=np.int64)
        seqs[: self.size] = self.seqs[: self.size]
        self.matrix, self.seqs = matrix, seqs

    def put(self, seq: int, vector: np.ndarray) -> None:
        row = self.pos.get(seq)
        if row is None:
            self._grow(self.size + 1)
            row = self.size
            self.size += 1
            self.pos[seq] = row
            self.seqs[row] = seq
        self.matrix[row] = vector
        if self.codes is not None:
            self.codes.set(row, self.matrix[row])

    def remove(self, seq: int) -> None:
        row = self.pos.pop(seq, None)
        if row is None:
            return
        last = self.size - 1
        if row != last:  # move the last row into the hole
            moved = int(self.seqs[last])
            self.matrix[row] = self.matrix[last]
            self.seqs[row] = moved
            self.pos[moved] = row
            if self.codes is not None:
                self.codes.move(last, row)
        self.seqs[last] = -1
        self.size = last

    def top_k(self, query: np.ndarray, k: int) -> list[VectorHit]:
        if self.size == 0:
            return []
        k = min(k, self.size)
        rows = self._int8_candidates(query, k)
        if rows is None:
            rows = np.arange(self.size)
            scores = self.matrix[: self.size] @ query
        else:
            scores = self.matrix[rows] @ query
        return best_hits(self.seqs[rows], scores, k)

    def top_k_among(self, query: np.ndarray, k: int, allowed: np.ndarray) -> list[VectorHit]:
        """The ``k`` best rows whose seq is in ``allowed`` (a full scan of those rows only)."""
        rows = np.nonzero(np.isin(self.seqs[: self.size], allowed))[0]
        if len(rows) == 0:
            return []
        return best_hits(self.seqs[rows], self.matrix[rows] @ query, k)

    def _int8_candidates(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """The rows that can be in the top ``k`` (``memory.vectorstores.int8scan``), for matrices of at
        least ``int8scan.MIN_ROWS`` rows; ``None``: scan every row in float32."""
        threshold = int8scan.MIN_ROWS
        if threshold <= 0 or self.size < threshold or k >= self.size:
            return None
        if not int8scan.kernel_check(self.dim).exact:  # logged once; engine-status shows it
            self.codes = None
            return None
        try:
            if self.codes is None:
                self.codes = Int8Codes.from_matrix(self.matrix[: self.size])
            return self.codes.candidates(query, self.size, k)
        except Exception:
            logger.exception("int8 pre-scan failed; scanning in float32", extra={"rows": self.size})
            self.codes = None
            return None


def best_hits(seqs: np.ndarray, scores: np.ndarray, k: int) -> list[VectorHit]:
    """The ``k`` best of ``scores`` (one per seq), best first."""
    if k < len(scores):
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best])]
    else:
        best = np.argsort(-scores)
    return [VectorHit(seq=int(seqs[i]), score=float(scores[i])) for i in best]


class MatrixCache:
    """Process-wide LRU of owner matrices, bounded in bytes."""

    def __init__(self) -> None:
        self.owners: OrderedDict[str, OwnerMatrix] = OrderedDict()
        self.lock = threading.Lock()

    def budget(self) -> int:
        return int(settings.MEMORY_VEC_CACHE_MB) * 1024 * 1024

    def get(self, owner: str, state: StoreState, cursor: CursorWrapper) -> OwnerMatrix | None:
        with self.lock:
            entry = self.owners.get(owner)
            if entry is not None and entry.epoch != state.epoch:
                entry = None
                del self.owners[owner]
            if entry is not None:
                self.owners.move_to_end(owner)
        if entry is None:
            entry = self._load(owner, state, cursor)
            if entry is None:
                return None
        else:
            self._replay(entry, owner, state, cursor)
        return entry

    def _load(self, owner: str, state: StoreState, cursor: CursorWrapper) -> OwnerMatrix | None:
        budget = self.budget()
        if budget <= 0 or not state.dim:
            return None
        # Read the log horizon before the vectors: replaying entries that the
        # load already contains is harmless, missing one would not be. The owner's own horizon: on
        # PostgreSQL another owner's later id may commit before this owner's earlier one (one owner's
        # ids commit in order, migration 0016).
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {LOG} WHERE owner_id = %s", [owner])
        horizon = int(cursor.fetchone()[0])
        cursor.execute(f"SELECT rowid, embedding FROM {TABLE} WHERE owner_id = %s", [owner])
        rows = cursor.fetchall()
        scan_rows = int8scan.MIN_ROWS
        per_row = state.dim * (5 if 0 < scan_rows <= len(rows) else 4)  # float32, plus int8 codes if large
        if len(rows) * per_row > budget:
            return None
        entry = OwnerMatrix(state.dim, state.epoch)
        entry._grow(len(rows))
        for seq, blob in rows:
            entry.put(int(seq), decode(blob, state.int8))
        entry.last_log_id = horizon
        self._replay(entry, owner, state, cursor)
        with self.lock:
            self.owners[owner] = entry
            self.owners.move_to_end(owner)
            total = sum(e.nbytes for e in self.owners.values())
            while total > budget and len(self.owners) > 1:
                _, evicted = self.owners.popitem(last=False)
                total -= evicted.nbytes
        return entry

    def _replay(self, entry: OwnerMatrix, owner: str, state: StoreState, cursor: CursorWrapper) -> None:
        cursor.execute(
            f"SELECT id, seq, embedding FROM {LOG} WHERE owner_id = %s AND id > %s ORDER BY id",
            [owner, entry.last_log_id],
        )
        rows = cursor.fetchall()
        if not rows:
            return
        with entry.lock:
            for log_id, seq, blob in rows:
                if log_id <= entry.last_log_id:
                    continue
                if blob is None:
                    entry.remove(int(seq))
                else:
                    entry.put(int(seq), decode(blob, state.int8))
                entry.last_log_id = log_id

    def clear(self) -> None:
        with self.lock:
            self.owners.clear()


MATRIX_CACHE = MatrixCache()
