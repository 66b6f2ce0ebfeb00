"""The LanceDB backend's remote mode: a LanceDB Cloud or Enterprise server, spoken to over its REST
API with httpx (Orkeon's LanceDbMemoryProvider: no SDK), with Arrow IPC for the data.

The routes are the Lance REST Namespace ones, under the configured ``base_url``; every request
carries ``x-api-key`` and, when a database is configured, ``x-lancedb-database``:

==============  ==========================================  ====================================
describe        ``POST /v1/table/{t}/describe``             JSON; 404 when the table is missing
create          ``POST /v1/table/{t}/create``               the empty fixed schema, Arrow IPC stream
index list      ``POST /v1/table/{t}/index/list``           JSON
create_index    ``POST /v1/table/{t}/create_index``         JSON: FTS on ``text``
merge_insert    ``POST /v1/table/{t}/merge_insert?on=id&…``  rows, Arrow IPC stream
query           ``POST /v1/table/{t}/query``                JSON; answer Arrow IPC file (or stream)
delete          ``POST /v1/table/{t}/delete``               JSON ``{"predicate": …}``
count_rows      ``POST /v1/table/{t}/count_rows``           JSON; answer a bare integer
list tables     ``GET /v1/table``                           ``health()`` only
==============  ==========================================  ====================================

Isolation follows the local mode: one table per owner (``{table_prefix}{owner hex}``), every
predicate also names the owner, and every row that comes back is checked against it; a row of another
owner is ``BackendUnavailable``, never a result. The schema is the local mode's, fixed at creation; a
table whose vector column has another dimension is a ``BackendConfigError`` (``config.dimension``),
and a vector of the wrong dimension is a ``BackendInputError`` before any request. A table is made on
the first write of its owner, with its full-text index; a table found without that index (a creation
that stopped half-way) gets it on first use.

The query route has no ordering, so ``list`` reads all of the owner's rows that pass the filters
(without vectors) and orders them here, newest first: exact, at a cost linear in them. ``delete`` and
``clear`` read (or count) first, because the server answers a delete with a version, not a count.

Hybrid search is two server queries, the full-text ranking (``_score``) and the vector ranking
(``_distance``, cosine) of the query embedded by the ``embed`` callable this backend was given, fused
here as LanceDB's ``LinearCombinationReranker`` fuses them: each ranking's scores min-max normalised
to 0..1 (a distance inverted), missing ones 0, then ``vector_weight * v + full_text_weight * f``.
Without ``embed`` the backend declares no hybrid capability.

Writes of one process are serialised by a lock, which keeps the ``(owner, key)`` upsert exact within a
process; two processes writing the same new key at once could each insert a row. Connection failures
are retried ``retries`` times (httpx's transport retries). Every other transport error, every timeout,
every answer that is not a 2xx and every answer that cannot be read is ``BackendUnavailable``, except
the server refusing a vector's dimension, a ``BackendInputError``. The outbound URL policy is checked
before each request (loopback and private networks only with the private-URL switch).
"""

from __future__ import annotations

import builtins
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints
from django.utils import timezone

from memory.backends.base import (
    NO_FILTERS,
    BackendConfigError,
    BackendInputError,
    BackendUnavailable,
    BackendUnsupported,
    Capabilities,
    Filters,
    Health,
    MemoryHit,
    MemoryRecord,
    Page,
    Ranking,
    as_vector,
    check_page,
)
from memory.backends.lancedb import (
    RECORD_COLUMNS,
    TEXT_INDEX,
    LanceDBConfig,
    LanceWrites,
    _instant_literal,
    _quote,
    _record,
    schema,
)
from memory.conf import get_memory_settings
from memory.exceptions import DomainError
from memory.retrieval.relevance import query_terms
from memory.urlpolicy import UrlPolicyError, check_outbound_url

ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"
# The first bytes of an Arrow IPC file (a stream has none).
ARROW_FILE_MAGIC = b"ARROW1"
# The full-text index the local mode builds: BM25 over ``text``, English stemming and stop-words.
TEXT_INDEX_REQUEST: dict[str, Any] = {
    "column": "text",
    "index_type": "FTS",
    "name": TEXT_INDEX,
    "with_position": False,
    "base_tokenizer": "simple",
    "language": "English",
    "lower_case": True,
    "stem": True,
    "remove_stop_words": True,
    "ascii_folding": True,
}
MERGE_ON_ID = {"on": "id", "when_matched_update_all": "true", "when_not_matched_insert_all": "true"}
# Rows asked for by the first read of a list beyond the count (then four times as many, until less
# than asked for comes back: a write between the count and the read is not missed).
LIST_HEADROOM = 16

