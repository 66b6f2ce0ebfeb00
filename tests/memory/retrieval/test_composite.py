"""The composite strategy (ScoredMemory): 0.5 semantic + 0.3 recency + 0.2 importance, over hybrid's
candidates; its signals in retrieve-preview; ``asOf``; its settings; provider-backed keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from memory import store
from memory.conf import get_memory_settings, update_memory_settings
from memory.embeddings import runtime
from memory.evaluation import evaluate, latest_per_owner
from memory.models import Setting
from memory.retrieval import composite
from memory.retrieval.composite import DEFAULT_WEIGHTS, Signals, recency, relative, scored_memory
from memory.retrieval.engine import retrieve
from memory.services.indexing import reindex_all
from memory.services.memories import MemoryInput
from tests.factories import database_store, make_memory
from tests.memory.providers import provider_keys

providers = provider_keys.providers

pytestmark = pytest.mark.django_db

PREVIEW = "/api/memory/retrieve-preview"
SETTINGS = "/api/settings/memory"


@pytest.fixture
def no_vectors(settings):
    """Keyword search only: composite's candidates are FTS5's, whatever models this machine built."""
    settings.VECTOR_STORE_DISABLE_VEC = True


def days_ago(days: float) -> datetime:
    return timezone.now() - timedelta(days=days)


# -- the score ------------------------------------------------------------------------------------


def test_the_default_score_is_half_semantic_three_tenths_recency_one_fifth_importance():
    signals = Signals(semantic=0.8, recency=0.5, importance=0.25, semantic_from="hybrid")
    assert scored_memory(signals, DEFAULT_WEIGHTS) == pytest.approx(0.5 * 0.8 + 0.3 * 0.5 + 0.2 * 0.25)
    assert scored_memory(signals, DEFAULT_WEIGHTS) == pytest.approx(0.6)


def test_weights_that_do_not_sum_to_one_give_their_weighted_mean():
    signals = Signals(semantic=0.8, recency=0.5, importance=0.25, semantic_from="keyword")
    assert scored_memory(signals, {"semantic": 1, "recency": 1, "importance": 0}) == pytest.approx(0.65)
    assert scored_memory(signals, {"semantic": 0, "recency": 0, "importance": 0.4}) == pytest.approx(0.25)


def test_recency_halves_every_half_life():
    now = datetime(2026, 5, 1, 12, tzinfo=UTC)
    assert recency(now, now=now, half_life_days=30) == 1.0
    assert recency(now - timedelta(days=30), now=now, half_life_days=30) == pytest.approx(0.5)
    assert recency(now - timedelta(days=90), now=now, half_life_days=30) == pytest.approx(0.125)
    assert recency(now - timedelta(days=7), now=now, half_life_days=7) == pytest.approx(0.5)
    assert recency(now - timedelta(hours=12), now=now, half_life_days=1) == pytest.approx(2**-0.5)
    # written after the clock (a moment later than "now" was read): counts as new, never above 1
    assert recency(now + timedelta(days=3), now=now, half_life_days=30) == 1.0


def test_relevance_is_relative_to_the_best_candidate():
    assert relative([2.0, 1.0, 0.5, -1.0]) == [1.0, 0.5, 0.25, 0.0]
    assert relative([0.0, 0.0]) == [0.0, 0.0] and relative([]) == []


# -- the strategy -----------------------------------------------------------------------------------


def test_composite_puts_the_newer_of_two_equal_matches_first_and_its_score_is_the_formula(alice, no_vectors):
    # two subjects (no contradiction: both stay current), one query word each
    old = make_memory(alice, "The Leeds office has a garden", importance=0.5, created_at=days_ago(3 * 365))
    new = make_memory(alice, "The Berlin office has a rooftop", importance=0.5, created_at=days_ago(1))
    owner = frozenset({alice.pk})

    keyword = retrieve(owner_ids=owner, query="which office has what", strategy="keyword")
    result = retrieve(owner_ids=owner, query="which office has what", strategy="composite")

    assert [h.memory.pk for h in result.hits] == [new.pk, old.pk]
    bm25 = {h.memory.pk: h.score for h in keyword.hits}
    best = max(bm25.values())
    for hit in result.hits:
        signals = hit.signals
        assert signals is not None and signals.semantic_from == "keyword"  # no vector search ran
        assert signals.semantic == pytest.approx(bm25[hit.memory.pk] / best)
        assert signals.importance == hit.memory.importance  # as stored (analysis on write sets it)
        age = (timezone.now() - hit.memory.created_at).total_seconds() / 86400
        assert signals.recency == pytest.approx(0.5 ** (age / composite.DEFAULT_HALF_LIFE_DAYS), rel=1e-4)
        assert hit.score == pytest.approx(
            0.5 * signals.semantic + 0.3 * signals.recency + 0.2 * hit.memory.importance
        )
    assert result.hits[0].signals.recency > 0.99 and result.hits[1].signals.recency < 0.36  # 3 y: 0.5 ** 1.5
    # degraded to keyword search: said, as for hybrid
    assert (result.resolution["strategyRequested"], result.resolution["strategyUsed"]) == (
        "composite",
        "keyword",
    )
    assert result.resolution["fallbackReason"]


def test_importance_breaks_a_tie_of_relevance_and_age(alice, no_vectors):
    moment = days_ago(3)
    low = make_memory(alice, "Alice drinks green tea", importance=0.1, created_at=moment)
    high = make_memory(alice, "Alice drinks black tea", importance=0.9, created_at=moment)
    result = retrieve(owner_ids=frozenset({alice.pk}), query="tea", strategy="composite")
    assert [h.memory.pk for h in result.hits] == [high.pk, low.pk]
    assert result.hits[0].score - result.hits[1].score == pytest.approx(0.2 * (0.9 - 0.1))


def test_the_other_strategies_carry_no_signals(alice, no_vectors):
    make_memory(alice, "Alice drinks green tea")
    hit = retrieve(owner_ids=frozenset({alice.pk}), query="tea", strategy="hybrid").hits[0]
    assert hit.signals is None


def test_without_query_words_composite_orders_by_recency_and_importance(alice, no_vectors):
    update_memory_settings({"recencyHalfLifeDays": 30})  # a month, so that days count
    make_memory(alice, "older and important", importance=1.0, created_at=days_ago(60))
    make_memory(alice, "newest, unimportant", importance=0.0, created_at=days_ago(0))
    make_memory(alice, "middle", importance=0.5, created_at=days_ago(10))
    result = retrieve(owner_ids=frozenset({alice.pk}), query=None, strategy="composite")
    # recency·0.3 + importance·0.2: 0.3·0.25 + 0.2 = 0.275; 0.3·1 + 0 = 0.3; 0.3·0.794 + 0.1 = 0.338
    assert [h.memory.content for h in result.hits] == ["middle", "newest, unimportant", "older and important"]
    assert {h.signals.semantic_from for h in result.hits} == {"none"}
    assert result.resolution["strategyUsed"] == "exact"


def test_the_weights_and_half_life_of_the_settings_rank(admin_api, alice, no_vectors):
    make_memory(alice, "tea tea tea: Alice lives on tea", created_at=days_ago(20))
    make_memory(alice, "Alice once had tea", created_at=days_ago(2))
    r = admin_api.put(
        SETTINGS,
        {"compositeWeights": {"semantic": 1, "recency": 0, "importance": 0}, "recencyHalfLifeDays": 7},
    )
    assert r.status_code == 200, r.content
    by_relevance = retrieve(owner_ids=frozenset({alice.pk}), query="tea", strategy="composite")
    assert by_relevance.hits[0].memory.content.startswith("tea tea tea")
    assert by_relevance.hits[0].signals.recency == pytest.approx(0.5 ** (20 / 7), rel=1e-3)

    admin_api.put(SETTINGS, {"compositeWeights": {"semantic": 0, "recency": 1, "importance": 0}})
    by_age = retrieve(owner_ids=frozenset({alice.pk}), query="tea", strategy="composite")
    assert by_age.hits[0].memory.content == "Alice once had tea"
    assert by_age.hits[0].score == pytest.approx(0.5 ** (2 / 7), rel=1e-3)


def test_composite_is_a_strategy_the_gateway_settings_accept(admin_api):
    r = admin_api.put(SETTINGS, {"strategy": "composite"})
    assert r.status_code == 200 and admin_api.get(SETTINGS).json()["strategy"] == "composite"
    assert get_memory_settings().retrieval_strategy == "composite"


@pytest.mark.skipif(not runtime.static_built(), reason="run `manage.py build_embedding_models`")
def test_with_vectors_composite_reorders_hybrids_candidates(alice):
    update_memory_settings({"embeddingSource": "static"})
    try:
        make_memory(alice, "We deploy the backend with Kubernetes", created_at=days_ago(200))
        make_memory(alice, "The new deployment runs on Kubernetes", created_at=days_ago(1))
        make_memory(alice, "My cat sleeps all day", created_at=days_ago(1))
        reindex_all()
        owner = frozenset({alice.pk})
        hybrid = retrieve(owner_ids=owner, query="kubernetes deployment", strategy="hybrid")
        result = retrieve(owner_ids=owner, query="kubernetes deployment", strategy="composite")
        assert result.resolution["strategyUsed"] == "composite"
        assert result.resolution["vectorStore"] == database_store().name
        # the same candidates, only re-ordered
        assert sorted(h.memory.pk for h in result.hits) == sorted(h.memory.pk for h in hybrid.hits)
        fused = {h.memory.pk: h.score for h in hybrid.hits}
        best = max(fused.values())
        for hit in result.hits:
            assert hit.signals.semantic_from == "hybrid"
            assert hit.signals.semantic == pytest.approx(fused[hit.memory.pk] / best)
        assert result.hits[0].memory.content == "The new deployment runs on Kubernetes"
    finally:
        runtime.reset()


# -- retrieve-preview: signals and asOf ---------------------------------------------------------------


def test_preview_shows_each_signal_per_hit(admin_api, alice, no_vectors):
    make_memory(alice, "Alice drinks green tea", importance=0.7)
    r = admin_api.post(PREVIEW, {"query": "tea", "strategy": "composite", "apiKeyId": str(alice.pk)})
    assert r.status_code == 200, r.content
    (hit,) = r.json()["memories"]
    signals = hit["signals"]
    assert set(signals) == {"semantic", "recency", "importance", "semanticFrom"}
    assert (
        signals["semantic"] == 1.0 and signals["importance"] == 0.7 and signals["semanticFrom"] == "keyword"
    )
    assert 0.99 < signals["recency"] <= 1.0
    assert hit["score"] == pytest.approx(0.5 + 0.3 * signals["recency"] + 0.2 * 0.7, abs=1e-5)
    plain = admin_api.post(PREVIEW, {"query": "tea", "apiKeyId": str(alice.pk)}).json()
    assert plain["memories"][0]["signals"] is None


def test_as_of_leaves_out_the_memories_written_after_it(admin_api, alice, no_vectors):
    make_memory(alice, "The Leeds office opened", created_at=datetime(2026, 3, 1, 9, tzinfo=UTC))
    make_memory(alice, "The Berlin office opened", created_at=datetime(2026, 5, 10, 9, tzinfo=UTC))
    body = {"query": "which office opened", "strategy": "composite", "apiKeyId": str(alice.pk)}

    now = admin_api.post(PREVIEW, body).json()["memories"]
    then = admin_api.post(PREVIEW, {**body, "asOf": "2026-04-01"}).json()["memories"]

    assert {m["content"] for m in now} == {"The Leeds office opened", "The Berlin office opened"}
    assert [m["content"] for m in then] == ["The Leeds office opened"]
    # recency counts from the end of 1 April (UTC): 31 days and 15 hours after 1 March 09:00
    age = (datetime(2026, 4, 2, tzinfo=UTC) - datetime(2026, 3, 1, 9, tzinfo=UTC)).total_seconds() / 86400
    assert then[0]["signals"]["recency"] == pytest.approx(
        0.5 ** (age / composite.DEFAULT_HALF_LIFE_DAYS), abs=1e-5
    )


@pytest.mark.parametrize("strategy", ["keyword", "hybrid", "exact"])
def test_as_of_applies_to_every_strategy(admin_api, alice, no_vectors, strategy):
    make_memory(alice, "tea in March", created_at=datetime(2026, 3, 1, tzinfo=UTC))
    make_memory(alice, "tea in May", created_at=datetime(2026, 5, 1, tzinfo=UTC))
    body = {"query": "tea", "strategy": strategy, "apiKeyId": str(alice.pk), "asOf": "2026-04-01T00:00:00Z"}
    r = admin_api.post(PREVIEW, body)
    assert r.status_code == 200, r.content
    assert [m["content"] for m in r.json()["memories"]] == ["tea in March"]


def test_as_of_a_date_includes_that_day(admin_api, alice, no_vectors):
    make_memory(alice, "tea on the first of May", created_at=datetime(2026, 5, 1, 23, 30, tzinfo=UTC))
    body = {"query": "tea", "strategy": "composite", "apiKeyId": str(alice.pk)}
    assert len(admin_api.post(PREVIEW, {**body, "asOf": "2026-05-01"}).json()["memories"]) == 1
    assert admin_api.post(PREVIEW, {**body, "asOf": "2026-04-30"}).json()["memories"] == []


def test_as_of_keeps_the_owner_filter(alice_api, alice, bob, no_vectors):
    make_memory(alice, "kiwi alice", created_at=datetime(2026, 3, 1, tzinfo=UTC))
    make_memory(bob, "kiwi bob", created_at=datetime(2026, 3, 1, tzinfo=UTC))
    body = {"query": "kiwi", "strategy": "composite", "asOf": "2026-04-01"}
    assert [m["content"] for m in alice_api.post(PREVIEW, body).json()["memories"]] == ["kiwi alice"]


def test_as_of_never_shows_an_expired_memory(admin_api, alice, no_vectors):
    make_memory(
        alice,
        "tea that expired",
        created_at=datetime(2026, 3, 1, tzinfo=UTC),
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    body = {"query": "tea", "strategy": "composite", "apiKeyId": str(alice.pk), "asOf": "2026-04-01"}
    assert admin_api.post(PREVIEW, body).json()["memories"] == []


def test_as_of_at_the_edges_of_the_calendar_ranks_nothing_or_now(admin_api, alice, no_vectors):
    make_memory(alice, "tea today")
    body = {"query": "tea", "strategy": "composite", "apiKeyId": str(alice.pk)}
    for early in ("0001-01-01", "0001-01-01T00:00:00+14:00", "1899-12-31T23:59:59Z"):
        r = admin_api.post(PREVIEW, {**body, "asOf": early})
        assert r.status_code == 200 and r.json()["memories"] == [], early
    for late in ("9999-12-31", "9999-12-31T23:59:59-12:00", "2999-01-01"):
        r = admin_api.post(PREVIEW, {**body, "asOf": late})
        assert r.status_code == 200 and [m["content"] for m in r.json()["memories"]] == ["tea today"], late


@pytest.mark.parametrize("value", ["yesterday", "2026-02-30", "2026-13-01", 20260401, True, ""])
def test_a_bad_as_of_is_a_400_naming_it(admin_api, value):
    r = admin_api.post(PREVIEW, {"query": "tea", "asOf": value})
    assert r.status_code == 400, r.content
    assert [d["field"] for d in r.json()["error"]["details"]] == ["asOf"]


# -- settings validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"compositeWeights": {"semantic": 2, "recency": 0.3, "importance": 0.2}}, "compositeWeights"),
        ({"compositeWeights": {"semantic": -0.1, "recency": 0.3, "importance": 0.2}}, "compositeWeights"),
        ({"compositeWeights": {"semantic": 0.5, "recency": 0.5}}, "compositeWeights"),
        (
            {"compositeWeights": {"semantic": 0.5, "recency": 0.3, "importance": 0.2, "x": 1}},
            "compositeWeights",
        ),
        ({"compositeWeights": {"semantic": 0, "recency": 0, "importance": 0}}, "compositeWeights"),
        ({"compositeWeights": {"semantic": "0.5", "recency": 0.3, "importance": 0.2}}, "compositeWeights"),
        ({"compositeWeights": {"semantic": True, "recency": 0.3, "importance": 0.2}}, "compositeWeights"),
        ({"compositeWeights": [0.5, 0.3, 0.2]}, "compositeWeights"),
        ({"recencyHalfLifeDays": 0}, "recencyHalfLifeDays"),
        ({"recencyHalfLifeDays": -3}, "recencyHalfLifeDays"),
        ({"recencyHalfLifeDays": 5000}, "recencyHalfLifeDays"),
        ({"recencyHalfLifeDays": "30"}, "recencyHalfLifeDays"),
        ({"recencyHalfLifeDays": None}, "recencyHalfLifeDays"),
    ],
)
def test_bad_composite_settings_are_a_400_naming_the_field(admin_api, body, field):
    r = admin_api.put(SETTINGS, body)
    assert r.status_code == 400, r.content
    assert [d["field"] for d in r.json()["error"]["details"]] == [field]
    assert not Setting.objects.filter(key__startswith="memory.").exists()


def test_the_settings_show_the_composite_defaults_and_store_changes(read_api, admin_api):
    body = read_api.get(SETTINGS).json()
    assert body["compositeWeights"] == {"semantic": 0.5, "recency": 0.3, "importance": 0.2}
    assert body["recencyHalfLifeDays"] == 730.0
    new = {
        "compositeWeights": {"semantic": 0.6, "recency": 0.2, "importance": 0.2},
        "recencyHalfLifeDays": 14,
    }
    r = admin_api.put(SETTINGS, new)
    assert r.status_code == 200, r.content
    assert read_api.get(SETTINGS).json() | new == read_api.get(SETTINGS).json()
    assert get_memory_settings().recencyHalfLifeDays == 14.0


def test_junk_composite_settings_in_the_database_read_back_as_defaults():
    Setting.objects.create(key="memory.compositeWeights", value={"semantic": 9})
    Setting.objects.create(key="memory.recencyHalfLifeDays", value=-1)
    current = get_memory_settings()
    assert current.compositeWeights == dict(DEFAULT_WEIGHTS)
    assert current.recencyHalfLifeDays == composite.DEFAULT_HALF_LIFE_DAYS


# -- provider-backed keys -----------------------------------------------------------------------------


def test_a_provider_backed_key_is_ranked_by_composite_too(transactional_db, providers):
    alice, _ = providers.key(providers.provider("inmemory"))
    store.memory_create(MemoryInput(owner=alice, content="Alice drinks green tea", importance=0.1))
    store.memory_create(MemoryInput(owner=alice, content="Alice drinks black tea", importance=0.9))

    result = store.retrieve(owner_ids=frozenset({alice.pk}), query="tea drinks", strategy="composite")

    assert result.resolution["provider"] == alice.provider.name
    assert result.resolution["strategyRequested"] == "composite"
    assert [h.memory.content for h in result.hits][0] == "Alice drinks black tea"
    for hit in result.hits:
        assert hit.signals is not None and hit.signals.semantic_from in ("hybrid", "keyword")
        assert hit.score == pytest.approx(
            0.5 * hit.signals.semantic + 0.3 * hit.signals.recency + 0.2 * hit.signals.importance
        )
    assert {h.signals.importance for h in result.hits} == {0.1, 0.9}

    before = store.retrieve(
        owner_ids=frozenset({alice.pk}), query="tea", strategy="composite", as_of=days_ago(1)
    )
    assert before.hits == []


# -- eval_retrieval ----------------------------------------------------------------------------------

DATASET = {
    "owners": ["ana"],
    "memories": [
        {"id": "m1", "owner": "ana", "content": "Ana lives in Leeds.", "created_at": "2025-01-10T09:00:00Z"},
        {"id": "m2", "owner": "ana", "content": "Ana moved to Berlin.", "created_at": "2025-06-01T09:00:00Z"},
    ],
    "queries": [
        {"owner": "ana", "query": "Where did Ana move to?", "kind": "lexical", "relevant": ["m2"]},
    ],
}


def test_the_evaluation_runs_composite_as_of_each_owners_newest_memory(no_vectors):
    assert latest_per_owner(DATASET) == {"ana": datetime(2025, 6, 1, 9, tzinfo=UTC)}
    reports = evaluate(DATASET, strategies=["hybrid", "composite"], served=False, as_of="latest")
    assert [r["strategy"] for r in reports] == ["hybrid", "composite"]
    assert all(r["asOf"] == "latest" and r["isolationFailures"] == 0 for r in reports)
    assert reports[1]["recall"]["overall"]["R@1"] == 1.0
