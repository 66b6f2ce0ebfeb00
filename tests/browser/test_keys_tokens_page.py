"""Keys, tokens and the memory table in a real browser (Debian's Chromium through Playwright, the real
ASGI app): create, copy, rotate and revoke an API key and a management token from the Studio; sort the
memory table and add a memory with metadata, importance and expiry. Screenshots go to /tmp/shots
(keys-1440, keys-390, tokens-1440, tokens-390, memories-1440, memories-390) for a person to look at."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from memory.backends.selection import forget
from memory.models import ApiKey, ManagementToken, Memory, hash_secret
from tests.factories import make_memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/shots")
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
# The document's width and what sticks out past the viewport outside a scrolling frame.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const inScroller = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  };
  const culprits = [...document.body.querySelectorAll('*')]
    .filter((el) => el.getBoundingClientRect().right > width + 0.5 && !inScroller(el))
    .slice(0, 10)
    .map((el) => `${el.tagName.toLowerCase()}.${el.className} ends at ${Math.round(el.getBoundingClientRect().right)}`);
  return {scrollWidth: document.documentElement.scrollWidth, culprits};
}"""
# A browser where the page may not write the clipboard (an insecure origin, an old browser).
NO_CLIPBOARD = "Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});"


@pytest.fixture
def admin(transactional_db):
    forget()
    yield get_user_model().objects.create_superuser("admin", "admin@example.com", "keys-pass-123")
    forget()


@pytest.fixture
def owner(transactional_db) -> ApiKey:
    key = ApiKey.issue(name="acme-app")[0]
    now = timezone.now()
    rows = [
        ("preference:editor", "I prefer dark mode in every editor", 0.3, 4, {"source": "user_message"}),
        ("decision:db", "We decided to use PostgreSQL for billing", 0.9, 12, {"source": "llm_response"}),
        ("family:ana", "My daughter Ana starts school in September", 0.6, 0, {"source": "import"}),
    ]
    for i, (name, text, importance, uses, metadata) in enumerate(rows):
        memory = make_memory(
            key, text, key=name, session_id=f"chat-{i}", importance=importance, metadata=metadata
        )
        Memory.objects.filter(seq=memory.seq).update(
            access_count=uses, last_accessed_at=now - timedelta(hours=i) if uses else None
        )
    return key


def signed_in(chromium, asgi_server, user, *, viewport, init_script: str | None = None):
    """A browser context with ``user``'s session cookie (made by Django's test client), so that the
    test does not depend on the sign-in page's markup; the clipboard may be read and written."""
    client = Client()
    client.force_login(user)
    context = chromium.new_context(base_url=asgi_server.url, viewport=viewport)
    context.set_default_timeout(10_000)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=asgi_server.url)
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": asgi_server.url,
            }
        ]
    )
    if init_script:
        context.add_init_script(init_script)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    return context, page


def shoot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def confirm(page) -> None:
    """Accept the Studio's confirmation dialog (hx-confirm through #confirm-dialog)."""
    page.locator("#confirm-dialog[open] #confirm-ok").click()


def assert_fits(page, width: int, what: str) -> None:
    found = page.evaluate(OVERFLOW)
    assert found["scrollWidth"] <= width, f"{what}: {found}"