Embed = Callable[[str], np.ndarray]


def fuse(
    keyword: Sequence[MemoryHit],
    vector: Sequence[MemoryHit],
    *,
    vector_weight: float,
    full_text_weight: float,
    limit: int,
) -> builtins.list[MemoryHit]:
    """The two rankings of one query fused by a weighted sum of min-max normalised scores (LanceDB's
    ``LinearCombinationReranker`` after its hybrid query's ``normalize="score"``), best first, ties
    newest first. A record missing from a ranking has 0 there. Where a ranking's scores are all equal
    each gets 1 (the SDK gives 0, which ranks a lone full-text match below every vector match).
    A hit's ``ranking`` is ``hybrid`` when both rankings found it, else the one that did."""
    fused: dict[uuid.UUID, _Fused] = {}
    for hits, weight in ((vector, vector_weight), (keyword, full_text_weight)):
        for hit, normalised in zip(hits, _normalised([h.score for h in hits]), strict=True):
            entry = fused.setdefault(hit.record.id, _Fused(hit.record))
            entry.score += weight * normalised
            entry.rankings.add(hit.ranking)
    ranked = sorted(
        fused.values(), key=lambda e: (e.score, e.record.created_at, str(e.record.id)), reverse=True
    )
    return [
        MemoryHit(e.record, e.score, "hybrid" if len(e.rankings) > 1 else next(iter(e.rankings)))
        for e in ranked[:limit]
    ]


@dataclass
class _Fused:
    record: MemoryRecord
    score: float = 0.0
    rankings: set[Ranking] = field(default_factory=set)


def _normalised(scores: builtins.list[float]) -> builtins.list[float]:
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def _arrow_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _read_arrow(data: bytes) -> pa.Table:
    """An Arrow IPC answer as a table: the file format (what the server sends for ``query``) or,
    from a server that answers with it, the stream format."""
    buffer = pa.BufferReader(data)
    if data[: len(ARROW_FILE_MAGIC)] == ARROW_FILE_MAGIC:
        return pa.ipc.open_file(buffer).read_all()
    return pa.ipc.open_stream(buffer).read_all()


