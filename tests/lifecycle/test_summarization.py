"""Summarisation services: budget compaction (§5.1) and older-than compaction (§5.2), per owner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.models import ApiKey, Memory
from memory.services.summarization import (
    SUMMARY_IDS_KEY,
    generate_summary,
    summarize_all_owners,
    summarize_older_than,
    summarize_to_budget,
)
from tests.factories import fts_match, make_memory

pytestmark = pytest.mark.django_db


def days_ago(days: float):
    return timezone.now() - timedelta(days=days)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Alpha. Beta. Gamma. Delta.", "Alpha. Beta. Gamma."),
        ("One. Two. Three.", "One. Two. Three."),
        ("Wow! Really? Yes. No.", "Wow. Really. Yes."),
        ("no punctuation at all", "no punctuation at all"),
    ],
)
def test_generate_summary_keeps_the_first_three_sentences(content, expected):
    assert generate_summary(content) == expected


# -- budget compaction --------------------------------------------------------------------------------


def test_budget_keeps_the_newest_and_condenses_the_rest(alice):
    old = make_memory(alice, "Alpha. Beta. Gamma. Delta.", created_at=days_ago(2))
    new = make_memory(alice, "One. Two. Three. Four.", created_at=days_ago(1))
    result = summarize_to_budget(owner=alice, max_tokens=8)
    assert result == {"originalCount": 2, "summarizedCount": 1, "tokensSaved": 2, "dryRun": False}
    old.refresh_from_db()
    new.refresh_from_db()
    assert new.content == "One. Two. Three. Four."
    assert old.content == "Alpha. Beta. Gamma."
    assert old.needs_reindex is True
    assert fts_match('"delta"') == set()


def test_budget_zero_counts_short_entries_without_changing_them(alice):
    memory = make_memory(alice, "One. Two. Three.")
    assert summarize_to_budget(owner=alice, max_tokens=0) == {
        "originalCount": 1,
        "summarizedCount": 1,
        "tokensSaved": 0,
        "dryRun": False,
    }
    memory.refresh_from_db()
    assert memory.content == "One. Two. Three."


def test_budget_on_an_owner_without_memories_reports_zeros(alice):
    assert summarize_to_budget(owner=alice) == {
        "originalCount": 0,
        "summarizedCount": 0,
        "tokensSaved": 0,
        "dryRun": False,
    }


def test_budget_is_scoped_to_the_owner_and_the_session(alice, bob):
    text = "Alpha. Beta. Gamma. Delta. Epsilon."
    in_session = make_memory(alice, text, session_id="s1")
    other_session = make_memory(alice, text, session_id="s2")
    bobs = make_memory(bob, text)
    result = summarize_to_budget(owner=alice, session_id="s1", max_tokens=0)
    assert result["originalCount"] == 1
    for memory, expected in ((in_session, "Alpha. Beta. Gamma."), (other_session, text), (bobs, text)):
        memory.refresh_from_db()
        assert memory.content == expected


def test_budget_dry_run_changes_nothing(alice):
    memory = make_memory(alice, "Alpha. Beta. Gamma. Delta.")
    result = summarize_to_budget(owner=alice, max_tokens=0, dry_run=True)
    assert result["summarizedCount"] == 1 and result["tokensSaved"] > 0 and result["dryRun"] is True
    memory.refresh_from_db()
    assert memory.content == "Alpha. Beta. Gamma. Delta."


# -- older-than compaction ----------------------------------------------------------------------------


def five_old(owner, **fields):
    return [
        make_memory(
            owner,
            f"Old fact {i}. More. Even more. Too much.",
            key=f"fact:{i}",
            created_at=days_ago(40 + i),
            **fields,
        )
        for i in range(5)
    ]


def test_dry_run_reports_candidates_and_touches_nothing(alice):
    originals = five_old(alice)
    result = summarize_older_than(owner=alice, days=30, dry_run=True)
    assert [m.seq for m in result.candidates] == [m.seq for m in reversed(originals)]  # oldest first
    assert result.total_tokens > 0 and result.deleted_count == 0 and result.summary is None
    assert result.dry_run is True
    assert Memory.objects.filter(owner=alice).count() == 5


def test_a_real_run_replaces_the_originals_by_one_semantic_summary(alice):
    originals = five_old(alice)
    recent = make_memory(alice, "Recent fact.", key="recent")
    result = summarize_older_than(owner=alice, days=30)
    assert result.deleted_count == 5 and result.dry_run is False
    summary = Memory.objects.get(uuid=result.summary_id)
    assert summary.owner == alice and summary.type == "semantic"
    assert summary.content.splitlines()[0] == "Summary of 5 memories older than 30 days:"
    assert "[factual] fact:0: Old fact 0. More. Even more." in summary.content
    assert sorted(summary.metadata[SUMMARY_IDS_KEY]) == sorted(str(m.uuid) for m in originals)
    assert summary.metadata["summarizedCount"] == 5 and summary.metadata["olderThanDays"] == 30
    assert set(Memory.objects.filter(owner=alice).values_list("seq", flat=True)) == {recent.seq, summary.seq}
    assert fts_match('"old"') == {summary.seq}


def test_total_tokens_is_the_sum_over_candidates(alice):
    make_memory(alice, "a" * 40, created_at=days_ago(50))
    make_memory(alice, "b" * 9, created_at=days_ago(50))
    assert summarize_older_than(owner=alice, days=30, dry_run=True).total_tokens == 10 + 3


def test_only_rows_older_than_the_cutoff_are_candidates(alice):
    for age in (10, 20, 31, 45, 90):
        make_memory(alice, f"aged {age}", created_at=days_ago(age))
    result = summarize_older_than(owner=alice, days=30, dry_run=True)
    assert sorted(m.content for m in result.candidates) == ["aged 31", "aged 45", "aged 90"]


def test_nothing_to_do_reports_the_requested_dry_run(alice):
    make_memory(alice, "fresh")
    result = summarize_older_than(owner=alice, days=30)
    assert result.candidates == [] and result.summary is None and result.dry_run is False


def test_a_second_run_finds_nothing_and_summaries_are_not_summarised_again(alice):
    five_old(alice)
    first = summarize_older_than(owner=alice, days=30)
    later = timezone.now() + timedelta(days=90)
    second = summarize_older_than(owner=alice, days=30, now=later)
    assert first.deleted_count == 5
    assert second.candidates == [] and second.summary is None
    assert Memory.objects.filter(owner=alice).count() == 1


def test_expired_memories_are_not_resurrected_in_a_summary(alice):
    make_memory(alice, "expired secret", created_at=days_ago(60), expires_at=days_ago(1))
    assert summarize_older_than(owner=alice, days=30, dry_run=True).candidates == []


def test_dates_are_compared_as_datetimes_whatever_their_text_format(alice):
    """L14: rows written as 'YYYY-MM-DD HH:MM:SS' or '…T…Z' by other tools."""
    now = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)
    cutoff = now - timedelta(days=30)
    rows = {
        "space, 40 days": (now - timedelta(days=40), "%Y-%m-%d %H:%M:%S"),
        "iso, 40 days": (now - timedelta(days=40), "%Y-%m-%dT%H:%M:%SZ"),
        "iso, 29 days": (now - timedelta(days=29), "%Y-%m-%dT%H:%M:%SZ"),
        # Same calendar day as the cutoff: as text, "…-16T11:00" sorts after
        # "…-16 12:00" (T > space), so a string comparison calls the older row newer.
        "iso, an hour before the cutoff": (cutoff - timedelta(hours=1), "%Y-%m-%dT%H:%M:%S.000Z"),
        "space, an hour after the cutoff": (cutoff + timedelta(hours=1), "%Y-%m-%d %H:%M:%S"),
    }
    with connection.cursor() as cursor:
        for content, (when, fmt) in rows.items():
            seq = make_memory(alice, content).seq
            cursor.execute("UPDATE memories SET created_at = %s WHERE seq = %s", [when.strftime(fmt), seq])
    result = summarize_older_than(owner=alice, days=30, dry_run=True, now=now)
    assert [m.content for m in result.candidates] == [
        "space, 40 days",
        "iso, 40 days",
        "iso, an hour before the cutoff",
    ]


def test_all_owners_are_summarised_separately_never_merged(alice, bob):
    five_old(alice)
    make_memory(bob, "Bob's old fact.", created_at=days_ago(100))
    ApiKey.issue(name="carol")  # nothing to do for carol
    results = {r.owner.name: r for r in summarize_all_owners(days=30)}
    assert set(results) == {"alice", "bob", "carol"}
    assert results["alice"].deleted_count == 5 and results["bob"].deleted_count == 1
    assert results["carol"].summary is None
    for name in ("alice", "bob"):
        summary = results[name].summary
        assert summary.owner.name == name
        assert Memory.objects.filter(owner__name=name).count() == 1
    assert "Bob" not in results["alice"].summary.content


def test_budget_compaction_never_cuts_a_summary(alice):
    five_old(alice)
    summary = summarize_older_than(owner=alice, days=30).summary
    before = summary.content
    result = summarize_to_budget(owner=alice, max_tokens=0)
    summary.refresh_from_db()
    assert summary.content == before and result["summarizedCount"] == 0
