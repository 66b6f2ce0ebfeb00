"""summarize_memories on fresh data: ``--older-than-hours N``, and an age of 0 (every memory) behind a
typed confirmation on a terminal or ``--yes``, for native keys and for a key on a provider."""

from __future__ import annotations

import io
import sys
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory import store
from memory.backends.base import MemoryDraft
from memory.models import AuditAction, AuditEvent, Memory
from memory.services.summarization import SUMMARY_IDS_KEY, summarize_older_than
from tests.factories import make_memory
from tests.memory.providers import provider_keys
from tests.memory.providers.provider_keys import manager

pytestmark = pytest.mark.django_db

providers = provider_keys.providers  # the fixture


class Terminal(io.StringIO):
    """What the operator types, on a stream that says it is a terminal (as a shell's stdin does)."""

    def isatty(self) -> bool:
        return True


def run(*args: str) -> tuple[list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("summarize_memories", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


def aged(owner, content: str, **age):
    return make_memory(owner, content, created_at=timezone.now() - timedelta(**age))


def test_older_than_hours_summarises_memories_of_the_last_day(alice):
    two_hours = aged(alice, "I moved to Porto. It rains a lot. The food is great. Rent is fine.", hours=2)
    recent = aged(alice, "I bought a bike", minutes=10)

    lines, _ = run("--older-than-hours", "1")

    summary = Memory.objects.get(owner=alice, type="semantic")
    assert lines == [
        f"{alice.pk} (alice): summarised 1 memories older than 1 hours (17 tokens) into {summary.uuid}; deleted 1"
    ]
    assert summary.content == (
        "Summary of 1 memories older than 1 hours:\n[factual] I moved to Porto. It rains a lot. The food is great."
    )
    assert summary.metadata[SUMMARY_IDS_KEY] == [str(two_hours.uuid)]
    assert (summary.metadata["olderThanDays"], summary.metadata["olderThanHours"]) == (0, 1)
    assert set(Memory.objects.filter(owner=alice).values_list("uuid", flat=True)) == {
        recent.uuid,
        summary.uuid,
    }
    event = AuditEvent.objects.get(action=AuditAction.MEMORY_SUMMARIZE)
    assert event.details == {"olderThanDays": 0, "olderThanHours": 1, "summaryId": str(summary.uuid)}


def test_older_than_hours_dry_run_changes_nothing(alice):
    aged(alice, "I play chess on Sundays", hours=5)
    lines, _ = run("--older-than-hours", "3", "--dry-run")
    assert lines == [
        f"{alice.pk} (alice): would summarise 1 memories older than 3 hours (6 tokens) (dry run)"
    ]
    assert Memory.objects.get(owner=alice).type == "factual"


def test_zero_days_with_yes_summarises_every_memory_per_key(alice, bob):
    aged(alice, "I prefer tea", days=3)
    just_now = make_memory(alice, "I prefer green tea now")
    bobs = make_memory(bob, "Bob likes espresso")

    lines, _ = run("--older-than-days", "0", "--yes")

    alice_summary = Memory.objects.get(owner=alice)
    bob_summary = Memory.objects.get(owner=bob)
    assert lines == [
        f"{alice.pk} (alice): summarised 2 memories older than 0 days (9 tokens) into {alice_summary.uuid}; "
        "deleted 2",
        f"{bob.pk} (bob): summarised 1 memories older than 0 days (5 tokens) into {bob_summary.uuid}; deleted 1",
    ]
    assert str(just_now.uuid) in alice_summary.metadata[SUMMARY_IDS_KEY]
    # Never merged across keys: each summary lists only its own key's memories.
    assert bob_summary.metadata[SUMMARY_IDS_KEY] == [str(bobs.uuid)]
    assert "espresso" not in alice_summary.content and "tea" not in bob_summary.content


def test_zero_hours_is_an_age_of_zero_too(alice):
    make_memory(alice, "I prefer tea")
    with pytest.raises(CommandError, match="pass --yes"):
        run("--older-than-hours", "0")
    assert Memory.objects.get(owner=alice).type == "factual"


def test_zero_days_without_a_terminal_refuses_and_keeps_everything(alice, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("yes\n"))  # a pipe: not a terminal, even saying yes
    make_memory(alice, "I prefer tea")
    with pytest.raises(CommandError, match="no terminal to confirm it on: pass --yes"):
        run("--older-than-days", "0")
    assert Memory.objects.get(owner=alice).type == "factual"


def test_zero_days_on_a_terminal_goes_on_when_yes_is_typed(alice, monkeypatch):
    monkeypatch.setattr(sys, "stdin", Terminal("yes\n"))
    make_memory(alice, "I prefer tea")

    lines, _ = run("--older-than-days", "0")

    summary = Memory.objects.get(owner=alice)
    assert lines[0] == (
        "An age of 0 summarises every memory of 1 API key(s), however new, into one summary per key. "
        f"Type 'yes' to go on: {alice.pk} (alice): summarised 1 memories older than 0 days (3 tokens) "
        f"into {summary.uuid}; deleted 1"
    )
    assert summary.type == "semantic"


@pytest.mark.parametrize("typed", ["no\n", "\n", ""])
def test_zero_days_on_a_terminal_stops_unless_yes_is_typed(alice, monkeypatch, typed):
    monkeypatch.setattr(sys, "stdin", Terminal(typed))
    make_memory(alice, "I prefer tea")
    with pytest.raises(CommandError, match="not confirmed: nothing was summarised"):
        run("--older-than-days", "0")
    assert Memory.objects.get(owner=alice).type == "factual"
    assert not AuditEvent.objects.filter(action=AuditAction.MEMORY_SUMMARIZE).exists()


def test_zero_days_dry_run_asks_nothing(alice, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    make_memory(alice, "I prefer tea")
    lines, _ = run("--older-than-days", "0", "--dry-run")
    assert lines == [f"{alice.pk} (alice): would summarise 1 memories older than 0 days (3 tokens) (dry run)"]


def test_the_default_stays_thirty_days(alice):
    aged(alice, "I prefer tea", days=29)
    assert run()[0] == [f"{alice.pk} (alice): nothing older than 30 days"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than-hours", "8761"], "must be between 0 and 8760"),
        (["--older-than-hours", "-1"], "must be between 0 and 8760"),
        (["--older-than-hours", "soon"], "must be between 0 and 8760"),
        (["--older-than-days", "2", "--older-than-hours", "3"], "not allowed with argument"),
    ],
)
def test_bad_ages_are_clear_errors(alice, args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)


def test_the_service_cutoff_adds_days_and_hours(alice):
    now = timezone.now()
    inside = aged(alice, "older than a day and two hours", days=1, hours=3)
    aged(alice, "a day and one hour old", days=1, hours=1)
    result = summarize_older_than(owner=alice, days=1, hours=2, now=now, dry_run=True)
    assert [m.uuid for m in result.candidates] == [inside.uuid]
    assert result.age == "1 days 2 hours"
    assert summarize_older_than(owner=alice, days=0, now=now, dry_run=True).age == "0 days"


def test_a_key_on_a_provider_is_summarised_there_by_hours(providers):
    alice, _ = providers.key(providers.provider("inmemory"))
    old, _ = manager(alice).store(
        MemoryDraft(
            owner=alice.pk, content="Alice flies to Oslo", created_at=timezone.now() - timedelta(hours=4)
        )
    )
    fresh, _ = manager(alice).store(MemoryDraft(owner=alice.pk, content="Alice lands at noon"))

    lines, _ = run("--older-than-hours", "2", "--api-key", str(alice.pk))

    left = {r.id: r for r in store.all_records(manager(alice), alice.pk)}
    summary = next(r for r in left.values() if SUMMARY_IDS_KEY in r.metadata)
    assert set(left) == {fresh.id, summary.id}
    assert summary.content == "Summary of 1 memories older than 2 hours:\n[factual] Alice flies to Oslo"
    assert summary.metadata[SUMMARY_IDS_KEY] == [str(old.id)]
    assert lines[0].startswith(f"{alice.pk} ({alice.name}): summarised 1 memories older than 2 hours")
    assert not Memory.objects.exists()  # nothing was written to the native store
