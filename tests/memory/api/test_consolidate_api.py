"""POST /api/memory/consolidate and /api/memory/consolidate/<run>/undo: owner-scoped, validated (400
naming the field), a dry run that writes nothing, an undo that puts the rows back; and the
``consolidate_memories`` command and the nightly task over the same service."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.conf import update_memory_settings
from memory.models import AuditEvent, ConsolidationRun, Memory
from memory.services.indexing import index_by_seqs
from memory.services.memories import MemoryInput, memory_create
from memory.tasks.consolidation import consolidate_memories_periodic

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def duplicates(owner) -> None:
    for i, text in enumerate(("I like tea", "The user likes tea", "I like coffee")):
        memory_create(MemoryInput(owner=owner, content=text, created_at=T0 + timedelta(days=i)))
    index_by_seqs(list(Memory.objects.filter(owner=owner).values_list("seq", flat=True)))


def contents(owner) -> list[str]:
    return sorted(Memory.objects.filter(owner=owner).values_list("content", flat=True))


def test_a_dry_run_answers_the_plan_and_writes_nothing(alice_api, alice):
    duplicates(alice)
    answer = alice_api.post("/api/memory/consolidate", {"dryRun": True})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["dryRun"] is True and body["mergedCount"] == 0
    [owner] = body["owners"]
    assert owner["apiKeyId"] == str(alice.pk) and owner["runId"] is None and owner["mergedCount"] == 1
    [group] = owner["groups"]
    assert group["survivor"]["content"] == "The user likes tea"
    assert [m["memory"]["content"] for m in group["merged"]] == ["I like tea"]
    assert group["merged"][0]["reason"] == "the same words"
    assert len(contents(alice)) == 3 and not ConsolidationRun.objects.exists()


def test_a_run_merges_and_its_undo_restores(alice_api, alice):
    duplicates(alice)
    body = alice_api.post("/api/memory/consolidate", {"apiKeyId": str(alice.pk)}).json()
    run_id = body["owners"][0]["runId"]
    assert body["mergedCount"] == 1 and run_id
    assert contents(alice) == ["I like coffee", "The user likes tea"]
    event = AuditEvent.objects.get(action="memory.consolidate")
    assert event.via == "rest" and event.actor_kind == "token"
    undone = alice_api.post(f"/api/memory/consolidate/{run_id}/undo")
    assert undone.status_code == 200, undone.content
    assert undone.json()["status"] == "undone" and undone.json()["merged"] == 1
    assert contents(alice) == ["I like coffee", "I like tea", "The user likes tea"]
    again = alice_api.post(f"/api/memory/consolidate/{run_id}/undo")
    assert again.status_code == 409 and again.json()["error"]["type"] == "conflict_error"


def test_a_key_reaches_only_its_own_owners(alice_api, alice, bob, admin_api):
    duplicates(alice)
    duplicates(bob)
    refused = alice_api.post("/api/memory/consolidate", {"apiKeyId": str(bob.pk)})
    assert refused.status_code == 404
    body = alice_api.post("/api/memory/consolidate", {}).json()
    assert [o["apiKeyId"] for o in body["owners"]] == [str(alice.pk)]
    assert len(contents(bob)) == 3
    run_id = body["owners"][0]["runId"]
    bob_run = admin_api.post("/api/memory/consolidate", {"apiKeyId": str(bob.pk)}).json()["owners"][0][
        "runId"
    ]
    assert alice_api.post(f"/api/memory/consolidate/{bob_run}/undo").status_code == 404
    assert alice_api.post(f"/api/memory/consolidate/{run_id}/undo").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"dryRun": "yes"}, "dryRun"),
        ({"dryRun": True, "surprise": 1}, "surprise"),
        ({"apiKeyId": 12}, "apiKeyId"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice_api, body, field):
    answer = alice_api.post("/api/memory/consolidate", body)
    assert answer.status_code == 400, answer.content
    assert field in {d["field"] for d in answer.json()["error"]["details"]}


def test_an_unknown_run_is_a_404_and_a_read_token_is_refused(alice_api, read_api):
    assert alice_api.post("/api/memory/consolidate/not-a-uuid/undo").status_code == 404
    missing = alice_api.post("/api/memory/consolidate/7f6b6c3e-8d55-4cc4-8d0e-3c6f7a3f9e21/undo")
    assert missing.status_code == 404 and missing.json()["error"]["details"][0]["field"] == "id"
    assert read_api.post("/api/memory/consolidate", {"dryRun": True}).status_code == 403


def test_the_command_dry_run_lists_the_groups_and_undo_restores(alice):
    duplicates(alice)
    out = StringIO()
    call_command("consolidate_memories", "--owner", str(alice.pk), "--dry-run", stdout=out)
    assert "would merge 1 group(s), 1 memories" in out.getvalue() and "merge " in out.getvalue()
    assert len(contents(alice)) == 3
    out = StringIO()
    call_command("consolidate_memories", "--owner", str(alice.pk), stdout=out)
    run = ConsolidationRun.objects.get()
    assert f"--undo {run.id}" in out.getvalue() and len(contents(alice)) == 2
    assert AuditEvent.objects.get(action="memory.consolidate").actor_name == "consolidate_memories"
    call_command("consolidate_memories", "--undo", str(run.id), stdout=StringIO())
    assert len(contents(alice)) == 3
    with pytest.raises(CommandError, match="undone already"):
        call_command("consolidate_memories", "--undo", str(run.id), stdout=StringIO())
    with pytest.raises(CommandError, match="not an API key id"):
        call_command("consolidate_memories", "--owner", "nope", stdout=StringIO())


def test_the_nightly_task_runs_only_while_the_setting_is_on(alice):
    duplicates(alice)
    assert consolidate_memories_periodic.call_local() == {"skipped": True}
    assert len(contents(alice)) == 3
    update_memory_settings({"consolidationEnabled": True})
    counts = consolidate_memories_periodic.call_local()
    assert counts["merged"] == 1 and counts["failed"] == 0
    assert AuditEvent.objects.get(action="memory.consolidate").actor_name == "memory.consolidate_memories"


def test_the_setting_is_exposed_and_validated(admin_api):
    assert admin_api.get("/api/settings/memory").json()["consolidationEnabled"] is False
    bad = admin_api.put("/api/settings/memory", {"consolidationEnabled": "on"})
    assert bad.status_code == 400 and bad.json()["error"]["details"][0]["field"] == "consolidationEnabled"
    assert admin_api.put("/api/settings/memory", {"consolidationEnabled": True}).status_code == 200
