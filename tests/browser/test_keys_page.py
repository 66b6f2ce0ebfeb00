"""The Keys and Providers pages in a real browser: add a provider, create a key on the native
store, move it to the provider with a fallback, test its connection."""

from __future__ import annotations

import os
import uuid

import pytest
import redis
from django.contrib.auth import get_user_model
from django.test import override_settings

from memory.backends.selection import forget
from memory.models import ApiKey, ProviderFallback
from memory.services.audit import SYSTEM
from memory.services.providers import provider_save

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "studio-pass-123"
SCREENSHOT = "/tmp/studio-keys.png"


@pytest.fixture
def admin(transactional_db):
    forget()
    # The Redis provider is on loopback: the outbound URL policy needs the private switch.
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    forget()


@pytest.fixture
def redis_prefix():
    prefix = f"omr:test:{uuid.uuid4().hex[:12]}:"
    yield prefix
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


def login(page, next_path):
    page.goto(f"/admin/login/?next={next_path}")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path}**")


def test_set_a_keys_provider_and_test_its_connection(page, admin, redis_prefix, screenshot):
    provider_save(name="spare", type="inmemory", config={}, actor=SYSTEM)
    login(page, "/dashboard/providers")

    # Add a Redis provider through the form; its type's fields are shown as help.
    page.select_option("select[data-type-select]", "redis")
    assert page.locator("details[data-type-help=redis]").get_attribute("open") is not None
    assert page.locator("details[data-type-help=pinecone]").get_attribute("open") is None
    page.fill("#provider-form input[name=name]", "team-redis")
    page.fill(
        "#provider-form textarea[name=config]",
        f'{{"url": "redis://127.0.0.1:6379/0", "prefix": "{redis_prefix}"}}',
    )
    page.click("#provider-form button[type=submit]")
    page.locator("#provider-form .alert.success", has_text="Provider team-redis saved.").wait_for()
    row = page.locator("tr[data-provider=team-redis]")
    row.wait_for()
    row.locator("[data-health=ok]").wait_for()  # the dot, loaded after the list
    screenshot(page, "providers")

    # Create a key: its secret is shown once.
    page.goto("/dashboard/keys")
    page.fill("#key-create input[name=name]", "billing-service")
    page.click("#key-create button[type=submit]")
    secret = page.locator("#new-secret").inner_text()
    key = ApiKey.objects.get(name="billing-service")
    assert secret.startswith(key.prefix)
    page.locator("tr[data-key=billing-service]").wait_for()

    # Move it to the Redis provider, with the in-memory one as its fallback.
    page.locator("tr[data-key=billing-service] >> text=Storage…").click()
    editor = page.locator("tr[data-key=billing-service].editing")
    editor.locator("select[name=provider]").select_option("team-redis")
    editor.locator("select[name=fallback]").first.select_option("spare")
    editor.locator("button[type=submit]").click()
    saved = page.locator("tr[data-key=billing-service]:not(.editing)")
    saved.locator("[data-storage]", has_text="team-redis").wait_for()
    assert "then spare" in saved.locator("[data-storage]").inner_text()
    key.refresh_from_db()
    assert key.provider.name == "team-redis"
    assert [f.provider.name for f in ProviderFallback.objects.filter(api_key=key)] == ["spare"]

    saved.locator("button", has_text="Test connection").click()
    results = saved.locator("[data-key-test] [data-test-result=ok]")
    results.nth(1).wait_for()
    assert results.count() == 2
    saved.locator("[data-health=ok]").wait_for()
    page.screenshot(path=SCREENSHOT, full_page=True)
    screenshot(page, "keys")
    assert page.js_errors == []
    assert os.path.getsize(SCREENSHOT) > 10_000