def test_create_copy_rotate_and_revoke_a_key_and_a_token(chromium, asgi_server, admin, owner):
    context, page = signed_in(chromium, asgi_server, admin, viewport=DESKTOP)
    try:
        # An API key: created, its secret shown once and copied.
        page.goto("/dashboard/keys")
        page.fill("#key-create input[name=name]", "billing-service")
        page.click("#key-create button[type=submit]")
        secret = page.locator("#new-secret").inner_text().strip()
        key = ApiKey.objects.get(name="billing-service")
        assert hash_secret(secret) == key.key_hash
        page.click("button[data-copy=new-secret]")
        page.locator("#key-create [data-copy-status][data-state=copied]").wait_for()
        assert page.evaluate("navigator.clipboard.readText()") == secret
        row = page.locator("tr[data-key=billing-service]")
        row.wait_for()

        # Rotated: a new secret above the list, the old one refused, same key.
        row.locator("button:has-text('Rotate')").click()
        confirm(page)
        rotated = page.locator("#rotated-secret").inner_text().strip()
        assert rotated != secret
        assert ApiKey.active_for_secret(secret) is None
        assert ApiKey.active_for_secret(rotated).pk == key.pk
        page.locator(f"tr[data-key=billing-service] >> text={rotated[:12]}…").wait_for()  # the list refreshed
        assert page.locator("#key-notice").inner_text().count("The old one no longer works") == 1
        shoot(page, "keys-1440")

        # Revoked: the row says so and offers neither rotate nor revoke.
        row.locator("button:has-text('Revoke')").click()
        confirm(page)
        page.locator("tr[data-key=billing-service] .chip-error", has_text="revoked").wait_for()
        assert page.locator("tr[data-key=billing-service] button:has-text('Rotate')").count() == 0
        assert ApiKey.objects.get(pk=key.pk).revoked_at is not None

        # A management token bound to acme-app, write scope.
        page.click("nav a:has-text('Tokens')")
        page.wait_for_url("**/dashboard/tokens")
        page.fill("#token-create input[name=name]", "ci-deploy")
        page.select_option("#token-create select[name=scope]", "write")
        page.select_option("#token-create select[name=owners]", [str(owner.pk)])
        page.click("#token-create button[type=submit]")
        token_secret = page.locator("#new-token-secret").inner_text().strip()
        token = ManagementToken.objects.get(name="ci-deploy")
        assert hash_secret(token_secret) == token.token_hash
        assert token.scope == "write" and list(token.owners.values_list("pk", flat=True)) == [owner.pk]
        token_row = page.locator("tr[data-token=ci-deploy]")
        token_row.wait_for()
        assert "acme-app" in token_row.locator("[data-owners]").inner_text()

        # A refused create shows the error beside its field: a read token must be bound to a key.
        page.fill("#token-create input[name=name]", "reader")
        page.click("#token-create button[type=submit]")
        owners_field = page.locator("#token-create .field-owners .field-error")
        owners_field.wait_for()
        assert "must be bound to at least one API key" in owners_field.inner_text()

        token_row.locator("button:has-text('Rotate')").click()
        confirm(page)
        new_token = page.locator("#rotated-token-secret").inner_text().strip()
        assert new_token != token_secret
        assert ManagementToken.objects.get(pk=token.pk).token_hash == hash_secret(new_token)
        shoot(page, "tokens-1440")

        page.locator("tr[data-token=ci-deploy] button:has-text('Revoke')").click()
        confirm(page)
        page.locator("tr[data-token=ci-deploy] .chip-error", has_text="revoked").wait_for()
        assert ManagementToken.objects.get(pk=token.pk).revoked_at is not None
        assert page.js_errors == []

        page.set_viewport_size(PHONE)
        page.goto("/dashboard/tokens")
        page.locator("tr[data-token=ci-deploy]").wait_for()
        assert_fits(page, 390, "tokens page")
        shoot(page, "tokens-390")
        page.goto("/dashboard/keys")
        page.locator("tr[data-key=billing-service]").wait_for()
        assert_fits(page, 390, "keys page")
        shoot(page, "keys-390")
    finally:
        context.close()


def test_without_a_clipboard_the_copy_button_selects_the_secret_and_says_so(chromium, asgi_server, admin):
    context, page = signed_in(chromium, asgi_server, admin, viewport=DESKTOP, init_script=NO_CLIPBOARD)
    try:
        page.goto("/dashboard/keys")
        page.fill("#key-create input[name=name]", "no-clipboard")
        page.click("#key-create button[type=submit]")
        secret = page.locator("#new-secret").inner_text().strip()
        page.click("button[data-copy=new-secret]")
        status = page.locator("#key-create [data-copy-status][data-state=fallback]")
        status.wait_for()
        assert "press Ctrl+C" in status.inner_text() and status.is_visible()
        assert page.evaluate("window.getSelection().toString()").strip() == secret
        assert page.js_errors == []
    finally:
        context.close()


