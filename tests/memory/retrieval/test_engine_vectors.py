"""Retrieval with real vectors (the static model built by `make test`) and its fallbacks."""

import httpx
import pytest
import respx

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.models import Memory
from memory.retrieval import engine
from memory.retrieval.engine import retrieve
from memory.services.indexing import pending_count, reindex_all
from memory.signals import reindex_progress
from tests.factories import database_store, expired, make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not runtime.static_built(), reason="run `manage.py build_embedding_models` (make test does)"
    ),
]


@pytest.fixture(autouse=True)
def static_source(db):
    update_memory_settings({"embeddingSource": "static"})
    yield
    runtime.reset()


def contents(result):
    return [h.memory.content for h in result.hits]


def test_semantic_finds_a_memory_by_meaning(alice):
    make_memory(alice, content="My dog is a golden retriever puppy")
    make_memory(alice, content="Quarterly revenue spreadsheet for the finance team")
    reindex_all()
    result = retrieve(
        owner_ids=frozenset({alice.pk}), query="tell me about my pet", strategy="semantic", limit=1
    )
    assert contents(result) == ["My dog is a golden retriever puppy"]
    assert result.hits[0].tier == "vector" and 0 < result.hits[0].vec_score <= 1
    assert (
        result.resolution["embeddingSource"] == "static"
        and result.resolution["vectorStore"] == database_store().name
    )
    assert result.resolution["fallbackReason"] is None
    assert (result.resolution["strategyRequested"], result.resolution["strategyUsed"]) == ("semantic",) * 2


def test_hybrid_fuses_fts_and_vector_ranks(alice):
    make_memory(alice, content="We deploy the backend with Kubernetes")
    make_memory(alice, content="My cat sleeps all day")
    reindex_all()
    result = retrieve(owner_ids=frozenset({alice.pk}), query="kubernetes deployment", strategy="hybrid")
    top = result.hits[0]
    assert top.memory.content == "We deploy the backend with Kubernetes"
    assert top.tier == "hybrid" and top.fts_score is not None and top.vec_score is not None
    assert top.score == pytest.approx(1.0)  # the best of both lists: 1 in each, after normalisation


def test_hybrid_fuses_by_rank_when_asked(alice, settings):
    settings.MEMORY_FUSION = "rrf"
    make_memory(alice, content="We deploy the backend with Kubernetes")
    make_memory(alice, content="My cat sleeps all day")
    reindex_all()
    top = retrieve(owner_ids=frozenset({alice.pk}), query="kubernetes deployment", strategy="hybrid").hits[0]
    assert top.tier == "hybrid-rrf" and top.score == pytest.approx(2 / 61, rel=1e-6)


def test_the_vector_tier_applies_owner_expiry_and_session_filters(alice, bob):
    make_memory(alice, content="golden retriever puppy", session_id="s1")
    make_memory(alice, content="golden retriever puppy, expired", expires_at=expired())
    make_memory(alice, content="golden retriever puppy in another chat", session_id="s2")
    make_memory(bob, content="golden retriever puppy of bob", session_id="s1")
    reindex_all()
    result = retrieve(owner_ids=frozenset({alice.pk}), query="dog", strategy="semantic", session_id="s1")
    assert contents(result) == ["golden retriever puppy"]


def test_memories_without_vectors_are_embedded_lazily_on_read(alice, monkeypatch):
    monkeypatch.setattr(engine, "LAZY_EMBED_PER_REQUEST", 2)
    for i in range(3):
        make_memory(alice, content=f"note {i} about golden retriever puppies")
    assert pending_count() == 3
    retrieve(owner_ids=frozenset({alice.pk}), query="dogs", strategy="semantic")
    assert pending_count() == 1  # bounded per request
    retrieve(owner_ids=frozenset({alice.pk}), query="dogs", strategy="semantic")
    assert pending_count() == 0


