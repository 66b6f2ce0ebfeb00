"""The Pinecone backend: one record per vector of a dense Pinecone index, through the official
``pinecone`` client (its ``Index`` data plane over HTTPS).

Layout, for an owner ``O`` (32 hex digits):

* the namespace ``{namespace_prefix}{O}`` holds the owner's records, one vector each, whose id is the
  memory id;
* every vector's metadata holds the whole record in Pinecone's metadata types (strings, numbers,
  booleans): ``owner`` (``O`` again), ``content``, ``type``, ``key`` (``""``: none), ``sessionId``,
  ``metadataJson`` (the record's metadata as a JSON string: Pinecone metadata holds no nested
  objects), ``createdAt``/``updatedAt``/``expiresAt`` (ISO 8601, exact) with ``createdTs`` and
  ``expiresTs`` (epoch seconds, for filters; ``NEVER_TS`` when there is no expiry, since metadata holds
  no null), ``importance`` and ``hasVector``.

Isolation is never left to the server alone: every request names the owner's namespace *and* filters on
``owner``, and every record that comes back is checked again here (owner, expiry, filters); one that
fails is dropped and logged.

Pinecone stores no vector-less records, so a record stored without an embedding carries the fixed
``placeholder_vector`` with ``hasVector: false``, and vector queries filter on ``hasVector``. Pinecone
has no full-text search: the keyword capability is false and :meth:`PineconeBackend.search` raises
``BackendUnsupported`` (a scan of every record's metadata per query would cost the owner's whole
namespace in read units each time). Lists and counts page through ``fetch_by_metadata`` (exact; time
and read units linear in the owner's records).

Pinecone serverless is eventually consistent: a write is acknowledged before every read sees it
(usually within a second). The conformance suite runs against a consistent stand-in
(``tests/memory/backends/fake_pinecone.py``); against the real service, a read straight after a write
may miss it. The client retries 408/429/5xx three times with jittered backoff (its own policy); every
error left after that, and every refusal by the outbound URL policy, is ``BackendUnavailable``.
"""

from __future__ import annotations

import builtins
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.utils import timezone
from pinecone import Index, PineconeError

