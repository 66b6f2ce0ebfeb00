"""``/api/memory/providers``: create, read (masked), change, probe and delete memory providers."""

from __future__ import annotations

import pytest
from django.test import override_settings

from memory.backends.selection import forget
from memory.conf import update_memory_settings
from memory.models import AuditEvent, ManagementToken, MemoryProvider
from memory.services import providers as svc
from memory.services.audit import SYSTEM
from tests.conftest import Api

pytestmark = pytest.mark.django_db

URL = "/api/memory/providers"
REDIS = {"url": "redis://:hunter2@127.0.0.1:6379/0", "prefix": "omr-test-api:"}


@pytest.fixture(autouse=True)
def _fresh_managers():
    forget()
    yield
    forget()


def error_fields(response) -> list[str]:
    return [d["field"] for d in response.json()["error"]["details"]]


def test_an_admin_creates_lists_and_reads_a_provider_with_secrets_masked(admin_api):
    created = admin_api.post(URL, {"name": "cache", "type": "redis", "config": REDIS})
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "cache" and body["type"] == "redis"
    assert body["config"] == {"url": f"redis://:{svc.MASK}@127.0.0.1:6379/0", "prefix": "omr-test-api:"}
    assert body["capabilities"]["keyword"] is True and body["health"] is None and body["usedBy"] == []
    assert "hunter2" not in created.content.decode()
    listed = admin_api.get(URL)
    assert [p["name"] for p in listed.json()["data"]] == ["cache"]
    assert "hunter2" not in listed.content.decode()
    one = admin_api.get(f"{URL}/cache", {"health": "true"})
    assert one.status_code == 200
    assert one.json()["health"]["ok"] is True and one.json()["health"]["latencyMs"] >= 0
    stored = MemoryProvider.objects.get(name="cache")
    assert stored.config["url"] == REDIS["url"]
    assert AuditEvent.objects.filter(action="provider.save").count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "Bad Name", "type": "inmemory"}, "name"),
        ({"name": "p", "type": "nosuch"}, "type"),
        ({"name": "p", "type": "redis", "config": {}}, "config.url"),
        ({"name": "p", "type": "redis", "config": {"url": "redis://h", "nope": 1}}, "config.nope"),
        ({"name": "p", "type": "redis", "config": {"url": 5}}, "config.url"),
        ({"name": "p", "type": "inmemory", "config": []}, "config"),
        ({"name": "p", "type": "inmemory", "extra": 1}, "extra"),
        ({"type": "inmemory"}, "name"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(admin_api, body, field):
    response = admin_api.post(URL, body)
    assert response.status_code == 400, response.json()
    assert field in error_fields(response)
    assert not MemoryProvider.objects.exists()


def test_a_taken_name_is_a_409(admin_api):
    assert admin_api.post(URL, {"name": "ram", "type": "inmemory"}).status_code == 201
    again = admin_api.post(URL, {"name": "ram", "type": "inmemory"})
    assert again.status_code == 409 and error_fields(again) == ["name"]


def test_put_changes_the_config_and_keeps_a_masked_secret(admin_api):
    admin_api.post(URL, {"name": "cache", "type": "redis", "config": REDIS})
    shown = admin_api.get(f"{URL}/cache").json()
    changed = admin_api.put(
        f"{URL}/cache",
        {"name": "cache-2", "type": "redis", "config": {**shown["config"], "prefix": "omr-x:"}},
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["name"] == "cache-2"
    provider = MemoryProvider.objects.get()
    assert provider.config == {"url": REDIS["url"], "prefix": "omr-x:"}
    assert admin_api.get(f"{URL}/cache").status_code == 404
    bad = admin_api.put(f"{URL}/cache-2", {"type": "redis", "config": {"url": "ftp://x"}})
    assert bad.status_code == 400 and error_fields(bad) == ["config.url"]


def test_a_provider_in_use_is_not_deleted(admin_api, alice):
    admin_api.post(URL, {"name": "ram", "type": "inmemory"})
    svc.key_set_provider(alice, provider="ram", fallbacks=[], actor=SYSTEM)
    refused = admin_api.delete(f"{URL}/ram")
    assert refused.status_code == 409 and "alice" in refused.json()["error"]["message"]
    assert admin_api.get(f"{URL}/ram").json()["usedBy"] == [
        {"id": str(alice.pk), "name": "alice", "role": "primary"}
    ]
    svc.key_set_provider(alice, provider=None, fallbacks=[], actor=SYSTEM)
    assert admin_api.delete(f"{URL}/ram").json() == {"success": True}
    assert not MemoryProvider.objects.exists()
    assert admin_api.delete(f"{URL}/ram").status_code == 404


def test_the_connection_test_reports_a_dead_store(admin_api):
    admin_api.post(
        URL, {"name": "dead", "type": "redis", "config": {"url": "redis://127.0.0.1:1/0", "retries": 0}}
    )
    probe = admin_api.post(f"{URL}/dead/test")
    assert probe.status_code == 200
    assert probe.json()["name"] == "dead"
    assert probe.json()["health"]["ok"] is False and probe.json()["health"]["error"]
    admin_api.post(URL, {"name": "ram", "type": "inmemory"})
    assert admin_api.post(f"{URL}/ram/test").json()["health"]["ok"] is True


def test_a_bound_token_sees_only_its_keys_providers_and_cannot_write(alice, bob):
    svc.provider_save(name="mine", type="inmemory", config={}, actor=SYSTEM)
    svc.provider_save(name="theirs", type="inmemory", config={}, actor=SYSTEM)
    svc.key_set_provider(alice, provider="mine", fallbacks=[], actor=SYSTEM)
    svc.key_set_provider(bob, provider="theirs", fallbacks=[], actor=SYSTEM)
    api = Api(ManagementToken.issue(name="a", scope="admin", owners=[alice])[1])
    listed = api.get(URL).json()["data"]
    assert [p["name"] for p in listed] == ["mine"]
    assert listed[0]["usedBy"] == [{"id": str(alice.pk), "name": "alice", "role": "primary"}]
    assert api.get(f"{URL}/theirs").status_code == 404
    assert api.post(f"{URL}/theirs/test").status_code == 404
    assert api.post(URL, {"name": "new", "type": "inmemory"}).status_code == 403
    assert api.put(f"{URL}/mine", {"type": "inmemory", "config": {}}).status_code == 403
    assert api.delete(f"{URL}/mine").status_code == 403
    assert MemoryProvider.objects.count() == 2


def test_a_read_token_cannot_write_and_anonymous_is_refused(read_api, anon_api):
    assert read_api.post(URL, {"name": "x", "type": "inmemory"}).status_code == 403
    assert anon_api.get(URL).status_code == 401


# -- the outbound URL policy and ChromaDB's token (the switch is on in this folder: conftest.py)


@pytest.mark.parametrize(
    ("type_name", "config"),
    [
        ("redis", {"url": "redis://169.254.169.254:6379/0"}),
        ("redis", {"url": "redis://[::ffff:169.254.169.254]/0"}),
        ("redis", {"url": "redis://cache.example.com/0?host=169.254.169.254"}),
        ("chromadb", {"url": "http://169.254.169.254"}),
        ("chromadb", {"url": "http://metadata.google.internal:8000"}),
    ],
)
def test_a_metadata_address_is_a_400_naming_the_url_even_with_the_switch(admin_api, type_name, config):
    response = admin_api.post(URL, {"name": "p", "type": type_name, "config": config})
    assert response.status_code == 400, response.json()
    assert error_fields(response) == ["config.url"]
    assert not MemoryProvider.objects.exists()


@pytest.mark.parametrize(
    ("type_name", "url"),
    [
        ("redis", "redis://:pw@127.0.0.1:6379/0"),
        ("redis", "unix:///run/redis.sock"),
        ("chromadb", "http://10.0.0.7:8000"),
    ],
)
def test_loopback_and_private_urls_are_refused_without_the_switch(admin_api, type_name, url):
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
        refused = admin_api.post(URL, {"name": "p", "type": type_name, "config": {"url": url}})
        assert refused.status_code == 400 and error_fields(refused) == ["config.url"]
        assert "pw" not in refused.content.decode()
        # The stored settings' switch is the same switch.
        update_memory_settings({"allowPrivateUrls": True})
        accepted = admin_api.post(URL, {"name": "p", "type": type_name, "config": {"url": url}})
        assert accepted.status_code == 201, accepted.json()


def test_a_saved_provider_is_checked_again_before_connecting(admin_api):
    saved = admin_api.post(URL, {"name": "cache", "type": "redis", "config": REDIS})
    assert saved.status_code == 201
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=False):
        probe = admin_api.post(f"{URL}/cache/test")
        assert probe.status_code == 200
        health = probe.json()["health"]
        assert health["ok"] is False and "outbound URL policy" in health["error"]
        assert "hunter2" not in probe.content.decode()
    assert admin_api.post(f"{URL}/cache/test").json()["health"]["ok"] is True


def test_a_chroma_token_is_masked_on_read_and_kept_when_sent_back(admin_api):
    config = {"url": "http://127.0.0.1:8000", "token": "ck-s3cr3t", "token_header": "X-Chroma-Token"}
    created = admin_api.post(URL, {"name": "vectors", "type": "chromadb", "config": config})
    assert created.status_code == 201, created.json()
    assert created.json()["config"] == {**config, "token": svc.MASK}
    assert "ck-s3cr3t" not in created.content.decode() + admin_api.get(URL).content.decode()
    shown = admin_api.get(f"{URL}/vectors").json()["config"]
    changed = admin_api.put(
        f"{URL}/vectors", {"type": "chromadb", "config": {**shown, "collection": "other"}}
    )
    assert changed.status_code == 200, changed.json()
    stored = MemoryProvider.objects.get(name="vectors").config
    assert (stored["token"], stored["collection"]) == ("ck-s3cr3t", "other")
    bad = admin_api.put(f"{URL}/vectors", {"type": "chromadb", "config": {**shown, "token_header": "X-Key"}})
    assert bad.status_code == 400 and error_fields(bad) == ["config.token_header"]
