"""The ChromaDB backend: memories in a Chroma server over its REST v2 API (Orkeon's
ChromaDbMemoryProvider), spoken with httpx; the ``chromadb`` package is not imported.

Routes are the tenant/database ones, ``/api/v2/tenants/{tenant}/databases/{database}/collections/…``,
which servers from 0.6 and the 1.x series serve (the ``/api/v1`` routes answer 410 there). The tenant
and database must exist (``default_tenant``/``default_database`` always do); the two collections are
made on first use with ``get_or_create``:

* ``{collection}`` — every record: the content as the document, the fields as metadata. Chroma
  requires an embedding for every entry, and a memory may have none, so this collection holds a
  constant one-dimensional placeholder and is never queried by vector.
* ``{collection}-vectors`` — the vectors that callers gave (cosine space), one per record that has one.
  Chroma fixes its dimension with the first vector and refuses any other afterwards; that dimension is
  this backend's :attr:`~ChromaBackend.vector_dimension` unless ``dimension`` is configured.

Every owner's entries share the two collections. Isolation does not rest on Chroma's filters alone:
an entry's Chroma id is ``{owner hex}-{memory id}``, so an id of another owner cannot be addressed,
every query carries ``where owner = …``, and every entry that comes back is checked for its owner (and
its expiry and the filters) before it is returned, counted or ranked.

A record names its vector by a random token that the vector's metadata repeats. A vector whose token
is not its record's (a write that failed half-way, a content change whose vector delete failed) is
never ranked, so the two collections never disagree in what a read returns.

Embeddings are ours: nothing here sends documents to be embedded, and the server's default embedding
function (a model the Python client would download) is never involved.

Reads: lists, counts and keyword search read every entry of the owner that passes the filters (Chroma
applies them; exact, at a cost linear in them); keyword search ranks them by BM25 in this process, as
the in-memory backend. Vector search asks Chroma for the nearest vectors of the owner, then ranks the
verified ones by exact cosine with numpy; when verification drops some, it asks for more.

Writes of one process are serialised by a lock, which makes the ``(owner, key)`` upsert and the key
conflict of ``update`` exact within a process. Chroma has no transactions, so two processes writing
the same key at the same moment may make two records of it.

The URL passes the outbound URL policy (:func:`memory.urlpolicy.check_outbound_url`, the one
private-network switch) when the configuration is parsed (no DNS) and again, names resolved, before
the HTTP client is made. A server with token authentication gets ``token`` on every request, in the
header Chroma's token auth reads (``token_header``: ``Authorization: Bearer <token>``, Chroma's
default, or ``X-Chroma-Token: <token>``).

Connection failures are retried ``retries`` times (httpx's transport retries); every transport error,
timeout and error answer of the server becomes ``BackendUnavailable``, except Chroma refusing a vector
of another dimension (``BackendInputError``). What those errors say is the status and Chroma's error
name, never the body: whatever answers at the URL (another service, a proxy) is not shown to callers.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
import numpy as np
from django.utils import timezone

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
    Page,
    as_vector,
    check_changes,
    check_dimension,
    check_draft,
    check_page,
)
from memory.backends.guarded import PolicyClient
from memory.backends.scoring import bm25_rank
from memory.conf import get_memory_settings
from memory.exceptions import Conflict
from memory.urlpolicy import UrlPolicyError, check_outbound_url

logger = logging.getLogger("memory.backends")

# Entries read per ``get`` request, and ids sent per ``get``/``delete`` request.
FETCH_PAGE = 1000
# Chroma's collection names: 3–512 characters of [a-zA-Z0-9._-], alphanumeric at both ends.
COLLECTION_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]{1,502}[a-zA-Z0-9])")
VECTORS_SUFFIX = "-vectors"
# The records collection's stand-in embedding (Chroma requires one per entry).
PLACEHOLDER = [1.0]
# ``expires_us`` of a record that never expires, so that "live" is one range filter on the server.
NEVER = 2**62
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Chroma's answer when a vector's dimension differs from its collection's.
DIMENSION_REFUSED = re.compile(r"dimension", re.IGNORECASE)
# The headers Chroma's token authentication reads the token from.
TOKEN_HEADERS = ("Authorization", "X-Chroma-Token")
# Chroma's error names ("NotFoundError", "InvalidArgumentError"): the only part of an error body shown.
ERROR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# A token is sent in a header: printable ASCII without spaces.
TOKEN = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True)
class ChromaConfig:
    """A Chroma server (``url``: ``http://`` or ``https://``, a path after the host is kept, for a
    server behind a reverse proxy); ``tenant`` and ``database`` must exist there; ``collection``
    names the records' collection (the vectors' is ``{collection}-vectors``). ``dimension`` fixes the
    vector dimension (None: the first stored vector fixes it). ``retries`` retries a failed connection;
    ``timeout_seconds`` bounds each request. ``token`` (a secret: masked on read) is sent on every
    request in ``token_header`` (``Authorization``, as a bearer token, or ``X-Chroma-Token``)."""

    url: str
    tenant: str = "default_tenant"
    database: str = "default_database"
    collection: str = "omr_memories"
    dimension: int | None = None
    retries: int = 2
    timeout_seconds: float = 5.0
    token: str = ""
    token_header: str = "Authorization"

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")) or len(self.url.split("://", 1)[1]) == 0:
            raise BackendConfigError("url must be an http:// or https:// URL", field="config.url")
        try:
            # Names are resolved before the client is made (ChromaBackend.client), not on save.
            check_outbound_url(
                self.url, allow_private=get_memory_settings().private_urls_allowed, resolve=False
            )
        except UrlPolicyError as exc:
            raise BackendConfigError(f"url: {exc}", field="config.url") from None
        if self.token and not TOKEN.fullmatch(self.token):
            raise BackendConfigError(
                "token must be printable ASCII without spaces (it is sent in a header)", field="config.token"
            )
        if self.token_header not in TOKEN_HEADERS:
            raise BackendConfigError(
                f"token_header must be one of {', '.join(TOKEN_HEADERS)}", field="config.token_header"
            )
        for name in ("tenant", "database"):
            if not getattr(self, name).strip():
                raise BackendConfigError(f"{name} must not be empty", field=f"config.{name}")
        if not COLLECTION_NAME.fullmatch(self.collection):
            raise BackendConfigError(
                "collection must be 3 to 504 characters of letters, digits, '.', '_' or '-', "
                "starting and ending with a letter or digit",
                field="config.collection",
            )
        check_dimension(self.dimension)
        if self.retries < 0:
            raise BackendConfigError("retries must not be negative", field="config.retries")
        if self.timeout_seconds <= 0:
            raise BackendConfigError("timeout_seconds must be positive", field="config.timeout_seconds")


@dataclass
class _Stored:
    record: MemoryRecord
    token: str  # the vector's token; "" when the record has no vector


def _micros(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1)


def _instant(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=int(micros))


def _metadata(stored: _Stored) -> dict[str, Any]:
    r = stored.record
    return {
        "owner": r.owner.hex,
        "key": r.key or "",
        "session": r.session_id,
        "type": r.type,
        "created_us": _micros(r.created_at),
        "updated_us": _micros(r.updated_at),
        "expires_us": NEVER if r.expires_at is None else _micros(r.expires_at),
        "importance": float(r.importance),
        "metadata": json.dumps(r.metadata, ensure_ascii=False, default=str),
        "vector": stored.token,
    }


def _decode(document: str | None, meta: Mapping[str, Any], memory_id: uuid.UUID) -> _Stored:
    expires = int(meta["expires_us"])
    record = MemoryRecord(
        id=memory_id,
        owner=uuid.UUID(hex=str(meta["owner"])),
        content=document or "",
        type=str(meta["type"]),
        key=str(meta["key"]) or None,
        session_id=str(meta["session"]),
        metadata=dict(json.loads(meta["metadata"]) or {}),
        created_at=_instant(meta["created_us"]),
        updated_at=_instant(meta["updated_us"]),
        expires_at=None if expires >= NEVER else _instant(expires),
        importance=float(meta["importance"]),
    )
    return _Stored(record, str(meta.get("vector") or ""))


def _where(clauses: builtins.list[dict[str, Any]]) -> dict[str, Any]:
    # Chroma refuses an ``$and`` of fewer than two clauses.
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class ChromaBackend(MemoryBackend):
    """Records in two collections of a Chroma server; see the module docstring."""

    type_name = "chromadb"
    capabilities = Capabilities(keyword=True, vector=True, hybrid=False, filters=True)

    def __init__(self, config: ChromaConfig, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.config = config
        self._client = PolicyClient(
            self.name,
            lambda private: check_outbound_url(config.url, allow_private=private),
            self._new_client,
        )
        self._collections: dict[str, str] = {}
        self._dimension: int | None = config.dimension
        self._lock = threading.RLock()

    # -- plumbing

    @property
    def client(self) -> httpx.Client:
        """The HTTP client, made once the outbound URL policy (names resolved) admits the URL; made
        again, and checked again, when the private-network switch changes (``PolicyClient``)."""
        return self._client.get()

    def _new_client(self) -> httpx.Client:
        """Redirects are not followed: a 30x to an internal address is no way round the policy."""
        c = self.config
        return httpx.Client(
            base_url=c.url.rstrip("/"),
            timeout=c.timeout_seconds,
            transport=httpx.HTTPTransport(retries=c.retries),
            headers=self._headers(),
            follow_redirects=False,
        )

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "application/json"}
        c = self.config
        if c.token:
            headers[c.token_header] = f"Bearer {c.token}" if c.token_header == "Authorization" else c.token
        return headers

    @property
    def _database_path(self) -> str:
        c = self.config
        return f"/api/v2/tenants/{quote(c.tenant, safe='')}/databases/{quote(c.database, safe='')}"

    def _request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, *, vector_field: str = ""
    ) -> Any:
        """The server's JSON answer to one request. Transport errors and error answers raise
        ``BackendUnavailable``; with ``vector_field``, Chroma refusing a vector's dimension raises
        ``BackendInputError`` naming that field."""
        try:
            response = self.client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"{self.name}: {type(exc).__name__}: {exc}", backend=self.name) from exc
        if response.is_success:
            try:
                return response.json()
            except ValueError as exc:
                raise BackendUnavailable(
                    f"{self.name}: the server answered {method} {path} with no JSON", backend=self.name
                ) from exc
        # The body is read to classify the failure, never repeated: it is whatever answered.
        message, name = response.text[:300], ""
        try:
            answer = response.json()
            message = str(answer.get("message") or answer.get("error") or message)
            error = str(answer.get("error") or "")
            name = error if ERROR_NAME.fullmatch(error) else ""
        except (ValueError, AttributeError):
            pass
        if vector_field and response.status_code < 500 and DIMENSION_REFUSED.search(message):
            raise BackendInputError(
                f"{vector_field}: its dimension is not the collection's",
                field=vector_field,
                backend=self.name,
            )
        if response.status_code == 404 or "does not exist" in message:
            # A collection deleted on the server (1.x: 404; 0.6: 400 "… does not exist") is made
            # again on the next use.
            self._collections.clear()
            self._dimension = self.config.dimension
        status = f"{response.status_code} {response.reason_phrase}".strip()
        raise BackendUnavailable(
            f"{self.name}: {method} {path} answered {status}{f' ({name})' if name else ''}", backend=self.name
        )

    def _collection(self, name: str) -> str:
        """The id of collection ``name``, made with get_or_create on first use."""
        known = self._collections.get(name)
        if known is not None:
            return known
        return str(self._resolve(name)["id"])

    def _resolve(self, name: str) -> dict[str, Any]:
        """Chroma's description of collection ``name`` (its id, metadata, dimension), which
        get_or_create makes when it is missing; the id is remembered."""
        answer: dict[str, Any] = self._request(
            "POST",
            f"{self._database_path}/collections",
            {"name": name, "metadata": {"hnsw:space": "cosine"}, "get_or_create": True},
        )
        space = (answer.get("metadata") or {}).get("hnsw:space", "l2")
        if name.endswith(VECTORS_SUFFIX) and space != "cosine":
            raise BackendConfigError(
                f"collection {name!r} exists with distance {space!r}; this backend needs cosine",
                field="config.collection",
                backend=self.name,
            )
        self._collections[name] = str(answer["id"])
        return answer

    def _path(self, name: str, operation: str) -> str:
        return f"{self._database_path}/collections/{self._collection(name)}/{operation}"

    @property
    def _records(self) -> str:
        return self.config.collection

    @property
    def _vectors(self) -> str:
        return f"{self.config.collection}{VECTORS_SUFFIX}"

    @staticmethod
    def _chroma_id(owner: uuid.UUID, memory_id: uuid.UUID) -> str:
        return f"{owner.hex}-{memory_id}"

    @staticmethod
    def _memory_id(chroma_id: str) -> uuid.UUID:
        return uuid.UUID(chroma_id.split("-", 1)[1])

    def _get(self, body: dict[str, Any]) -> builtins.list[tuple[str, str | None, dict[str, Any]]]:
        """``(id, document, metadata)`` of the records ``body`` selects, every page of them."""
        found: builtins.list[tuple[str, str | None, dict[str, Any]]] = []
        offset = 0
        while True:
            answer = self._request(
                "POST",
                self._path(self._records, "get"),
                {**body, "include": ["documents", "metadatas"], "limit": FETCH_PAGE, "offset": offset},
            )
            ids = answer.get("ids") or []
            documents = answer.get("documents") or [None] * len(ids)
            metadatas = answer.get("metadatas") or [None] * len(ids)
            found.extend(
                (i, d, m) for i, d, m in zip(ids, documents, metadatas, strict=True) if m is not None
            )
            if len(ids) < FETCH_PAGE:
                return found
            offset += FETCH_PAGE

    def _owned(
        self, owner: uuid.UUID, rows: builtins.list[tuple[str, str | None, dict[str, Any]]]
    ) -> builtins.list[_Stored]:
        """The rows that are the owner's, decoded; any other is dropped, whatever the server said."""
        kept: builtins.list[_Stored] = []
        prefix = f"{owner.hex}-"
        for chroma_id, document, meta in rows:
            if meta.get("owner") != owner.hex or not chroma_id.startswith(prefix):
                logger.warning("%s: the server returned an entry of another owner; dropped", self.name)
                continue
            kept.append(_decode(document, meta, self._memory_id(chroma_id)))
        return kept

    def _by_ids(self, owner: uuid.UUID, memory_ids: Sequence[uuid.UUID]) -> builtins.list[_Stored]:
        found: builtins.list[_Stored] = []
        for start in range(0, len(memory_ids), FETCH_PAGE):
            part = [self._chroma_id(owner, i) for i in memory_ids[start : start + FETCH_PAGE]]
            found.extend(self._owned(owner, self._get({"ids": part, "where": {"owner": owner.hex}})))
        return found

    def _one(self, owner: uuid.UUID, memory_id: uuid.UUID) -> _Stored | None:
        """The owner's record ``memory_id``, expired or not."""
        found = self._by_ids(owner, [memory_id])
        return found[0] if found else None

    def _by_key(self, owner: uuid.UUID, key: str) -> _Stored | None:
        found = self._owned(owner, self._get({"where": _where([{"owner": owner.hex}, {"key": key}])}))
        found = [s for s in found if s.record.key == key]
        return min(found, key=lambda s: s.record.created_at) if found else None

    def _live(self, owner: uuid.UUID, filters: Filters, *, type: str | None = None) -> builtins.list[_Stored]:
        """The owner's live records passing ``filters``, newest first (Chroma filters, then we check)."""
        now = timezone.now()
        clauses: builtins.list[dict[str, Any]] = [
            {"owner": owner.hex},
            {"expires_us": {"$gt": _micros(now)}},
        ]
        if filters.session_id:
            clauses.append({"session": filters.session_id})
        if filters.type:
            clauses.append({"type": filters.type})
        if filters.created_after is not None:
            clauses.append({"created_us": {"$gte": _micros(filters.created_after)}})
        stored = [
            s
            for s in self._owned(owner, self._get({"where": _where(clauses)}))
            if s.record.live(now) and filters.admits(s.record)
        ]
        stored.sort(key=lambda s: s.record.created_at, reverse=True)
        return stored

    def _write_record(self, stored: _Stored) -> None:
        r = stored.record
        self._request(
            "POST",
            self._path(self._records, "upsert"),
            {
                "ids": [self._chroma_id(r.owner, r.id)],
                "embeddings": [PLACEHOLDER],
                "documents": [r.content],
                "metadatas": [_metadata(stored)],
            },
        )

    def _write_vector(self, owner: uuid.UUID, memory_id: uuid.UUID, vector: np.ndarray) -> str:
        """Upsert the record's vector under a new token; returns the token."""
        token = uuid.uuid4().hex
        self._request(
            "POST",
            self._path(self._vectors, "upsert"),
            {
                "ids": [self._chroma_id(owner, memory_id)],
                "embeddings": [[float(x) for x in vector]],
                "metadatas": [{"owner": owner.hex, "vector": token}],
            },
            vector_field="embedding",
        )
        if self._dimension is None:
            self._dimension = int(vector.size)
        return token

    def _drop_vectors(self, owner: uuid.UUID, memory_ids: Sequence[uuid.UUID]) -> None:
        """Delete these records' vectors after their records changed. A failure leaves vectors whose
        token no record holds, which no search ranks; it is logged, not raised, since the write the
        caller asked for is done."""
        try:
            self._delete(self._vectors, [self._chroma_id(owner, i) for i in memory_ids])
        except BackendUnavailable as exc:
            logger.warning("%s: stale vectors left (never ranked): %s", self.name, exc)

    def _delete(self, collection: str, chroma_ids: Sequence[str]) -> None:
        for start in range(0, len(chroma_ids), FETCH_PAGE):
            self._request(
                "POST",
                self._path(collection, "delete"),
                {"ids": list(chroma_ids[start : start + FETCH_PAGE])},
            )

    @property
    def vector_dimension(self) -> int | None:
        if self._dimension is None:
            dimension = self._resolve(self._vectors).get("dimension")
            if isinstance(dimension, int) and dimension > 0:
                self._dimension = dimension
        return self._dimension

    def heartbeat(self) -> bool:
        """Whether the server answers ``GET /api/v2/heartbeat``; False (never an error) when it is
        unreachable or answers with an error."""
        try:
            self._request("GET", "/api/v2/heartbeat")
        except BackendUnavailable:
            return False
        return True

    # -- writes

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with self._lock:
            return self._store(draft, None)

    def store_with_embedding(
        self, draft: MemoryDraft, embedding: Sequence[float] | np.ndarray
    ) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with self._lock:
            vector = as_vector(embedding, dimension=self.vector_dimension, field="embedding")
            return self._store(draft, vector)

    def _store(self, draft: MemoryDraft, vector: np.ndarray | None) -> tuple[MemoryRecord, bool]:
        owner = draft.owner
        now = timezone.now()
        if draft.id is not None:
            same = self._one(owner, draft.id)
            if same is not None:
                return same.record, False
        old = self._by_key(owner, draft.key) if draft.key else None
        if old is not None:
            record = draft.upserted(old.record, now)
            if vector is not None:
                token = self._write_vector(owner, record.id, vector)
            else:
                token = old.token if record.content == old.record.content else ""
            self._write_record(_Stored(record, token))
            if old.token and not token:
                self._drop_vectors(owner, [record.id])
            return record, False
        record = draft.new_record(now)
        # The vector goes first: if the record's write then fails, the vector's token is no record's.
        token = "" if vector is None else self._write_vector(owner, record.id, vector)
        self._write_record(_Stored(record, token))
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
        if "importance" in checked:
            checked["importance"] = float(checked["importance"])
        with self._lock:
            vector = (
                None
                if embedding is None
                else as_vector(embedding, dimension=self.vector_dimension, field="embedding")
            )
            old = self._one(owner, memory_id)
            if old is None or not old.record.live(timezone.now()):
                return None
            new_key = checked.get("key", old.record.key)
            if new_key and new_key != old.record.key:
                holder = self._by_key(owner, new_key)
                if holder is not None and holder.record.id != memory_id:
                    raise Conflict(f"another memory of this owner already uses key {new_key!r}", field="key")
            record = dataclasses.replace(old.record, **checked, updated_at=timezone.now())
            if vector is not None:
                # The vector goes first, under a new token: until the record names it, it is not ranked.
                token = self._write_vector(owner, memory_id, vector)
            else:
                token = old.token if record.content == old.record.content else ""
            self._write_record(_Stored(record, token))
            if old.token and not token:
                self._drop_vectors(owner, [memory_id])
            return record

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        with self._lock:
            if self._one(owner, memory_id) is None:
                return False
            chroma_id = self._chroma_id(owner, memory_id)
            self._delete(self._records, [chroma_id])
            self._delete(self._vectors, [chroma_id])
            return True

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        clauses: builtins.list[dict[str, Any]] = [{"owner": owner.hex}]
        if type:
            clauses.append({"type": type})
        with self._lock:
            doomed = [
                s.record
                for s in self._owned(owner, self._get({"where": _where(clauses)}))
                if not type or s.record.type == type
            ]
            ids = [self._chroma_id(owner, r.id) for r in doomed]
            self._delete(self._records, ids)
            self._delete(self._vectors, ids)
        now = timezone.now()
        return sum(1 for r in doomed if r.live(now))

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        found = self._one(owner, memory_id)
        if found is None or not found.record.live(timezone.now()):
            return None
        return found.record

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        live = self._live(owner, filters)
        return Page([s.record for s in live[offset : offset + limit]], len(live))

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        return len(self._live(owner, filters))

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        return bm25_rank([s.record for s in self._live(owner, filters)], query, limit=limit)

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        query = as_vector(vector, dimension=self.vector_dimension, field="vector")
        unit = query / np.linalg.norm(query)
        wanted = limit
        while True:
            answer = self._request(
                "POST",
                self._path(self._vectors, "query"),
                {
                    "query_embeddings": [[float(x) for x in query]],
                    "n_results": wanted,
                    "where": {"owner": owner.hex},
                    "include": ["embeddings", "metadatas"],
                },
                vector_field="vector",
            )
            ids = (answer.get("ids") or [[]])[0]
            embeddings = (answer.get("embeddings") or [[]])[0] or []
            metadatas = (answer.get("metadatas") or [[]])[0] or []
            hits = self._verified(owner, ids, embeddings, metadatas, unit, filters)
            # Fewer answers than asked for: the owner has no more vectors.
            if len(hits) >= limit or len(ids) < wanted:
                return hits[:limit]
            wanted *= 4

    def _verified(
        self,
        owner: uuid.UUID,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        metadatas: Sequence[Mapping[str, Any] | None],
        unit: np.ndarray,
        filters: Filters,
    ) -> builtins.list[MemoryHit]:
        """The owner's live records behind these vectors that pass ``filters`` and whose token the
        record holds, scored by exact cosine with ``unit``, best first."""
        prefix = f"{owner.hex}-"
        tokens: dict[uuid.UUID, str] = {}
        vectors: dict[uuid.UUID, np.ndarray] = {}
        for chroma_id, embedding, meta in zip(ids, embeddings, metadatas, strict=True):
            if meta is None or meta.get("owner") != owner.hex or not chroma_id.startswith(prefix):
                continue
            memory_id = self._memory_id(chroma_id)
            tokens[memory_id] = str(meta.get("vector") or "")
            vectors[memory_id] = np.asarray(embedding, dtype=np.float32)
        now = timezone.now()
        hits: builtins.list[MemoryHit] = []
        for stored in self._by_ids(owner, builtins.list(tokens)):
            r = stored.record
            v = vectors[r.id]
            if not stored.token or stored.token != tokens[r.id] or v.size != unit.size:
                continue
            if not r.live(now) or not filters.admits(r):
                continue
            hits.append(MemoryHit(r, float(v @ unit / (np.linalg.norm(v) or 1.0)), "vector"))
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits

    def health(self) -> Health:
        started = time.perf_counter()
        try:
            self._request("GET", "/api/v2/heartbeat")
            latency = round((time.perf_counter() - started) * 1000, 3)
            version = self._request("GET", "/api/v2/version")
            self._collection(self._records)
            self._collection(self._vectors)
            dimension = self.vector_dimension
        except (BackendUnavailable, BackendConfigError) as exc:
            latency = round((time.perf_counter() - started) * 1000, 3)
            return Health(False, latency, str(exc))
        detail = {
            "version": version,
            "tenant": self.config.tenant,
            "database": self.config.database,
            "collection": self.config.collection,
            "vectorSearch": "Chroma's nearest vectors of the owner (cosine), rescored by exact cosine",
            "keywordSearch": "BM25 in this process over every record of the owner that passes the filters",
            "dimension": dimension,
            "persistent": True,
        }
        return Health(True, latency, None, detail)
