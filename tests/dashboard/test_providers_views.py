"""The Providers page: list, add, edit (secrets masked), delete (refused while in use), test connection."""

from __future__ import annotations

import json
import socket
import uuid

import pytest
import redis
from django.test import Client, override_settings

from memory.backends.selection import forget
from memory.models import AuditEvent, MemoryProvider
from memory.services.audit import SYSTEM
from memory.services.providers import MASK, key_set_provider, provider_save

PROVIDERS = "/dashboard/providers"
ADD = "/dashboard/providers/add"


@pytest.fixture(autouse=True)
def _fresh_backends():
    forget()
    # The Redis providers here are on loopback: the outbound URL policy needs the private switch.
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield
    forget()


@pytest.fixture
def redis_prefix():
    """A key prefix of its own on the shared Redis at 127.0.0.1:6379, emptied afterwards."""
    prefix = f"omr:test:{uuid.uuid4().hex[:12]}:"
    yield prefix
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


def dead_redis_url() -> str:
    """A redis URL where nothing listens (a port just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def make_provider(name: str, type_: str = "inmemory", config: dict | None = None) -> MemoryProvider:
    return provider_save(name=name, type=type_, config=config or {}, actor=SYSTEM)


def test_the_page_lists_each_provider_with_its_type_capabilities_and_users(studio, alice):
    make_provider("ram")
    make_provider("spare")
    key_set_provider(alice, provider="ram", fallbacks=["spare"], actor=SYSTEM)
    html = studio.get(PROVIDERS).content.decode()
    assert 'data-provider="ram"' in html and 'data-provider="spare"' in html
    ram_row = html.split('data-provider="ram"')[1].split("</tr>")[0]
    assert '<span class="chip">inmemory</span>' in ram_row
    assert '<span class="badge badge-neutral">keyword</span>' in ram_row
    assert '<span class="badge badge-neutral">vector</span>' in ram_row
    assert "alice" in ram_row and "(fallback)" not in ram_row
    spare_row = html.split('data-provider="spare"')[1].split("</tr>")[0]
    assert "alice" in spare_row and "(fallback)" in spare_row
    # The health dot is loaded after the page: a probe may be slow.
    assert 'hx-get="/dashboard/providers/ram/health"' in ram_row


def test_the_form_shows_every_types_fields_from_its_config_dataclass(studio):
    html = studio.get(PROVIDERS).content.decode()
    redis_help = html.split('data-type-help="redis"')[1].split("</details>")[0]
    assert '<td class="mono">url</td>' in redis_help
    assert "<strong>required</strong>" in redis_help  # url has no default
    assert "&#x27;omr:mem:&#x27;" in redis_help  # prefix's default
    assert 'data-type-help="pinecone"' in html and 'data-type-help="http"' in html


def test_add_a_redis_provider(studio, redis_prefix):
    response = studio.hx_post(
        ADD,
        {
            "name": "team-redis",
            "type": "redis",
            "config": json.dumps({"url": "redis://127.0.0.1:6379/0", "prefix": redis_prefix}),
        },
    )
    assert response.status_code == 200
    assert "Provider team-redis saved." in response.content.decode()
    assert "providers-changed" in json.loads(response["HX-Trigger"])
    provider = MemoryProvider.objects.get(name="team-redis")
    assert provider.type == "redis" and provider.config == {
        "url": "redis://127.0.0.1:6379/0",
        "prefix": redis_prefix,
    }
    assert AuditEvent.objects.filter(action="provider.save").count() == 1


def test_a_bad_config_field_is_named_next_to_the_form_not_a_500(studio):
    response = studio.hx_post(
        ADD, {"name": "bad", "type": "redis", "config": json.dumps({"url": "http://nope"})}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "config.url: url must be a redis://, rediss:// or unix:// URL" in html
    assert not MemoryProvider.objects.exists()

    html = studio.hx_post(
        ADD, {"name": "bad", "type": "redis", "config": json.dumps({"uri": "x"})}
    ).content.decode()
    assert "config.uri: unknown field &#x27;uri&#x27;" in html

    html = studio.hx_post(ADD, {"name": "bad", "type": "redis", "config": "{not json"}).content.decode()
    assert "Invalid JSON" in html


def test_a_bad_name_and_a_taken_name_are_refused(studio):
    make_provider("ram")
    html = studio.hx_post(ADD, {"name": "Not Valid", "type": "inmemory", "config": "{}"}).content.decode()
    assert "name must be 1-64 characters" in html
    html = studio.hx_post(ADD, {"name": "ram", "type": "inmemory", "config": "{}"}).content.decode()
    assert "a provider named &#x27;ram&#x27; exists already" in html
    assert MemoryProvider.objects.count() == 1


def test_without_javascript_an_invalid_add_is_the_page_again_with_a_400(studio):
    response = studio.post(ADD, {"name": "x", "type": "redis", "config": "{}"})
    assert response.status_code == 400
    assert "config.url: url is required for redis" in response.content.decode()
    response = studio.post(ADD, {"name": "ram", "type": "inmemory", "config": ""})
    assert response.status_code == 302 and response["Location"] == PROVIDERS
    assert MemoryProvider.objects.get().name == "ram"


def test_edit_shows_secrets_masked_and_keeps_them_when_sent_back(studio, redis_prefix):
    url = "redis://user:s3cret-pw@127.0.0.1:6379/0"
    provider = make_provider("team-redis", "redis", {"url": url, "prefix": redis_prefix})
    html = studio.get(f"{PROVIDERS}/team-redis/edit").content.decode()
    assert "s3cret-pw" not in html
    assert MASK in html and "Edit provider team-redis" in html
    masked = json.loads(
        html.split('name="config"')[1].split(">", 1)[1].split("</textarea>")[0].replace("&quot;", '"')
    )
    assert masked["url"] == f"redis://user:{MASK}@127.0.0.1:6379/0"
    masked["timeout_seconds"] = 2.0
    response = studio.hx_post(
        f"{PROVIDERS}/team-redis/edit", {"name": "team-redis", "type": "redis", "config": json.dumps(masked)}
    )
    assert "Provider team-redis saved." in response.content.decode()
    provider.refresh_from_db()
    assert provider.config["url"] == url and provider.config["timeout_seconds"] == 2.0


def test_delete_is_refused_with_a_clear_message_while_a_key_uses_it(studio, alice):
    make_provider("ram")
    key_set_provider(alice, provider="ram", fallbacks=[], actor=SYSTEM)
    response = studio.hx_post(f"{PROVIDERS}/ram/delete")
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        "provider &#x27;ram&#x27; is used by API keys (alice): choose another provider for them first" in html
    )
    assert MemoryProvider.objects.filter(name="ram").exists()
    response = studio.post(f"{PROVIDERS}/ram/delete")
    assert response.status_code == 409 and "is used by API keys" in response.content.decode()


def test_delete_an_unused_provider(studio):
    make_provider("ram")
    confirm = studio.get(f"{PROVIDERS}/ram/delete")
    assert "Delete provider ram?" in confirm.content.decode()
    response = studio.post(f"{PROVIDERS}/ram/delete")
    assert response.status_code == 302
    assert not MemoryProvider.objects.exists()


def test_test_connection_of_a_live_redis_is_a_green_dot(studio, redis_prefix):
    make_provider("team-redis", "redis", {"url": "redis://127.0.0.1:6379/0", "prefix": redis_prefix})
    html = studio.hx_post(f"{PROVIDERS}/team-redis/test").content.decode()
    assert 'data-test-result="ok"' in html and 'class="dot dot-ok"' in html
    assert "Connected (" in html
    dot = studio.hx_get(f"{PROVIDERS}/team-redis/health").content.decode()
    assert 'data-health="ok"' in dot


def test_test_connection_of_a_dead_redis_is_a_red_dot_with_the_error(studio):
    make_provider("gone", "redis", {"url": dead_redis_url(), "retries": 0, "timeout_seconds": 1.0})
    response = studio.hx_post(f"{PROVIDERS}/gone/test")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-test-result="error"' in html and 'class="dot dot-error"' in html
    assert "Unreachable: " in html
    assert "refused" in html.lower() or "connect" in html.lower()
    dot = studio.hx_get(f"{PROVIDERS}/gone/health").content.decode()
    assert 'data-health="error"' in dot and "unreachable" in dot


def test_an_unknown_provider_is_a_404(studio):
    assert studio.hx_post(f"{PROVIDERS}/nope/test").status_code == 404
    assert studio.get(f"{PROVIDERS}/nope/edit").status_code == 404


def test_staff_who_are_not_administrators_may_look_but_not_change(operator):
    make_provider("ram")
    html = operator.get(PROVIDERS).content.decode()
    assert "Only administrators can add or change providers." in html
    assert operator.post(ADD, {"name": "x", "type": "inmemory", "config": "{}"}).status_code == 403
    assert operator.post(f"{PROVIDERS}/ram/delete").status_code == 403
    assert MemoryProvider.objects.count() == 1


def test_anonymous_users_are_sent_to_the_login_page(client, db):
    response = client.get(PROVIDERS)
    assert response.status_code == 302 and "login" in response["Location"]
    response = client.post(ADD, {"name": "x", "type": "inmemory", "config": "{}"})
    assert response.status_code == 302 and not MemoryProvider.objects.exists()


def test_writes_need_the_csrf_token(admin_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post(ADD, {"name": "x", "type": "inmemory", "config": "{}"})
    assert response.status_code == 403 and not MemoryProvider.objects.exists()
