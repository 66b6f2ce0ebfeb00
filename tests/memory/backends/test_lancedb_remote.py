"""The LanceDB backend's remote mode (LanceDB Cloud/Enterprise REST + Arrow IPC) against a loopback
server that runs every query on a real Lance directory (``lancedb_server.py``): what the conformance
suite does not show — the requests and headers sent, a wrong key, a server that is down or failing,
a vector refused before any request, the fixed schema and full-text index of a table found on the
server, hybrid fusion with the configured weights, a server that returns another owner's rows, and
the configuration's errors."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from django.test import override_settings
from django.utils import timezone

from memory.backends.base import (
    BackendConfigError,
    BackendInputError,
    BackendUnavailable,
    BackendUnsupported,
    MemoryDraft,
    MemoryHit,
    MemoryRecord,
)
from memory.backends.lancedb import LanceDBBackend, schema
from memory.backends.lancedb_remote import LanceDBRemoteBackend, fuse
from memory.backends.registry import build_backend, parse_config
from tests.memory.backends.lancedb_server import ARROW_STREAM, LanceServer, running

pytestmark = pytest.mark.django_db

ALICE = uuid.uuid4()
BOB = uuid.uuid4()
DIMENSION = 4


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LanceServer]:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), running(LanceServer(tmp_path / "server")) as s:
        yield s


def _config(server: LanceServer, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "uri": server.url,
        "api_key": server.api_key,
        "database": "memories",
        "dimension": DIMENSION,
        "retries": 0,
        "timeout_seconds": 5.0,
    }
    config.update(overrides)
    return config


def _backend(server: LanceServer, **overrides: Any) -> LanceDBRemoteBackend:
    embed = overrides.pop("embed", None)
    backend = build_backend("lancedb", _config(server, **overrides), embed=embed)
    assert isinstance(backend, LanceDBRemoteBackend)
    return backend


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the protocol


def test_every_request_carries_the_key_and_database_headers_and_the_protocol_bodies(
    server: LanceServer,
) -> None:
    backend = _backend(server)
    record, _ = backend.store_with_embedding(
        MemoryDraft(owner=ALICE, content="Lives in Lisbon", key="home"), _unit(1, 0, 0, 0)
    )
    assert [h.record.id for h in backend.search(ALICE, "lisbon")] == [record.id]
    assert [h.record.id for h in backend.search_similar(ALICE, _unit(1, 0, 0, 0), limit=1)] == [record.id]
    assert backend.delete(ALICE, record.id) is True
    assert backend.count(ALICE) == 0

    assert server.requests
    assert all(r.headers["x-api-key"] == "sk-test" for r in server.requests)
    assert all(r.headers["x-lancedb-database"] == "memories" for r in server.requests)
    table = f"memories_{ALICE.hex}"
    operations = [r.path.removeprefix(f"/v1/table/{table}/") for r in server.requests]
    assert operations[:3] == ["describe", "create", "create_index"]
    assert {"merge_insert", "query", "delete", "count_rows"} <= set(operations)

    (create,) = server.seen("create")
    assert create.content_type == ARROW_STREAM
    assert pa.ipc.open_stream(pa.BufferReader(create.body)).read_all().schema == schema(DIMENSION)
    (index,) = server.seen("create_index")
    assert (index.body["column"], index.body["index_type"]) == ("text", "FTS")
    merge = server.seen("merge_insert")[0]
    assert merge.query == {
        "on": "id",
        "when_matched_update_all": "true",
        "when_not_matched_insert_all": "true",
    }
    assert merge.content_type == ARROW_STREAM
    rows = pa.ipc.open_stream(pa.BufferReader(merge.body)).read_all().to_pylist()
    assert [(r["owner"], r["id"], r["content"]) for r in rows] == [
        (ALICE.hex, str(record.id), "Lives in Lisbon")
    ]

    queries = [r.body for r in server.seen("query")]
    assert all(q["filter"].startswith(f"owner = '{ALICE.hex}'") for q in queries)
    (fts,) = [q for q in queries if "full_text_query" in q]
    assert fts["full_text_query"] == {"string_query": {"query": "lisbon", "columns": ["text"]}}
    (nearest,) = [q for q in queries if q["vector"]]
    assert nearest["vector"]["single_vector"] == pytest.approx([1.0, 0.0, 0.0, 0.0])
    assert (nearest["vector_column"], nearest["distance_type"], nearest["k"]) == ("vector", "cosine", 1)
    (delete,) = server.seen("delete")
    assert delete.body == {"predicate": f"owner = '{ALICE.hex}' AND id = '{record.id}'"}


def test_a_db_uri_reaches_its_host_and_names_its_database(server: LanceServer) -> None:
    server.databases = ("team-memories",)
    backend = _backend(server, uri="db://team-memories", host_override=server.url, database="")
    backend.store(MemoryDraft(owner=ALICE, content="routed by host_override"))
    assert backend.count(ALICE) == 1
    assert {r.headers["x-lancedb-database"] for r in server.requests} == {"team-memories"}
    cloud = parse_config(
        "lancedb", {"uri": "db://team-memories", "api_key": "k", "dimension": 4, "region": "eu-west-1"}
    )
    assert cloud.base_url == "https://team-memories.eu-west-1.api.lancedb.com"
    assert cloud.database_name == "team-memories"


def test_a_table_found_on_the_server_is_checked_and_gets_its_missing_text_index(
    server: LanceServer,
) -> None:
    # A table made by a creation that stopped before its index (or by another tool): the schema is
    # ours, the full-text index is missing.
    db = lancedb.connect(str(server.root / "memories"))
    db.create_table(f"memories_{ALICE.hex}", schema=schema(DIMENSION))
    backend = _backend(server)
    record, _ = backend.store(MemoryDraft(owner=ALICE, content="python notes"))
    assert [h.record.id for h in backend.search(ALICE, "python")] == [record.id]
    assert [r.body["name"] for r in server.seen("create_index")] == ["text_idx"]
    assert server.seen("create") == []

    again = _backend(server)  # another process: finds the table and its index, creates nothing
    server.requests.clear()
    assert again.get(ALICE, record.id) == record
    assert [r.path.rsplit("/", 1)[-1] for r in server.requests] == ["describe", "list", "query"]


def test_a_table_of_another_dimension_is_a_configuration_error(server: LanceServer) -> None:
    _backend(server).store(MemoryDraft(owner=ALICE, content="made for four dimensions"))
    with pytest.raises(BackendConfigError) as caught:
        _backend(server, dimension=8).count(ALICE)
    assert caught.value.details[0]["field"] == "config.dimension"


# -- failures


def test_a_wrong_key_is_a_503_and_nothing_is_kept(server: LanceServer) -> None:
    backend = _backend(server, api_key="sk-wrong")
    with pytest.raises(BackendUnavailable) as caught:
        backend.store(MemoryDraft(owner=ALICE, content="refused"))
    assert caught.value.status == 503
    assert "401" in str(caught.value)
    health = backend.health()
    assert (health.ok, "401" in (health.error or "")) == (False, True)
    assert _backend(server).count(ALICE) == 0


def test_an_unknown_database_is_unavailable(server: LanceServer) -> None:
    with pytest.raises(BackendUnavailable, match="403"):
        _backend(server, database="elsewhere").count(ALICE)


def test_a_server_that_is_down_or_failing_is_a_503(server: LanceServer) -> None:
    down = _backend(server, uri=f"http://127.0.0.1:{_free_port()}", retries=1)
    for call in (
        lambda: down.store(MemoryDraft(owner=ALICE, content="nowhere")),
        lambda: down.search(ALICE, "python"),
        lambda: down.get(ALICE, uuid.uuid4()),
    ):
        with pytest.raises(BackendUnavailable) as caught:
            call()
        assert caught.value.status == 503
        assert "ConnectError" in str(caught.value)
    assert down.health().ok is False

    backend = _backend(server)
    backend.store(MemoryDraft(owner=ALICE, content="stored before the outage"))
    server.outage = 500
    with pytest.raises(BackendUnavailable, match="HTTP 500"):
        backend.list(ALICE)
    server.outage = None
    assert backend.count(ALICE) == 1


def test_a_vector_of_the_wrong_dimension_is_refused_before_any_request(server: LanceServer) -> None:
    backend = _backend(server)
    for call, field in (
        (
            lambda: backend.store_with_embedding(
                MemoryDraft(owner=ALICE, content="x"), np.ones(DIMENSION + 1)
            ),
            "embedding",
        ),
        (lambda: backend.search_similar(ALICE, np.ones(DIMENSION - 1)), "vector"),
    ):
        with pytest.raises(BackendInputError) as caught:
            call()
        assert caught.value.details[0]["field"] == field
    assert server.requests == []


def test_the_servers_dimension_refusal_is_an_input_error(server: LanceServer) -> None:
    backend = _backend(server)
    backend.store(MemoryDraft(owner=ALICE, content="one row"))
    with pytest.raises(BackendInputError) as caught:
        backend._query(
            f"memories_{ALICE.hex}",
            ALICE,
            f"owner = '{ALICE.hex}'",
            k=1,
            columns=["owner"],
            vector=np.ones(3),
        )
    assert caught.value.details[0]["field"] == "vector"


def test_a_row_of_another_owner_from_the_server_is_refused_never_returned(server: LanceServer) -> None:
    backend = _backend(server)
    mine, _ = backend.store_with_embedding(
        MemoryDraft(owner=ALICE, content="alice python"), _unit(1, 1, 0, 0)
    )
    theirs, _ = backend.store_with_embedding(
        MemoryDraft(owner=BOB, content="bob python secret"), _unit(1, 1, 0, 0)
    )
    server.leak_table = f"memories_{BOB.hex}"  # the server answers alice's queries from bob's table
    for call in (
        lambda: backend.get(ALICE, theirs.id),
        lambda: backend.list(ALICE),
        lambda: backend.search(ALICE, "python"),
        lambda: backend.search_similar(ALICE, _unit(1, 1, 0, 0)),
        lambda: backend.delete(ALICE, theirs.id),
        lambda: backend.update(ALICE, mine.id, {"content": "changed"}),
    ):
        with pytest.raises(BackendUnavailable, match="another owner"):
            call()
    server.leak_table = None
    assert backend.get(ALICE, mine.id).content == "alice python"
    assert backend.get(BOB, theirs.id).content == "bob python secret"
    assert all(r.body["filter"].startswith("owner = ") for r in server.seen("query"))


# -- hybrid


def _expected_fusion(
    keyword: list[MemoryHit], vector: list[MemoryHit], vector_weight: float, full_text_weight: float
) -> list[tuple[uuid.UUID, float]]:
    """The fusion written out: each ranking's scores min-max normalised, missing ones 0, weighted
    (every ranking here has scores that differ)."""

    def normalised(hits: list[MemoryHit]) -> dict[uuid.UUID, float]:
        scores = [h.score for h in hits]
        low, high = min(scores), max(scores)
        return {h.record.id: (h.score - low) / (high - low) for h in hits}

    v, f = normalised(vector), normalised(keyword)
    created = {h.record.id: h.record.created_at for h in [*keyword, *vector]}
    fused = {i: vector_weight * v.get(i, 0.0) + full_text_weight * f.get(i, 0.0) for i in {*v, *f}}
    # Equal scores: the newer record first.
    return sorted(fused.items(), key=lambda item: (item[1], created[item[0]]), reverse=True)


@pytest.mark.parametrize(
    ("vector_weight", "full_text_weight", "order"),
    [
        (0.7, 0.3, ["both", "vector-only", "strong-text", "weak-text", "far"]),
        (0.2, 0.8, ["strong-text", "both", "vector-only", "weak-text", "far"]),
        (1.0, 0.0, ["vector-only", "both", "weak-text", "strong-text", "far"]),
    ],
)
def test_hybrid_fuses_the_two_server_rankings_with_the_weights(
    server: LanceServer, vector_weight: float, full_text_weight: float, order: list[str]
) -> None:
    query = _unit(1, 0, 0, 0)
    asked: list[str] = []

    def embed(text: str) -> np.ndarray:
        asked.append(text)
        return query

    backend = _backend(server, embed=embed, vector_weight=vector_weight, full_text_weight=full_text_weight)
    assert backend.capabilities.hybrid is True
    ids = {}
    for name, content, vector in (
        ("strong-text", "python python python, all day python", _unit(0.1, 1, 0, 0)),
        ("both", "some python notes", _unit(1, 0.3, 0, 0)),
        ("weak-text", "python at work next to java and go and rust and more", _unit(0.5, 1, 1, 0)),
        ("vector-only", "green tea in the morning", _unit(1, 0, 0.05, 0)),
        ("far", "a walk in the park", _unit(-0.3, 0, 0, 1)),
    ):
        ids[name] = backend.store_with_embedding(MemoryDraft(owner=ALICE, content=content), vector)[0].id
    keyword = backend.search(ALICE, "python", limit=10)
    vector = backend.search_similar(ALICE, query, limit=10)
    assert len(keyword) == 3 and len(vector) == 5

    hits = backend.search_hybrid(ALICE, "python", limit=10)
    expected = _expected_fusion(keyword, vector, vector_weight, full_text_weight)
    assert [h.record.id for h in hits] == [i for i, _ in expected] == [ids[name] for name in order]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected])
    rankings = {h.record.id: h.ranking for h in hits}
    assert (rankings[ids["both"]], rankings[ids["vector-only"]]) == ("hybrid", "vector")
    assert asked == ["python"]
    # Each ranking is asked for ``limit`` hits, as the SDK's hybrid query does: the top two fused
    # are those of the two rankings' top twos.
    top = _expected_fusion(keyword[:2], vector[:2], vector_weight, full_text_weight)[:2]
    assert [h.record.id for h in backend.search_hybrid(ALICE, "python", limit=2)] == [i for i, _ in top]
    if full_text_weight == 0:
        assert [h.record.id for h in hits] == [h.record.id for h in vector]


def _record(content: str, minutes_ago: int) -> MemoryRecord:
    at = timezone.now() - timedelta(minutes=minutes_ago)
    return MemoryRecord(
        id=uuid.uuid4(),
        owner=ALICE,
        content=content,
        type="factual",
        key=None,
        session_id="",
        metadata={},
        created_at=at,
        updated_at=at,
        expires_at=None,
        importance=0.5,
    )


def test_fusion_gives_a_ranking_whose_scores_are_all_equal_full_marks() -> None:
    # LanceDB's SDK normalises a lone full-text hit to 0, ranking it below every vector hit; here
    # each of equal scores counts as the best of its ranking.
    lone, near, far = _record("lone text hit", 1), _record("near", 2), _record("far", 3)
    keyword = [MemoryHit(lone, 4.2, "keyword")]
    vector = [MemoryHit(near, 0.9, "vector"), MemoryHit(far, 0.1, "vector")]
    hits = fuse(keyword, vector, vector_weight=0.4, full_text_weight=0.6, limit=5)
    assert [(h.record.id, h.ranking) for h in hits] == [
        (lone.id, "keyword"),
        (near.id, "vector"),
        (far.id, "vector"),
    ]
    assert [h.score for h in hits] == pytest.approx([0.6, 0.4, 0.0])
    assert fuse([], [], vector_weight=0.7, full_text_weight=0.3, limit=5) == []
    # Equal fused scores: the newer record first.
    tied = fuse(
        [MemoryHit(far, 1.0, "keyword")],
        [MemoryHit(near, 1.0, "vector")],
        vector_weight=0.5,
        full_text_weight=0.5,
        limit=5,
    )
    assert [h.record.id for h in tied] == [near.id, far.id]


def test_hybrid_needs_an_embedder_of_the_configured_dimension(server: LanceServer) -> None:
    plain = _backend(server)
    assert plain.capabilities.hybrid is False
    with pytest.raises(BackendUnsupported):
        plain.search_hybrid(ALICE, "python")
    wrong = _backend(server, embed=lambda text: np.ones(DIMENSION + 2, dtype=np.float32))
    with pytest.raises(BackendConfigError) as caught:
        wrong.search_hybrid(ALICE, "python")
    assert caught.value.details[0]["field"] == "config.dimension"
    assert _backend(server, embed=lambda text: np.ones(DIMENSION)).search_hybrid(ALICE, "the and of") == []


def test_the_registry_passes_the_embedder_to_lancedb_only(tmp_path: Path) -> None:
    local = build_backend("lancedb", {"path": str(tmp_path), "dimension": 4}, embed=lambda text: np.ones(4))
    assert isinstance(local, LanceDBBackend)
    assert local.capabilities.hybrid is False
    with pytest.raises(TypeError, match="embed"):
        build_backend("inmemory", {}, embed=lambda text: np.ones(4))


# -- configuration


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"uri": "s3://bucket/db"}, "config.uri"),
        ({"uri": "db://"}, "config.uri"),
        ({"uri": "db://bad_name!"}, "config.uri"),
        ({"uri": "https://h.example.com", "api_key": ""}, "config.api_key"),
        ({"uri": "https://h.example.com", "path": "here"}, "config.path"),
        ({"uri": "https://h.example.com", "host_override": "https://x.example.com"}, "config.host_override"),
        ({"uri": "db://mine", "host_override": "ftp://x"}, "config.host_override"),
        ({"uri": "db://mine", "region": "US East"}, "config.region"),
        ({"uri": "https://h.example.com", "vector_weight": -1}, "config.vector_weight"),
        ({"uri": "https://h.example.com", "full_text_weight": "0.3"}, "config.full_text_weight"),
        ({"uri": "https://h.example.com", "vector_weight": 0, "full_text_weight": 0}, "config.vector_weight"),
        ({"uri": "https://h.example.com", "retries": -1}, "config.retries"),
        ({"uri": "https://h.example.com", "timeout_seconds": 0}, "config.timeout_seconds"),
        ({"uri": "https://h.example.com", "api_key": "k\r\nx-evil: 1"}, "config.api_key"),
        ({"uri": "http://127.0.0.1:9"}, "config.uri"),  # loopback without the private-URL switch
        ({"uri": "http://169.254.169.254"}, "config.uri"),
        ({"uri": "db://mine", "host_override": "http://10.0.0.5"}, "config.host_override"),
        ({"api_key": "k"}, "config.api_key"),  # remote fields without a uri
        ({"database": "d"}, "config.database"),
        ({"vector_weight": 0.5}, "config.vector_weight"),
    ],
)
def test_a_bad_remote_configuration_names_the_field(config: dict[str, Any], field: str) -> None:
    full = {"dimension": 4, "api_key": "k", **config} if "uri" in config else {"dimension": 4, **config}
    with pytest.raises(BackendConfigError) as caught:
        parse_config("lancedb", full)
    assert caught.value.details[0]["field"] == field
    assert caught.value.status == 400


def test_loopback_is_allowed_with_the_private_url_switch_but_metadata_never() -> None:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        config = parse_config("lancedb", {"uri": "http://127.0.0.1:9/", "api_key": "k", "dimension": 4})
        assert (config.remote, config.base_url, config.database_name) == (True, "http://127.0.0.1:9", "")
        with pytest.raises(BackendConfigError) as caught:
            parse_config("lancedb", {"uri": "http://169.254.169.254", "api_key": "k", "dimension": 4})
        assert caught.value.details[0]["field"] == "config.uri"
