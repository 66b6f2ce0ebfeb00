"""The REST memory routes for an API key on a memory provider (in-memory, Redis): every route reads and
writes the provider, never the native rows; a native key and a provider key never see each other's
memories; a provider that cannot be reached is a 503 with Retry-After."""

from __future__ import annotations

import uuid

import pytest
import redis

from memory.backends.selection import forget, manager_for
from memory.models import ApiKey, ManagementToken, Memory
from memory.services import providers as svc
from memory.services.audit import SYSTEM
from tests.conftest import Api

pytestmark = pytest.mark.django_db

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["inmemory", "redis"])
def provider_key(request, db):
    """A key whose memories live on a provider of the parametrised type (Redis: a prefix of its own,
    deleted afterwards)."""
    forget()
    prefix = f"omr-test-{uuid.uuid4().hex[:10]}:"
    config = {"url": REDIS_URL, "prefix": prefix} if request.param == "redis" else {}
    svc.provider_save(name="store", type=request.param, config=config, actor=SYSTEM)
    key, _ = svc.key_create(name="crew", provider="store", actor=SYSTEM)
    yield key
    forget()
    if request.param == "redis":
        client = redis.Redis.from_url(REDIS_URL)
        for name in client.scan_iter(f"{prefix}*"):
            client.delete(name)


@pytest.fixture
def native_key(db) -> ApiKey:
    return ApiKey.issue(name="native")[0]


def api_for(*keys: ApiKey, scope: str = "write") -> Api:
    return Api(ManagementToken.issue(name="t", scope=scope, owners=list(keys))[1])


def test_every_route_works_on_the_provider(provider_key, native_key):
    api = api_for(provider_key)
    created = api.post("/api/memory", {"content": "I live in Lisbon", "key": "city", "type": "factual"})
    assert created.status_code == 201, created.json()
    memory_id = created.json()["id"]
    assert created.json()["memory"]["apiKeyId"] == str(provider_key.pk)
    upsert = api.post("/api/memory", {"content": "I live in Faro", "key": "city"})
    assert (
        upsert.status_code == 200 and upsert.json()["id"] == memory_id and upsert.json()["created"] is False
    )

    bulk = api.post(
        "/api/memory/bulk",
        {"memories": [{"content": "I prefer green tea", "type": "semantic"}, {"content": "My dog is Rex"}]},
    )
    assert bulk.status_code == 200 and bulk.json()["created"] == 2 and len(bulk.json()["ids"]) == 2

    listed = api.get("/api/memory").json()
    assert listed["total"] == 3
    assert {m["content"] for m in listed["data"]} == {"I live in Faro", "I prefer green tea", "My dog is Rex"}
    assert listed["stats"]["byType"] == {"factual": 2, "semantic": 1}
    assert api.get("/api/memory", {"type": "semantic"}).json()["total"] == 1
    assert [m["content"] for m in api.get("/api/memory", {"q": "dog"}).json()["data"]] == ["My dog is Rex"]
    assert len(api.get("/api/memory", {"limit": 2}).json()["data"]) == 2

    got = api.get(f"/api/memory/{memory_id}")
    assert got.status_code == 200 and got.json()["memory"]["content"] == "I live in Faro"
    put = api.put(f"/api/memory/{memory_id}", {"content": "I live in Braga", "importance": 0.9})
    assert put.status_code == 200, put.json()
    assert put.json()["memory"]["content"] == "I live in Braga" and put.json()["memory"]["importance"] == 0.9
    assert api.get(f"/api/memory/{memory_id}").json()["memory"]["content"] == "I live in Braga"

    preview = api.post(
        "/api/memory/retrieve-preview", {"query": "where do I live? Braga", "strategy": "keyword"}
    )
    assert preview.status_code == 200, preview.json()
    assert [m["content"] for m in preview.json()["memories"]][0] == "I live in Braga"
    resolution = preview.json()["resolution"]
    assert resolution["provider"] == "store" and "keyword" in resolution["rankings"]

    assert api.delete(f"/api/memory/{memory_id}").json() == {"success": True}
    assert api.get(f"/api/memory/{memory_id}").status_code == 404

    dry = api.post("/api/memory/clear", {"apiKeyId": "", "type": "semantic", "dryRun": True}).json()
    assert dry["matched"] == 1 and dry["deletedCount"] == 0 and dry["dryRun"] is True
    assert api.post("/api/memory/clear", {}).status_code == 400  # the target must be named
    cleared = api.post("/api/memory/clear", {"apiKeyId": str(provider_key.pk)}).json()
    assert cleared["matched"] == 2 and cleared["deletedCount"] == 2
    assert api.get("/api/memory").json()["total"] == 0

    manager = manager_for(provider_key)
    assert manager is not None and manager.count(provider_key.pk) == 0
    assert not Memory.objects.exists()  # nothing ever went to the native rows


