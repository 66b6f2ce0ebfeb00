"""The Memory Studio for a key whose memories live with a provider: the same list, add, edit,
delete, export, import and charts as for a native key, through ``memory.store``, and never another
key's memories."""

from __future__ import annotations

import io
import json
import uuid

import pytest
import redis
from django.test import override_settings

from gateway.models import UpstreamProvider
from memory import store
from memory.backends.selection import forget, manager_for
from memory.conf import update_memory_settings
from memory.models import ApiKey, Memory
from memory.principals import Principal
from memory.services.audit import SYSTEM
from memory.services.memories import MemoryInput
from memory.services.providers import key_set_provider
from tests.dashboard.test_providers_views import dead_redis_url, make_provider
from tests.factories import make_memory

MEMORY = "/dashboard/memory"


@pytest.fixture(autouse=True)
def _fresh_backends():
    forget()
    # The Redis providers here are on loopback: the outbound URL policy needs the private switch.
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield
    forget()


@pytest.fixture(params=["inmemory", "redis"])
def provider(request, db):
    """One provider of each kind the Studio is driven against: in-process, and the real Redis."""
    if request.param == "inmemory":
        yield make_provider("shared-store")
        return
    prefix = f"omr:test:{uuid.uuid4().hex[:12]}:"
    yield make_provider("shared-store", "redis", {"url": "redis://127.0.0.1:6379/0", "prefix": prefix})
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


@pytest.fixture
def on_provider(provider, alice, bob):
    """alice and bob both keep their memories on the same provider; carol stays native."""
    for key in (alice, bob):
        key_set_provider(key, provider=provider.name, fallbacks=[], actor=SYSTEM)
        key.refresh_from_db()
    return alice, bob


@pytest.fixture
def carol(db) -> ApiKey:
    return ApiKey.issue(name="carol")[0]


def put(owner: ApiKey, content: str, **fields) -> Memory:
    memory, _ = store.memory_create(MemoryInput(owner=owner, content=content, **fields))
    return memory


def listed(studio, owner: ApiKey, **params) -> str:
    return studio.hx_get(
        MEMORY, {"tab": "memories", "owner": str(owner.pk), **params}, target="memory-list"
    ).content.decode()


def test_the_list_shows_the_keys_memories_from_its_provider(studio, on_provider, carol):
    alice, bob = on_provider
    put(alice, "I prefer dark mode in every editor", key="pref:theme")
    put(alice, "I deploy on Fridays", key="habit:deploy", type="procedural")
    put(bob, "Bob's secret plan", key="bob:plan")
    make_memory(carol, "Carol's native memory", key="carol:note")
    html = listed(studio, alice)
    assert "pref:theme" in html and "habit:deploy" in html
    assert "Bob&#x27;s secret plan" not in html and "Carol" not in html
    assert "(2 total)" in html
    assert '<div class="stat-value" data-stat="total">2</div>' in html  # the counters, out of band
    assert not Memory.objects.filter(owner=alice).exists()  # nothing in the native rows
    only_bob = listed(studio, bob)
    assert "bob:plan" in only_bob and "pref:theme" not in only_bob and "(1 total)" in only_bob
    only_carol = listed(studio, carol)
    assert "carol:note" in only_carol and "pref:theme" not in only_carol and "bob:plan" not in only_carol


def test_search_and_type_filter_on_a_provider_key(studio, on_provider):
    alice, _ = on_provider
    put(alice, "I prefer dark mode in every editor", key="pref:theme")
    put(alice, "I deploy on Fridays", key="habit:deploy", type="procedural")
    by_type = listed(studio, alice, type="procedural")
    assert "habit:deploy" in by_type and "pref:theme" not in by_type
    searched = listed(studio, alice, q="dark mode")
    assert "pref:theme" in searched and "habit:deploy" not in searched


def test_the_page_says_where_the_keys_memories_live(studio, on_provider, carol):
    alice, _ = on_provider
    html = studio.get(MEMORY, {"owner": str(alice.pk)}).content.decode()
    storage = html.split("data-storage>")[1].split('<div class="stat-sub">')[0]
    assert "shared-store" in storage and 'hx-get="/dashboard/providers/shared-store/health"' in storage
    assert f"alice · {alice.prefix}… · on shared-store" in html  # the owner selector
    native = studio.get(MEMORY, {"owner": str(carol.pk)}).content.decode()
    assert "<span>Native</span>" in native.split("data-storage>")[1]


