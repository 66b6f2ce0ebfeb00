"""/api/settings/qdrant and its utility routes (reference §7.14–7.15), Qdrant in local mode."""

import pytest

from memory import conf, qdrant_conf
from memory.models import Memory, Setting
from memory.services import vectorsync
from tests.factories import expired, make_memory
from tests.memory.qdrant.conftest import items_for

pytestmark = pytest.mark.django_db

SETTINGS = "/api/settings/qdrant"


def _fields(response):
    return [d["field"] for d in response.json()["error"]["details"]]


# -- settings


def test_get_returns_the_defaults_without_any_key(read_api):
    r = read_api.get(SETTINGS)
    assert r.status_code == 200
    assert r.json() == {
        "enabled": False,
        "host": "",
        "port": 6333,
        "collection": "omniroute_memory",
        "quantization": "none",
        "timeoutSeconds": 5,
        "hasApiKey": False,
        "apiKeyMasked": None,
        "mode": "none",
    }


def test_routes_need_authentication(anon_api):
    for path in ("", "/health"):
        assert anon_api.get(SETTINGS + path).status_code == 401
    assert anon_api.post(SETTINGS + "/search", {"query": "x"}).status_code == 401


def test_put_stores_and_answers_the_masked_settings(admin_api):
    body = {
        "host": "https://q.example.com",
        "port": 443,
        "collection": "mem",
        "quantization": "int8",
        "apiKey": "qdrant-secret-9876",
        "timeoutSeconds": 3,
    }
    r = admin_api.put(SETTINGS, body)
    assert r.status_code == 200, r.content
    data = r.json()
    assert b"qdrant-secret-9876" not in r.content
    assert (data["hasApiKey"], data["apiKeyMasked"]) == (True, "***9876")
    assert (data["host"], data["port"], data["collection"], data["quantization"]) == (
        "https://q.example.com",
        443,
        "mem",
        "int8",
    )
    assert admin_api.get(SETTINGS).json() == data
    cleared = admin_api.put(SETTINGS, {"apiKey": ""}).json()
    assert (cleared["hasApiKey"], cleared["apiKeyMasked"]) == (False, None)


def test_enabling_sets_the_vector_store_without_a_restart(admin_api):
    assert admin_api.put(SETTINGS, {"enabled": True}).status_code == 200
    assert conf.get_memory_settings().vectorStore == "qdrant"
    assert admin_api.get("/api/settings/memory").json()["vectorStore"] == "qdrant"
    admin_api.put(SETTINGS, {"port": 6334})
    assert conf.get_memory_settings().vectorStore == "qdrant"
    admin_api.put(SETTINGS, {"enabled": False})
    assert conf.get_memory_settings().vectorStore == "auto"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"port": "6333"}, "port"),
        ({"port": 65536}, "port"),
        ({"port": 0}, "port"),
        ({"collection": ""}, "collection"),
        ({"collection": "a/b"}, "collection"),
        ({"quantization": "int4"}, "quantization"),
        ({"enabled": "true"}, "enabled"),
        ({"host": "http://user:pw@q:6333"}, "host"),
        ({"host": "ftp://q"}, "host"),
        ({"host": "/etc/qdrant"}, "host"),
        ({"timeoutSeconds": 0}, "timeoutSeconds"),
        ({"url": "http://q"}, "url"),
    ],
)
def test_put_rejects_bad_bodies_naming_the_field(admin_api, body, field):
    r = admin_api.put(SETTINGS, body)
    assert r.status_code == 400 and _fields(r) == [field]


def test_embedding_model_is_refused_like_any_unknown_field(admin_api):
    """Points always use the memory embedding source: a Qdrant model setting would be read by nothing."""
    for value in ("auto", "openai/text-embedding-3-small"):
        r = admin_api.put(SETTINGS, {"port": 7000, "embeddingModel": value})
        assert r.status_code == 400
        assert r.json()["error"]["details"] == [{"field": "embeddingModel", "message": "Unknown field."}]
    assert admin_api.get(SETTINGS).json()["port"] == 6333
    assert not Setting.objects.filter(key="qdrant.embeddingModel").exists()


def test_rows_of_the_former_embedding_model_are_ignored(read_api):
    """Databases written before embeddingModel went keep its row; reads skip it."""
    Setting.objects.create(key="qdrant.embeddingModel", value="openai/text-embedding-3-small")
    Setting.objects.create(key="qdrant.collection", value="kept")
    assert qdrant_conf.get_qdrant_settings() == qdrant_conf.QdrantSettings(collection="kept")
    body = read_api.get(SETTINGS).json()
    assert body["collection"] == "kept" and "embeddingModel" not in body


def test_put_accepts_local_mode_in_the_data_directory(admin_api, settings):
    assert admin_api.put(SETTINGS, {"host": ":memory:"}).json()["mode"] == "memory"
    path = str(settings.DATA_DIR / "qdrant-local")
    assert admin_api.put(SETTINGS, {"host": path}).json()["mode"] == "path"


def test_put_needs_the_admin_scope_and_a_global_token(read_api, alice_api):
    assert read_api.put(SETTINGS, {"enabled": True}).status_code == 403
    assert alice_api.put(SETTINGS, {"enabled": True}).status_code == 403
    assert conf.get_memory_settings().vectorStore == "auto"


# -- health


def test_health_when_not_configured(read_api):
    assert read_api.get(SETTINGS + "/health").json() == {
        "ok": False,
        "latencyMs": 0,
        "error": "not_configured",
    }


