"""The ChromaDB adapter against real ``chroma run`` servers: one of its own per test where a test stops
and restarts it, the run's shared one otherwise (each test in its own collections). What the
conformance suite cannot show: the configuration, outages, what the server keeps across a restart,
and that entries the server returns are checked rather than trusted."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from django.test import override_settings

from memory.backends.base import (
    BackendConfigError,
    BackendInputError,
    BackendUnavailable,
    MemoryDraft,
)
from memory.backends.chromadb import ChromaBackend
from memory.backends.inmemory import InMemoryBackend
from memory.backends.manager import FallbackEvent, MemoryManager
from memory.backends.registry import build_backend
from tests.memory.backends.chroma_server import ChromaServer, delete_collection, shared_chroma
from tests.servers import free_port

OWNER = uuid.uuid4()
OTHER = uuid.uuid4()
DATABASE = "/api/v2/tenants/default_tenant/databases/default_database"


@pytest.fixture(autouse=True)
def _loopback_allowed(db: None) -> Iterator[None]:
    """The test servers listen on loopback, which the outbound URL policy refuses unless allowed."""
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield


def _unit(count: int, dimension: int, seed: int = 3) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class Raw:
    """Plain HTTP to a collection of the server, for what the backend never does itself."""

    def __init__(self, url: str, name: str) -> None:
        self.url = url
        self.name = name
        answer = httpx.post(
            f"{url}{DATABASE}/collections", json={"name": name, "get_or_create": True}, timeout=10
        )
        answer.raise_for_status()
        self.id = answer.json()["id"]

    def post(self, operation: str, body: dict[str, object]) -> dict[str, object]:
        answer = httpx.post(f"{self.url}{DATABASE}/collections/{self.id}/{operation}", json=body, timeout=30)
        answer.raise_for_status()
        result: dict[str, object] = answer.json()
        return result


@pytest.fixture
def shared(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """The shared server's URL and a collection name of this test's own (deleted after it)."""
    url = shared_chroma(request.config).url
    collection = f"omr-test-{uuid.uuid4().hex}"
    yield url, collection
    delete_collection(url, collection)
    delete_collection(url, f"{collection}-vectors")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A server of this module's own, which its tests stop and start (each leaves it running)."""
    running = ChromaServer(tmp_path_factory.mktemp("chroma"))
    running.start()
    yield running
    running.stop()


# -- configuration


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({}, "config.url"),
        ({"url": "redis://127.0.0.1:6379"}, "config.url"),
        ({"url": "http://127.0.0.1:8000", "collection": "x"}, "config.collection"),
        ({"url": "http://127.0.0.1:8000", "collection": "-bad name-"}, "config.collection"),
        ({"url": "http://127.0.0.1:8000", "tenant": " "}, "config.tenant"),
        ({"url": "http://127.0.0.1:8000", "dimension": 0}, "config.dimension"),
        ({"url": "http://127.0.0.1:8000", "retries": -1}, "config.retries"),
        ({"url": "http://127.0.0.1:8000", "timeout_seconds": 0}, "config.timeout_seconds"),
        ({"url": "http://127.0.0.1:8000", "api_key": "x"}, "config.api_key"),
    ],
)
def test_a_bad_configuration_is_refused_naming_the_field(config: dict[str, object], field: str) -> None:
    with pytest.raises(BackendConfigError) as caught:
        build_backend("chromadb", config)
    assert caught.value.details[0]["field"] == field
    assert caught.value.status == 400


def test_building_opens_no_connection_and_names_the_type() -> None:
    backend = build_backend("chromadb", {"url": f"http://127.0.0.1:{free_port()}"}, name="vectors")
    assert isinstance(backend, ChromaBackend)
    assert (backend.type_name, backend.name, backend.capabilities.vector) == ("chromadb", "vectors", True)


# -- outages


def test_with_no_server_heartbeat_is_false_and_every_operation_is_a_503() -> None:
    backend = build_backend(
        "chromadb", {"url": f"http://127.0.0.1:{free_port()}", "retries": 0, "timeout_seconds": 1}
    )
    assert backend.heartbeat() is False  # type: ignore[attr-defined]
    health = backend.health()
    assert health.ok is False and "ConnectError" in (health.error or "")
    for call in (
        lambda: backend.store(MemoryDraft(owner=OWNER, content="lost?")),
        lambda: backend.get(OWNER, uuid.uuid4()),
        lambda: backend.count(OWNER),
        lambda: backend.search(OWNER, "python"),
        lambda: backend.search_similar(OWNER, [1.0, 0.0]),
    ):
        with pytest.raises(BackendUnavailable) as caught:
            call()
        assert caught.value.status == 503


