"""The Sandbox tab: Simulate (retrieve-preview) and Preview injection (nothing stored)."""

from __future__ import annotations

import json

import pytest

from memory.conf import update_memory_settings
from memory.models import Memory
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
    params = {
        "tab": "sandbox",
        "owner": str(owner),
        "query": query,
        "strategy": "hybrid",
        "budget": 2000,
        **extra,
    }
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


def test_a_budget_out_of_range_is_an_error_not_a_preview(studio, alice, facts):
    html = simulate(studio, alice.pk, "editor", budget=50).content.decode()
    assert "result" not in html


def test_simulating_touches_nothing(studio, alice, facts):
    simulate(studio, alice.pk, "editor")
    assert set(Memory.objects.values_list("access_count", flat=True)) == {0}


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


def test_preview_injection_says_when_recall_failed(studio, alice, facts, upstream, monkeypatch):
    import gateway.chat

    def failing_recall(**kwargs):  # a fault in the retrieval engine, as the gateway would meet it
        raise RuntimeError("index unavailable")

    monkeypatch.setattr(gateway.chat, "retrieve_for_chat", failing_recall)
    update_memory_settings({"enabled": True})
    html = studio.hx_post(INJECT, {"owner": str(alice.pk), "request_json": chat("editor?")}).content.decode()
    assert "not injected" in html and "Memory was skipped (recall failed: RuntimeError)" in html
    assert "Memory context" not in html
