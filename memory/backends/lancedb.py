"""The LanceDB backend: a local directory of Lance datasets, opened with the ``lancedb`` package.
(The remote mode, a LanceDB Cloud/Enterprise server, is ``memory.backends.lancedb_remote``; the
configuration below and the schema, literals and row mapping here serve both.)

One table per owner, ``{table_prefix}{owner hex}``, so an owner's rows, its full-text statistics and
its deletes never touch another owner's dataset. Every predicate sent to the store also names the
owner (``owner = '…'``), and every row that comes back is checked against it: a row of another owner
is an integrity failure (``BackendUnavailable``), never a result.

The schema is fixed when a table is created (:data:`SCHEMA_FIELDS`): the vector column is a
``FixedSizeList<float32>[dimension]`` of the configured dimension, null for a record without a
vector. A vector of another dimension is refused with ``BackendInputError`` before anything is
written. The ``text`` column (content, then key) carries a Lance full-text index (BM25, English
stemming and stop-words, ASCII folding) created with the table; rows written after the index was
built are still searched (Lance scans the unindexed tail), and :data:`OPTIMIZE_EVERY` writes fold
them in with ``optimize()``, which also compacts the small fragments every write leaves.

* ``store``/``update`` are ``merge_insert`` on ``id`` (when matched update all, else insert all);
  the ``(owner, key)`` upsert reads the key's row first.
* ``delete`` and ``clear`` are deletes by predicate. Lance answers a delete with a new version, not a
  count, so both read the rows first to keep the boolean and counting contracts.
* ``list`` is ordered by the store (``created_at`` then ``id``, descending) with offset and limit;
  ``count`` is ``count_rows`` with the predicate. Filters and expiry are SQL predicates applied before
  ranking (``prefilter``).
* ``search_similar`` is an exact flat cosine scan (no ANN index is built); the score is
  ``1 - _distance``.

Writes read, then write: one lock per backend serialises them in this process, which is what keeps a
key unique per owner. Lance itself commits concurrent writers optimistically, but two processes
upserting the same new key at the same moment could each insert a row. Every failure of ``lancedb``,
``pyarrow`` or the file system is raised as ``BackendUnavailable``.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import math
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints
from django.conf import settings
from django.utils import timezone
from lancedb.index import FTS
from lancedb.query import ColumnOrdering, FullTextOperator, LanceVectorQueryBuilder, MatchQuery
from lancedb.table import Table

from memory.backends.base import (
    NO_FILTERS,
    BackendConfigError,
    BackendError,
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
from memory.conf import get_memory_settings
from memory.exceptions import Conflict, DomainError
from memory.retrieval.relevance import query_terms
from memory.urlpolicy import UrlPolicyError, check_outbound_url

# Writes to one table by this process between two ``optimize()`` calls (index the new rows, compact
# the one-row fragments each merge_insert adds).
OPTIMIZE_EVERY = 200
TABLE_PREFIX_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Every column but the vector: what lists and gets read.
RECORD_COLUMNS = [
    "owner",
    "id",
    "content",
    "type",
    "key",
    "session_id",
    "metadata_json",
    "created_at",
    "updated_at",
    "expires_at",
    "importance",
]
TEXT_INDEX = "text_idx"
# The configuration fields of the remote mode only (refused in local mode when not their defaults).
REMOTE_ONLY = frozenset(
    {
        "api_key",
        "database",
        "region",
        "host_override",
        "vector_weight",
        "full_text_weight",
        "retries",
        "timeout_seconds",
    }
)
# LanceDB Cloud database names (the host's first label) and regions.
DATABASE_NAME_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
REGION_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")


@dataclass(frozen=True)
class LanceDBConfig:
    """A LanceDB database: a local directory (the default), or a LanceDB Cloud/Enterprise server
    when ``uri`` is set (``memory.backends.lancedb_remote``).

    Both modes: ``dimension``, every vector's dimension, fixed in the tables' schema;
    ``table_prefix``, the start of each owner's table name. Local mode: ``path``, the directory
    (empty: ``lancedb`` in the data directory; a relative path is taken from the data directory).

    Remote mode: ``uri`` is ``db://name`` (LanceDB Cloud: the host is
    ``https://{name}.{region}.api.lancedb.com``, or ``host_override`` for Enterprise) or the server's
    ``http(s)://`` URL; ``api_key`` is sent as ``x-api-key`` and ``database`` (default: the name of a
    ``db://`` uri) as ``x-lancedb-database``. ``vector_weight`` and ``full_text_weight`` weigh the two
    rankings of a hybrid search (the defaults are LanceDB's ``LinearCombinationReranker``'s 0.7/0.3).
    ``retries`` retries a failed connection; ``timeout_seconds`` bounds each request. The remote-only
    fields are refused in local mode, so a forgotten ``uri`` is not silently a local directory.
    """

    dimension: int
    path: str = ""
    table_prefix: str = "memories_"
    uri: str = ""
    api_key: str = ""
    database: str = ""
    region: str = "us-east-1"
    host_override: str = ""
    vector_weight: float = 0.7
    full_text_weight: float = 0.3
    retries: int = 2
    timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        check_dimension(self.dimension)
        if not TABLE_PREFIX_PATTERN.fullmatch(self.table_prefix):
            raise BackendConfigError(
                "table_prefix must be 1 to 64 letters, digits, '_' or '-'", field="config.table_prefix"
            )
        if self.remote:
            self._check_remote()
            return
        if "://" in self.path:
            raise BackendConfigError(
                "path must be a local directory; a LanceDB Cloud/Enterprise database goes in uri",
                field="config.path",
            )
        for spec in dataclasses.fields(self):
            if spec.name in REMOTE_ONLY and getattr(self, spec.name) != spec.default:
                raise BackendConfigError(
                    f"{spec.name} is for a remote database: set uri, or remove {spec.name}",
                    field=f"config.{spec.name}",
                )

    def _check_remote(self) -> None:
        if self.path:
            raise BackendConfigError(
                "path is for a local directory; a remote database (uri) takes none", field="config.path"
            )
        if self.uri.startswith("db://"):
            if not DATABASE_NAME_PATTERN.fullmatch(self.uri[len("db://") :]):
                raise BackendConfigError(
                    "a db:// uri names the database: db://name, letters, digits and '-'", field="config.uri"
                )
            if not REGION_PATTERN.fullmatch(self.region):
                raise BackendConfigError(
                    "region must be a LanceDB Cloud region such as us-east-1", field="config.region"
                )
        elif self.uri.startswith(("http://", "https://")):
            if self.host_override:
                raise BackendConfigError(
                    "host_override is for a db:// uri; an http(s):// uri is the host already",
                    field="config.host_override",
                )
        else:
            raise BackendConfigError(
                "uri must be db://name (LanceDB Cloud) or the server's http(s):// URL", field="config.uri"
            )
        if self.host_override and not self.host_override.startswith(("http://", "https://")):
            raise BackendConfigError("host_override must be an http(s):// URL", field="config.host_override")
        if not self.api_key:
            raise BackendConfigError("api_key is required for a remote database", field="config.api_key")
        for name in ("api_key", "database"):
            # Both are sent as headers; httpx would refuse a line break only at the first request.
            if any(ch in getattr(self, name) for ch in "\r\n"):
                raise BackendConfigError(f"{name} must not contain line breaks", field=f"config.{name}")
        for name in ("vector_weight", "full_text_weight"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < 0:
                raise BackendConfigError(f"{name} must be a number of 0 or more", field=f"config.{name}")
        if self.vector_weight + self.full_text_weight <= 0:
            raise BackendConfigError(
                "vector_weight and full_text_weight must not both be 0", field="config.vector_weight"
            )
        if self.retries < 0:
            raise BackendConfigError("retries must not be negative", field="config.retries")
        if self.timeout_seconds <= 0:
            raise BackendConfigError("timeout_seconds must be positive", field="config.timeout_seconds")
        try:
            # Names are resolved before each request, not on save (the server may not be up yet).
            check_outbound_url(
                self.base_url, allow_private=get_memory_settings().private_urls_allowed, resolve=False
            )
        except UrlPolicyError as exc:
            field = "config.host_override" if self.host_override else "config.uri"
            raise BackendConfigError(f"{field[len('config.') :]}: {exc}", field=field) from None

    @property
    def remote(self) -> bool:
        """Whether this is a LanceDB Cloud/Enterprise database (``uri`` set) rather than a directory."""
        return bool(self.uri)

    @property
    def base_url(self) -> str:
        """The remote server's URL, without a trailing slash (remote mode only)."""
        if self.uri.startswith("db://"):
            name = self.uri[len("db://") :]
            return (self.host_override or f"https://{name}.{self.region}.api.lancedb.com").rstrip("/")
        return self.uri.rstrip("/")

    @property
    def database_name(self) -> str:
        """What ``x-lancedb-database`` carries: ``database``, else a ``db://`` uri's name ("": none)."""
        if self.database:
            return self.database
        return self.uri[len("db://") :] if self.uri.startswith("db://") else ""

    @property
    def directory(self) -> Path:
        base = Path(settings.DATA_DIR)
        return (base / (self.path or "lancedb")).resolve()


