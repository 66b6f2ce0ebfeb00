"""The outbound URL policy for the Redis and ChromaDB backends: the Redis URL adapter of
``memory.urlpolicy``, the check when a configuration is parsed (no DNS) and again, names resolved,
before connecting, and errors that never repeat what answered at the URL."""

from __future__ import annotations

import socket
import socketserver
import threading
import uuid
from collections.abc import Iterator

import httpx
import pytest
import respx
from django.test import override_settings

from memory.backends.base import BackendConfigError, BackendUnavailable, MemoryDraft
from memory.backends.chromadb import ChromaBackend
from memory.backends.redis import RedisBackend
from memory.backends.registry import build_backend
from memory.urlpolicy import UrlPolicyError, check_redis_url

pytestmark = pytest.mark.django_db

SECRET = "AKIA-metadata-token-0123456789"


def field_of(exc: pytest.ExceptionInfo[BackendConfigError]) -> str:
    return exc.value.details[0]["field"]


@pytest.mark.parametrize(
    ("url", "allowed", "refused_because"),
    [
        ("redis://cache.example.com:6379/0", False, None),
        ("rediss://:pw@cache.example.com:6380/2?ssl_cert_reqs=required", False, None),
        ("redis://user:pw@cache.example.com/0?db=3&protocol=2", False, None),
        ("redis://127.0.0.1:6379/0", False, "loopback address"),
        ("redis://127.0.0.1:6379/0", True, None),
        ("redis://10.1.2.3:6379/0", False, "private-network address"),
        ("redis://10.1.2.3:6379/0", True, None),
        ("redis://", False, "loopback name"),  # redis-py connects to localhost
        ("redis://localhost", False, "loopback name"),
        ("redis://[::1]:6379", False, "loopback address"),
        ("redis://[::ffff:10.0.0.1]:6379", False, "private-network address"),
        ("redis://169.254.169.254:6379", True, "cloud metadata address"),
        ("redis://metadata.google.internal", True, "cloud metadata service"),
        ("redis://100.100.100.200", True, "cloud metadata address"),
        ("redis://169.254.1.1", True, "link-local address"),
        ("redis://%31%36%39.254.169.254", True, "percent-encoded"),
        ("redis:///0?host=169.254.169.254", True, "query parameter 'host'"),
        ("redis://cache.example.com/0?unix_socket_path=/run/x.sock", True, "query parameter"),
        ("redis://cache.example.com/0?socket_timeout=999", True, "query parameter"),
        ("redis://cache.example.com/0#frag", True, "fragment"),
        ("redis://cache.example.com:99999", True, "malformed"),
        ("redis://cache.example.com /0", True, "whitespace"),
        ("http://cache.example.com", True, "scheme"),
        ("unix:///run/redis.sock", False, "Unix socket"),
        ("unix:///run/redis.sock", True, None),
    ],
)
def test_the_redis_url_adapter(url: str, allowed: bool, refused_because: str | None) -> None:
    if refused_because is None:
        check_redis_url(url, allow_private=allowed, resolve=False)
        return
    with pytest.raises(UrlPolicyError) as caught:
        check_redis_url(url, allow_private=allowed, resolve=False)
    assert refused_because in str(caught.value)


def test_a_redis_name_is_resolved_before_connecting() -> None:
    def resolver(host: str, port: int, **_: object) -> list[tuple[object, ...]]:
        assert (host, port) == ("cache.example.com", 6380)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port))]

    with pytest.raises(UrlPolicyError, match="resolves to 169.254.169.254"):
        check_redis_url("redis://cache.example.com:6380/0", allow_private=True, resolver=resolver)


@pytest.mark.parametrize(
    ("type_name", "config"),
    [
        ("redis", {"url": "redis://169.254.169.254:6379/0"}),
        ("redis", {"url": "rediss://[fd00:ec2::254]:6379"}),
        ("chromadb", {"url": "http://169.254.169.254:8000"}),
        ("chromadb", {"url": "http://metadata.google.internal"}),
        ("chromadb", {"url": "http://user:pw@chroma.example.com"}),
    ],
)
def test_metadata_and_credentials_are_refused_on_parse_even_with_the_switch(
    type_name: str, config: dict
) -> None:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), pytest.raises(BackendConfigError) as caught:
        build_backend(type_name, config)
    assert field_of(caught) == "config.url" and caught.value.status == 400