def test_writes_are_embedded_after_commit(alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        memory = make_memory(alice, content="I like hiking")
    memory.refresh_from_db()
    assert memory.needs_reindex is False
    assert database_store().seqs() == {memory.seq}


def test_reindex_drains_the_queue_and_reports_progress(alice):
    for i in range(5):
        make_memory(alice, content=f"fact {i}")
    seen = []

    def receiver(sender, done, total, finished, **kwargs):
        seen.append((done, total, finished))

    reindex_progress.connect(receiver)
    try:
        result = reindex_all(batch=2)
    finally:
        reindex_progress.disconnect(receiver)
    assert result["processed"] == 5 and result["pending"] == 0
    assert seen[0] == (0, 5, False) and seen[-1] == (5, 5, True)
    assert Memory.objects.filter(needs_reindex=True).count() == 0


def test_a_model_change_falls_back_to_fts_until_reindexed(alice, monkeypatch):
    monkeypatch.setattr(engine, "LAZY_EMBED_PER_REQUEST", 0)
    make_memory(alice, content="PostgreSQL in production")
    reindex_all()
    database_store().ensure(signature="other:model:256", dim=256)  # the index now belongs to another model
    result = retrieve(owner_ids=frozenset({alice.pk}), query="postgresql", strategy="hybrid")
    assert result.hits[0].tier == "fts5"
    assert "reindex pending" in result.resolution["fallbackReason"]
    reindex_all()
    assert (
        retrieve(owner_ids=frozenset({alice.pk}), query="postgresql", strategy="hybrid").hits[0].tier
        == "hybrid"
    )


def use_a_remote_source_at_port_9():
    """A remote embedding source on 127.0.0.1:9 (answered by respx in the tests that use it)."""
    update_memory_settings(
        {
            "embeddingSource": "remote",
            "customBaseUrl": "http://127.0.0.1:9/v1",
            "customModelId": "m",
            "allowPrivateUrls": True,
        }
    )


@respx.mock
def test_a_failing_remote_embedding_degrades_to_fts_with_the_reason(alice):
    respx.post("http://127.0.0.1:9/v1/embeddings").mock(
        return_value=httpx.Response(500, json={"error": "boom"})
    )
    use_a_remote_source_at_port_9()
    make_memory(alice, content="PostgreSQL in production")
    result = retrieve(owner_ids=frozenset({alice.pk}), query="postgresql", strategy="semantic")
    assert [h.tier for h in result.hits] == ["fts5"]
    assert result.resolution["embeddingSource"] == "remote"
    assert "embedding failed" in result.resolution["fallbackReason"]
    assert Memory.objects.get().needs_reindex is True


def resolution_of(result):
    r = result.resolution
    return r["strategyRequested"], r["strategyUsed"], r["vectorStore"]


def test_a_hybrid_degraded_by_a_pending_reindex_reports_keyword_and_no_vector_store(alice, monkeypatch):
    monkeypatch.setattr(engine, "LAZY_EMBED_PER_REQUEST", 0)
    make_memory(alice, content="PostgreSQL in production")
    reindex_all()
    database_store().ensure(signature="other:model:256", dim=256)
    result = retrieve(owner_ids=frozenset({alice.pk}), query="postgresql", strategy="hybrid")
    assert [h.tier for h in result.hits] == ["fts5"]
    assert resolution_of(result) == ("hybrid", "keyword", "none")
    reindex_all()
    result = retrieve(owner_ids=frozenset({alice.pk}), query="postgresql", strategy="hybrid")
    assert resolution_of(result) == ("hybrid", "hybrid", database_store().name)


@respx.mock
def test_a_failed_query_embedding_reports_keyword_and_no_vector_store(alice):
    respx.post("http://127.0.0.1:9/v1/embeddings").mock(return_value=httpx.Response(500, json={}))
    use_a_remote_source_at_port_9()
    make_memory(alice, content="PostgreSQL in production")
    result = retrieve(owner_ids=frozenset({alice.pk}), query="postgresql", strategy="hybrid")
    assert resolution_of(result) == ("hybrid", "keyword", "none")
    assert "embedding failed" in result.resolution["fallbackReason"]


def test_an_empty_query_runs_the_chronological_tier_and_says_so(alice):
    make_memory(alice, content="PostgreSQL in production")
    reindex_all()
    result = retrieve(owner_ids=frozenset({alice.pk}), query="  ", strategy="hybrid")
    assert [h.tier for h in result.hits] == ["recent"]
    assert resolution_of(result) == ("hybrid", "exact", "none")


@respx.mock
def test_a_remote_source_probes_its_dimension_and_builds_the_index(alice):
    def embed(request):
        import json

        texts = json.loads(request.content)["input"]
        return httpx.Response(
            200,
            json={
                "data": [{"index": i, "embedding": [1.0, float(len(t)), 0.5]} for i, t in enumerate(texts)]
            },
        )

    respx.post("http://127.0.0.1:9/v1/embeddings").mock(side_effect=embed)
    update_memory_settings(
        {
            "embeddingSource": "remote",
            "customBaseUrl": "http://127.0.0.1:9/v1",
            "customModelId": "tiny",
            "allowPrivateUrls": True,
        }
    )
    make_memory(alice, content="abc")
    assert reindex_all()["processed"] == 1
    from memory.models import VectorMeta

    meta = VectorMeta.load()
    assert (meta.active_dim, meta.embedding_signature) == (3, "remote:tiny:3")


def test_chat_retrieval_drops_weak_vector_only_matches_but_the_preview_shows_them(alice, settings):
    make_memory(alice, content="Quarterly revenue spreadsheet for the finance team")
    reindex_all()
    settings.MEMORY_VEC_MIN_SCORE = 0.99
    owners = frozenset({alice.pk})
    assert retrieve(owner_ids=owners, query="my pet dog", strategy="semantic").hits == []
    preview = retrieve(owner_ids=owners, query="my pet dog", strategy="semantic", filter_irrelevant=False)
    assert len(preview.hits) == 1


def fts_queries(captured) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if "memory_fts MATCH" in q["sql"] or "FROM memory_fts AS f" in q["sql"]
    ]


