"""The generic HTTP adapter against a REST memory service on a real loopback socket
(``memory_service.py``): the base URL's path kept, routes, parameter and field mappings, the presets,
owner checks against a service that leaks, failures, and the outbound URL policy. The contract itself
is the conformance suite's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.test import override_settings

from memory.backends.base import BackendConfigError, BackendUnavailable, MemoryDraft
from memory.backends.http import HttpBackend
from memory.backends.registry import build_backend
from memory.exceptions import Conflict
from tests.memory.backends.memory_service import MemoryService, running

ALICE, BOB = uuid.uuid4(), uuid.uuid4()


@pytest.fixture
def private_urls(db: None) -> Iterator[None]:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield


@pytest.fixture
def service(private_urls: None) -> Iterator[MemoryService]:
    with running(MemoryService(base_path="/v1")) as server:
        yield server


def _backend(service: MemoryService, **config: object) -> HttpBackend:
    backend = build_backend("http", {"base_url": service.url, **config})
    assert isinstance(backend, HttpBackend)
    return backend


def test_routes_keep_the_base_urls_path_and_send_the_key(service: MemoryService) -> None:
    backend = _backend(service, api_key="s3cret", headers={"X-Team": "blue"})
    record, _ = backend.store(MemoryDraft(owner=ALICE, content="likes tea", key="drink"))
    assert backend.get(ALICE, record.id) == record
    assert backend.delete(ALICE, record.id) is True
    assert backend.health().ok is True
    paths = [(seen.method, seen.path) for seen in service.requests]
    assert ("POST", "/v1/memories") in paths
    assert ("GET", f"/v1/memories/{record.id}") in paths
    assert ("DELETE", f"/v1/memories/{record.id}") in paths
    assert ("GET", "/v1/health") in paths
    assert all(p.startswith("/v1/") for _, p in paths)
    assert all(seen.headers["Authorization"] == "Bearer s3cret" for seen in service.requests)
    assert all(seen.headers["X-Team"] == "blue" for seen in service.requests)
    assert all(seen.query["apiKeyId"] == str(ALICE) for seen in service.requests if seen.path != "/v1/health")


def test_the_notion_preset_sends_its_version_header_and_keeps_its_path(service: MemoryService) -> None:
    backend = _backend(service, preset="notion", api_key="ntn_x")
    backend.store(MemoryDraft(owner=ALICE, content="a note"))
    assert {seen.headers["Notion-Version"] for seen in service.requests} == {"2022-06-28"}
    default = build_backend("http", {"preset": "notion", "api_key": "ntn_x"})
    assert isinstance(default, HttpBackend)
    assert default.config.route("create") == "https://api.notion.com/v1/memories"


def test_the_obsidian_preset_is_loopback_and_needs_the_private_url_switch(db: None) -> None:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
        with pytest.raises(BackendConfigError) as caught:
            build_backend("http", {"preset": "obsidian", "api_key": "k"})
        assert caught.value.details[0]["field"] == "config.base_url"
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        backend = build_backend("http", {"preset": "obsidian", "api_key": "k"})
    assert isinstance(backend, HttpBackend)
    assert backend.config.route("get", ALICE) == f"http://127.0.0.1:27123/memories/{ALICE}"


def test_routes_parameters_and_fields_are_mapped(private_urls: None) -> None:
    fields = {"id": "_id", "apiKeyId": "userId", "content": "text", "score": "relevance"}
    served = MemoryService(
        base_path="/api", fields=fields, list_items="items", list_total="count", search_items="results"
    )
    with running(served) as service:
        backend = _backend(
            service,
            fields=fields,
            list_items="items",
            list_total="count",
            search_items="results",
            routes={"get": "/memories/{memoryId}", "search": "/memories/search"},
            params={"apiKeyId": "apiKeyId", "createdAfter": ""},
        )
        record, created = backend.store(
            MemoryDraft(owner=ALICE, content="python every day", metadata={"a": 1})
        )
        assert created is True
        stored = service.records[str(record.id)]
        assert stored["text"] == "python every day" and stored["userId"] == str(ALICE)
        assert "content" not in stored
        assert backend.get(ALICE, record.id) == record
        assert [r.id for r in backend.list(ALICE).records] == [record.id]
        (hit,) = backend.search(ALICE, "python")
        assert hit.record.id == record.id and hit.score > 0
        assert all("createdAfter" not in seen.query for seen in service.requests)


def test_records_of_another_owner_are_dropped_even_when_the_service_returns_them(
    service: MemoryService,
) -> None:
    backend = _backend(service, page_size=1)  # pages made only of Bob's records do not end the walk
    for i in range(3):
        backend.store(MemoryDraft(owner=BOB, content=f"bob's filler {i}"))
    theirs, _ = backend.store(MemoryDraft(owner=BOB, content="bob's python secret", key="k"))
    mine, _ = backend.store(MemoryDraft(owner=ALICE, content="alice's note"))
    service.leak = True  # the service now ignores apiKeyId
    assert backend.get(ALICE, theirs.id) is None
    assert [r.id for r in backend.list(ALICE).records] == [mine.id]
    assert backend.count(ALICE) == 1
    assert backend.search(ALICE, "python secret") == []
    assert backend.delete(ALICE, theirs.id) is False
    assert backend.update(ALICE, theirs.id, {"content": "hijacked"}) is None
    assert backend.clear(ALICE) == 1
    assert backend.store(MemoryDraft(owner=ALICE, content="alice's own k", key="k"))[1] is True
    assert service.records[str(theirs.id)]["content"] == "bob's python secret"


def test_a_create_with_an_id_another_owner_holds_is_a_conflict(service: MemoryService) -> None:
    backend = _backend(service)
    theirs, _ = backend.store(MemoryDraft(owner=BOB, content="bob's"))
    with pytest.raises(Conflict) as caught:
        backend.store(MemoryDraft(owner=ALICE, content="alice's", id=theirs.id))
    assert caught.value.details[0]["field"] == "id"
    assert backend.get(BOB, theirs.id).content == "bob's"


def test_a_failing_service_is_unavailable_and_health_says_why(service: MemoryService) -> None:
    backend = _backend(service)
    service.outage = 500
    with pytest.raises(BackendUnavailable) as caught:
        backend.store(MemoryDraft(owner=ALICE, content="lost?"))
    assert caught.value.status == 503
    assert "HTTP 500" in str(caught.value)
    health = backend.health()
    assert health.ok is False and "HTTP 500" in (health.error or "")
    service.outage = None
    assert backend.count(ALICE) == 0


def test_an_answer_that_is_no_record_is_unavailable(service: MemoryService) -> None:
    backend = _backend(service, list_items="rows")  # the service answers under "data"
    with pytest.raises(BackendUnavailable, match="no list of records"):
        backend.list(ALICE)


def test_a_stopped_service_is_unavailable(private_urls: None) -> None:
    with running(MemoryService()) as service:
        backend = _backend(service, timeout_seconds=2)
    with pytest.raises(BackendUnavailable, match="ConnectError"):
        backend.get(ALICE, uuid.uuid4())
    assert backend.health().ok is False


def test_the_outbound_url_policy_guards_every_request(service: MemoryService) -> None:
    backend = _backend(service)
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
        with pytest.raises(BackendUnavailable, match="outbound URL policy"):
            backend.get(ALICE, uuid.uuid4())
        assert backend.health().ok is False
        with pytest.raises(BackendConfigError) as caught:
            build_backend("http", {"base_url": service.url})
        assert caught.value.details[0]["field"] == "config.base_url"
    assert service.requests == []
    for url in ("http://169.254.169.254/latest", "file:///etc/passwd", "https://a.example/v1?x=1"):
        with pytest.raises(BackendConfigError) as caught:
            build_backend("http", {"base_url": url})
        assert caught.value.details[0]["field"] == "config.base_url"


def test_the_configuration_is_checked(db: None) -> None:
    base = {"base_url": "https://memories.example.com/v1"}
    cases = (
        ({}, "config.base_url"),
        ({**base, "preset": "evernote"}, "config.preset"),
        ({**base, "routes": {"purge": "/x"}}, "config.routes.purge"),
        ({**base, "params": {"owner": "o"}}, "config.params.owner"),
        ({**base, "fields": {"content": ""}}, "config.fields"),
        ({**base, "headers": {"X-N": 1}}, "config.headers"),
        ({**base, "page_size": 0}, "config.page_size"),
        ({**base, "timeout": 3}, "config.timeout"),
    )
    for config, field in cases:
        with pytest.raises(BackendConfigError) as caught:
            build_backend("http", config)
        assert caught.value.details[0]["field"] == field
    backend = build_backend("http", base)
    assert isinstance(backend, HttpBackend)
    assert backend.capabilities.as_dict() == {
        "keyword": True,
        "vector": False,
        "hybrid": False,
        "filters": True,
    }
