"""An upstream provider's API key written under one master key and read under another (the operator
changed ``MEMORY_ENCRYPTION_KEY``): the gateway answers 503 in the OpenAI error shape, sends nothing
upstream and logs it once; ``/v1/models``, the admin's provider pages, the Studio's Engine tab and
the embedding-providers route still answer; and ``manage.py migrate``, the first step of a start,
fails on the database check ``memory.E002`` naming the row and the remedy. Real keys, real
ciphertexts: only the settings change."""

from __future__ import annotations

import logging
import secrets

import httpx
import openai
import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from gateway.models import UpstreamProvider
from memory.checks import unreadable_secrets
from memory.conf import update_memory_settings
from memory.models import ApiKey, ManagementToken
from tests.conftest import Api
from tests.dashboard.conftest import StudioClient
from tests.gateway.conftest import sdk

PROVIDER_KEY = "sk-written-under-key-a-51e0"


@pytest.fixture
def old_key() -> bytes:
    return secrets.token_bytes(32)


@pytest.fixture
def new_key() -> bytes:
    return secrets.token_bytes(32)


@pytest.fixture
def stale_provider(transactional_db, upstream, old_key, new_key, settings):
    """A provider whose key was stored under ``old_key``; the settings then hold ``new_key``."""
    settings.MEMORY_ENCRYPTION_KEY = old_key
    provider = UpstreamProvider.objects.create(
        name="stale", base_url=upstream.base_url, api_key=PROVIDER_KEY, is_default=True, timeout_seconds=5
    )
    settings.MEMORY_ENCRYPTION_KEY = new_key
    return provider


@pytest.fixture
def alice_secret(transactional_db) -> str:
    return ApiKey.issue(name="alice")[1]


def chat(gateway: str, secret: str) -> httpx.Response:
    return httpx.post(
        f"{gateway}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=15,
    )


def test_the_gateway_answers_503_naming_the_provider_and_sends_nothing_upstream(
    gateway, upstream, stale_provider, alice_secret, caplog
):
    with caplog.at_level(logging.ERROR, logger="gateway.upstream"):
        first = chat(gateway, alice_secret)
        second = chat(gateway, alice_secret)

    for response in (first, second):
        assert response.status_code == 503, response.text
        assert "retry-after" not in response.headers
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("server_error", "provider_key_unreadable")
        assert "'stale'" in error["message"] and "MEMORY_ENCRYPTION_KEY" in error["message"]
    assert upstream.requests == []
    logged = [r for r in caplog.records if r.getMessage() == "gateway.upstream.key_unreadable"]
    assert len(logged) == 1
    assert "gateway_upstreamprovider.api_key of row" in logged[0].error


def test_the_sdk_sees_a_server_error_it_can_report(gateway, stale_provider, alice_secret):
    with pytest.raises(openai.InternalServerError) as caught:
        sdk(gateway, alice_secret).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 503


def test_the_model_list_still_answers_without_that_providers_upstream_models(
    gateway, upstream, stale_provider, alice_secret
):
    UpstreamProvider.objects.create(
        name="listed", base_url=upstream.base_url, model_ids="glm-4", timeout_seconds=5
    )

    response = httpx.get(f"{gateway}/v1/models", headers={"Authorization": f"Bearer {alice_secret}"})

    assert response.status_code == 200, response.text
    assert [m["id"] for m in response.json()["data"]] == ["glm-4"]


def test_the_gateway_works_again_with_the_key_it_was_written_with(
    gateway, upstream, stale_provider, alice_secret, old_key, settings
):
    settings.MEMORY_ENCRYPTION_KEY = old_key

    assert chat(gateway, alice_secret).status_code == 200
    assert upstream.last.headers["authorization"] == f"Bearer {PROVIDER_KEY}"


# -- the admin's provider pages, the Studio, the REST route ------------------------------------------


@pytest.fixture
def studio(admin_user) -> StudioClient:
    client = StudioClient()
    client.force_login(admin_user)
    return client


def test_the_admin_lists_and_opens_the_provider_saying_its_key_is_unreadable(studio, stale_provider):
    listing = studio.get("/admin/gateway/upstreamprovider/")
    assert listing.status_code == 200
    assert "unreadable: enter it again" in listing.content.decode()

    page = studio.get(f"/admin/gateway/upstreamprovider/{stale_provider.pk}/change/")
    assert page.status_code == 200
    assert "cannot be read with the current MEMORY_ENCRYPTION_KEY" in page.content.decode()


def test_the_admin_asks_for_the_key_again_and_saves_a_new_one(studio, stale_provider, upstream):
    form = {
        "name": "stale",
        "base_url": upstream.base_url,
        "api_key": "",
        "model_prefix": "",
        "model_ids": "",
        "is_default": "on",
        "system_role": "auto",
        "timeout_seconds": "5",
        "enabled": "on",
    }
    url = f"/admin/gateway/upstreamprovider/{stale_provider.pk}/change/"

    refused = studio.post(url, form)
    assert refused.status_code == 200  # the form again, with the error on the key
    assert "cannot be read with the current MEMORY_ENCRYPTION_KEY" in refused.content.decode()

    saved = studio.post(url, {**form, "api_key": "sk-entered-again-9f2a"})
    assert saved.status_code == 302
    assert UpstreamProvider.objects.get(pk=stale_provider.pk).api_key == "sk-entered-again-9f2a"
    assert unreadable_secrets() == []


def test_the_studio_engine_tab_and_the_embedding_providers_route_still_answer(studio, stale_provider):
    assert studio.get("/dashboard/memory", {"tab": "engine"}).status_code == 200

    secret = ManagementToken.issue(name="ops", scope="admin")[1]
    response = Api(secret).get("/api/memory/embedding-providers")
    assert response.status_code == 200
    stale = next(p for p in response.json()["providers"] if p["provider"] == "stale")
    assert stale["hasKey"] is False


# -- the system check -------------------------------------------------------------------------------


def test_check_fails_at_start_naming_the_row_and_the_remedy(stale_provider, old_key):
    update_memory_settings({"customApiKey": "sk-embedding-under-new-key"})  # readable: not reported

    with pytest.raises(SystemCheckError) as caught:  # the first step of every start
        call_command("migrate", "--noinput", skip_checks=False, verbosity=0)

    text = str(caught.value)
    assert "memory.E002" in text
    assert f"gateway.UpstreamProvider row {stale_provider.pk} (api_key)" in text
    assert "Configure the master key these secrets were written with" in text
    assert "memory.customApiKey" not in text
    with override_settings(MEMORY_ENCRYPTION_KEY=old_key):
        assert [p for p in unreadable_secrets() if "UpstreamProvider" in p] == []


def test_check_names_an_unreadable_secret_setting(db, old_key, new_key):
    with override_settings(MEMORY_ENCRYPTION_KEY=old_key):
        update_memory_settings({"customApiKey": "sk-embedding-under-old-key"})
    with override_settings(MEMORY_ENCRYPTION_KEY=new_key):
        (problem,) = unreadable_secrets()
    assert problem.startswith("the setting memory.customApiKey: ")


def test_check_passes_when_every_secret_opens(db):
    UpstreamProvider.objects.create(name="ok", base_url="https://ok.test/v1", api_key=PROVIDER_KEY)
    update_memory_settings({"customApiKey": "sk-embedding"})

    assert unreadable_secrets() == []
    call_command("check", databases=["default"])  # no SystemCheckError
