"""The audit log of destructive operations: every interface (REST, MCP, Studio, admin, commands, the
nightly task) records who deleted, cleared, summarised, revoked or changed settings, how many rows,
in the same transaction as the change; ``GET /api/audit`` and the Studio's Audit tab show them,
owner-scoped; old events are pruned by the lifecycle task."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from memory.mcp.tools import clear_memories
from memory.models import ApiKey, AuditEvent, ManagementToken, Memory
from memory.services.audit import SYSTEM, record
from memory.services.auth import authenticate_token
from memory.services.memories import memory_delete
from memory.tasks.lifecycle import summarize_memories_periodic
from tests.conftest import Api
from tests.dashboard.conftest import StudioClient
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123")


@pytest.fixture
def staff_user(db):
    return get_user_model().objects.create_user("operator", "op@example.com", "pw-op-123", is_staff=True)


def events(**filters) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(**filters).order_by("id"))


def admin_token(name: str = "ops-admin") -> tuple[ManagementToken, str]:
    return ManagementToken.issue(name=name, scope="admin")


def old(owner: ApiKey, days: int = 40, content: str = "I prefer tea") -> Memory:
    return make_memory(owner, content, created_at=timezone.now() - timedelta(days=days))


# -- who, what, how many: one event per destructive operation -----------------------------------------


def test_a_rest_delete_records_the_token_the_owner_and_the_memory(alice):
    token, secret = admin_token()
    memory = make_memory(alice, "I live in Lisbon", key="home")
    assert Api(secret).delete(f"/api/memory/{memory.uuid}").status_code == 200
    (event,) = events(action="memory.delete")
    assert (event.actor_kind, event.actor_id, event.actor_name, event.via) == (
        "token",
        str(token.pk),
        "ops-admin",
        "rest",
    )
    assert event.owner_id == alice.pk and event.count == 1
    assert event.details == {"id": str(memory.uuid), "key": "home", "type": "factual"}


def test_an_mcp_clear_records_how_many_it_deleted_and_a_dry_run_records_nothing(alice):
    for text in ("I like jazz", "I like rock", "I like folk"):
        make_memory(alice, text)
    _, secret = ManagementToken.issue(name="mcp-writer", scope="write", owners=[alice])
    _, principal = authenticate_token(secret)
    clear_memories(principal, dry_run=True)
    assert events() == []
    clear_memories(principal)
    (event,) = events()
    assert (event.action, event.actor_name, event.via, event.owner_id, event.count) == (
        "memory.clear",
        "mcp-writer",
        "mcp",
        alice.pk,
        3,
    )
    assert event.details["matched"] == 3


def test_a_rest_summarize_records_one_event_per_owner(alice, bob):
    old(alice)
    old(alice, content="I drive a Volvo")
    old(bob)
    _, secret = admin_token()
    reply = Api(secret).post("/api/memory/summarize", {"olderThanDays": 30})
    assert reply.status_code == 200, reply.content
    counts = {e.owner_id: e.count for e in events(action="memory.summarize")}
    assert counts == {alice.pk: 2, bob.pk: 1}
    summary_ids = set(reply.json()["summaryIds"])
    assert {e.details["summaryId"] for e in events(action="memory.summarize")} == summary_ids


def test_the_summarize_command_and_the_nightly_task_name_themselves(alice, bob):
    old(alice)
    call_command("summarize_memories", "--older-than-days", "30", stdout=io.StringIO())
    (event,) = events(action="memory.summarize")
    assert (event.actor_kind, event.actor_name, event.via) == ("command", "summarize_memories", "command")
    from memory.conf import update_memory_settings

    update_memory_settings({"autoSummarize": True, "retentionDays": 30})
    old(bob)
    summarize_memories_periodic.call_local()
    event = events(action="memory.summarize", owner_id=bob.pk)[0]
    assert (event.actor_kind, event.actor_name, event.via) == ("system", "memory.summarize_memories", "task")


def test_a_settings_change_records_what_changed_and_masks_secrets(db):
    _, secret = admin_token("settings-admin")
    api = Api(secret)
    assert api.put("/api/settings/memory", {"maxTokens": 1234, "enabled": True}).status_code == 200
    (event,) = events(action="settings.change")
    assert event.owner_id is None and event.count == 2
    assert event.details["group"] == "memory"
    assert event.details["changed"]["maxTokens"]["to"] == 1234
    # The same values again change nothing: no event.
    assert api.put("/api/settings/memory", {"maxTokens": 1234}).status_code == 200
    assert len(events(action="settings.change")) == 1
    reply = api.put("/api/settings/qdrant", {"apiKey": "qd-secret-value", "collection": "audited"})
    assert reply.status_code == 200, reply.content
    qdrant = events(action="settings.change")[-1]
    assert qdrant.details["group"] == "qdrant"
    assert qdrant.details["changed"]["apiKey"] == {"from": None, "to": "•••"}
    assert "qd-secret-value" not in json.dumps(qdrant.details)


def test_the_admin_bulk_delete_and_revocation_record_the_staff_user(alice, bob, admin_user):
    client = StudioClient()
    client.force_login(admin_user)
    rows = [
        make_memory(alice, "I like tea"),
        make_memory(alice, "I like figs"),
        make_memory(bob, "I like oat"),
    ]
    reply = client.post(
        "/admin/memory/memory/",
        {"action": "delete_selected", "_selected_action": [m.pk for m in rows], "post": "yes"},
    )
    assert reply.status_code == 302
    assert not Memory.objects.filter(pk__in=[m.pk for m in rows]).exists()
    counts = {e.owner_id: e.count for e in events(action="memory.bulk_delete")}
    assert counts == {alice.pk: 2, bob.pk: 1}
    assert {(e.actor_kind, e.actor_name, e.via) for e in events()} == {("user", "root", "admin")}

    now = timezone.localtime()
    reply = client.post(
        f"/admin/memory/apikey/{bob.pk}/change/",
        {
            "name": "bob",
            "revoked_at_0": now.strftime("%Y-%m-%d"),
            "revoked_at_1": now.strftime("%H:%M:%S"),
        },
    )
    assert reply.status_code == 302, reply.content.decode()[:2000]
    bob.refresh_from_db()
    assert bob.revoked_at is not None
    (event,) = events(action="credential.revoke")
    assert (event.owner_id, event.actor_name, event.details["credential"]) == (bob.pk, "root", "api_key")


def test_the_event_is_in_the_same_transaction_as_the_change(alice):
    memory = make_memory(alice, "I live in Porto")
    with pytest.raises(RuntimeError), transaction.atomic():
        memory_delete(memory, actor=SYSTEM)
        assert len(events(action="memory.delete")) == 1
        raise RuntimeError("the caller's transaction fails after the delete")
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert events() == []


# -- GET /api/audit ---------------------------------------------------------------------------------


def test_the_api_lists_filters_and_pages_the_events(alice, bob):
    _, secret = admin_token()
    api = Api(secret)
    api.delete(f"/api/memory/{make_memory(alice, 'I like tea').uuid}")
    api.delete(f"/api/memory/{make_memory(bob, 'I like figs').uuid}")
    api.put("/api/settings/memory", {"maxTokens": 999})
    body = api.get("/api/audit").json()
    assert body["total"] == 3
    assert [e["action"] for e in body["data"]] == ["settings.change", "memory.delete", "memory.delete"]
    assert body["data"][1]["apiKeyId"] == str(bob.pk)
    assert body["data"][1]["actor"] == {
        "kind": "token",
        "id": body["data"][1]["actor"]["id"],
        "name": "ops-admin",
        "via": "rest",
    }
    only_alice = api.get("/api/audit", {"apiKeyId": str(alice.pk)}).json()
    assert [(e["action"], e["apiKeyId"]) for e in only_alice["data"]] == [("memory.delete", str(alice.pk))]
    settings_only = api.get("/api/audit", {"action": "settings.change"}).json()
    assert (
        settings_only["total"] == 1
        and settings_only["data"][0]["details"]["changed"]["maxTokens"]["to"] == 999
    )
    page = api.get("/api/audit", {"limit": 1, "offset": 1}).json()
    assert (page["total"], len(page["data"]), page["data"][0]["apiKeyId"]) == (3, 1, str(bob.pk))


@pytest.mark.parametrize(
    ("params", "field"),
    [({"action": "memory.explode"}, "action"), ({"apiKeyId": "nope"}, "apiKeyId"), ({"limit": 0}, "limit")],
)
def test_the_api_refuses_bad_filters_naming_the_field(db, params, field):
    _, secret = admin_token()
    reply = Api(secret).get("/api/audit", params)
    assert reply.status_code == 400
    assert [d["field"] for d in reply.json()["error"]["details"]] == [field]


def test_the_api_is_for_global_administrators_only(alice):
    record(actor=SYSTEM, action="memory.delete", owner_id=alice.pk, count=1)
    _, bound_admin = ManagementToken.issue(name="alice-admin", scope="admin", owners=[alice])
    _, writer = ManagementToken.issue(name="alice-writer", scope="write", owners=[alice])
    assert Api(bound_admin).get("/api/audit").status_code == 403
    assert Api(writer).get("/api/audit").status_code == 403
    assert Api(None).get("/api/audit").status_code == 401


# -- the Studio's Audit tab -------------------------------------------------------------------------


def test_the_studio_shows_the_selected_owners_events_and_all_of_them_to_a_superuser(alice, bob, admin_user):
    studio = StudioClient()
    studio.force_login(admin_user)
    memory_delete(make_memory(alice, "I like tea", key="drink"), actor=SYSTEM)
    memory_delete(make_memory(bob, "I like figs", key="fruit"), actor=SYSTEM)
    record(actor=SYSTEM, action="settings.change", count=1, details={"group": "memory"})

    page = studio.get("/dashboard/memory", {"tab": "audit", "owner": str(alice.pk)}).content.decode()
    assert page.count('class="audit-row"') == 1
    assert "drink" in page and "fruit" not in page and "settings.change</code>" not in page

    everything = studio.get("/dashboard/memory", {"tab": "audit", "owner": "all"}).content.decode()
    assert everything.count('class="audit-row"') == 3
    assert "fruit" in everything and "settings.change</code>" in everything

    filtered = studio.hx_get("/dashboard/memory/audit", {"owner": "all", "action": "settings.change"})
    assert filtered.status_code == 200
    assert filtered.content.decode().count('class="audit-row"') == 1


def test_a_staff_user_who_cannot_choose_all_owners_sees_one_owner_only(alice, bob, staff_user):
    studio = StudioClient()
    studio.force_login(staff_user)
    memory_delete(make_memory(bob, "I like figs", key="fruit"), actor=SYSTEM)
    record(actor=SYSTEM, action="settings.change", count=1, details={"group": "memory"})
    page = studio.get("/dashboard/memory", {"tab": "audit", "owner": "all"}).content.decode()
    # "all" is refused to a non-superuser: the page falls back to one owner (alice, the first).
    assert 'class="audit-row"' not in page and "No audit events" in page


# -- retention --------------------------------------------------------------------------------------


@override_settings(MEMORY_AUDIT_RETENTION_DAYS=30)
def test_the_lifecycle_task_prunes_events_past_their_retention(alice):
    kept = record(actor=SYSTEM, action="memory.delete", owner_id=alice.pk, count=1)
    gone = record(actor=SYSTEM, action="memory.delete", owner_id=alice.pk, count=1)
    AuditEvent.objects.filter(pk=gone.pk).update(at=timezone.now() - timedelta(days=31))
    summarize_memories_periodic.call_local()  # autoSummarize is off: the pruning still runs
    assert [e.pk for e in events()] == [kept.pk]
