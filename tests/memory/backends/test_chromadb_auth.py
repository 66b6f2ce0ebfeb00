"""ChromaDB token authentication on the wire. chromadb 1.5.9's ``chroma run`` (its Rust server) has no
setting for token authentication, and the Python server that has one needs FastAPI, which we do not
install; so the header is checked here with respx, against a stand-in that refuses, as Chroma's token
auth does, a request without the right token. The real-server tests (test_chromadb.py and the
conformance suite) run without auth."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
import respx
from django.test import override_settings

from memory.backends.base import BackendConfigError, BackendUnavailable, MemoryDraft
from memory.backends.registry import build_backend

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9"  # answered by respx; loopback needs the private-URL switch
TOKEN = "ck-Zt8w!s3cr3t"
OWNER = uuid.uuid4()


class TokenChroma:
    """Enough of Chroma's REST v2 for the adapter, behind token auth: ``expected`` is the header and
    value a request must carry (else 401, as Chroma answers); every request is kept."""

    def __init__(self, header: str, value: str) -> None:
        self.header, self.value = header, value
        self.requests: list[httpx.Request] = []
        self.collections: dict[str, str] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.headers.get(self.header) != self.value:
            return httpx.Response(401, json={"error": "AuthError", "message": "Unauthorized"})
        path = request.url.path
        if path == "/api/v2/heartbeat":
            return httpx.Response(200, json={"nanosecond heartbeat": 1})
        if path == "/api/v2/version":
            return httpx.Response(200, json="1.5.9")
        if path.endswith("/collections"):
            key = json.loads(request.content)["name"]
            collection = self.collections.setdefault(key, str(uuid.uuid4()))
            return httpx.Response(
                200,
                json={"id": collection, "name": key, "metadata": {"hnsw:space": "cosine"}, "dimension": None},
            )
        if path.endswith("/get"):
            return httpx.Response(200, json={"ids": [], "documents": [], "metadatas": []})
        if path.endswith("/query"):
            return httpx.Response(200, json={"ids": [[]], "embeddings": [[]], "metadatas": [[]]})
        return httpx.Response(200, json={})


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), respx.mock(assert_all_called=False) as mock:
        yield mock


def _drive(config: dict[str, object]) -> None:
    backend = build_backend("chromadb", {"url": URL, "retries": 0, **config})
    backend.store_with_embedding(MemoryDraft(owner=OWNER, content="a note"), np.ones(4, dtype=np.float32))
    backend.count(OWNER)
    backend.search_similar(OWNER, np.ones(4, dtype=np.float32))
    health = backend.health()
    assert health.ok, health.error


def test_the_token_goes_as_a_bearer_token_on_every_request(router: respx.MockRouter) -> None:
    chroma = TokenChroma("authorization", f"Bearer {TOKEN}")
    router.route().mock(side_effect=chroma)
    _drive({"token": TOKEN})
    assert len(chroma.requests) >= 6
    assert {r.headers.get("authorization") for r in chroma.requests} == {f"Bearer {TOKEN}"}
    assert all("x-chroma-token" not in r.headers for r in chroma.requests)


def test_the_token_goes_in_x_chroma_token_when_configured(router: respx.MockRouter) -> None:
    chroma = TokenChroma("x-chroma-token", TOKEN)
    router.route().mock(side_effect=chroma)
    _drive({"token": TOKEN, "token_header": "X-Chroma-Token"})
    assert {r.headers.get("x-chroma-token") for r in chroma.requests} == {TOKEN}
    assert all("authorization" not in r.headers for r in chroma.requests)


def test_without_the_right_token_the_server_refuses_and_the_error_says_so(router: respx.MockRouter) -> None:
    chroma = TokenChroma("authorization", f"Bearer {TOKEN}")
    router.route().mock(side_effect=chroma)
    for config in ({}, {"token": "wrong-token"}):
        backend = build_backend("chromadb", {"url": URL, "retries": 0, **config})
        with pytest.raises(BackendUnavailable, match=r"401 Unauthorized \(AuthError\)"):
            backend.count(OWNER)
        health = backend.health()
        assert health.ok is False and "401" in (health.error or "")
        assert "wrong-token" not in (health.error or "")


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"token": "has a space"}, "config.token"),
        ({"token": "line\nbreak"}, "config.token"),
        ({"token": "t", "token_header": "X-Api-Key"}, "config.token_header"),
        ({"token": 5}, "config.token"),
    ],
)
def test_a_bad_token_configuration_names_the_field(config: dict[str, object], field: str) -> None:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), pytest.raises(BackendConfigError) as caught:
        build_backend("chromadb", {"url": URL, **config})
    assert caught.value.details[0]["field"] == field