@pytest.mark.parametrize(
    ("type_name", "url"),
    [
        ("redis", "redis://127.0.0.1:6379/0"),
        ("redis", "redis://192.168.1.20:6379/0"),
        ("redis", "unix:///run/redis.sock"),
        ("chromadb", "http://127.0.0.1:8000"),
        ("chromadb", "http://[::ffff:127.0.0.1]:8000"),
        ("chromadb", "http://localhost:8000"),
    ],
)
def test_loopback_and_private_need_the_switch(type_name: str, url: str) -> None:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False), pytest.raises(BackendConfigError) as caught:
        build_backend(type_name, {"url": url})
    assert field_of(caught) == "config.url"
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        assert build_backend(type_name, {"url": url}).config.url == url


def _loopback_name() -> str:
    name = socket.gethostname()
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    except OSError:
        pytest.skip(f"this machine's name {name!r} does not resolve")
    if not all(a.startswith("127.") or a == "::1" for a in addresses):
        pytest.skip(f"this machine's name {name!r} does not resolve to loopback only")
    return name


def test_a_name_that_resolves_to_loopback_is_refused_before_connecting() -> None:
    name = _loopback_name()  # passes the parse (no DNS then), not the check before connecting
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
        redis_backend = build_backend("redis", {"url": f"redis://{name}:6379/0", "retries": 0})
        chroma = build_backend("chromadb", {"url": f"http://{name}:8000", "retries": 0})
        with pytest.raises(BackendUnavailable, match="outbound URL policy.*resolves to 127"):
            redis_backend.store(MemoryDraft(owner=uuid.uuid4(), content="x"))
        with pytest.raises(BackendUnavailable, match="outbound URL policy.*resolves to 127"):
            chroma.store(MemoryDraft(owner=uuid.uuid4(), content="x"))
        for health in (redis_backend.health(), chroma.health()):
            assert health.ok is False and "outbound URL policy" in (health.error or "")


def test_turning_the_switch_off_stops_a_built_backend(tmp_path) -> None:
    from tests.memory.backends.redis_server import RedisServer

    server = RedisServer(tmp_path)
    server.start()
    try:
        with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
            backend = build_backend("redis", {"url": server.url, "retries": 0})
            assert isinstance(backend, RedisBackend)
            assert backend.health().ok
        with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
            with pytest.raises(BackendUnavailable, match="outbound URL policy"):
                backend.count(uuid.uuid4())
            assert backend.health().ok is False
        with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
            assert backend.health().ok
    finally:
        server.stop()


class _Impostor(socketserver.BaseRequestHandler):
    """Whatever listens where Redis was expected: it answers every request with a secret page."""

    def handle(self) -> None:
        self.request.recv(4096)
        body = f"{SECRET}\n".encode()
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


@pytest.fixture
def impostor() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Impostor)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_redis_errors_never_repeat_what_answered(impostor: int) -> None:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        backend = build_backend("redis", {"url": f"redis://127.0.0.1:{impostor}/0", "retries": 0})
        with pytest.raises(BackendUnavailable) as caught:
            backend.get(uuid.uuid4(), uuid.uuid4())
        health = backend.health()
    assert "not the Redis protocol" in str(caught.value)
    assert "HTTP/1.1" not in str(caught.value) and SECRET not in str(caught.value)
    assert (
        health.ok is False and SECRET not in (health.error or "") and "HTTP/1.1" not in (health.error or "")
    )


@override_settings(MEMORY_ALLOW_PRIVATE_URLS=True)
def test_chroma_errors_never_repeat_the_body() -> None:
    url = "http://127.0.0.1:9"  # answered by respx (a name would have to resolve, and nothing leaves)
    with respx.mock(assert_all_called=False) as router:
        router.route().mock(
            return_value=httpx.Response(
                403, json={"error": "AuthError", "message": f"token {SECRET} invalid"}
            )
        )
        backend = build_backend("chromadb", {"url": url, "retries": 0})
        assert isinstance(backend, ChromaBackend)
        with pytest.raises(BackendUnavailable) as caught:
            backend.count(uuid.uuid4())
        health = backend.health()
    message = str(caught.value)
    assert "403 Forbidden (AuthError)" in message and SECRET not in message
    assert health.ok is False and SECRET not in (health.error or "")
    with respx.mock(assert_all_called=False) as router:
        router.route().mock(return_value=httpx.Response(500, text=f"<html>{SECRET}</html>"))
        with pytest.raises(BackendUnavailable) as caught:
            build_backend("chromadb", {"url": url, "retries": 0}).count(uuid.uuid4())
    assert "500 Internal Server Error" in str(caught.value) and SECRET not in str(caught.value)