def test_add_a_memory_to_a_provider_key(studio, on_provider):
    alice, bob = on_provider
    response = studio.hx_post(
        f"{MEMORY}/add",
        {"owner": str(alice.pk), "type": "factual", "key": "city", "content": "I live in Lisbon"},
    )
    assert response.status_code == 200 and "memory-changed" in response["HX-Trigger"]
    manager = manager_for(alice)
    assert manager is not None
    records = manager.list(alice.pk).records
    assert [(r.key, r.content) for r in records] == [("city", "I live in Lisbon")]
    assert manager.count(bob.pk) == 0
    assert not Memory.objects.exists()
    # The same key again updates it, as for a native key.
    studio.hx_post(
        f"{MEMORY}/add",
        {"owner": str(alice.pk), "type": "factual", "key": "city", "content": "I live in Porto"},
    )
    assert [r.content for r in manager.list(alice.pk).records] == ["I live in Porto"]


def test_edit_a_provider_keys_memory(studio, on_provider):
    alice, _ = on_provider
    memory = put(alice, "I live in Lisbon", key="city")
    edit_row = studio.hx_get(f"{MEMORY}/{memory.uuid}/edit", {"owner": str(alice.pk)}).content.decode()
    assert "I live in Lisbon" in edit_row and "data-editing" in edit_row
    response = studio.hx_post(
        f"{MEMORY}/{memory.uuid}/edit",
        {
            "owner": str(alice.pk),
            "type": "factual",
            "key": "city",
            "content": "I live in Faro",
            "metadata": '{"source": "studio"}',
        },
    )
    assert response.status_code == 200 and "I live in Faro" in response.content.decode()
    record = manager_for(alice).get(alice.pk, memory.uuid)
    assert record.content == "I live in Faro" and record.metadata == {"source": "studio"}


def test_delete_a_provider_keys_memory(studio, on_provider):
    alice, _ = on_provider
    memory = put(alice, "I live in Lisbon", key="city")
    keep = put(alice, "I like tea", key="drink")
    confirm = studio.get(f"{MEMORY}/{memory.uuid}/delete", {"owner": str(alice.pk)}).content.decode()
    assert "I live in Lisbon" in confirm
    response = studio.hx_post(f"{MEMORY}/{memory.uuid}/delete", {"owner": str(alice.pk)})
    assert response.status_code == 200
    manager = manager_for(alice)
    assert manager.get(alice.pk, memory.uuid) is None
    assert manager.get(alice.pk, keep.uuid) is not None


def test_two_keys_on_one_provider_with_the_same_memory_key_stay_apart(studio, on_provider, carol):
    alice, bob = on_provider
    bobs = put(bob, "Bob's secret plan", key="plan")
    studio.hx_post(
        f"{MEMORY}/add", {"owner": str(alice.pk), "type": "factual", "key": "plan", "content": "alice's own"}
    )
    # The same memory key under another owner is a new memory of alice's; bob's is untouched.
    assert manager_for(bob).get(bob.pk, bobs.uuid).content == "Bob's secret plan"
    assert [r.content for r in manager_for(alice).list(alice.pk).records] == ["alice's own"]
    memory = manager_for(alice).list(alice.pk).records[0]
    studio.hx_post(f"{MEMORY}/{memory.id}/delete", {"owner": str(alice.pk)})
    assert manager_for(alice).count(alice.pk) == 0
    assert manager_for(bob).count(bob.pk) == 1
    assert store.memory_count(carol) == 0


def test_a_bound_principal_never_sees_another_keys_provider_memories(on_provider, carol):
    alice, bob = on_provider
    bobs = put(bob, "Bob's secret plan")
    put(alice, "alice's memory")
    bound = Principal(scope="write", owner_ids=frozenset({alice.pk}), label="bound")
    listed_for_alice = store.memory_list(principal=bound)
    assert [m.content for m in listed_for_alice["data"]] == ["alice's memory"]
    with pytest.raises(Exception, match="not found"):
        store.memory_get(principal=bound, memory_id=bobs.uuid)