def test_the_memory_table_sorts_and_the_dialog_takes_metadata_importance_and_expiry(
    chromium, asgi_server, admin, owner
):
    context, page = signed_in(chromium, asgi_server, admin, viewport=DESKTOP)
    try:
        page.goto(f"/dashboard/memory?owner={owner.pk}")
        table = page.locator("#memory-table")
        table.wait_for()
        keys = table.locator("td.key-cell")
        assert (
            "user"
            in table.locator("tr", has_text="preference:editor").locator("[data-col=source]").inner_text()
        )

        # Sorted on the server by importance, highest first, then reversed.
        table.locator("th[data-sort=importance] a").click()
        page.locator("th[data-sort=importance][aria-sort=descending]").wait_for()
        assert keys.all_inner_texts() == ["decision:db", "family:ana", "preference:editor"]
        assert "ordering=-importance" in page.url
        page.locator("th[data-sort=importance] a").click()
        page.locator("th[data-sort=importance][aria-sort=ascending]").wait_for()
        assert keys.all_inner_texts() == ["preference:editor", "family:ana", "decision:db"]
        page.locator("th[data-sort=uses] a").click()
        page.locator("th[data-sort=uses][aria-sort=descending]").wait_for()
        assert keys.all_inner_texts() == ["decision:db", "preference:editor", "family:ana"]

        # The add dialog: an expiry in the past is refused beside its field, then a good one is saved.
        page.click("a[data-open=add-dialog]")
        dialog = page.locator("#add-dialog")
        dialog.locator("select[name=type]").select_option("procedural")
        dialog.locator("input[name=key]").fill("habit:deploy")
        dialog.locator("textarea[name=content]").fill("Deploys on Fridays after lunch")
        dialog.locator("textarea[name=metadata]").fill('{"team": "ops"}')
        dialog.locator("input[name=importance]").fill("0.95")
        dialog.locator("input[name=expires_at]").fill("2001-01-01T10:00")
        dialog.locator("button[type=submit]").click()
        beside = dialog.locator("[data-field-error=expires_at]")
        beside.wait_for()
        assert "Must be in the future" in beside.inner_text()
        assert not Memory.objects.filter(key="habit:deploy").exists()
        shoot(page, "memories-dialog-1440")
        later = (timezone.now() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M")
        page.locator("#add-dialog input[name=expires_at]").fill(later)
        page.locator("#add-dialog button[type=submit]").click()
        page.locator("#add-dialog").wait_for(state="hidden")
        new_row = page.locator("#memory-table tr", has_text="habit:deploy")
        new_row.wait_for()
        saved = Memory.objects.get(key="habit:deploy")
        assert saved.metadata == {"team": "ops", "source": "studio"} and saved.importance == 0.95
        assert saved.expires_at.strftime("%Y-%m-%dT%H:%M") == later
        assert new_row.locator("[data-col=importance]").inner_text() == "0.95"
        assert new_row.locator("[data-col=source]").inner_text() == "Studio"
        assert page.locator("th[data-sort=uses][aria-sort=descending]").count() == 1  # the sort is kept
        shoot(page, "memories-1440")

        # The inline edit shows the same fields, filled in.
        new_row.locator("a:has-text('Edit')").click()
        editor = page.locator("#memory-table tr[data-editing]")
        editor.wait_for()
        assert editor.locator("input[name=importance]").input_value() == "0.95"
        assert editor.locator("input[name=expires_at]").input_value() == later
        assert '"team": "ops"' in editor.locator("textarea[name=metadata]").input_value()
        shoot(page, "memories-edit-1440")
        editor.locator("button:has-text('Cancel')").click()
        page.locator("#memory-table tr[data-editing]").wait_for(state="detached")
        assert page.js_errors == []

        page.set_viewport_size(PHONE)
        page.reload()
        table.wait_for()
        assert_fits(page, 390, "memories tab")
        shoot(page, "memories-390")
    finally:
        context.close()


def test_the_next_page_keeps_the_sort(chromium, asgi_server, admin):
    key = ApiKey.issue(name="many")[0]
    for i in range(23):
        make_memory(key, f"note number {i}", key=f"n:{i:02d}", importance=round(i / 100, 2))
    context, page = signed_in(chromium, asgi_server, admin, viewport=DESKTOP)
    try:
        page.goto(f"/dashboard/memory?owner={key.pk}")
        page.locator("th[data-sort=importance] a").click()
        page.locator("th[data-sort=importance][aria-sort=descending]").wait_for()
        assert page.locator("td.key-cell").first.inner_text() == "n:22"
        page.click(".pager a:has-text('Next')")
        page.locator("[data-pagination]", has_text="Page 2 of 2").wait_for()
        assert page.locator("td.key-cell").all_inner_texts() == ["n:02", "n:01", "n:00"]
        assert page.locator("th[data-sort=importance][aria-sort=descending]").count() == 1
        assert page.js_errors == []
    finally:
        context.close()
