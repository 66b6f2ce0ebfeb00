"""``/api/keys``: API keys with their provider and fallbacks, for global admins only."""

from __future__ import annotations

import uuid

import pytest

from memory import store
from memory.backends.selection import forget, manager_for
from memory.models import ApiKey, AuditEvent, ManagementToken
from memory.services import providers as svc
from memory.services.audit import SYSTEM
from memory.services.memories import MemoryInput
from tests.conftest import Api

pytestmark = pytest.mark.django_db

URL = "/api/keys"


@pytest.fixture(autouse=True)
def _providers():
    forget()
    for name in ("ram", "fb-1", "fb-2"):
        svc.provider_save(name=name, type="inmemory", config={}, actor=SYSTEM)
    yield
    forget()


def error_fields(response) -> list[str]:
    return [d["field"] for d in response.json()["error"]["details"]]


def test_a_key_is_created_with_its_provider_and_its_secret_shown_once(admin_api):
    created = admin_api.post(URL, {"name": "crew", "provider": "ram", "fallbacks": ["fb-2", "fb-1"]})
    assert created.status_code == 201, created.json()
    body = created.json()
    secret = body["secret"]
    key = ApiKey.active_for_secret(secret)
    assert key is not None and str(key.pk) == body["id"]
    assert body["provider"] == "ram" and body["fallbacks"] == ["fb-2", "fb-1"] and body["memoryCount"] == 0
    assert body["prefix"] == secret[:12]
    shown = admin_api.get(f"{URL}/{key.pk}")
    assert shown.status_code == 200 and "secret" not in shown.json() and secret not in shown.content.decode()
    listed = admin_api.get(URL).json()
    assert listed["total"] == 1 and listed["data"][0]["provider"] == "ram"
    assert "secret" not in listed["data"][0]
    native = admin_api.post(URL, {"name": "plain"}).json()
    assert native["provider"] is None and native["fallbacks"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "k", "provider": "missing"}, "provider"),
        ({"name": "k", "provider": "ram", "fallbacks": ["ram"]}, "fallbacks[0]"),
        ({"name": "k", "fallbacks": ["fb-1"]}, "fallbacks"),
        ({"name": "k", "provider": 7}, "provider"),
        ({"name": "   "}, "name"),
        ({"name": "k", "secret": "mine"}, "secret"),
        ({}, "name"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_creates_nothing(admin_api, body, field):
    response = admin_api.post(URL, body)
    assert response.status_code == 400, response.json()
    assert field in error_fields(response)
    assert not ApiKey.objects.exists()


def test_patch_changes_the_provider_and_refuses_while_memories_remain(admin_api):
    key_id = admin_api.post(URL, {"name": "crew"}).json()["id"]
    moved = admin_api.client.patch(
        f"{URL}/{key_id}", data={"provider": "ram", "fallbacks": ["fb-1"]}, format="json"
    )
    assert moved.status_code == 200, moved.json()
    assert moved.json()["provider"] == "ram" and moved.json()["fallbacks"] == ["fb-1"]
    key = ApiKey.objects.get(pk=key_id)
    store.memory_create(MemoryInput(owner=key, content="I fly to Oslo on Monday"))
    refused = admin_api.client.patch(f"{URL}/{key_id}", data={"provider": None}, format="json")
    assert refused.status_code == 409 and error_fields(refused) == ["provider"]
    assert "move_memories" in refused.json()["error"]["message"]
    # fallbacks alone may change; a rename with them is all or nothing
    half = admin_api.client.patch(
        f"{URL}/{key_id}", data={"name": "renamed", "fallbacks": ["nope"]}, format="json"
    )
    assert half.status_code == 400 and error_fields(half) == ["fallbacks[0]"]
    assert ApiKey.objects.get(pk=key_id).name == "crew"
    renamed = admin_api.client.patch(
        f"{URL}/{key_id}", data={"name": "renamed", "fallbacks": ["fb-2", "fb-1"]}, format="json"
    ).json()
    assert (
        renamed["name"] == "renamed"
        and renamed["fallbacks"] == ["fb-2", "fb-1"]
        and renamed["memoryCount"] == 1
    )
    empty = admin_api.client.patch(f"{URL}/{key_id}", data={}, format="json")
    assert empty.status_code == 400


def test_revoking_through_patch_stops_the_key(admin_api):
    body = admin_api.post(URL, {"name": "crew"}).json()
    revoked = admin_api.client.patch(f"{URL}/{body['id']}", data={"revoked": True}, format="json").json()
    assert revoked["revokedAt"] is not None and ApiKey.active_for_secret(body["secret"]) is None
    back = admin_api.client.patch(f"{URL}/{body['id']}", data={"revoked": False}, format="json")
    assert back.status_code == 400 and error_fields(back) == ["revoked"]


def test_delete_takes_the_memories_from_the_provider(admin_api):
    key_id = admin_api.post(URL, {"name": "crew", "provider": "ram"}).json()["id"]
    key = ApiKey.objects.get(pk=key_id)
    manager = manager_for(key)
    store.memory_create(MemoryInput(owner=key, content="I live in Oslo"))
    deleted = admin_api.delete(f"{URL}/{key_id}")
    assert deleted.status_code == 200 and deleted.json() == {"success": True, "deletedMemories": 1}
    assert manager is not None and manager.count(uuid.UUID(key_id)) == 0
    assert admin_api.get(f"{URL}/{key_id}").status_code == 404
    actions = set(AuditEvent.objects.filter(owner_id=key_id).values_list("action", flat=True))
    assert {"credential.create", "memory.clear", "credential.delete"} <= actions


def test_unknown_or_malformed_ids_are_404(admin_api):
    assert admin_api.get(f"{URL}/{uuid.uuid4()}").status_code == 404
    assert admin_api.get(f"{URL}/not-a-uuid").status_code == 404
    assert admin_api.delete(f"{URL}/not-a-uuid").status_code == 404


def test_only_a_global_admin_reaches_the_keys(alice, alice_api, read_api):
    bound_admin = Api(ManagementToken.issue(name="a", scope="admin", owners=[alice])[1])
    for api in (bound_admin, alice_api, read_api):
        assert api.get(URL).status_code == 403
        assert api.get(f"{URL}/{alice.pk}").status_code == 403
        assert api.post(URL, {"name": "x"}).status_code == 403
        assert api.delete(f"{URL}/{alice.pk}").status_code == 403
    assert ApiKey.objects.filter(pk=alice.pk).exists() and ApiKey.objects.count() == 1
