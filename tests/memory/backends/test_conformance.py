"""The conformance suite (``conformance.py``) run against every adapter, each against the real thing:
the in-memory store, the native store (the test database with its migrations, FTS5 and sqlite-vec)
and a Redis server (``REDIS_URL``, default 127.0.0.1:6379; each test under its own key prefix,
removed after it)."""

from __future__ import annotations

import dataclasses
import os
import secrets
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis
import respx
from django.test import override_settings

from memory.backends.encrypted import EncryptedBackend
from memory.backends.registry import build_backend
from memory.models import ApiKey
from memory.services import encryption
from tests.memory.backends.chroma_server import delete_collection, shared_chroma
from tests.memory.backends.conformance import Conformance, Subject
from tests.memory.backends.fake_pinecone import FakePinecone
from tests.memory.backends.lancedb_server import LanceServer
from tests.memory.backends.lancedb_server import running as lance_running
from tests.memory.backends.memory_service import MemoryService, running
from tests.memory.backends.search_redis import shared_search_server

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CHROMA_URL = os.environ.get("CHROMA_URL", "")
# An arbitrary dimension for the stores that take any.
FREE_DIMENSION = 16


def _native(request: pytest.FixtureRequest) -> Iterator[Subject]:
    owner, other = (ApiKey.issue(name=name)[0].pk for name in ("alice", "bob"))
    backend = build_backend("native")
    dimension = backend.vector_dimension
    assert dimension, backend.health()
    yield Subject(backend, owner, other, dimension)


def _chromadb(request: pytest.FixtureRequest) -> Iterator[Subject]:
    # The server at CHROMA_URL (another Chroma version), else one `chroma run` server for the run;
    # each test has its own two collections, deleted after it.
    url = CHROMA_URL or shared_chroma(request.config).url
    collection = f"omr-test-{uuid.uuid4().hex}"
    # Loopback needs the private-URL switch (the outbound URL policy).
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        backend = build_backend("chromadb", {"url": url, "collection": collection, "retries": 0})
        try:
            yield Subject(backend, uuid.uuid4(), uuid.uuid4(), FREE_DIMENSION)
        finally:
            delete_collection(url, collection)
            delete_collection(url, f"{collection}-vectors")


def _inmemory(request: pytest.FixtureRequest) -> Iterator[Subject]:
    yield Subject(build_backend("inmemory"), uuid.uuid4(), uuid.uuid4(), FREE_DIMENSION)


def _lancedb(request: pytest.FixtureRequest) -> Iterator[Subject]:
    # A real Lance directory per test, under pytest's tmp_path (removed with it).
    path = request.getfixturevalue("tmp_path") / "lancedb"
    backend = build_backend("lancedb", {"path": str(path), "dimension": FREE_DIMENSION})
    yield Subject(backend, uuid.uuid4(), uuid.uuid4(), FREE_DIMENSION)


def _lancedb_remote(request: pytest.FixtureRequest) -> Iterator[Subject]:
    # The remote (Cloud/Enterprise REST + Arrow IPC) mode against a loopback server that runs the
    # queries on a real Lance directory (lancedb_server.py); loopback needs the private-URL switch.
    server = LanceServer(request.getfixturevalue("tmp_path") / "lance-server")
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), lance_running(server):
        config = {
            "uri": server.url,
            "api_key": server.api_key,
            "database": "memories",
            "dimension": FREE_DIMENSION,
            "retries": 0,
        }
        yield Subject(build_backend("lancedb", config), uuid.uuid4(), uuid.uuid4(), FREE_DIMENSION)


def _pinecone(request: pytest.FixtureRequest) -> Iterator[Subject]:
    # No Pinecone server runs here: the official client speaks to the API's shapes through respx
    # (fake_pinecone.py). The host is Pinecone Local's loopback address, so the private-URL switch is on.
    host = "http://localhost:5081"
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), respx.mock(assert_all_called=False) as router:
        FakePinecone(host, api_key="pclocal", dimension=FREE_DIMENSION).install(router)
        backend = build_backend("pinecone", {"host": host, "api_key": "pclocal"})
        yield Subject(backend, uuid.uuid4(), uuid.uuid4(), FREE_DIMENSION)


def _http(request: pytest.FixtureRequest) -> Iterator[Subject]:
    # A REST memory service on a real loopback socket (memory_service.py), under a base path that
    # the adapter must keep; loopback needs the private-URL switch.
    service = MemoryService(base_path="/api/v1")
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), running(service):
        backend = build_backend("http", {"base_url": service.url, "api_key": "secret", "page_size": 2})
        yield Subject(backend, uuid.uuid4(), uuid.uuid4(), FREE_DIMENSION)


def _redis_at(url: str, *, search: bool) -> Iterator[Subject]:
    # Each test under a prefix of its own, deleted after it; loopback needs the private-URL switch.
    prefix = f"omr-test:{uuid.uuid4().hex}:"
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.skip(f"no Redis server at {url}: {exc}")
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        backend = build_backend("redis", {"url": url, "prefix": prefix, "retries": 0})
        try:
            yield Subject(backend, uuid.uuid4(), uuid.uuid4(), FREE_DIMENSION)
        finally:
            if search:  # the owners' KNN indexes are not keys
                for index in client.execute_command("FT._LIST"):
                    if index.decode().startswith(prefix):
                        client.execute_command("FT.DROPINDEX", index)
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
            assert not list(client.scan_iter(match=f"{prefix}*"))


def _redis(request: pytest.FixtureRequest) -> Iterator[Subject]:
    yield from _redis_at(REDIS_URL, search=False)


def _redis_search(request: pytest.FixtureRequest) -> Iterator[Subject]:
    # A Redis 8.2 with RediSearch (search_redis.py): vector search by its KNN index (HNSW, the default).
    yield from _redis_at(shared_search_server(request.config).url, search=True)


def _encrypted(
    inner: Callable[[pytest.FixtureRequest], Iterator[Subject]],
) -> Callable[..., Iterator[Subject]]:
    """The backend of ``inner`` sealed by memory encryption, switched on as an operator does: a master
    key configured and a keyring file (in the test's tmp_path), through ``encryption.wrap``."""

    def factory(request: pytest.FixtureRequest) -> Iterator[Subject]:
        keyring = request.getfixturevalue("tmp_path") / "memory-keyring.json"
        with override_settings(MEMORY_ENCRYPTION_KEY=secrets.token_bytes(32), MEMORY_KEYRING_PATH=keyring):
            subjects = inner(request)
            subject = next(subjects)
            try:
                backend = encryption.wrap(subject.backend)
                assert isinstance(backend, EncryptedBackend)
                yield dataclasses.replace(subject, backend=backend)
            finally:
                next(subjects, None)  # the inner factory's own cleanup

    return factory


FACTORIES = {
    "chromadb": _chromadb,
    "http": _http,
    "inmemory": _inmemory,
    "lancedb": _lancedb,
    "lancedb-remote": _lancedb_remote,
    "native": _native,
    "pinecone": _pinecone,
    "redis": _redis,
    "redis-search": _redis_search,
    "encrypted-inmemory": _encrypted(_inmemory),
    "encrypted-native": _encrypted(_native),
}


@pytest.fixture(params=sorted(FACTORIES))
def subject(request: pytest.FixtureRequest, db: None) -> Iterator[Subject]:
    # ``db`` for every backend: the fixture cannot ask for it later (getfixturevalue) in this suite.
    yield from FACTORIES[request.param](request)


class TestConformance(Conformance):
    pass