class LanceDBRemoteBackend(LanceWrites):
    """Records in a LanceDB Cloud/Enterprise database, one table per owner; see the module docstring."""

    type_name = "lancedb"

    def __init__(self, config: LanceDBConfig, *, name: str | None = None, embed: Embed | None = None) -> None:
        super().__init__(name=name)
        if not config.remote:
            raise BackendConfigError("the remote mode needs a uri", field="config.uri")
        self.config = config
        self.capabilities = Capabilities(keyword=True, vector=True, hybrid=embed is not None, filters=True)
        self._embed = embed
        self._schema = schema(config.dimension)
        self._client: httpx.Client | None = None
        self._ready: set[str] = set()
        self._lock = threading.RLock()

    # -- plumbing

    @property
    def vector_dimension(self) -> int | None:
        return self.config.dimension

    @property
    def client(self) -> httpx.Client:
        """The HTTP client, made on first use (nothing is opened before a request)."""
        if self._client is None:
            c = self.config
            headers = {"x-api-key": c.api_key, "accept": "application/json"}
            if c.database_name:
                headers["x-lancedb-database"] = c.database_name
            self._client = httpx.Client(
                base_url=c.base_url,
                headers=headers,
                timeout=c.timeout_seconds,
                transport=httpx.HTTPTransport(retries=c.retries),
                follow_redirects=False,
            )
        return self._client

    def _unavailable(self, message: str) -> BackendUnavailable:
        return BackendUnavailable(f"{self.name}: {message}", backend=self.name)

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        arrow: pa.Table | None = None,
        params: Mapping[str, str] | None = None,
        accept: str = "application/json",
    ) -> httpx.Response:
        """One request, after the outbound URL policy; transport errors are ``BackendUnavailable``."""
        try:
            check_outbound_url(self.config.base_url, allow_private=get_memory_settings().private_urls_allowed)
        except UrlPolicyError as exc:
            raise self._unavailable(f"refused by the outbound URL policy: {exc}") from None
        headers = {"accept": accept}
        content: bytes | None = None
        if arrow is not None:
            content = _arrow_stream(arrow)
            headers["content-type"] = ARROW_STREAM
        try:
            return self.client.request(
                method,
                path,
                json=body if arrow is None else None,
                content=content,
                params=params,
                headers=headers,
            )
        except httpx.HTTPError as exc:
            raise self._unavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    def _table_call(
        self,
        table: str,
        operation: str,
        *,
        body: Mapping[str, Any] | None = None,
        arrow: pa.Table | None = None,
        params: Mapping[str, str] | None = None,
        accept: str = "application/json",
        vector_field: str = "",
    ) -> httpx.Response:
        """A table route's successful answer. A 404 forgets the table (it is looked up again on the
        next call) and, like every other error answer, raises ``BackendUnavailable``; with
        ``vector_field``, the server refusing a vector's dimension raises ``BackendInputError``."""
        path = f"/v1/table/{quote(table, safe='')}/{operation}"
        response = self._send("POST", path, body=body, arrow=arrow, params=params, accept=accept)
        if response.is_success:
            return response
        message = _error_message(response)
        if vector_field and response.status_code == 400 and "dimension" in message.lower():
            raise BackendInputError(f"{vector_field}: {message}", field=vector_field, backend=self.name)
        if response.status_code == 404:
            self._ready.discard(table)
        raise self._unavailable(f"{operation} {table}: HTTP {response.status_code}: {message}")

    def _json(self, response: httpx.Response, what: str) -> Any:
        try:
            return response.json()
        except ValueError:
            raise self._unavailable(f"the answer to {what} is not JSON") from None

    @contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        """An answer that cannot be decoded (not Arrow, a column missing, a value of the wrong
        kind) is the server failing: ``BackendUnavailable``."""
        try:
            yield
        except DomainError:
            raise
        except (pa.ArrowException, KeyError, ValueError, TypeError) as exc:
            raise self._unavailable(
                f"the answer to {what} cannot be read: {type(exc).__name__}: {exc}"
            ) from exc

    def _table_name(self, owner: uuid.UUID) -> str:
        return f"{self.config.table_prefix}{owner.hex}"

    def _table(self, owner: uuid.UUID, *, create: bool) -> str | None:
        """The owner's table, checked once per process (schema, full-text index); None when it does
        not exist and ``create`` is false."""
        name = self._table_name(owner)
        if name in self._ready:
            return name
        with self._lock:
            if name in self._ready:
                return name
            described = self._describe(name)
            if described is None and not create:
                return None
            if described is None:
                path = f"/v1/table/{quote(name, safe='')}/create"
                created = self._send(
                    "POST", path, arrow=self._schema.empty_table(), params={"mode": "create"}
                )
                if created.is_success:
                    self._table_call(name, "create_index", body=TEXT_INDEX_REQUEST)
                    self._ready.add(name)
                    return name
                if created.status_code != 409:
                    raise self._unavailable(
                        f"create {name}: HTTP {created.status_code}: {_error_message(created)}"
                    )
                # 409: another writer made it between the describe and the create.
                described = self._describe(name)
                if described is None:
                    raise self._unavailable(f"create {name}: the server says it exists, describe does not")
            self._check_schema(name, described)
            self._ensure_text_index(name)
            self._ready.add(name)
            return name

    def _describe(self, table: str) -> Mapping[str, Any] | None:
        response = self._send("POST", f"/v1/table/{quote(table, safe='')}/describe", body={})
        if response.status_code == 404:
            return None
        if not response.is_success:
            raise self._unavailable(
                f"describe {table}: HTTP {response.status_code}: {_error_message(response)}"
            )
        answer = self._json(response, f"describe {table}")
        if not isinstance(answer, Mapping):
            raise self._unavailable(f"the answer to describe {table} is not an object")
        return answer

    def _check_schema(self, table: str, described: Mapping[str, Any]) -> None:
        with self._reading(f"describe {table}"):
            fields = {f["name"]: f for f in described["schema"]["fields"]}
            length = fields["vector"]["type"].get("length") if "vector" in fields else None
        if length != self.config.dimension:
            raise BackendConfigError(
                f"table {table} holds vectors of {length} dimensions; "
                f"this backend is configured for {self.config.dimension}",
                field="config.dimension",
            )

    def _ensure_text_index(self, table: str) -> None:
        answer = self._json(self._table_call(table, "index/list", body={}), f"index/list {table}")
        with self._reading(f"index/list {table}"):
            names = {index["index_name"] for index in answer["indexes"]}
        if TEXT_INDEX not in names:
            self._table_call(table, "create_index", body=TEXT_INDEX_REQUEST)

    def _predicate(self, owner: uuid.UUID, filters: Filters, *, live: bool = True) -> str:
        parts = [f"owner = {_quote(owner.hex)}"]
        if live:
            parts.append(f"(expires_at IS NULL OR expires_at > {_instant_literal(timezone.now())})")
        if filters.session_id:
            parts.append(f"session_id = {_quote(filters.session_id)}")
        if filters.type:
            parts.append(f"type = {_quote(filters.type)}")
        if filters.created_after is not None:
            parts.append(f"created_at >= {_instant_literal(filters.created_after)}")
        return " AND ".join(parts)

    def _query(
        self,
        table: str,
        owner: uuid.UUID,
        where: str,
        *,
        k: int,
        columns: builtins.list[str],
        vector: np.ndarray | None = None,
        text: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """The rows of one query, each checked to be ``owner``'s (the server is not trusted to filter)."""
        body: dict[str, Any] = {
            "k": k,
            "filter": where,
            "prefilter": True,
            "columns": {"column_names": columns},
            "vector": {} if vector is None else {"single_vector": [float(x) for x in vector]},
            "with_row_id": False,
        }
        if vector is not None:
            body.update(vector_column="vector", distance_type="cosine")
        if text is not None:
            body["full_text_query"] = {"string_query": {"query": text, "columns": ["text"]}}
        response = self._table_call(
            table,
            "query",
            body=body,
            accept=f"{ARROW_FILE}, {ARROW_STREAM}",
            vector_field="vector" if vector is not None else "",
        )
        with self._reading(f"query {table}"):
            rows: builtins.list[dict[str, Any]] = _read_arrow(response.content).to_pylist()
        for row in rows:
            if row.get("owner") != owner.hex:
                raise self._unavailable("the store returned a row of another owner")
        return rows

    def _one(self, table: str, owner: uuid.UUID, where: str) -> dict[str, Any] | None:
        rows = self._query(table, owner, where, k=1, columns=[*RECORD_COLUMNS, "vector"])
        return rows[0] if rows else None

    def _count(self, table: str, where: str) -> int:
        answer = self._json(
            self._table_call(table, "count_rows", body={"predicate": where}), f"count_rows {table}"
        )
        if isinstance(answer, bool) or not isinstance(answer, int) or answer < 0:
            raise self._unavailable(f"the answer to count_rows {table} is not a count: {answer!r}")
        return answer

    def _delete(self, table: str, where: str) -> None:
        self._table_call(table, "delete", body={"predicate": where})

    def _write(self, table: str, rows: builtins.list[dict[str, Any]]) -> None:
        self._table_call(
            table, "merge_insert", arrow=pa.Table.from_pylist(rows, schema=self._schema), params=MERGE_ON_ID
        )

    def _records(self, rows: builtins.list[dict[str, Any]], what: str) -> builtins.list[MemoryRecord]:
        with self._reading(what):
            return [_record(row) for row in rows]

    # -- writes (the upsert and the update are LanceWrites'; the remote's failures are raised
    # as BackendUnavailable where each request is sent, so its guard adds nothing)

    def _guard(self) -> AbstractContextManager[None]:
        return nullcontext()

    def _open(self, row: dict[str, Any]) -> MemoryRecord:
        (record,) = self._records([row], "query")
        return record

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        with self._lock:
            table = self._table(owner, create=False)
            if table is None:
                return False
            where = f"owner = {_quote(owner.hex)} AND id = {_quote(str(memory_id))}"
            if not self._query(table, owner, where, k=1, columns=["owner", "id"]):
                return False
            self._delete(table, where)
            return True

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        with self._lock:
            table = self._table(owner, create=False)
            if table is None:
                return 0
            filters = Filters(type=type) if type else NO_FILTERS
            live = self._count(table, self._predicate(owner, filters))
            self._delete(table, self._predicate(owner, filters, live=False))
            return live

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        table = self._table(owner, create=False)
        if table is None:
            return None
        where = f"{self._predicate(owner, NO_FILTERS)} AND id = {_quote(str(memory_id))}"
        rows = self._query(table, owner, where, k=1, columns=RECORD_COLUMNS)
        return self._records(rows, "query")[0] if rows else None

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        records = self._all(owner, filters)
        return Page(records[offset : offset + limit], len(records))

    def _all(self, owner: uuid.UUID, filters: Filters) -> builtins.list[MemoryRecord]:
        """Every live record of the owner that passes ``filters``, newest first (see the module
        docstring: the query route cannot order)."""
        table = self._table(owner, create=False)
        if table is None:
            return []
        where = self._predicate(owner, filters)
        k = self._count(table, where) + LIST_HEADROOM
        while True:
            rows = self._query(table, owner, where, k=k, columns=RECORD_COLUMNS)
            if len(rows) < k:
                break
            k *= 4
        records = self._records(rows, "query")
        records.sort(key=lambda r: (r.created_at, str(r.id)), reverse=True)
        return records

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        table = self._table(owner, create=False)
        return 0 if table is None else self._count(table, self._predicate(owner, filters))

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        terms = query_terms(query)
        if not terms:
            return []
        return self._keyword(owner, " ".join(terms), limit, filters)

    def _keyword(self, owner: uuid.UUID, text: str, limit: int, filters: Filters) -> builtins.list[MemoryHit]:
        table = self._table(owner, create=False)
        if table is None:
            return []
        rows = self._query(
            table,
            owner,
            self._predicate(owner, filters),
            k=limit,
            columns=[*RECORD_COLUMNS, "_score"],
            text=text,
        )
        with self._reading(f"query {table}"):
            hits = [MemoryHit(_record(row), float(row["_score"]), "keyword") for row in rows]
        hits.sort(key=lambda hit: (hit.score, hit.record.created_at), reverse=True)
        return hits

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        query = as_vector(vector, dimension=self.config.dimension, field="vector")
        table = self._table(owner, create=False)
        if table is None:
            return []
        where = f"{self._predicate(owner, filters)} AND vector IS NOT NULL"
        rows = self._query(table, owner, where, k=limit, columns=[*RECORD_COLUMNS, "_distance"], vector=query)
        with self._reading(f"query {table}"):
            return [MemoryHit(_record(row), 1.0 - float(row["_distance"]), "vector") for row in rows]

    def search_hybrid(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        if self._embed is None:
            raise BackendUnsupported(
                f"the {self.type_name} backend was given no embedder for hybrid search", backend=self.name
            )
        check_page(limit, 0)
        terms = query_terms(query)
        if not terms:
            return []
        embedded = np.asarray(self._embed(query), dtype=np.float32)
        if embedded.ndim != 1 or embedded.size != self.config.dimension:
            raise BackendConfigError(
                f"the embedder gives vectors of shape {embedded.shape}; this backend stores "
                f"{self.config.dimension} dimensions",
                field="config.dimension",
                backend=self.name,
            )
        vector = as_vector(embedded, dimension=self.config.dimension, field="query")
        keyword = self._keyword(owner, " ".join(terms), limit, filters)
        similar = self.search_similar(owner, vector, limit=limit, filters=filters)
        c = self.config
        return fuse(
            keyword, similar, vector_weight=c.vector_weight, full_text_weight=c.full_text_weight, limit=limit
        )

    def health(self) -> Health:
        started = time.perf_counter()
        try:
            response = self._send("GET", "/v1/table", params={"limit": "1"})
            if not response.is_success:
                raise self._unavailable(
                    f"list tables: HTTP {response.status_code}: {_error_message(response)}"
                )
        except BackendUnavailable as exc:
            return Health(False, _ms(started), str(exc))
        c = self.config
        hybrid = (
            f"two server rankings fused here (vector_weight {c.vector_weight}, "
            f"full_text_weight {c.full_text_weight})"
            if self._embed is not None
            else "off: no embedder given"
        )
        detail = {
            "url": c.base_url,
            "database": c.database_name,
            "dimension": c.dimension,
            "vectorSearch": "the server's cosine search per owner's table",
            "keywordSearch": "the server's full-text index (BM25) on content and key",
            "hybridSearch": hybrid,
            "persistent": True,
        }
        return Health(True, _ms(started), None, detail)


def _error_message(response: httpx.Response) -> str:
    """What an error answer says: its JSON ``error``/``message``, else the start of its text."""
    try:
        answer = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(answer, Mapping):
        return str(answer.get("error") or answer.get("message") or answer)[:300]
    return str(answer)[:300]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
