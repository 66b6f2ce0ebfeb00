"""RediSearch KNN for the Redis backend: one vector index per owner, over hashes that mirror each
record's vector, used by ``RedisBackend.search_similar`` when the server has the search module.

Why mirrors: the records are JSON strings (``{prefix}{O}:r:{id}``), which RediSearch cannot index, so
every write of a record with a vector also writes, in the same ``MULTI``, the hash
``{prefix}{O}:v:{id}`` with the vector as float32 bytes and the fields the filters need; a write that
drops the vector deletes it. The mirrors are written whether the server has the module or not, so an
index made later finds them all; records written before mirrors existed are back-filled when an
owner's index is made (:meth:`RedisKnn.ensure`).

The index ``{prefix}{O}:knn`` covers the prefix ``{prefix}{O}:v:`` only (owner ids are 32 hex digits,
so one owner's prefix never starts another's), HNSW or FLAT, cosine, the configured dimension. The
type and session are TAG fields holding a SHA-256 of the value (no escaping of user text in a query),
the creation and expiry instants NUMERIC seconds; the owner is a TAG too, asked for in every query.

A KNN hit is only a candidate: its record is read by the owner's own key, checked for its owner, its
expiry and the filters (exactly; the numeric ranges are widened by a second), and scored by exact
cosine with the record's own vector, which is the truth a stale mirror cannot change. When checks drop
candidates, more are asked for.

An owner's index is used once a marker key (``{prefix}{O}:knn-ready``) says its back-fill finished;
until then, or when the server has no search module (``FT._LIST`` fails), or a search fails, the
backend's bounded scan answers, and ``health()`` says which one is in use.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import redis
from redis.commands.search.field import NumericField, TagField, VectorField
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.commands.search.query import Query

from memory.backends.base import Filters, MemoryHit, MemoryRecord
from memory.backends.redis_codec import Stored

logger = logging.getLogger("memory.backends")

ALGORITHMS = ("hnsw", "flat", "none")
# The expiry of a record that never expires (seconds; RediSearch numerics are doubles, no infinity).
NEVER_EXPIRES = 9.0e15
# How long a probe of the search module is trusted (seconds), whatever it found.
PROBE_TTL = 60.0
# Numeric bounds are widened by this much; the exact rule is applied to each record afterwards.
SLACK = timedelta(seconds=1)
# Records back-filled per transaction.
BACKFILL_CHUNK = 500


def tag(value: str) -> str:
    """A TAG value for user text: its SHA-256 (hex, 32 digits), which needs no escaping in a query."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


def mirror_fields(record: MemoryRecord, vector: np.ndarray) -> Mapping[Any, bytes | str | float]:
    """The mirror hash of a record with a vector."""
    return {
        "vec": np.asarray(vector, dtype="<f4").tobytes(),
        "owner": record.owner.hex,
        "type": tag(record.type),
        "session": tag(record.session_id),
        "created": record.created_at.timestamp(),
        "expires": NEVER_EXPIRES if record.expires_at is None else record.expires_at.timestamp(),
    }


