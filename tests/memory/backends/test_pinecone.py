"""The Pinecone adapter at the HTTP level: the official client's requests as the API receives them
(respx, ``fake_pinecone.py``), owner isolation against a server that leaks, outages, the outbound URL
policy and Pinecone's own limits. The contract itself is the conformance suite's."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
import respx
from django.test import override_settings

from memory.backends.base import (
    BackendConfigError,
    BackendInputError,
    BackendUnavailable,
    BackendUnsupported,
    MemoryDraft,
)
from memory.backends.manager import MemoryManager
from memory.backends.pinecone import PineconeBackend
from memory.backends.registry import build_backend
from tests.memory.backends.fake_pinecone import FakePinecone

HOST = "http://localhost:5081"
KEY = "pclocal"
DIMENSION = 8
ALICE, BOB = uuid.uuid4(), uuid.uuid4()


def _unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return vector / np.linalg.norm(vector)


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as mock:
        yield mock


@pytest.fixture
def fake(router: respx.MockRouter, db: None) -> Iterator[FakePinecone]:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        server = FakePinecone(HOST, api_key=KEY, dimension=DIMENSION)
        server.install(router)
        yield server


def _backend(**config: object) -> PineconeBackend:
    backend = build_backend("pinecone", {"host": HOST, "api_key": KEY, **config})
    assert isinstance(backend, PineconeBackend)
    return backend


def _bodies(fake: FakePinecone, path: str) -> list[dict]:
    return [json.loads(r.content) for r in fake.requests if r.url.path == path]


def test_records_live_in_the_owners_namespace_with_the_owner_in_their_metadata(fake: FakePinecone) -> None:
    backend = _backend(namespace_prefix="mem-")
    record, _ = backend.store_with_embedding(
        MemoryDraft(owner=ALICE, content="likes tea", key="drink", metadata={"tags": ["a"], "n": {"x": 1}}),
        _unit(1),
    )
    (upsert,) = _bodies(fake, "/vectors/upsert")
    assert upsert["namespace"] == f"mem-{ALICE.hex}"
    (vector,) = upsert["vectors"]
    assert vector["id"] == str(record.id)
    assert vector["values"] == pytest.approx(_unit(1).tolist())
    assert vector["metadata"]["owner"] == ALICE.hex
    assert vector["metadata"]["hasVector"] is True
    assert json.loads(vector["metadata"]["metadataJson"]) == {"tags": ["a"], "n": {"x": 1}}
    assert all(r.headers["Api-Key"] == KEY for r in fake.requests)

    hits = backend.search_similar(ALICE, _unit(1), limit=3)
    assert [h.record.id for h in hits] == [record.id]
    (query,) = _bodies(fake, "/query")
    assert query["namespace"] == f"mem-{ALICE.hex}"
    assert query["topK"] == 3
    assert query["includeMetadata"] is True
    clauses = query["filter"]["$and"]
    assert {"owner": {"$eq": ALICE.hex}} in clauses
    assert {"hasVector": {"$eq": True}} in clauses


def test_a_record_without_a_vector_is_stored_but_never_ranked(fake: FakePinecone) -> None:
    backend = _backend()
    plain, _ = backend.store(MemoryDraft(owner=ALICE, content="no vector here"))
    ranked, _ = backend.store_with_embedding(MemoryDraft(owner=ALICE, content="with a vector"), _unit(2))
    placeholder = fake.namespaces[f"omr-{ALICE.hex}"][str(plain.id)]
    assert placeholder["metadata"]["hasVector"] is False
    # Even a query equal to the placeholder ranks only the real vector.
    query = np.zeros(DIMENSION)
    query[0] = 1.0
    assert [h.record.id for h in backend.search_similar(ALICE, query)] == [ranked.id]
    # A new content drops the vector (the contract), an unchanged one keeps it.
    backend.update(ALICE, ranked.id, {"importance": 0.9})
    assert [h.record.id for h in backend.search_similar(ALICE, _unit(2))] == [ranked.id]
    backend.update(ALICE, ranked.id, {"content": "rewritten"})
    assert backend.search_similar(ALICE, _unit(2)) == []
    assert backend.count(ALICE) == 2


def test_records_of_another_owner_are_dropped_even_when_the_server_returns_them(fake: FakePinecone) -> None:
    backend = _backend()
    theirs, _ = backend.store_with_embedding(
        MemoryDraft(owner=BOB, content="bob's secret", key="k"), _unit(3)
    )
    mine, _ = backend.store(MemoryDraft(owner=ALICE, content="alice's note"))
    fake.leak = True  # the server now ignores namespaces and filters
    assert backend.get(ALICE, theirs.id) is None
    assert [r.id for r in backend.list(ALICE).records] == [mine.id]
    assert backend.count(ALICE) == 1
    assert backend.search_similar(ALICE, _unit(3)) == []
    assert backend.delete(ALICE, theirs.id) is False
    assert backend.update(ALICE, theirs.id, {"content": "hijacked"}) is None
    # Alice's key "k" is hers alone: Bob's record with that key is not upserted over.
    created = backend.store(MemoryDraft(owner=ALICE, content="alice's own k", key="k"))[1]
    assert created is True
    fake.leak = False
    assert backend.get(BOB, theirs.id).content == "bob's secret"


def test_lists_page_through_fetch_by_metadata(fake: FakePinecone) -> None:
    backend = _backend()
    ids = {backend.store(MemoryDraft(owner=ALICE, content=f"memory {i}"))[0].id for i in range(8)}
    page = backend.list(ALICE, limit=100)
    assert {r.id for r in page.records} == ids and page.total == 8
    pages = _bodies(fake, "/vectors/fetch_by_metadata")[-3:]  # 8 records, 3 to a page
    assert [p.get("paginationToken") for p in pages] == [None, "3", "6"]


def test_an_outage_is_a_503_and_health_says_why(fake: FakePinecone) -> None:
    backend = _backend(dimension=DIMENSION)
    fake.outage = 503  # the client retries it three times (its own policy), then gives up
    with pytest.raises(BackendUnavailable) as caught:
        backend.store(MemoryDraft(owner=ALICE, content="lost?"))
    assert caught.value.status == 503
    health = backend.health()
    assert health.ok is False and "503" in (health.error or "")
    fake.outage = None
    assert backend.count(ALICE) == 0  # nothing was written during the outage
    assert backend.health().ok is True


def test_a_refused_connection_and_a_wrong_key_are_unavailable(
    fake: FakePinecone, router: respx.MockRouter
) -> None:
    wrong = build_backend("pinecone", {"host": HOST, "api_key": "not-the-key", "dimension": DIMENSION})
    with pytest.raises(BackendUnavailable, match="Unauthorized|401"):
        wrong.get(ALICE, uuid.uuid4())
    router.route(host="localhost", port=5082).mock(side_effect=httpx.ConnectError("connection refused"))
    gone = build_backend(
        "pinecone", {"host": "http://localhost:5082", "api_key": KEY, "dimension": DIMENSION}
    )
    with pytest.raises(BackendUnavailable):
        gone.get(ALICE, uuid.uuid4())


def test_with_a_fallback_a_write_during_an_outage_is_kept_and_replayed(fake: FakePinecone) -> None:
    backend = _backend(dimension=DIMENSION)
    fallback = build_backend("inmemory")
    manager = MemoryManager(backend, [fallback])
    fake.outage = 503
    record, _ = manager.store(MemoryDraft(owner=ALICE, content="kept during the outage"))
    assert fallback.get(ALICE, record.id) is not None
    fake.outage = None
    report = manager.replay()
    assert report.replayed == 1
    assert backend.get(ALICE, record.id).content == "kept during the outage"


def test_keyword_search_is_unsupported_and_costs_no_request(fake: FakePinecone) -> None:
    backend = _backend()
    assert backend.capabilities.keyword is False
    with pytest.raises(BackendUnsupported) as caught:
        backend.search(ALICE, "python")
    assert caught.value.status == 400
    assert fake.requests == []


def test_the_dimension_comes_from_the_index_and_a_wrong_one_sends_nothing(fake: FakePinecone) -> None:
    backend = _backend()
    assert backend.vector_dimension == DIMENSION
    assert [r.url.path for r in fake.requests] == ["/describe_index_stats"]
    with pytest.raises(BackendInputError) as caught:
        backend.store_with_embedding(MemoryDraft(owner=ALICE, content="too long"), np.ones(DIMENSION + 2))
    assert caught.value.details[0]["field"] == "embedding"
    with pytest.raises(BackendInputError) as caught:
        backend.search_similar(ALICE, np.ones(DIMENSION), limit=10_001)
    assert caught.value.details[0]["field"] == "limit"
    assert [r.url.path for r in fake.requests] == ["/describe_index_stats"]


def test_a_record_over_pinecones_metadata_limit_is_refused_before_sending(fake: FakePinecone) -> None:
    backend = _backend(dimension=DIMENSION)
    with pytest.raises(BackendInputError) as caught:
        backend.store(MemoryDraft(owner=ALICE, content="x" * 50_000))
    assert caught.value.details[0]["field"] == "content"
    assert _bodies(fake, "/vectors/upsert") == []


def test_health_reports_the_index_and_refuses_a_metric_other_than_cosine(
    router: respx.MockRouter, db: None
) -> None:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        FakePinecone(HOST, api_key=KEY, dimension=DIMENSION, metric="euclidean").install(router)
        health = _backend().health()
    assert health.ok is False
    assert "cosine" in (health.error or "")
    assert health.detail["metric"] == "euclidean"
    assert health.detail["dimension"] == DIMENSION


def test_the_outbound_url_policy_guards_the_host(router: respx.MockRouter, db: None) -> None:
    calls = router.route(host="localhost").mock(return_value=httpx.Response(200, json={}))
    # Loopback is refused without the private-URL switch: on save, and before any request.
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
        with pytest.raises(BackendConfigError) as caught:
            build_backend("pinecone", {"host": HOST, "api_key": KEY})
        assert caught.value.details[0]["field"] == "config.host"
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        backend = _backend(dimension=DIMENSION)
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
        with pytest.raises(BackendUnavailable, match="outbound URL policy"):
            backend.get(ALICE, uuid.uuid4())
        assert backend.health().ok is False
    assert calls.call_count == 0
    for host in ("http://169.254.169.254", "ftp://index.pinecone.io", "https://user:pw@index.pinecone.io"):
        with pytest.raises(BackendConfigError) as caught:
            build_backend("pinecone", {"host": host, "api_key": KEY})
        assert caught.value.details[0]["field"] == "config.host"


def test_the_configuration_is_checked(db: None) -> None:
    cases = (
        ({"api_key": KEY}, "config.host"),
        ({"host": "index.svc.pinecone.io"}, "config.api_key"),
        ({"host": "index.svc.pinecone.io", "api_key": " "}, "config.api_key"),
        ({"host": "index.svc.pinecone.io", "api_key": KEY, "dimension": 0}, "config.dimension"),
        ({"host": "index.svc.pinecone.io", "api_key": KEY, "timeout_seconds": 0}, "config.timeout_seconds"),
        ({"host": "index.svc.pinecone.io", "api_key": KEY, "environment": "x"}, "config.environment"),
    )
    for config, field in cases:
        with pytest.raises(BackendConfigError) as caught:
            build_backend("pinecone", config)
        assert caught.value.details[0]["field"] == field
    backend = build_backend("pinecone", {"host": "index.svc.pinecone.io", "api_key": KEY})
    assert isinstance(backend, PineconeBackend)
    assert backend.config.host == "https://index.svc.pinecone.io"