def test_a_write_during_an_outage_is_refused_and_the_server_keeps_what_it_acknowledged(
    server: ChromaServer,
) -> None:
    backend = build_backend(
        "chromadb", {"url": server.url, "collection": "outage", "retries": 0, "timeout_seconds": 2}
    )
    vector = _unit(1, 8)[0]
    kept, _ = backend.store_with_embedding(MemoryDraft(owner=OWNER, content="before the outage"), vector)
    server.stop()
    with pytest.raises(BackendUnavailable) as caught:
        backend.store(MemoryDraft(owner=OWNER, content="during the outage"))
    assert caught.value.status == 503 and caught.value.backend == "chromadb"
    assert backend.heartbeat() is False  # type: ignore[attr-defined]
    server.start()  # the same data directory: Chroma persisted the acknowledged write
    assert backend.heartbeat() is True  # type: ignore[attr-defined]
    assert backend.get(OWNER, kept.id) == kept
    assert [r.content for r in backend.list(OWNER).records] == ["before the outage"]
    (hit,) = backend.search_similar(OWNER, vector, limit=3)
    assert hit.record.id == kept.id and hit.score == pytest.approx(1.0, abs=1e-5)


def test_with_a_fallback_no_acknowledged_write_is_lost(server: ChromaServer) -> None:
    backend = build_backend(
        "chromadb", {"url": server.url, "collection": "fallback", "retries": 0, "timeout_seconds": 2}
    )
    spare = InMemoryBackend(name="spare")
    manager = MemoryManager(backend, [spare])
    server.stop()
    events: list[FallbackEvent] = []
    acknowledged = [
        manager.store(MemoryDraft(owner=OWNER, content=f"note {i}"), events=events)[0] for i in range(3)
    ]
    assert [e.used for e in events] == ["spare"] * 3
    server.start()
    report = manager.replay()
    assert (report.replayed, report.pending) == (3, 0)
    for record in acknowledged:
        replayed = backend.get(OWNER, record.id)
        assert replayed is not None
        assert (replayed.content, replayed.created_at) == (record.content, record.created_at)
    assert spare.count(OWNER) == 0


# -- what the server returns is checked, not trusted


def test_an_entry_whose_id_and_owner_disagree_is_never_returned(shared: tuple[str, str]) -> None:
    url, collection = shared
    backend = build_backend("chromadb", {"url": url, "collection": collection})
    mine, _ = backend.store(MemoryDraft(owner=OWNER, content="python notes of mine"))
    theirs, _ = backend.store(MemoryDraft(owner=OTHER, content="python notes of theirs"))
    raw = Raw(url, collection)
    # A tampered copy of the other owner's record that claims to be mine, under its own id.
    original = raw.post("get", {"ids": [f"{OTHER.hex}-{theirs.id}"], "include": ["documents", "metadatas"]})
    metadata = dict(original["metadatas"][0])  # type: ignore[index]
    metadata["owner"] = OWNER.hex
    forged = f"{OTHER.hex}-{uuid.uuid4()}"
    raw.post(
        "add",
        {"ids": [forged], "embeddings": [[1.0]], "documents": ["python forged"], "metadatas": [metadata]},
    )
    # The server itself hands it out for my owner filter …
    served = raw.post("get", {"where": {"owner": OWNER.hex}, "include": []})
    assert forged in served["ids"]  # type: ignore[operator]
    # … and the backend drops it from every read.
    assert [r.id for r in backend.list(OWNER).records] == [mine.id]
    assert backend.count(OWNER) == 1
    assert [h.record.id for h in backend.search(OWNER, "python")] == [mine.id]
    assert backend.clear(OWNER) == 1
    assert backend.get(OTHER, theirs.id) == theirs


def test_a_vector_whose_token_is_not_its_records_is_never_ranked(shared: tuple[str, str]) -> None:
    url, collection = shared
    backend = build_backend("chromadb", {"url": url, "collection": collection})
    first, second = _unit(2, 8)
    record, _ = backend.store_with_embedding(MemoryDraft(owner=OWNER, content="old text"), first)
    assert [h.record.id for h in backend.search_similar(OWNER, first)] == [record.id]
    backend.update(OWNER, record.id, {"content": "new text"})  # a new content drops the vector
    assert backend.search_similar(OWNER, first) == []
    # A vector left behind by a half-done write: the record does not hold its token.
    Raw(url, f"{collection}-vectors").post(
        "upsert",
        {
            "ids": [f"{OWNER.hex}-{record.id}"],
            "embeddings": [second.tolist()],
            "metadatas": [{"owner": OWNER.hex, "vector": uuid.uuid4().hex}],
        },
    )
    assert backend.search_similar(OWNER, second) == []
    assert backend.get(OWNER, record.id).content == "new text"  # type: ignore[union-attr]


def test_a_dimension_the_server_refuses_is_an_input_error_and_stores_nothing(shared: tuple[str, str]) -> None:
    url, collection = shared
    build_backend("chromadb", {"url": url, "collection": collection}).store_with_embedding(
        MemoryDraft(owner=OWNER, content="sixteen"), _unit(1, 16)[0]
    )
    # Configured for 8 dimensions, though the collection already holds 16: Chroma refuses the vector.
    wrong = build_backend("chromadb", {"url": url, "collection": collection, "dimension": 8})
    with pytest.raises(BackendInputError) as caught:
        wrong.store_with_embedding(MemoryDraft(owner=OWNER, content="eight"), _unit(1, 8)[0])
    assert caught.value.details[0]["field"] == "embedding"
    with pytest.raises(BackendInputError) as caught:
        wrong.search_similar(OWNER, _unit(1, 8)[0])
    assert caught.value.details[0]["field"] == "vector"
    assert [r.content for r in wrong.list(OWNER).records] == ["sixteen"]


