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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from memory.models import ApiKey, Memory, VectorMeta
from memory.vectorstores import int8scan
from memory.vectorstores.base import VectorHit, VectorItem, VectorStore
from memory.vectorstores.int8scan import Int8Codes
from memory.visibility import Visibility, owner_hex

logger = logging.getLogger("memory.vectorstores")

TABLE = "memory_vec"
LOG = "memory_vec_log"
# Global int8 scale: components of L2-normalised 384-d vectors rarely exceed
# ±0.35, so x*362 spends the int8 range on the values that occur; a per-vector
# 'unit' quantisation (vec_quantize_int8) lost recall@20 0.97 → 0.86.
INT8_SCALE = 127 / 0.35
# vec0's chunk_size (vectors per chunk file, a multiple of 8), fixed when the table is created. Each
# owner partition allocates whole chunks, so vec0's 1024 makes a small owner cost ~1000x its data;
# with 64 an owner wastes at most 63 slots. Searches scan the in-process matrices, not the chunks.
CHUNK_SIZE = 64


def table_exists(cursor: CursorWrapper, name: str = TABLE) -> bool:
    cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [name])
    return cursor.fetchone() is not None


@dataclass
class _State:
    """What a search needs from ``VectorMeta`` (read once per search)."""

    signature: str | None
    epoch: str
    int8: bool
    dim: int | None

    @classmethod
    def read(cls) -> _State:
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


def _decode(blob: bytes, int8: bool) -> np.ndarray:
    if int8:
        return np.frombuffer(blob, dtype=np.int8).astype(np.float32) / INT8_SCALE
    return np.frombuffer(blob, dtype=np.float32)


class _OwnerMatrix:
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
        return _best(self.seqs[rows], scores, k)

    def top_k_among(self, query: np.ndarray, k: int, allowed: np.ndarray) -> list[VectorHit]:
        """The ``k`` best rows whose seq is in ``allowed`` (a full scan of those rows only)."""
        rows = np.nonzero(np.isin(self.seqs[: self.size], allowed))[0]
        if len(rows) == 0:
            return []
        return _best(self.seqs[rows], self.matrix[rows] @ query, k)

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


def _best(seqs: np.ndarray, scores: np.ndarray, k: int) -> list[VectorHit]:
    """The ``k`` best of ``scores`` (one per seq), best first."""
    if k < len(scores):
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best])]
    else:
        best = np.argsort(-scores)
    return [VectorHit(seq=int(seqs[i]), score=float(scores[i])) for i in best]


class _MatrixCache:
    """Process-wide LRU of owner matrices, bounded in bytes."""

    def __init__(self) -> None:
        self.owners: OrderedDict[str, _OwnerMatrix] = OrderedDict()
        self.lock = threading.Lock()

    def budget(self) -> int:
        return int(settings.MEMORY_VEC_CACHE_MB) * 1024 * 1024

    def get(self, owner: str, state: _State, cursor: CursorWrapper) -> _OwnerMatrix | None:
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

    def _load(self, owner: str, state: _State, cursor: CursorWrapper) -> _OwnerMatrix | None:
        budget = self.budget()
        if budget <= 0 or not state.dim:
            return None
        # Read the log horizon before the vectors: replaying entries that the
        # load already contains is harmless, missing one would not be.
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {LOG}")
        horizon = int(cursor.fetchone()[0])
        cursor.execute(f"SELECT rowid, embedding FROM {TABLE} WHERE owner_id = %s", [owner])
        rows = cursor.fetchall()
        scan_rows = int8scan.MIN_ROWS
        per_row = state.dim * (5 if 0 < scan_rows <= len(rows) else 4)  # float32, plus int8 codes if large
        if len(rows) * per_row > budget:
            return None
        entry = _OwnerMatrix(state.dim, state.epoch)
        entry._grow(len(rows))
        for seq, blob in rows:
            entry.put(int(seq), _decode(blob, state.int8))
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

    def _replay(self, entry: _OwnerMatrix, owner: str, state: _State, cursor: CursorWrapper) -> None:
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
                    entry.put(int(seq), _decode(blob, state.int8))
                entry.last_log_id = log_id

    def clear(self) -> None:
        with self.lock:
            self.owners.clear()


MATRIX_CACHE = _MatrixCache()


class SqliteVecStore(VectorStore):
    name = "sqlite-vec"
    in_database = True

    def __init__(self, *, quantization: str | None = None, chunk_size: int | None = None) -> None:
        self.quantization = quantization or settings.MEMORY_VEC_QUANTIZATION
        self.chunk_size = chunk_size or CHUNK_SIZE

    def full_signature(self, signature: str) -> str:
        return f"{signature}:int8" if self.quantization == "int8" else signature

    def is_int8(self) -> bool:
        return _State.read().int8

    def signature(self) -> str | None:
        return _State.read().signature

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
        meta.active_dim = dim
        meta.embedding_signature = wanted
        meta.last_reset_at = timezone.now()
        meta.vec_loaded = True
        meta.save()
        MATRIX_CACHE.clear()
        reset = Memory.objects.update(needs_reindex=True)
        logger.info("vector table rebuilt for %s (dim %s); %s memories to re-embed", wanted, dim, reset)
        return True

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
        state = _State.read()
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
        self, cursor: CursorWrapper, owners: list[str], query: np.ndarray, k: int, state: _State
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
        state: _State,
    ) -> list[VectorHit]:
        """The ``k`` nearest among the visible rows of ``owners``, listed first (exact, whatever the
        share of hidden rows)."""
        conditions, params = Visibility(
            owner_ids=owners,
            now=visibility.now,
            session_id=visibility.session_id,
            created_after=visibility.created_after,
        ).sql("m")
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
                vectors.append(_decode(blob, int8))
        if not found:
            return []
        return _best(np.asarray(found, dtype=np.int64), np.stack(vectors) @ query, k)

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
