"""retrieve-preview, reindex, engine-status and embedding-providers."""

import pytest
from django.db import connection

from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_vectors(settings):
    settings.VECTOR_STORE_DISABLE_VEC = True


def test_preview_returns_ranked_hits_with_an_honest_resolution(admin_api, alice):
    make_memory(alice, key="db", content="We run PostgreSQL 16 in production")
    r = admin_api.post("/api/memory/retrieve-preview", {"query": "postgresql?", "apiKeyId": str(alice.pk)})
    assert r.status_code == 200, r.content
    body = r.json()
    hit = body["memories"][0]
    assert hit["key"] == "db" and hit["tier"] == "fts5" and hit["tokens"] == 9
    assert hit["ftsScore"] < 0 and hit["vecScore"] is None
    resolution = body["resolution"]
    assert (resolution["strategyRequested"], resolution["strategyUsed"]) == ("hybrid", "keyword")
    assert resolution["vectorStore"] == "none" and resolution["fallbackReason"]
    assert hit["belowFloor"] is False
    assert body["totalTokensUsed"] == 9 and body["budgetMaxTokens"] == 2000


def test_the_keyword_strategy_runs_fts5_alone_and_says_so(admin_api, alice):
    make_memory(alice, content="We run PostgreSQL 16 in production")
    make_memory(alice, content="Dark mode in every editor")
    body = {"query": "postgresql", "strategy": "keyword", "apiKeyId": str(alice.pk)}
    r = admin_api.post("/api/memory/retrieve-preview", body)
    assert r.status_code == 200, r.content
    hits = r.json()["memories"]
    assert [h["content"] for h in hits] == ["We run PostgreSQL 16 in production"]
    assert hits[0]["tier"] == "fts5" and hits[0]["vecScore"] is None
    resolution = r.json()["resolution"]
    assert (resolution["strategyRequested"], resolution["strategyUsed"]) == ("keyword", "keyword")
    assert resolution["vectorStore"] == "none" and resolution["fallbackReason"] is None


def test_keyword_is_a_strategy_the_settings_accept(admin_api):
    r = admin_api.put("/api/settings/memory", {"strategy": "keyword"})
    assert r.status_code == 200, r.content
    assert admin_api.get("/api/settings/memory").json()["strategy"] == "keyword"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x", "limit": 101}, "limit"),
        ({"query": "x", "maxTokens": 0}, "maxTokens"),
        ({"query": "x", "strategy": "magic"}, "strategy"),
        ({"query": "x", "extra": 1}, "extra"),
    ],
)
def test_preview_validates_its_body(admin_api, body, field):
    r = admin_api.post("/api/memory/retrieve-preview", body)
    assert r.status_code == 400 and [d["field"] for d in r.json()["error"]["details"]] == [field]


def test_preview_with_a_bound_token_stays_in_its_owner(alice_api, alice, bob):
    make_memory(alice, content="kiwi alice")
    make_memory(bob, content="kiwi bob")
    body = alice_api.post("/api/memory/retrieve-preview", {"query": "kiwi"}).json()
    assert [m["content"] for m in body["memories"]] == ["kiwi alice"]
    r = alice_api.post("/api/memory/retrieve-preview", {"query": "kiwi", "apiKeyId": str(bob.pk)})
    assert r.status_code == 403


def test_reindex_accepts_an_empty_body_and_reports_pending(admin_api, alice):
    make_memory(alice, content="a")
    r = admin_api.post("/api/memory/reindex", raw="")
    assert r.status_code == 200 and r.json() == {"started": True, "pending": 1}
    assert admin_api.post("/api/memory/reindex", {"force": "yes"}).status_code == 400


def test_reindex_needs_admin(read_api):
    assert read_api.post("/api/memory/reindex", {}).status_code == 403


def test_engine_status_reports_real_probes(read_api, alice):
    make_memory(alice, content="a")
    body = read_api.get("/api/memory/engine-status").json()
    if connection.vendor == "postgresql":
        assert body["keyword"] == {
            "available": True,
            "backend": "PostgreSQL tsvector",
            "reason": "memory_fts answers @@ queries",
        }
    else:
        assert body["keyword"] == {
            "available": True,
            "backend": "FTS5",
            "reason": "memory_fts answers MATCH queries",
        }
    assert body["vectorStore"]["backend"] == "none" and body["vectorStore"]["needsReindex"] == 1
    assert body["rerank"]["reason"] == "rerank disabled"


def test_embedding_providers_lists_the_local_models(read_api):
    providers = read_api.get("/api/memory/embedding-providers").json()["providers"]
    local = next(p for p in providers if p["provider"] == "local")
    assert {m["dimensions"] for m in local["models"]} == {256, 384}
