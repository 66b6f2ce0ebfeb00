"""The Ledger page in a real browser: a chat sent through the gateway (the real ASGI app, a recording
upstream on its own port) appears in the open Ledger list within a second, over the websocket, and
its detail shows the injected memories with their scores and the system message that was sent.
Screenshots: /tmp/shots/ledger-1440.png, ledger-390.png, ledger-detail-1440.png (and
ledger-detail-390.png)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from django.contrib.auth import get_user_model

from gateway.models import UpstreamProvider
from gateway.workers import wait_for_after_response_work
from memory.conf import update_memory_settings
from memory.models import ApiKey, InjectionEntry
from tests.factories import make_memory
from tests.gateway.servers import ServerThread, UpstreamStub

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "ledger-pass-123"
SHOTS = Path("/tmp/shots")
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
# How far the page runs past the right edge of the viewport (0: it does not).
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def upstream_server():
    stub = UpstreamStub()
    server = ServerThread(stub, name="ledger-upstream").start()
    yield stub, server
    server.stop()


@pytest.fixture
def upstream(upstream_server) -> UpstreamStub:
    """The recording upstream, reset; ``upstream.base_url`` is its ``…/v1``."""
    stub, server = upstream_server
    stub.reset()
    stub.base_url = f"{server.url}/v1"
    return stub


@pytest.fixture
def admin(transactional_db):
    return get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)


@pytest.fixture
def gateway(asgi_server, upstream, transactional_db):
    """The gateway of the browser's server, memory on (keyword retrieval: each injected memory has a
    BM25 score) and learning off; after the test its after-response work is waited for, so that it
    cannot race the database flush."""
    UpstreamProvider.objects.create(
        name="stub", base_url=upstream.base_url, api_key="sk-upstream", is_default=True, timeout_seconds=5
    )
    update_memory_settings({"enabled": True, "strategy": "keyword", "learningEnabled": False})
    yield asgi_server.url
    time.sleep(0.05)
    assert wait_for_after_response_work()


def login(page, next_path):
    page.goto(f"/admin/login/?next={next_path}")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path}**")


def shoot(page, name: str, viewport: dict) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size(viewport)
    page.wait_for_timeout(100)  # the layout of the new width
    assert page.evaluate(OVERFLOW) <= 0, f"{name}: the page is wider than {viewport['width']} px"
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    return path


def chat(gateway: str, secret: str, text: str, *, session: str = "") -> str:
    """One chat completion through the gateway; returns the injection id its answer carries."""
    headers = {"Authorization": f"Bearer {secret}"}
    if session:
        headers["x-omniroute-session-id"] = session
    response = httpx.post(
        f"{gateway}/v1/chat/completions",
        headers=headers,
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]},
        timeout=15,
    )
    assert response.status_code == 200, response.text
    return response.headers["x-omniroute-injection-id"]


def test_a_chat_through_the_gateway_appears_live_and_its_detail_shows_the_scores(
    page, admin, gateway, upstream
):
    key, secret = ApiKey.issue(name="acme-app")
    other, other_secret = ApiKey.issue(name="billing-service")
    make_memory(key, "The user prefers vim for editing code", key="preference:editor")
    make_memory(key, "The user writes most code in Python", key="preference:language")
    make_memory(key, "The team deploys on Fridays", key="habit:deploy")
    make_memory(other, "Invoices go out on the first business day", key="procedure:invoices")
    page.set_viewport_size(DESKTOP)
    login(page, "/dashboard/ledger")
    page.wait_for_selector("#live-status[data-state=on]")
    assert page.locator("#ledger-list", has_text="No injection recorded yet").is_visible()

    injection_id = chat(gateway, secret, "Which code editor should the user pick?", session="chat-7")
    answered = time.monotonic()
    row = page.locator(f"#ledger-list tr[data-entry='{injection_id}']")
    row.wait_for(timeout=5000)
    assert time.monotonic() - answered < 1.0
    assert "acme-app" in row.inner_text() and "gpt-4o-mini" in row.inner_text()
    assert row.locator("[data-memory-count]").inner_text().strip() == "2"
    entry = InjectionEntry.objects.get(pk=injection_id)
    sent = [m["content"] for m in upstream.last.messages if m["role"] == "system"]
    assert entry.system_message in sent  # the entry keeps exactly what went upstream

    # A second key's chat, for the chart's second colour; then the page at both widths.
    second = chat(gateway, other_secret, "When do the invoices go out?")
    page.locator(f"#ledger-list tr[data-entry='{second}']").wait_for(timeout=5000)
    legend = page.locator(".legend").inner_text()
    assert "acme-app" in legend and "billing-service" in legend
    shoot(page, "ledger-1440", DESKTOP)
    shoot(page, "ledger-390", PHONE)

    # The filters: one key only.
    page.set_viewport_size(DESKTOP)
    page.select_option("#ledger_key", str(key.pk))
    page.wait_for_function("document.querySelectorAll('#ledger-list tr[data-entry]').length === 1")
    assert f"key={key.pk}" in page.url

    # The detail: the memories in their injected order, with their scores, and the message sent.
    page.locator(f"tr[data-entry='{injection_id}'] a").click()
    page.wait_for_url(f"**/dashboard/ledger/{injection_id}")
    items = page.locator("#injected-memories [data-injected]")
    assert items.count() == 2
    for ref, item in zip(entry.memories, items.all(), strict=True):
        assert item.get_attribute("data-injected") == ref["id"]
        assert item.locator("[data-score]").inner_text() == f"{ref['score']:.3f}"
    assert all(ref["score"] > 0 for ref in entry.memories)  # BM25: real scores, not placeholders
    shown = page.locator("#injected-memories").inner_text()
    assert "The user prefers vim for editing code" in shown and "most code in Python" in shown
    assert "habit:deploy" not in shown
    system = page.locator("[data-system-message]").inner_text()
    assert system == entry.system_message and "The user prefers vim for editing code" in system
    assert "chat-7" in page.locator("[data-entry-facts]").inner_text()

    # Replay now, beside what was injected then.
    page.fill("#replay_query", "Which code editor should the user pick?")
    page.click("#replay-form button[type=submit]")
    page.locator("[data-replay-verdict]").wait_for()
    assert "same memories in the same order" in page.locator("[data-replay-verdict]").inner_text()
    assert page.locator("[data-replay-now] li").count() == 2
    shoot(page, "ledger-detail-1440", DESKTOP)
    shoot(page, "ledger-detail-390", PHONE)

    # Open in Sandbox: the Sandbox runs the same query for the same key.
    page.set_viewport_size(DESKTOP)
    page.click("[data-open-sandbox]")
    page.locator("#sandbox-results [data-result]").first.wait_for()
    assert page.input_value("#sandbox_query") == "Which code editor should the user pick?"
    assert page.locator("#sandbox-results [data-result]").count() == 2
    assert page.js_errors == []
