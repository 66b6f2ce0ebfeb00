"""A remote embedding endpoint that hangs or fails: one bounded wait, then a circuit breaker.

The endpoint is a real HTTP server on a loopback port (``FaultServer``) that answers, fails with a 500
or holds the connection without answering; nothing of ours is patched. The timeout, the breaker's
threshold and its cool-down are the ``MEMORY_EMBEDDING_TIMEOUT_SECONDS``, ``MEMORY_BREAKER_FAILURES``
and ``MEMORY_BREAKER_COOLDOWN_SECONDS`` settings.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.embeddings.remote import RemoteSource
from memory.retrieval.chat import retrieve_for_chat
from tests.factories import database_store, hash_embed, make_memory

pytestmark = pytest.mark.django_db

# A body only the failing server sends: it must never reach a response of ours.
SECRET_BODY = "upstream-secret-body-7f3a"
HANG_SECONDS = 30.0

Reply = tuple[int, dict | str] | None  # None: hold the connection without answering


class FaultServer:
    """A loopback HTTP server whose answer ``reply(method, path)`` decides: ``(status, json or text)``,
    or ``None`` to hang until the server stops. ``mode`` sets the default replies: ``ok`` (8-d hash
    embeddings for ``POST …/embeddings``; for Qdrant's ``GET /collections`` and
    ``GET /collections/<name>/exists``, no collection), ``fail`` (500 with :data:`SECRET_BODY`) or
    ``hang``. ``requests`` records ``(method, path)``."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.reply: Callable[[str, str], Reply] | None = None
        self.requests: list[tuple[str, str]] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append((self.command, self.path))
                answer = outer.answer(self.command, self.path, body)
                if answer is None:
                    outer.release.wait(HANG_SECONDS)
                    self.close_connection = True
                    return
                status, payload = answer
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header(
                    "Content-Type", "text/plain" if isinstance(payload, str) else "application/json"
                )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, method: str, path: str, body: bytes) -> Reply:
        if self.reply is not None:
            return self.reply(method, path)
        if self.mode == "hang":
            return None
        if self.mode == "fail":
            return 500, f"internal error; {SECRET_BODY}"
        if method == "POST" and path.endswith("/embeddings"):
            texts = json.loads(body)["input"]
            data = [{"index": i, "embedding": hash_embed(t).tolist()} for i, t in enumerate(texts)]
            return 200, {"data": data}
        if method == "GET" and path == "/collections":
            return 200, {"result": {"collections": []}, "status": "ok", "time": 0}
        if method == "GET" and path.endswith("/exists"):
            return 200, {"result": {"exists": False}, "status": "ok", "time": 0}
        return 404, {"status": {"error": "not found"}}

    def start(self) -> FaultServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint() -> Iterator[FaultServer]:
    server = FaultServer().start()
    yield server
    server.stop()


@pytest.fixture
def remote(endpoint, settings) -> FaultServer:
    """Memory embeddings from ``endpoint`` (loopback, so private URLs are allowed): a 1 s timeout, a
    breaker that opens after 2 failures in a row and waits 60 s."""
    settings.MEMORY_EMBEDDING_TIMEOUT_SECONDS = 1.0
    settings.MEMORY_BREAKER_FAILURES = 2
    settings.MEMORY_BREAKER_COOLDOWN_SECONDS = 60.0
    update_memory_settings(
        {
            "embeddingSource": "remote",
            "customBaseUrl": f"{endpoint.url}/v1",
            "customModelId": "hash-8",
            "allowPrivateUrls": True,
        }
    )
    return endpoint


def timed_chat(owner, query: str = "kiwi smoothie") -> tuple[float, dict, list[str]]:
    """The gateway's retrieval for ``owner``: (seconds, resolution, contents found)."""
    started = time.perf_counter()
    result = retrieve_for_chat(api_key=owner, query=query, touch=False)
    return time.perf_counter() - started, result.resolution, [m.content for m in result.memories]


def live_source() -> RemoteSource:
    from memory.conf import get_memory_settings

    source, _ = runtime.get_source(get_memory_settings())
    inner = getattr(source, "inner", source)
    assert isinstance(inner, RemoteSource)
    return inner


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# -- a hung endpoint


def test_a_hung_endpoint_costs_one_timeout_then_none_and_keyword_search_answers(remote, alice):
    make_memory(alice, "kiwi smoothie recipe with mint")
    make_memory(alice, "deploys happen on Friday")
    remote.mode = "hang"

    first, resolution, found = timed_chat(alice)
    # One wait of the configured timeout (the query), not two (query and the memories still to embed):
    # counted as requests, since a loaded machine stretches the rest of a chat but not their number.
    assert first >= 0.9 and len(remote.requests) == 1
    assert found == ["kiwi smoothie recipe with mint"]
    assert resolution["strategyUsed"] == "keyword" and "timed out" in resolution["fallbackReason"]

    second, _, _ = timed_chat(alice)
    assert second >= 0.9 and len(remote.requests) == 2  # the second failure in a row opens the circuit
    asked = len(remote.requests)

    for _ in range(5):
        elapsed, resolution, found = timed_chat(alice)
        assert elapsed < 0.9  # under one timeout: nothing waited
        assert found == ["kiwi smoothie recipe with mint"]
        assert resolution["strategyUsed"] == "keyword"
        assert "circuit open after 2 failures in a row" in resolution["fallbackReason"]
    assert len(remote.requests) == asked  # an open circuit sends nothing


