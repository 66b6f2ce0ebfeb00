"""GET /v1/models, provider routing and seeding from the environment."""

from __future__ import annotations

import pytest

from gateway.models import SystemRole, UpstreamProvider
from gateway.providers import enabled_providers, seed_default_provider, select_provider
from memory.injection import DEFAULT_PROVIDER_ROLES
from memory.models import ApiKey
from tests.gateway.conftest import sdk


@pytest.mark.django_db(transaction=True)
def test_models_lists_configured_ids_and_what_upstreams_report(gateway, upstream):
    _, secret = ApiKey.issue(name="alice")
    UpstreamProvider.objects.create(name="stub", base_url=upstream.base_url, is_default=True)
    UpstreamProvider.objects.create(
        name="zed", base_url=upstream.base_url, model_prefix="zed/", model_ids="zed/fast\n zed/slow \n\n"
    )
    UpstreamProvider.objects.create(
        name="glm", base_url=upstream.base_url, model_prefix="glm/", strip_prefix=True
    )
    UpstreamProvider.objects.create(name="off", base_url=upstream.base_url, model_ids="off-1", enabled=False)

    listed = {(m.id, m.owned_by) for m in sdk(gateway, secret).models.list()}

    assert listed == {
        ("stub-large", "stub"),
        ("stub-small", "stub"),
        ("zed/fast", "zed"),
        ("zed/slow", "zed"),
        ("glm/stub-large", "glm"),
        ("glm/stub-small", "glm"),
    }


@pytest.mark.django_db(transaction=True)
def test_models_needs_a_key(gateway):
    import httpx

    response = httpx.get(f"{gateway}/v1/models")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.django_db(transaction=True)
def test_models_is_get_only(gateway):
    import httpx

    _, secret = ApiKey.issue(name="alice")
    response = httpx.post(f"{gateway}/v1/models", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.django_db(transaction=True)
def test_models_survives_a_dead_upstream(gateway):
    _, secret = ApiKey.issue(name="alice")
    UpstreamProvider.objects.create(name="dead", base_url="http://127.0.0.1:9/v1", is_default=True)
    assert list(sdk(gateway, secret).models.list()) == []


def _provider(name, prefix="", **fields):
    return UpstreamProvider.objects.create(
        name=name, base_url="http://up.test/v1", model_prefix=prefix, **fields
    )


@pytest.mark.django_db
def test_the_longest_matching_prefix_wins_then_the_default():
    default = _provider("default", is_default=True)
    openai = _provider("openai", "gpt-")
    mini = _provider("mini", "gpt-4o-mini")
    _provider("disabled", "gpt-4o-mini-x", enabled=False)

    assert select_provider("gpt-4o-mini-x") == mini
    assert select_provider("gpt-4o") == openai
    assert select_provider("claude-3") == default


@pytest.mark.django_db
def test_without_a_default_a_blank_prefix_provider_catches_the_rest():
    _provider("openai", "gpt-")
    catch_all = _provider("local")
    assert select_provider("llama3") == catch_all


@pytest.mark.django_db
def test_no_provider_fits():
    _provider("openai", "gpt-")
    assert select_provider("llama3") is None


@pytest.mark.django_db
def test_one_default_at_a_time():
    first = _provider("a", is_default=True)
    second = _provider("b", is_default=True)
    first.refresh_from_db()
    assert (first.is_default, second.is_default) == (False, True)


@pytest.mark.django_db
def test_seeding_from_the_environment_is_idempotent(settings):
    settings.UPSTREAM_BASE_URL = "https://api.example.test/v1"
    settings.UPSTREAM_API_KEY = "sk-env"
    settings.UPSTREAM_TIMEOUT_SECONDS = 33

    seeded = enabled_providers()
    again = seed_default_provider()

    assert again is None
    assert [(p.name, p.base_url, p.api_key, p.is_default, p.timeout_seconds) for p in seeded] == [
        ("default", "https://api.example.test/v1", "sk-env", True, 33.0)
    ]
    assert UpstreamProvider.objects.count() == 1


@pytest.mark.django_db
def test_nothing_is_seeded_without_a_url(settings):
    settings.UPSTREAM_BASE_URL = ""
    assert enabled_providers() == []
    assert not UpstreamProvider.objects.exists()


@pytest.mark.django_db
def test_nothing_is_seeded_once_an_operator_configured_providers(settings):
    settings.UPSTREAM_BASE_URL = "https://api.example.test/v1"
    _provider("mine", "x/", enabled=False)
    assert enabled_providers() == []


@pytest.mark.parametrize(
    ("name", "role", "model", "expected"),
    [
        ("openai", SystemRole.AUTO, "gpt-4o", "system"),
        ("glm", SystemRole.AUTO, "glm-4.5", "user"),
        ("openai", SystemRole.AUTO, "o1-mini", "user"),
        ("openai", SystemRole.USER, "gpt-4o", "user"),
        ("glm", SystemRole.SYSTEM, "glm-5.1", "system"),
    ],
)
def test_the_memory_role_comes_from_the_registry_unless_overridden(name, role, model, expected):
    provider = UpstreamProvider(name=name, system_role=role)
    target, roles = provider.injection_target(model)
    assert ("system" if roles.supports_system_message(target) else "user") == expected


def test_auto_uses_the_injection_registry_defaults():
    _, roles = UpstreamProvider(name="mimo").injection_target("mimo-7b")
    assert roles is DEFAULT_PROVIDER_ROLES
    assert roles.requires_system_first("mimo")


@pytest.mark.django_db(transaction=True)
def test_the_provider_list_is_cached_and_a_save_or_delete_clears_it(settings):
    from gateway.providers import PROVIDERS

    settings.MEMORY_SETTINGS_CACHE_SECONDS = 60
    PROVIDERS.invalidate()
    first = _provider("first", "a/")
    assert [p.name for p in enabled_providers()] == ["first"]
    # A bulk update sends no signal: the cached list is served until the TTL ends.
    UpstreamProvider.objects.filter(pk=first.pk).update(model_prefix="changed/")
    assert [p.model_prefix for p in enabled_providers()] == ["a/"]
    second = _provider("second", "b/")  # save() clears the cache
    assert [(p.name, p.model_prefix) for p in enabled_providers()] == [
        ("first", "changed/"),
        ("second", "b/"),
    ]
    second.delete()
    assert [p.name for p in enabled_providers()] == ["first"]
    settings.MEMORY_SETTINGS_CACHE_SECONDS = 0
    UpstreamProvider.objects.filter(pk=first.pk).update(enabled=False)
    assert enabled_providers() == []