def test_health_in_local_mode(read_api, qdrant_on):
    body = read_api.get(SETTINGS + "/health").json()
    assert body["ok"] is True and isinstance(body["latencyMs"], float) and "error" not in body


def test_health_of_an_unreachable_server_is_a_sanitised_200(admin_api):
    admin_api.put(
        SETTINGS,
        {"enabled": True, "host": "http://127.0.0.1:1", "apiKey": "k-123456789", "timeoutSeconds": 1},
    )
    r = admin_api.get(SETTINGS + "/health")
    assert r.status_code == 200 and r.json()["ok"] is False and r.json()["error"]
    assert b"k-123456789" not in r.content and b"Traceback" not in r.content


# -- search


@pytest.fixture
def indexed(qdrant_on, source, alice, bob):
    memories = {
        "alice": make_memory(alice, "kiwi smoothie recipe", key="food:kiwi"),
        "alice2": make_memory(alice, "deploys happen on Friday"),
        "bob": make_memory(bob, "kiwi smoothie recipe"),
        "expired": make_memory(alice, "kiwi expired", expires_at=expired()),
    }
    assert vectorsync.mirror_upsert(items_for(*memories.values()), signature=source.signature) == 4
    return memories


def _ids(response):
    return [r["id"] for r in response.json()["results"]]


def test_search_finds_the_nearest_memory_with_its_payload(admin_api, indexed, alice):
    r = admin_api.post(SETTINGS + "/search", {"query": "kiwi smoothie recipe", "apiKeyId": str(alice.pk)})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["ok"] is True and body["collection"].startswith("omniroute_memory_hash")
    top = body["results"][0]
    assert top["id"] == str(indexed["alice"].uuid) and top["score"] == pytest.approx(1.0, abs=1e-5)
    assert top["payload"]["apiKeyId"] == str(alice.pk) and top["payload"]["key"] == "food:kiwi"
    assert top["payload"]["content"] == "kiwi smoothie recipe"
    assert str(indexed["expired"].uuid) not in _ids(r)
    assert set(_ids(r)) == {str(indexed["alice"].uuid), str(indexed["alice2"].uuid)}


def test_a_global_token_may_search_every_owner(admin_api, indexed):
    ids = _ids(admin_api.post(SETTINGS + "/search", {"query": "kiwi smoothie recipe"}))
    assert set(ids) == {str(indexed[k].uuid) for k in ("alice", "alice2", "bob")}


def test_a_bound_token_never_sees_other_owners(alice_api, indexed, bob):
    r = alice_api.post(SETTINGS + "/search", {"query": "kiwi smoothie recipe", "topK": 50})
    assert r.status_code == 200 and str(indexed["bob"].uuid) not in _ids(r)
    assert set(_ids(r)) == {str(indexed["alice"].uuid), str(indexed["alice2"].uuid)}
    assert alice_api.post(SETTINGS + "/search", {"query": "x", "apiKeyId": str(bob.pk)}).status_code == 403


def test_search_defaults_to_five_results(admin_api, qdrant_on, source, alice):
    memories = [make_memory(alice, f"note {i}") for i in range(7)]
    vectorsync.mirror_upsert(items_for(*memories), signature=source.signature)
    assert len(_ids(admin_api.post(SETTINGS + "/search", {"query": "note"}))) == 5


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x", "topK": 51}, "topK"),
        ({"query": "x", "topK": 0}, "topK"),
        ({"query": "x", "extra": 1}, "extra"),
        ({}, "query"),
    ],
)
def test_search_validates_its_body(admin_api, body, field):
    r = admin_api.post(SETTINGS + "/search", body)
    assert r.status_code == 400 and _fields(r) == [field]


def test_search_when_disabled_answers_ok_false(admin_api):
    assert admin_api.post(SETTINGS + "/search", {"query": "x"}).json() == {
        "ok": False,
        "results": [],
        "error": "not_configured",
    }


# -- cleanup


def test_cleanup_reports_what_it_deleted_and_leaves_sqlite_alone(admin_api, indexed):
    Memory.objects.filter(seq=indexed["alice2"].seq).delete()
    before = list(Memory.objects.order_by("seq").values_list("seq", "content", "expires_at"))
    r = admin_api.post(SETTINGS + "/cleanup")
    assert r.status_code == 200
    assert r.json() == {"ok": True, "deletedCount": 2, "retentionDays": 30}
    assert list(Memory.objects.order_by("seq").values_list("seq", "content", "expires_at")) == before
    assert admin_api.post(SETTINGS + "/cleanup", {"retentionDays": 7}).json()["retentionDays"] == 7


def test_cleanup_when_disabled_and_for_non_admins(admin_api, alice_api):
    assert admin_api.post(SETTINGS + "/cleanup", {}).json() == {
        "ok": False,
        "deletedCount": 0,
        "retentionDays": 30,
        "error": "not_configured",
    }
    assert alice_api.post(SETTINGS + "/cleanup", {}).status_code == 403
    assert admin_api.post(SETTINGS + "/cleanup", {"retentionDays": 0}).status_code == 400


# -- engine status


def test_the_engine_status_reports_qdrant_health(read_api, qdrant_on):
    qdrant_status = read_api.get("/api/memory/engine-status").json()["qdrant"]
    assert qdrant_status["enabled"] is True and qdrant_status["healthy"] is True