def schema(dimension: int) -> pa.Schema:
    """The fixed schema of an owner's table."""
    instant = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            pa.field("owner", pa.string(), nullable=False),
            pa.field("id", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("type", pa.string(), nullable=False),
            pa.field("key", pa.string()),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("metadata_json", pa.string(), nullable=False),
            pa.field("created_at", instant, nullable=False),
            pa.field("updated_at", instant, nullable=False),
            pa.field("expires_at", instant),
            pa.field("importance", pa.float64(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
        ]
    )


SCHEMA_FIELDS = tuple(schema(1).names)


def _quote(value: str) -> str:
    """A SQL string literal for a Lance predicate (DataFusion: quotes doubled, no backslash escapes)."""
    return "'" + value.replace("'", "''") + "'"


def _instant_literal(value: datetime) -> str:
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return f"TIMESTAMP '{utc.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _metadata(value: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata as it will read back (through JSON), so that ``store`` and ``get`` answer alike."""
    loaded: dict[str, Any] = json.loads(json.dumps(dict(value), ensure_ascii=False, default=str))
    return loaded


def _match(text: str) -> MatchQuery:
    """A full-text query matching any of the words of ``text`` in the ``text`` column (every keyword
    spelled out: mypy reads none of the model's defaults)."""
    return MatchQuery(
        text,
        "text",
        boost=1.0,
        fuzziness=0,
        max_expansions=50,
        operator=FullTextOperator.OR,
        prefix_length=0,
        document_granularity=None,
    )


def _record(row: Mapping[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        id=uuid.UUID(row["id"]),
        owner=uuid.UUID(row["owner"]),
        content=row["content"],
        type=row["type"],
        key=row["key"],
        session_id=row["session_id"],
        metadata=json.loads(row["metadata_json"]),
        created_at=_utc(row["created_at"]),
        updated_at=_utc(row["updated_at"]),
        expires_at=None if row["expires_at"] is None else _utc(row["expires_at"]),
        importance=float(row["importance"]),
    )


def _row(record: MemoryRecord, vector: np.ndarray | None) -> dict[str, Any]:
    return {
        "owner": record.owner.hex,
        "id": str(record.id),
        "content": record.content,
        "text": record.content if not record.key else f"{record.content} {record.key}",
        "type": record.type,
        "key": record.key,
        "session_id": record.session_id,
        "metadata_json": json.dumps(record.metadata, ensure_ascii=False),
        "created_at": _utc(record.created_at),
        "updated_at": _utc(record.updated_at),
        "expires_at": None if record.expires_at is None else _utc(record.expires_at),
        "importance": record.importance,
        "vector": None if vector is None else [float(x) for x in vector],
    }


class LanceWrites(MemoryBackend):
    """The writes both LanceDB modes share: the ``(owner, key)`` upsert and the update, read first
    (Lance answers a write with a version, not with what it replaced), one lock per backend.

    A mode gives its table (``_table``), one row by predicate (``_one``), the write of rows
    (``_write``), a row as a record (``_open``), the owner's predicate (``_predicate``) and the guard
    that turns its store's failures into ``BackendUnavailable`` (``_guard``).
    """

    config: LanceDBConfig
    _lock: threading.RLock

    def _guard(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _table(self, owner: uuid.UUID, *, create: bool) -> Any:
        raise NotImplementedError

    def _one(self, table: Any, owner: uuid.UUID, where: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _write(self, table: Any, rows: builtins.list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def _open(self, row: dict[str, Any]) -> MemoryRecord:
        raise NotImplementedError

    def _predicate(self, owner: uuid.UUID, filters: Filters, *, live: bool = True) -> str:
        raise NotImplementedError

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        with self._guard(), self._lock:
            return self._store(draft, None)

    def store_with_embedding(
        self, draft: MemoryDraft, embedding: Sequence[float] | np.ndarray
    ) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        vector = as_vector(embedding, dimension=self.config.dimension, field="embedding")
        with self._guard(), self._lock:
            return self._store(draft, vector)

    def _store(self, draft: MemoryDraft, vector: np.ndarray | None) -> tuple[MemoryRecord, bool]:
        owner = draft.owner
        table = self._table(owner, create=True)
        assert table is not None  # created
        now = timezone.now()
        mine = f"owner = {_quote(owner.hex)}"
        if draft.id is not None:
            found = self._one(table, owner, f"{mine} AND id = {_quote(str(draft.id))}")
            if found is not None:
                return self._open(found), False
        existing = self._one(table, owner, f"{mine} AND key = {_quote(draft.key)}") if draft.key else None
        if existing is not None:
            old = self._open(existing)
            record = MemoryRecord(
                id=old.id,
                owner=owner,
                content=draft.content,
                type=draft.type,
                key=old.key,
                session_id=draft.session_id,
                metadata=_metadata({**old.metadata, **dict(draft.metadata)}),
                created_at=old.created_at,
                updated_at=_utc(now),
                expires_at=None if draft.expires_at is None else _utc(draft.expires_at),
                importance=old.importance if draft.importance is None else float(draft.importance),
            )
            kept = vector
            if kept is None and record.content == old.content and existing["vector"] is not None:
                kept = np.asarray(existing["vector"], dtype=np.float32)
            self._write(table, [_row(record, kept)])
            return record, False
        record = MemoryRecord(
            id=draft.id or uuid.uuid4(),
            owner=owner,
            content=draft.content,
            type=draft.type,
            key=draft.key or None,
            session_id=draft.session_id,
            metadata=_metadata(draft.metadata),
            created_at=_utc(draft.created_at or now),
            updated_at=_utc(now),
            expires_at=None if draft.expires_at is None else _utc(draft.expires_at),
            importance=0.5 if draft.importance is None else float(draft.importance),
        )
        self._write(table, [_row(record, vector)])
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
        given = (
            None
            if embedding is None
            else as_vector(embedding, dimension=self.config.dimension, field="embedding")
        )
        with self._guard(), self._lock:
            table = self._table(owner, create=False)
            if table is None:
                return None
            where = f"{self._predicate(owner, NO_FILTERS)} AND id = {_quote(str(memory_id))}"
            found = self._one(table, owner, where)
            if found is None:
                return None
            old = self._open(found)
            new_key = checked.get("key", old.key)
            if new_key and new_key != old.key:
                holder = self._one(table, owner, f"owner = {_quote(owner.hex)} AND key = {_quote(new_key)}")
                if holder is not None and holder["id"] != str(memory_id):
                    raise Conflict(f"another memory of this owner already uses key {new_key!r}", field="key")
            fields = {f: getattr(old, f) for f in RECORD_FIELDS}
            fields.update(checked)
            if "metadata" in checked:
                fields["metadata"] = _metadata(checked["metadata"])
            if "expires_at" in checked and checked["expires_at"] is not None:
                fields["expires_at"] = _utc(checked["expires_at"])
            if "importance" in checked:
                fields["importance"] = float(checked["importance"])
            record = MemoryRecord(**fields, updated_at=_utc(timezone.now()))
            vector = given
            if vector is None and record.content == old.content and found["vector"] is not None:
                vector = np.asarray(found["vector"], dtype=np.float32)
            self._write(table, [_row(record, vector)])
            return record


class LanceDBBackend(LanceWrites):
    """Records in a local LanceDB directory, one table per owner; see the module docstring."""

    type_name = "lancedb"
    capabilities = Capabilities(keyword=True, vector=True, hybrid=False, filters=True)

    def __init__(self, config: LanceDBConfig, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.config = config
        self._schema = schema(config.dimension)
        self._connection: lancedb.DBConnection | None = None
        self._tables: dict[str, Table] = {}
        self._writes: dict[str, int] = {}
        self._lock = threading.RLock()

    # -- plumbing

    @property
    def vector_dimension(self) -> int | None:
        return self.config.dimension

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except DomainError:
            raise
        except Exception as exc:  # lancedb raises ValueError, RuntimeError, OSError, Arrow errors
            raise BackendUnavailable(f"{self.name}: {type(exc).__name__}: {exc}", backend=self.name) from exc

    def _db(self) -> lancedb.DBConnection:
        """The connection, made on first use. ``read_consistency_interval=0``: every read sees the
        latest version, including another process's writes."""
        if self._connection is None:
            directory = self.config.directory
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._connection = lancedb.connect(str(directory), read_consistency_interval=timedelta(0))
        return self._connection

    def _table_name(self, owner: uuid.UUID) -> str:
        return f"{self.config.table_prefix}{owner.hex}"

    def _table(self, owner: uuid.UUID, *, create: bool) -> Table | None:
        """The owner's table; None when it does not exist and ``create`` is false."""
        name = self._table_name(owner)
        table = self._tables.get(name)
        if table is not None:
            return table
        with self._lock:
            table = self._tables.get(name)
            if table is not None:
                return table
            db = self._db()
            try:
                table = db.open_table(name)
            except ValueError:
                # lancedb says "not found" with a ValueError; the listing tells a missing table from
                # any other failure, which is raised.
                if name in self._table_names():
                    raise
                if not create:
                    return None
                table = db.create_table(name, schema=self._schema, exist_ok=True)
                self._ensure_text_index(table)
            if table.schema.field("vector").type != self._schema.field("vector").type:
                raise BackendConfigError(
                    f"table {name} holds vectors of type {table.schema.field('vector').type}; "
                    f"this backend is configured for {self.config.dimension} dimensions",
                    field="config.dimension",
                )
            self._tables[name] = table
            return table

    def _table_names(self) -> builtins.list[str]:
        names: builtins.list[str] = []
        token: str | None = None
        while True:
            page = self._db().list_tables(page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return names

    @staticmethod
    def _ensure_text_index(table: Table) -> None:
        if not any(index.name == TEXT_INDEX for index in table.list_indices()):
            table.create_index("text", config=FTS(), name=TEXT_INDEX, replace=True)

    def _predicate(self, owner: uuid.UUID, filters: Filters, *, live: bool = True) -> str:
        parts = [f"owner = {_quote(owner.hex)}"]
        if live:
            now = _instant_literal(timezone.now())
            parts.append(f"(expires_at IS NULL OR expires_at > {now})")
        if filters.session_id:
            parts.append(f"session_id = {_quote(filters.session_id)}")
        if filters.type:
            parts.append(f"type = {_quote(filters.type)}")
        if filters.created_after is not None:
            parts.append(f"created_at >= {_instant_literal(filters.created_after)}")
        return " AND ".join(parts)

    def _mine(self, owner: uuid.UUID, rows: builtins.list[dict[str, Any]]) -> builtins.list[dict[str, Any]]:
        """``rows``, after checking that each is ``owner``'s (the store is not trusted to filter)."""
        for row in rows:
            if row.get("owner") != owner.hex:
                raise BackendUnavailable(
                    f"{self.name}: the store returned a row of another owner", backend=self.name
                )
        return rows

    def _rows(
        self, table: Table, owner: uuid.UUID, where: str, *, vector: bool = False
    ) -> builtins.list[dict[str, Any]]:
        columns = [*RECORD_COLUMNS, "vector"] if vector else RECORD_COLUMNS
        rows = table.search().where(where).select(columns).limit(None).to_list()
        return self._mine(owner, rows)

    def _one(self, table: Table, owner: uuid.UUID, where: str) -> dict[str, Any] | None:
        rows = self._rows(table, owner, where, vector=True)
        return rows[0] if rows else None

    def _write(self, table: Table, rows: builtins.list[dict[str, Any]]) -> None:
        data = pa.Table.from_pylist(rows, schema=self._schema)
        # The vectors were checked by ``as_vector``; "null" only lets the records without one through
        # (lancedb's own check takes a null vector for one of the wrong length).
        (
            table.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data, on_bad_vectors="null")
        )
        self._written(table)

    def _written(self, table: Table) -> None:
        count = self._writes.get(table.name, 0) + 1
        if count >= OPTIMIZE_EVERY:
            table.optimize()
            count = 0
        self._writes[table.name] = count

    def _open(self, row: dict[str, Any]) -> MemoryRecord:
        return _record(row)

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        with self._guard(), self._lock:
            table = self._table(owner, create=False)
            if table is None:
                return False
            where = f"owner = {_quote(owner.hex)} AND id = {_quote(str(memory_id))}"
            if not self._rows(table, owner, where):
                return False
            table.delete(where)
            self._written(table)
            return True

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        with self._guard(), self._lock:
            table = self._table(owner, create=False)
            if table is None:
                return 0
            filters = Filters(type=type) if type else NO_FILTERS
            live = table.count_rows(self._predicate(owner, filters))
            table.delete(self._predicate(owner, filters, live=False))
            self._written(table)
            return live

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        with self._guard():
            table = self._table(owner, create=False)
            if table is None:
                return None
            where = f"{self._predicate(owner, NO_FILTERS)} AND id = {_quote(str(memory_id))}"
            rows = self._rows(table, owner, where)
        return _record(rows[0]) if rows else None

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        with self._guard():
            table = self._table(owner, create=False)
            if table is None:
                return Page([], 0)
            where = self._predicate(owner, filters)
            total = table.count_rows(where)
            rows = (
                table.search()
                .where(where)
                .select(RECORD_COLUMNS)
                .order_by(
                    [
                        ColumnOrdering(column_name="created_at", ascending=False),
                        ColumnOrdering(column_name="id", ascending=False),
                    ]
                )
                .offset(offset)
                .limit(limit)
                .to_list()
            )
            return Page([_record(row) for row in self._mine(owner, rows)], total)

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        with self._guard():
            table = self._table(owner, create=False)
            return 0 if table is None else int(table.count_rows(self._predicate(owner, filters)))

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        terms = query_terms(query)
        if not terms:
            return []
        with self._guard():
            table = self._table(owner, create=False)
            if table is None:
                return []
            rows = (
                table.search(_match(" ".join(terms)), query_type="fts")
                .where(self._predicate(owner, filters), prefilter=True)
                .select([*RECORD_COLUMNS, "_score"])
                .limit(limit)
                .to_list()
            )
            hits = [
                MemoryHit(_record(row), float(row["_score"]), "keyword") for row in self._mine(owner, rows)
            ]
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
        with self._guard():
            table = self._table(owner, create=False)
            if table is None:
                return []
            nearest = table.search(query.tolist(), vector_column_name="vector", query_type="vector")
            assert isinstance(nearest, LanceVectorQueryBuilder)  # query_type="vector" builds one
            rows = (
                nearest.distance_type("cosine")
                .where(f"{self._predicate(owner, filters)} AND vector IS NOT NULL", prefilter=True)
                .select([*RECORD_COLUMNS, "_distance"])
                .limit(limit)
                .to_list()
            )
            return [
                MemoryHit(_record(row), 1.0 - float(row["_distance"]), "vector")
                for row in self._mine(owner, rows)
            ]

    def health(self) -> Health:
        started = time.perf_counter()
        try:
            with self._guard():
                tables = [name for name in self._table_names() if name.startswith(self.config.table_prefix)]
        except BackendError as exc:
            latency = round((time.perf_counter() - started) * 1000, 3)
            return Health(False, latency, str(exc))
        latency = round((time.perf_counter() - started) * 1000, 3)
        detail = {
            "version": lancedb.__version__,
            "directory": str(self.config.directory),
            "dimension": self.config.dimension,
            "owners": len(tables),
            "vectorSearch": "exact flat cosine scan per owner's table (no ANN index)",
            "keywordSearch": "Lance full-text index (BM25) on content and key",
            "persistent": True,
        }
        return Health(True, latency, None, detail)


# The MemoryRecord fields an update carries over (``updated_at`` is set anew).
RECORD_FIELDS = (
    "id",
    "owner",
    "content",
    "type",
    "key",
    "session_id",
    "metadata",
    "created_at",
    "expires_at",
    "importance",
)
