"""The Sandbox tab: Simulate (retrieve-preview) and Preview injection (nothing stored)."""

from __future__ import annotations

import json
import re

import pytest

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.models import ApiKey, Memory
from memory.retrieval.chat import retrieve_for_chat
from memory.services.indexing import reindex_all
from tests.factories import make_memory

URL = "/dashboard/memory"


@pytest.fixture(autouse=True)
def keyword_only(db):
    """No embedding source: hybrid degrades to the FTS5 tier, whatever models this machine has built."""
    update_memory_settings({"embeddingSource": "auto", "staticEnabled": False, "transformersEnabled": False})


@pytest.fixture
def facts(alice, bob):
    make_memory(alice, "I prefer vim for editing code", key="preference:editor")
    make_memory(alice, "We deploy on Fridays", key="habit:deploy")
    make_memory(bob, "I prefer emacs for editing code", key="preference:editor")


def simulate(client, owner, query, **extra):
    """Simulate with the form's fields left empty (the gateway's values) unless ``extra`` sets them."""
    params = {"tab": "sandbox", "owner": str(owner), "query": query, **extra}
    return client.hx_get(URL, params, target="sandbox-results")


def test_simulate_ranks_the_selected_owners_memories(studio, alice, facts):
    response = simulate(studio, alice.pk, "which editor for code")
    html = response.content.decode()
    assert "<html" not in html and 'id="sandbox-form"' not in html
    assert "1 result" in html and "preference:editor" in html and "vim" in html and "emacs" not in html
    assert 'class="badge badge-' in html and "score <strong>" in html and " tok" in html
    assert "Strategy used" in html and "tokens used" in html and 'class="progress-bar" style="width:' in html


def test_simulate_over_all_owners_for_a_superuser(studio, alice, facts):
    html = simulate(studio, "all", "editing code").content.decode()
    assert "vim" in html and "emacs" in html


def test_simulate_shows_the_fts_sub_score(studio, alice, facts):
    html = simulate(studio, alice.pk, "deploy").content.decode()
    assert "fts: " in html


def test_no_match_says_so(studio, alice, facts):
    html = simulate(studio, alice.pk, "quantum chromodynamics").content.decode()
    assert "No memories found for this query." in html or "0 results" in html


def test_the_sandbox_works_as_a_full_page_link(studio, alice, facts):
    response = studio.get(
        URL,
        {"tab": "sandbox", "owner": str(alice.pk), "query": "editor", "strategy": "hybrid", "budget": 500},
    )
    html = response.content.decode()
    assert "<html" in html and "preference:editor" in html
    assert 'value="editor"' in html and '<option value="hybrid" selected>' in html


@pytest.mark.parametrize("budget", [0, 16001])
def test_a_budget_out_of_range_is_an_error_not_a_preview(studio, alice, facts, budget):
    html = simulate(studio, alice.pk, "editor", budget=budget).content.decode()
    assert "result" not in html


def test_simulating_touches_nothing(studio, alice, facts):
    simulate(studio, alice.pk, "editor")
    assert set(Memory.objects.values_list("access_count", flat=True)) == {0}


def result_keys(html: str) -> list[str]:
    return re.findall(r'<span class="mono result-key">([^<]*)</span>', html)


@pytest.fixture
def vectors(db):
    """The static model (built by `make test`): hybrid runs its vector tier, so weak vector-only matches exist."""
    if not runtime.static_built():
        pytest.skip("run `manage.py build_embedding_models` (make test does)")
    update_memory_settings({"embeddingSource": "static", "staticEnabled": True})
    yield
    runtime.reset()


@pytest.fixture
def weak_matches(alice, vectors, settings):
    """One memory the query names, four that only a vector search finds, all scoring under the floor."""
    settings.MEMORY_VEC_MIN_SCORE = 0.5
    make_memory(alice, "I prefer vim for editing code", key="preference:editor")
    for key, content in [
        ("home:city", "The user lives in Lisbon"),
        ("pet:dog", "My dog is a golden retriever"),
        ("habit:deploy", "We deploy on Fridays"),
        ("work:report", "Quarterly revenue spreadsheet"),
    ]:
        make_memory(alice, content, key=key)
    reindex_all()
    update_memory_settings({"enabled": True, "strategy": "hybrid", "maxTokens": 1500})


