"""The Contradictions page in a real browser: an open contradiction of the selected key is resolved
with "Keep new" (htmx swaps the list; the old memory becomes history), then consolidation previews
and merges a duplicate. Screenshot: test-artifacts/contradictions.png."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model

from memory.models import ApiKey, Contradiction, Memory
from memory.services.indexing import index_by_seqs
from memory.services.memories import MemoryInput, memory_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "contradictions-pass-123"
T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


def test_resolve_one_and_consolidate(page, screenshot):
    get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    alice = ApiKey.issue(name="alice")[0]
    for i, text in enumerate(
        ("I live in Leeds", "I might move to Berlin", "I like tea", "The user likes tea")
    ):
        memory_create(MemoryInput(owner=alice, content=text, created_at=T0 + timedelta(days=i)))
    index_by_seqs(list(Memory.objects.values_list("seq", flat=True)))
    item = Contradiction.objects.get(owner=alice)

    target = f"/dashboard/contradictions?key={alice.pk}"
    page.goto(f"/admin/login/?next={target}")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/dashboard/contradictions**")
    row = page.locator(f"tr[data-contradiction='{item.id}']")
    assert "I might move to Berlin" in row.inner_text()
    screenshot(page, "contradictions-open")

    row.locator("button[data-resolution='keep_new']").click()
    page.wait_for_selector("[data-notice]")
    assert "Resolved: Keep new." in page.inner_text("[data-notice]")
    assert page.locator(f"tr[data-contradiction='{item.id}']").count() == 0
    item.refresh_from_db()
    assert (item.status, item.resolution) == ("resolved", "keep_new")
    assert Memory.objects.get(content="I live in Leeds").valid_to is not None

    page.click("button[data-consolidate='dry-run']")
    page.wait_for_selector("[data-plan-summary]")
    assert "Would merge 1 memory in 1 group" in page.inner_text("[data-plan-summary]")
    page.click("button[data-consolidate='apply']")
    page.wait_for_selector("text=Merged 1 memory in 1 group")
    assert Memory.objects.filter(owner=alice, content__contains="tea").count() == 1
    path = screenshot(page, "contradictions")
    assert path.exists() and path.stat().st_size > 10_000
    assert page.js_errors == []
