"""The Redis backend: JSON records under a key prefix (Orkeon's RedisMemoryProvider), with the
``redis`` client's retries and exponential backoff.

Keys, for an owner ``O`` (32 hex digits) under ``prefix``:

* ``{prefix}{O}:r:{id}`` — one record as JSON (camelCase fields; the vector as base64 float32);
* ``{prefix}{O}:idx`` — a sorted set of the owner's ids scored by ``createdAt`` (list order);
* ``{prefix}{O}:keys`` — a hash from each memory key to its id (the ``(owner, key)`` upsert);
* ``{prefix}dimension`` — the vector dimension, fixed by the first stored vector unless configured;

* ``{prefix}{O}:v:{id}`` — the mirror of a record's vector, a hash for RediSearch
  (:mod:`memory.backends.redis_knn`), written and deleted with the record.

Writes that touch several keys run in a ``WATCH``/``MULTI`` transaction (retried when another writer
changed a watched key), so the index, the key hash, the records and the mirrors never disagree.

Lists, counts and keyword search (BM25, as the in-memory backend) filter in this process: lists and
counts read all of the owner's records (exact, at a cost linear in them); keyword search reads the
owner's ``scan_limit`` newest records (a bounded scan: older ones are not ranked). Vector search uses
RediSearch KNN over a per-owner index when the server has the search module (``vector_index``:
``hnsw`` or ``flat``), else the same bounded scan with exact cosine; ``health()`` says which.

The URL passes the outbound URL policy (:func:`memory.urlpolicy.check_redis_url`, the one
private-network switch) when the configuration is parsed (no DNS) and again, names resolved, before
the client is made. Connection failures and timeouts are retried ``retries`` times with exponential
backoff, then raised as ``BackendUnavailable``; any other Redis error is ``BackendUnavailable`` at
once. What those errors say names the kind of failure, never what the server sent (a URL pointed at
another service would otherwise show its answer).
"""

from __future__ import annotations

import builtins
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
import redis
from django.utils import timezone
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from memory.backends.base import (
    NO_FILTERS,
    BackendConfigError,
    BackendInputError,
    BackendUnavailable,
    Capabilities,
    Filters,
    Health,
    MemoryBackend,
    MemoryDraft,
    MemoryHit,
    MemoryRecord,
    ScanReads,
    as_vector,
    check_changes,
    check_dimension,
    check_draft,
    check_page,
)
from memory.backends.guarded import PolicyClient
from memory.backends.redis_codec import Stored, decode, encode, error_text, text
from memory.backends.redis_knn import ALGORITHMS, RedisKnn, mirror_fields
from memory.backends.scoring import bm25_rank, cosine_rank
from memory.conf import get_memory_settings
from memory.exceptions import Conflict
from memory.urlpolicy import UrlPolicyError, check_redis_url

# The longest wait between two retries of a failed command (seconds).
BACKOFF_CAP_SECONDS = 2.0
# Records fetched per MGET.
FETCH_CHUNK = 500
T = TypeVar("T")


@dataclass(frozen=True)
class RedisConfig:
    """A Redis server (``url``: ``redis://``, ``rediss://`` or ``unix://``); every key starts with
    ``prefix``. ``scan_limit`` bounds the records of one owner a search reads; ``retries`` and
    ``backoff_seconds`` (doubled per retry, capped at ``BACKOFF_CAP_SECONDS``) retry a connection
    failure or timeout; ``timeout_seconds`` bounds each command and each connection attempt.
    ``vector_index`` is the RediSearch index kind for vector search (``hnsw``, ``flat``, or ``none``
    for the bounded scan whatever the server has)."""

    url: str
    prefix: str = "omr:mem:"
    dimension: int | None = None
    scan_limit: int = 10_000
    retries: int = 3
    backoff_seconds: float = 0.05
    timeout_seconds: float = 5.0
    vector_index: str = "hnsw"

    def __post_init__(self) -> None:
        if not self.url.startswith(("redis://", "rediss://", "unix://")):
            raise BackendConfigError("url must be a redis://, rediss:// or unix:// URL", field="config.url")
        try:
            # Names are resolved before the client is made (RedisBackend.client), not on save.
            check_redis_url(self.url, allow_private=get_memory_settings().private_urls_allowed, resolve=False)
        except UrlPolicyError as exc:
            raise BackendConfigError(f"url: {exc}", field="config.url") from None
        if self.vector_index not in ALGORITHMS:
            raise BackendConfigError(
                f"vector_index must be one of {', '.join(ALGORITHMS)}", field="config.vector_index"
            )
        check_dimension(self.dimension)
        if not self.prefix:
            raise BackendConfigError("prefix must not be empty", field="config.prefix")
        for name in ("scan_limit", "timeout_seconds"):
            if getattr(self, name) <= 0:
                raise BackendConfigError(f"{name} must be positive", field=f"config.{name}")
        for name in ("retries", "backoff_seconds"):
            if getattr(self, name) < 0:
                raise BackendConfigError(f"{name} must not be negative", field=f"config.{name}")


