"""The Engine tab: status panel (polled), reindex, embedding/rerank controls, activity charts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.conf import get_memory_settings, update_memory_settings
from memory.embeddings import runtime
from memory.models import Memory
from memory.services.indexing import reindex_all
from tests.factories import database_store, make_memory

URL = "/dashboard/memory"


def test_the_engine_tab_has_every_card(studio, alice):
    html = studio.get(URL, {"tab": "engine"}).content.decode()
    for marker in (
        'id="engine-status"',
        'id="embedding-card"',
        'id="rerank-card"',
        'id="qdrant-card"',
        'id="chart-card"',
        "Reindex now",
        "Keyword (FTS5)",
        "Vector store",
    ):
        assert marker in html


def test_the_status_panel_is_polled_every_5_seconds_and_rendered_alone(studio, alice):
    html = studio.get(URL, {"tab": "engine"}).content.decode()
    assert 'hx-trigger="every 5s, engine-changed from:body"' in html
    partial = studio.hx_get(
        URL, {"tab": "engine", "owner": str(alice.pk)}, target="engine-status"
    ).content.decode()
    assert "<html" not in partial and "Embedding source" not in partial
    assert "Keyword (FTS5)" in partial and 'data-pending="' in partial


def test_the_status_panel_warns_about_memories_waiting_for_vectors(studio, alice):
    update_memory_settings({"embeddingSource": "auto", "staticEnabled": False, "transformersEnabled": False})
    make_memory(alice, "one")
    make_memory(alice, "two")
    partial = studio.hx_get(URL, {"tab": "engine"}, target="engine-status").content.decode()
    assert "2 memories need reindexing" in partial and 'data-pending="2"' in partial


models_built = pytest.mark.skipif(
    not (runtime.static_built() and runtime.minilm_built()),
    reason="run `manage.py build_embedding_models` (make test does)",
)


@pytest.fixture
def stale_index(alice):
    """Two memories with static vectors, then the source switched to transformers (its after-commit
    reindex never runs here): the index is stale."""
    update_memory_settings({"embeddingSource": "static"})
    make_memory(alice, "my dog is a golden retriever")
    make_memory(alice, "the quarterly revenue report")
    reindex_all()
    update_memory_settings({"embeddingSource": "transformers"})
    yield
    runtime.reset()


def vector_store_row(partial: str) -> str:
    return next(row for row in partial.split('<li class="status-row">') if "Vector store" in row)


@models_built
def test_the_status_panel_shows_a_stale_index_with_both_signatures(studio, stale_index):
    partial = studio.hx_get(URL, {"tab": "engine"}, target="engine-status").content.decode()
    row = vector_store_row(partial)
    assert '<span class="dot dot-warn"></span>' in row
    assert (
        f"{database_store().name} · stale index: holds static:minilm-static-256:256, should hold transformers:"
        in row
    )
    assert "Keyword search only until the reindex rebuilds it." in row
    assert "2 memories need reindexing" in row and 'data-pending="2"' in partial


@models_built
def test_reindex_now_without_force_rebuilds_a_stale_index(
    studio, alice, stale_index, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        html = studio.hx_post("/dashboard/memory/reindex", {"owner": str(alice.pk)}).content.decode()
    assert "Reindexing started (2 pending)" in html
    partial = studio.hx_get(URL, {"tab": "engine"}, target="engine-status").content.decode()
    row = vector_store_row(partial)
    assert '<span class="dot dot-ok"></span>' in row and f"{database_store().name} · 2 vectors" in row
    assert "stale" not in partial and 'data-pending="0"' in partial


def test_reindex_now_with_force_queues_every_memory_and_reports_the_pending_count(
    studio, alice, django_capture_on_commit_callbacks
):
    for i in range(7):
        make_memory(alice, f"fact {i}")
    Memory.objects.update(needs_reindex=False)
    with django_capture_on_commit_callbacks() as queued:
        html = studio.hx_post(
            "/dashboard/memory/reindex", {"owner": str(alice.pk), "force": "1"}
        ).content.decode()
    assert "Reindexing started (7 pending)" in html and 'data-total="7"' in html
    assert Memory.objects.filter(needs_reindex=True).count() == 7
    assert queued, "the reindex runs in the background, after commit"


def test_only_administrators_reindex(operator, alice):
    assert operator.hx_post("/dashboard/memory/reindex", {"owner": str(alice.pk)}).status_code == 403


def test_choosing_an_embedding_source_saves_it_at_once(studio, alice):
    response = studio.hx_post(
        "/dashboard/memory/engine-settings", {"owner": str(alice.pk), "embeddingSource": "remote"}
    )
    assert get_memory_settings().embeddingSource == "remote"
    assert "engine-changed" in response["HX-Trigger"]
    assert "Provider / model" in response.content.decode()


def test_the_local_source_switches_toggle(studio, alice):
    update_memory_settings({"staticEnabled": True})
    studio.hx_post("/dashboard/memory/engine-settings", {"owner": str(alice.pk), "staticEnabled": "false"})
    assert get_memory_settings().staticEnabled is False


def test_invalid_engine_settings_are_refused_with_the_serializer_message(studio, alice):
    response = studio.hx_post(
        "/dashboard/memory/engine-settings", {"owner": str(alice.pk), "embeddingSource": "magic"}
    )
    assert "is not a valid choice" in response.content.decode()
    assert get_memory_settings().embeddingSource != "magic"


def test_rerank_lists_upstream_providers_and_saves_provider_slash_model(studio, alice):
    from gateway.models import UpstreamProvider

    UpstreamProvider.objects.create(name="cohere", base_url="http://127.0.0.1:9/v1", api_key="k")
    UpstreamProvider.objects.create(name="nokey", base_url="http://127.0.0.1:9/v1")
    update_memory_settings({"rerankEnabled": True})
    html = studio.get(URL, {"tab": "engine"}).content.decode()
    assert '<option value="cohere"' in html and '<option value="nokey"' not in html
    studio.hx_post(
        "/dashboard/memory/engine-settings",
        {"owner": str(alice.pk), "rerankProvider": "cohere", "rerankModel": "rerank-v3.5"},
    )
    assert get_memory_settings().rerankProviderModel == "cohere/rerank-v3.5"


def test_enabling_rerank_is_blocked_without_a_provider_key(studio, alice, settings, tmp_path):
    settings.MEMORY_MODELS_DIR = tmp_path  # nor a local cross-encoder built
    html = studio.get(URL, {"tab": "engine"}).content.decode()
    assert 'title="No provider with a configured API key' in html


def test_operators_see_the_engine_but_cannot_change_it(operator, alice):
    html = operator.get(URL, {"tab": "engine"}).content.decode()
    assert '<fieldset class="source-grid" disabled>' in html
    response = operator.hx_post(
        "/dashboard/memory/engine-settings", {"owner": str(alice.pk), "staticEnabled": "false"}
    )
    assert response.status_code == 403


def test_the_activity_charts_are_svg_for_the_selected_owner(studio, alice, bob):
    make_memory(alice, "today", key="a:1")
    make_memory(alice, "earlier", key="a:2", type="episodic", created_at=timezone.now() - timedelta(days=3))
    make_memory(bob, "bob", key="b:1")
    html = studio.get(URL, {"tab": "engine", "owner": str(alice.pk)}).content.decode()
    assert html.count("<svg") == 2
    assert "Memories created per day, last 30 days (2 in total)" in html
    assert "<title>factual: 1</title>" in html and "<title>episodic: 1</title>" in html


def test_the_engine_tab_stays_within_a_query_budget(studio, alice, django_assert_max_num_queries):
    for i in range(20):
        make_memory(alice, f"fact {i}")
    # A constant number, whatever the memory count: the page, the settings groups, the vector meta, the
    # index counts (one statement) and the charts.
    with django_assert_max_num_queries(28):
        assert studio.get(URL, {"tab": "engine"}).status_code == 200


@pytest.fixture
def static_vectors(alice):
    """A vector index built by the static source (256-d)."""
    update_memory_settings({"embeddingSource": "static"})
    runtime.reset()
    make_memory(alice, "I write my notes in Obsidian")
    reindex_all()


@models_built
def test_engine_status_says_the_int8_kernel_passed_its_self_check(studio, admin_api, static_vectors):
    scan = admin_api.get("/api/memory/engine-status").json()["vectorStore"]["int8Scan"]
    assert scan["dim"] == 256 and scan["exact"] is True and scan["active"] is True
    assert scan["minRows"] == 20_000 and "exact on" in scan["reason"]
    partial = studio.hx_get(URL, {"tab": "engine"}, target="engine-status").content.decode()
    assert "Int8 pre-scan" in partial and "Exact kernel, owners of 20,000+ vectors" in partial


@models_built
def test_an_inexact_int8_kernel_is_flagged_in_engine_status_and_the_panel(
    studio, admin_api, static_vectors, monkeypatch
):
    """On a CPU whose kernel gets the integers wrong, the pre-scan is off and the operator sees why."""
    from memory.vectorstores import int8scan

    monkeypatch.setattr(int8scan, "matmul_integer", lambda a, b: a.astype("int32") @ b.astype("int32") - 1)
    scan = admin_api.get("/api/memory/engine-status").json()["vectorStore"]["int8Scan"]
    assert scan["exact"] is False and scan["active"] is False
    assert "integer products wrong" in scan["reason"]
    partial = studio.hx_get(URL, {"tab": "engine"}, target="engine-status").content.decode()
    assert "failed its self-check; vectors are scanned in float32" in partial
    assert "integer products wrong" in partial


def test_engine_status_says_when_the_int8_pre_scan_is_switched_off(admin_api, monkeypatch):
    from memory.vectorstores import int8scan

    monkeypatch.setattr(int8scan, "MIN_ROWS", 0)
    scan = admin_api.get("/api/memory/engine-status").json()["vectorStore"]["int8Scan"]
    assert scan["active"] is False and scan["exact"] is None and "is 0" in scan["reason"]


def test_the_local_model_is_chosen_in_the_embedding_card(studio, alice):
    update_memory_settings({"embeddingSource": "transformers"})
    html = studio.get(URL, {"tab": "engine"}).content.decode()
    assert 'name="transformersModel"' in html and '<option value="bge-small-en-v1.5"' in html
    studio.hx_post(
        "/dashboard/memory/engine-settings",
        {"owner": str(alice.pk), "transformersModel": "bge-small-en-v1.5"},
    )
    assert get_memory_settings().transformersModel == "bge-small-en-v1.5"


def test_the_local_cross_encoder_is_one_click_away_once_rerank_is_on(studio, alice):
    update_memory_settings({"rerankEnabled": True})
    assert "Use the local cross-encoder" in studio.get(URL, {"tab": "engine"}).content.decode()
    studio.hx_post(
        "/dashboard/memory/engine-settings",
        {"owner": str(alice.pk), "rerankProviderModel": "local/ms-marco-MiniLM-L-12-v2"},
    )
    assert get_memory_settings().rerankProviderModel == "local/ms-marco-MiniLM-L-12-v2"
