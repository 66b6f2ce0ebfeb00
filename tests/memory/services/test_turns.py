"""Conversation turns link to the turn before them; its text is their keyword context (migration 0005)."""

import pytest
from django.db import connection

from memory.models import Memory
from memory.retrieval.engine import retrieve
from memory.retrieval.fts import postgres as fts_postgres
from memory.services.memories import MemoryInput, memory_bulk_create, memory_delete, memory_update
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_vectors(settings):
    settings.VECTOR_STORE_DISABLE_VEC = True


def fts_is_consistent() -> bool:
    """FTS5's own check that the index holds exactly what the memories table says (PostgreSQL's:
    every document its row's, one per memory)."""
    if connection.vendor == "postgresql":
        return fts_postgres.integrity() == "ok" and fts_postgres.document_count() == Memory.objects.count()
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES ('integrity-check', 1)")
    return True


def keyword(owner, query):
    hits = retrieve(owner_ids=frozenset({owner.pk}), query=query, strategy="keyword").hits
    return [h.memory.content for h in hits]


QUESTION = "(2024-02-02) Maya: Did you get the cat yet?"
ANSWER = "(2024-02-02) Tom: Yes! Her name is Pickle."


def test_a_turn_links_to_the_turn_before_it_and_is_found_by_its_words(alice):
    first = make_memory(alice, QUESTION)
    second = make_memory(alice, ANSWER)
    assert (second.context, second.context_seq) == (QUESTION, first.seq)
    assert Memory.objects.get(seq=first.seq).context is None
    # "cat" is only in the question; the answer is found through its context.
    assert ANSWER in keyword(alice, "Tom's cat name")
    assert fts_is_consistent()


@pytest.mark.parametrize(
    "before",
    [
        "(2024-02-01) Maya: Did you get the cat yet?",  # another day: another session
        "I prefer dark mode",  # not a turn
    ],
)
def test_only_a_turn_of_the_same_day_and_session_is_context(alice, before):
    make_memory(alice, before)
    assert make_memory(alice, ANSWER).context is None


def test_another_session_or_another_owner_is_never_context(alice, bob):
    make_memory(alice, QUESTION, session_id="s1")
    assert make_memory(alice, ANSWER, session_id="s2").context is None
    make_memory(bob, "(2024-02-02) Maya: a secret of bob's about the cat")
    assert make_memory(alice, "(2024-02-02) Tom: Another line.", session_id="s2").context == ANSWER
    assert keyword(alice, "secret") == []


def test_bulk_inserts_link_their_turns_and_index_the_context(alice):
    result = memory_bulk_create(
        [MemoryInput(owner=alice, content=c) for c in (QUESTION, ANSWER, "(2024-02-02) Maya: Aww!")]
    )
    rows = {m.content: m for m in Memory.objects.filter(uuid__in=result["ids"])}
    assert rows[ANSWER].context == QUESTION and rows["(2024-02-02) Maya: Aww!"].context == ANSWER
    assert ANSWER in keyword(alice, "cat yet")
    assert fts_is_consistent()


def test_deleting_or_editing_the_previous_turn_updates_the_context(alice):
    first = make_memory(alice, QUESTION)
    second = make_memory(alice, ANSWER)
    memory_update(Memory.objects.get(seq=first.seq), content="(2024-02-02) Maya: Did you adopt the dog?")
    assert Memory.objects.get(seq=second.seq).context == "(2024-02-02) Maya: Did you adopt the dog?"
    assert keyword(alice, "cat") == [] and ANSWER in keyword(alice, "dog")
    memory_delete(Memory.objects.get(seq=first.seq))
    second = Memory.objects.get(seq=second.seq)
    assert (second.context, second.context_seq) == (None, None)
    assert keyword(alice, "dog") == []  # a deleted memory's words are gone from every index
    assert fts_is_consistent()


def test_deleting_an_owner_leaves_a_consistent_index(alice, bob):
    memory_bulk_create([MemoryInput(owner=alice, content=f"(2024-02-02) Tom: line {i}") for i in range(20)])
    make_memory(bob, ANSWER)
    alice.delete()
    assert not Memory.objects.filter(owner_id=alice.pk).exists()
    assert fts_is_consistent()