def test_simulate_by_default_lists_exactly_what_the_gateway_would_inject(studio, alice, weak_matches):
    html = simulate(studio, alice.pk, "which editor for code").content.decode()
    gateway = retrieve_for_chat(api_key=alice, query="which editor for code", touch=False)
    assert [m.key for m in gateway.memories] == ["preference:editor"]
    assert result_keys(html) == ["preference:editor"]
    assert "1 result" in html and "/ 1500 tokens used" in html
    assert "as the gateway" in html and "Widened" not in html and "below floor" not in html


def test_simulate_widened_shows_the_matches_below_the_floor_labelled(studio, alice, weak_matches):
    html = simulate(studio, alice.pk, "which editor for code", below_floor="on", budget=500).content.decode()
    assert result_keys(html)[0] == "preference:editor"
    assert set(result_keys(html)) == {
        "preference:editor",
        "home:city",
        "pet:dog",
        "habit:deploy",
        "work:report",
    }
    assert html.count("below floor · not injected") == 4
    assert "Widened: " in html and "matches below the gateway&#x27;s floor included" in html
    assert "budget 500 tokens (the gateway&#x27;s maxTokens is 1500)" in html and "/ 500 tokens used" in html


def test_the_form_starts_from_the_gateway_settings(studio, alice, facts):
    update_memory_settings({"strategy": "recent", "maxTokens": 1500})
    html = studio.get(URL, {"tab": "sandbox", "owner": str(alice.pk)}).content.decode()
    assert (
        '<option value="exact" selected>' in html
        and 'name="budget" min="1" max="16000" step="1" value="1500"' in html
    )
    html = simulate(studio, alice.pk, "which editor for code").content.decode()
    # "recent" is newest first with no search, as the gateway runs it.
    assert result_keys(html) == ["habit:deploy", "preference:editor"] and "as the gateway" in html


def test_simulate_reads_other_owners_when_the_key_has_the_global_scope(studio, alice, bob, facts):
    update_memory_settings({"scope": "global"})
    html = simulate(studio, alice.pk, "editing code").content.decode()
    assert "vim" in html and "emacs" not in html  # the key is not granted the global scope
    ApiKey.objects.filter(pk=alice.pk).update(allow_global_scope=True)
    html = simulate(studio, alice.pk, "editing code").content.decode()
    assert "vim" in html and "emacs" in html and '<span class="muted">bob</span>' in html
    assert "as the gateway" in html and "Widened" not in html


def test_simulate_with_the_session_scope_reads_that_session_only(studio, alice):
    update_memory_settings({"scope": "session"})
    make_memory(alice, "I prefer vim for editing code", key="editor:s1", session_id="s1")
    make_memory(alice, "I prefer nano for editing code", key="editor:s2", session_id="s2")
    assert result_keys(simulate(studio, alice.pk, "editing code", session_id="s1").content.decode()) == [
        "editor:s1"
    ]


INJECT = "/dashboard/memory/inject"


@pytest.fixture
def upstream(db):
    from gateway.models import UpstreamProvider

    return UpstreamProvider.objects.create(name="openai", base_url="http://127.0.0.1:9/v1", is_default=True)


def chat(query, model="gpt-4o-mini"):
    return json.dumps(
        {
            "model": model,
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": query}],
        }
    )


def test_preview_injection_shows_the_body_the_gateway_would_send(studio, alice, facts, upstream):
    update_memory_settings({"enabled": True, "strategy": "hybrid"})
    response = studio.hx_post(
        INJECT, {"owner": str(alice.pk), "request_json": chat("which editor do I prefer?")}
    )
    html = response.content.decode()
    assert "memory injected" in html and "Upstream <strong>openai</strong>" in html
    assert "Memory context: " in html and "vim" in html and "emacs" not in html
    assert html.index("Be brief.") < html.index("Memory context: ")  # after the caller's system prompt
    assert set(Memory.objects.values_list("access_count", flat=True)) == {0}


