"""Deleting an API key (or a management token) is written to the audit log like a revocation: who,
when, which key, and how many memories went with it, in the same transaction as the delete."""

from __future__ import annotations

import pytest
from django.db import transaction

from memory.models import ApiKey, AuditEvent, ManagementToken, Memory
from memory.services.audit import command_actor
from memory.services.credentials import credential_delete
from tests.dashboard.conftest import StudioClient
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def studio(admin_user) -> StudioClient:
    client = StudioClient()
    client.force_login(admin_user)
    return client


def deletions() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action="credential.delete").order_by("id"))


def test_deleting_a_key_in_the_admin_records_the_user_the_key_and_its_memories(studio, alice, bob):
    for content in ("I like tea", "I live in Porto", "I ride a bike"):
        make_memory(bob, content)
    make_memory(alice, "I like figs")

    reply = studio.post(f"/admin/memory/apikey/{bob.pk}/delete/", {"post": "yes"})

    assert reply.status_code == 302
    assert not ApiKey.objects.filter(pk=bob.pk).exists()
    assert not Memory.objects.filter(owner_id=bob.pk).exists()
    (event,) = deletions()
    assert (event.owner_id, event.count) == (bob.pk, 3)
    assert (event.actor_kind, event.actor_name, event.via) == ("user", "admin", "admin")
    assert event.details == {
        "credential": "api_key",
        "id": str(bob.pk),
        "name": "bob",
        "prefix": bob.prefix,
        "revoked": False,
    }
    assert event.at is not None
    assert Memory.objects.filter(owner=alice).count() == 1  # the other key keeps its memories


def test_the_admin_delete_selected_action_records_one_event_per_key(studio, alice, bob):
    make_memory(alice, "I like tea")
    make_memory(bob, "I like oat")
    make_memory(bob, "I like rye")

    reply = studio.post(
        "/admin/memory/apikey/",
        {"action": "delete_selected", "_selected_action": [str(alice.pk), str(bob.pk)], "post": "yes"},
    )

    assert reply.status_code == 302
    assert not ApiKey.objects.filter(pk__in=[alice.pk, bob.pk]).exists()
    assert {e.owner_id: e.count for e in deletions()} == {alice.pk: 1, bob.pk: 2}


def test_deleting_a_token_records_each_key_it_was_bound_to(studio, alice, bob):
    bound, _ = ManagementToken.issue(name="ops-write", scope="write", owners=[alice, bob])
    global_token, _ = ManagementToken.issue(name="ops-admin", scope="admin")

    assert (
        studio.post(f"/admin/memory/managementtoken/{bound.pk}/delete/", {"post": "yes"}).status_code == 302
    )
    assert (
        studio.post(f"/admin/memory/managementtoken/{global_token.pk}/delete/", {"post": "yes"}).status_code
        == 302
    )

    events = deletions()
    assert {(e.owner_id, e.details["name"], e.count) for e in events} == {
        (alice.pk, "ops-write", 0),
        (bob.pk, "ops-write", 0),
        (None, "ops-admin", 0),
    }
    assert {e.details["credential"] for e in events} == {"management_token"}
    assert not ManagementToken.objects.filter(pk__in=[bound.pk, global_token.pk]).exists()


def test_the_event_and_the_delete_commit_together(alice):
    make_memory(alice, "I like tea")
    key_id = alice.pk

    with pytest.raises(RuntimeError), transaction.atomic():
        assert credential_delete(alice, actor=command_actor("shell")) == 1
        assert len(deletions()) == 1
        raise RuntimeError("the caller's transaction fails after the delete")

    assert ApiKey.objects.filter(pk=key_id).exists()
    assert Memory.objects.filter(owner_id=key_id).count() == 1
    assert deletions() == []
