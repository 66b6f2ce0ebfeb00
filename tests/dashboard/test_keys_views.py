"""The Keys page: list, create (the secret shown once), provider and fallbacks per key, test
connection, revoke, delete."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from memory import store
from memory.backends.selection import forget, manager_for
from memory.models import ApiKey, AuditEvent, ProviderFallback, hash_secret
from memory.services.audit import SYSTEM
from memory.services.memories import MemoryInput
from memory.services.providers import key_set_provider
from tests.dashboard.test_providers_views import dead_redis_url, make_provider
from tests.factories import make_memory

KEYS = "/dashboard/keys"
CREATE = "/dashboard/keys/create"


@pytest.fixture(autouse=True)
def _fresh_backends():
    forget()
    # The Redis providers here are on loopback: the outbound URL policy needs the private switch.
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield
    forget()


def row_of(html: str, name: str) -> str:
    return html.split(f'data-key="{name}"')[1].split("</tr>")[0]


def test_the_list_shows_each_key_with_its_counts_and_storage(studio, alice, bob):
    make_memory(alice, "I prefer dark mode", key="pref:theme")
    make_memory(alice, "I deploy on Fridays", key="habit:deploy")
    make_provider("ram")
    make_provider("spare")
    key_set_provider(bob, provider="ram", fallbacks=["spare"], actor=SYSTEM)
    store.memory_create(MemoryInput(owner=bob, content="Bob lives in Lisbon", key="city"))
    alice.last_used_at = alice.created_at
    alice.save(update_fields=["last_used_at"])

    html = studio.get(KEYS).content.decode()
    alice_row, bob_row = row_of(html, "alice"), row_of(html, "bob")
    assert f"{alice.prefix}…" in alice_row
    assert "<td data-memory-count>2</td>" in alice_row
    assert '<span class="mono">native</span>' in alice_row
    assert "never" not in alice_row and "active" in alice_row
    assert "<td data-memory-count>1</td>" in bob_row
    assert '<span class="mono">ram</span>' in bob_row and "then spare" in bob_row
    assert 'hx-get="/dashboard/providers/ram/health"' in bob_row  # the health dot, loaded after
    assert "never" in bob_row


def test_the_list_costs_one_count_query_per_native_key(studio, alice, django_assert_num_queries):
    """``key_json`` counts each key's memories where they live: one COUNT per native key (a
    provider-backed key asks its provider), on top of a fixed number for the page."""
    make_memory(alice, "one")
    with CaptureQueriesContext(connection) as one_key:
        assert studio.get(KEYS).status_code == 200
    for i in range(5):
        ApiKey.issue(name=f"extra-{i}")
    with django_assert_num_queries(len(one_key.captured_queries) + 5):
        assert studio.get(KEYS).status_code == 200


def test_create_shows_the_secret_once(studio):
    response = studio.hx_post(CREATE, {"name": "billing-service", "provider": ""})
    html = response.content.decode()
    assert response.status_code == 200
    assert "keys-changed" in response["HX-Trigger"]
    key = ApiKey.objects.get(name="billing-service")
    secret = html.split('<code class="mono" id="new-secret">')[1].split("</code>")[0]
    assert secret.startswith(key.prefix) and hash_secret(secret) == key.key_hash
    assert "it is not stored and cannot be shown again" in html
    assert key.provider is None
    # The list (refreshed by the event) and every later page never show it again.
    assert secret not in studio.get(KEYS).content.decode()
    assert secret not in studio.hx_get(KEYS, target="key-list").content.decode()
    assert AuditEvent.objects.filter(action="credential.create").count() == 1


def test_create_on_a_provider(studio):
    make_provider("ram")
    studio.hx_post(CREATE, {"name": "on-ram", "provider": "ram"})
    key = ApiKey.objects.get(name="on-ram")
    assert key.provider.name == "ram"


def test_create_without_javascript_shows_the_secret_in_the_page(studio):
    response = studio.post(CREATE, {"name": "plain"})
    assert response.status_code == 200
    key = ApiKey.objects.get(name="plain")
    assert f'id="new-secret">{key.prefix}' in response.content.decode()


def test_create_errors_are_shown_next_to_the_field(studio):
    html = studio.hx_post(CREATE, {"name": "   "}).content.decode()
    assert "This field is required." in html or "name must be a non-blank string" in html
    html = studio.hx_post(CREATE, {"name": "x", "provider": "nope"}).content.decode()
    assert "no memory provider is named &#x27;nope&#x27;" in html
    assert not ApiKey.objects.exists()


def test_set_a_provider_and_ordered_fallbacks(studio, alice):
    make_provider("ram")
    make_provider("spare-a")
    make_provider("spare-b")
    editor = studio.hx_get(f"{KEYS}/{alice.pk}/storage").content.decode()
    assert '<option value="" selected>' in editor and editor.count('name="fallback"') == 2
    response = studio.hx_post(
        f"{KEYS}/{alice.pk}/storage", {"provider": "ram", "fallback": ["spare-b", "", "spare-a"]}
    )
    assert response.status_code == 200
    alice.refresh_from_db()
    assert alice.provider.name == "ram"
    links = ProviderFallback.objects.filter(api_key=alice).order_by("position")
    assert [link.provider.name for link in links] == ["spare-b", "spare-a"]
    row = response.content.decode()
    assert '<span class="mono">ram</span>' in row and "then spare-b, spare-a" in row
    # Back to native, without fallbacks.
    studio.hx_post(f"{KEYS}/{alice.pk}/storage", {"provider": ""})
    alice.refresh_from_db()
    assert alice.provider is None and not ProviderFallback.objects.filter(api_key=alice).exists()


def test_a_provider_named_native_is_not_taken_for_the_native_store(studio, alice):
    make_provider("native", "native")
    studio.hx_post(f"{KEYS}/{alice.pk}/storage", {"provider": "native"})
    alice.refresh_from_db()
    assert alice.provider is not None and alice.provider.name == "native"


def test_moving_a_key_that_holds_memories_is_refused_in_the_editor(studio, alice):
    make_provider("ram")
    make_memory(alice, "I prefer dark mode")
    response = studio.hx_post(f"{KEYS}/{alice.pk}/storage", {"provider": "ram"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "data-storage-error" in html and "has 1 memories in its current store" in html
    assert "manage.py move_memories" in html
    assert '<option value="ram" selected>' in html  # the choice is kept on screen
    alice.refresh_from_db()
    assert alice.provider is None
    response = studio.post(f"{KEYS}/{alice.pk}/storage", {"provider": "ram"})
    assert response.status_code == 409


def test_a_repeated_fallback_names_its_position(studio, alice):
    make_provider("ram")
    make_provider("spare")
    html = studio.hx_post(
        f"{KEYS}/{alice.pk}/storage", {"provider": "ram", "fallback": ["spare", "spare"]}
    ).content.decode()
    assert "fallbacks[1]" in html and "listed twice" in html
    alice.refresh_from_db()
    assert alice.provider is None


def test_without_javascript_the_storage_editor_opens_in_the_page(studio, alice):
    response = studio.get(f"{KEYS}/{alice.pk}/storage")
    assert response.status_code == 302 and response["Location"] == f"{KEYS}?edit={alice.pk}"
    html = studio.get(response["Location"]).content.decode()
    assert "Where alice's memories live" in html
    response = studio.post(f"{KEYS}/{alice.pk}/storage", {"provider": ""})
    assert response.status_code == 302


def test_test_connection_of_a_native_key(studio, alice):
    html = studio.hx_post(f"{KEYS}/{alice.pk}/test").content.decode()
    assert 'data-test-result="ok"' in html and "<strong>native</strong>" in html


def test_test_connection_probes_the_provider_then_each_fallback(studio, alice):
    make_provider("ram")
    make_provider("gone", "redis", {"url": dead_redis_url(), "retries": 0, "timeout_seconds": 1.0})
    key_set_provider(alice, provider="ram", fallbacks=["gone"], actor=SYSTEM)
    html = studio.hx_post(f"{KEYS}/{alice.pk}/test").content.decode()
    ram, gone = html.split("<strong>ram</strong>")[1], html.split("<strong>gone</strong>")[1]
    assert html.index("<strong>ram</strong>") < html.index("<strong>gone</strong>")
    assert "(provider)" in ram.split("</div>")[0] and "Connected (" in ram.split("</div>")[0]
    assert "(fallback)" in gone and "Unreachable: " in gone and "dot dot-error" in html


def test_a_key_whose_provider_is_down_shows_no_count_instead_of_failing(studio, alice):
    make_provider("gone", "redis", {"url": dead_redis_url(), "retries": 0, "timeout_seconds": 1.0})
    key_set_provider(alice, provider="gone", fallbacks=[], actor=SYSTEM)
    response = studio.get(KEYS)
    assert response.status_code == 200
    row = row_of(response.content.decode(), "alice")
    assert 'title="The key\'s store cannot be reached">—</span>' in row


def test_revoke(studio, alice):
    response = studio.hx_post(f"{KEYS}/{alice.pk}/revoke")
    alice.refresh_from_db()
    assert alice.revoked_at is not None
    assert "revoked" in response.content.decode()
    assert ApiKey.active_for_secret("anything") is None


def test_delete_a_native_key_with_its_memories(studio, alice, bob):
    make_memory(alice, "mine")
    make_memory(bob, "bob's")
    confirm = studio.get(f"{KEYS}/{alice.pk}/delete").content.decode()
    assert "Delete API key alice?" in confirm and "<dd>1</dd>" in confirm
    response = studio.hx_post(f"{KEYS}/{alice.pk}/delete")
    assert response.status_code == 200 and response.content == b""
    assert not ApiKey.all_objects.filter(pk=alice.pk).exists()
    assert store.memory_count(bob) == 1


def test_delete_a_provider_key_clears_its_provider(studio, alice):
    make_provider("ram")
    key_set_provider(alice, provider="ram", fallbacks=[], actor=SYSTEM)
    store.memory_create(MemoryInput(owner=alice, content="on the provider"))
    manager = manager_for(alice)
    assert manager is not None and manager.count(alice.pk) == 1
    response = studio.post(f"{KEYS}/{alice.pk}/delete")
    assert response.status_code == 302
    assert manager.count(alice.pk) == 0
    assert not ApiKey.all_objects.filter(pk=alice.pk).exists()


def test_delete_is_refused_when_the_provider_cannot_be_reached(studio, alice):
    make_provider("gone", "redis", {"url": dead_redis_url(), "retries": 0, "timeout_seconds": 1.0})
    key_set_provider(alice, provider="gone", fallbacks=[], actor=SYSTEM)
    response = studio.hx_post(f"{KEYS}/{alice.pk}/delete")
    assert response.status_code == 200
    assert 'class="field-error" role="alert"' in response.content.decode()
    assert ApiKey.objects.filter(pk=alice.pk).exists()
    assert studio.post(f"{KEYS}/{alice.pk}/delete").status_code == 503


def test_staff_who_are_not_administrators_may_look_but_not_change(operator, alice):
    html = operator.get(KEYS).content.decode()
    assert "Only administrators can create or change API keys." in html and "Storage…" not in html
    assert operator.post(CREATE, {"name": "x"}).status_code == 403
    assert operator.post(f"{KEYS}/{alice.pk}/revoke").status_code == 403
    assert operator.post(f"{KEYS}/{alice.pk}/delete").status_code == 403
    assert operator.post(f"{KEYS}/{alice.pk}/storage", {"provider": ""}).status_code == 403
    alice.refresh_from_db()
    assert alice.revoked_at is None and ApiKey.objects.count() == 1


def test_anonymous_users_are_sent_to_the_login_page(client, alice):
    for path in (KEYS, f"{KEYS}/{alice.pk}/revoke"):
        response = client.post(path) if path.endswith("revoke") else client.get(path)
        assert response.status_code == 302 and "login" in response["Location"]
    alice.refresh_from_db()
    assert alice.revoked_at is None


def test_an_unknown_key_is_a_404(studio, db):
    assert studio.hx_post(f"{KEYS}/00000000-0000-0000-0000-00000000abcd/test").status_code == 404