@pytest.mark.django_db(transaction=True)
def test_hybrid_runs_fts_on_a_pool_thread_outside_transactions(static_source):
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from memory.models import ApiKey

    owner, _ = ApiKey.issue(name="carol")
    make_memory(owner, content="We deploy the backend with Kubernetes")
    make_memory(owner, content="My cat sleeps all day")
    reindex_all()
    owners = frozenset({owner.pk})
    with CaptureQueriesContext(connection) as here:
        result = retrieve(owner_ids=owners, query="kubernetes deployment", strategy="hybrid")
    top = result.hits[0]
    assert top.memory.content == "We deploy the backend with Kubernetes"
    assert top.fts_score is not None and top.vec_score is not None  # the FTS half ran…
    assert fts_queries(here) == []  # …on another connection: the pool thread's own
    # Inside a transaction another connection would not see its rows: the FTS query runs here.
    with transaction.atomic(), CaptureQueriesContext(connection) as inside:
        inline = retrieve(owner_ids=owners, query="kubernetes deployment", strategy="hybrid")
    assert fts_queries(inside) != [] and inline.hits[0].fts_score == top.fts_score


def test_bulk_writes_embed_inline_with_the_static_source(alice):
    from memory.services.memories import MemoryInput, memory_bulk_create

    result = memory_bulk_create([MemoryInput(owner=alice, content=f"fact {i} about dogs") for i in range(5)])
    assert result["created"] == 5
    assert pending_count() == 0
    assert database_store().count() == 5
    hits = retrieve(owner_ids=frozenset({alice.pk}), query="puppies", strategy="semantic", limit=5)
    assert len(hits.hits) == 5


def test_bulk_writes_leave_slow_sources_to_the_background(alice):
    from memory.services.memories import MemoryInput, memory_bulk_create

    update_memory_settings({"embeddingSource": "transformers"})
    memory_bulk_create([MemoryInput(owner=alice, content="a fact")])
    assert pending_count() == 1


def test_memories_still_waiting_for_vectors_are_said_in_the_resolution(alice, monkeypatch):
    """After a rebuild the index fills in the background; meanwhile a search says what it cannot see."""
    for text in ("My dog is a golden retriever", "I play the cello", "We ship on Fridays"):
        make_memory(alice, content=text)  # their indexing task runs on commit, never here
    monkeypatch.setattr(engine, "LAZY_EMBED_PER_REQUEST", 1)
    first = retrieve(owner_ids=frozenset({alice.pk}), query="my pet", strategy="semantic")
    assert "more memories may wait (reindex in progress)" in first.resolution["fallbackReason"]
    monkeypatch.setattr(engine, "LAZY_EMBED_PER_REQUEST", 16)
    rest = retrieve(owner_ids=frozenset({alice.pk}), query="my pet", strategy="semantic")
    assert rest.resolution["fallbackReason"] is None  # the lazy pass embedded the last two
    assert contents(rest)[0] == "My dog is a golden retriever"
