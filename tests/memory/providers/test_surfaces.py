"""The surface conformance suite (``surface_conformance.py``) for every store a key can use, each the
real thing where it can run here:

- ``native``: keys without a provider (this database's rows, FTS5 and sqlite-vec);
- ``native-provider``: the native store saved as a named provider;
- ``inmemory``: this process's memory (the gateway's threads share it);
- ``redis``: the server at ``REDIS_URL`` (default 127.0.0.1:6379), under a key prefix of the test's own,
  removed after it;
- ``chromadb``: one ``chroma run`` server for the run (``tests/memory/backends/chroma_server.py``), two
  collections per test, deleted after it;
- ``lancedb``: a Lance directory under the test's ``tmp_path``;
- ``pinecone``: the official client against the API's shapes through respx
  (``tests/memory/backends/fake_pinecone.py``), every other request passed through to the real network
  (the gateway, the upstream stub);
- ``http``: the REST memory service on a loopback socket (``tests/memory/backends/memory_service.py``).

The tests are transactional: the gateway serves from other threads, which see committed rows only,
and the native store indexes vectors after commit.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import redis
import respx
from django.test import override_settings

from gateway.models import UpstreamProvider
from memory.backends.selection import forget
from memory.conf import get_memory_settings
from memory.embeddings.runtime import get_source
from tests.dashboard.conftest import admin_user, studio  # noqa: F401 - fixtures used by the suite
from tests.gateway.conftest import (  # noqa: F401 - fixtures used by the suite
    extractions,
    gateway,
    gateway_server,
    upstream,
    upstream_server,
)
from tests.memory.backends.chroma_server import delete_collection, shared_chroma
from tests.memory.backends.fake_pinecone import FakePinecone
from tests.memory.backends.memory_service import MemoryService, running
from tests.memory.providers.surface_conformance import SurfaceConformance, Target, make_target

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CHROMA_URL = os.environ.get("CHROMA_URL", "")
PINECONE_HOST = "http://localhost:5081"


def embedding_dimension() -> int:
    """The dimension of the embedding source the service writes with (a fixed-dimension store must
    be made for it)."""
    source, resolution = get_source(get_memory_settings())
    assert source is not None, resolution.reason
    return len(source.embed(["dimension probe"])[0])


# Each store: (its type, a function that enters what it needs on the stack and returns its config;
# None: keys without a provider).
Setup = Callable[[pytest.FixtureRequest, ExitStack], dict[str, Any] | None]


def _native(request: pytest.FixtureRequest, stack: ExitStack) -> dict[str, Any] | None:
    return None


def _empty(request: pytest.FixtureRequest, stack: ExitStack) -> dict[str, Any] | None:
    return {}


def _redis(request: pytest.FixtureRequest, stack: ExitStack) -> dict[str, Any] | None:
    prefix = f"omr-surface:{uuid.uuid4().hex}:"
    client = redis.Redis.from_url(REDIS_URL)
    client.ping()  # the suite needs the server: no server is a failure, not a skip

    def cleanup() -> None:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
        assert not list(client.scan_iter(match=f"{prefix}*"))

    stack.callback(cleanup)
    return {"url": REDIS_URL, "prefix": prefix, "retries": 0}


def _chromadb(request: pytest.FixtureRequest, stack: ExitStack) -> dict[str, Any] | None:
    url = CHROMA_URL or shared_chroma(request.config).url
    collection = f"omr-surface-{uuid.uuid4().hex}"
    stack.callback(delete_collection, url, f"{collection}-vectors")
    stack.callback(delete_collection, url, collection)
    return {"url": url, "collection": collection, "retries": 0}


def _lancedb(request: pytest.FixtureRequest, stack: ExitStack) -> dict[str, Any] | None:
    path: Path = request.getfixturevalue("tmp_path") / "lancedb"
    return {"path": str(path), "dimension": embedding_dimension()}


def _pinecone(request: pytest.FixtureRequest, stack: ExitStack) -> dict[str, Any] | None:
    router = stack.enter_context(respx.mock(assert_all_called=False))
    FakePinecone(PINECONE_HOST, api_key="pclocal", dimension=embedding_dimension()).install(router)
    router.route().pass_through()  # the gateway, the upstream stub and the SDK's own requests
    return {"host": PINECONE_HOST, "api_key": "pclocal"}


def _http(request: pytest.FixtureRequest, stack: ExitStack) -> dict[str, Any] | None:
    service = stack.enter_context(running(MemoryService(base_path="/api/v1")))
    return {"base_url": service.url, "api_key": "secret", "page_size": 2}


STORES: dict[str, tuple[str, Setup]] = {
    "native": ("native", _native),
    "native-provider": ("native", _empty),
    "inmemory": ("inmemory", _empty),
    "redis": ("redis", _redis),
    "chromadb": ("chromadb", _chromadb),
    "lancedb": ("lancedb", _lancedb),
    "pinecone": ("pinecone", _pinecone),
    "http": ("http", _http),
}


@pytest.fixture(params=list(STORES))
def target(request: pytest.FixtureRequest, transactional_db: None) -> Iterator[Target]:
    type_, setup = STORES[request.param]
    forget()
    with ExitStack() as stack:
        # Loopback stores (Chroma, Pinecone Local's address, the HTTP service) need the private-URL
        # switch; the gateway's threads see it too (settings are process-wide).
        stack.enter_context(override_settings(MEMORY_ALLOW_PRIVATE_URLS=True))
        config = setup(request, stack)
        stack.callback(forget)
        yield make_target(request.param, type_, config)


@pytest.fixture
def upstream_provider(transactional_db: None, upstream: Any) -> UpstreamProvider:  # noqa: F811
    """The recording upstream as the default provider (the gateway tests' ``provider``)."""
    return UpstreamProvider.objects.create(
        name="stub",
        base_url=upstream.base_url,
        api_key="sk-upstream-secret",
        is_default=True,
        timeout_seconds=5,
    )


class TestSurfaces(SurfaceConformance):
    pass