class RedisKnn:
    """The KNN path of one backend: its probes, its owners' indexes and their searches.

    ``client`` gives the backend's client; ``prefix`` is the backend's key prefix; ``load`` reads
    records by id from the owner's own keys (the backend's ``_load``) and ``decode`` reads one stored
    record (the backend's)."""

    def __init__(
        self,
        *,
        client: Callable[[], redis.Redis],
        prefix: str,
        algorithm: str,
        load: Callable[[uuid.UUID, Sequence[str]], list[Stored]],
        decode: Callable[[bytes | str], Stored],
    ) -> None:
        self._client = client
        self.prefix = prefix
        self.algorithm = algorithm
        self._load = load
        self._decode = decode
        self._lock = threading.Lock()
        self._probed: tuple[float, bool, str] | None = None  # (monotonic time, available, why not)
        self._ready: set[uuid.UUID] = set()

    # -- keys

    def owner_prefix(self, owner: uuid.UUID) -> str:
        return f"{self.prefix}{owner.hex}:v:"

    def mirror_key(self, owner: uuid.UUID, memory_id: uuid.UUID) -> str:
        return f"{self.owner_prefix(owner)}{memory_id}"

    def index_name(self, owner: uuid.UUID) -> str:
        return f"{self.prefix}{owner.hex}:knn"

    def _marker(self, owner: uuid.UUID) -> str:
        return f"{self.prefix}{owner.hex}:knn-ready"

    # -- the module

    def available(self, *, fresh: bool = False) -> tuple[bool, str]:
        """Whether KNN can be used, and why not: the configuration says ``none``, or ``FT._LIST``
        fails (no search module, an ACL); probed at most every ``PROBE_TTL`` seconds."""
        if self.algorithm == "none":
            return False, "vector_index is none"
        now = time.monotonic()
        probed = self._probed
        if fresh or probed is None or now - probed[0] > PROBE_TTL:
            try:
                self._client().execute_command("FT._LIST")
                probed = (now, True, "")
            except redis.ResponseError as exc:
                probed = (now, False, f"FT._LIST failed ({type(exc).__name__}): no search module")
            self._probed = probed
        return probed[1], probed[2]

    def _lost(self, owner: uuid.UUID, exc: redis.RedisError) -> None:
        """A KNN call failed: forget what was known, so the next search probes again; an index that
        is gone (dropped, the database flushed) loses its marker too, so that it is made again."""
        logger.warning(
            "redis KNN for owner %s failed (%s); the bounded scan answers", owner, type(exc).__name__
        )
        with self._lock:
            self._ready.discard(owner)
            self._probed = None
        text = str(exc).lower()
        if "index" in text and ("no such" in text or "unknown" in text):
            try:
                self._client().delete(self._marker(owner))
            except redis.RedisError as failed:
                # Kept: the next search finds the marker, fails the same way and tries again.
                logger.warning("redis KNN: the marker of owner %s stays (%s)", owner, type(failed).__name__)

    # -- an owner's index

    def ensure(self, owner: uuid.UUID, dimension: int) -> None:
        """Make the owner's index (if missing) and back-fill the mirrors of records that predate them;
        then mark it ready. Safe to run in two processes at once (each back-fill is a transaction)."""
        if owner in self._ready:
            return
        client = self._client()
        if client.exists(self._marker(owner)):
            self._ready.add(owner)
            return
        algorithm = self.algorithm.upper()
        vector = VectorField(
            "vec", algorithm, {"TYPE": "FLOAT32", "DIM": dimension, "DISTANCE_METRIC": "COSINE"}
        )
        try:
            client.ft(self.index_name(owner)).create_index(
                [
                    vector,
                    TagField("owner"),
                    TagField("type"),
                    TagField("session"),
                    NumericField("created"),
                    NumericField("expires"),
                ],
                definition=IndexDefinition(prefix=[self.owner_prefix(owner)], index_type=IndexType.HASH),
            )
        except redis.ResponseError as exc:
            if "already exists" not in str(exc).lower():
                raise
        self._backfill(owner)
        client.set(self._marker(owner), "1")
        self._ready.add(owner)

    def _backfill(self, owner: uuid.UUID) -> None:
        client = self._client()
        index_key = f"{self.prefix}{owner.hex}:idx"
        ids = [str(i) for i in client.zrange(index_key, 0, -1)]
        for start in range(0, len(ids), BACKFILL_CHUNK):
            part = ids[start : start + BACKFILL_CHUNK]
            record_keys = [f"{self.prefix}{owner.hex}:r:{i}" for i in part]

            def write(pipe: redis.client.Pipeline, keys: list[str] = record_keys) -> None:
                raws = pipe.mget(keys)
                pipe.multi()
                for raw in raws:
                    if raw is None:
                        continue
                    stored = self._decode(raw)
                    key = self.mirror_key(owner, stored.record.id)
                    if stored.vector is None:
                        pipe.delete(key)
                    else:
                        pipe.hset(key, mapping=mirror_fields(stored.record, stored.vector))

            client.transaction(write, *record_keys)

    # -- searches

    def search(
        self, owner: uuid.UUID, query: np.ndarray, *, limit: int, filters: Filters, now: datetime
    ) -> list[MemoryHit] | None:
        """The owner's nearest live records that pass ``filters`` by exact cosine, best first; None
        when KNN cannot answer (the caller scans)."""
        try:
            self.ensure(owner, int(query.size))
            unit = query / np.linalg.norm(query)
            wanted = limit
            while True:
                candidates, exhausted = self._candidates(owner, query, wanted, filters, now)
                hits = self._verified(owner, candidates, unit, filters, now)
                if len(hits) >= limit or exhausted:
                    return hits[:limit]
                wanted *= 4
        except redis.ResponseError as exc:
            self._lost(owner, exc)
            return None

    def _candidates(
        self, owner: uuid.UUID, query: np.ndarray, k: int, filters: Filters, now: datetime
    ) -> tuple[list[str], bool]:
        """The ids of the ``k`` nearest mirrors (of the owner, passing the filters), and whether there
        are no more."""
        clauses = [f"@owner:{{{owner.hex}}}", f"@expires:[({(now - SLACK).timestamp()} +inf]"]
        if filters.type:
            clauses.append(f"@type:{{{tag(filters.type)}}}")
        if filters.session_id:
            clauses.append(f"@session:{{{tag(filters.session_id)}}}")
        if filters.created_after is not None:
            clauses.append(f"@created:[{(filters.created_after - SLACK).timestamp()} +inf]")
        text = f"({' '.join(clauses)})=>[KNN {k} @vec $vector AS distance]"
        q = Query(text).sort_by("distance").return_fields("distance").paging(0, k).dialect(2)
        params: dict[str, str | int | float | bytes] = {"vector": np.asarray(query, dtype="<f4").tobytes()}
        result = self._client().ft(self.index_name(owner)).search(q, query_params=params)
        prefix = self.owner_prefix(owner)
        ids: list[str] = []
        for document in result.docs:  # a Result on either protocol
            key = str(document.id)
            if not key.startswith(prefix):
                logger.warning("redis KNN returned a key outside the owner's prefix; dropped")
                continue
            ids.append(key[len(prefix) :])
        return ids, len(result.docs) < k

    def _verified(
        self, owner: uuid.UUID, ids: Sequence[str], unit: np.ndarray, filters: Filters, now: datetime
    ) -> list[MemoryHit]:
        valid = [i for i in ids if _is_uuid(i)]
        hits: list[MemoryHit] = []
        for stored in self._load(owner, valid):
            r, v = stored.record, stored.vector
            if r.owner != owner or v is None or v.size != unit.size:
                continue
            if not r.live(now) or not filters.admits(r):
                continue
            hits.append(MemoryHit(r, float(v @ unit / (np.linalg.norm(v) or 1.0)), "vector"))
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits

    def describe(self, scan_limit: int) -> tuple[bool, str]:
        """Whether KNN is in use, and ``health()``'s sentence for the vector search."""
        ok, why = self.available(fresh=True)
        if ok:
            return True, (
                f"RediSearch KNN ({self.algorithm.upper()}, cosine) over a per-owner index, "
                "candidates rescored by exact cosine"
            )
        return False, f"bounded scan ({why}): the {scan_limit} newest records per owner, exact cosine"


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
