"""The Redis backend: JSON records under a key prefix (Orkeon's RedisMemoryProvider), with the
``redis`` client's retries and exponential backoff.

Keys, for an owner ``O`` (32 hex digits) under ``prefix``:

* ``{prefix}{O}:r:{id}`` — one record as JSON (camelCase fields; the vector as base64 float32);
* ``{prefix}{O}:idx`` — a sorted set of the owner's ids scored by ``createdAt`` (list order);
* ``{prefix}{O}:keys`` — a hash from each memory key to its id (the ``(owner, key)`` upsert);
* ``{prefix}dimension`` — the vector dimension, fixed by the first stored vector unless configured.

Writes that touch several keys run in a ``WATCH``/``MULTI`` transaction (retried when another writer
changed a watched key), so the index, the key hash and the records never disagree.

Every read filters in this process: lists and counts read all of the owner's records (exact, at a
cost linear in them). Searches — keyword BM25 and vector cosine, as the in-memory backend — read the
owner's ``scan_limit`` newest records (a bounded scan: older ones are not ranked), which ``health()``
says. A server with the RediSearch module is detected and reported, but its KNN index is not used
yet: searches scan there too.

Connection failures and timeouts are retried ``retries`` times with exponential backoff, then raised
as ``BackendUnavailable``; any other Redis error is ``BackendUnavailable`` at once.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
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
from memory.backends.scoring import bm25_rank, cosine_rank
from memory.exceptions import Conflict

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
    failure or timeout; ``timeout_seconds`` bounds each command and each connection attempt."""

    url: str
    prefix: str = "omr:mem:"
    dimension: int | None = None
    scan_limit: int = 10_000
    retries: int = 3
    backoff_seconds: float = 0.05
    timeout_seconds: float = 5.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("redis://", "rediss://", "unix://")):
            raise BackendConfigError("url must be a redis://, rediss:// or unix:// URL", field="config.url")
        check_dimension(self.dimension)
        if not self.prefix:
            raise BackendConfigError("prefix must not be empty", field="config.prefix")
        for name in ("scan_limit", "timeout_seconds"):
            if getattr(self, name) <= 0:
                raise BackendConfigError(f"{name} must be positive", field=f"config.{name}")
        for name in ("retries", "backoff_seconds"):
            if getattr(self, name) < 0:
                raise BackendConfigError(f"{name} must not be negative", field=f"config.{name}")


@dataclass
class _Stored:
    record: MemoryRecord
    vector: np.ndarray | None


