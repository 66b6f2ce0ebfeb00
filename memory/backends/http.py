"""The generic HTTP backend: any REST memory service, with its routes, parameter names and record
fields set in the configuration (the original's GenericMemoryBackend), and the Obsidian and Notion
presets.

The protocol, with the default names (each one can be renamed in the configuration):

========  ==========================  ==========================================================
create    ``POST {base}/memories``    body: a record; answer: the stored record
list      ``GET {base}/memories``     ``apiKeyId``, ``type``, ``sessionId``, ``key``,
                                      ``createdAfter``, ``limit``, ``offset``; answer:
                                      ``{"data": [records], "total": n}``
search    ``GET {base}/memories/search``  ``query``, ``apiKeyId``, ``limit``, ``type``,
                                      ``sessionId``, ``createdAfter``; answer: ``[records]``, best
                                      first, each with an optional ``score``
get       ``GET {base}/memories/{id}``  ``apiKeyId``; 404 when there is none
update    ``PATCH {base}/memories/{id}``  body: the changed fields; answer: the record
delete    ``DELETE {base}/memories/{id}``  ``apiKeyId``; 404 when there is none
health    ``GET {base}/health``       any 2xx
========  ==========================  ==========================================================

A record is ``{id, apiKeyId, content, type, key, sessionId, metadata, createdAt, updatedAt,
expiresAt, importance}`` (the field names of our own API), with ISO 8601 instants. Routes are joined
to the base URL's path (``https://api.notion.com/v1`` + ``/memories`` is ``…/v1/memories``; the
original dropped the ``/v1``).

What this adapter does itself, whatever the service does: every record that comes back is checked for
its owner (``apiKeyId``), expiry and the read's filters, and dropped (and logged) when it fails, so a
service that ignores a parameter never leaks another owner's records; the contract's upsert on
``(owner, key)`` (a lookup by key, then an update or a create), metadata merging, kept ids and the
idempotent store by id are done here with the routes above; lists and counts read all of the owner's
records, page by page (exact, linear in them), and order them newest first here; ``get``, ``update``
and ``delete`` read the record first, so an id of another owner is never changed. The service's own
search ranks; a query without searchable words sends nothing.

The keyword capability is the service's search route; there are no vectors. Every URL is checked by
the outbound URL policy before each request (names resolved; loopback and private networks only with
the private-URL switch); redirects are not followed. A refusal, a connection failure, a timeout, a
status other than 2xx (and 404 where it means "none") or an answer that is not a record is
``BackendUnavailable``. Two writers storing the same new key at once can both create unless the
service refuses the second with a 409 (then the store is retried as an update). A create whose id the
service already holds (for another owner: ours is looked up first) must be refused with a 409 too,
which is a ``Conflict`` (field ``id``); a service that overwrites instead cannot be caught here.
"""

from __future__ import annotations

import builtins
import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from django.utils import timezone

from memory.backends.base import (
    NO_FILTERS,
    BackendConfigError,
    BackendUnavailable,
    Capabilities,
    Filters,
    Health,
    MemoryBackend,
    MemoryDraft,
    MemoryHit,
    MemoryRecord,
    Page,
    check_changes,
    check_draft,
    check_page,
)
from memory.conf import get_memory_settings
from memory.exceptions import Conflict
from memory.retrieval.relevance import query_terms
from memory.urlpolicy import UrlPolicyError, check_outbound_url

if TYPE_CHECKING:  # the signature names numpy's type; this adapter handles no vectors
    import numpy as np

logger = logging.getLogger("memory.backends")

ROUTES: dict[str, str] = {
    "create": "/memories",
    "list": "/memories",
    "search": "/memories/search",
    "get": "/memories/{id}",
    "update": "/memories/{id}",
    "delete": "/memories/{id}",
    "health": "/health",
}
METHODS: dict[str, str] = {
    "create": "POST",
    "list": "GET",
    "search": "GET",
    "get": "GET",
    "update": "PATCH",
    "delete": "DELETE",
    "health": "GET",
}
# Our names of the query parameters; the configuration may rename each ("" : not sent).
PARAMS: tuple[str, ...] = ("apiKeyId", "query", "limit", "offset", "type", "sessionId", "key", "createdAfter")
# Our names of a record's fields (and a hit's score); the configuration may rename each.
FIELDS: tuple[str, ...] = (
    "id",
    "apiKeyId",
    "content",
    "type",
    "key",
    "sessionId",
    "metadata",
    "createdAt",
    "updatedAt",
    "expiresAt",
    "importance",
    "score",
)