def test_the_timeout_is_the_setting(remote, alice, settings):
    settings.MEMORY_EMBEDDING_TIMEOUT_SECONDS = 0.3
    runtime.reset()
    make_memory(alice, "kiwi smoothie recipe")
    remote.mode = "hang"
    elapsed, resolution, _ = timed_chat(alice)
    assert 0.25 <= elapsed < 0.9 and "timed out" in resolution["fallbackReason"]
    assert live_source().timeout == 0.3


# -- what engine-status and the Studio say


def test_engine_status_shows_the_open_circuit_and_the_fallback(remote, alice, read_api, admin_client):
    make_memory(alice, "kiwi smoothie recipe")
    read_api.get("/api/memory/engine-status")  # its first call self-checks the int8 kernel: not timed
    remote.mode = "hang"
    timed_chat(alice)
    timed_chat(alice)

    started = time.perf_counter()
    embedding = read_api.get("/api/memory/engine-status").json()["embedding"]
    assert time.perf_counter() - started < 0.5  # status does not wait on the endpoint either
    circuit = embedding["circuit"]
    assert circuit["state"] == "open" and circuit["failures"] == 2 and circuit["threshold"] == 2
    assert "timed out" in circuit["lastFailure"]
    assert circuit["lastFailureAt"] and circuit["openedAt"] and circuit["retryAt"]
    assert embedding["fallback"] == "keyword search (FTS5)"

    page = admin_client.get(
        "/dashboard/memory", {"tab": "engine"}, headers={"HX-Request": "true", "HX-Target": "engine-status"}
    ).content.decode()
    assert "circuit open" in page and "Searches use keyword search (FTS5)" in page


def test_a_500_falls_back_and_engine_status_says_so_without_the_body(remote, alice, read_api):
    make_memory(alice, "kiwi smoothie recipe")
    remote.mode = "fail"
    elapsed, resolution, found = timed_chat(alice)
    assert elapsed < 0.9 and found == ["kiwi smoothie recipe"]
    assert "HTTP 500" in resolution["fallbackReason"] and SECRET_BODY not in resolution["fallbackReason"]

    response = read_api.get("/api/memory/engine-status")
    embedding = response.json()["embedding"]
    assert embedding["circuit"]["state"] == "closed" and embedding["circuit"]["failures"] == 1
    assert embedding["circuit"]["lastFailure"] == "Embedding provider 127.0.0.1 returned HTTP 500"
    assert embedding["fallback"] == "keyword search (FTS5)"
    assert SECRET_BODY.encode() not in response.content

    preview = read_api.post("/api/memory/retrieve-preview", {"query": "kiwi smoothie"})
    assert preview.status_code == 200 and SECRET_BODY.encode() not in preview.content


# -- the half-open probe


def test_the_probe_closes_the_circuit_once_the_endpoint_answers_again(remote, alice, read_api, settings):
    settings.MEMORY_BREAKER_COOLDOWN_SECONDS = 0.3
    runtime.reset()
    make_memory(alice, "kiwi smoothie recipe")
    remote.mode = "fail"
    timed_chat(alice)
    timed_chat(alice)
    breaker = live_source().breaker
    assert breaker.state == "open"

    time.sleep(0.35)  # still failing: the probe opens it again
    elapsed, resolution, _ = timed_chat(alice)
    assert elapsed < 0.9 and "circuit half-open" in resolution["fallbackReason"]
    assert wait_for(lambda: breaker.state == "open")
    assert breaker.snapshot()["failures"] == 3

    remote.mode = "ok"
    time.sleep(0.35)
    elapsed, resolution, _ = timed_chat(alice)
    assert elapsed < 0.9 and resolution["strategyUsed"] == "keyword"  # the probe runs beside it
    assert wait_for(lambda: breaker.state == "closed")
    assert ("POST", "/v1/embeddings") in remote.requests

    _, resolution, found = timed_chat(alice)
    assert resolution["strategyUsed"] == "hybrid" and resolution["vectorStore"] == database_store().name
    assert found == ["kiwi smoothie recipe"]
    embedding = read_api.get("/api/memory/engine-status").json()["embedding"]
    assert embedding["circuit"]["state"] == "closed" and embedding["fallback"] is None


def test_a_success_before_the_threshold_starts_the_count_again(remote, alice):
    make_memory(alice, "kiwi smoothie recipe")
    remote.mode = "fail"
    timed_chat(alice)
    remote.mode = "ok"
    _, resolution, _ = timed_chat(alice)
    assert resolution["strategyUsed"] == "hybrid"
    remote.mode = "fail"
    _, resolution, _ = timed_chat(alice, "kiwi recipe")  # not a cached query: the endpoint is asked
    assert "HTTP 500" in resolution["fallbackReason"]
    breaker = live_source().breaker
    assert breaker.state == "closed" and breaker.snapshot()["failures"] == 1  # never 2 in a row