from memory.backends.base import (
    NO_FILTERS,
    BackendConfigError,
    BackendInputError,
    BackendUnavailable,
    BackendUnsupported,
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
from memory.conf import get_memory_settings
from memory.exceptions import Conflict
from memory.urlpolicy import UrlPolicyError, check_outbound_url

logger = logging.getLogger("memory.backends")

# 9999-12-31T23:59:59Z: the expiresTs of a record that never expires.
NEVER_TS = 253402300799.0
# Pinecone keeps at most 40 KB of metadata per record.
METADATA_LIMIT_BYTES = 40 * 1024
# The largest top_k of a query and the largest page of fetch_by_metadata the API accepts.
QUERY_TOP_K_MAX = 10_000
PAGE_SIZE = 1_000
# The most ids one delete request takes.
DELETE_CHUNK = 1_000
# Filters compare epoch floats; a millisecond of slack keeps float rounding from dropping a record at
# the boundary, which the exact check in this process then decides.
SLACK_SECONDS = 0.001


@dataclass(frozen=True)
class PineconeConfig:
    """A dense Pinecone index (created with the ``cosine`` metric): ``host`` is its data-plane host
    (``https://<index>-<project>.svc.<region>.pinecone.io``; a host without a scheme gets ``https://``),
    ``api_key`` a key of its project. ``dimension`` is the index's (None: read from the index's stats
    on first use). ``timeout_seconds`` bounds each request."""

    host: str
    api_key: str
    namespace_prefix: str = "omr-"
    dimension: int | None = None
    timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        if "://" not in self.host:
            object.__setattr__(self, "host", f"https://{self.host}")
        object.__setattr__(self, "host", self.host.rstrip("/"))
        try:
            # Names are resolved before the client is built (PineconeBackend.index), not on save.
            check_outbound_url(
                self.host, allow_private=get_memory_settings().private_urls_allowed, resolve=False
            )
        except UrlPolicyError as exc:
            raise BackendConfigError(f"host: {exc}", field="config.host") from None
        if not self.api_key.strip():
            raise BackendConfigError("api_key must not be empty", field="config.api_key")
        check_dimension(self.dimension)
        if self.timeout_seconds <= 0:
            raise BackendConfigError("timeout_seconds must be positive", field="config.timeout_seconds")


def _ts(value: datetime) -> float:
    return value.timestamp()


def _metadata(record: MemoryRecord, *, has_vector: bool) -> dict[str, Any]:
    return {
        "owner": record.owner.hex,
        "content": record.content,
        "type": record.type,
        "key": record.key or "",
        "sessionId": record.session_id,
        "metadataJson": json.dumps(record.metadata, ensure_ascii=False, default=str),
        "createdAt": record.created_at.isoformat(),
        "createdTs": _ts(record.created_at),
        "updatedAt": record.updated_at.isoformat(),
        "expiresAt": record.expires_at.isoformat() if record.expires_at else "",
        "expiresTs": _ts(record.expires_at) if record.expires_at else NEVER_TS,
        "importance": record.importance,
        "hasVector": has_vector,
    }


def _record(memory_id: str, metadata: Mapping[str, Any]) -> MemoryRecord:
    """The record a vector's metadata holds; ``ValueError``/``KeyError`` when it holds none."""
    return MemoryRecord(
        id=uuid.UUID(memory_id),
        owner=uuid.UUID(str(metadata["owner"])),
        content=str(metadata["content"]),
        type=str(metadata["type"]),
        key=str(metadata["key"]) or None,
        session_id=str(metadata["sessionId"]),
        metadata=dict(json.loads(str(metadata["metadataJson"]))),
        created_at=datetime.fromisoformat(str(metadata["createdAt"])),
        updated_at=datetime.fromisoformat(str(metadata["updatedAt"])),
        expires_at=datetime.fromisoformat(str(metadata["expiresAt"])) if metadata["expiresAt"] else None,
        importance=float(metadata["importance"]),
    )


@dataclass
class _Stored:
    record: MemoryRecord
    values: builtins.list[float]
    has_vector: bool


class PineconeBackend(ScanReads, MemoryBackend):
    """Records as vectors of one Pinecone index, a namespace per owner; see the module docstring."""

    type_name = "pinecone"
    capabilities = Capabilities(keyword=False, vector=True, hybrid=False, filters=True)

    def __init__(self, config: PineconeConfig, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.config = config
        self._lock = threading.Lock()
        self._index: Index | None = None
        self._index_private: bool | None = None
        self._dimension = config.dimension

    # -- plumbing

    @property
    def index(self) -> Index:
        """The data-plane client, built once the outbound URL policy (names resolved) admits the host;
        rebuilt, and checked again, when the private-network switch changes."""
        private = get_memory_settings().private_urls_allowed
        with self._lock:
            if self._index is None or self._index_private != private:
                try:
                    check_outbound_url(self.config.host, allow_private=private)
                except UrlPolicyError as exc:
                    raise BackendUnavailable(
                        f"{self.name}: refused by the outbound URL policy: {exc}", backend=self.name
                    ) from None
                if self._index is not None:
                    self._index.close()
                self._index = Index(
                    host=self.config.host,
                    api_key=self.config.api_key,
                    timeout=self.config.timeout_seconds,
                    source_tag="omniroute_memory",
                )
                self._index_private = private
            return self._index

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except PineconeError as exc:
            raise BackendUnavailable(f"{self.name}: {type(exc).__name__}: {exc}", backend=self.name) from exc

    def _namespace(self, owner: uuid.UUID) -> str:
        return f"{self.config.namespace_prefix}{owner.hex}"

    @property
    def vector_dimension(self) -> int | None:
        if self._dimension is None:
            with self._guard():
                self._dimension = self.index.describe_index_stats().dimension
        return self._dimension

    def _placeholder(self) -> builtins.list[float]:
        """The vector of a record stored without one (never ranked: queries filter on hasVector)."""
        dimension = self.vector_dimension
        if dimension is None:
            raise BackendUnavailable(f"{self.name}: the index reports no dimension", backend=self.name)
        return [1.0] + [0.0] * (dimension - 1)

    def _filter(self, owner: uuid.UUID, filters: Filters, **extra: Any) -> dict[str, Any]:
        """The Pinecone filter of the owner's live records passing ``filters``."""
        now = _ts(timezone.now())
        clauses: builtins.list[dict[str, Any]] = [
            {"owner": {"$eq": owner.hex}},
            {"expiresTs": {"$gt": now - SLACK_SECONDS}},
        ]
        if filters.session_id:
            clauses.append({"sessionId": {"$eq": filters.session_id}})
        if filters.type:
            clauses.append({"type": {"$eq": filters.type}})
        if filters.created_after is not None:
            clauses.append({"createdTs": {"$gte": _ts(filters.created_after) - SLACK_SECONDS}})
        clauses.extend({name: {"$eq": value}} for name, value in extra.items())
        return {"$and": clauses}

    def _own(
        self, owner: uuid.UUID, memory_id: str, metadata: Mapping[str, Any] | None
    ) -> MemoryRecord | None:
        """The record of a returned vector when it is the owner's; None (logged) otherwise."""
        try:
            record = _record(memory_id, metadata or {})
        except (KeyError, ValueError, TypeError) as exc:
            logger.warning("%s: vector %s holds no memory record (%s); ignored", self.name, memory_id, exc)
            return None
        if record.owner != owner:
            logger.warning(
                "%s: vector %s of another owner came back in %s's namespace; ignored",
                self.name,
                memory_id,
                owner.hex,
            )
            return None
        return record

    def _fetch(self, owner: uuid.UUID, memory_id: uuid.UUID) -> _Stored | None:
        response = self.index.fetch(ids=[str(memory_id)], namespace=self._namespace(owner))
        vector = response.vectors.get(str(memory_id))
        if vector is None:
            return None
        record = self._own(owner, vector.id, vector.metadata)
        if record is None or record.id != memory_id:
            return None
        return _Stored(record, list(vector.values), bool((vector.metadata or {}).get("hasVector")))

    def _scan(self, owner: uuid.UUID, query: dict[str, Any]) -> builtins.list[_Stored]:
        """Every vector of the owner's namespace that ``query`` admits, checked here, all pages."""
        found: builtins.list[_Stored] = []
        token: str | None = None
        while True:
            page = self.index.fetch_by_metadata(
                filter=query, namespace=self._namespace(owner), limit=PAGE_SIZE, pagination_token=token
            )
            for vector in page.vectors.values():
                record = self._own(owner, vector.id, vector.metadata)
                if record is not None:
                    has_vector = bool((vector.metadata or {}).get("hasVector"))
                    found.append(_Stored(record, list(vector.values), has_vector))
            token = page.pagination.next if page.pagination else None
            if not token:
                return found

    def _live(self, owner: uuid.UUID, filters: Filters) -> builtins.list[_Stored]:
        now = timezone.now()
        stored = [
            s
            for s in self._scan(owner, self._filter(owner, filters))
            if s.record.live(now) and filters.admits(s.record)
        ]
        stored.sort(key=lambda s: (s.record.created_at, str(s.record.id)), reverse=True)
        return stored

    def _by_key(self, owner: uuid.UUID, key: str) -> _Stored | None:
        query = {"$and": [{"owner": {"$eq": owner.hex}}, {"key": {"$eq": key}}]}
        matches = [s for s in self._scan(owner, query) if s.record.key == key]
        matches.sort(key=lambda s: s.record.created_at)
        return matches[0] if matches else None

    def _write(self, record: MemoryRecord, values: Sequence[float], *, has_vector: bool) -> None:
        metadata = _metadata(record, has_vector=has_vector)
        size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
        if size > METADATA_LIMIT_BYTES:
            raise BackendInputError(
                f"this record needs {size} bytes of Pinecone metadata; Pinecone keeps at most "
                f"{METADATA_LIMIT_BYTES} per record (content and metadata together)",
                field="content",
            )
        self.index.upsert(
            vectors=[{"id": str(record.id), "values": list(values), "metadata": metadata}],
            namespace=self._namespace(record.owner),
        )

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
            vector = as_vector(embedding, dimension=self.vector_dimension, field="embedding")
            return self._store(draft, vector)

    def _store(self, draft: MemoryDraft, vector: np.ndarray | None) -> tuple[MemoryRecord, bool]:
        now = timezone.now()
        if draft.id is not None:
            known = self._fetch(draft.owner, draft.id)
            if known is not None:
                return known.record, False
        existing = self._by_key(draft.owner, draft.key) if draft.key else None
        if existing is not None:
            old = existing.record
            record = draft.upserted(old, now)
            if vector is not None:
                self._write(record, vector.tolist(), has_vector=True)
            elif existing.has_vector and record.content == old.content:
                self._write(record, existing.values, has_vector=True)
            else:
                self._write(record, self._placeholder(), has_vector=False)
            return record, False
        record = draft.new_record(now)
        if vector is not None:
            self._write(record, vector.tolist(), has_vector=True)
        else:
            self._write(record, self._placeholder(), has_vector=False)
        return record, True

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
        with self._guard():
            vector = (
                None
                if embedding is None
                else as_vector(embedding, dimension=self.vector_dimension, field="embedding")
            )
            stored = self._fetch(owner, memory_id)
            if stored is None or not stored.record.live(timezone.now()):
                return None
            old = stored.record
            key = checked.get("key", old.key)
            if key and key != old.key:
                holder = self._by_key(owner, key)
                if holder is not None and holder.record.id != memory_id:
                    raise Conflict(f"another memory of this owner already uses key {key!r}", field="key")
            fields = {
                "type": old.type,
                "key": old.key,
                "content": old.content,
                "metadata": old.metadata,
                "expires_at": old.expires_at,
                "importance": old.importance,
                **checked,
            }
            record = MemoryRecord(
                id=old.id,
                owner=old.owner,
                session_id=old.session_id,
                created_at=old.created_at,
                updated_at=timezone.now(),
                type=fields["type"],
                key=fields["key"],
                content=fields["content"],
                metadata=dict(fields["metadata"]),
                expires_at=fields["expires_at"],
                importance=float(fields["importance"]),
            )
            if vector is not None:
                self._write(record, vector.tolist(), has_vector=True)
            elif stored.has_vector and record.content == old.content:
                self._write(record, stored.values, has_vector=True)
            else:
                self._write(record, self._placeholder(), has_vector=False)
            return record

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        with self._guard():
            if self._fetch(owner, memory_id) is None:
                return False
            self.index.delete(ids=[str(memory_id)], namespace=self._namespace(owner))
            return True

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        selector: builtins.list[dict[str, Any]] = [{"owner": {"$eq": owner.hex}}]
        if type:
            selector.append({"type": {"$eq": type}})
        with self._guard():
            doomed = [s for s in self._scan(owner, {"$and": selector}) if not type or s.record.type == type]
            if not doomed:
                return 0
            now = timezone.now()
            # By ids, not by the filter: exactly the records counted (and checked) are deleted.
            ids = [str(s.record.id) for s in doomed]
            for start in range(0, len(ids), DELETE_CHUNK):
                self.index.delete(ids=ids[start : start + DELETE_CHUNK], namespace=self._namespace(owner))
            return sum(1 for s in doomed if s.record.live(now))

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        with self._guard():
            stored = self._fetch(owner, memory_id)
        if stored is None or not stored.record.live(timezone.now()):
            return None
        return stored.record

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        raise BackendUnsupported(
            f"{self.name}: Pinecone has no full-text search; use search_similar", backend=self.name
        )

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        if limit > QUERY_TOP_K_MAX:
            raise BackendInputError(f"limit must be at most {QUERY_TOP_K_MAX} on Pinecone", field="limit")
        with self._guard():
            query = as_vector(vector, dimension=self.vector_dimension, field="vector")
            response = self.index.query(
                top_k=limit,
                vector=query.tolist(),
                namespace=self._namespace(owner),
                filter=self._filter(owner, filters, hasVector=True),
                include_metadata=True,
            )
        now = timezone.now()
        hits: builtins.list[MemoryHit] = []
        for match in response.matches:
            record = self._own(owner, match.id, match.metadata)
            if (
                record is not None
                and record.live(now)
                and filters.admits(record)
                and (match.metadata or {}).get("hasVector")
                and math.isfinite(match.score)
            ):
                hits.append(MemoryHit(record, float(match.score), "vector"))
        return hits

    def health(self) -> Health:
        started = time.perf_counter()
        try:
            with self._guard():
                stats = self.index.describe_index_stats()
        except BackendUnavailable as exc:
            return Health(False, round((time.perf_counter() - started) * 1000, 3), str(exc))
        latency = round((time.perf_counter() - started) * 1000, 3)
        if self._dimension is None:
            self._dimension = stats.dimension
        detail = {
            "host": self.config.host,
            "dimension": stats.dimension,
            "metric": stats.metric,
            "vectorCount": stats.total_vector_count,
            "namespaces": len(stats.namespaces),
            "vectorSearch": "Pinecone query (server-side, the index's metric), filtered by owner",
            "keywordSearch": None,
            "consistency": "eventual: a write may take a moment to be visible to reads",
            "persistent": True,
        }
        if stats.metric not in (None, "cosine"):
            return Health(
                False,
                latency,
                f"the index's metric is {stats.metric}; memory search needs a cosine index",
                detail,
            )
        return Health(True, latency, None, detail)