def test_a_provider_key_and_a_native_key_never_see_each_other(provider_key, native_key):
    on_provider, on_native = api_for(provider_key), api_for(native_key)
    p_id = on_provider.post("/api/memory", {"content": "Provider secret: the vault code is 1234"}).json()[
        "id"
    ]
    n_id = on_native.post("/api/memory", {"content": "Native secret: the vault code is 9876"}).json()["id"]
    assert Memory.objects.filter(owner=native_key).count() == 1
    assert not Memory.objects.filter(owner=provider_key).exists()

    for api, own, other in ((on_provider, p_id, n_id), (on_native, n_id, p_id)):
        assert [m["id"] for m in api.get("/api/memory").json()["data"]] == [own]
        assert api.get(f"/api/memory/{other}").status_code == 404
        assert api.put(f"/api/memory/{other}", {"content": "taken over"}).status_code == 404
        assert api.delete(f"/api/memory/{other}").status_code == 404
        hits = api.post("/api/memory/retrieve-preview", {"query": "vault code", "strategy": "keyword"}).json()
        assert [m["id"] for m in hits["memories"]] == [own]
        assert api.post("/api/memory/clear", {"apiKeyId": "", "dryRun": True}).json()["ids"] == [own]
    # each key's other routes are refused for the other token
    assert (
        on_native.post("/api/memory", {"content": "x", "apiKeyId": str(provider_key.pk)}).status_code == 404
    )
    assert on_native.post("/api/memory/clear", {"apiKeyId": str(provider_key.pk)}).status_code == 404
    assert on_native.get("/api/memory", {"apiKeyId": str(provider_key.pk)}).status_code == 403

    # a global admin sees both, each from its own store
    admin = Api(ManagementToken.issue(name="g", scope="admin")[1])
    assert {m["id"] for m in admin.get("/api/memory").json()["data"]} == {p_id, n_id}
    assert admin.get(f"/api/memory/{p_id}").json()["memory"]["apiKeyId"] == str(provider_key.pk)
    assert on_provider.get(f"/api/memory/{p_id}").json()["memory"]["content"].startswith("Provider secret")


def test_engine_status_shows_the_providers_health(provider_key, native_key):
    status = Api(ManagementToken.issue(name="g", scope="admin")[1]).get("/api/memory/engine-status").json()
    assert status["providers"]["providers"][0]["name"] == "store"
    assert status["providers"]["providers"][0]["health"]["ok"] is True
    bound = api_for(native_key, scope="read").get("/api/memory/engine-status").json()
    assert bound["providers"]["providers"] == []


def test_a_provider_down_is_a_503_with_retry_after(db):
    forget()
    svc.provider_save(
        name="dead", type="redis", config={"url": "redis://127.0.0.1:1/0", "retries": 0}, actor=SYSTEM
    )
    key, _ = svc.key_create(name="k", provider="dead", actor=SYSTEM)
    api = api_for(key)
    for response in (
        api.post("/api/memory", {"content": "I live in Oslo"}),
        api.post("/api/memory/bulk", {"memories": [{"content": "I live in Oslo"}]}),
        api.get("/api/memory"),
        api.post("/api/memory/clear", {"apiKeyId": str(key.pk)}),
        api.post("/api/memory/retrieve-preview", {"query": "Oslo", "strategy": "keyword"}),
    ):
        assert response.status_code == 503, response.content
        assert response["Retry-After"] == "2"
        assert response.json()["error"]["type"] == "service_unavailable_error"
    assert not Memory.objects.exists()
    status = Api(ManagementToken.issue(name="g", scope="admin")[1]).get("/api/memory/engine-status").json()
    dead = status["providers"]["providers"][0]
    assert dead["name"] == "dead" and dead["health"]["ok"] is False
    forget()


def test_a_fallback_takes_the_write_and_engine_status_shows_the_event(db):
    forget()
    svc.provider_save(
        name="dead", type="redis", config={"url": "redis://127.0.0.1:1/0", "retries": 0}, actor=SYSTEM
    )
    svc.provider_save(name="spare", type="inmemory", config={}, actor=SYSTEM)
    key, _ = svc.key_create(name="k", provider="dead", fallbacks=["spare"], actor=SYSTEM)
    api = api_for(key)
    created = api.post("/api/memory", {"content": "I live in Oslo"})
    assert created.status_code == 201, created.json()
    assert api.get(f"/api/memory/{created.json()['id']}").json()["memory"]["content"] == "I live in Oslo"
    events = Api(ManagementToken.issue(name="g", scope="admin")[1]).get("/api/memory/engine-status").json()
    fallbacks = events["providers"]["fallbackEvents"]
    assert any(
        e["operation"].startswith("store") and e["failed"] == "dead" and e["used"] == "spare"
        for e in fallbacks
    )
    assert all(e["apiKeyId"] == str(key.pk) for e in fallbacks)
    forget()
