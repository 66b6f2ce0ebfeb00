"""Summarisation of a key whose memories live with a provider: the services, the command and the
REST action read the provider's records, write the summary there, delete the originals there, and
audit it as for a native key. Real stores: the in-process one and Redis at 127.0.0.1:6379."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory import store
from memory.backends.base import MemoryDraft
from memory.models import AuditAction, AuditEvent, Memory
from memory.services.memories import MemoryInput
from memory.services.summarization import SUMMARY_IDS_KEY, summarize_older_than, summarize_to_budget
from tests.memory.providers import provider_keys
from tests.memory.providers.provider_keys import manager

pytestmark = pytest.mark.django_db

providers = provider_keys.providers  # the fixture
TYPES = ["inmemory", "redis"]


def seed(owner, content: str, *, days: float, **fields):
    """A record on the owner's provider created ``days`` ago (the contract keeps a given ``created_at``)."""
    record, _ = manager(owner).store(
        MemoryDraft(
            owner=owner.pk, content=content, created_at=timezone.now() - timedelta(days=days), **fields
        )
    )
    return record


@pytest.mark.parametrize("provider_type", TYPES)
def test_older_memories_become_one_summary_on_the_provider(providers, provider_type):
    alice, _ = providers.key(providers.provider(provider_type))
    old = [
        seed(
            alice,
            "Alice moved to Lisbon. She likes it. The weather is mild. Rent is high.",
            days=40,
            key="city",
        ),
        seed(alice, "Alice adopted a cat", days=35),
    ]
    recent = seed(alice, "Alice started a new job", days=2)

    preview = summarize_older_than(owner=alice, days=30, dry_run=True)
    assert [m.uuid for m in preview.candidates] == [r.id for r in old]
    assert preview.summary is None and len(store.all_records(manager(alice), alice.pk)) == 3

    result = summarize_older_than(owner=alice, days=30)

    left = {r.id: r for r in store.all_records(manager(alice), alice.pk)}
    assert result.deleted_count == 2 and set(left) == {recent.id, result.summary.uuid}
    summary = left[result.summary.uuid]
    assert summary.type == "semantic"
    assert summary.content == (
        "Summary of 2 memories older than 30 days:\n"
        "[factual] city: Alice moved to Lisbon. She likes it. The weather is mild.\n"
        "[factual] Alice adopted a cat"
    )
    assert summary.metadata[SUMMARY_IDS_KEY] == [str(r.id) for r in old]
    assert not Memory.objects.exists()
    event = AuditEvent.objects.get(action=AuditAction.MEMORY_SUMMARIZE)
    assert (event.owner_id, event.count) == (alice.pk, 2)
    assert event.details == {"olderThanDays": 30, "summaryId": str(result.summary.uuid)}

    # A summary is never summarised again, however old it gets.
    later = summarize_older_than(owner=alice, days=30, now=timezone.now() + timedelta(days=90), dry_run=True)
    assert [m.uuid for m in later.candidates] == [recent.id]


@pytest.mark.parametrize("provider_type", TYPES)
def test_a_budget_condenses_the_oldest_records_on_the_provider(providers, provider_type):
    alice, _ = providers.key(providers.provider(provider_type))
    old = seed(alice, "Alpha. Beta. Gamma. Delta.", days=2, key="greek")
    new = seed(alice, "One. Two. Three. Four.", days=1)

    result = summarize_to_budget(owner=alice, max_tokens=8)

    assert result == {"originalCount": 2, "summarizedCount": 1, "tokensSaved": 2, "dryRun": False}
    contents = {r.id: r.content for r in store.all_records(manager(alice), alice.pk)}
    assert contents == {old.id: "Alpha. Beta. Gamma.", new.id: "One. Two. Three. Four."}
    event = AuditEvent.objects.get(action=AuditAction.MEMORY_COMPACT)
    assert (event.owner_id, event.count, event.details["tokensSaved"]) == (alice.pk, 1, 2)
    assert not Memory.objects.exists()


def test_a_condensed_record_keeps_a_vector_of_its_new_text(providers):
    alice, _ = providers.key(providers.provider("inmemory"))
    bees = "Alice keeps bees. She sells honey. She has ten hives. They are loud."
    store.memory_create(MemoryInput(owner=alice, content=bees, key="hobby:bees"))
    store.memory_create(MemoryInput(owner=alice, content="Alice plays chess on Sundays", key="hobby:chess"))

    summarize_to_budget(owner=alice, max_tokens=7)

    result = store.retrieve(owner_ids=frozenset({alice.pk}), query="honey bees hives", strategy="semantic")
    assert result.resolution["rankings"] == ["vector"]
    assert [h.memory.content for h in result.hits][:1] == [
        "Alice keeps bees. She sells honey. She has ten hives."
    ]


def test_the_rest_action_summarises_a_provider_key(providers, admin_api):
    alice, _ = providers.key(providers.provider("redis"))
    old = seed(alice, "Alice lived in Porto", days=60)

    body = admin_api.post("/api/memory/summarize", {"apiKeyId": str(alice.pk), "olderThanDays": 30}).json()

    assert body["deletedCount"] == 1 and body["dryRun"] is False
    [summary] = store.all_records(manager(alice), alice.pk)
    assert str(summary.id) == body["summaryId"]
    assert summary.metadata[SUMMARY_IDS_KEY] == [str(old.id)]


def test_the_command_summarises_a_provider_key_and_fails_only_the_key_whose_provider_is_down(
    providers, capsys
):
    alice, _ = providers.key(providers.provider("inmemory"), name="alice")
    seed(alice, "Alice lived in Porto", days=60)
    bob, _ = providers.key(providers.down_redis(), name="bob")

    with pytest.raises(CommandError, match=str(bob.pk)):
        call_command("summarize_memories", "--older-than-days", "30")

    out, err = capsys.readouterr()
    assert f"{alice.pk} (alice): summarised 1 memories older than 30 days" in out
    assert f"{bob.pk} (bob): FAILED: BackendUnavailable" in err
    [summary] = store.all_records(manager(alice), alice.pk)
    assert summary.content == "Summary of 1 memories older than 30 days:\n[factual] Alice lived in Porto"
