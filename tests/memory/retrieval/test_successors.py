"""A question that matches a superseded memory is answered by the one that superseded it
(memory.retrieval.successors), on every strategy that searches, and never across a filter."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.models import Memory
from memory.retrieval.engine import retrieve
from memory.retrieval.successors import current_successors, substitute
from memory.services.indexing import reindex_all
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


def supersede(old: Memory, new: Memory) -> None:
    """``new`` supersedes ``old`` from ``new``'s creation, as the write path records it."""
    Memory.objects.filter(seq=old.seq).update(valid_to=new.created_at, superseded_by=new)


def found(owner, query: str, **options) -> list[str]:
    result = retrieve(owner_ids=frozenset({owner.pk}), query=query, **options)
    return [hit.memory.content for hit in result.hits]


@pytest.fixture
def job_change(alice):
    """Alice's employer, then a new one that shares no word with "where do I work"."""
    before = timezone.now() - timedelta(days=400)
    old = make_memory(alice, "I work at Google", created_at=before)
    new = make_memory(alice, "I just started at Stripe", created_at=before + timedelta(days=365))
    make_memory(alice, "My sister lives in Lisbon")
    supersede(old, new)
    return old, new


@pytest.mark.parametrize("strategy", ["keyword", "hybrid", "composite"])
def test_the_current_value_answers_a_question_only_the_old_one_matches(alice, job_change, strategy):
    # Without vectors hybrid and composite run on keyword search: the successor rule is the same.
    assert found(alice, "Where do I work now?", strategy=strategy) == ["I just started at Stripe"]


def test_with_vectors_too_and_the_old_value_is_never_shown(alice, job_change):
    if not runtime.static_built():
        pytest.skip("run `manage.py build_embedding_models` (make test does)")
    update_memory_settings({"embeddingSource": "static"})
    try:
        reindex_all()
        for strategy in ("semantic", "hybrid", "composite"):
            result = retrieve(
                owner_ids=frozenset({alice.pk}), query="Where do I work?", strategy=strategy, limit=5
            )
            shown = [hit.memory.content for hit in result.hits]
            assert result.resolution["strategyUsed"] == strategy
            assert "I work at Google" not in shown, strategy
            assert shown[0] == "I just started at Stripe", (strategy, shown)
    finally:
        runtime.reset()


def test_as_of_a_moment_before_the_change_the_old_value_answers(alice, job_change):
    old, new = job_change
    then = old.created_at + timedelta(days=30)
    assert found(alice, "Where do I work?", strategy="keyword", as_of=then) == ["I work at Google"]


def test_a_chain_of_changes_leads_to_the_value_current_now(alice):
    start = timezone.now() - timedelta(days=300)
    first = make_memory(alice, "I work for a bank", created_at=start)
    second = make_memory(alice, "I left and I freelance now", created_at=start + timedelta(days=100))
    third = make_memory(
        alice, "Signed a full-time contract with Monzo", created_at=start + timedelta(days=200)
    )
    supersede(first, second)
    supersede(second, third)
    assert found(alice, "Do I still work for a bank?", strategy="keyword") == [
        "Signed a full-time contract with Monzo"
    ]
    # Half-way through the history, the middle value was current.
    middle = start + timedelta(days=150)
    assert found(alice, "Do I still work for a bank?", strategy="keyword", as_of=middle) == [
        "I left and I freelance now"
    ]


def test_the_successor_takes_the_better_place_and_appears_once(alice, job_change):
    old, new = job_change
    # Both match "Stripe google work": the successor is listed once, at the better of the two places.
    assert found(alice, "work at Google or Stripe", strategy="keyword") == ["I just started at Stripe"]
    handed = current_successors(
        _filters(alice), [old.seq, new.seq, Memory.objects.get(content__startswith="My sister").seq]
    )
    assert handed == {old.seq: new.seq}
    assert substitute([(old.seq, 3.0), (new.seq, 2.0)], handed) == [(new.seq, 3.0)]


def test_a_successor_outside_the_read_hands_nothing_on(alice):
    old = make_memory(alice, "I work at Google", session_id="s1")
    new = make_memory(alice, "I just started at Stripe", session_id="s2")
    supersede(old, new)
    # In session s1 only: the old value stays hidden and the new one is not in the read.
    assert found(alice, "Where do I work?", strategy="keyword", session_id="s1") == []
    assert found(alice, "Where do I work?", strategy="keyword", session_id="s2") == []
    assert found(alice, "Where do I work?", strategy="keyword") == ["I just started at Stripe"]


def test_a_successor_that_expired_or_was_deleted_hands_nothing_on(alice):
    old = make_memory(alice, "I work at Google")
    new = make_memory(alice, "I just started at Stripe", expires_at=timezone.now() - timedelta(minutes=1))
    supersede(old, new)
    assert found(alice, "Where do I work?", strategy="keyword") == []
    Memory.objects.filter(seq=new.seq).delete()  # superseded_by is SET_NULL: the chain ends
    assert found(alice, "Where do I work?", strategy="keyword") == []


def test_a_link_to_another_keys_memory_is_never_followed(alice, bob):
    # The write path links memories of one owner only; a row edited by hand must still not leak.
    old = make_memory(alice, "I work at Google")
    theirs = make_memory(bob, "Bob's salary is 90k")
    supersede(old, theirs)
    assert found(alice, "Where do I work?", strategy="keyword") == []
    assert found(bob, "Where do I work?", strategy="keyword") == []


def _filters(owner):
    from memory.retrieval.engine import Filters

    return Filters(owner_ids=frozenset({owner.pk}), now=timezone.now())


def test_preview_says_which_superseded_memory_matched(alice, job_change, read_api, admin_client):
    old, new = job_change
    body = read_api.post(
        "/api/memory/retrieve-preview",
        {"query": "Where do I work?", "strategy": "keyword", "apiKeyId": str(alice.pk)},
    ).json()
    assert [(m["content"], m["foundThrough"]) for m in body["memories"]] == [
        ("I just started at Stripe", str(old.uuid))
    ]
    body = read_api.post(
        "/api/memory/retrieve-preview",
        {"query": "Stripe", "strategy": "keyword", "apiKeyId": str(alice.pk)},
    ).json()
    assert [(m["content"], m["foundThrough"]) for m in body["memories"]] == [
        ("I just started at Stripe", None)
    ]
