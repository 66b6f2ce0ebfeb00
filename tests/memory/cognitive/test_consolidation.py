"""Consolidation (memory.services.consolidation over memory.cognitive.consolidation's rules): the
near-duplicates of one owner merged into the richest copy, the look-alikes left alone, an undo that
puts every row back exactly (FTS and vectors included), and a failure midway that loses nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from memory.cognitive.consolidation import Candidate, same_fact
from memory.exceptions import Conflict
from memory.models import (
    AuditEvent,
    ConsolidationRun,
    Contradiction,
    Memory,
    MemorySlot,
)
from memory.services import audit
from memory.services.consolidation import (
    consolidate,
    consolidation_plan,
    consolidation_undo,
    row_json,
)
from memory.services.indexing import index_by_seqs
from memory.services.memories import MemoryInput, memory_create, memory_update
from memory.vectorstores.sqlite_vec import SqliteVecStore
from tests.factories import fts_match

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)

# Each tuple is one fact said several times (the richest copy first); the survivor must be it.
DUPLICATES = [
    ("The user likes tea", "i like tea.", "I like tea"),
    ("I work at Google as a software engineer", "I work at Google"),
    ("I am allergic to peanuts", "I'm allergic to peanuts"),
    ("We have two cats named Tom and Jerry", "We have two cats, Tom and Jerry"),
    ("my favourite band is Radiohead!", "My favourite band is Radiohead"),
    ("My daughter Emma started school in Lyon in September", "My daughter Emma started school in Lyon"),
    ("I reside in Berlin", "I live in Berlin"),
]
# Look-alikes that are different facts: none of these may be merged with anything.
LOOK_ALIKES = [
    "I like coffee",
    "I prefer dark mode",
    "I prefer dark mode in my code editor",
    "I am allergic to peanuts and shellfish",
    "My son Leo started school in Lyon",
    "I like green tea",
    "My sister likes tea",
    "I don't like jazz",
    "I like jazz",
    "I love dogs",
    "I love cats",
    "I visited Paris in May",
    "I visited Rome in May",
    "I might work at Google one day",
    "Bob's wife likes tea",
]


def write(owner, content: str, *, at: datetime, **fields) -> Memory:
    memory, _ = memory_create(MemoryInput(owner=owner, content=content, created_at=at, **fields))
    return memory


def embed(owner) -> None:
    index_by_seqs(list(Memory.objects.filter(owner=owner).values_list("seq", flat=True)))


@pytest.fixture
def corpus(alice):
    """alice's memories: the known duplicates and the look-alikes, a day apart, embedded."""
    at = T0
    for texts in DUPLICATES:
        for text in texts:
            write(alice, text, at=at)
            at += timedelta(days=1)
    for text in LOOK_ALIKES:
        write(alice, text, at=at)
        at += timedelta(days=1)
    embed(alice)
    return alice


def contents(owner) -> set[str]:
    return set(Memory.objects.filter(owner=owner).values_list("content", flat=True))


def snapshot(owner) -> dict[int, dict]:
    rows = {}
    for memory in Memory.objects.filter(owner=owner):
        shown = row_json(memory)
        rows[memory.seq] = shown
    return rows


def test_the_dry_run_finds_every_known_group_and_writes_nothing(corpus):
    before = snapshot(corpus)
    plan = consolidate(corpus, dry_run=True)
    found = {(g.survivor.content, frozenset(m.content for m in g.merged)) for g in plan.groups}
    expected = {(texts[0], frozenset(texts[1:])) for texts in DUPLICATES}
    assert found == expected
    current = Memory.objects.filter(owner=corpus, valid_to__isnull=True).count()
    assert plan.considered == current and plan.without_vector == 0
    assert plan.run is None and plan.dry_run
    assert snapshot(corpus) == before
    assert not ConsolidationRun.objects.exists() and not AuditEvent.objects.filter(
        action="memory.consolidate"
    )


def test_look_alikes_are_never_merged(corpus):
    plan = consolidate(corpus)
    merged_or_kept = {m.content for g in plan.groups for m in (g.survivor, *g.merged)}
    assert not merged_or_kept & set(LOOK_ALIKES)
    assert set(LOOK_ALIKES) <= contents(corpus)