@dataclass(frozen=True)
class Preset:
    """A known service's address and headers: the defaults a configuration naming it starts from."""

    base_url: str
    headers: dict[str, str]
    summary: str


# Neither service speaks the memory routes by itself: a preset points the routes at a plugin or
# integration that serves them there (as the original's presets did).
PRESETS: dict[str, Preset] = {
    "obsidian": Preset(
        "http://127.0.0.1:27123",
        {},
        "Obsidian's Local REST API plugin (its plain-HTTP port; loopback, so the private-URL switch is needed)",
    ),
    "notion": Preset(
        "https://api.notion.com/v1",
        {"Notion-Version": "2022-06-28"},
        "the Notion API (its version header; the memory routes come from an integration serving them)",
    ),
}


@dataclass(frozen=True)
class HttpConfig:
    """A memory service at ``base_url`` (or the ``preset``'s address, ``obsidian`` or ``notion``).
    ``api_key`` is sent as ``Authorization: Bearer``; ``headers`` are added to every request (over the
    preset's). ``routes``, ``params`` and ``fields`` rename the routes, query parameters and record
    fields of the module docstring (a param renamed to ``""`` is not sent). ``list_items`` and
    ``list_total`` name where a list answer holds its records and total; ``search_items`` where a
    search answer holds its hits (``""``: the answer is the array). ``page_size`` records are read per
    list request; ``timeout_seconds`` bounds each request."""

    base_url: str = ""
    preset: str | None = None
    api_key: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    routes: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    list_items: str = "data"
    list_total: str = "total"
    search_items: str = ""
    page_size: int = 100
    timeout_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.preset is not None and self.preset not in PRESETS:
            raise BackendConfigError(
                f"unknown preset {self.preset!r} (known: {', '.join(PRESETS)})", field="config.preset"
            )
        for name, known in (("routes", ROUTES), ("params", PARAMS), ("fields", FIELDS)):
            mapping = getattr(self, name)
            if not isinstance(mapping, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
            ):
                raise BackendConfigError(f"{name} must map names to strings", field=f"config.{name}")
            unknown = sorted(set(mapping) - set(known))
            if unknown:
                raise BackendConfigError(
                    f"unknown {name} name {unknown[0]!r} (known: {', '.join(known)})",
                    field=f"config.{name}.{unknown[0]}",
                )
        if any(not value for value in self.fields.values()):
            raise BackendConfigError("a record field's name must not be empty", field="config.fields")
        if not isinstance(self.headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.headers.items()
        ):
            raise BackendConfigError("headers must map header names to strings", field="config.headers")
        if not self.url:
            raise BackendConfigError("base_url is required (or a preset)", field="config.base_url")
        try:
            # Names are resolved before each request, not on save.
            check_outbound_url(
                self.url, allow_private=get_memory_settings().private_urls_allowed, resolve=False
            )
        except UrlPolicyError as exc:
            raise BackendConfigError(f"base_url: {exc}", field="config.base_url") from None
        if self.page_size < 1:
            raise BackendConfigError("page_size must be positive", field="config.page_size")
        if self.timeout_seconds <= 0:
            raise BackendConfigError("timeout_seconds must be positive", field="config.timeout_seconds")

    @property
    def url(self) -> str:
        """The base URL: ``base_url``, else the preset's; without a trailing slash."""
        base = self.base_url or (PRESETS[self.preset].base_url if self.preset else "")
        return base.rstrip("/")

    @property
    def all_headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.preset:
            headers.update(PRESETS[self.preset].headers)
        headers.update(self.headers)
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def route(self, operation: str, memory_id: uuid.UUID | None = None) -> str:
        """The URL of ``operation``: its path joined to the base URL's path, ``{id}``/``{memoryId}``
        filled."""
        path = self.routes.get(operation, ROUTES[operation])
        if memory_id is not None:
            quoted = quote(str(memory_id), safe="")
            path = path.replace("{id}", quoted).replace("{memoryId}", quoted)
        return f"{self.url}/{path.lstrip('/')}"

    def param(self, name: str) -> str:
        return self.params.get(name, name)

    def field_name(self, name: str) -> str:
        return self.fields.get(name, name)


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


