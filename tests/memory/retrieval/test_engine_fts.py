"""Retrieval without vectors: the FTS5 and chronological tiers, filters, budget and isolation."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.conf import get_memory_settings
from memory.retrieval.chat import retrieve_for_chat
from memory.retrieval.engine import retrieve
from tests.factories import expired, make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_vectors(settings):
    settings.VECTOR_STORE_DISABLE_VEC = True


def ids(result):
    return [h.memory.content for h in result.hits]


def test_hybrid_without_vectors_falls_back_to_fts_and_says_why(alice):
    make_memory(alice, content="The user prefers PostgreSQL for production databases")
    make_memory(alice, content="The user enjoys gardening on weekends")
    result = retrieve(
        owner_ids=frozenset({alice.pk}), query="which database do I use? postgresql!", strategy="hybrid"
    )
    assert ids(result) == ["The user prefers PostgreSQL for production databases"]
    assert result.hits[0].tier == "fts5" and result.hits[0].fts_score < 0
    assert result.resolution["vectorStore"] == "none"
    assert result.resolution["fallbackReason"]
    # What ran is FTS5 alone, not the hybrid that was asked for (reference L19).
    assert (result.resolution["strategyRequested"], result.resolution["strategyUsed"]) == (
        "hybrid",
        "keyword",
    )


@pytest.mark.parametrize(
    "query", ['"unbalanced', "a - b : c * (d", "NEAR(x y)", "col:value", "OR AND NOT", "^start"]
)
def test_no_user_text_can_break_match(alice, query):
    make_memory(alice, content="value start unbalanced near")
    retrieve(owner_ids=frozenset({alice.pk}), query=query, strategy="hybrid")  # must not raise


def test_stemming_finds_other_word_forms(alice):
    make_memory(alice, content="I decided to migrate to Docker")
    result = retrieve(owner_ids=frozenset({alice.pk}), query="migration plans?", strategy="hybrid")
    assert ids(result) == ["I decided to migrate to Docker"]


def test_every_tier_applies_owner_expiry_session_and_retention(alice, bob):
    now = timezone.now()
    make_memory(alice, content="alpha kept", session_id="s1")
    make_memory(alice, content="alpha expired", expires_at=expired())
    make_memory(alice, content="alpha old", created_at=now - timedelta(days=40))
    make_memory(alice, content="alpha other session", session_id="s2")
    make_memory(bob, content="alpha of bob", session_id="s1")
    for strategy in ("exact", "semantic", "hybrid"):
        result = retrieve(
            owner_ids=frozenset({alice.pk}),
            query="alpha",
            strategy=strategy,
            session_id="s1",
            retention_days=30,
        )
        assert ids(result) == ["alpha kept"], strategy


def test_exact_is_newest_first_within_the_budget(alice):
    now = timezone.now()
    make_memory(
        alice,
        content="Older preference that should be trimmed when the context budget is tight.",
        created_at=now - timedelta(minutes=2),
    )
    make_memory(alice, content="Newest preference should fit first.", created_at=now - timedelta(minutes=1))
    result = retrieve(owner_ids=frozenset({alice.pk}), query=None, strategy="exact", max_tokens=20)
    assert ids(result) == ["Newest preference should fit first."]
    assert result.total_tokens == 9


def test_at_least_one_hit_even_over_budget(alice):
    make_memory(alice, content="x" * 400)
    result = retrieve(owner_ids=frozenset({alice.pk}), query=None, strategy="exact", max_tokens=10)
    assert len(result.hits) == 1 and result.total_tokens == 100


def test_a_global_retrieval_sees_every_owner_but_an_owner_retrieval_never_does(alice, bob):
    make_memory(alice, content="kiwi for alice")
    make_memory(bob, content="kiwi for bob")
    assert ids(retrieve(owner_ids=frozenset({alice.pk}), query="kiwi")) == ["kiwi for alice"]
    assert sorted(ids(retrieve(owner_ids=None, query="kiwi"))) == ["kiwi for alice", "kiwi for bob"]


@pytest.mark.sqlite_only("FTS5's data blocks (tests/memory/services/test_memories.py checks both engines)")
def test_chat_retrieval_uses_the_settings_and_bumps_access_without_rewriting_fts(alice, bob):
    from memory.conf import update_memory_settings

    update_memory_settings({"enabled": True, "strategy": "hybrid", "maxTokens": 500})
    m = make_memory(alice, content="I prefer dark mode in my editor")
    make_memory(bob, content="I prefer dark mode too")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_fts_data")
        segments = cursor.fetchone()[0]
    result = retrieve_for_chat(
        api_key=alice, query="What editor mode do I like?", settings=get_memory_settings()
    )
    assert [h.memory.seq for h in result.hits] == [m.seq]
    m.refresh_from_db()
    assert m.access_count == 1 and m.last_accessed_at is not None
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_fts_data")
        assert cursor.fetchone()[0] == segments


def test_recent_strategy_ignores_the_query_in_chat(alice):
    from memory.conf import update_memory_settings

    update_memory_settings({"enabled": True, "strategy": "recent"})
    make_memory(alice, content="unrelated but newest")
    result = retrieve_for_chat(api_key=alice, query="postgres", settings=get_memory_settings())
    assert ids(result) == ["unrelated but newest"] and result.hits[0].tier == "recent"


def test_global_scope_needs_a_granted_key(alice, bob):
    make_memory(bob, content="bob's kiwi")
    assert retrieve_for_chat(api_key=alice, query="kiwi", scope="global").hits == []
    alice.allow_global_scope = True
    alice.save()
    assert ids(retrieve_for_chat(api_key=alice, query="kiwi", scope="global")) == ["bob's kiwi"]


@pytest.mark.sqlite_only("the FTS5 statement's shape")
def test_fts_search_starts_from_the_index(alice):
    make_memory(alice, content="kiwi")
    with CaptureQueriesContext(connection) as queries:
        retrieve(owner_ids=frozenset({alice.pk}), query="kiwi", strategy="hybrid")
    fts_sql = next(q["sql"] for q in queries.captured_queries if "bm25(memory_fts" in q["sql"])
    assert "FROM (  SELECT rowid, bm25(memory_fts" in fts_sql
    assert "{owner_id}" in fts_sql


def test_the_scope_setting_narrows_chat_retrieval_to_the_session(alice):
    from memory.conf import update_memory_settings

    make_memory(alice, content="kiwi in session one", session_id="s1")
    make_memory(alice, content="kiwi in session two", session_id="s2")
    assert len(retrieve_for_chat(api_key=alice, query="kiwi", session_id="s1").hits) == 2
    update_memory_settings({"scope": "session"})
    assert ids(retrieve_for_chat(api_key=alice, query="kiwi", session_id="s1")) == ["kiwi in session one"]


def test_a_preview_does_not_touch_access_counts(alice):
    m = make_memory(alice, content="kiwi")
    retrieve_for_chat(api_key=alice, query="kiwi", touch=False)
    m.refresh_from_db()
    assert m.access_count == 0