@pytest.mark.parametrize(
    ("rich", "poor"),
    [
        ("I like coffee", "I like tea"),
        ("I like green tea", "I like tea"),
        ("My sister likes tea", "I like tea"),
        ("Bob's wife likes tea", "Bob likes tea"),
        ("I don't like cats", "I like cats"),
        ("I used to live in Berlin", "I live in Berlin"),
        ("I might move to Berlin", "I moved to Berlin"),
        ("Do I like tea?", "I like tea"),
    ],
)
def test_the_rules_refuse_pairs_that_are_different_facts(rich, poor):
    def candidate(seq, text):
        return Candidate(seq=seq, content=text, key=None, type="factual", created_at=T0)

    assert same_fact(candidate(1, rich), candidate(2, poor)) is None


def test_a_run_merges_each_group_into_its_richest_copy(alice):
    rich = write(alice, "I work at Google as a software engineer", at=T0, session_id="s1", importance=0.4)
    poor = write(
        alice,
        "I work at Google",
        at=T0 + timedelta(days=2),
        session_id="s2",
        importance=0.9,
        metadata={"source": "chat", "confidence": "high"},
    )
    Memory.objects.filter(seq=rich.seq).update(access_count=3)
    Memory.objects.filter(seq=poor.seq).update(access_count=4)
    embed(alice)
    plan = consolidate(alice, actor=audit.command_actor("test"))
    assert plan.run is not None and plan.merged_count == 1
    survivor = Memory.objects.get(owner=alice)
    assert survivor.seq == rich.seq and survivor.content == "I work at Google as a software engineer"
    assert survivor.importance == 0.9 and survivor.access_count == 7
    assert survivor.metadata["sessionsSeen"] == ["s1", "s2"]
    assert survivor.metadata["consolidatedFrom"] == [str(poor.uuid)]
    assert survivor.metadata["confidence"] == "high"
    assert fts_match("google") == {rich.seq}
    assert poor.seq not in SqliteVecStore().seqs() and rich.seq in SqliteVecStore().seqs()
    event = AuditEvent.objects.get(action="memory.consolidate")
    assert (event.owner_id, event.count, event.details["run"]) == (alice.pk, 1, str(plan.run.id))


def test_undo_puts_every_row_back_exactly_fts_and_vectors_included(corpus):
    before = snapshot(corpus)
    slots_before = sorted(MemorySlot.objects.filter(owner=corpus).values_list("memory_id", "slot"))
    vectors_before = SqliteVecStore().seqs()
    plan = consolidate(corpus)
    assert plan.merged_count == sum(len(t) - 1 for t in DUPLICATES)
    assert len(snapshot(corpus)) == len(before) - plan.merged_count
    consolidation_undo(plan.run, actor=audit.command_actor("test"))
    assert snapshot(corpus) == before
    assert sorted(MemorySlot.objects.filter(owner=corpus).values_list("memory_id", "slot")) == slots_before
    assert SqliteVecStore().seqs() == vectors_before
    restored = Memory.objects.get(owner=corpus, content="I'm allergic to peanuts")
    assert restored.seq in fts_match("peanuts")
    plan.run.refresh_from_db()
    assert plan.run.status == "undone"
    assert AuditEvent.objects.filter(action="memory.consolidate_undo", owner_id=corpus.pk).count() == 1
    # Undone once: a second undo is refused.
    with pytest.raises(Conflict):
        consolidation_undo(plan.run)


def test_a_failure_midway_leaves_every_fact_present(corpus):
    before = snapshot(corpus)
    victim = Memory.objects.get(owner=corpus, content="I'm allergic to peanuts")
    # A real fault: the database refuses to delete one of the merged-away rows, after the survivors
    # were written.
    # Made inside the test's transaction, so it goes with it.
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION test_refuse_delete() RETURNS trigger AS $$ BEGIN "
                f"IF OLD.seq = {victim.seq} THEN RAISE EXCEPTION 'refused'; END IF; RETURN OLD; END $$ "
                "LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER test_refuse_delete BEFORE DELETE ON memories "
                "FOR EACH ROW EXECUTE FUNCTION test_refuse_delete()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER test_refuse_delete BEFORE DELETE ON memories "
                f"WHEN old.seq = {victim.seq} BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
    with pytest.raises(Exception, match="refused"):
        consolidate(corpus)
    assert snapshot(corpus) == before
    assert not ConsolidationRun.objects.exists()
    assert not AuditEvent.objects.filter(action="memory.consolidate").exists()