def _text(value: object) -> str:
    """A reply as text (the client decodes replies; the stubs cannot know it)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _encode(stored: _Stored) -> str:
    r = stored.record
    vector = None
    if stored.vector is not None:
        vector = base64.b64encode(np.asarray(stored.vector, dtype="<f4").tobytes()).decode("ascii")
    return json.dumps(
        {
            "id": str(r.id),
            "owner": str(r.owner),
            "content": r.content,
            "type": r.type,
            "key": r.key,
            "sessionId": r.session_id,
            "metadata": r.metadata,
            "createdAt": _instant(r.created_at),
            "updatedAt": _instant(r.updated_at),
            "expiresAt": _instant(r.expires_at),
            "importance": r.importance,
            "embedding": vector,
        },
        ensure_ascii=False,
        default=str,
    )


def _decode(raw: bytes | str) -> _Stored:
    data = json.loads(raw)
    created = _parse_instant(data["createdAt"])
    updated = _parse_instant(data["updatedAt"])
    assert created is not None and updated is not None  # always written
    record = MemoryRecord(
        id=uuid.UUID(data["id"]),
        owner=uuid.UUID(data["owner"]),
        content=data["content"],
        type=data["type"],
        key=data["key"],
        session_id=data["sessionId"],
        metadata=dict(data["metadata"] or {}),
        created_at=created,
        updated_at=updated,
        expires_at=_parse_instant(data["expiresAt"]),
        importance=float(data["importance"]),
    )
    embedding = data.get("embedding")
    vector = None if embedding is None else np.frombuffer(base64.b64decode(embedding), dtype="<f4").copy()
    return _Stored(record, vector)


class RedisBackend(ScanReads, MemoryBackend):
    """Records in one Redis database under ``config.prefix``; see the module docstring."""

    type_name = "redis"
    capabilities = Capabilities(keyword=True, vector=True, hybrid=False, filters=True)

    def __init__(self, config: RedisConfig, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.config = config
        self._client: redis.Redis | None = None

    # -- plumbing

    @property
    def client(self) -> redis.Redis:
        """The client, made on first use (no connection is opened before a command)."""
        if self._client is None:
            c = self.config
            self._client = redis.Redis.from_url(
                c.url,
                decode_responses=True,
                socket_timeout=c.timeout_seconds,
                socket_connect_timeout=c.timeout_seconds,
                retry=Retry(ExponentialBackoff(cap=BACKOFF_CAP_SECONDS, base=c.backoff_seconds), c.retries),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            )
        return self._client

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except redis.RedisError as exc:
            raise BackendUnavailable(f"{self.name}: {type(exc).__name__}: {exc}", backend=self.name) from exc

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

    def _load(self, owner: uuid.UUID, ids: Sequence[str]) -> list[_Stored]:
        found: list[_Stored] = []
        for start in range(0, len(ids), FETCH_CHUNK):
            part = ids[start : start + FETCH_CHUNK]
            raws = self.client.mget([self._record_key(owner, uuid.UUID(i)) for i in part])
            found.extend(_decode(raw) for raw in raws if raw is not None)
        return found

    def _live(self, owner: uuid.UUID, filters: Filters, *, newest: int | None = None) -> list[_Stored]:
        """The owner's live records passing ``filters``, newest first (of the ``newest`` newest ids)."""
        end = -1 if newest is None else newest - 1
        ids = [_text(i) for i in self.client.zrevrange(self._index_key(owner), 0, end)]
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
                    return _decode(raw).record, False
            existing_id = pipe.hget(keys_key, draft.key) if draft.key else None
            raw = None
            if existing_id:
                existing_key = self._record_key(owner, uuid.UUID(_text(existing_id)))
                pipe.watch(existing_key)  # an edit of that record meanwhile retries this write
                raw = pipe.get(existing_key)
            if raw is not None:
                old = _decode(raw)
                record = draft.upserted(old.record, now)
                kept = (
                    vector
                    if vector is not None
                    else (old.vector if record.content == old.record.content else None)
                )
                pipe.multi()
                pipe.set(self._record_key(owner, record.id), _encode(_Stored(record, kept)))
                return record, False
            record = draft.new_record(now)
            pipe.multi()
            pipe.set(self._record_key(owner, record.id), _encode(_Stored(record, vector)))
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
            old = _decode(raw)
            if not old.record.live(timezone.now()):
                return None
            new_key = checked.get("key", old.record.key)
            if new_key and new_key != old.record.key:
                holder = pipe.hget(keys_key, new_key)
                if (
                    holder is not None
                    and holder != str(memory_id)
                    and pipe.exists(self._record_key(owner, uuid.UUID(_text(holder))))
                ):
                    raise Conflict(f"another memory of this owner already uses key {new_key!r}", field="key")
            record = dataclasses.replace(old.record, **checked, updated_at=timezone.now())
            vector = given
            if vector is None and record.content == old.record.content:
                vector = old.vector
            pipe.multi()
            pipe.set(record_key, _encode(_Stored(record, vector)))
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
            key = _decode(raw).record.key
            holder = pipe.hget(keys_key, key) if key else None
            pipe.multi()
            pipe.delete(record_key)
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
            ids = [_text(i) for i in pipe.zrange(index_key, 0, -1)]
            stored = self._load_with(pipe, owner, ids)
            doomed = [s.record for s in stored if not type or s.record.type == type]
            now = timezone.now()
            pipe.multi()
            for record in doomed:
                pipe.delete(self._record_key(owner, record.id))
                pipe.zrem(index_key, str(record.id))
                if record.key:
                    pipe.hdel(keys_key, record.key)
            return sum(1 for record in doomed if record.live(now))

        with self._guard():
            cleared: int = self._transaction(write, index_key, keys_key)
            return cleared

    def _load_with(self, pipe: redis.client.Pipeline, owner: uuid.UUID, ids: Sequence[str]) -> list[_Stored]:
        found: list[_Stored] = []
        for start in range(0, len(ids), FETCH_CHUNK):
            keys = [self._record_key(owner, uuid.UUID(i)) for i in ids[start : start + FETCH_CHUNK]]
            found.extend(_decode(raw) for raw in pipe.mget(keys) if raw is not None)
        return found

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        with self._guard():
            raw = self.client.get(self._record_key(owner, memory_id))
        if raw is None:
            return None
        record = _decode(raw).record
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
        except (redis.RedisError, BackendUnavailable) as exc:
            latency = round((time.perf_counter() - started) * 1000, 3)
            return Health(False, latency, f"{type(exc).__name__}: {exc}")
        detail = {
            "version": version,
            "redisearch": redisearch,
            "vectorSearch": f"bounded scan: the {self.config.scan_limit} newest records per owner, exact cosine",
            "keywordSearch": f"bounded scan: the {self.config.scan_limit} newest records per owner, BM25",
            "dimension": dimension,
            "prefix": self.config.prefix,
            "persistent": True,
        }
        return Health(True, latency, None, detail)
