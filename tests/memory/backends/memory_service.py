"""A small REST memory service on a real socket (a ``ThreadingHTTPServer`` in a thread), for the
generic HTTP backend's tests: the default protocol of ``memory/backends/http.py`` under a base path,
with its field and list names configurable.

It keeps records as the JSON it was sent, filters lists by the parameters it knows (``apiKeyId``,
``type``, ``sessionId``, ``key``, ``createdAfter``), pages them by ``offset``/``limit`` and ranks
searches by term frequency over content and key. It does not hide expired records: that check is
the adapter's. ``leak`` makes it ignore ``apiKeyId`` everywhere (a broken service), ``outage`` answers
every request with that status, and ``requests`` records what came in.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class MemoryService:
    base_path: str = "/v1"
    fields: dict[str, str] = field(default_factory=dict)
    list_items: str = "data"
    list_total: str = "total"
    search_items: str = ""
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)
    leak: bool = False
    outage: int | None = None
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    def f(self, name: str) -> str:
        return self.fields.get(name, name)

    # -- the routes

    def answer(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if self.outage is not None:
            return self.outage, {"error": "down for maintenance"}
        if not path.startswith(self.base_path + "/"):
            return 404, {"error": f"no route {path}"}
        route = path[len(self.base_path) :]
        owner = None if self.leak else query.get("apiKeyId")
        if route == "/health" and method == "GET":
            return 200, {"ok": True}
        if route == "/memories/search" and method == "GET":
            return 200, self._search(query, owner)
        if route == "/memories" and method == "GET":
            return 200, self._list(query, owner)
        if route == "/memories" and method == "POST":
            return self._create(body)
        match = re.fullmatch(r"/memories/([^/]+)", route)
        if match:
            record = self.records.get(match.group(1))
            if record is None or (owner and record[self.f("apiKeyId")] != owner):
                return 404, {"error": "not found"}
            if method == "GET":
                return 200, record
            if method == "PATCH":
                record.update(body)
                return 200, record
            if method == "DELETE":
                del self.records[match.group(1)]
                return 204, None
        return 405, {"error": f"{method} {route}"}

    def _create(self, body: dict[str, Any]) -> tuple[int, Any]:
        key = body.get(self.f("key"))
        owner = body.get(self.f("apiKeyId"))
        if key and any(
            r.get(self.f("key")) == key and r[self.f("apiKeyId")] == owner for r in self.records.values()
        ):
            return 409, {"error": "key taken"}
        if body[self.f("id")] in self.records:
            return 409, {"error": "id taken"}
        self.records[body[self.f("id")]] = dict(body)
        return 201, body

    def _matching(self, query: dict[str, str], owner: str | None) -> list[dict[str, Any]]:
        found = []
        for record in self.records.values():
            if owner and record[self.f("apiKeyId")] != owner:
                continue
            if any(
                query.get(name) and record.get(self.f(name)) != query[name]
                for name in ("type", "sessionId", "key")
            ):
                continue
            after = query.get("createdAfter")
            if after and datetime.fromisoformat(record[self.f("createdAt")]) < datetime.fromisoformat(after):
                continue
            found.append(record)
        return found

    def _list(self, query: dict[str, str], owner: str | None) -> dict[str, Any]:
        found = sorted(self._matching(query, owner), key=lambda r: r[self.f("id")])
        offset, limit = int(query.get("offset", 0)), int(query.get("limit", 50))
        return {self.list_items: found[offset : offset + limit], self.list_total: len(found)}

    def _search(self, query: dict[str, str], owner: str | None) -> Any:
        terms = re.findall(r"\w+", query.get("query", "").lower())
        scored = []
        for record in self._matching(query, owner):
            words = re.findall(
                r"\w+", f"{record[self.f('content')]} {record.get(self.f('key')) or ''}".lower()
            )
            hits = sum(words.count(t) for t in terms)
            if hits:
                scored.append((hits / math.sqrt(len(words)), record))
        scored.sort(key=lambda pair: -pair[0])
        hits = [{**r, self.f("score"): s} for s, r in scored[: int(query.get("limit", 10))]]
        return {self.search_items: hits} if self.search_items else hits


@contextmanager
def running(service: MemoryService) -> Iterator[MemoryService]:
    """Serve ``service`` on a free loopback port until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            with service.lock:
                service.requests.append(Seen(self.command, parts.path, query, dict(self.headers), body))
                status, answer = service.answer(self.command, parts.path, query, body)
            data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _handle

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