def test_contradictions_it_can_settle_are_resolved_and_undo_reopens_them(alice):
    tea = write(alice, "I like tea", at=T0)
    user_tea = write(alice, "The user likes tea", at=T0 + timedelta(days=1))
    leeds = write(alice, "I live in Leeds", at=T0 + timedelta(days=2))
    embed(alice)
    inside = Contradiction.objects.create(owner=alice, old=tea, new=user_tea, verdict="ambiguous")
    outside = Contradiction.objects.create(owner=alice, old=user_tea, new=leeds, verdict="ambiguous")
    plan = consolidate(alice)
    [group] = plan.groups
    survivor = group.survivor
    inside.refresh_from_db()
    outside.refresh_from_db()
    assert (inside.status, inside.resolution) == ("resolved", "consolidated")
    assert inside.old_id == inside.new_id == survivor.seq
    # A contradiction with a third memory follows the survivor and stays open.
    assert outside.status == "open" and outside.old_id == survivor.seq and outside.new_id == leeds.seq
    assert plan.run.resolved == 1
    consolidation_undo(plan.run)
    inside.refresh_from_db()
    outside.refresh_from_db()
    assert (inside.status, inside.resolution, inside.old_id, inside.new_id) == (
        "open",
        "",
        tea.seq,
        user_tea.seq,
    )
    assert (outside.old_id, outside.new_id) == (user_tea.seq, leeds.seq)


def test_an_open_contradiction_whose_side_was_superseded_is_resolved(alice):
    old = write(alice, "I live in Leeds", at=T0)
    other = write(alice, "I like tea", at=T0 + timedelta(days=1))
    write(alice, "The user likes tea", at=T0 + timedelta(days=2))
    stale = Contradiction.objects.create(owner=alice, old=old, new=other, verdict="ambiguous")
    Memory.objects.filter(seq=old.seq).update(valid_to=T0 + timedelta(days=3))
    embed(alice)
    plan = consolidate(alice)
    stale.refresh_from_db()
    assert stale.status == "resolved" and stale.resolution == "consolidated"
    assert plan.run.resolved == 1


def test_undo_refuses_a_survivor_edited_since(alice):
    write(alice, "I like tea", at=T0)
    write(alice, "The user likes tea", at=T0 + timedelta(days=1))
    embed(alice)
    plan = consolidate(alice)
    memory_update(plan.groups[0].survivor, content="I like tea with milk")
    with pytest.raises(Conflict, match="edited since"):
        consolidation_undo(plan.run)
    assert Memory.objects.filter(owner=alice).count() == 1


def test_a_merged_away_key_is_adopted_so_a_later_upsert_finds_the_survivor(alice):
    write(alice, "my favourite band is Radiohead!", at=T0)
    keyed = write(alice, "My favourite band is Radiohead", at=T0 + timedelta(days=1), key="favourite:band")
    embed(alice)
    plan = consolidate(alice)
    survivor = Memory.objects.get(owner=alice)
    assert survivor.key == "favourite:band" and survivor.content == "my favourite band is Radiohead!"
    assert survivor.seq in fts_match("band")
    consolidation_undo(plan.run)
    assert Memory.objects.get(seq=keyed.seq).key == "favourite:band"
    assert Memory.objects.get(seq=survivor.seq).key is None
    consolidate(alice)
    again, created = memory_create(
        MemoryInput(owner=alice, content="My favourite band is Radiohead", key="favourite:band")
    )
    assert not created and again.seq == survivor.seq


def test_owners_are_consolidated_apart(alice, bob):
    write(alice, "I like tea", at=T0)
    write(bob, "I like tea", at=T0)
    write(bob, "The user likes tea", at=T0 + timedelta(days=1))
    embed(alice)
    embed(bob)
    assert consolidation_plan(alice).groups == []
    plan = consolidate(bob)
    assert plan.merged_count == 1
    assert Memory.objects.filter(owner=alice).count() == 1 and Memory.objects.filter(owner=bob).count() == 1


def test_memories_without_a_vector_pair_only_by_their_exact_words(alice):
    write(alice, "I like tea", at=T0)
    write(alice, "The user likes tea", at=T0 + timedelta(days=1))
    write(alice, "I prefer dark mode in my code editor", at=T0)
    write(alice, "I prefer dark mode", at=T0 + timedelta(days=1))
    plan = consolidation_plan(alice)  # nothing embedded
    assert plan.without_vector == 4
    assert [(g.survivor.content, [m.content for m in g.merged]) for g in plan.groups] == [
        ("The user likes tea", ["I like tea"])
    ]
