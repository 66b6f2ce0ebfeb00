"""A Pinecone dense index's data plane as respx routes, for tests (no local Pinecone server exists).

It speaks the REST API's own shapes, as the official client sends and reads them (API version
``2026-07``): ``POST /vectors/upsert``, ``POST /query`` (``topK``, ``vector``, ``filter``,
``includeMetadata``), ``GET /vectors/fetch?ids=…&namespace=…``, ``POST /vectors/fetch_by_metadata``
(pages with ``pagination.next``), ``POST /vectors/delete`` (``ids``, ``filter`` or ``deleteAll``) and
``POST /describe_index_stats``, each checking the ``Api-Key`` header. Filters use Pinecone's metadata
filter language (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``,
``$exists``, ``$and``, ``$or``); an unknown operator, a vector of the wrong dimension, an all-zero
vector or metadata Pinecone does not store (nested objects, null) is a 400 as on the service. Scores
are cosine similarities. Unlike the service it is consistent: a read sees every acknowledged write.

``leak`` makes it answer as a broken server would (namespaces and the owner filter ignored), to show
that the adapter checks every record itself; ``outage`` answers every request with that status.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import numpy as np
import respx

DEFAULT_NAMESPACE = "__default__"


class FakePinecone:
    def __init__(
        self, host: str, *, api_key: str, dimension: int, page_size: int = 3, metric: str = "cosine"
    ) -> None:
        self.host = host.rstrip("/")
        self.api_key = api_key
        self.dimension = dimension
        # fetch_by_metadata answers at most this many per page, whatever limit asks, so that paging
        # is exercised with a handful of records.
        self.page_size = page_size
        self.metric = metric
        self.namespaces: dict[str, dict[str, dict[str, Any]]] = {}
        self.requests: list[httpx.Request] = []
        self.leak = False
        self.outage: int | None = None
        self._lock = threading.Lock()

    def install(self, router: respx.MockRouter) -> None:
        routes = (
            ("POST", "/vectors/upsert", self._upsert),
            ("POST", "/query", self._query),
            ("GET", "/vectors/fetch", self._fetch),
            ("POST", "/vectors/fetch_by_metadata", self._fetch_by_metadata),
            ("POST", "/vectors/delete", self._delete),
            ("POST", "/describe_index_stats", self._stats),
        )
        host = httpx.URL(self.host)
        for method, path, handler in routes:
            router.route(method=method, scheme=host.scheme, host=host.host, port=host.port, path=path).mock(
                side_effect=self._guarded(handler)
            )

    # -- plumbing

    def _guarded(self, handler: Any) -> Any:
        def respond(request: httpx.Request) -> httpx.Response:
            with self._lock:
                self.requests.append(request)
                if self.outage is not None:
                    return _error(self.outage, "UNAVAILABLE", "the index is unavailable")
                if request.headers.get("Api-Key") != self.api_key:
                    return _error(401, "UNAUTHENTICATED", "Invalid API Key")
                try:
                    return handler(request)
                except _BadRequest as exc:
                    return _error(400, "INVALID_ARGUMENT", str(exc))

        return respond

    def _space(self, namespace: str | None) -> dict[str, dict[str, Any]]:
        return self.namespaces.setdefault(namespace or DEFAULT_NAMESPACE, {})

    def _candidates(self, namespace: str | None, query: dict[str, Any] | None) -> list[dict[str, Any]]:
        if self.leak:
            return [v for space in self.namespaces.values() for v in space.values()]
        return [v for v in self._space(namespace).values() if query is None or _matches(v["metadata"], query)]

    def _check_values(self, values: Any) -> list[float]:
        if not isinstance(values, list) or len(values) != self.dimension:
            size = len(values) if isinstance(values, list) else 0
            raise _BadRequest(
                f"Vector dimension {size} does not match the dimension of the index {self.dimension}"
            )
        if not any(float(x) for x in values):
            raise _BadRequest("Dense vectors must contain at least one non-zero value")
        return [float(x) for x in values]

    # -- the routes

    def _upsert(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        space = self._space(body.get("namespace"))
        for vector in body["vectors"]:
            metadata = vector.get("metadata") or {}
            for name, value in metadata.items():
                if (
                    value is None
                    or isinstance(value, dict)
                    or (isinstance(value, list) and not all(isinstance(x, str) for x in value))
                ):
                    raise _BadRequest(
                        f"Metadata value for field {name!r} must be a string, number, boolean or list of strings"
                    )
            space[vector["id"]] = {
                "id": vector["id"],
                "values": self._check_values(vector["values"]),
                "metadata": metadata,
            }
        return httpx.Response(200, json={"upsertedCount": len(body["vectors"])})

    def _query(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        query = np.asarray(self._check_values(body["vector"]), dtype=np.float64)
        scored = []
        for vector in self._candidates(body.get("namespace"), body.get("filter")):
            values = np.asarray(vector["values"], dtype=np.float64)
            score = float(values @ query / (np.linalg.norm(values) * np.linalg.norm(query)))
            scored.append((score, vector))
        scored.sort(key=lambda pair: -pair[0])
        matches = []
        for score, vector in scored[: body["topK"]]:
            match: dict[str, Any] = {"id": vector["id"], "score": score, "values": []}
            if body.get("includeValues"):
                match["values"] = vector["values"]
            if body.get("includeMetadata"):
                match["metadata"] = vector["metadata"]
            matches.append(match)
        return httpx.Response(
            200, json={"matches": matches, "namespace": body.get("namespace", ""), "usage": {"readUnits": 5}}
        )

    def _fetch(self, request: httpx.Request) -> httpx.Response:
        namespace = request.url.params.get("namespace")
        ids = request.url.params.get_list("ids")
        pool = {v["id"]: v for v in self._candidates(namespace, None)}
        found = {i: pool[i] for i in ids if i in pool}
        return httpx.Response(
            200, json={"vectors": found, "namespace": namespace or "", "usage": {"readUnits": 1}}
        )

    def _fetch_by_metadata(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if not body.get("filter"):
            raise _BadRequest("filter must not be empty")
        matched = sorted(self._candidates(body.get("namespace"), body["filter"]), key=lambda v: v["id"])
        start = int(body.get("paginationToken") or 0)
        size = min(int(body.get("limit", 100)), self.page_size)
        page = matched[start : start + size]
        answer: dict[str, Any] = {
            "vectors": {v["id"]: v for v in page},
            "namespace": body.get("namespace", ""),
            "usage": {"readUnits": 1},
        }
        if start + size < len(matched):
            answer["pagination"] = {"next": str(start + size)}
        return httpx.Response(200, json=answer)

    def _delete(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        space = self._space(body.get("namespace"))
        if body.get("deleteAll"):
            space.clear()
        elif "ids" in body:
            for memory_id in body["ids"]:
                space.pop(memory_id, None)
        elif body.get("filter"):
            for vector in [v for v in space.values() if _matches(v["metadata"], body["filter"])]:
                del space[vector["id"]]
        else:
            raise _BadRequest("one of ids, filter or deleteAll is required")
        return httpx.Response(200, json={})

    def _stats(self, request: httpx.Request) -> httpx.Response:
        namespaces = {name: {"vectorCount": len(space)} for name, space in self.namespaces.items() if space}
        return httpx.Response(
            200,
            json={
                "namespaces": namespaces,
                "dimension": self.dimension,
                "indexFullness": 0.0,
                "totalVectorCount": sum(n["vectorCount"] for n in namespaces.values()),
                "metric": self.metric,
                "vectorType": "dense",
            },
        )


class _BadRequest(Exception):
    pass


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(
        status, json={"code": status, "error": {"code": code, "message": message}, "status": status}
    )


def _matches(metadata: dict[str, Any], query: dict[str, Any]) -> bool:
    for name, condition in query.items():
        if name == "$and":
            if not all(_matches(metadata, part) for part in condition):
                return False
        elif name == "$or":
            if not any(_matches(metadata, part) for part in condition):
                return False
        elif name.startswith("$"):
            raise _BadRequest(f"unknown filter operator {name}")
        elif isinstance(condition, dict):
            if not all(_compare(metadata, name, op, value) for op, value in condition.items()):
                return False
        elif not _compare(metadata, name, "$eq", condition):
            return False
    return True


def _compare(metadata: dict[str, Any], name: str, op: str, value: Any) -> bool:
    present = name in metadata
    actual = metadata.get(name)
    if op == "$exists":
        return present == bool(value)
    if op in ("$eq", "$ne"):
        equal = present and (value in actual if isinstance(actual, list) else actual == value)
        return equal if op == "$eq" else not equal
    if op in ("$in", "$nin"):
        inside = present and actual in value
        return inside if op == "$in" else not inside
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _BadRequest(f"{op} takes a number")
        if not present or not isinstance(actual, int | float):
            return False
        return {
            "$gt": actual > value,
            "$gte": actual >= value,
            "$lt": actual < value,
            "$lte": actual <= value,
        }[op]
    raise _BadRequest(f"unknown filter operator {op}")