class RedisBackend(ScanReads, MemoryBackend):
    """Records in one Redis database under ``config.prefix``; see the module docstring."""

    type_name = "redis"
    capabilities = Capabilities(keyword=True, vector=True, hybrid=False, filters=True)

    def __init__(self, config: RedisConfig, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.config = config
        self._client = PolicyClient(
            self.name, lambda private: check_redis_url(config.url, allow_private=private), self._new_client
        )
        self.knn = RedisKnn(
            client=lambda: self.client,
            prefix=config.prefix,
            algorithm=config.vector_index,
            load=self._load,
            decode=decode,
        )

    # -- plumbing

    @property
    def client(self) -> redis.Redis:
        """The client, made once the outbound URL policy (names resolved) admits the URL; made again,
        and checked again, when the private-network switch changes (``PolicyClient``). No connection
        is opened before a command."""
        return self._client.get()

    def _new_client(self) -> redis.Redis:
        c = self.config
        return redis.Redis.from_url(
            c.url,
            decode_responses=True,
            socket_timeout=c.timeout_seconds,
            socket_connect_timeout=c.timeout_seconds,
            retry=Retry(ExponentialBackoff(cap=BACKOFF_CAP_SECONDS, base=c.backoff_seconds), c.retries),
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        )

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except redis.RedisError as exc:
            raise BackendUnavailable(f"{self.name}: {error_text(exc)}", backend=self.name) from exc

    def _mirror(self, pipe: redis.client.Pipeline, record: MemoryRecord, vector: np.ndarray | None) -> None:
        """Queue the write (or the delete, without a vector) of the record's vector mirror."""
        key = self.knn.mirror_key(record.owner, record.id)
        if vector is None:
            pipe.delete(key)
        else:
            pipe.hset(key, mapping=mirror_fields(record, vector))

    def _transaction(self, write: Callable[[redis.client.Pipeline], T], *watched: str) -> T:
        """Run ``write`` in a WATCH/MULTI transaction (re-run when a watched key changed); its value."""
        # The stubs type the callable as returning None, though value_from_callable returns its value.
        run = cast(Callable[[redis.client.Pipeline], None], write)
        return cast(T, self.client.transaction(run, *watched, value_from_callable=True))

    def _owner(self, owner: uuid.UUID) -> str:
        return f"{self.config.prefix}{owner.hex}"

    def _record_key(self, owner: uuid.UUID, memory_id: uuid.UUID) -> str:
        return f"{self._owner(owner)}:r:{memory_id}"

    def _index_key(self, owner: uuid.UUID) -> str:
        return f"{self._owner(owner)}:idx"

    def _keys_key(self, owner: uuid.UUID) -> str:
        return f"{self._owner(owner)}:keys"

    @property
    def _dimension_key(self) -> str:
        return f"{self.config.prefix}dimension"

    def _load(self, owner: uuid.UUID, ids: Sequence[str]) -> list[Stored]:
        found: list[Stored] = []
        for start in range(0, len(ids), FETCH_CHUNK):
            part = ids[start : start + FETCH_CHUNK]
            raws = self.client.mget([self._record_key(owner, uuid.UUID(i)) for i in part])
            found.extend(decode(raw) for raw in raws if raw is not None)
        return found

    def _live(self, owner: uuid.UUID, filters: Filters, *, newest: int | None = None) -> list[Stored]:
        """The owner's live records passing ``filters``, newest first (of the ``newest`` newest ids)."""
        end = -1 if newest is None else newest - 1
        ids = [text(i) for i in self.client.zrevrange(self._index_key(owner), 0, end)]
        now = timezone.now()
        return [s for s in self._load(owner, ids) if s.record.live(now) and filters.admits(s.record)]

    @property
    def vector_dimension(self) -> int | None:
        if self.config.dimension is not None:
            return self.config.dimension
        with self._guard():
            value = self.client.get(self._dimension_key)
        return None if value is None else int(value)

    # -- writes

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with self._guard():
            return self._store(draft, None)

    def store_with_embedding(
        self, draft: MemoryDraft, embedding: Sequence[float] | np.ndarray
    ) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with self._guard():
            return self._store(draft, self._checked_vector(embedding))

    def _checked_vector(self, embedding: Sequence[float] | np.ndarray) -> np.ndarray:
        """``embedding`` checked against the dimension (field ``embedding``); the first vector fixes it."""
        dimension = self.vector_dimension
        vector = as_vector(embedding, dimension=dimension, field="embedding")
        if dimension is None:
            # The first vector fixes the dimension; a concurrent first writer may have won.
            self.client.set(self._dimension_key, int(vector.size), nx=True)
            vector = as_vector(vector, dimension=self.vector_dimension, field="embedding")
        return vector

    def _store(self, draft: MemoryDraft, vector: np.ndarray | None) -> tuple[MemoryRecord, bool]:
        owner = draft.owner
        keys_key, index_key = self._keys_key(owner), self._index_key(owner)
        watched = [keys_key]
        if draft.id is not None:
            watched.append(self._record_key(owner, draft.id))

        def write(pipe: redis.client.Pipeline) -> tuple[MemoryRecord, bool]:
            now = timezone.now()
            if draft.id is not None:
                raw = pipe.get(self._record_key(owner, draft.id))
                if raw is not None:
                    return decode(raw).record, False
            existing_id = pipe.hget(keys_key, draft.key) if draft.key else None
            raw = None
            if existing_id:
                existing_key = self._record_key(owner, uuid.UUID(text(existing_id)))
                pipe.watch(existing_key)  # an edit of that record meanwhile retries this write
                raw = pipe.get(existing_key)
            if raw is not None:
                old = decode(raw)
                record = draft.upserted(old.record, now)
                kept = (
                    vector
                    if vector is not None
                    else (old.vector if record.content == old.record.content else None)
                )
                pipe.multi()
                pipe.set(self._record_key(owner, record.id), encode(Stored(record, kept)))
                self._mirror(pipe, record, kept)
                return record, False
            record = draft.new_record(now)
            pipe.multi()
            pipe.set(self._record_key(owner, record.id), encode(Stored(record, vector)))
            self._mirror(pipe, record, vector)
            pipe.zadd(index_key, {str(record.id): record.created_at.timestamp()})
            if record.key:
                pipe.hset(keys_key, record.key, str(record.id))
            return record, True

        result: tuple[MemoryRecord, bool] = self._transaction(write, *watched)
        return result

    def update(
        self,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        changes: Mapping[str, Any],
        *,
        embedding: Sequence[float] | np.ndarray | None = None,
    ) -> MemoryRecord | None:
        checked = check_changes(changes)
        if "metadata" in checked:
            checked["metadata"] = dict(checked["metadata"])
        record_key, keys_key = self._record_key(owner, memory_id), self._keys_key(owner)
        given: np.ndarray | None = None
        if embedding is not None:
            with self._guard():
                given = self._checked_vector(embedding)

        def write(pipe: redis.client.Pipeline) -> MemoryRecord | None:
            raw = pipe.get(record_key)
            if raw is None:
                return None
            old = decode(raw)
            if not old.record.live(timezone.now()):
                return None
            new_key = checked.get("key", old.record.key)
            if new_key and new_key != old.record.key:
                holder = pipe.hget(keys_key, new_key)
                if (
                    holder is not None
                    and holder != str(memory_id)
                    and pipe.exists(self._record_key(owner, uuid.UUID(text(holder))))
                ):
                    raise Conflict(f"another memory of this owner already uses key {new_key!r}", field="key")
            record = dataclasses.replace(old.record, **checked, updated_at=timezone.now())
            vector = given
            if vector is None and record.content == old.record.content:
                vector = old.vector
            pipe.multi()
            pipe.set(record_key, encode(Stored(record, vector)))
            self._mirror(pipe, record, vector)
            if new_key != old.record.key:
                if old.record.key:
                    pipe.hdel(keys_key, old.record.key)
                if new_key:
                    pipe.hset(keys_key, new_key, str(memory_id))
            return record

        with self._guard():
            result: MemoryRecord | None = self._transaction(write, record_key, keys_key)
            return result

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        record_key, keys_key = self._record_key(owner, memory_id), self._keys_key(owner)

        def write(pipe: redis.client.Pipeline) -> bool:
            raw = pipe.get(record_key)
            if raw is None:
                return False
            key = decode(raw).record.key
            holder = pipe.hget(keys_key, key) if key else None
            pipe.multi()
            pipe.delete(record_key, self.knn.mirror_key(owner, memory_id))
            pipe.zrem(self._index_key(owner), str(memory_id))
            if key and holder == str(memory_id):
                pipe.hdel(keys_key, key)
            return True

        with self._guard():
            deleted: bool = self._transaction(write, record_key, keys_key)
            return deleted

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        index_key, keys_key = self._index_key(owner), self._keys_key(owner)

        def write(pipe: redis.client.Pipeline) -> int:
            ids = [text(i) for i in pipe.zrange(index_key, 0, -1)]
            stored = self._load_with(pipe, owner, ids)
            doomed = [s.record for s in stored if not type or s.record.type == type]
            now = timezone.now()
            pipe.multi()
            for record in doomed:
                pipe.delete(self._record_key(owner, record.id), self.knn.mirror_key(owner, record.id))
                pipe.zrem(index_key, str(record.id))
                if record.key:
                    pipe.hdel(keys_key, record.key)
            return sum(1 for record in doomed if record.live(now))

        with self._guard():
            cleared: int = self._transaction(write, index_key, keys_key)
            return cleared

    def _load_with(self, pipe: redis.client.Pipeline, owner: uuid.UUID, ids: Sequence[str]) -> list[Stored]:
        found: list[Stored] = []
        for start in range(0, len(ids), FETCH_CHUNK):
            keys = [self._record_key(owner, uuid.UUID(i)) for i in ids[start : start + FETCH_CHUNK]]
            found.extend(decode(raw) for raw in pipe.mget(keys) if raw is not None)
        return found

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        with self._guard():
            raw = self.client.get(self._record_key(owner, memory_id))
        if raw is None:
            return None
        record = decode(raw).record
        return record if record.live(timezone.now()) else None

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        with self._guard():
            live = self._live(owner, filters, newest=self.config.scan_limit)
        return bm25_rank([s.record for s in live], query, limit=limit)

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        with self._guard():
            query = as_vector(vector, dimension=self.vector_dimension, field="vector")
            if self.knn.available()[0]:
                hits = self.knn.search(owner, query, limit=limit, filters=filters, now=timezone.now())
                if hits is not None:
                    return hits
            live = [
                s for s in self._live(owner, filters, newest=self.config.scan_limit) if s.vector is not None
            ]
        for stored in live:
            if stored.vector is not None and stored.vector.size != query.size:
                raise BackendInputError(
                    f"vector has {query.size} dimensions; stored vectors have {stored.vector.size}",
                    field="vector",
                )
        vectors = [s.vector for s in live if s.vector is not None]
        return cosine_rank([s.record for s in live], vectors, query, limit=limit)

    def health(self) -> Health:
        started = time.perf_counter()
        try:
            self.client.ping()
            latency = round((time.perf_counter() - started) * 1000, 3)
            version = self.client.info("server").get("redis_version")
            try:
                modules = [str(m.get("name", "")).lower() for m in self.client.module_list()]
            except redis.ResponseError:  # MODULE LIST refused (an ACL, a managed service)
                modules = []
            redisearch = any(m in ("search", "ft") for m in modules)
            dimension = self.vector_dimension
            knn, vector_search = self.knn.describe(self.config.scan_limit)
        except redis.RedisError as exc:
            latency = round((time.perf_counter() - started) * 1000, 3)
            return Health(False, latency, error_text(exc))
        except BackendUnavailable as exc:
            latency = round((time.perf_counter() - started) * 1000, 3)
            return Health(False, latency, str(exc))
        detail = {
            "version": version,
            "redisearch": redisearch,
            "knn": knn,
            "vectorIndex": self.config.vector_index,
            "vectorSearch": vector_search,
            "keywordSearch": f"bounded scan: the {self.config.scan_limit} newest records per owner, BM25",
            "dimension": dimension,
            "prefix": self.config.prefix,
            "persistent": True,
        }
        return Health(True, latency, None, detail)