class _NotFound(Exception):
    """The service answered 404."""


class HttpBackend(MemoryBackend):
    """A remote memory service over HTTP; see the module docstring."""

    type_name = "http"
    capabilities = Capabilities(keyword=True, vector=False, hybrid=False, filters=True)

    def __init__(self, config: HttpConfig, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.config = config
        self._client = httpx.Client(
            headers=config.all_headers, timeout=config.timeout_seconds, follow_redirects=False
        )

    # -- plumbing

    def _unavailable(self, message: str) -> BackendUnavailable:
        return BackendUnavailable(f"{self.name}: {message}", backend=self.name)

    def _call(
        self,
        operation: str,
        *,
        memory_id: uuid.UUID | None = None,
        params: Mapping[str, str | int | None] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        """One request; its JSON answer (None for an empty one). ``_NotFound`` on a 404 of a route
        that names a record, ``BackendUnavailable`` for everything else that is not a 2xx JSON."""
        url = self.config.route(operation, memory_id)
        try:
            check_outbound_url(url, allow_private=get_memory_settings().private_urls_allowed)
        except UrlPolicyError as exc:
            raise self._unavailable(f"refused by the outbound URL policy: {exc}") from None
        sent = {
            self.config.param(k): v
            for k, v in (params or {}).items()
            if v is not None and self.config.param(k)
        }
        try:
            response = self._client.request(METHODS[operation], url, params=sent, json=body)
        except httpx.HTTPError as exc:
            raise self._unavailable(f"{operation}: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 404 and memory_id is not None:
            raise _NotFound
        if response.status_code == 409 and operation == "create":
            taken = "key" if body and body.get(self.config.field_name("key")) else "id"
            raise Conflict(f"the service refused the create (409): its {taken} is taken", field=taken)
        if not response.is_success:
            raise self._unavailable(f"{operation}: HTTP {response.status_code}: {response.text[:200]}")
        if not response.content.strip():
            return None
        try:
            return response.json()
        except ValueError:
            raise self._unavailable(f"{operation}: the answer is not JSON") from None

    def _body(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Our field names to the service's."""
        return {self.config.field_name(k): v for k, v in values.items()}

    def _parse(self, item: Any, operation: str) -> MemoryRecord:
        """The record of one item of an answer, or ``BackendUnavailable`` when it holds none."""
        f = self.config.field_name
        try:
            if not isinstance(item, Mapping):
                raise TypeError("not an object")
            metadata = item.get(f("metadata")) or {}
            if isinstance(metadata, str):  # services that keep metadata as a JSON string
                metadata = json.loads(metadata)
            expires = item.get(f("expiresAt"))
            importance = item.get(f("importance"))
            created = datetime.fromisoformat(str(item[f("createdAt")]))
            return MemoryRecord(
                id=uuid.UUID(str(item[f("id")])),
                owner=uuid.UUID(str(item[f("apiKeyId")])),
                content=str(item[f("content")]),
                type=str(item.get(f("type")) or "factual"),
                key=str(item.get(f("key")) or "") or None,
                session_id=str(item.get(f("sessionId")) or ""),
                metadata=dict(metadata),
                created_at=created,
                updated_at=datetime.fromisoformat(str(item.get(f("updatedAt")) or created.isoformat())),
                expires_at=datetime.fromisoformat(str(expires)) if expires else None,
                importance=0.5 if importance is None else float(importance),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise self._unavailable(f"{operation}: the answer holds no memory record ({exc!r})") from None

    def _own(self, owner: uuid.UUID, record: MemoryRecord, operation: str) -> bool:
        if record.owner == owner:
            return True
        logger.warning(
            "%s: %s answered a record of another owner (%s); ignored", self.name, operation, record.id
        )
        return False

    def _items(self, answer: Any, where: str, operation: str) -> builtins.list[Any]:
        items = answer.get(where) if where and isinstance(answer, Mapping) else answer
        if not isinstance(items, builtins.list):
            raise self._unavailable(f"{operation}: the answer holds no list of records")
        return items

    def _read(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        """The owner's record ``memory_id``, expired or not; None when there is none."""
        try:
            answer = self._call("get", memory_id=memory_id, params={"apiKeyId": str(owner)})
        except _NotFound:
            return None
        record = self._parse(answer, "get")
        return record if self._own(owner, record, "get") and record.id == memory_id else None

    def _all(
        self, owner: uuid.UUID, filters: Filters, *, key: str | None = None
    ) -> builtins.list[MemoryRecord]:
        """Every record of the owner the service lists for these parameters, checked here (owner,
        filters, key), all pages; expired ones included."""
        params: dict[str, str | int | None] = {
            "apiKeyId": str(owner),
            "type": filters.type,
            "sessionId": filters.session_id,
            "key": key,
            "createdAfter": _instant(filters.created_after),
            "limit": self.config.page_size,
        }
        found: dict[uuid.UUID, MemoryRecord] = {}
        seen: set[uuid.UUID] = set()
        offset = 0
        while True:
            answer = self._call("list", params={**params, "offset": offset})
            items = self._items(answer, self.config.list_items, "list")
            fresh = 0
            for item in items:
                record = self._parse(item, "list")
                if record.id in seen:
                    continue
                seen.add(record.id)
                fresh += 1
                if self._own(owner, record, "list"):
                    found[record.id] = record
            total = answer.get(self.config.list_total) if isinstance(answer, Mapping) else None
            offset += len(items)
            # A short page, the total reached, or a page with nothing new (a service that ignores the
            # offset) ends the walk.
            if (
                len(items) < self.config.page_size
                or fresh == 0
                or (isinstance(total, int) and offset >= total)
            ):
                break
        return [r for r in found.values() if filters.admits(r) and (key is None or r.key == key)]

    def _live(self, owner: uuid.UUID, filters: Filters) -> builtins.list[MemoryRecord]:
        now = timezone.now()
        records = [r for r in self._all(owner, filters) if r.live(now)]
        records.sort(key=lambda r: (r.created_at, str(r.id)), reverse=True)
        return records

    def _by_key(self, owner: uuid.UUID, key: str) -> MemoryRecord | None:
        matches = sorted(self._all(owner, NO_FILTERS, key=key), key=lambda r: r.created_at)
        return matches[0] if matches else None

    def _patch(
        self, owner: uuid.UUID, memory_id: uuid.UUID, values: Mapping[str, Any]
    ) -> MemoryRecord | None:
        try:
            answer = self._call(
                "update", memory_id=memory_id, params={"apiKeyId": str(owner)}, body=self._body(values)
            )
        except _NotFound:
            return None
        if answer is None:  # a service that answers 204: read the record back
            return self._read(owner, memory_id)
        record = self._parse(answer, "update")
        return record if self._own(owner, record, "update") else None

    # -- writes

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        check_draft(draft)
        if draft.id is not None:
            known = self._read(draft.owner, draft.id)
            if known is not None:
                return known, False
        try:
            return self._store(draft)
        except Conflict as exc:
            if exc.details[0]["field"] != "key":
                raise  # an id the service holds for another owner (ours was looked up above)
            return self._store(draft)  # another writer created that key meanwhile: update it

    def _store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        now = timezone.now()
        existing = self._by_key(draft.owner, draft.key) if draft.key else None
        if existing is not None:
            values: dict[str, Any] = {
                "content": draft.content,
                "sessionId": draft.session_id,
                "type": draft.type,
                "expiresAt": _instant(draft.expires_at),
                "metadata": {**existing.metadata, **dict(draft.metadata)},
                "updatedAt": _instant(now),
            }
            if draft.importance is not None:
                values["importance"] = float(draft.importance)
            record = self._patch(draft.owner, existing.id, values)
            if record is None:
                raise self._unavailable(f"update: record {existing.id} vanished during the store")
            return record, False
        answer = self._call(
            "create",
            params={"apiKeyId": str(draft.owner)},
            body=self._body(
                {
                    "id": str(draft.id or uuid.uuid4()),
                    "apiKeyId": str(draft.owner),
                    "content": draft.content,
                    "type": draft.type,
                    "key": draft.key or None,
                    "sessionId": draft.session_id,
                    "metadata": dict(draft.metadata),
                    "createdAt": _instant(draft.created_at or now),
                    "updatedAt": _instant(now),
                    "expiresAt": _instant(draft.expires_at),
                    "importance": 0.5 if draft.importance is None else float(draft.importance),
                }
            ),
        )
        record = self._parse(answer, "create")
        if record.owner != draft.owner:
            raise self._unavailable("create: the service stored the record under another owner")
        return record, True

    def update(
        self,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        changes: Mapping[str, Any],
        *,
        embedding: Sequence[float] | np.ndarray | None = None,
    ) -> MemoryRecord | None:
        # ``embedding`` is ignored: the service holds no vectors (the contract's rule for such backends).
        checked = check_changes(changes)
        old = self._read(owner, memory_id)
        if old is None or not old.live(timezone.now()):
            return None
        key = checked.get("key", old.key)
        if key and key != old.key:
            holder = self._by_key(owner, key)
            if holder is not None and holder.id != memory_id:
                raise Conflict(f"another memory of this owner already uses key {key!r}", field="key")
        names = {"expires_at": "expiresAt"}
        values: dict[str, Any] = {}
        for name, value in checked.items():
            if name == "expires_at":
                value = _instant(value)
            elif name == "metadata":
                value = dict(value)
            values[names.get(name, name)] = value
        values["updatedAt"] = _instant(timezone.now())
        return self._patch(owner, memory_id, values)

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        if self._read(owner, memory_id) is None:
            return False
        try:
            self._call("delete", memory_id=memory_id, params={"apiKeyId": str(owner)})
        except _NotFound:
            return False
        return True

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        doomed = self._all(owner, Filters(type=type))
        now = timezone.now()
        cleared = 0
        for record in doomed:
            try:
                self._call("delete", memory_id=record.id, params={"apiKeyId": str(owner)})
            except _NotFound:
                continue
            cleared += record.live(now)
        return cleared

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        record = self._read(owner, memory_id)
        return record if record is not None and record.live(timezone.now()) else None

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        live = self._live(owner, filters)
        return Page(live[offset : offset + limit], len(live))

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        return len(self._live(owner, filters))

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        check_page(limit, 0)
        if not query_terms(query):
            return []
        answer = self._call(
            "search",
            params={
                "query": query,
                "apiKeyId": str(owner),
                "limit": limit,
                "type": filters.type,
                "sessionId": filters.session_id,
                "createdAfter": _instant(filters.created_after),
            },
        )
        now = timezone.now()
        score_field = self.config.field_name("score")
        hits: builtins.list[MemoryHit] = []
        for rank, item in enumerate(self._items(answer, self.config.search_items, "search")):
            record = self._parse(item, "search")
            if not (self._own(owner, record, "search") and record.live(now) and filters.admits(record)):
                continue
            score = item.get(score_field)
            if not isinstance(score, int | float) or isinstance(score, bool):
                score = 1.0 / (rank + 1)  # a service that only orders: the reciprocal of the rank
            hits.append(MemoryHit(record, float(score), "keyword"))
            if len(hits) == limit:
                break
        return hits

    def health(self) -> Health:
        started = time.perf_counter()
        try:
            self._call("health")
        except BackendUnavailable as exc:
            return Health(False, round((time.perf_counter() - started) * 1000, 3), str(exc))
        detail = {
            "url": self.config.url,
            "preset": self.config.preset,
            "keywordSearch": "the service's search route",
            "vectorSearch": None,
            "persistent": True,
        }
        return Health(True, round((time.perf_counter() - started) * 1000, 3), None, detail)