def test_export_and_import_a_provider_key(studio, on_provider):
    alice, bob = on_provider
    put(alice, "I live in Lisbon", key="city")
    put(alice, "I like tea", key="drink")
    put(bob, "Bob's", key="bob")
    response = studio.get(f"{MEMORY}/export", {"owner": str(alice.pk)})
    assert response.status_code == 200
    exported = json.loads(b"".join(response.streaming_content))
    assert sorted(m["key"] for m in exported) == ["city", "drink"]
    assert {m["apiKeyId"] for m in exported} == {str(alice.pk)}

    upload = io.BytesIO(json.dumps(exported).encode())
    upload.name = "export.json"
    response = studio.hx_post(f"{MEMORY}/import", {"owner": str(bob.pk), "file": upload})
    html = response.content.decode()
    assert "2 imported, 0 skipped" in html and "(2 new, 0 updated, into bob)" in html
    assert sorted(r.key for r in manager_for(bob).list(bob.pk).records) == ["bob", "city", "drink"]
    assert manager_for(alice).count(alice.pk) == 2


def test_the_activity_charts_count_a_provider_keys_records(studio, on_provider, carol):
    alice, _ = on_provider
    put(alice, "one", key="a")
    put(alice, "two", key="b", type="procedural")
    make_memory(carol, "carol's")
    html = studio.get(MEMORY, {"tab": "engine", "owner": str(alice.pk)}).content.decode()
    assert "Memories created per day, last 30 days (2 in total)" in html
    assert "<title>factual: 1</title>" in html and "<title>procedural: 1</title>" in html
    native = studio.get(MEMORY, {"tab": "engine", "owner": str(carol.pk)}).content.decode()
    assert "(1 in total)" in native and "procedural" not in native.split('id="chart-card"')[1]
    everyone = studio.get(MEMORY, {"tab": "engine", "owner": "all"}).content.decode()
    assert "(3 in total)" in everyone and "<title>factual: 2</title>" in everyone


def test_a_provider_down_is_said_in_the_list_not_a_500(studio, alice):
    make_provider("gone", "redis", {"url": dead_redis_url(), "retries": 0, "timeout_seconds": 1.0})
    key_set_provider(alice, provider="gone", fallbacks=[], actor=SYSTEM)
    page = studio.get(MEMORY, {"owner": str(alice.pk)})
    assert page.status_code == 200
    html = page.content.decode()
    assert "data-list-error" in html and "The memory store cannot be read" in html
    added = studio.hx_post(
        f"{MEMORY}/add", {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "c"}
    )
    assert added.status_code == 200 and 'class="alert error"' in added.content.decode()
    engine = studio.get(MEMORY, {"tab": "engine", "owner": str(alice.pk)})
    assert engine.status_code == 200 and "The memory store cannot be read:" in engine.content.decode()
    export = studio.get(f"{MEMORY}/export", {"owner": str(alice.pk)})
    assert export.status_code == 503 and export["Content-Type"].startswith("text/plain")


def test_the_sandbox_ranks_a_provider_keys_memories_there(studio, on_provider, carol):
    alice, bob = on_provider
    put(alice, "I prefer vim for editing code", key="preference:editor")
    put(bob, "I prefer emacs for editing code", key="preference:editor")
    make_memory(carol, "I prefer nano for editing code", key="preference:editor")
    params = {
        "tab": "sandbox",
        "owner": str(alice.pk),
        "query": "which editor for code",
        "strategy": "keyword",
    }
    html = studio.hx_get(MEMORY, params, target="sandbox-results").content.decode()
    assert "vim" in html and "emacs" not in html and "nano" not in html
    provider = html.split("data-resolution-provider>")[1].split("</div>")[0]
    assert "shared-store" in provider


def test_preview_injection_recalls_from_the_keys_provider(studio, on_provider):
    alice, bob = on_provider
    put(alice, "I prefer vim for editing code", key="preference:editor")
    put(bob, "I prefer emacs for editing code", key="preference:editor")
    UpstreamProvider.objects.create(name="openai", base_url="http://127.0.0.1:9/v1", is_default=True)
    update_memory_settings({"enabled": True, "strategy": "keyword"})
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "which editor do I prefer for code?"}],
    }
    html = studio.hx_post(
        f"{MEMORY}/inject", {"owner": str(alice.pk), "request_json": json.dumps(body)}
    ).content.decode()
    assert "memory injected" in html and "Memory context: " in html
    assert "vim" in html and "emacs" not in html