def test_the_first_vector_fixes_the_dimension_for_every_instance(shared: tuple[str, str]) -> None:
    url, collection = shared
    one = build_backend("chromadb", {"url": url, "collection": collection})
    assert one.vector_dimension is None
    one.store_with_embedding(MemoryDraft(owner=OWNER, content="twelve"), _unit(1, 12)[0])
    other = build_backend("chromadb", {"url": url, "collection": collection})
    assert other.vector_dimension == 12
    with pytest.raises(BackendInputError) as caught:
        other.store_with_embedding(MemoryDraft(owner=OTHER, content="five"), _unit(1, 5)[0])
    assert caught.value.details[0]["field"] == "embedding"
    assert other.health().detail["dimension"] == 12


def test_a_vectors_collection_with_another_distance_is_a_configuration_error(shared: tuple[str, str]) -> None:
    url, collection = shared
    httpx.post(
        f"{url}{DATABASE}/collections",
        json={"name": f"{collection}-vectors", "metadata": {"hnsw:space": "l2"}},
        timeout=10,
    ).raise_for_status()
    backend = build_backend("chromadb", {"url": url, "collection": collection})
    with pytest.raises(BackendConfigError) as caught:
        backend.store_with_embedding(MemoryDraft(owner=OWNER, content="x"), _unit(1, 4)[0])
    assert caught.value.details[0]["field"] == "config.collection"
    health = backend.health()
    assert health.ok is False and "cosine" in (health.error or "")


# -- the server's side of things


def test_collections_are_made_on_first_use_and_again_after_they_are_deleted(shared: tuple[str, str]) -> None:
    url, collection = shared
    backend = build_backend("chromadb", {"url": url, "collection": collection})
    names = lambda: {c["name"] for c in httpx.get(f"{url}{DATABASE}/collections", timeout=10).json()}  # noqa: E731
    assert collection not in names()
    health = backend.health()
    assert health.ok is True and {collection, f"{collection}-vectors"} <= names()
    assert health.detail["version"] and health.detail["collection"] == collection
    backend.store(MemoryDraft(owner=OWNER, content="first life"))
    delete_collection(url, collection)
    with pytest.raises(BackendUnavailable):  # the remembered collection is gone
        backend.count(OWNER)
    assert backend.count(OWNER) == 0  # made again
    backend.store(MemoryDraft(owner=OWNER, content="second life"))
    assert [r.content for r in backend.list(OWNER).records] == ["second life"]


def test_records_are_stored_as_the_document_and_flat_metadata(shared: tuple[str, str]) -> None:
    url, collection = shared
    backend = build_backend("chromadb", {"url": url, "collection": collection})
    record, _ = backend.store(
        MemoryDraft(owner=OWNER, content="likes tea", key="drink", metadata={"tags": ["x"]}, session_id="s")
    )
    got = Raw(url, collection).post(
        "get", {"ids": [f"{OWNER.hex}-{record.id}"], "include": ["documents", "metadatas", "embeddings"]}
    )
    meta = got["metadatas"][0]  # type: ignore[index]
    assert got["documents"] == ["likes tea"]
    assert got["embeddings"] == [[1.0]]  # the placeholder: the records collection is never ranked
    assert (meta["owner"], meta["key"], meta["session"], meta["type"]) == (OWNER.hex, "drink", "s", "factual")
    assert json.loads(meta["metadata"]) == {"tags": ["x"]} and meta["vector"] == ""


def test_reads_go_past_one_page_of_the_server(shared: tuple[str, str]) -> None:
    url, collection = shared
    backend = build_backend("chromadb", {"url": url, "collection": collection})
    first, _ = backend.store(MemoryDraft(owner=OWNER, content="python template"))
    raw = Raw(url, collection)
    template = raw.post("get", {"ids": [f"{OWNER.hex}-{first.id}"], "include": ["metadatas"]})
    metadata = template["metadatas"][0]  # type: ignore[index]
    ids = [uuid.uuid4() for _ in range(1204)]
    for start in range(0, len(ids), 400):
        part = ids[start : start + 400]
        raw.post(
            "add",
            {
                "ids": [f"{OWNER.hex}-{i}" for i in part],
                "embeddings": [[1.0]] * len(part),
                "documents": [f"note {n}" for n in range(len(part))],
                "metadatas": [
                    dict(metadata, created_us=metadata["created_us"] - n - 1) for n in range(len(part))
                ],
            },
        )
    assert backend.count(OWNER) == 1205
    page = backend.list(OWNER, limit=5, offset=1200)
    assert page.total == 1205 and len(page.records) == 5
    assert backend.list(OWNER, limit=1).records[0].id == first.id  # the newest
    assert [h.record.id for h in backend.search(OWNER, "python")] == [first.id]
    assert backend.clear(OWNER) == 1205
    assert backend.count(OWNER) == 0
