"""Compact old (dry run, then confirm; one owner) and the pipeline health dot."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memory.conf import update_memory_settings
from memory.models import Memory
from tests.factories import make_memory

COMPACT = "/dashboard/memory/compact"


def old(owner, key, days=40):
    return make_memory(
        owner, f"old fact {key}. More words.", key=key, created_at=timezone.now() - timedelta(days=days)
    )


def test_a_dry_run_lists_the_candidates_and_changes_nothing(studio, alice, bob):
    old(alice, "a:old-1")
    old(alice, "a:old-2")
    make_memory(alice, "recent", key="a:new")
    old(bob, "b:old")
    response = studio.hx_post(COMPACT, {"owner": str(alice.pk), "days": 30})
    html = response.content.decode()
    assert "2 memories will be compacted into summaries." in html
    assert "a:old-1" in html and "a:old-2" in html and "b:old" not in html and "a:new" not in html
    assert "HX-Trigger" not in response
    assert Memory.objects.count() == 4


def test_confirming_compacts_one_owner_only(studio, alice, bob):
    old(alice, "a:old-1")
    old(alice, "a:old-2")
    old(bob, "b:old")
    response = studio.hx_post(COMPACT, {"owner": str(alice.pk), "days": 30, "confirm": "on"})
    assert "Compacted 2 memories of alice" in response.content.decode()
    assert "memory-changed" in response["HX-Trigger"]
    assert Memory.objects.filter(owner=alice).count() == 1
    assert Memory.objects.get(owner=alice).type == "semantic"
    assert Memory.objects.filter(owner=bob).count() == 1


def test_nothing_old_enough_disables_the_confirm_button(studio, alice):
    make_memory(alice, "recent", key="a:new")
    html = studio.hx_post(COMPACT, {"owner": str(alice.pk), "days": 30}).content.decode()
    assert "No memories eligible for compaction (criteria: &gt;30 days old)." in html
    assert 'type="submit" disabled>Compact now' in html


def test_compact_in_all_owners_view_needs_an_owner(studio, alice):
    old(alice, "a:old")
    html = studio.hx_post(COMPACT, {"owner": "all", "days": 30, "confirm": "on"}).content.decode()
    assert "Choose the API key this belongs to." in html
    assert Memory.objects.count() == 1


def test_the_health_dot_reports_the_pipeline(studio, alice):
    html = studio.hx_get("/dashboard/memory/health").content.decode()
    assert 'class="dot dot-ok"' in html and "Pipeline OK (" in html
    assert 'hx-trigger="every 30s"' in html


def test_a_failing_pipeline_is_a_red_dot(studio, alice):
    update_memory_settings({"embeddingSource": "remote"})  # selected, but no endpoint is configured
    html = studio.hx_get("/dashboard/memory/health").content.decode()
    assert 'class="dot dot-error" title="vector: embedding source &#x27;remote&#x27; is selected' in html
    assert "Pipeline error" in html


def test_the_page_polls_health_every_30_seconds(studio, alice):
    html = studio.get("/dashboard/memory").content.decode()
    assert 'hx-trigger="load delay:200ms, every 30s"' in html and "Check health" in html