def test_preview_injection_with_memory_disabled_sends_the_request_unchanged(studio, alice, facts, upstream):
    update_memory_settings({"enabled": False})
    html = studio.hx_post(INJECT, {"owner": str(alice.pk), "request_json": chat("editor?")}).content.decode()
    assert "not injected" in html and "Memory context" not in html


def test_preview_injection_explains_a_request_the_gateway_would_refuse(studio, alice, facts):
    update_memory_settings({"enabled": True})
    html = studio.hx_post(INJECT, {"owner": str(alice.pk), "request_json": chat("editor?")}).content.decode()
    assert "No upstream provider is configured" in html


def test_preview_injection_validates_the_json(studio, alice):
    html = studio.hx_post(INJECT, {"owner": str(alice.pk), "request_json": "{nope"}).content.decode()
    assert "Invalid JSON" in html
    html = studio.hx_post(INJECT, {"owner": str(alice.pk), "request_json": '{"model": "m"}'}).content.decode()
    assert "needs &quot;messages&quot;" in html or 'needs "messages"' in html


def test_preview_injection_needs_one_owner(studio, alice, facts, upstream):
    update_memory_settings({"enabled": True})
    html = studio.hx_post(INJECT, {"owner": "all", "request_json": chat("editor?")}).content.decode()
    assert "Choose the API key this belongs to." in html


def test_preview_injection_says_when_recall_failed(studio, alice, facts, upstream):
    from django.db import connection

    # A fault in the retrieval engine, as the gateway would meet it: the keyword index is gone
    # (dropped inside the test's transaction, which brings it back).
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE memory_fts")
    update_memory_settings({"enabled": True})
    html = studio.hx_post(INJECT, {"owner": str(alice.pk), "request_json": chat("editor?")}).content.decode()
    # A missing table: SQLite's OperationalError, PostgreSQL's ProgrammingError.
    error = "ProgrammingError" if connection.vendor == "postgresql" else "OperationalError"
    assert "not injected" in html and f"Memory was skipped (recall failed: {error})" in html
    assert "Memory context" not in html


def test_preview_injection_with_no_memory_found_shows_no_green_badge(studio, alice, facts, upstream):
    update_memory_settings({"enabled": True, "strategy": "hybrid"})
    html = studio.hx_post(
        INJECT, {"owner": str(alice.pk), "request_json": chat("quantum chromodynamics")}
    ).content.decode()
    assert "0 memories of alice" in html and "Memory context" not in html
    assert "badge-success" not in html and "memory injected" not in html.replace("no memory injected", "")
    assert '<span class="badge badge-warning" data-injection-badge>no memory injected</span>' in html
    assert "found no memory to inject for this request" in html


def test_simulate_composite_shows_each_signal_per_hit(studio, alice, facts):
    html = simulate(studio, alice.pk, "which editor for code", strategy="composite").content.decode()
    assert "data-signals" in html and "strategy composite" in html
    assert "semantic: 1.000" in html and "(keyword)" in html  # no embedding source: bm25's relevance
    assert "recency: 1.000" in html and "importance: " in html


def test_other_strategies_show_no_signals(studio, alice, facts):
    assert "data-signals" not in simulate(studio, alice.pk, "which editor for code").content.decode()


def test_a_current_value_found_through_the_one_it_superseded_says_so(studio, alice):
    old = make_memory(alice, "I work at Google")
    new = make_memory(alice, "I just started at Stripe")
    Memory.objects.filter(seq=old.seq).update(valid_to=new.created_at, superseded_by=new)
    html = simulate(studio, alice.pk, "where do I work", strategy="keyword").content.decode()
    assert "Stripe" in html and "I work at Google" not in html
    assert "data-found-through" in html and str(old.uuid) in html
