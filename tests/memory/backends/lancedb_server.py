"""A LanceDB Cloud/Enterprise stand-in on a real socket (a ``ThreadingHTTPServer`` in a thread), for
the remote mode of the LanceDB backend: the REST routes of ``memory/backends/lancedb_remote.py`` with
real Arrow IPC bodies, executed by a real embedded LanceDB (the ``lancedb`` package) in a directory
per database, so predicates, full-text and vector queries are really run.

It checks ``x-api-key`` (401 on a wrong or missing key) and ``x-lancedb-database`` (403 for a
database it does not serve). ``requests`` records what came in; ``outage`` answers every request
with that status; ``leak_table`` answers every query from that table instead of the one asked for,
ignoring its filter (a broken server that mixes tenants).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import lancedb
import pyarrow as pa
from lancedb.index import FTS
from lancedb.query import FullTextOperator, MatchQuery

ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    content_type: str
    body: Any


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def json_schema(schema: pa.Schema) -> dict[str, Any]:
    """A schema as the describe route writes it (the namespace spec's JsonArrowSchema)."""

    def kind(arrow_type: pa.DataType) -> dict[str, Any]:
        if pa.types.is_fixed_size_list(arrow_type):
            item = arrow_type.value_field
            return {
                "type": "fixed_size_list",
                "length": arrow_type.list_size,
                "fields": [{"name": item.name, "nullable": item.nullable, "type": kind(item.type)}],
            }
        return {"type": str(arrow_type)}

    return {"fields": [{"name": f.name, "nullable": f.nullable, "type": kind(f.type)} for f in schema]}


@dataclass
class LanceServer:
    root: Path
    api_key: str = "sk-test"
    databases: tuple[str, ...] = ("memories",)
    requests: list[Seen] = field(default_factory=list)
    outage: int | None = None
    leak_table: str | None = None
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _connections: dict[str, lancedb.DBConnection] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def db(self, database: str) -> lancedb.DBConnection:
        if database not in self._connections:
            directory = self.root / (database or "_default")
            directory.mkdir(parents=True, exist_ok=True)
            self._connections[database] = lancedb.connect(str(directory))
        return self._connections[database]

    def seen(self, operation: str) -> list[Seen]:
        """The requests of one table route (``query``, ``merge_insert``, …)."""
        return [r for r in self.requests if r.path.endswith(f"/{operation}")]

    # -- the routes

    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> tuple[int, str, bytes]:
        if self.outage is not None:
            return _json(self.outage, {"error": "down for maintenance"})
        if headers.get("x-api-key") != self.api_key:
            return _json(401, {"error": "Invalid API key"})
        database = headers.get("x-lancedb-database", "")
        if database not in self.databases:
            return _json(403, {"error": f"this key has no database {database!r}"})
        db = self.db(database)
        try:
            if method == "GET" and path.rstrip("/") == "/v1/table":
                limit = int(query.get("limit", 100))
                return _json(200, {"tables": db.list_tables(limit=limit).tables, "page_token": None})
            parts = path.split("/")
            if method != "POST" or len(parts) < 5 or parts[:3] != ["", "v1", "table"]:
                return _json(404, {"error": f"no route {method} {path}"})
            name, operation = unquote(parts[3]), "/".join(parts[4:])
            return self._table_route(db, name, operation, query, headers.get("content-type", ""), body)
        except Refused as exc:
            return _json(exc.status, {"error": str(exc)})

    def _open(self, db: lancedb.DBConnection, name: str) -> Any:
        if name not in db.list_tables().tables:
            raise Refused(404, f"Table '{name}' was not found")
        return db.open_table(name)

    def _table_route(
        self,
        db: lancedb.DBConnection,
        name: str,
        operation: str,
        query: dict[str, str],
        content_type: str,
        body: bytes,
    ) -> tuple[int, str, bytes]:
        if operation == "create":
            if content_type != ARROW_STREAM:
                raise Refused(415, f"create takes {ARROW_STREAM}")
            data = pa.ipc.open_stream(pa.BufferReader(body)).read_all()
            if name in db.list_tables().tables:
                raise Refused(409, f"Table '{name}' already exists")
            db.create_table(name, schema=data.schema, data=data if data.num_rows else None)
            return _json(200, {"version": 1})
        table = self._open(db, name)
        if operation == "describe":
            return _json(200, {"table": name, "version": table.version, "schema": json_schema(table.schema)})
        if operation == "exists":
            return _json(200, {})
        if operation == "index/list":
            indexes = [
                {"index_name": i.name, "columns": i.columns, "index_type": i.index_type}
                for i in table.list_indices()
            ]
            return _json(200, {"indexes": indexes})
        if operation == "merge_insert":
            if content_type != ARROW_STREAM:
                raise Refused(415, f"merge_insert takes {ARROW_STREAM}")
            data = pa.ipc.open_stream(pa.BufferReader(body)).read_all()
            builder = table.merge_insert(query["on"])
            if query.get("when_matched_update_all") == "true":
                builder = builder.when_matched_update_all()
            if query.get("when_not_matched_insert_all") == "true":
                builder = builder.when_not_matched_insert_all()
            result = builder.execute(data, on_bad_vectors="null")
            return _json(
                200,
                {
                    "version": result.version,
                    "num_inserted_rows": result.num_inserted_rows,
                    "num_updated_rows": result.num_updated_rows,
                },
            )
        request = json.loads(body or b"{}")
        if operation == "create_index":
            if request.get("index_type") != "FTS":
                raise Refused(400, "this server builds FTS indexes only")
            options = {
                k: request[k]
                for k in (
                    "with_position",
                    "base_tokenizer",
                    "language",
                    "lower_case",
                    "stem",
                    "remove_stop_words",
                    "ascii_folding",
                )
                if k in request
            }
            table.create_index(
                request["column"], config=FTS(**options), name=request.get("name"), replace=True
            )
            return _json(200, {})
        if operation == "count_rows":
            return _json(200, table.count_rows(request.get("predicate")))
        if operation == "delete":
            return _json(200, {"version": table.delete(request["predicate"]).version})
        if operation == "query":
            if self.leak_table is not None:
                table = self._open(db, self.leak_table)
                request = {**request, "filter": None}
            result = self._query(table, request)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, result.schema) as writer:
                writer.write_table(result)
            return 200, ARROW_FILE, sink.getvalue().to_pybytes()
        raise Refused(404, f"no table route {operation!r}")

    def _query(self, table: Any, request: dict[str, Any]) -> pa.Table:
        columns = list((request.get("columns") or {}).get("column_names") or [])
        vector = (request.get("vector") or {}).get("single_vector")
        text = (request.get("full_text_query") or {}).get("string_query")
        if vector is not None:
            dimension = table.schema.field(request.get("vector_column", "vector")).type.list_size
            if len(vector) != dimension:
                raise Refused(400, f"query vector has dimension {len(vector)}, the column {dimension}")
            search = table.search(
                vector, vector_column_name=request.get("vector_column", "vector"), query_type="vector"
            )
            search = search.distance_type(request.get("distance_type", "l2"))
            extra = ["_distance"]
        elif text is not None:
            match = MatchQuery(
                text["query"],
                (text.get("columns") or ["text"])[0],
                boost=1.0,
                fuzziness=0,
                max_expansions=50,
                operator=FullTextOperator.OR,
                prefix_length=0,
                document_granularity=None,
            )
            search = table.search(match, query_type="fts")
            extra = ["_score"]
        else:
            search = table.search()
            extra = []
        if request.get("filter"):
            search = search.where(request["filter"], prefilter=bool(request.get("prefilter", True)))
        if columns:
            search = search.select([c for c in columns if c not in extra] + extra)
        if request.get("offset"):
            search = search.offset(int(request["offset"]))
        return search.limit(int(request.get("k", 10))).to_arrow()


def _json(status: int, value: Any) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(value).encode()


@contextmanager
def running(server: LanceServer) -> Iterator[LanceServer]:
    """Serve ``server`` on a free loopback port until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            content_type = headers.get("content-type", "")
            shown: Any = json.loads(body) if body and content_type == "application/json" else body
            with server.lock:
                server.requests.append(Seen(self.command, parts.path, query, headers, content_type, shown))
                try:
                    status, kind, data = server.answer(self.command, parts.path, query, headers, body)
                except Exception as exc:  # what lancedb refuses (a bad predicate) is the client's error
                    status, kind, data = _json(400, {"error": f"{type(exc).__name__}: {exc}"})
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _handle

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
