"""The Studio's Contradictions page: the open contradictions of a key with the four resolutions, and
consolidation's dry-run preview, merge and undo, all over the same services as the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.test import Client

from memory.models import AuditEvent, ConsolidationRun, Contradiction, Memory
from memory.services.indexing import index_by_seqs
from memory.services.memories import MemoryInput, memory_create

T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


def write(owner, content, days=0):
    memory, _ = memory_create(MemoryInput(owner=owner, content=content, created_at=T0 + timedelta(days=days)))
    return memory


def test_it_lists_the_open_contradictions_of_the_selected_key(studio, alice, bob):
    write(alice, "I live in Leeds")
    write(alice, "I might move to Berlin", days=1)
    write(bob, "I live in Paris")
    write(bob, "I might move to Rome", days=1)
    page = studio.get("/dashboard/contradictions", {"key": str(alice.pk)})
    html = page.content.decode()
    assert page.status_code == 200
    assert "I live in Leeds" in html and "I might move to Berlin" in html and "ambiguous" in html
    assert "I live in Paris" not in html
    for label in ("Keep old", "Keep new", "Keep both", "Merge"):
        assert label in html
    assert 'href="/dashboard/contradictions"' in html  # the nav link
    everyone = studio.get("/dashboard/contradictions").content.decode()
    assert "I live in Paris" in everyone and "I live in Leeds" in everyone


def test_resolving_swaps_the_list_and_audits(studio, alice):
    write(alice, "I live in Leeds")
    write(alice, "I might move to Berlin", days=1)
    item = Contradiction.objects.get()
    answer = studio.hx_post(
        f"/dashboard/contradictions/{item.id}/resolve",
        {"resolution": "keep_old", "key": str(alice.pk), "status": "open"},
        target="contradiction-list",
    )
    assert answer.status_code == 200
    html = answer.content.decode()
    assert "Resolved: Keep old." in html and "Nothing to review" in html
    item.refresh_from_db()
    assert (item.status, item.resolution) == ("resolved", "keep_old")
    assert Memory.objects.get(content="I might move to Berlin").valid_to is not None
    assert AuditEvent.objects.get(action="contradiction.resolve").via == "studio"


def test_a_plain_post_redirects_and_a_bad_resolution_is_a_400(studio, alice):
    write(alice, "I live in Leeds")
    write(alice, "I might move to Berlin", days=1)
    item = Contradiction.objects.get()
    bad = studio.post(f"/dashboard/contradictions/{item.id}/resolve", {"resolution": "drop"})
    assert bad.status_code == 400
    done = studio.post(f"/dashboard/contradictions/{item.id}/resolve", {"resolution": "keep_both"})
    assert done.status_code == 302 and done["Location"].startswith("/dashboard/contradictions")
    missing = studio.post(
        "/dashboard/contradictions/7f6b6c3e-8d55-4cc4-8d0e-3c6f7a3f9e21/resolve", {"resolution": "merge"}
    )
    assert missing.status_code == 404


def test_the_consolidation_preview_then_merge_then_undo(studio, alice):
    for i, text in enumerate(("I like tea", "The user likes tea", "I like coffee")):
        write(alice, text, days=i)
    index_by_seqs(list(Memory.objects.values_list("seq", flat=True)))
    preview = studio.hx_post(
        "/dashboard/contradictions/consolidate", {"key": str(alice.pk)}, target="consolidation"
    )
    html = preview.content.decode()
    assert "Would merge 1 memory in 1 group" in html and "Merge 1 memory" in html
    assert Memory.objects.count() == 3 and not ConsolidationRun.objects.exists()
    merged = studio.hx_post(
        "/dashboard/contradictions/consolidate", {"key": str(alice.pk), "apply": "on"}, target="consolidation"
    )
    assert "Merged 1 memory in 1 group" in merged.content.decode()
    assert sorted(Memory.objects.values_list("content", flat=True)) == ["I like coffee", "The user likes tea"]
    run = ConsolidationRun.objects.get()
    assert AuditEvent.objects.get(action="memory.consolidate").via == "studio"
    undone = studio.hx_post(
        f"/dashboard/consolidation/{run.id}/undo", {"key": str(alice.pk)}, target="consolidation"
    )
    assert "Undone: 1 memory restored." in undone.content.decode()
    assert Memory.objects.count() == 3
    again = studio.hx_post(
        f"/dashboard/consolidation/{run.id}/undo", {"key": str(alice.pk)}, target="consolidation"
    )
    assert "undone already" in again.content.decode()


def test_consolidation_needs_a_key_and_the_page_needs_staff(studio, db):
    answer = studio.post("/dashboard/contradictions/consolidate", {})
    assert answer.status_code == 400 and "Choose a key to consolidate." in answer.content.decode()
    anonymous = Client().get("/dashboard/contradictions")
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]


def test_each_row_shows_the_rules_confidence(studio, alice):
    write(alice, "I live in Leeds")
    write(alice, "I might move to Berlin", days=1)  # ambiguous, a hedged change: 0.40
    write(alice, "I work at Google", days=2)
    write(alice, "I work at Meta", days=3)  # supersedes, no change cue: 0.70
    item = Contradiction.objects.get(new__content="I might move to Berlin")
    page = studio.get("/dashboard/contradictions", {"key": str(alice.pk)})
    html = page.content.decode()
    assert page.status_code == 200
    assert item.confidence == 0.4
    assert 'data-confidence="0.40"' in html and "confidence 0.40" in html
    resolved = studio.get("/dashboard/contradictions", {"key": str(alice.pk), "status": "resolved"})
    assert 'data-confidence="0.70"' in resolved.content.decode()
    Contradiction.objects.filter(pk=item.pk).update(confidence=None)  # recorded before it was scored
    assert (
        "data-confidence"
        not in studio.get("/dashboard/contradictions", {"key": str(alice.pk)}).content.decode()
    )
