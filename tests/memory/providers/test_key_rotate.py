"""Rotating a credential's secret: ``key_rotate`` / ``token_rotate`` and ``POST /api/keys/<id>/rotate``.

The old secret must stop working at once on the real paths that check it (the gateway, the REST API),
while the row keeps its id, memories, provider and bindings."""

from __future__ import annotations

import pytest

from gateway.models import UpstreamProvider
from gateway.workers import wait_for_after_response_work
from memory import store
from memory.backends.selection import forget, manager_for
from memory.exceptions import Conflict, NotFound
from memory.models import ApiKey, AuditEvent, ManagementToken, Memory, TokenScope, hash_secret
from memory.services import providers as svc
from memory.services.audit import SYSTEM
from memory.services.credentials import credential_revoke, key_rotate, token_create, token_rotate
from memory.services.memories import MemoryInput
from tests.conftest import Api
from tests.factories import make_memory
from tests.gateway.conftest import upstream, upstream_server  # noqa: F401 - the recording upstream


@pytest.fixture(autouse=True)
def _fresh_backends():
    forget()
    yield
    forget()


def rotate_events(owner_id) -> list[AuditEvent]:
    return [
        e
        for e in AuditEvent.objects.filter(action="credential.update", owner_id=owner_id)
        if "secret" in e.details.get("changes", {})
    ]


# -- the service ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_rotated_key_keeps_its_id_and_memories_and_only_the_new_secret_works(alice):
    memory = make_memory(alice, "I prefer green tea", key="pref:tea")
    old_prefix = alice.prefix
    old = ApiKey.issue(name="tmp")[1]  # an issued secret, for its shape
    ApiKey.objects.filter(name="tmp").delete()

    key, secret = key_rotate(ApiKey.objects.get(pk=alice.pk), actor=SYSTEM)

    assert key.pk == alice.pk
    assert secret.startswith("sk-omr-") and len(secret) == len(old)
    assert key.prefix == secret[:12] != old_prefix
    stored = ApiKey.objects.get(pk=alice.pk)
    assert stored.key_hash == hash_secret(secret) and stored.prefix == secret[:12]
    assert ApiKey.active_for_secret(secret).pk == alice.pk
    assert Memory.objects.get(pk=memory.pk).owner_id == alice.pk
    (event,) = rotate_events(alice.pk)
    assert event.details["changes"]["secret"] == {"from": old_prefix, "to": key.prefix}
    assert secret not in str(event.details)


@pytest.mark.django_db
def test_a_revoked_key_cannot_be_rotated_and_stays_revoked(alice):
    credential_revoke(alice, actor=SYSTEM)
    before = ApiKey.objects.get(pk=alice.pk).key_hash
    with pytest.raises(Conflict) as raised:
        key_rotate(alice, actor=SYSTEM)
    assert raised.value.details == [{"field": "revoked", "message": raised.value.message}]
    stored = ApiKey.objects.get(pk=alice.pk)
    assert stored.key_hash == before and stored.revoked_at is not None
    assert rotate_events(alice.pk) == []


@pytest.mark.django_db
def test_rotating_a_deleted_key_is_not_found(alice):
    ApiKey.objects.filter(pk=alice.pk).delete()
    with pytest.raises(NotFound):
        key_rotate(alice, actor=SYSTEM)


@pytest.mark.django_db
def test_a_provider_backed_key_keeps_its_provider_and_memories(db):
    svc.provider_save(name="ram", type="inmemory", config={}, actor=SYSTEM)
    key, _ = svc.key_create(name="crew", provider="ram", actor=SYSTEM)
    store.memory_create(MemoryInput(owner=key, content="Crew meets on Mondays", key="meeting"))

    rotated, secret = key_rotate(key, actor=SYSTEM)

    assert svc.key_json(ApiKey.objects.get(pk=key.pk))["provider"] == "ram"
    assert [r.content for r in store.all_records(manager_for(rotated), key.pk)] == ["Crew meets on Mondays"]
    assert ApiKey.active_for_secret(secret).pk == key.pk


@pytest.mark.django_db
def test_a_rotated_token_keeps_its_scope_and_owners_and_the_old_secret_is_refused(alice, bob):
    token, old = token_create(name="ci", scope=TokenScope.WRITE, owners=[alice], actor=SYSTEM)
    assert Api(old).get("/api/memory").status_code == 200

    rotated, new = token_rotate(token, actor=SYSTEM)

    assert new.startswith("omt_") and len(new) == len(old) and rotated.prefix == new[:10]
    stored = ManagementToken.objects.get(pk=token.pk)
    assert stored.scope == "write" and list(stored.owners.all()) == [alice]
    refused = Api(old).get("/api/memory")
    assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
    assert Api(new).get("/api/memory").status_code == 200
    (event,) = rotate_events(alice.pk)
    assert event.details["credential"] == "management_token"
    assert not rotate_events(bob.pk)


# -- the gateway: the old secret stops at once ----------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_gateway_refuses_the_old_secret_right_after_a_rotation(client, upstream):  # noqa: F811
    UpstreamProvider.objects.create(name="stub", base_url=upstream.base_url, is_default=True)
    upstream.reply = "Hello."
    key, old = ApiKey.issue(name="alice")
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}

    def chat(secret: str):
        return client.post(
            "/v1/chat/completions",
            body,
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}"},
        )

    assert chat(old).status_code == 200
    _, new = key_rotate(key, actor=SYSTEM)
    refused = chat(old)
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "Incorrect or revoked API key"
    answered = chat(new)
    assert answered.status_code == 200
    assert answered.json()["choices"][0]["message"]["content"] == "Hello."
    assert len(upstream.requests) == 2  # the refused chat never went upstream
    assert wait_for_after_response_work()


# -- the REST route ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_route_answers_the_new_secret_once_and_audits_the_token(admin_api, alice):
    make_memory(alice, "I prefer green tea", key="pref:tea")
    response = admin_api.post(f"/api/keys/{alice.pk}/rotate")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == str(alice.pk) and body["memoryCount"] == 1
    assert body["prefix"] == body["secret"][:12]
    assert ApiKey.active_for_secret(body["secret"]).pk == alice.pk
    shown = admin_api.get(f"/api/keys/{alice.pk}").json()
    assert "secret" not in shown and shown["prefix"] == body["prefix"]
    (event,) = rotate_events(alice.pk)
    assert event.actor_kind == "token" and event.via == "rest"


@pytest.mark.django_db
def test_the_route_refuses_a_revoked_key_and_an_unknown_one(admin_api, alice):
    admin_api.patch(f"/api/keys/{alice.pk}", {"revoked": True})
    revoked = admin_api.post(f"/api/keys/{alice.pk}/rotate")
    assert revoked.status_code == 409
    assert revoked.json()["error"]["details"][0]["field"] == "revoked"
    missing = admin_api.post("/api/keys/00000000-0000-0000-0000-00000000abcd/rotate")
    assert missing.status_code == 404 and missing.json()["error"]["details"][0]["field"] == "id"
    junk = admin_api.post("/api/keys/not-a-uuid/rotate")
    assert junk.status_code == 404


@pytest.mark.django_db
def test_a_write_token_cannot_rotate_a_key(alice_api, alice):
    before = ApiKey.objects.get(pk=alice.pk).key_hash
    response = alice_api.post(f"/api/keys/{alice.pk}/rotate")
    assert response.status_code == 403
    assert ApiKey.objects.get(pk=alice.pk).key_hash == before
