"""memory/services/providers.py: the rules for saving providers and choosing a key's provider."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import reverse

from memory import store
from memory.backends.base import BackendConfigError
from memory.backends.selection import forget, manager_for
from memory.exceptions import Conflict, ValidationFailed
from memory.models import ApiKey, AuditEvent, MemoryProvider, ProviderFallback
from memory.provider_checks import provider_problems
from memory.services import providers as svc
from memory.services.audit import SYSTEM
from memory.services.memories import MemoryInput

pytestmark = pytest.mark.django_db

REDIS_URL = "redis://:s3cret-pass@127.0.0.1:6379/0"


@pytest.fixture(autouse=True)
def _fresh_managers():
    forget()
    yield
    forget()


def ram(name: str = "ram") -> MemoryProvider:
    return svc.provider_save(name=name, type="inmemory", config={}, actor=SYSTEM)


def test_it_saves_a_valid_provider_and_audits_it():
    provider = svc.provider_save(
        name="cache-1", type="redis", config={"url": REDIS_URL, "prefix": "t:"}, actor=SYSTEM
    )
    provider.refresh_from_db()
    assert provider.config == {"url": REDIS_URL, "prefix": "t:"}
    event = AuditEvent.objects.get(action="provider.save")
    assert event.details["name"] == "cache-1" and event.details["created"] is True
    assert event.details["configFieldsChanged"] == ["prefix", "url"]
    assert "s3cret" not in str(event.details)


@pytest.mark.parametrize("name", ["", "Upper", "-lead", "with space", "x" * 65, "é"])
def test_it_refuses_a_bad_name(name):
    with pytest.raises(ValidationFailed) as caught:
        svc.provider_save(name=name, type="inmemory", config={}, actor=SYSTEM)
    assert caught.value.details[0]["field"] == "name"


def test_a_name_is_unique():
    ram("one")
    with pytest.raises(Conflict) as caught:
        ram("one")
    assert caught.value.details[0]["field"] == "name"


@pytest.mark.parametrize(
    ("type_name", "config", "field"),
    [
        ("nosuch", {}, "type"),
        ("redis", {}, "config.url"),
        ("redis", {"url": REDIS_URL, "colour": "blue"}, "config.colour"),
        ("redis", {"url": REDIS_URL, "retries": "three"}, "config.retries"),
        ("lancedb", {"dimension": 0}, "config.dimension"),
    ],
)
def test_a_config_that_does_not_parse_is_refused_naming_the_field(type_name, config, field):
    with pytest.raises(BackendConfigError) as caught:
        svc.provider_save(name="p", type=type_name, config=config, actor=SYSTEM)
    assert caught.value.details[0]["field"] == field
    assert not MemoryProvider.objects.exists()


def test_reads_mask_every_secret():
    config = {
        "base_url": "https://notes.example/api",
        "api_key": "sk-live-1",
        "headers": {"X-Auth": "h-secret", "Accept": "application/json"},
    }
    provider = svc.provider_save(name="notes", type="http", config=config, actor=SYSTEM)
    shown = svc.provider_json(provider)
    text = str(shown)
    for secret in ("sk-live-1", "h-secret"):
        assert secret not in text
    assert shown["config"]["api_key"] == svc.MASK
    assert shown["config"]["headers"] == {"X-Auth": svc.MASK, "Accept": svc.MASK}
    assert shown["config"]["base_url"] == "https://notes.example/api"
    assert shown["capabilities"] == {"keyword": True, "vector": False, "hybrid": False, "filters": True}
    redis = svc.provider_save(name="cache", type="redis", config={"url": REDIS_URL}, actor=SYSTEM)
    assert svc.provider_json(redis)["config"]["url"] == f"redis://:{svc.MASK}@127.0.0.1:6379/0"
    in_query = svc.provider_save(
        name="cache-q",
        type="redis",
        config={"url": "redis://127.0.0.1:6379/0?password=q-pw&db=0"},
        actor=SYSTEM,
    )
    assert (
        svc.provider_json(in_query)["config"]["url"] == f"redis://127.0.0.1:6379/0?password={svc.MASK}&db=0"
    )


def test_a_masked_secret_sent_back_keeps_the_stored_one_and_bumps_updated_at():
    config = {"base_url": "https://notes.example/api", "api_key": "sk-1", "headers": {"X-A": "h"}}
    provider = svc.provider_save(name="notes", type="http", config=config, actor=SYSTEM)
    stamp = provider.updated_at
    shown = svc.provider_json(provider)["config"]
    shown["page_size"] = 10
    saved = svc.provider_save(name="notes", type="http", config=shown, actor=SYSTEM, existing=provider)
    saved.refresh_from_db()
    assert saved.config == {**config, "page_size": 10}
    assert saved.updated_at > stamp
    for url in (REDIS_URL, "redis://127.0.0.1:6379/0?password=q-pw&db=0"):
        redis = svc.provider_save(name="cache", type="redis", config={"url": url}, actor=SYSTEM)
        masked = svc.provider_json(redis)["config"]
        assert "pass" not in masked["url"].replace("password=", "")
        svc.provider_save(name="cache", type="redis", config=masked, actor=SYSTEM, existing=redis)
        redis.refresh_from_db()
        assert redis.config == {"url": url}
        redis.delete()


def test_a_mask_without_a_stored_secret_is_refused():
    with pytest.raises(ValidationFailed) as caught:
        svc.provider_save(
            name="pc",
            type="pinecone",
            config={"host": "https://x.pinecone.io", "api_key": svc.MASK},
            actor=SYSTEM,
        )
    assert caught.value.details[0]["field"] == "config.api_key"
    with pytest.raises(ValidationFailed) as caught:
        svc.provider_save(
            name="r", type="redis", config={"url": f"redis://:{svc.MASK}@h:6379/0"}, actor=SYSTEM
        )
    assert caught.value.details[0]["field"] == "config.url"


def test_a_provider_in_use_cannot_be_deleted_nor_change_type():
    provider = ram()
    key, _ = svc.key_create(name="k", provider="ram", actor=SYSTEM)
    with pytest.raises(Conflict) as caught:
        svc.provider_delete(provider, actor=SYSTEM)
    assert caught.value.details[0]["field"] == "name" and "k" in caught.value.message
    with pytest.raises(Conflict) as caught:
        svc.provider_save(name="ram", type="native", config={}, actor=SYSTEM, existing=provider)
    assert caught.value.details[0]["field"] == "type"
    svc.key_set_provider(key, provider=None, fallbacks=[], actor=SYSTEM)
    svc.provider_delete(provider, actor=SYSTEM)
    assert not MemoryProvider.objects.exists()
    assert AuditEvent.objects.filter(action="provider.delete").count() == 1


def test_a_key_is_created_on_its_provider_with_ordered_fallbacks():
    ram("primary")
    ram("fb-a")
    ram("fb-b")
    key, secret = svc.key_create(name="crew", provider="primary", fallbacks=["fb-b", "fb-a"], actor=SYSTEM)
    assert secret.startswith("sk-omr-") and ApiKey.active_for_secret(secret) == key
    shown = svc.key_json(key)
    assert shown["provider"] == "primary" and shown["fallbacks"] == ["fb-b", "fb-a"]
    assert shown["memoryCount"] == 0 and "keyHash" not in shown and secret not in str(shown)
    manager = manager_for(key)
    assert manager is not None
    assert [manager.primary.name, *(f.name for f in manager.fallbacks)] == ["primary", "fb-b", "fb-a"]
    assert AuditEvent.objects.filter(action="credential.create", owner_id=key.pk).count() == 1


@pytest.mark.parametrize(
    ("provider", "fallbacks", "field"),
    [
        ("missing", [], "provider"),
        ("primary", ["missing"], "fallbacks[0]"),
        ("primary", ["primary"], "fallbacks[0]"),
        ("primary", ["fb", "fb"], "fallbacks[1]"),
        (None, ["fb"], "fallbacks"),
    ],
)
def test_a_bad_selection_is_refused_naming_the_field(provider, fallbacks, field):
    ram("primary")
    ram("fb")
    key, _ = ApiKey.issue(name="k")
    with pytest.raises(ValidationFailed) as caught:
        svc.key_set_provider(key, provider=provider, fallbacks=fallbacks, actor=SYSTEM)
    assert caught.value.details[0]["field"] == field
    assert ApiKey.objects.get(pk=key.pk).provider_id is None and not ProviderFallback.objects.exists()


def test_the_provider_cannot_change_while_the_key_has_memories_in_its_store():
    ram()
    key, _ = ApiKey.issue(name="k")
    store.memory_create(MemoryInput(owner=key, content="I like tea"))
    with pytest.raises(Conflict) as caught:
        svc.key_set_provider(key, provider="ram", fallbacks=[], actor=SYSTEM)
    assert caught.value.details[0]["field"] == "provider" and "move_memories" in caught.value.message
    # the other way too: from the provider back to native
    other, _ = svc.key_create(name="o", provider="ram", actor=SYSTEM)
    store.memory_create(MemoryInput(owner=other, content="I like coffee"))
    with pytest.raises(Conflict):
        svc.key_set_provider(other, provider=None, fallbacks=[], actor=SYSTEM)
    # fallbacks may change while it holds memories
    ram("fb")
    svc.key_set_provider(other, provider="ram", fallbacks=["fb"], actor=SYSTEM)
    assert svc.key_json(other)["fallbacks"] == ["fb"]


def test_deleting_a_provider_key_clears_its_memories_on_the_provider():
    ram()
    key, _ = svc.key_create(name="k", provider="ram", actor=SYSTEM)
    store.memory_create(MemoryInput(owner=key, content="I live in Lisbon"))
    store.memory_create(MemoryInput(owner=key, content="I work in Porto"))
    manager = manager_for(key)
    assert manager is not None and manager.count(key.pk) == 2
    owner = key.pk
    assert svc.key_delete(key, actor=SYSTEM) == 2
    assert manager.count(owner) == 0
    assert not ApiKey.objects.filter(pk=owner).exists()
    assert AuditEvent.objects.get(action="memory.clear", owner_id=owner).count == 2
    assert AuditEvent.objects.filter(action="credential.delete", owner_id=owner).exists()


def test_key_update_renames_revokes_and_never_restores():
    key, secret = svc.key_create(name="old", actor=SYSTEM)
    svc.key_update(key, name="new", allow_global_scope=True, actor=SYSTEM)
    key.refresh_from_db()
    assert key.name == "new" and key.allow_global_scope
    svc.key_update(key, revoked=True, actor=SYSTEM)
    assert ApiKey.active_for_secret(secret) is None
    with pytest.raises(ValidationFailed) as caught:
        svc.key_update(key, revoked=False, actor=SYSTEM)
    assert caught.value.details[0]["field"] == "revoked"
    actions = list(AuditEvent.objects.filter(owner_id=key.pk).values_list("action", flat=True))
    assert sorted(actions) == ["credential.create", "credential.revoke", "credential.update"]


def test_a_dead_provider_is_unhealthy_and_its_key_count_unknown():
    svc.provider_save(
        name="dead",
        type="redis",
        config={"url": "redis://127.0.0.1:1/0", "retries": 0, "timeout_seconds": 0.5},
        actor=SYSTEM,
    )
    provider = MemoryProvider.objects.get(name="dead")
    health = svc.provider_health(provider)
    assert health.ok is False and health.error
    key, _ = svc.key_create(name="k", provider="dead", actor=SYSTEM)
    assert svc.key_json(key)["memoryCount"] is None


def test_a_bound_caller_sees_only_the_providers_its_keys_use():
    ram("mine")
    ram("theirs")
    mine, _ = svc.key_create(name="mine", provider="mine", actor=SYSTEM)
    svc.key_create(name="theirs", provider="theirs", actor=SYSTEM)
    visible = [p.name for p in svc.visible_providers(frozenset({mine.pk}))]
    assert visible == ["mine"]
    assert [p.name for p in svc.visible_providers(frozenset({uuid.uuid4()}))] == []
    assert [p.name for p in svc.visible_providers(None)] == ["mine", "theirs"]


# -- the admin and the start-up check use the same rules


def test_the_admin_saves_a_provider_through_the_service_and_shows_errors_by_field(admin_client):
    add = reverse("admin:memory_memoryprovider_add")
    refused = admin_client.post(add, {"provider_name": "cache", "provider_type": "redis", "config": "{}"})
    assert refused.status_code == 200 and "config.url" in refused.content.decode()
    assert not MemoryProvider.objects.exists()
    created = admin_client.post(
        add, {"provider_name": "cache", "provider_type": "redis", "config": f'{{"url": "{REDIS_URL}"}}'}
    )
    assert created.status_code == 302
    provider = MemoryProvider.objects.get()
    assert provider.config == {"url": REDIS_URL}
    change = reverse("admin:memory_memoryprovider_change", args=[provider.pk])
    page = admin_client.get(change).content.decode()
    assert "s3cret-pass" not in page and svc.MASK in page
    masked = svc.provider_json(provider)["config"]
    saved = admin_client.post(
        change,
        {
            "provider_name": "cache",
            "provider_type": "redis",
            "config": json.dumps({**masked, "prefix": "a:"}),
        },
    )
    assert saved.status_code == 302
    provider.refresh_from_db()
    assert provider.config == {"url": REDIS_URL, "prefix": "a:"}
    assert AuditEvent.objects.filter(action="provider.save", actor_kind="user").count() == 2


def test_the_admin_sets_a_keys_provider_and_fallbacks(admin_client):
    ram("ram")
    ram("fb")
    key, _ = ApiKey.issue(name="crew")
    change = reverse("admin:memory_apikey_change", args=[key.pk])
    bad = admin_client.post(change, {"name": "crew", "memory_provider": "ram", "fallback_names": "ram"})
    assert bad.status_code == 200 and "a fallback cannot be the key" in bad.content.decode()
    ok = admin_client.post(change, {"name": "crew", "memory_provider": "ram", "fallback_names": "fb"})
    assert ok.status_code == 302
    assert svc.key_json(ApiKey.objects.get(pk=key.pk))["provider"] == "ram"
    assert svc.key_json(ApiKey.objects.get(pk=key.pk))["fallbacks"] == ["fb"]


def test_the_system_check_names_a_provider_whose_config_no_longer_parses():
    assert provider_problems() == []
    provider = svc.provider_save(name="cache", type="redis", config={"url": REDIS_URL}, actor=SYSTEM)
    provider.config = {
        "url": REDIS_URL,
        "renamed_field": 1,
    }  # as an upgrade that renamed a field would leave it
    provider.save()
    gone = MemoryProvider(name="old", type="vanished")
    gone.config = {}
    gone.save()
    problems = provider_problems()
    assert [p.id for p in problems] == ["memory.E010", "memory.E010"]
    assert "'cache'" in problems[0].msg and "config.renamed_field" in problems[0].msg
    assert "'old'" in problems[1].msg and "type" in problems[1].msg
    with pytest.raises(SystemCheckError, match="config.renamed_field"):
        call_command("check", databases=["default"])
