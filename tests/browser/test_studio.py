"""The Memory Studio in a real browser: Chromium, the ASGI app, websockets."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from memory.models import ApiKey
from tests.factories import make_memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "studio-pass-123"


@pytest.fixture
def admin(transactional_db):
    return get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)


@pytest.fixture
def owner(transactional_db) -> ApiKey:
    return ApiKey.issue(name="acme-app")[0]


def login(page, username="admin", password=PASSWORD, next_path="/dashboard/memory"):
    page.goto(f"/admin/login/?next={next_path}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path}**")


def test_every_tab_renders(page, admin, owner, screenshot):
    for i, text in enumerate(
        [
            "I prefer dark mode in every editor",
            "We decided to use PostgreSQL for billing",
            "I usually deploy on Fridays",
        ]
    ):
        make_memory(owner, text, key=f"preference:item-{i}")
    login(page)
    page.wait_for_selector("#health .dot-ok, #health .dot-error, #health .dot-unknown")
    screenshot(page, "memories")
    page.click("a.tab:has-text('Sandbox')")
    page.wait_for_selector("#sandbox-form")
    screenshot(page, "sandbox")
    page.click("a.tab:has-text('Engine')")
    page.wait_for_selector("#engine-status")
    screenshot(page, "engine")
    page.goto("/dashboard/settings")
    screenshot(page, "settings")
    other = ApiKey.issue(name="billing-service")[0]
    make_memory(
        other, "Invoices are sent on the first business day", key="procedure:invoices", type="procedural"
    )
    page.goto("/dashboard/memory?owner=all")
    page.locator("#memory-list td", has_text="billing-service").first.wait_for()
    screenshot(page, "memories-all-owners")
    assert page.js_errors == []


def open_studio(page, path="/dashboard/memory"):
    login(page, next_path=path)
    page.wait_for_selector("#live-status[data-state=on]")


def test_add_edit_and_delete_a_memory(page, admin, owner, screenshot):
    open_studio(page)
    page.click("text=+ Add memory")
    dialog = page.locator("#add-dialog")
    assert dialog.locator("button[type=submit]").is_disabled()
    dialog.locator("select[name=type]").select_option("procedural")
    dialog.locator("input[name=key]").fill("workflow:deploy")
    dialog.locator("textarea[name=content]").fill("Deploys with blue-green on Fridays")
    assert dialog.locator("button[type=submit]").is_enabled()
    screenshot(page, "add-dialog")
    dialog.locator("button[type=submit]").click()
    row = page.locator("#memory-list tr", has_text="workflow:deploy")
    row.wait_for()
    assert not dialog.is_visible()
    assert "procedural" in row.inner_text()
    assert page.locator("[data-pagination]").inner_text() == "Page 1 of 1 (1 total)"

    row.locator("text=Edit").click()
    form = page.locator("#memory-list form.edit-form")
    form.wait_for()
    form.locator("textarea[name=content]").fill("Deploys with canary releases on Tuesdays")
    form.locator("textarea[name=metadata]").fill('{"team": ')
    assert form.locator("[data-json-error]").inner_text() == "Invalid JSON"
    assert form.locator("button[type=submit]").is_disabled()
    screenshot(page, "inline-edit")
    form.locator("textarea[name=metadata]").fill('{"team": "platform"}')
    assert form.locator("button[type=submit]").is_enabled()
    form.locator("button[type=submit]").click()
    page.locator("#memory-list td", has_text="canary releases").wait_for()
    assert page.locator("#memory-list form.edit-form").count() == 0

    page.locator("#memory-list tr", has_text="workflow:deploy").locator("text=Delete").click()
    confirm = page.locator("#confirm-dialog")
    confirm.wait_for()
    assert "Delete memory?" in confirm.inner_text()
    confirm.locator("#confirm-ok").click()
    page.locator("#memory-list", has_text="No memories yet").wait_for()
    assert page.js_errors == []


def test_search_is_debounced(page, admin, owner):
    for key, text in [("editor", "prefers vim"), ("shell", "uses zsh"), ("os", "runs Debian")]:
        make_memory(owner, text, key=f"preference:{key}")
    open_studio(page)
    searches = []
    page.on("request", lambda request: "q=" in request.url and searches.append(request.url))
    page.locator("#memory-search").press_sequentially("vim", delay=60)
    page.locator("#memory-list tbody tr").first.wait_for()
    page.wait_for_function("document.querySelectorAll('#memory-list tbody tr').length === 1")
    assert "preference:editor" in page.locator("#memory-list").inner_text()
    assert len(searches) == 1 and "q=vim" in searches[0]
    assert "q=vim" in page.url  # the search is in the address bar (deep link)


def test_import_a_file(page, admin, owner, tmp_path, screenshot):
    path = tmp_path / "memories.json"
    path.write_text(
        '[{"key": "preference:theme", "content": "likes dark mode"},'
        ' {"key": "habit:coffee", "content": "drinks coffee at 9", "type": "procedural"},'
        ' {"key": "broken", "content": ""}]'
    )
    open_studio(page)
    page.click("text=Import")
    page.set_input_files("#import-file", str(path))
    page.locator("#import-dialog button[type=submit]").click()
    report = page.locator("[data-import-report]")
    report.wait_for()
    assert "2 imported, 1 skipped" in report.inner_text()
    assert "entry 3 (broken): content:" in report.inner_text()
    screenshot(page, "import")
    page.locator("#import-dialog button[data-close]").click()
    page.locator("#memory-list td", has_text="habit:coffee").wait_for()
    assert page.locator("[data-pagination]").inner_text() == "Page 1 of 1 (2 total)"


def test_simulate_a_retrieval(page, admin, owner, screenshot):
    from gateway.models import UpstreamProvider
    from memory.conf import update_memory_settings

    UpstreamProvider.objects.create(name="openai", base_url="http://127.0.0.1:9/v1", is_default=True)
    update_memory_settings({"enabled": True})
    make_memory(owner, "The user prefers vim for editing code", key="preference:editor")
    make_memory(owner, "The team deploys on Fridays", key="habit:deploy")
    open_studio(page, "/dashboard/memory?tab=sandbox")
    page.fill("#sandbox_query", "which editor for code")
    page.click("#sandbox-form button[type=submit]")
    first = page.locator("#sandbox-results [data-result]").first
    first.wait_for()
    assert "preference:editor" in first.inner_text()
    assert "score" in first.inner_text() and "tok" in first.inner_text()
    assert "tokens used" in page.locator("#sandbox-results").inner_text()
    page.click("#inject-form button[type=submit]")
    output = page.locator("[data-injection-output]")
    output.wait_for()
    assert "Memory context: " in output.inner_text()
    screenshot(page, "sandbox-results")


def test_a_memory_created_through_the_api_appears_live(page, admin, owner, asgi_server):
    import time

    import httpx

    from memory.models import ManagementToken

    _, token = ManagementToken.issue(name="live-test", scope="write", owners=[owner])
    open_studio(page)
    assert page.locator("#memory-list", has_text="No memories yet").is_visible()
    response = httpx.post(
        f"{asgi_server.url}/api/memory",
        headers={"Authorization": f"Bearer {token}"},
        json={"apiKeyId": str(owner.pk), "key": "preference:live", "content": "arrived over the websocket"},
    )
    assert response.status_code == 201
    sent = time.monotonic()
    page.locator("#memory-list td", has_text="preference:live").wait_for(timeout=5000)
    assert time.monotonic() - sent < 1.0
    assert page.locator("[data-stat=total]").inner_text() == "1"


def test_reindex_progress_reaches_100_percent(page, admin, owner, monkeypatch, screenshot):
    import numpy as np

    from memory.embeddings.base import EmbeddingSource
    from memory.embeddings.runtime import Resolution
    from tests.factories import hash_embed

    class HashSource(EmbeddingSource):
        name, model, dim = "static", "hash-test", 8

        def embed(self, texts):
            return np.stack([hash_embed(t) for t in texts]) if texts else np.zeros((0, 8), dtype=np.float32)

    source = HashSource()
    monkeypatch.setattr(
        "memory.services.indexing.get_source",
        lambda settings: (source, Resolution("static", "hash-test", "test")),
    )
    for i in range(12):
        make_memory(owner, f"fact number {i} about the project", key=f"fact:{i}")
    progress = []
    open_studio(page, "/dashboard/memory?tab=engine")
    page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: progress.append(frame)))
    page.reload()
    page.wait_for_selector("#live-status[data-state=on]")
    page.check("input[name=force]")
    page.click("text=Reindex now")
    page.wait_for_selector("#reindex-progress[data-percent='100']")
    assert "Reindexing started (12 pending)" in page.locator("#reindex-result").inner_text()
    assert "100 %" in page.locator("#reindex-progress").inner_text()
    assert any('"reindex.progress"' in str(frame) and '"finished": true' in str(frame) for frame in progress)
    screenshot(page, "engine-reindexed")


def test_export_downloads_the_current_filter_as_json(page, admin, owner):
    import json

    make_memory(owner, "prefers vim", key="preference:editor")
    make_memory(owner, "ran the migration", key="event:migration", type="episodic")
    open_studio(page)
    page.select_option("#type-filter", "episodic")
    page.wait_for_function("document.querySelectorAll('#memory-list tbody tr').length === 1")
    with page.expect_download() as info:
        page.click("#export-link")
    download = info.value
    assert download.suggested_filename.startswith("memory-export-")
    data = json.loads(open(download.path()).read())
    assert [m["key"] for m in data] == ["event:migration"]
